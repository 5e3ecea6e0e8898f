"""eager15: faster forms in the eager backward pass give NumPy's own bits, warnings and
errors (issue 37): the cotangent of an operand broadcast over an axis followed by two
entries (gmm at d = 2) summed by ``_axis_summed``."""

import warnings

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule.numpy.rules._helpers import _axis_summed, unbroadcast


def _hard_sums(shape, dtype, seed=0):
    """Terms whose sum's last bits depend on the order they are added in."""
    rng = onp.random.default_rng(seed)
    return (rng.standard_normal(shape) * onp.exp2(rng.integers(-30, 30, shape))).astype(dtype)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("shape, axis", [((25, 1000, 2), 1), ((3, 4, 100, 2), 2),
                                         ((2, 129, 2), 1), ((300, 3, 2), 1)])
def test_axis_summed_are_numpys_sums(shape, axis, dtype):
    g = _hard_sums(shape, dtype)
    g[0, ..., 0] = -0.0  # (a sum of -0.0s: NumPy's is 0.0)
    x_shape = shape[:axis] + (1,) + shape[axis + 1:]
    assert _axis_summed(g, axis) is not None  # (the form applies)
    got = unbroadcast(g, onp.zeros(x_shape, dtype))
    want = onp.sum(g, axis=axis, keepdims=True)
    assert got.shape == x_shape and got.dtype == dtype
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("shape, axis", [((1, 1000, 2), 1), ((4, 5, 2), 1),
                                         ((25, 2, 1000), 1), ((3, 40, 65), 1)])
def test_other_layouts_take_numpys_sum(shape, axis):
    # one row of pairs (its transpose is one contiguous column, which einsum sums
    # pairwise), too small, or the summed axis followed by more than 64 entries (three to
    # 64: rows_sum, test_lead18.py)
    g = _hard_sums(shape, onp.float64, seed=1)
    assert _axis_summed(g, axis) is None
    x_shape = shape[:axis] + (1,) + shape[axis + 1:]
    got = unbroadcast(g, onp.zeros(x_shape))
    assert got.tobytes() == onp.sum(g, axis=axis, keepdims=True).tobytes()


def test_a_cotangent_not_c_ordered_takes_numpys_sum():
    g = onp.asfortranarray(_hard_sums((25, 1000, 2), onp.float64))
    assert _axis_summed(g, 1) is None
    got = unbroadcast(g, onp.zeros((25, 1, 2)))
    assert got.tobytes() == onp.sum(g, axis=1, keepdims=True).tobytes()


def test_the_gradient_through_a_broadcast_subtraction():
    # gmm's centring at d = 2: x (n, 2) less mu (k, 1, 2) broadcast over n
    rng = onp.random.default_rng(3)
    x, mu = rng.standard_normal((1000, 2)), rng.standard_normal((25, 2))

    def f(mu):
        return np.sum(np.sin(x[None, :, :] - mu[:, None, :]))

    got = chainrule.grad(f)(mu)
    # the rule's cotangent, -cos(x - mu), summed over n by NumPy
    cotangent = -onp.cos(x[None, :, :] - mu[:, None, :])
    assert got.tobytes() == onp.sum(cotangent, axis=1).tobytes()
    again = chainrule.grad(f)(mu + 0.5)  # (a second call, other values)
    onp.testing.assert_allclose(
        again, -onp.cos(x[None, :, :] - (mu + 0.5)[:, None, :]).sum(1), rtol=1e-12)
    assert chainrule.jit(chainrule.grad(f))(mu).tobytes() == got.tobytes()  # jit = eager


def test_overflow_and_nan_warn_and_raise_as_numpy_does():
    g = onp.full((25, 1000, 2), 1e308)
    x = onp.zeros((25, 1, 2))
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        got = unbroadcast(g, x)
    assert onp.isinf(got).all() and got.shape == (25, 1, 2)
    assert [str(w.message) for w in heard] == ["overflow encountered in reduce"]
    with onp.errstate(over="raise"), pytest.raises(FloatingPointError):
        unbroadcast(g, x)
    with onp.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        unbroadcast(g, x)
    g = _hard_sums((25, 1000, 2), onp.float64)
    g[3, 7, 1] = onp.nan
    got = unbroadcast(g, x)
    assert got.tobytes() == onp.sum(g, axis=1, keepdims=True).tobytes()
    assert onp.isnan(got[3, 0, 1]) and onp.isfinite(got[4]).all()


def test_second_order_through_the_pair_sum():
    rng = onp.random.default_rng(4)
    x, mu = rng.standard_normal((300, 2)), rng.standard_normal((5, 2))

    def f(mu):
        return np.sum((x[None, :, :] - mu[:, None, :]) ** 3)

    # d/dmu sum (x - mu)^3 = -3 sum_n (x - mu)^2; the Hessian's diagonal 6 sum_n (x - mu)
    hvp = chainrule.hessian_vector_product(f)(mu, onp.ones_like(mu))
    onp.testing.assert_allclose(hvp, 6.0 * (x[None] - mu[:, None]).sum(1), rtol=1e-10)
    onp.testing.assert_allclose(chainrule.grad(f)(mu),
                                -3.0 * ((x[None] - mu[:, None]) ** 2).sum(1), rtol=1e-12)


def test_views_taken_by_indexing_see_later_writes():
    # x[i]'s view is kept with its index (no packing now): a write into the base retakes it
    def f(x, numpy=np):
        y = x * 2.0
        tail, row, picked = y[1:], y[(0, slice(None))], y[onp.array([2, 0])]
        y[1] = 10.0 * x[0, 0]  # (the basic-index views see it; the index array's copy not)
        y[0, 1] = y[0, 1] * 3.0
        return numpy.sum(tail * tail) + numpy.sum(row * x[0]) + numpy.sum(picked ** 3)

    x = onp.arange(1.0, 10.0).reshape(3, 3)
    got = chainrule.grad(f)(x)
    want = onp.zeros_like(x)
    h = 1e-6
    for i in onp.ndindex(x.shape):  # (central differences of the same code in NumPy)
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        want[i] = (f(up, onp) - f(down, onp)) / (2 * h)
    onp.testing.assert_allclose(got, want, rtol=1e-6)
    assert chainrule.grad(f)(x + 1.0).shape == (3, 3)  # (a second call)
