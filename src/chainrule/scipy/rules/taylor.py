"""Taylor rules (``deftaylor``) of SciPy's special functions that have a closed-form
recurrence (the series algebra is ``chainrule.numpy.taylor_patterns``'); the others nest their
JVP."""

from __future__ import annotations

from math import factorial

from ...numpy import numpy_wrapper as anp
from ...numpy.taylor_patterns import (
    composed_series,
    exp_series,
    reciprocal_series,
    scaled,
    shifted,
    square_series,
    through_derivative,
    unary,
    weighted,
)
from .. import special as sp
from .special import _SQRT_2PI, _SQRT_PI


def _gaussian(x: list, order: int, width: float, factor: float) -> list:
    """factor * exp(-x(t)^2 / width)."""
    u = scaled(square_series(x, order), -1.0 / width)
    return scaled(exp_series(u, anp.exp(u[0]), order), factor)


through_derivative(sp.erf, lambda x, k: _gaussian(x, k, 1.0, 2 / _SQRT_PI))
through_derivative(sp.erfc, lambda x, k: _gaussian(x, k, 1.0, -2 / _SQRT_PI))
through_derivative(sp.ndtr, lambda x, k: _gaussian(x, k, 2.0, 1 / _SQRT_2PI))


def _polygamma_series(m: int, x: list, ans, order: int) -> list:
    """polygamma(m, x(t)) (gammaln for m = -1): its derivatives are polygammas."""
    coefficients = [ans] + [sp.polygamma(m + n, x[0]) / factorial(n)
                            for n in range(1, order + 1)]
    return composed_series(x, coefficients, order)


unary(sp.gammaln, lambda x, ans, k: _polygamma_series(-1, x, ans, k))
unary(sp.digamma, lambda x, ans, k: _polygamma_series(0, x, ans, k))


def _logit_derivative(x: list, order: int) -> list:
    """1 / (x - x^2)."""
    x_minus_square = [a - b for a, b in zip(x, square_series(x, order))]
    return reciprocal_series(x_minus_square, 1.0 / x_minus_square[0], order)


through_derivative(sp.logit, _logit_derivative)


def _expit(x: list, ans, order: int) -> list:
    """expit: y' = (y - y^2) x', the factor's coefficients following y's."""
    y, z = [ans], [ans - ans * ans]
    for j in range(1, order + 1):
        y.append(weighted(x, z, j) / j)
        square_j = y[0] * y[j]
        for i in range(1, j + 1):
            square_j = square_j + y[i] * y[j - i]
        z.append(y[j] - square_j)
    return y


unary(sp.expit, _expit)
unary(sp.expm1, lambda x, ans, k: shifted(exp_series(x, ans + 1.0, k), -1.0))
through_derivative(sp.log1p, lambda x, k: reciprocal_series(shifted(x, 1.0), 1.0 / (1.0 + x[0]), k))
