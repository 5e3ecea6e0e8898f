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


# ----------------------------------------------------------------------------- the references
# where the taylor contract's reference was wrong (tests/contracts/taylor.py, argued in the
# CHANGELOG): float32's nested jvp overflowing (case 1,197), float32's rounding of a
# Laplacian that cancels to 0 (case 2,985), central differences stepping over a bump far
# narrower than their step (case 4,049)

def _program(fn, n, dtype, hazards=("nested",)):
    from tests.contracts._programs import Program

    return Program("", fn, n, onp.dtype(dtype), frozenset(hazards), "vec", {}, {})


def _case_1197(x, s):
    v6 = np.sort(x) + s
    v8 = np.exp(-v6 * v6)  # (1.4e-18 at x's smallest entry: nested jvp divides by v8^4)
    t2 = chainrule.grad(lambda t: t * np.sum((x > 0) * x) + t ** 2)(s)
    return t2 / v8


X1197 = onp.array([0.0, 0.20123969, 1.3981295, -1.4173603, -2.9923527, 2.2979565],
                  dtype=onp.float32)
CURVE1197 = [onp.array(c, dtype=onp.float32) for c in (
    [0.62414473, -0.44887298, -0.3985078, -0.0220471, 0.12655096, 0.01149146],
    [0.586747, 0.38988084, 1.9581014, -0.74043405, 1.9133413, -0.3923227],
    [-2.634506, 0.6201401, 0.13955437, 0.30305466, 0.5715755, -0.17308392],
    [0.7316851, 0.69914025, 1.2749429, 1.2865459, -2.0475636, 0.62615216])]


def test_float32_nested_jvp_overflows_where_jet_is_right():
    from tests.contracts import taylor

    s = -3.4177826480534237
    f = lambda z: _case_1197(z, s)  # noqa: E731
    got = _jet(f, X1197, CURVE1197)
    narrow = _nested(f, X1197, CURVE1197, 4)
    wide = _nested(f, X1197.astype(onp.float64), [c.astype(onp.float64) for c in CURVE1197], 4)
    assert onp.isneginf(narrow[2][0]) and onp.isnan(narrow[3][0])  # (float32's overflow)
    for g, w in zip(got, wide):
        assert onp.all(onp.isfinite(g))
        onp.testing.assert_allclose(g, w, rtol=1e-4)  # jet: float64's derivative
    onp.testing.assert_allclose(got[2][0], -3.2698e20, rtol=1e-4)
    p = _program(_case_1197, 6, onp.float32)
    assert taylor._check_at(p, X1197, s, 4, CURVE1197) == []
    # (and a float32 jet off by 1 % is still a difference: float64 excuses rounding only)
    reference = taylor._Float64Reference(p, X1197, s, CURVE1197, 4)
    assert reference.agrees(3, 0, got[2], False)
    assert not reference.agrees(3, 0, got[2] * 1.01, False)


def _case_2985(x, s, cancelled=False):
    n = 6
    m1 = np.outer(np.tanh(x), np.sin(x)) * (0.3 / n) + 2.0 * np.eye(n)
    v2 = np.linalg.det(m1) * x
    v4 = v2 * 1.0
    v4 += v2
    v5 = np.repeat(v4[:1], n) + v4
    v6 = np.concatenate([v5[:1] * 2.0, v5[1:]])
    v7 = np.sin(v5) * v6
    if cancelled:
        return np.sum(v7)
    t8 = chainrule.grad(lambda t: t * np.sum(v7) + t ** 2)(s)
    return np.sum(np.tanh(v6) - v7) + t8  # = sum(tanh(v6)) + 2 s: v7's terms cancel


