"""The fifth hostile-user session's findings, each checked against NumPy's own semantics
(the same program run on plain arrays) or values derived by hand."""

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, jacfwd, jacobian, jit, vmap

X = onp.array([1.0, 2.0, 3.0])


# ----------------------------------------------------------------------------- put, putmask, flat
def _numpy_put(v, ind, mode="raise"):
    a = onp.zeros(5)
    onp.put(a, ind, v, mode=mode)
    return a


def _jacobian_of_positions(filled):
    """The Jacobian of ``filled`` (a function of the values v) at any v, when each output
    element is one element of v or a constant: where NumPy puts v[j], a 1 in column j."""
    v = onp.array([10.0, 20.0, 30.0])
    out = filled(onp, v)
    return onp.array([[1.0 if o == vj else 0.0 for vj in v] for o in out.ravel()])


@pytest.mark.parametrize("ind, mode", [([0, 1, 2, 3], "raise"), ([4, 0, 0], "raise"),
                                       ([7, -9], "wrap"), ([7, -9, 2], "clip"),
                                       ([[0], [-1]], "raise")])
def test_put_repeats_short_values_and_takes_every_mode_as_numpy(ind, mode):
    def filled(lib, v):
        a = (np if lib is not onp else onp).zeros(5)
        (np if lib is not onp else onp).put(a, ind, v[:2], mode=mode)
        return a

    want = _jacobian_of_positions(filled)
    assert onp.array_equal(jacobian(lambda v: filled(np, v))(X), want)
    assert onp.array_equal(jacfwd(lambda v: filled(np, v))(X), want)


def test_put_of_traced_values_out_of_range_raises_numpys_index_error():
    def f(v):
        a = np.zeros(3)
        np.put(a, [5], v[0])
        return a

    with pytest.raises(IndexError, match="out of bounds"):
        jacobian(f)(X)


def test_putmask_repeats_values_along_c_order_not_by_broadcasting():
    # NumPy: values (2, 1) into (2, 3) are read at flat position n % 2, so they alternate
    # along each row; broadcasting would give each row one value (a silent wrong answer)
    mask = onp.array([[1, 0, 1], [1, 1, 1]], bool)
    v = onp.array([[10.0], [20.0]])

    def f(v):
        a = np.zeros((2, 3))
        np.putmask(a, mask, v)
        return a

    plain = onp.zeros((2, 3))
    onp.putmask(plain, mask, v)
    assert onp.array_equal(jit(f)(v), plain)
    assert onp.array_equal(grad(lambda v: np.sum(f(v)))(v), [[3.0], [2.0]])


def test_putmask_of_short_traced_values_into_a_traced_array():
    mask = onp.array([True, False, True, True])

    def f(x):
        a = np.concatenate([x, x[:1]]) * 1.0  # a traced array, not a buffer
        np.putmask(a, mask, x[:2] * 2.0)
        return a

    # positions 0, 2, 3 take 2 v[n % 2]: 2x0, 2x0, 2x1; position 1 keeps x1
    want = onp.array([[2.0, 0, 0], [0, 1, 0], [2, 0, 0], [0, 2, 0]])
    assert onp.array_equal(jacobian(f)(X), want)


def test_flat_writes_reach_the_buffer_and_repeat_values():
    def f(x):
        a = np.zeros((2, 2))
        a.flat[1] = x[0]
        a.flat[[0, 2, 3]] = x[1:]  # repeats: x1, x2, x1
        return a.flat[1:]

    want = onp.array([[1.0, 0, 0], [0, 0, 1], [0, 1, 0]])
    assert onp.array_equal(jacobian(f)(X), want)
    assert onp.array_equal(jacfwd(f)(X), want)


def test_sort_in_place_after_a_traced_write():
    def f(x):
        a = np.zeros(3)
        a[:] = x[::-1] * onp.array([1.0, -1.0, 1.0])  # [x2, -x1, x0]
        a.sort()
        return a

    # sorted at X: [-x1, x0, x2]
    assert onp.array_equal(jacobian(f)(X), [[0, -1.0, 0], [1, 0, 0], [0, 0, 1]])


