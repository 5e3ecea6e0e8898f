"""Worked examples: chainrule gradients driving scipy.optimize on statistical models."""

from __future__ import annotations

import numpy as onp
import pytest

pytest.importorskip("scipy")

import scipy.optimize  # noqa: E402
import scipy.stats  # noqa: E402

import chainrule.numpy as np  # noqa: E402
from chainrule import grad  # noqa: E402
from chainrule.scipy import stats  # noqa: E402
from chainrule.scipy.integrate import odeint  # noqa: E402


def test_gamma_maximum_likelihood_recovers_known_parameters():
    true_shape, true_scale = 2.5, 1.5
    data = onp.random.default_rng(42).gamma(true_shape, true_scale, size=2000)

    def nll(log_params):  # log-parameters keep shape and scale positive
        shape, scale = np.exp(log_params[0]), np.exp(log_params[1])
        return -np.sum(stats.gamma.logpdf(data, shape, scale=scale)) / len(data)

    result = scipy.optimize.minimize(nll, onp.zeros(2), jac=grad(nll), method="BFGS")
    assert result.success
    shape, scale = onp.exp(result.x)
    ref_shape, _, ref_scale = scipy.stats.gamma.fit(data, floc=0)  # SciPy's own MLE
    assert shape == pytest.approx(ref_shape, rel=1e-3)
    assert scale == pytest.approx(ref_scale, rel=1e-3)
    assert shape == pytest.approx(true_shape, rel=0.1)
    assert scale == pytest.approx(true_scale, rel=0.1)
    # the gradient is the analytic one: zero at SciPy's optimum, and matches differences there
    g = grad(nll)(onp.log([ref_shape, ref_scale]))
    assert onp.max(onp.abs(g)) < 1e-4
    assert result.nit < 30


def logistic_growth(y, t, rate):
    return rate * y * (1.0 - y)


def test_fit_logistic_ode_rate_with_odeint_gradients():
    true_rate, y0 = 1.3, onp.array([0.05])
    t = onp.linspace(0.0, 6.0, 16)
    rng = onp.random.default_rng(7)
    clean = odeint(logistic_growth, y0, t, args=(true_rate,))
    observed = clean + 0.01 * rng.standard_normal(clean.shape)

    def loss(rate):
        pred = odeint(logistic_growth, y0, t, args=(rate[0],), rtol=1e-8, atol=1e-8)
        return np.sum((pred - observed) ** 2)

    # the adjoint gradient agrees with a central difference
    r, h = onp.array([0.9]), 1e-5
    fd = (loss(r + h) - loss(r - h)) / (2 * h)
    assert grad(loss)(r)[0] == pytest.approx(fd, rel=1e-4)

    result = scipy.optimize.minimize(loss, onp.array([0.5]), jac=grad(loss), method="BFGS")
    assert result.success
    assert result.x[0] == pytest.approx(true_rate, abs=0.03)
    # the closed-form solution y(t) = 1 / (1 + (1/y0 - 1) exp(-r t)) with the fitted rate
    fitted = 1 / (1 + (1 / y0[0] - 1) * onp.exp(-result.x[0] * t))
    assert onp.max(onp.abs(fitted - observed[:, 0])) < 0.05
