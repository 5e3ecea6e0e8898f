"""Gradients where a function is not differentiable, against hand-derived values.

The documented choice (rules/elementwise.py, rules/reductions.py): where candidates tie,
the gradient is shared equally among them; abs, fabs and sinc at 0 have derivative 0;
prod with zeros gives each element the product of the others. Each case is checked in
reverse mode (grad) and forward mode (jvp along every basis direction).
"""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, hessian, jacfwd, jvp


def _forward_gradient(f, x):
    """The gradient of scalar ``f`` at ``x`` by forward mode, one basis direction at a time."""
    x = onp.asarray(x, dtype=float)
    out = onp.zeros(x.shape)
    for index in onp.ndindex(*x.shape):
        e = onp.zeros(x.shape)
        e[index] = 1.0
        out[index] = jvp(f, (x,), (e,))[1]
    return out


CASES = [
    # (label, f, x, hand-derived gradient)
    ("max", lambda x: np.max(x), [1.0, 3.0, 3.0], [0, 0.5, 0.5]),
    ("amin", lambda x: np.amin(x), [2.0, 1.0, 1.0, 1.0], [0, 1 / 3, 1 / 3, 1 / 3]),
    ("max axis", lambda x: np.sum(np.max(x, axis=1) * [1.0, 10.0]),
     [[4.0, 4.0, 1.0], [0.0, 2.0, 1.0]], [[0.5, 0.5, 0], [0, 10, 0]]),
    ("min keepdims", lambda x: np.sum(np.min(x, axis=0, keepdims=True)),
     [[1.0, 2.0], [1.0, 3.0]], [[0.5, 1], [0.5, 0]]),
    ("nanmax", lambda x: np.nanmax(x), [onp.nan, 2.0, 2.0], [0, 0.5, 0.5]),
    ("ptp", lambda x: np.ptp(x), [1.0, 3.0, 3.0, 1.0], [-0.5, 0.5, 0.5, -0.5]),
    ("median odd", lambda x: np.median(x), [3.0, 1.0, 2.0], [0, 0, 1]),
    ("median even", lambda x: np.median(x), [4.0, 1.0, 3.0, 2.0], [0, 0, 0.5, 0.5]),
    ("median tie", lambda x: np.median(x), [1.0, 2.0, 2.0, 5.0], [0, 0.5, 0.5, 0]),
    ("median odd tie", lambda x: np.median(x), [2.0, 1.0, 2.0], [0.5, 0, 0.5]),
    ("nanmedian", lambda x: np.nanmedian(x), [onp.nan, 1.0, 5.0, 2.0], [0, 0, 0, 1]),
    ("quantile", lambda x: np.quantile(x, 0.25), [1.0, 2.0, 3.0, 4.0], [0.25, 0.75, 0, 0]),
    ("percentile", lambda x: np.percentile(x, 50.0), [4.0, 1.0, 3.0, 2.0], [0, 0, 0.5, 0.5]),
    ("maximum", lambda x: np.sum(np.maximum(x, 2.0)), [2.0, 1.0, 3.0], [0.5, 0, 1]),
    ("maximum self", lambda x: np.sum(np.maximum(x, x)), [1.0, -2.0], [1, 1]),
    ("fmin", lambda x: np.sum(np.fmin(x, [1.0, onp.nan, 0.0])), [1.0, 2.0, 3.0], [0.5, 1, 0]),
    ("clip at bound", lambda x: np.sum(np.clip(x, 0.0, 1.0)), [0.0, 1.0, 0.5, 2.0],
     [0.5, 0.5, 1, 0]),
    ("abs at 0", lambda x: np.sum(np.abs(x)), [0.0, -2.0, 3.0], [0, -1, 1]),
    ("fabs at 0", lambda x: np.sum(np.fabs(x)), [0.0, -2.0], [0, -1]),
    ("sinc at 0", lambda x: np.sum(np.sinc(x)), [0.0], [0]),
    ("prod one zero", lambda x: np.prod(x), [2.0, 0.0, 3.0], [0, 6, 0]),
    ("prod two zeros", lambda x: np.prod(x), [2.0, 0.0, 0.0], [0, 0, 0]),
    ("prod zero axis", lambda x: np.sum(np.prod(x, axis=0)), [[0.0, 2.0], [5.0, 3.0]],
     [[5, 3], [0, 2]]),
]