# ----------------------------------------------------------------------------- views
_VIEWS = {
    # NumPy's own view functions (chainrule.numpy's: test_chainrule_numpys_view_functions...)
    "numpy.transpose": lambda a: onp.transpose(a),
    "numpy.reshape": lambda a: onp.reshape(a, (3, 1)),
    "numpy.flip": lambda a: onp.flip(a),
    "numpy.expand_dims": lambda a: onp.expand_dims(a, 0),
    "numpy.broadcast_to": lambda a: onp.broadcast_to(a, (2, 3)),
    "numpy.atleast_2d": lambda a: onp.atleast_2d(a),
    "numpy.ravel": lambda a: onp.ravel(a),
    "numpy.moveaxis": lambda a: onp.moveaxis(a.reshape(1, 3), 0, 1),
    "numpy.squeeze": lambda a: onp.squeeze(a.reshape(1, 3)),
    "numpy.real": lambda a: onp.real(a),
    "numpy.split": lambda a: onp.split(a, 3)[0],
    "numpy.array_split": lambda a: onp.array_split(a, 2)[0],
    "numpy.hsplit": lambda a: onp.hsplit(a, [1])[0],
    ".real": lambda a: a.real,
    ".mT": lambda a: a.reshape(1, 3).mT,
    ".view()": lambda a: a.view(),
    ".astype(copy=False)": lambda a: a.astype(float, copy=False),
}


def _view_then_write(make, array):
    """sum(view) * x[1], the view made of a buffer or traced array before x[0] * 5 is
    written into its base."""
    def f(x):
        a = np.zeros(3) if array == "buffer" else x * 0.0
        v = make(a)
        a[0] = x[0] * 5.0
        return np.sum(v) * x[1]

    return f


@pytest.mark.parametrize("make", _VIEWS.values(), ids=_VIEWS.keys())
@pytest.mark.parametrize("array", ["buffer", "traced"])
def test_a_view_taken_before_a_write_sees_it(make, array):
    # NumPy: the view shares the array's memory, so a later write into the array shows in
    # it; a stale copy gave the derivative through the write as 0, silently
    f = _view_then_write(make, array)

    v_sum = {"numpy.broadcast_to": 2.0}.get(next(k for k, m in _VIEWS.items() if m is make), 1.0)
    want = v_sum * onp.array([5.0 * X[1], 5.0 * X[0], 0.0])
    assert onp.array_equal(grad(f)(X), want)


def test_a_write_through_a_function_view_of_a_traced_array_is_refused_not_lost():
    # NumPy would change y through v; a copy would lose the write silently
    def f(x):
        y = x * 1.0
        v = onp.reshape(y, (3, 1))
        v[0, 0] = 5.0
        return y

    with pytest.raises(TypeError, match="view of another traced array"):
        jacobian(f)(X)


def test_function_views_under_jit_and_vmap_match_eager():
    def f(x):
        a = np.zeros((2, 3))
        t = onp.transpose(a)
        t[1] = x[:2]
        a[0, 2] = x[2]
        return np.sum(t * t, axis=1)

    eager = jacobian(f)(X)
    assert onp.array_equal(jit(jacobian(f))(X), eager)
    batch = onp.stack([X, X + 1.0])
    assert onp.array_equal(vmap(jacobian(f))(batch), onp.stack([jacobian(f)(b) for b in batch]))


def test_sort_in_place_of_a_traced_array():
    def f(x):
        y = x * onp.array([1.0, -1.0, 1.0])  # [x0, -x1, x2]
        y.sort()
        return y

    assert onp.array_equal(jacobian(f)(X), [[0, -1.0, 0], [1, 0, 0], [0, 0, 1]])
    assert onp.array_equal(jit(jacobian(f))(X), jacobian(f)(X))


# ----------------------------------------------------------------------------- out= a buffer
def test_concatenate_into_a_buffer_and_with_a_dtype():
    # each recursed without end (RecursionError) on traced arrays
    def f(x):
        a = np.zeros(4)
        np.concatenate([x[:1] * 2.0, x[1:]], out=a[:3])
        return a

    want = onp.array([[2.0, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]])
    assert onp.array_equal(jacobian(f)(X), want)
    assert onp.array_equal(jit(jacobian(f))(X), want)
    g = jacobian(lambda x: np.concatenate([x, x], dtype=onp.float32))(X)
    assert onp.array_equal(g, onp.vstack([onp.eye(3), onp.eye(3)]))


def test_concatenate_of_traced_arrays_into_a_numpy_array_is_the_clear_error():
    def f(x):
        np.concatenate([x, x], out=onp.zeros(6))
        return x

    with pytest.raises(TypeError, match="make the array with chainrule.numpy"):
        jacobian(f)(X)


def test_numpys_ufunc_with_a_traced_input_writes_into_a_buffer_out():
    # the traced input's __array_ufunc__ came first and refused the buffer as "a plain array"
    def f(x):
        a = np.zeros(3)
        onp.multiply(x, x, out=a)
        return a

    assert onp.array_equal(jacobian(f)(X), onp.diag(2.0 * X))


