"""chainrule.numpy's buffers (issue 38): arrays made by its constructors under a trace
take traced writes; outside a trace they are plain ndarrays. Expected values are derived
by hand or with NumPy on the primal values."""

import functools
import warnings

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import LeakedTracerError, grad, hessian, jacfwd, jacobian, jit, vmap

X = onp.array([0.5, -2.0, 3.0])


def test_outside_a_trace_the_constructors_give_plain_arrays():
    for made in (np.zeros(3), np.ones((2, 2)), np.empty(2), np.full(2, 1.0), np.eye(2),
                 np.identity(2), np.arange(3), np.linspace(0, 1, 3), np.zeros_like(X),
                 np.array([1.0]), np.asarray([1.0]), np.copy(X)):
        assert type(made) is onp.ndarray


def test_fill_by_index_both_modes_and_second_order():
    def f(x):
        y = np.zeros(3)
        y[0] = x[0] ** 2
        y[2] = x[1] * x[2]
        return y

    want = onp.array([[2 * X[0], 0, 0], [0, 0, 0], [0, X[2], X[1]]])
    assert onp.array_equal(jacobian(f)(X), want)
    assert onp.array_equal(jacfwd(f)(X), want)
    assert onp.array_equal(hessian(lambda x: f(x).sum())(X),
                           onp.array([[2.0, 0, 0], [0, 0, 1], [0, 1, 0]]))


def test_a_read_is_a_copy_where_numpy_copies_and_a_view_where_it_views():
    def f(x):
        a = np.zeros(3)
        first = a[0]  # a scalar: a copy, as NumPy
        tail = a[1:]  # a view, as NumPy
        a[0] = x
        a[1] = 2 * x
        return first + tail[0] + a[0]  # 0 + 2x + x

    assert grad(f)(1.5) == 3.0


def test_writes_through_views_of_views_transposes_and_reshapes():
    def f(x):
        a = np.zeros((2, 3))
        a[1:][0][2] = x         # a[1, 2]
        a.T[0] = x * onp.array([3.0, 5.0])  # a[0, 0] = 3x, a[1, 0] = 5x
        a.reshape(6)[1] = 7 * x  # a[0, 1]
        a.ravel()[4] += x        # a[1, 1] (ravel of a contiguous array is a view)
        return a

    out = jacobian(f)(2.0)
    assert onp.array_equal(out, onp.array([[3.0, 7.0, 0.0], [5.0, 1.0, 1.0]]))


def test_add_at_accumulates_repeated_indices_and_out_writes_into_a_view():
    def f(x):
        counts = np.zeros(3)
        np.add.at(counts, [0, 0, 2], x)   # counts[0] = x0 + x1, counts[2] = x2
        np.multiply(x[:2], 10.0, out=counts[1:])  # counts[1] = 10 x0, counts[2] = 10 x1
        return counts

    want = onp.array([[1.0, 1.0, 0.0], [10.0, 0.0, 0.0], [0.0, 10.0, 0.0]])
    assert onp.array_equal(jacobian(f)(X), want)
    assert onp.array_equal(jacfwd(f)(X), want)


def test_third_party_numpy_code_building_buffers_from_a_traced_value():
    def f(x):
        b = onp.zeros_like(x)  # NumPy's own, dispatched to chainrule's
        b[0] = x[1] ** 2
        return b.sum()

    assert onp.array_equal(grad(f)(X), onp.array([0.0, -4.0, 0.0]))


def test_a_plain_numpy_array_keeps_the_clear_error_with_the_fix_named():
    def f(x):
        a = onp.empty(x.shape)  # raw NumPy: its memory cannot hold a derivative
        a[0] = x[0]
        return a.sum()

    with pytest.raises(ValueError) as caught:
        grad(f)(X)
    assert "chainrule.numpy" in str(caught.value.__cause__)
    assert "np.zeros_like(x)" in str(caught.value.__cause__)


def test_an_integer_buffer_refuses_a_traced_write_rather_than_casting():
    def f(x):
        a = np.zeros(2, dtype=int)
        a[0] = x
        return a.sum()

    with pytest.raises(TypeError, match="dtype int64.*float"):
        grad(f)(1.0)


