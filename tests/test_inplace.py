"""In-place assignment on traced arrays: NumPy's semantics for the array object, derivatives
w.r.t. the old array and the written value, clear errors where NumPy's semantics cannot hold."""

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule.test_util import check_grads

X = onp.array([[0.5, -1.2, 2.0], [1.5, 0.3, -0.7]])
V = onp.array([0.9, -0.4, 1.1])


def run_both(f, *args):
    """``f`` on NumPy arrays and on chainrule's (plain calls): the same value."""
    want = f(onp, *[onp.array(a, copy=True) for a in args])
    got = f(np, *args)
    onp.testing.assert_allclose(got, want, rtol=1e-12)


def updates(m, x, v):
    x = x * 1.0
    x[0] = v                       # basic index, broadcast row
    x[1, ::2] = v[:2] ** 2         # slice
    x[x > 1.0] = 3.0 * v[0]        # boolean mask with a traced value
    x[[1, 0], [2, 1]] = v[1:]      # integer arrays
    x[..., 0] += v[2]              # x[i] op= v through a view, stored back by Python
    x[1] *= v
    x -= v
    x /= 1.5 + v ** 2
    x **= 2
    return m.sum(x * m.arange(6.0).reshape(2, 3))


def test_updates_match_numpy_and_differentiate():
    run_both(updates, X, V)
    check_grads(lambda x, v: updates(np, x, v), (0, 1), order=2)(X, V)


def test_earlier_uses_keep_old_value():
    def f(x):
        x = x * 1.0
        before = x[0] * 2.0
        x[0] = 0.0
        return np.sum(before) + np.sum(x)

    onp.testing.assert_allclose(cr.grad(f)(X), onp.array([[2.0] * 3, [1.0] * 3]))
    check_grads(f, order=2)(X)


def test_same_object_is_updated():
    def f(x):
        y = x * 1.0
        alias = y
        y += x
        y[0] = 7.0
        return alias

    got = f(np.array(X))
    assert got is not None
    jac = cr.jacobian(f)(X)
    want = onp.zeros((2, 3, 2, 3))
    want[1, :, 1, :] = 2 * onp.eye(3)
    onp.testing.assert_allclose(jac, want)


def test_inplace_on_input_root_differentiates():
    def f(x):
        x[1] = x[0] ** 2
        x += 1.0
        return np.sum(x ** 2)

    check_grads(f, order=2)(X)
    # row 0 feeds itself and row 1: d/dx0 = 2(x0+1) + 2(x0^2+1) * 2 x0
    g = cr.grad(f)(X.copy())
    onp.testing.assert_allclose(g[0], 2 * (X[0] + 1) + 4 * X[0] * (X[0] ** 2 + 1))
    onp.testing.assert_allclose(g[1], 0.0)


def test_repeated_index_setitem_keeps_last_write_like_numpy():
    def f(m, x):
        x = x * 1.0
        x[[0, 0, 2]] = m.array([1.0, 2.0, 3.0])
        x[[1, 1]] += 5.0  # NumPy adds once: a read, an add, a write
        return x

    run_both(f, V)
    onp.testing.assert_allclose(cr.jacobian(lambda x: f(np, x))(V), onp.diag([0.0, 1.0, 0.0]))


def test_dtype_and_shape_rules_of_inplace_ops():
    def f(x):
        y = x.astype(onp.float32)
        y += x  # float64 into float32: stays float32 (same_kind)
        assert y.dtype == onp.float32
        return y

    onp.testing.assert_allclose(cr.jacobian(f)(V), 2 * onp.eye(3), rtol=1e-6)

    def bad_shape(x):
        y = x[0] * 1.0
        y += x
        return y

    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        cr.jacobian(bad_shape)(X)

    def bad_cast(x):
        y = x * 1.0
        y += 1j * x
        return y

    with pytest.raises(TypeError, match="same_kind"):
        cr.jacobian(bad_cast)(V)


@pytest.mark.parametrize("write", [
    lambda x: x[0].__setitem__(1, 5.0),
    lambda x: x.T.__setitem__(0, 5.0),
    lambda x: x.reshape(3, 2).__setitem__(0, 5.0),
    lambda x: x[:, 1:].__iadd__(1.0),
])
def test_write_through_view_raises(write):
    def f(x):
        x = x * 1.0
        write(x)
        return np.sum(x)

    with pytest.raises(TypeError, match="Assign to the base instead"):
        cr.grad(f)(X)