def test_a_float32_laplacian_that_cancels_differs_by_rounding_alone():
    from tests.contracts import taylor

    x = onp.array([-0.98121434, 0.23701084, -0.00265294, 0.22957192, -0.58593017,
                   0.08301898], dtype=onp.float32)
    s = onp.float32(-0.61790264)
    p = _program(_case_2985, 6, onp.float32)
    g = taylor._contracted(p, s)
    # the cancelled terms are 1.6e7 (sum(v7)'s Laplacian); the function's, 0 in float64
    cancelled = chainrule.laplacian(lambda z: _case_2985(z, float(s), True))(x.astype(float))
    onp.testing.assert_allclose(cancelled, 1.5908e7, rtol=1e-4)
    x64 = x.astype(onp.float64)
    g64 = taylor._contracted(p, float(s))
    assert abs(chainrule.laplacian(g64)(x64)) < 1e-6
    assert abs(onp.trace(chainrule.hessian(g64)(x64))) < 1e-6
    collapsed = chainrule.laplacian(g)(x)
    per_direction = sum(chainrule.jet(g, (x,), ([e, 0 * e],))[1][1]
                        for e in onp.eye(6, dtype=onp.float32))
    assert abs(collapsed - per_direction) > 1e-2  # (float32's rounding at 1.6e7)
    assert taylor._check_collapsed(p, x, s) == []
    # (a collapsed value farther off than 10 times the per-direction sum's error is not)
    assert taylor._float32_rounding(p, x, s, collapsed, per_direction)
    assert not taylor._float32_rounding(p, x, s, 20 * abs(per_direction) + 1.0,
                                        per_direction)


def _case_4049(x, s):
    n = 5
    v1 = np.sin(x)
    v2 = np.prod(x) + v1
    m3 = np.outer(np.tanh(v1), np.sin(v2)) * (0.3 / n) + 2.0 * np.eye(n)
    v4 = np.linalg.det(m3) * v2
    v5 = np.cumprod(v4[::-1])[::-1] * v4  # (1e8 t at the zero of x: v8 a bump 1e-8 wide)
    m6 = np.outer(np.tanh(v4), np.sin(v2)) * (0.3 / n) + 2.0 * np.eye(n)
    v8 = np.linalg.det(m6) * v2 / (2.0 + v5 * v5)
    return np.sum(np.cos(v8)) + s


def test_central_differences_step_over_a_bump_jet_sees():
    from tests.contracts import taylor

    x = onp.array([0.79903334, 0.73034636, 0.0, -4.66160208, 1.42161957])
    curve = [onp.array([-1.09862677, -0.1093238, -0.11366165, 1.47956293, 0.51175791]),
             onp.array([-0.17934812, 0.11936337, 0.73329518, -0.08915602, -0.80979954]),
             onp.array([0.63362169, 0.70919132, 0.1719432, 0.326503, 0.87771696])]
    s = 1.6547633763645804
    p = _program(_case_4049, 5, onp.float64, ("products", "linalg", "index"))

    def terms(t):  # jet's terms at x(t) (the curve's own derivatives as its series)
        return taylor._terms_at(p, x, s, curve, t)

    at0 = terms(0.0)
    assert abs(at0[2][0]) > 1e16 and abs(at0[3][0]) > 1e18  # the bump's
    for h in (1e-11, 1e-12):  # steps far below its width: the jet's terms
        onp.testing.assert_allclose((terms(h)[2] - terms(-h)[2]) / (2 * h), at0[3], rtol=2e-3)
        onp.testing.assert_allclose((terms(h)[1] - terms(-h)[1]) / (2 * h), at0[2], rtol=2e-3)
    assert abs(terms(1e-3)[2][0]) < 1e5  # (a step of 1e-3 lands far outside it)
    assert taylor._check_differences(p, x, s, 3, curve) == []


# ----------------------------------------------------------------------------- modes at overflow
# modes case 5,360: np.exp(v8, out=o9, where=v8 > 0.1) with v8 = 4e4 at one entry: reverse
# mode nan, forward mode -inf. where= is not the cause (np.where gives the same); the value
# overflowed, and the two modes sum the derivative's infinite intermediates in other orders


def _overflowing(x, where):
    v = 1000.0 * (x * x + x)  # (30000 at x = -6: exp overflows)
    if not where:
        return np.sum(np.exp(v))
    o = np.full(3, 0.5)
    np.exp(v, out=o, where=v > 0.1)
    return np.sum(o)


