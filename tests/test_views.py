"""chainrule.numpy's own view functions answer what NumPy's answer: on a buffer (an array
made by chainrule.numpy under a transform) or a traced array, a view that sees later writes
into its base, and through which a write reaches a buffer (a traced array refuses it
clearly). Every case runs one program three ways: plain NumPy (the reference semantics),
and under each transform with chainrule.numpy's function and with NumPy's own one. The
programs are affine in x, so NumPy's Jacobian is exact: f(e_k) - f(0), column by column."""

import functools

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, jacfwd, jacobian, jit, vmap

X = onp.arange(1.0, 7.0)

# name -> how the view of a (2, 3) array ``a`` is made with the module ``lib`` (chainrule's
# or NumPy's); a list (np.split) stands for its first part
_VIEWS = {
    "transpose": lambda lib, a: lib.transpose(a),
    "transpose(axes)": lambda lib, a: lib.transpose(a, (1, 0)),
    "permute_dims": lambda lib, a: lib.permute_dims(a, (1, 0)),
    "matrix_transpose": lambda lib, a: lib.matrix_transpose(a),
    "reshape": lambda lib, a: lib.reshape(a, (3, 2)),
    "reshape(-1)": lambda lib, a: lib.reshape(a, -1),
    "ravel": lambda lib, a: lib.ravel(a),
    "squeeze": lambda lib, a: lib.squeeze(lib.expand_dims(a, 1)),
    "expand_dims": lambda lib, a: lib.expand_dims(a, 0),
    "swapaxes": lambda lib, a: lib.swapaxes(a, 0, 1),
    "moveaxis": lambda lib, a: lib.moveaxis(a, 0, -1),
    "rollaxis": lambda lib, a: lib.rollaxis(a, 1),
    "broadcast_to": lambda lib, a: lib.broadcast_to(a, (2, 2, 3)),
    "atleast_1d": lambda lib, a: lib.atleast_1d(a),
    "atleast_2d": lambda lib, a: lib.atleast_2d(a),
    "atleast_3d": lambda lib, a: lib.atleast_3d(a),
    "flip": lambda lib, a: lib.flip(a),
    "fliplr": lambda lib, a: lib.fliplr(a),
    "flipud": lambda lib, a: lib.flipud(a),
    "rot90": lambda lib, a: lib.rot90(a),
    "diagonal": lambda lib, a: lib.diagonal(a),
    "diag": lambda lib, a: lib.diag(a, 1),
    "real": lambda lib, a: lib.real(a),
    "real_if_close": lambda lib, a: lib.real_if_close(a),
    "split": lambda lib, a: lib.split(a, 3, axis=1),
    "array_split": lambda lib, a: lib.array_split(a, 2, axis=1),
    "hsplit": lambda lib, a: lib.hsplit(a, [1]),
    "vsplit": lambda lib, a: lib.vsplit(a, 2),
    "dsplit": lambda lib, a: lib.dsplit(lib.reshape(a, (1, 2, 3)), [2]),
    "asarray": lambda lib, a: lib.asarray(a),
    "asanyarray": lambda lib, a: lib.asanyarray(a),
    "ascontiguousarray": lambda lib, a: lib.ascontiguousarray(a),
}
# NumPy makes these read-only views: a write through them raises NumPy's ValueError
_READ_ONLY = {"broadcast_to", "diagonal", "diag"}
# NumPy's own of these convert their argument without asking it (no __array_function__):
# only chainrule.numpy's are checked
_CONVERTING = {"asarray", "asanyarray", "ascontiguousarray"}


def _first(made):
    return made[0] if isinstance(made, list | tuple) else made


def _base(lib, x, array):
    """A (2, 3) array: a buffer (zeros of the module) or a traced array (made from x)."""
    return lib.zeros((2, 3)) if array == "buffer" else lib.reshape(x, (2, 3)) * 2.0


def _view_then_writes(lib, view_lib, make, array):
    """The view, taken before two writes into its base (a traced one and a +=)."""
    def f(x):
        a = _base(lib, x, array)
        v = _first(make(view_lib, a))
        a[0, 1] = x[0] * 5.0
        a[1] += x[2]
        return lib.ravel(v) * 1.0

    return f


def _write_through_view(lib, view_lib, make, array):
    """Two writes through the view (one of the element, one +=); the base returned."""
    def f(x):
        a = _base(lib, x, array)
        v = _first(make(view_lib, a))
        v[(0,) * v.ndim] = x[1] * 3.0
        v[..., -1] += x[3]
        return a * 1.0

    return f


def _numpy_jacobian(f):
    """The Jacobian of the affine plain-NumPy program ``f``: exact, column by column."""
    at_zero = f(onp.zeros_like(X))
    return onp.stack([f(e) - at_zero for e in onp.eye(X.size)], axis=-1)


def _check_against_numpy(program, name, array):
    make = _VIEWS[name]
    reference = program(onp, onp, make, array)
    want_value, want_jacobian = reference(X), _numpy_jacobian(reference)
    batch = onp.stack([X, X[::-1], -X])
    for view_lib in (np,) if name in _CONVERTING else (np, onp):  # ours, and NumPy's own
        f = program(np, view_lib, make, array)
        assert onp.array_equal(f(X), want_value)
        assert onp.array_equal(jacobian(f)(X), want_jacobian)
        assert onp.array_equal(jacfwd(f)(X), want_jacobian)
        assert onp.array_equal(jit(f)(X), want_value)
        assert onp.array_equal(jit(jacobian(f))(X), want_jacobian)
        assert onp.array_equal(vmap(f)(batch), onp.stack([reference(b) for b in batch]))
        assert onp.array_equal(vmap(jacobian(f))(batch), onp.stack([want_jacobian] * 3))