def test_flat_of_a_traced_array_reads_and_writes():
    def f(x):
        y = x * 2.0
        y.flat[[0, 2]] = x[1:] ** 2  # y = [x1^2, 2 x1, x2^2]
        return y * np.array(list(y.flat))[::-1]  # times [x2^2, 2 x1, x1^2] (a copy)

    def by_hand(x):
        y = onp.array([x[1] ** 2, 2 * x[1], x[2] ** 2])
        return y * y[::-1]

    eps = 1e-6
    want = onp.stack([(by_hand(X + eps * e) - by_hand(X - eps * e)) / (2 * eps)
                      for e in onp.eye(3)], axis=1)
    onp.testing.assert_allclose(jacobian(f)(X), want, rtol=1e-7)
    assert onp.array_equal(jit(f)(X), f(X))


# ----------------------------------------------------------------------------- Tensor
def test_a_tensor_written_into_a_numpy_array_warns_that_its_gradient_is_dropped():
    # NumPy converts it with float(): PyTorch warns there too; silence lost the gradient
    from chainrule import Tensor

    t = Tensor(onp.array([1.0, 2.0]))
    a = onp.zeros(2)
    with pytest.warns(UserWarning, match="drops its gradient"):
        a[0] = t[0] * 3.0
    assert a[0] == 3.0
    with pytest.warns(UserWarning, match="drops its gradient"):
        complex(t[1] * 1.0)
    leaf = Tensor(2.0)
    with onp.testing.assert_no_warnings():
        assert float(leaf) == 2.0 and (leaf * 3.0).item() == 6.0  # leaves and item(): quiet


def test_a_view_made_by_a_numpy_function_chainrule_does_not_know_sees_later_writes():
    from numpy.lib.stride_tricks import sliding_window_view

    def f(x):
        a = np.zeros(3)
        windows = sliding_window_view(a, 2)  # [[a0, a1], [a1, a2]]
        a[1] = x[0]
        a[2] = x[1] * x[2]
        return np.sum(windows * windows)  # 2 x0^2 + (x1 x2)^2

    assert onp.array_equal(grad(f)(X), [4.0 * X[0], 2 * X[1] * X[2] ** 2, 2 * X[1] ** 2 * X[2]])


def test_putmask_of_constants_with_a_traced_mask_under_jit():
    # jit traces the mask (x > 0): NumPy's putmask was then called with it, "no rule"
    def f(x):
        a = np.zeros(3)
        np.putmask(a, x > 1.5, onp.array([7.0, 8.0]))
        return np.sum(a * x)

    for x in (X, -X, X[::-1].copy()):
        assert onp.array_equal(jit(f)(x), f(x))


def test_concatenate_of_traced_buffers_into_an_untraced_buffer():
    def f(x):
        a, b, c = np.zeros(2), np.zeros(2), np.zeros(4)
        a[0] = x[0]
        b[1] = x[1] * x[2]
        np.concatenate([a, b], out=c)  # c holds traced values only through a and b
        return c

    want = onp.array([[1.0, 0, 0], [0, 0, 0], [0, 0, 0], [0, X[2], X[1]]])
    assert onp.array_equal(jacobian(f)(X), want)
    assert onp.array_equal(jit(jacobian(f))(X), want)


def test_putmask_casts_as_numpy_safe_for_arrays_of_values():
    mask = onp.array([False, False, True])

    def f(x, values):
        a = np.zeros(3, dtype=onp.float32)
        np.putmask(a, mask, values(x))
        return a

    for values in (lambda x: x / 3.0, lambda x: x * 1j):  # float64 / complex arrays
        with pytest.raises(TypeError, match="according to the rule 'safe'"):
            f(X, values)  # NumPy's own refusal
        with pytest.raises(TypeError, match="according to the rule 'safe'"):
            jacobian(lambda x, values=values: f(x, values))(X)
    scalar = jacobian(lambda x: f(x, lambda x: x[0] / 3.0))(X)  # a scalar casts
    assert scalar.dtype == onp.float32 and scalar[2, 0] == onp.float32(1 / 3.0)


# ----------------------------------------------------------------------------- complex parts
@pytest.mark.parametrize("part", [lambda a: a.real, lambda a: onp.real(a)],
                         ids=[".real", "numpy.real"])
def test_the_real_part_of_a_complex_buffer_is_a_view_that_sees_later_writes(part):
    def f(x):
        a = np.zeros(3, dtype=complex)
        r = part(a)  # NumPy: a view of the real parts
        a[0] = x[0] * (1 + 2j)
        a[1] = x[1] * 1j
        return np.sum(r) * x[1]  # x0 x1

    assert onp.array_equal(grad(f)(X), [X[1], X[0], 0.0])


