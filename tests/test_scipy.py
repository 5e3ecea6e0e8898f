"""chainrule.scipy beyond the spec tables: the optional dependency, errors for
derivatives without a closed form, odeint against closed forms and finite
differences, dispatch of SciPy's own ufuncs on traced values."""

from __future__ import annotations

import importlib
import subprocess
import sys

import numpy as onp
import pytest

pytest.importorskip("scipy")

import scipy.special as ssp  # noqa: E402

import chainrule.numpy as np  # noqa: E402
import chainrule.scipy.integrate as integrate  # noqa: E402
import chainrule.scipy.linalg as la  # noqa: E402
import chainrule.scipy.signal as signal  # noqa: E402
import chainrule.scipy.special as sp  # noqa: E402
import chainrule.scipy.stats as stats  # noqa: E402
from chainrule import elementwise_grad, grad, jacobian, make_jvp  # noqa: E402
from chainrule.test_util import check_grads  # noqa: E402

odeint = integrate.odeint
TOL = dict(rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- optional SciPy
def test_import_chainrule_scipy_without_scipy_names_the_fix(monkeypatch):
    for name in [m for m in sys.modules if m == "chainrule.scipy" or
                 m.startswith("chainrule.scipy.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "scipy", None)  # makes `import scipy` fail
    with pytest.raises(ImportError, match=r"pip install chainrule\[scipy\]"):
        importlib.import_module("chainrule.scipy")


def test_import_chainrule_works_without_scipy():
    code = ("import sys; sys.modules['scipy'] = None\n"
            "import chainrule, chainrule.numpy as np\n"
            "print(chainrule.grad(lambda x: np.sin(x) * x)(1.0))\n"
            "try:\n    import chainrule.scipy\nexcept ImportError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    value, err = out.stdout.strip().splitlines()
    assert float(value) == pytest.approx(onp.cos(1.0) + onp.sin(1.0))
    assert "pip install chainrule[scipy]" in err


# ----------------------------------------------------------------------------- special
def test_scipy_ufunc_on_traced_value_dispatches_to_the_primitive():
    x = onp.array([0.3, 1.1])
    assert onp.allclose(elementwise_grad(lambda x: ssp.erf(x))(x),
                        2 / onp.sqrt(onp.pi) * onp.exp(-x**2))


def test_float32_gradient_stays_float32():
    x = onp.array([0.5, 1.5], dtype=onp.float32)
    g = elementwise_grad(sp.gammaln)(x)
    assert g.dtype == onp.float32
    assert onp.allclose(g, ssp.digamma(x), rtol=1e-5)


@pytest.mark.parametrize("fun, arg", [
    (lambda v: sp.iv(v, 1.3), 1.5),
    (lambda v: sp.jv(v, 1.3), 1.5),
    (lambda a: sp.betainc(a, 2.0, 0.3), 1.5),
    (lambda a: sp.gammainc(a, 0.7), 1.5),
    (lambda df: sp.stdtr(df, 0.7), 3.0),
    (lambda a: stats.gamma.cdf(1.0, a), 1.5),
])
def test_no_closed_form_raises_in_both_modes(fun, arg):
    with pytest.raises(NotImplementedError, match="not differentiable with respect to argument"):
        grad(fun)(arg)
    with pytest.raises(NotImplementedError, match="no closed form"):
        make_jvp(fun)(arg)(1.0)


def test_integer_orders_get_no_gradient_but_x_does():
    x = 1.7
    assert grad(lambda x: sp.polygamma(1, x))(x) == pytest.approx(ssp.polygamma(2, x))
    assert grad(lambda x: sp.yn(1, x))(x) == pytest.approx(ssp.yvp(1, x))


def test_logsumexp_gradient_is_softmax_and_misc_alias():
    from chainrule.scipy.misc import logsumexp
    a = onp.array([0.1, -2.0, 1.5])
    assert onp.allclose(grad(logsumexp)(a), ssp.softmax(a))
    assert onp.allclose(grad(lambda b: sp.logsumexp(a, b=b))(onp.ones(3)), ssp.softmax(a))


# ----------------------------------------------------------------------------- stats
def test_norm_logpdf_parameter_gradients_by_hand():
    x, mu, s = 1.3, 0.4, 0.8
    dmu, ds = grad(lambda m, s: stats.norm.logpdf(x, m, s), argnum=(0, 1))(mu, s)
    assert dmu == pytest.approx((x - mu) / s**2)
    assert ds == pytest.approx(-1 / s + (x - mu) ** 2 / s**3)


def test_stats_argument_errors():
    with pytest.raises(TypeError, match="shape parameter"):
        stats.gamma.pdf(1.0)
    with pytest.raises(TypeError, match="unexpected or repeated"):
        stats.norm.pdf(1.0, mean=2.0)


# ----------------------------------------------------------------------------- linalg, signal
def test_sqrtm_gradient_of_trace_closed_form():
    # d tr(sqrt(A)) / dA = (1/2) sqrt(A)^-T
    a = onp.array([[4.0, 1.0], [1.0, 3.0]])
    expected = 0.5 * onp.linalg.inv(la.sqrtm(a)).T
    assert onp.allclose(grad(lambda a: np.sum(la.sqrtm(a) * onp.eye(2)))(a), expected)


def test_convolve_rejects_bad_mode_and_mismatched_axes():
    with pytest.raises(ValueError, match="mode"):
        signal.convolve(onp.ones(3), onp.ones(2), mode="circular")
    with pytest.raises(ValueError, match="axes"):
        signal.convolve(onp.ones((2, 3)), onp.ones(2))


# ----------------------------------------------------------------------------- odeint
def decay(y, t, k):
    return -k * y


def test_odeint_decay_matches_closed_form_and_its_derivatives():
    y0, k = onp.array([1.5, 0.5]), 0.7
    t = onp.linspace(0.0, 2.0, 5)
    exact = y0 * onp.exp(-k * t[:, None])
    assert onp.allclose(odeint(decay, y0, t, args=(k,), **TOL), exact, atol=1e-8)
    # y(t) = y0 exp(-k (t - t0)): dy/dk = -(t - t0) y, dy/dt_i = -k y_i, dy/dt0 = k y
    dk_rev = jacobian(lambda k: odeint(decay, y0, t, args=(k,), **TOL))(k)
    _, dk_fwd = make_jvp(lambda k: odeint(decay, y0, t, args=(k,), **TOL))(k)(1.0)
    for dk in (dk_rev, dk_fwd):
        assert onp.allclose(dk, -t[:, None] * exact, atol=1e-7)
    dy0 = jacobian(lambda y0: odeint(decay, y0, t, args=(k,), **TOL))(y0)
    assert onp.allclose(dy0, onp.exp(-k * t)[:, None, None] * onp.eye(2), atol=1e-7)
    dt = jacobian(lambda t: odeint(decay, y0, t, args=(k,), **TOL))(t)
    want = onp.zeros((5, 2, 5))
    want[1:, :, 1:] = onp.einsum("ij,ik->ijk", -k * exact[1:], onp.eye(4))
    want[1:, :, 0] = k * exact[1:]
    assert onp.allclose(dt, want, atol=1e-7)


def predator_prey(y, t, a, b):
    return np.array([a * y[0] - b[0] * y[0] * y[1],
                     -b[1] * y[1] + 0.3 * y[0] * y[1] * np.sin(t)])


def test_odeint_gradients_match_finite_differences_in_both_modes():
    y0, t = onp.array([1.0, 0.8]), onp.linspace(0.0, 1.5, 4)
    a, b = 1.1, onp.array([0.4, 0.9])
    check_grads(lambda y0, t, a, b: odeint(predator_prey, y0, t, args=(a, b), **TOL),
                argnum=(0, 1, 2, 3), order=1)(y0, t, a, b)


def test_odeint_scalar_state_and_tfirst():
    t = onp.linspace(0.0, 1.0, 3)
    check_grads(lambda y0, k: odeint(lambda t, y, k: -k * y * y, y0, t, args=(k,), tfirst=True,
                                     **TOL), argnum=(0, 1), order=1)(0.8, 1.3)


def test_odeint_unsupported_options_raise():
    t = onp.linspace(0.0, 1.0, 3)
    # (second derivatives: tests/test_autograd_compat_api.py)
    with pytest.raises(TypeError, match="full_output"):
        odeint(decay, onp.ones(1), t, args=(0.5,), full_output=True)


# ----------------------------------------------------------------------------- registry meta-test
def _primitives():
    return [*(getattr(sp, name) for name in sp.DIFFERENTIABLE), sp.logsumexp_b, sp.softmax,
            sp.log_softmax, la.solve_triangular, la.solve_general, la.solve_banded,
            la.solve_sylvester, la.sqrtm, la.expm, la.cholesky_symmetric, la.eigh_values,
            la.eigh_vectors, la.lu_packed, signal.convolve_canonical, integrate.odeint_args]


def test_every_scipy_primitive_has_a_vjp_and_a_jvp():
    from chainrule._core.rule_table import primitive_jvps, primitive_vjps
    missing = [p.__name__ for p in _primitives()
               if p not in primitive_vjps or p not in primitive_jvps]
    assert not missing


def test_every_special_function_has_spec_cases():
    from chainrule._specs import spec_scipy_special
    names = {case.name for case in spec_scipy_special.CASES}
    wanted = set(sp.DIFFERENTIABLE) | set(sp.NONDIFFERENTIABLE) | {"logsumexp", "softmax",
                                                                  "log_softmax"}
    assert not wanted - names