@pytest.mark.parametrize("array", ["buffer", "traced"])
@pytest.mark.parametrize("name", _VIEWS)
def test_a_view_taken_by_a_function_sees_later_writes_into_its_base(name, array):
    # before: chainrule.numpy's functions answered copies, so the later writes were lost
    # (the derivative through them silently 0)
    _check_against_numpy(_view_then_writes, name, array)


@pytest.mark.parametrize("name", sorted(set(_VIEWS) - _READ_ONLY))
def test_a_write_through_a_view_taken_by_a_function_reaches_the_buffer(name):
    _check_against_numpy(_write_through_view, name, "buffer")


@pytest.mark.parametrize("name", sorted(_READ_ONLY))
def test_a_write_through_a_read_only_view_raises_numpys_error(name):
    for lib in (onp, np):
        f = _write_through_view(lib, lib, _VIEWS[name], "buffer")
        with pytest.raises(ValueError, match="read-only"):
            (f if lib is onp else jacobian(f))(X)


@pytest.mark.parametrize("name", sorted(set(_VIEWS) - _READ_ONLY
                                        - {"asarray", "asanyarray", "ascontiguousarray",
                                           "atleast_1d", "atleast_2d", "real",
                                           "real_if_close"}))
def test_a_write_through_a_view_of_a_traced_array_is_refused_clearly(name):
    # a traced array's writes rebind it; one through a view of it cannot (and NumPy's
    # own functions are refused the same way)
    for view_lib in (np, onp):
        f = _write_through_view(np, view_lib, _VIEWS[name], "traced")
        with pytest.raises(TypeError, match="view of another traced array"):
            jacobian(f)(X)


@pytest.mark.parametrize("name", ["asarray", "asanyarray", "ascontiguousarray",
                                  "atleast_1d", "atleast_2d", "real_if_close"])
@pytest.mark.parametrize("array", ["buffer"])  # (a traced array's: a view of all of it)
def test_functions_numpy_answers_the_array_itself_with_answer_it(name, array):
    # NumPy: np.asarray(a) is a, so a write into the answer is a write into a
    answers = []

    def f(x):
        a = _base(np, x, array)
        answers.append(_VIEWS[name](np, a) is a)
        return a

    grad(lambda x: np.sum(f(x) * np.reshape(x, (2, 3))))(X)
    assert answers == [True]


def test_views_of_a_view_and_of_complex_parts_see_writes():
    def f(x, lib):
        a = lib.zeros((2, 3), complex)
        row = lib.transpose(lib.reshape(a, (3, 2)))[1]
        im = lib.imag(a)
        a.real[0] = x[:3]
        a[1] += 1j * x[3:]
        return lib.concatenate([lib.real(row), im.ravel()])

    def plain(x):
        return f(x, onp)

    want = _numpy_jacobian(plain)
    assert onp.array_equal(jacobian(lambda x: f(x, np))(X), want)
    assert onp.array_equal(jacfwd(lambda x: f(x, np))(X), want)


def test_the_view_functions_keep_their_identity_for_rules():
    # the rule tables and users' defvjp key on chainrule.numpy's function: the one called
    from chainrule._core.rule_table import rule_table

    for name in ("transpose", "reshape", "ravel", "split", "real", "asanyarray"):
        assert rule_table.get(getattr(np, name)) is not None, name

    def f(x):
        return np.sum(np.transpose(np.reshape(x, (2, 3))) * X.reshape(3, 2))

    assert onp.array_equal(grad(f)(X), X.reshape(3, 2).T.ravel())


def test_a_wrapped_view_function_and_nested_transforms():
    @functools.wraps(np.transpose)
    def transposed(a):
        return np.transpose(a)

    def f(x):
        a = np.zeros((2, 3))
        t = transposed(a)
        a[0] = x[:3] ** 2
        return np.sum(t[:, 0] * x[3:])

    # d/dx: 2 x_i x_{3+i} for i < 3, then x_i ** 2
    want = onp.concatenate([2 * X[:3] * X[3:], X[:3] ** 2])
    assert onp.array_equal(grad(f)(X), want)
    assert onp.array_equal(jacfwd(grad(f))(X), jacobian(grad(f))(X))
    assert onp.array_equal(jacobian(grad(f))(X)[0], [2 * X[3], 0, 0, 2 * X[0], 0, 0])


def test_reshape_and_ravel_methods_in_each_order():
    # (NumPy's default order is passed as no keyword at all: both spellings must answer
    # and differentiate as NumPy's own)
    import chainrule

    X = onp.arange(6.0).reshape(2, 3)
    weights = onp.arange(1.0, 7.0)
    for order in ("C", "F", "A"):
        for method in ("reshape", "ravel"):
            def f(x, order=order, method=method):
                flat = x.reshape(6, order=order) if method == "reshape" else x.ravel(order)
                return np.sum(flat * weights)

            want = (onp.reshape(X, 6, order=order) * weights).sum()
            assert f(X) == want
            by_order = "F" if order == "F" else "C"
            onp.testing.assert_array_equal(chainrule.grad(f)(X),
                                           onp.reshape(weights, (2, 3), order=by_order))

    # the views they make still see later writes
    def h(x):
        x = x * 1.0
        flat = x.reshape(-1)
        x[0, 0] = 10.0 * x[0, 1]
        return np.sum(flat * weights)
    onp.testing.assert_array_equal(chainrule.grad(h)(X), [[0.0, 2.0 + 10.0, 3.0], [4.0, 5.0, 6.0]])