@pytest.mark.parametrize("label, f, x, want", CASES, ids=[c[0] for c in CASES])
def test_hand_derived(label, f, x, want):
    x = onp.asarray(x, dtype=float)
    onp.testing.assert_allclose(grad(f)(x), want, atol=1e-12)
    onp.testing.assert_allclose(_forward_gradient(f, x), want, atol=1e-12)


def test_clip_bounds_get_their_share():
    lo, hi = 0.0, 1.0
    x = onp.array([0.0, -1.0, 0.5, 2.0, 1.0])
    g_lo = grad(lambda lo: np.sum(np.clip(x, lo, hi)))(lo)
    g_hi = grad(lambda hi: np.sum(np.clip(x, lo, hi)))(hi)
    assert g_lo == 1.5 and g_hi == 1.5  # 0.5 (tie at 0) + 1 (-1 clipped); 1 (2.0) + 0.5


def test_maximum_tie_shares_with_other_argument():
    g = grad(lambda y: np.sum(np.maximum(onp.array([2.0, 1.0, 3.0]), y)))(onp.full(3, 2.0))
    onp.testing.assert_allclose(g, [0.5, 1, 0])


def test_sinc_second_derivative_at_zero():
    # sinc(x) = 1 - (pi x)^2 / 6 + ...: sinc''(0) = -pi^2 / 3, in both modes
    d2 = grad(grad(lambda x: np.sinc(x)))(0.0)
    onp.testing.assert_allclose(d2, -onp.pi ** 2 / 3)
    onp.testing.assert_allclose(jvp(grad(np.sinc), (0.0,), (1.0,))[1], -onp.pi ** 2 / 3)


def test_prod_one_zero_second_order():
    # d2/dx_i dx_j prod(x) = product of the rest: for x = [2, 0, 3], H[0, 1] = 3, H[1, 2] = 2
    h = hessian(lambda x: np.prod(x))(onp.array([2.0, 0.0, 3.0]))
    onp.testing.assert_allclose(h, [[0, 3, 0], [3, 0, 2], [0, 2, 0]], atol=1e-12)


@pytest.mark.parametrize("name", ["cumprod", "cumulative_prod"])
def test_cumprod_with_a_zero_to_second_order(name):
    # f = sum_j w_j prod_{l <= j} x_l: df/dx_i and d2f/dx_i dx_k are products over l != i, k
    x = onp.array([1.5, -0.7, 0.0, 1.2])
    w = onp.array([0.3, -1.1, 0.8, 2.0])
    f = lambda x: np.sum(w * getattr(np, name)(x))
    rest = lambda j, skip: onp.prod([x[l] for l in range(j + 1) if l not in skip])
    g = [sum(w[j] * rest(j, {i}) for j in range(i, 4)) for i in range(4)]
    h = [[0.0 if i == k else sum(w[j] * rest(j, {i, k}) for j in range(max(i, k), 4))
          for k in range(4)] for i in range(4)]
    onp.testing.assert_allclose(grad(f)(x), g, atol=1e-12)
    onp.testing.assert_allclose(_forward_gradient(f, x), g, atol=1e-12)
    onp.testing.assert_allclose(hessian(f)(x), h, atol=1e-12)
    onp.testing.assert_allclose(jacfwd(grad(f))(x), h, atol=1e-12)


def test_unique_gives_each_value_to_its_first_copy():
    x = onp.array([3.0, 1.0, 3.0, 2.0, 1.0])
    onp.testing.assert_array_equal(np.unique(x), [1.0, 2.0, 3.0])
    # d/dx sum(unique(x)^2): 2*value at the first copy of each value, 0 at the repeats
    onp.testing.assert_array_equal(grad(lambda x: np.sum(np.unique(x) ** 2))(x),
                                   [6.0, 2.0, 0.0, 4.0, 0.0])
    values, counts = np.unique(x, return_counts=True)
    onp.testing.assert_array_equal(counts, [2, 1, 2])