def test_write_through_view_statement_raises():
    def f(x):
        x = x * 1.0
        row = x[0]
        row += 1.0  # NumPy would change x; chainrule refuses rather than diverge
        return np.sum(x)

    with pytest.raises(TypeError, match="writes through a view"):
        cr.grad(f)(X)


def test_copies_are_not_views():
    def f(x):
        x = x * 1.0
        y = x[[0, 1]]  # advanced indexing copies, as in NumPy
        y[0] = 0.0
        z = x.flatten()
        z[0] = 1.0
        return np.sum(x) + np.sum(y) + np.sum(z)

    onp.testing.assert_allclose(cr.grad(f)(X), onp.full_like(X, 3.0) - [[2, 1, 1], [0, 0, 0]])


def test_writing_traced_value_into_numpy_array_raises_clearly():
    def into_scalar_slot(y):
        a = onp.zeros(3)
        a[0] = y
        return y

    with pytest.raises(ValueError) as info:
        cr.grad(into_scalar_slot)(1.0)
    assert "index_update" in str(info.value.__cause__)

    def into_slice(y):
        a = onp.zeros(3)
        a[:] = y
        return np.sum(y)

    with pytest.raises(TypeError, match="writing a traced value into a NumPy array"):
        cr.grad(into_slice)(V)

    def add_into(y):
        a = onp.zeros(3)
        a += y
        return np.sum(y)

    with pytest.raises(TypeError, match="with out= would write a traced value"):
        cr.grad(add_into)(V)


def test_functional_forms():
    idx = (slice(None), [0, 2, 0])
    vals = onp.array([1.0, 2.0, 3.0])
    want_set = X.copy()
    want_set[idx] = vals
    want_add = X.copy()
    onp.add.at(want_add, idx, vals)
    onp.testing.assert_allclose(np.index_update(X, idx, vals), want_set)
    onp.testing.assert_allclose(np.at(X)[idx].set(vals), want_set)
    onp.testing.assert_allclose(np.index_add(X, idx, vals), want_add)
    onp.testing.assert_allclose(np.at(X)[idx].add(vals), want_add)
    onp.testing.assert_allclose(np.at(X)[1].get(), X[1])
    # index_add accumulates repeats: d out[:, 0] / d v = 2 (two writes of v[0]... and v[2])
    g = cr.grad(lambda v: np.sum(np.index_add(X, idx, v) * X[:, :1]))(vals)
    onp.testing.assert_allclose(g, [X[:, 0].sum(), X[:, 0].sum(), X[:, 0].sum()])
    for fun in (np.index_update, np.index_add):
        check_grads(lambda x, v, fun=fun: fun(x, (slice(None), [0, 2]), v) ** 2, (0, 1),
                    order=2)(X, V[:2])
        check_grads(lambda x, v, fun=fun: fun(x, X > 0.4, v), (0, 1), order=2)(X, 0.3)


def test_scalars_stay_immutable():
    def f(x):
        s = x[0] * 1.0
        t = s
        s += x[1]  # a NumPy scalar is immutable: t keeps the old value
        return t * 10.0 + s

    onp.testing.assert_allclose(f(V), V[0] * 10.0 + V[0] + V[1])
    onp.testing.assert_allclose(cr.grad(f)(V), [11.0, 1.0, 0.0])



def _view_then_write(np, x):
    a = x.copy()
    v, t = a[1:], a.T  # views of a, taken before the writes
    a[1] = 5.0 * x[0]  # NumPy: v and t see this write
    a += x[2]
    w = v[1:]          # a view of a view
    a[2] = x[0] ** 2
    return np.concatenate([v, t, w])


def test_views_taken_before_a_write_into_their_base_see_it_as_numpys_do():
    """attack4 finding 7: v = a[1:]; a[1] = 5 x0 left v with the old values and a wrong
    derivative (row [0, 1, 0] for [5, 0, 0]), without an error; jit differed from eager."""
    x = onp.array([1.0, 2.0, 3.0])

    def traced(x):
        return _view_then_write(np, x)

    def plain(x):
        return _view_then_write(onp, x)

    for point in (x, x + 1.0):
        assert onp.array_equal(traced(point), plain(point))
    jitted = cr.jit(traced)
    for point in (x, x + 1.0):
        assert onp.array_equal(jitted(point), plain(point))
    h = 1e-6
    fd = onp.stack([(plain(x + h * e) - plain(x - h * e)) / (2 * h) for e in onp.eye(3)],
                   axis=1)
    onp.testing.assert_allclose(cr.jacobian(traced)(x), fd, atol=1e-6)
    onp.testing.assert_allclose(cr.jacfwd(traced)(x), fd, atol=1e-6)
