"""Contract differences left open by the fourteenth session, each as a regression test with
real values: the taylor contract's case 265 of seed 2828 (the collapsed Laplacian's
elementwise rule overflowing float32 where the per-direction jets do not) and the fill
contract's case 1,315 of seed 1414 (grad·v and jvp differing by the program's own
conditioning alone)."""

from __future__ import annotations

import warnings

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np

# exp(-x^2) is 6.1e-17 at x = 6.11: s / exp(-x^2)'s second derivative along the unit curve,
# s / exp(-x^2)^3 ~ 1e48, overflows float32 (max 3.4e38), while its second derivative along
# x's own direction, s exp(x^2) (2 + 4 x^2) = 4.3e17, does not
X = onp.array([-1.1788114, 6.109755, 0.5], onp.float32)
S = 0.1743772399463484


def _exact_diagonal(x, power=1.0):
    """d^2/dx^2 of s exp(-x^2)^-p = s exp(p x^2), elementwise, in float64."""
    x = x.astype(onp.float64)
    return S * onp.exp(power * x * x) * (2 * power + 4 * power ** 2 * x * x)


def _per_direction_sum(f, x, directions):
    total = 0.0
    for v in directions:
        total = total + chainrule.jet(f, (x,), ([v, onp.zeros_like(v)],))[1][1]
    return total


@pytest.mark.parametrize("form", ["divide", "reciprocal", "power -1", "power -1.5"])
def test_collapsed_laplacian_is_finite_where_the_unit_curve_overflows(form):
    power = 1.5 if form == "power -1.5" else 1.0

    def f(x):
        v = np.exp(-x * x)
        if form == "divide":
            return np.sum(S / v)
        if form == "reciprocal":
            return S * np.sum(np.reciprocal(v))
        return S * np.sum(v ** -power)

    want = onp.sum(_exact_diagonal(X, power))
    with onp.errstate(over="ignore", invalid="ignore"):  # (the first pass, mended)
        got = chainrule.laplacian(f)(X)
        assert got.dtype == onp.float32
        onp.testing.assert_allclose(float(got), want, rtol=1e-5)
        onp.testing.assert_allclose(float(chainrule.jit(chainrule.laplacian(f))(X)),
                                    want, rtol=1e-5)
        onp.testing.assert_allclose(chainrule.hessian_diagonal(f)(X),
                                    _exact_diagonal(X, power), rtol=1e-5)


def test_stochastic_laplacian_mends_the_overflow_too():
    def f(x):
        return np.sum(S / np.exp(-x * x))

    directions = onp.random.default_rng(5).standard_normal((4, X.size)).astype(onp.float32)
    want = float(_per_direction_sum(f, X, directions)) / 4
    assert onp.isfinite(want)
    with onp.errstate(over="ignore", invalid="ignore"):
        got = chainrule.laplacian(f, samples=4, key=5, distribution="gaussian")(X)
    # (the same directions: default_rng(5).standard_normal((4, 3)) is what laplacian draws)
    onp.testing.assert_allclose(float(got), want, rtol=1e-5)
    signs = onp.random.default_rng(6).choice([-1.0, 1.0], size=(3, X.size)).astype(onp.float32)
    # (laplacian's own draw; every Rademacher direction has v_i^2 = 1, so for this sum of
    # functions of one element each the mean is the Laplacian itself)
    with onp.errstate(over="ignore", invalid="ignore"):
        mean = chainrule.laplacian(f, samples=3, key=6)(X)
    onp.testing.assert_allclose(float(mean), onp.sum(_exact_diagonal(X)), rtol=1e-5)
    onp.testing.assert_allclose(float(mean), float(_per_direction_sum(f, X, signs)) / 3,
                                rtol=1e-5)


def test_the_mended_pass_nests_and_the_next_call_takes_the_plain_one():
    def f(x):
        return np.sum(S / np.exp(-x * x))

    x64 = X.astype(onp.float64)
    # d/dx of s exp(x^2) (2 + 4 x^2): s exp(x^2) (12 x + 8 x^3)
    want = S * onp.exp(x64 * x64) * (12 * x64 + 8 * x64 ** 3)
    jitted = chainrule.jit(chainrule.laplacian(f))
    with onp.errstate(over="ignore", invalid="ignore"):
        onp.testing.assert_allclose(chainrule.grad(chainrule.laplacian(f))(X), want, rtol=1e-5)
        for x in (X, onp.float32([0.5, -1.0, 2.0]), X, onp.float32([-0.0, 0.0, 1.0])):
            eager = chainrule.laplacian(f)(x)
            onp.testing.assert_allclose(float(eager), onp.sum(_exact_diagonal(x)), rtol=1e-5)
            assert float(jitted(x)) == float(eager)


def test_the_mend_keeps_a_pole_infinite_and_nan_nan():
    def f(x):
        return np.sum(np.sqrt(x))

    with onp.errstate(all="ignore"):
        assert chainrule.laplacian(f)(onp.array([0.0, 1.0], onp.float32)) == -onp.inf
        assert onp.isnan(chainrule.laplacian(f)(onp.array([onp.nan, 1.0], onp.float32)))
        # exp overflowing at x = 89 in float32 is a real overflow: inf both ways
        assert chainrule.laplacian(lambda x: np.sum(np.exp(x)))(
            onp.array([89.0, 1.0], onp.float32)) == onp.inf