# ----------------------------------------------------------------------------- one element each
# Where each answer of max/min is one element's (no tie, no nan answer), the JVP takes that
# element's tangent by its position; the mixed rows below take every branch of the rule.
ALONE = [
    # (x, axis, keepdims)
    (onp.array([[4.0, 1.0, 2.0], [0.0, 2.0, -1.0]]), 1, False),
    (onp.array([[4.0, 1.0, 2.0], [0.0, 2.0, -1.0]]), 0, False),
    (onp.array([[4.0, 1.0, 2.0], [0.0, 2.0, -1.0]]), -1, True),
    (onp.array([[4.0, 1.0, 2.0], [0.0, 2.0, -1.0]]), None, False),
    (onp.array([[4.0, 1.0, 2.0], [0.0, 2.0, -1.0]]), None, True),
    (onp.arange(24.0).reshape(2, 3, 4) % 7, 1, False),
    (onp.array([3.0, -2.0, 5.0]), 0, False),
    (onp.float64(2.5), None, False),
    (onp.zeros((0, 3)), 1, False),
]


def _picked_by_hand(fun, x, t, axis, keepdims):
    """The tangent of the element fun picks, read through NumPy's arg-function."""
    arg = onp.argmax if fun in (np.max, np.nanmax) else onp.argmin
    if axis is None:
        out = onp.ravel(t)[arg(x)]
        return onp.reshape(out, (1,) * onp.ndim(x)) if keepdims else out
    at = onp.expand_dims(arg(x, axis=axis), axis)
    out = onp.take_along_axis(t, at, axis)
    return out if keepdims else onp.squeeze(out, axis)


@pytest.mark.parametrize("fun", [np.max, np.min, np.nanmax, np.amin])
@pytest.mark.parametrize("x, axis, keepdims", ALONE)
def test_extreme_tangent_is_the_picked_elements(fun, x, axis, keepdims):
    t = onp.reshape(onp.arange(onp.size(x), dtype=float) * 1.5 - 4.0, onp.shape(x))

    def f(z):
        return fun(z, axis=axis, keepdims=keepdims)

    value, tangent = jvp(f, (x,), (t,))
    want = _picked_by_hand(fun, x, t, axis, keepdims)
    assert type(tangent) is type(value)  # (a full reduction: a NumPy scalar, as its value)
    assert onp.shape(tangent) == onp.shape(value)
    onp.testing.assert_array_equal(tangent, want)
    # the jvp of the gradient of a cubic of it: the second derivative through the rule
    def cubic(z):
        return np.sum(f(z) ** 3)

    if onp.size(x):
        _, hvp = jvp(grad(cubic), (x,), (t,))
        want = hessian(cubic)(x).reshape(onp.size(x), -1) @ onp.ravel(t)
        onp.testing.assert_allclose(hvp, want.reshape(onp.shape(x)))


def test_extreme_tangent_ignores_the_other_elements():
    # d min / d x is 0 on the elements min does not pick: their tangents, inf or nan,
    # do not reach it (a weighted sum made 0 * inf = nan of them); a picked -0.0 is 0.0,
    # as NumPy's sum of it and zeros is (jit computes it so)
    x = onp.array([[1.0, 2.0, 3.0], [5.0, 4.0, 6.0], [0.0, 1.0, 2.0]])
    t = onp.array([[-0.0, onp.inf, onp.nan], [1.0, 2.0, -onp.inf], [onp.nan, 0.0, 1.0]])
    _, tangent = jvp(lambda z: np.min(z, axis=1), (x,), (t,))
    onp.testing.assert_array_equal(tangent, [0.0, 2.0, onp.nan])
    assert not onp.signbit(tangent[0])


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # (inf * 0 of the ties)
def test_extreme_tangent_jit_is_eager_and_traces_once():
    import chainrule

    def f(z):
        return np.sum(np.min(z, axis=1) ** 3)

    def hvp(z, u):
        return jvp(grad(f), (z,), (u,))

    jitted = chainrule.jit(hvp)
    rng = onp.random.default_rng(5)
    t = rng.normal(size=(6, 4))
    t[0, 0], t[1] = -0.0, [onp.inf, -0.0, 1.0, 2.0]
    for _ in range(4):  # the picked positions differ from call to call
        x = rng.normal(size=(6, 4))
        for eager, staged in zip(hvp(x, t), jitted(x, t)):
            assert onp.array_equal(eager, staged, equal_nan=True)
            assert onp.array_equal(onp.signbit(eager), onp.signbit(staged))
    assert jitted.cache_info().variants == 1
    # a tie then a nan answer: the shared weights, as eagerly
    for x in (onp.ones((6, 4)), onp.where(onp.eye(6, 4) > 0, onp.nan, 1.0)):
        for eager, staged in zip(hvp(x, t), jitted(x, t)):
            assert onp.array_equal(eager, staged, equal_nan=True)
