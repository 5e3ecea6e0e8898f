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