@pytest.mark.parametrize("where", [False, True])
def test_modes_at_an_overflowed_value_differ_by_ieee_order_alone(where):
    from tests.contracts._compare import overflowed

    x = onp.array([-6.0, -0.5, 0.001])
    f = lambda z: _overflowing(z, where)  # noqa: E731
    assert onp.isposinf(f(x))
    # d/dx exp(1000 (x^2 + x)) = exp(v) 1000 (2x + 1): at x = -6, inf times -11000, -inf;
    # at -0.5 exp(-250) times 0; at 0.001 e^1.001 1002 (where= computes it: 1.001 > 0.1)
    want = [-onp.inf, 0.0, onp.exp(1.001) * 1002.0]
    reverse, forward = chainrule.grad(f)(x), chainrule.jacfwd(f)(x)
    onp.testing.assert_allclose(reverse[1:], want[1:], rtol=1e-12)  # (where= keeps these)
    assert onp.isnan(reverse[0])  # inf * x + inf * x + inf: inf - inf
    assert forward[0] == -onp.inf  # inf * (finite chain first)
    assert onp.isnan(forward[1:]).all()  # 0 * inf: forward's tangent 0 times exp(v) = inf
    # the contract compares them only where both are finite at an overflowed value
    assert overflowed(f(x), float(reverse @ onp.ones(3)), -onp.inf)
    assert not overflowed(1.0, onp.nan, -onp.inf)  # (a finite value: compared)
    assert not overflowed(onp.inf, 1.0, 2.0)  # (both finite: compared)


# ----------------------------------------------------------------------------- poles, nested
# a pole's series (1/x at 0: inf, nan, nan) into a primitive without a recurrence of its own,
# or a recurrence rule whose last coefficient is not finite (both take the nested JVP): the
# nested JVP moved x along x_0 + c_1 t + c_2 t^2 ..., where inf * 0 and nan * 0 at t = 0
# made nan of every order, the value's included


XP = onp.array([0.5, 0.0, -0.3, 2.0])
CURVEP = [onp.array([1.0, -0.7, 0.4, 0.3]), onp.array([0.2, 0.5, -0.1, 1.0]),
          onp.array([0.3, 0.1, 0.2, 0.4])]


@pytest.mark.parametrize("f", [
    lambda z: np.exp(1.0 / z),  # (exp's recurrence; its last coefficient nan)
    lambda z: np.square(1.0 / z),
    lambda z: np.exp(-1.0 / z),
    lambda z: np.cumprod(1.0 / z),  # (no Taylor rule: the nested JVP)
    lambda z: np.hypot(1.0 / z, 2.0),
    lambda z: np.sort(np.tanh(1.0 / z)),
])
def test_a_pole_into_the_nested_jvp_keeps_nested_jvps_orders(f):
    got, want = _jet(f, XP, CURVEP), _nested(f, XP, CURVEP, 3)
    for g, w in zip(got, want):
        _same(g, w)
    assert not onp.isfinite(want[0]).all() and onp.isfinite(want[0][0])  # (at the pole)


def test_exp_of_a_pole_first_coefficient_by_hand():
    # d/dt exp(1 / x(t)) = -exp(1/x) x' / x^2: at x = +0 with x' = -0.7, inf * inf = inf
    got = _jet(lambda z: np.exp(1.0 / z), XP, CURVEP)
    assert got[0][1] == onp.inf
    onp.testing.assert_allclose(got[0][0], -onp.exp(2.0) * 1.0 / 0.25, rtol=1e-12)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