def test_converting_a_traced_buffer_to_a_numpy_array_is_refused():
    def f(x):
        a = np.zeros(2)
        a[0] = x
        return onp.asarray(a).sum()  # would drop the derivative

    with pytest.raises(TypeError, match="drop its derivative"):
        grad(f)(1.0)


def test_a_buffer_kept_past_its_trace_says_so():
    kept = []

    def f(x):
        a = np.zeros(2)
        a[0] = x
        kept.append(a)
        return a.sum()

    grad(f)(1.0)
    with pytest.raises(LeakedTracerError):
        onp.asarray(kept[0])


def test_signed_zero_and_nan_written_keep_their_values():
    def f(x):
        a = np.ones(3)
        a[0] = -0.0 * x
        a[1] = x * onp.nan
        return a

    value = jit(f)(2.0)
    assert onp.signbit(value[0]) and onp.isnan(value[1]) and value[2] == 1.0
    assert onp.array_equal(jacobian(f)(2.0), onp.array([-0.0, onp.nan, 0.0]), equal_nan=True)


def test_empty_and_size_one_buffers():
    def f(x):
        empty = np.zeros(0)
        empty[:] = x[:0]
        one = np.zeros(1)
        one[:] = x[:1] * 3
        return np.concatenate([empty, one])

    assert onp.array_equal(jacobian(f)(X), onp.array([[3.0, 0.0, 0.0]]))