def test_taylor_contract_case_265_of_seed_2828():
    from tests.contracts import taylor as contract

    rng = onp.random.default_rng([2828, 265])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        case = contract.generate(rng)
    x, s = case.args[0]
    g = contract._contracted(case.program, s)
    with onp.errstate(all="ignore"):
        got = chainrule.laplacian(g)(x)
        x64, s64 = contract._widened(x, s)
        want = chainrule.laplacian(contract._contracted(case.program, s64))(x64)
    assert onp.isfinite(want) and abs(want) > 1e33
    onp.testing.assert_allclose(float(got), float(want), rtol=1e-4)


def _fill_case_1315():
    from tests.contracts import fill as contract

    rng = onp.random.default_rng([1414, 1315])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return contract, contract.generate(rng)


def test_fill_contract_case_1315_of_seed_1414_is_the_dot_products_rounding():
    from tests.contracts._compare import dot_spread, within_spread

    contract, case = _fill_case_1315()
    p = case.program
    x, s = case.calls[0]
    v = onp.linspace(-1.0, 1.0, x.size)
    p.reset()
    g = chainrule.grad(p.fn)(x, s)
    p.reset()
    tangent = chainrule.jvp(p.fn, (x, s), (v, 0.0))[1]
    # the directional derivative in 60-digit mpmath (the program written out by hand, its
    # branches as at x): -1.5695971542370671; the gradient's entries -2.0301351423e11,
    # -3.3568491125e11, -2.0301351423e11, so grad·v cancels terms of 2e11 to 1.57
    exact = -1.5695971542370671
    onp.testing.assert_allclose(float(tangent), exact, rtol=1e-10)
    onp.testing.assert_allclose(g, [-203013514229.5753, -335684911248.38775,
                                    -203013514231.1449], rtol=1e-7)
    dot = float(onp.dot(g, v))
    assert abs(dot - exact) > 1e-10 * abs(exact) + 1e-10  # (beyond the plain tolerance)
    # ... but even the exact gradient, rounded to float64, misses by as much: its entries'
    # own rounding, which is the allowance
    rounded = float(onp.dot(onp.array([-203013514229.57530354, -335684911248.38774642,
                                       -203013514231.1449007]), v))
    assert abs(rounded - exact) > abs(dot - exact) / 2
    assert within_spread(tangent, dot, dot_spread(g, v), 1e-10, 1e-10)
    assert contract.check(case) == []
    # and an entry of the gradient wrong by 1e-13 of itself (0.02) is still caught
    wrong = g + onp.array([0.02, 0.0, 0.0])
    assert not within_spread(tangent, float(onp.dot(wrong, v)), dot_spread(wrong, v),
                             1e-10, 1e-10)


def test_dot_spread_allows_nothing_where_the_terms_do_not_cancel_or_are_not_finite():
    from tests.contracts._compare import dot_spread, within_spread

    g, v = onp.array([1.5, -2.0, 0.25]), onp.array([-1.0, 0.0, 1.0])
    assert not within_spread(-1.25, -1.25 + 1e-9, dot_spread(g, v), 1e-10, 1e-12)
    assert within_spread(-1.25, -1.25 + 1e-13, dot_spread(g, v), 1e-10, 1e-12)
    assert not within_spread(1.0, onp.inf, dot_spread([onp.inf, 1.0], [1.0, 1.0]), 1e-10, 0)
    assert not within_spread(1.0, 2.0, dot_spread([1e308, 1e308], [10.0, -10.0]), 1e-10, 0)
    assert within_spread(onp.nan, onp.nan, 0.0, 1e-10, 0)


def test_taylor_contract_case_1546_of_seed_1414_jet_is_right_the_differences_unresolved():
    from tests.contracts import taylor as contract

    rng = onp.random.default_rng([1414, 1546])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        case = contract.generate(rng)
    p = case.program
    (x, s), curve = case.args[1], case.curves[1]
    terms = [c * f for c, f in zip(curve, (1, 2, 6))]
    p.reset()
    _, series = chainrule.jet(lambda z: p.fn(z, s), (x,), (terms,))
    # the program written out by hand in 50-digit mpmath, differentiated along the curve
    onp.testing.assert_allclose([float(c) for c in series],
                                [7927391223.1351, -120814842387.511, 246086121692905.0],
                                rtol=1e-12)
    with onp.errstate(all="ignore"):
        assert contract._check_differences(p, x, s, case.order, curve) == []
        # the differences of derivative 1 at three steps agree to 3e-5 and all miss
        # derivative 2 by 0.4 %: their changes do not shrink as the step squared
        at = {tau: contract._terms_at(p, x, s, curve, tau)[1][0]
              for tau in (1e-3, -1e-3, 5e-4, -5e-4, 2.5e-4, -2.5e-4)}
    steps = [(at[h] - at[-h]) / (2 * h) for h in (1e-3, 5e-4, 2.5e-4)]
    onp.testing.assert_allclose(steps, -1.2035e11, rtol=1e-4)
    assert not contract._converging(onp.array([steps[0] - steps[1]]),
                                    onp.array([steps[1] - steps[2]]), 1e-7 * 8e9)[0]


def test_converging_accepts_a_resolved_curve():
    from tests.contracts import taylor as contract

    # d/dt sin(3 t) at 0.4, by central differences of steps h, h/2, h/4: errors ~ h^2
    f, t0 = (lambda t: onp.sin(3 * t)), 0.4
    d = [(f(t0 + h) - f(t0 - h)) / (2 * h) for h in (1e-2, 5e-3, 2.5e-3)]
    assert contract._converging(onp.array([d[0] - d[1]]), onp.array([d[1] - d[2]]), 1e-12)[0]
    assert contract._converging(onp.array([0.0]), onp.array([1e-13]), 1e-12)[0]