def test_the_nested_jvp_series_keeps_dtypes_signed_zeros_and_zero_coefficients(dtype):
    x = onp.array([-0.0, 0.5, 2.0], dtype=dtype)
    f = lambda z: np.linalg.eigvalsh(np.diag(z)) * np.sign(z)  # noqa: E731 (nested: eigvalsh)
    curve = [onp.array([0.3, -0.2, 1.0], dtype=dtype), onp.zeros(3, dtype)]
    value, got = chainrule.jet(f, (x,), ([c * math.factorial(j + 1) for j, c in
                                          enumerate(curve)],))
    assert onp.signbit(value[0]) or value[0] == 0  # (the primal at -0.0 itself)
    onp.testing.assert_array_equal(onp.signbit(onp.asarray(value)),
                                   onp.signbit(onp.asarray(f(x))))
    for g, w in zip(got, _nested(f, x, curve, 2)):
        assert g.dtype == dtype
        onp.testing.assert_allclose(g, w, rtol=1e-6 if dtype == onp.float32 else 1e-14)
    # arccosh (no Taylor rule: the nested JVP) at its singular point 1 along x = 1 + t: a
    # plain zero second term is not multiplied by arccosh's infinite derivative (0 * inf):
    # derivatives inf and -inf, and at 2 the hand-derived 1/sqrt(3), -2/3^(3/2)
    x0 = onp.array([1.0, 2.0], dtype=dtype)
    first, second = chainrule.jet(np.arccosh, (x0,), ([onp.ones(2, dtype),
                                                       onp.zeros(2, dtype)],))[1]
    assert first[0] == onp.inf and second[0] == -onp.inf
    onp.testing.assert_allclose([first[1], second[1]], [3 ** -0.5, -2 * 3 ** -1.5],
                                rtol=1e-6 if dtype == onp.float32 else 1e-15)



def test_a_pole_along_a_curve_that_stays_on_it_is_nan_as_nested_jvps():
    # (contract case 549 while this was written: v2 = diag(0) @ x is 0 along every curve,
    # so 1 / v2 is inf throughout and its derivatives are 0 / 0, nan, in nested jvp; jet's
    # nested JVP must move the value by its zero coefficient, not leave it still)
    f = lambda z: 1.0 / (np.diag(onp.zeros(3)) @ z)  # noqa: E731
    x = onp.array([-0.07895822, -0.0, 2.0])
    curve = [onp.array([-1.4, 1.9, -0.9]), onp.array([-1.2, 0.02, 1.1])]
    got, want = _jet(f, x, curve), _nested(f, x, curve, 2)
    assert onp.isnan(want[0]).all()
    for g, w in zip(got, want):
        _same(g, w)

def _case_6612(x, s):
    n = 5
    m1 = np.outer(np.tanh(x), np.sin(x)) * (0.3 / n) + 2.0 * np.eye(n)
    v2 = np.linalg.slogdet(m1)[1] * x
    return np.sin(np.prod(v2) * v2)  # (v = -6.5e3 x 3.5: sin oscillates with period 3e-5)


def test_central_differences_of_an_oscillation_far_faster_than_their_steps():
    from tests.contracts import taylor

    x = onp.array([-4.19715245, 1.27089763, 0.60307798, 1.35449352, 2.82340075])
    curve = [onp.array([-0.11567697, 1.08587901, 0.53862491, 0.24849267, 0.61694244]),
             onp.array([-0.35759029, -0.28914738, -1.7462453, 0.46271619, -1.69635135])]
    s = -1.2707134610270998
    p = _program(_case_6612, 5, onp.float64, ("products", "linalg"))
    at = {t: taylor._terms_at(p, x, s, curve, t) for t in (0.0, 1e-9, -1e-9)}
    # jet's second term is the central difference of its first at a step of 1e-9 ...
    onp.testing.assert_allclose((at[1e-9][1] - at[-1e-9][1]) / 2e-9, at[0.0][2], rtol=1e-3)
    assert abs(at[0.0][2][0]) > 4e10
    # ... where steps of 1e-3 and 5e-4 agree on 1.07e8 by chance (to 0.4 %), and 2.5e-4's
    # does not: the contract now leaves the entry uncompared
    h = 1e-3
    d = {t: taylor._terms_at(p, x, s, curve, t)[1][0] for t in (h, -h, h / 2, -h / 2, h / 4,
                                                                 -h / 4)}
    coarse, fine, finer = ((d[t] - d[-t]) / (2 * t) for t in (h, h / 2, h / 4))
    assert abs(coarse - fine) < 1e-2 * abs(fine) and abs(fine - finer) > 1e-2 * abs(finer)
    assert taylor._check_differences(p, x, s, 2, curve) == []