def test_a_buffer_written_into_another_and_into_a_traced_array():
    def f(x):
        a = np.zeros(2)
        a[:] = x[:2]
        b = np.zeros(3)
        b[1:] = a * 2
        c = x * 1.0
        c[0] = b[2]  # a traced array (ArrayBox) receiving a buffer's value
        return c

    want = onp.array([[0, 2.0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    assert onp.array_equal(jacobian(f)(X), want)


def test_nested_grad_and_functools_wraps():
    @functools.wraps(lambda x: x)
    def f(x):
        a = np.zeros(2)
        a[1] = x ** 3
        a += x
        return a.sum()  # x^3 + 2x

    assert grad(grad(f))(2.0) == 12.0
    assert grad(f)(-1.0) == 5.0


def test_jit_stages_a_filling_function_once():
    def f(x):
        y = np.empty(3)
        y[0] = x[0]
        y[1:] = np.sin(x[1:])
        return y

    jitted = jit(f)
    for point in (X, 2 * X, -X):
        assert onp.array_equal(jitted(point), f(point))
    info = jitted.cache_info()
    assert (info.misses, info.hits, info.eager) == (1, 2, 0)


def test_vmap_fills_one_row_per_example():
    def f(x):
        y = np.zeros(2)
        y[0] = x[0] * x[1]
        y[1] += x[2]
        return y

    batch = onp.stack([X, 2 * X, X - 1])
    assert onp.array_equal(vmap(f)(batch), onp.stack([f(row) for row in batch]))


def test_at_on_plain_traced_and_buffer_arrays_as_jax_defines_it():
    x = onp.array([1.0, 2.0, 3.0])
    assert onp.array_equal(np.at(x)[[0, 0, 2]].add(1.0), [3.0, 2.0, 4.0])
    assert onp.array_equal(np.at(x)[[0, 0]].set(onp.array([5.0, 6.0])), [6.0, 2.0, 3.0])
    assert onp.array_equal(np.at(x)[1:].max(2.5), [1.0, 2.5, 3.0])
    assert onp.array_equal(x, [1.0, 2.0, 3.0])  # out of place
    assert onp.array_equal(jacobian(lambda x: x.at[1:].power(2.0))(x), onp.diag([1.0, 4, 6]))

    def g(x):
        a = np.zeros(3)
        a[0] = x[0]
        return a.at[2].multiply(x[1]).at[2].add(x[2]).sum()

    assert onp.array_equal(grad(g)(x), [1.0, 0.0, 1.0])
    with pytest.raises(NotImplementedError, match="repeats a position"):
        np.at(x)[[0, 0]].multiply(2.0)


def test_copyto_putmask_put_fill_on_traced_arrays_too():
    def f(x):
        y = x * 1.0  # a traced array, not a buffer
        np.putmask(y, x < 0, 0.5 * x)
        np.copyto(y, 7 * x, where=x > 1)
        np.put(y, [0], x[1])
        return y

    want = onp.array([[0, 1.0, 0], [0, 0.5, 0], [0, 0, 7.0]])
    assert onp.array_equal(jacobian(f)(X), want)


def test_arithmetic_on_buffers_gives_buffers_and_views_made_by_functions_take_writes():
    def f(x):
        r = np.zeros(2) + 1.0  # new memory, made from a buffer: takes traced writes
        r[0] = x
        return r

    assert onp.array_equal(jacobian(f)(2.0), [1.0, 0.0])

    def g(x, transpose):
        a = np.zeros((2, 2))
        t = transpose(a)  # a view made by a function, as NumPy's: a write reaches a
        t[0, 1] = x
        return a

    for transpose in (np.transpose, onp.transpose):
        assert onp.array_equal(jacobian(g)(2.0, transpose), [[0.0, 0.0], [1.0, 0.0]])


# ----------------------------------------------------------------- found by the attacker (attack4)
def test_augmented_assignment_through_a_fancy_or_boolean_index_takes_a_traced_value():
    # Python runs a[idx] += v as t = a[idx]; t += v; a[idx] = t (NumPy: the last write of a
    # repeated position wins, so a[0] = 1 + x1 here)
    def f(x):
        a = np.ones(4)
        a[[0, 0, 1]] += x
        a[a > 1.05] *= 2.0         # boolean index of a traced buffer
        b = np.ones((2, 3))
        b[:, [0, 2]] *= x[:2]      # a fancy read whose NumPy copy has a base
        return a, b

    x = onp.array([3.0, 0.25, 0.1])
    a, b = f(x)
    assert onp.allclose(a, [2.5, 2.2, 1.0, 1.0])
    assert onp.allclose(b, [[3.0, 1.0, 0.25], [3.0, 1.0, 0.25]])
    ja = jacobian(lambda x: f(x)[0])(x)
    assert onp.array_equal(ja, [[0, 2, 0], [0, 0, 2], [0, 0, 0], [0, 0, 0]])
    jb = jacobian(lambda x: f(x)[1])(x)
    assert onp.array_equal(jb[:, 0], [[1, 0, 0], [1, 0, 0]])
    assert onp.array_equal(jb[:, 2], [[0, 1, 0], [0, 1, 0]])


def test_asarray_of_a_buffer_is_the_buffer_and_sees_later_writes():
    def f(x):
        a = np.zeros(3)
        a[0] = x
        same = np.asarray(a)               # NumPy: `a` itself
        tail = np.asarray(a[1:], dtype=float)
        other = np.asarray(a, dtype=onp.float32)   # a new array: keeps the value of now
        a[:] = 7.0 * x
        return same.sum() + tail.sum() + other.sum()   # 21x + 14x + x

    assert grad(f)(2.0) == 36.0
    assert jacfwd(f)(2.0) == 36.0


def test_diagonal_of_a_buffer_is_a_read_only_view_that_sees_later_writes():
    def f(x):
        a = np.zeros((3, 3))
        d = a.diagonal(1)
        a[0, 1] = x ** 2
        a[1, 2] = 3.0 * x
        return d.sum()

    assert grad(f)(2.0) == 7.0
    with pytest.raises(ValueError, match="read-only"):
        grad(lambda x: np.zeros((2, 2)).diagonal().__setitem__(0, x))(1.0)


def test_the_put_method_of_a_buffer_takes_a_traced_value():
    def f(x):
        a = np.zeros(4)
        a.put([3, 1], x)
        return a

    assert onp.array_equal(jacobian(f)(onp.array([2.0, 5.0])),
                           [[0, 0], [0, 1], [0, 0], [1, 0]])


def test_copyto_of_a_traced_value_keeps_numpys_casting_rule():
    def f(x):
        a = np.zeros(2)
        np.copyto(a, x * (1 + 1j) * onp.ones(2))  # NumPy: complex -> float is not same_kind
        return a.sum()

    with pytest.raises(TypeError, match="same_kind"):
        grad(f)(1.0)
    # an allowed cast still writes (float64 into float32, same_kind)
    g = lambda x: np.copyto(b := np.zeros(2, dtype=onp.float32), x * onp.ones(2)) or b.sum()  # noqa: E731
    assert grad(g)(1.0) == 2.0


def test_a_copy_of_a_traced_array_is_a_buffer_whose_views_see_later_writes():
    # np.array(x) / np.copy(x) of a traced x gave the traced value itself, whose views
    # taken before a write kept the old values: v = [x1, x2], silently
    def f(x):
        a = np.array(x)
        v = a[1:]                 # a view, as NumPy's
        a[1] = 5.0 * x[0]
        b = np.copy(x)
        w = b.reshape(3)
        b[2] = x[0] * x[1]
        return v + w[1:]          # [5 x0 + x1, x2 + x0 x1]

    x = onp.array([1.0, 2.0, 3.0])
    want = onp.array([[5.0, 1.0, 0.0], [2.0, 1.0, 1.0]])
    assert onp.array_equal(f(x), [7.0, 5.0])
    assert onp.array_equal(jacobian(f)(x), want)
    assert onp.array_equal(jacfwd(f)(x), want)
    assert onp.array_equal(jit(f)(x + 1.0), f(x + 1.0))


def test_asarray_of_a_traced_value_stays_that_value_under_jit_of_laplacian():
    # (np.asarray(x) of a traced x, made a buffer, got boxed by the inner trace: an error)
    from chainrule import laplacian
    from chainrule.scipy.special import logsumexp

    x = onp.array([0.3, -0.7, 1.1])
    assert onp.isclose(jit(laplacian(logsumexp))(x), laplacian(logsumexp)(x))
    f = lambda x: np.sum(np.tanh(x @ x.T))  # noqa: E731
    m = x.reshape(1, 3)
    assert onp.isclose(jit(laplacian(f))(m), onp.trace(hessian(f)(m).reshape(3, 3)))


# ----------------------------------------------------------------- the front end's holes (views5)
def test_a_buffer_made_inside_a_custom_jvp_is_recorded_as_its_value():
    # the raw call runs under the live trace, so np.zeros gave a buffer, which was boxed as
    # a duck array (and its type registered as one for good)
    from chainrule import custom_jvp
    from chainrule._core.tracer import Box
    from chainrule.numpy.buffers import Buffer

    @custom_jvp
    def f(x):
        y = np.zeros(3)
        y[0] = x[0] * 2.0
        y[1:] = x[1:]
        return y

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), tangents[0] * onp.array([2.0, 1.0, 1.0])

    held = []

    def g(x):
        y = f(x)
        held.append(type(y._value))
        y[0] = x[1] * 3.0  # g = 3 x0 x1 + x1 ** 2 + x2 ** 2
        return np.sum(y * x)

    assert onp.array_equal(grad(g)(X), [3 * X[1], 3 * X[0] + 2 * X[1], 2 * X[2]])
    assert onp.array_equal(jacfwd(g)(X), [3 * X[1], 3 * X[0] + 2 * X[1], 2 * X[2]])
    assert onp.array_equal(hessian(g)(X), [[0, 3.0, 0], [3.0, 2.0, 0], [0, 0, 2.0]])
    assert Buffer not in held and Buffer not in Box.type_mappings


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "rint", "sign", "fix", "round",
                                  "heaviside"])
def test_a_zero_derivative_functions_answer_takes_a_later_traced_write(name):
    # np.floor(x) of a traced x answered a plain ndarray, so y += t was refused (and under
    # jit ran eagerly) where NumPy's own program runs
    x0 = onp.array([0.5, -2.25, 3.75])

    def f(x, lib):
        y = getattr(lib, name)(x, *([0.5] if name == "heaviside" else []))
        y += x * x
        y[0] = x[1] * 3.0
        return y

    def plain(x):
        return f(x.copy(), onp)

    want = onp.array([[0, 3.0, 0], [0, 2 * x0[1], 0], [0, 0, 2 * x0[2]]])
    assert onp.array_equal(jacobian(f)(x0, np), want)
    assert onp.array_equal(jacfwd(f)(x0, np), want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (compiled, not run eagerly)
        jitted = jit(f, static_argnums=1)
        for x in (x0, -x0, x0):
            assert onp.array_equal(jitted(x, np), plain(x))
    assert onp.array_equal(jit(jacobian(f), static_argnums=1)(x0, np), want)
    batch = onp.stack([x0, -x0])
    assert onp.array_equal(vmap(f, in_axes=(0, None))(batch, np),
                           onp.stack([plain(b) for b in batch]))
