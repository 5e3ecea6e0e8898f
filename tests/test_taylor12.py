"""The taylor and modes contracts' open differences of the eleventh session's long runs
(tests/contracts, seed 0; logs in /work/long11): each as a regression test asserting
real values (nested jvp, finite differences, float64 references)."""

from __future__ import annotations

import math
import warnings

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np


def _nested(f, x, curve, order):
    """[d^j/dt^j f(x + c_1 t + ... + c_k t^k) at 0 for j = 1..order], by nested jvp (the
    taylor contract's reference)."""
    def along(t):
        step = 0.0
        for m, c in enumerate(curve, start=1):
            step = step + c * t ** m
        return f((x + -((-step) + 0.0)).astype(x.dtype))

    out, h = [], along
    for _ in range(order):
        h = (lambda inner: lambda t: chainrule.jvp(inner, (t,), (1.0,))[1])(h)
        out.append(onp.asarray(h(0.0)))
    return out


def _jet(f, x, curve):
    terms = [c * math.factorial(j) for j, c in enumerate(curve, start=1)]
    return [onp.asarray(c) for c in chainrule.jet(f, (x,), (terms,))[1]]


def _same(got, want, rtol=1e-12):
    """Equal, nan and infinities (with their signs) at the same places."""
    onp.testing.assert_array_equal(onp.isnan(got), onp.isnan(want))
    onp.testing.assert_array_equal(got[onp.isinf(want)], want[onp.isinf(want)])
    finite = onp.isfinite(want)
    onp.testing.assert_allclose(got[finite], want[finite], rtol=rtol)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# ----------------------------------------------------------------------------- poles written
# taylor cases 2,040 and 4,302: 1 / x at x's zero (inf of order 1, nan above) written into
# an array in place (index_update) or added (index_add): the write took the nested JVP, whose
# t^2 * nan at t = 0 made nan of the order-1 inf


X = onp.array([0.06331143, 0.0, 0.24307486, 0.58682319, -0.08211463])
CURVE = [onp.array([0.19321893, -0.12575627, -0.13015579, -0.89653272, 0.66125251]),
         onp.array([-1.4474119, 0.37657601, 0.85438201, -1.52532545, 0.43136372]),
         onp.array([0.61010931, -0.91595219, -0.96565994, 1.14387796, -0.39805755])]


def _case_2040(x):
    v4 = np.ceil(x * x * 0.1)
    v6 = v4 * 1.0
    v6 += 1.0 / x  # (an in-place write of a buffer: index_update)
    return v6


def _case_4302(x):
    v3 = 1.0 / (x * 0.5)
    v5 = np.roll(v3, 1) + 0.0
    v5[1] = np.sum(v3)
    return v5


@pytest.mark.parametrize("f", [_case_2040, _case_4302,
                               lambda x: np.index_update(x * 2.0, onp.array([0, 1]), 1.0 / x[:2]),
                               lambda x: np.index_add(x * 2.0, onp.array([1, 1, 3]), 1.0 / x[:3])])
def test_a_pole_written_into_an_array_keeps_nested_jvps_infinities(f):
    got, want = _jet(f, X, CURVE), _nested(f, X, CURVE, 3)
    assert onp.isinf(want[0]).any()  # (the case is at the pole)
    for g, w in zip(got, want):
        _same(g, w)
    # and away from the pole the first coefficient is the central difference's
    finite = onp.isfinite(got[0])
    assert finite.any()
    first = (f(X + 1e-7 * CURVE[0]) - f(X - 1e-7 * CURVE[0])) / 2e-7
    onp.testing.assert_allclose(got[0][finite], first[finite], rtol=1e-5)


@pytest.mark.parametrize("fun", [np.index_update, np.index_add])
@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
def test_index_writes_jet_equals_nested_jvp(fun, dtype):
    rng = onp.random.default_rng(3)
    x = rng.standard_normal(6).astype(dtype)
    curve = [rng.standard_normal(6).astype(dtype) for _ in range(4)]
    index = onp.array([1, 4, 4]) if fun is np.index_add else onp.array([1, 4])

    def f(z):
        return fun(np.sin(z), index, z[:index.size] ** 2)

    got, want = _jet(f, x, curve), _nested(f, x, curve, 4)
    for g, w in zip(got, want):
        assert g.dtype == dtype
        onp.testing.assert_allclose(g, w, rtol=1e-4 if dtype == onp.float32 else 1e-11)
    # the collapsed Laplacian too (its linear path): the trace of the Hessian
    h = lambda z: np.sum(f(z) * onp.arange(1.0, 7.0))  # noqa: E731
    onp.testing.assert_allclose(chainrule.laplacian(h)(x),
                                onp.trace(chainrule.hessian(h)(x)),
                                rtol=1e-4 if dtype == onp.float32 else 1e-11)