def test_writes_into_the_parts_of_a_complex_buffer_keep_the_other_part():
    def f(x):
        a = np.zeros(3, dtype=complex)
        a[:] = 5j
        a.real[:] = x  # a = x + 5j
        a.imag[1] = x[2]  # a[1] = x1 + x2 j
        np.add.at(a.imag, [2, 2], x[0])  # a[2] = x2 + (5 + 2 x0) j
        return np.abs(a) ** 2

    def by_hand(x):
        return onp.abs(onp.array([x[0] + 5j, x[1] + x[2] * 1j, x[2] + (5 + 2 * x[0]) * 1j])) ** 2

    assert onp.allclose(f(X), by_hand(X))
    eps = 1e-6
    want = onp.stack([(by_hand(X + eps * e) - by_hand(X - eps * e)) / (2 * eps)
                      for e in onp.eye(3)], axis=1)
    onp.testing.assert_allclose(jacobian(f)(X), want, rtol=1e-7)
    onp.testing.assert_allclose(jacfwd(f)(X), want, rtol=1e-7)
    assert onp.array_equal(jit(jacobian(f))(X), jacobian(f)(X))


# ----------------------------------------------------------------------------- more writers
def _jacobian_by_numpy(write, shape, v):
    """The Jacobian of ``write`` (filling zeros of ``shape`` from v) found by NumPy itself:
    the program run on plain arrays, one basis vector of v at a time (it is linear in v)."""
    def plain(v):
        a = onp.zeros(shape)
        write(onp, a, v)
        return a.ravel()

    return onp.stack([plain(e) for e in onp.eye(v.size)], axis=1)


_WRITERS = {
    "fill_diagonal": ((4, 4), lambda lib, a, v: lib.fill_diagonal(a, v[:3])),
    "fill_diagonal tall": ((7, 3), lambda lib, a, v: lib.fill_diagonal(a, v[:2])),
    "fill_diagonal tall wrap": ((7, 3), lambda lib, a, v: lib.fill_diagonal(a, v, wrap=True)),
    "fill_diagonal 3-d": ((3, 3, 3), lambda lib, a, v: lib.fill_diagonal(a, v[0])),
    "place": ((2, 3), lambda lib, a, v: lib.place(a, onp.array([[1, 0, 1], [1, 1, 0]], bool),
                                                  v[:3])),
    "put_along_axis 1": ((3, 3), lambda lib, a, v: lib.put_along_axis(
        a, onp.array([[2], [0], [1]]), v[:, None], axis=1)),
    "put_along_axis 0": ((3, 2), lambda lib, a, v: lib.put_along_axis(
        a, onp.array([[1, 2]]), v[:2][None], axis=0)),
    "put_along_axis None": ((2, 2), lambda lib, a, v: lib.put_along_axis(
        a, onp.array([3, 0]), v[:2], axis=None)),
    "a.flat = v": ((2, 2), lambda lib, a, v: setattr(a, "flat", v)),
}


@pytest.mark.parametrize("shape, write", _WRITERS.values(), ids=_WRITERS.keys())
def test_numpys_other_write_functions_take_traced_values_as_numpy_writes(shape, write):
    # each raised: "no derivative rule" (place, put_along_axis), a conversion error
    # (fill_diagonal), or "no setter" (a.flat = v)
    def f(v):
        a = np.zeros(shape)
        write(np, a, v)
        return a

    want = _jacobian_by_numpy(write, shape, X)
    assert onp.array_equal(jacobian(f)(X).reshape(-1, 3), want)
    assert onp.array_equal(jacfwd(f)(X).reshape(-1, 3), want)
    assert onp.array_equal(jit(f)(X), f(X))
    traced = jacobian(lambda v: (lambda a: (write(np, a, v), a)[1])(v[0] * onp.zeros(shape)))(X)
    assert onp.array_equal(traced.reshape(-1, 3), want)  # into a traced array too


def test_place_and_put_along_axis_under_jit_follow_masks_and_indices_of_each_call():
    def f(x):
        a = np.zeros(3)
        np.place(a, x > 1.5, x[:2] * 2.0)  # a mask jit traces: its positions vary by call
        np.put_along_axis(a, np.argsort(x)[:1], x[2], axis=0)  # an index jit traces
        return a

    jitted = jit(f)
    for x in (X, -X, onp.array([2.0, 0.0, 3.0]), X[::-1].copy()):
        assert onp.array_equal(jitted(x), f(x))
        assert onp.array_equal(jit(jacobian(f))(x), jacobian(f)(x))


@pytest.mark.parametrize("array", ["buffer", "traced"])
@pytest.mark.parametrize("make", [lambda a: np.transpose(a), lambda a: np.asanyarray(a)],
                         ids=["np.transpose", "np.asanyarray"])
def test_chainrule_numpys_view_functions_see_later_writes(array, make):
    f = _view_then_write(make, array)

    assert onp.array_equal(grad(f)(X), [5.0 * X[1], 5.0 * X[0], 0.0])
