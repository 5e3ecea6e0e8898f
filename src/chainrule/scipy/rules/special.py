"""Rules for scipy.special: one block per function, its columns side by side.

``elementwise(f, df)``: unary f with local derivative df(ans, x) (VJP, JVP, batched JVP,
sparsity); ``elementwise_n(f, d0, d1, ...)``: broadcasting f with partials
d_i(ans, *args), ``None`` for a discrete argument (no gradient), ``NoClosedForm`` where
the derivative exists but has no closed form (differentiating raises). SciPy's ufuncs
need no batching rule (every ufunc batches elementwise); the functions with a
closed-form Taylor recurrence (``chainrule.numpy.taylor_patterns``) say so on the line
after their own; the others nest their JVP.
"""

from __future__ import annotations

from math import factorial

import numpy as _np

from ..._core.rules import defbatch, defjvp_batched, defjvp_direct, defsparsity, defvjp_direct
from ..._core.tracer import getval
from ..._sparsity.patterns import along_axes_pattern, reduced_pattern, shapes_only
from ...numpy import numpy_wrapper as anp
from ...numpy.batched import elementwise as elementwise_batch
from ...numpy.batching_patterns import along_axis
from ...numpy.rules._helpers import (
    NoClosedForm,
    batch_shifted_axis,
    broadcast_tangent,
    elementwise,
    elementwise_n,
    keepdims_shape,
    shape_of,
    unbroadcast,
)
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

_SQRT_PI = _np.sqrt(_np.pi)
_SQRT_2PI = _np.sqrt(2 * _np.pi)
_ORDER = NoClosedForm("the derivative with respect to the order of a Bessel function has no "
                      "closed form.")
_SHAPE = NoClosedForm("the derivative of the incomplete gamma/beta function with respect to "
                      "its shape parameters has no closed form.")
_DF = NoClosedForm("the derivative of Student's t distribution function with respect to df "
                   "has no closed form.")


def _multidigamma(a, d):
    """d/da multigammaln(a, d) = sum_j digamma(a - j/2), j = 0..d-1."""
    return anp.sum(sp.digamma(anp.expand_dims(a, -1) - _np.arange(d) / 2.0), axis=-1)


def _t_pdf(df, t):
    log_pdf = (sp.gammaln((df + 1) / 2) - sp.gammaln(df / 2) - 0.5 * anp.log(df * _np.pi)
               - (df + 1) / 2 * sp.log1p(t * t / df))
    return anp.exp(log_pdf)


# Taylor recurrences: each writes the derivative's series from the argument's
def _gaussian(x: list, order: int, width: float, factor: float) -> list:
    """factor * exp(-x(t)^2 / width)."""
    u = scaled(square_series(x, order), -1.0 / width)
    return scaled(exp_series(u, anp.exp(u[0]), order), factor)


def _logit_derivative(x: list, order: int) -> list:
    """1 / (x - x^2)."""
    x_minus_square = [a - b for a, b in zip(x, square_series(x, order))]
    return reciprocal_series(x_minus_square, 1.0 / x_minus_square[0], order)


def _expit_series(x: list, ans, order: int) -> list:
    """expit: y' = (y - y^2) x', the factor's coefficients following y's."""
    y, z = [ans], [ans - ans * ans]
    for j in range(1, order + 1):
        y.append(weighted(x, z, j) / j)
        square_j = y[0] * y[j]
        for i in range(1, j + 1):
            square_j = square_j + y[i] * y[j - i]
        z.append(y[j] - square_j)
    return y


def _polygamma_series(m: int, x: list, ans, order: int) -> list:
    """polygamma(m, x(t)) (gammaln for m = -1): its derivatives are polygammas."""
    coefficients = [ans] + [sp.polygamma(m + n, x[0]) / factorial(n)
                            for n in range(1, order + 1)]
    return composed_series(x, coefficients, order)


# fmt: off
# ----------------------------------------------------------------------------- gamma and beta
elementwise(sp.gamma,           lambda ans, x: ans * sp.digamma(x))
elementwise(sp.gammaln,         lambda ans, x: sp.digamma(x))
unary(sp.gammaln,               lambda x, ans, k: _polygamma_series(-1, x, ans, k))
elementwise(sp.rgamma,          lambda ans, x: -ans * sp.digamma(x))
elementwise(sp.digamma,         lambda ans, x: sp.polygamma(1, x))
unary(sp.digamma,               lambda x, ans, k: _polygamma_series(0, x, ans, k))
elementwise_n(sp.polygamma,     None, lambda ans, n, x: sp.polygamma(n + 1, x))
defbatch(sp.polygamma,          elementwise_batch(sp.polygamma))  # (n: the same for all)
elementwise_n(sp.multigammaln,  lambda ans, a, d: _multidigamma(a, d), None)
defbatch(sp.multigammaln,       elementwise_batch(sp.multigammaln))  # (d: the same for all)
elementwise_n(sp.beta,          lambda ans, a, b: ans * (sp.digamma(a) - sp.digamma(a + b)),
                                lambda ans, a, b: ans * (sp.digamma(b) - sp.digamma(a + b)))
elementwise_n(sp.betaln,        lambda ans, a, b: sp.digamma(a) - sp.digamma(a + b),
                                lambda ans, a, b: sp.digamma(b) - sp.digamma(a + b))
elementwise_n(sp.betainc,       _SHAPE, _SHAPE,
              lambda ans, a, b, x: anp.exp(sp.xlogy(a - 1, x) + sp.xlog1py(b - 1, -x) - sp.betaln(a, b)))
elementwise_n(sp.gammainc,      _SHAPE, lambda ans, a, x: anp.exp(sp.xlogy(a - 1, x) - x - sp.gammaln(a)))
elementwise_n(sp.gammaincc,     _SHAPE, lambda ans, a, x: -anp.exp(sp.xlogy(a - 1, x) - x - sp.gammaln(a)))

# ----------------------------------------------------------------------------- error function, normal
elementwise(sp.erf,             lambda ans, x: 2 / _SQRT_PI * anp.exp(-x * x))
through_derivative(sp.erf,      lambda x, k: _gaussian(x, k, 1.0, 2 / _SQRT_PI))
elementwise(sp.erfc,            lambda ans, x: -2 / _SQRT_PI * anp.exp(-x * x))
through_derivative(sp.erfc,     lambda x, k: _gaussian(x, k, 1.0, -2 / _SQRT_PI))
elementwise(sp.erfinv,          lambda ans, x: _SQRT_PI / 2 * anp.exp(ans * ans))
elementwise(sp.erfcinv,         lambda ans, x: -_SQRT_PI / 2 * anp.exp(ans * ans))
elementwise(sp.ndtr,            lambda ans, x: anp.exp(-0.5 * x * x) / _SQRT_2PI)
through_derivative(sp.ndtr,     lambda x, k: _gaussian(x, k, 2.0, 1 / _SQRT_2PI))
elementwise(sp.log_ndtr,        lambda ans, x: anp.exp(-0.5 * x * x - ans) / _SQRT_2PI)
elementwise(sp.ndtri,           lambda ans, x: _SQRT_2PI * anp.exp(0.5 * ans * ans))
elementwise_n(sp.stdtr,         _DF, lambda ans, df, t: _t_pdf(df, t))

# ----------------------------------------------------------------------------- logistic, logs
elementwise(sp.expit,           lambda ans, x: ans * (1 - ans))
unary(sp.expit,                 _expit_series)
elementwise(sp.logit,           lambda ans, x: 1 / (x * (1 - x)))
through_derivative(sp.logit,    _logit_derivative)
elementwise(sp.log_expit,       lambda ans, x: sp.expit(-x))
elementwise(sp.log1p,           lambda ans, x: 1 / (1 + x))
through_derivative(sp.log1p,    lambda x, k: reciprocal_series(shifted(x, 1.0), 1.0 / (1.0 + x[0]), k))
elementwise(sp.expm1,           lambda ans, x: ans + 1)
unary(sp.expm1,                 lambda x, ans, k: shifted(exp_series(x, ans + 1.0, k), -1.0))
elementwise_n(sp.xlogy,         lambda ans, x, y: anp.log(y),          lambda ans, x, y: x / y)
elementwise_n(sp.xlog1py,       lambda ans, x, y: sp.log1p(y),         lambda ans, x, y: x / (1 + y))
elementwise(sp.entr,            lambda ans, x: -anp.log(x) - 1)
elementwise_n(sp.rel_entr,      lambda ans, x, y: anp.log(x / y) + 1,  lambda ans, x, y: -x / y)
elementwise_n(sp.kl_div,        lambda ans, x, y: anp.log(x / y),      lambda ans, x, y: 1 - x / y)

# ----------------------------------------------------------------------------- Bessel functions
elementwise(sp.i0,              lambda ans, x: sp.i1(x))
elementwise(sp.i1,              lambda ans, x: (sp.i0(x) + sp.iv(2, x)) / 2)
elementwise_n(sp.iv,            _ORDER, lambda ans, v, x: (sp.iv(v - 1, x) + sp.iv(v + 1, x)) / 2)
elementwise_n(sp.ive,           _ORDER, lambda ans, v, x: (sp.ive(v - 1, x) + sp.ive(v + 1, x)) / 2 - anp.sign(x) * ans)
elementwise(sp.j0,              lambda ans, x: -sp.j1(x))
elementwise(sp.j1,              lambda ans, x: (sp.j0(x) - sp.jv(2, x)) / 2)
elementwise_n(sp.jv,            _ORDER, lambda ans, v, x: (sp.jv(v - 1, x) - sp.jv(v + 1, x)) / 2)
elementwise(sp.y0,              lambda ans, x: -sp.y1(x))
elementwise(sp.y1,              lambda ans, x: (sp.y0(x) - sp.yn(2, x)) / 2)
elementwise_n(sp.yn,            None, lambda ans, n, x: (sp.yn(n - 1, x) - sp.yn(n + 1, x)) / 2)
# fmt: on


# ----------------------------------------------------------------------------- reductions
def _lse_weights(ans, a, b, axis, keepdims):
    """exp(a - ans) * sign, the weights of d logsumexp, in the broadcast shape of a and b."""
    full = _np.broadcast_shapes(shape_of(a), shape_of(b)) if b is not None else shape_of(a)
    kept = keepdims_shape(full, axis)
    w = anp.exp(a - anp.reshape(ans, kept))
    if b is None:
        return w, full, kept
    sign = _np.reshape(sp._logsumexp_sign(a, b, axis=axis, keepdims=keepdims), kept)
    return w * sign, full, kept


# d log|S| = sign(S) b exp(a) / |S|: the same rule for SciPy's nan (a negative S without
# return_sign, where ans is nan and so is the derivative) and for the log-magnitude
def _lse_vjp(g, ans, a, b, axis=None, keepdims=False, return_sign=False, which=0):
    w, full, kept = _lse_weights(ans, a, b, axis, keepdims)
    gw = anp.reshape(g, kept) * w
    if which == 0:
        return unbroadcast(gw if b is None else gw * b, a)
    return unbroadcast(gw, b)


def _lse_jvp(t, ans, a, b, axis=None, keepdims=False, return_sign=False, which=0):
    w, _, _ = _lse_weights(ans, a, b, axis, keepdims)
    tw = t * w if which == 1 or b is None else t * b * w
    return broadcast_tangent(anp.sum(tw, axis=axis, keepdims=keepdims), ans)


def _sum_kept(x, axis):
    return anp.sum(x, axis=axis, keepdims=True)


# Sparsity (chainrule._sparsity.patterns): softmaxes read whole lines along their axes;
# logsumexp reduces them.
def _axes(args, kwargs, position: int, ndim: int):
    axis = args[position] if len(args) > position else kwargs.get("axis")
    return range(ndim) if axis is None else (axis,) if _np.ndim(axis) == 0 else tuple(axis)


def _softmax_pattern(argnum, ans, args, kwargs):
    x = getval(args[0])
    return along_axes_pattern(_np.shape(x), _np.shape(ans), _axes(args, kwargs, 1, _np.ndim(x)))


def _logsumexp_pattern(argnum, ans, args, kwargs):
    a, own = getval(args[0]), getval(args[argnum])
    if _np.shape(own) != _np.shape(a):
        return None  # b broadcast against a
    return reduced_pattern(_np.shape(a), _np.shape(ans), _axes(args, kwargs, 2, _np.ndim(a)))



# fmt: off
defvjp_direct(sp.logsumexp_b, lambda g, ans, a, b, **k: _lse_vjp(g, ans, a, b, which=0, **k),
                              lambda g, ans, a, b, **k: _lse_vjp(g, ans, a, b, which=1, **k))
defjvp_direct(sp.logsumexp_b,        lambda t, ans, a, b, **k: _lse_jvp(t, ans, a, b, which=0, **k),
                              lambda t, ans, a, b, **k: _lse_jvp(t, ans, a, b, which=1, **k))
defsparsity(sp.logsumexp_b,   shapes_only(_logsumexp_pattern, lambda n: (0, 1)))
defbatch(sp.logsumexp_b,      along_axis(sp.logsumexp_b, "all"))
defvjp_direct(sp.softmax,     lambda g, ans, x, axis=None: ans * (g - _sum_kept(g * ans, axis)))
defjvp_direct(sp.softmax,            lambda t, ans, x, axis=None: ans * (t - _sum_kept(t * ans, axis)))
defjvp_batched(sp.softmax,    lambda t, ans, x, axis=None: ans * (t - _sum_kept(t * ans, batch_shifted_axis(axis, anp.ndim(x)))))
defsparsity(sp.softmax,       _softmax_pattern)
defbatch(sp.softmax,          along_axis(sp.softmax, "all"))
defvjp_direct(sp.log_softmax, lambda g, ans, x, axis=None: g - anp.exp(ans) * _sum_kept(g, axis))
defjvp_direct(sp.log_softmax,        lambda t, ans, x, axis=None: t - _sum_kept(anp.exp(ans) * t, axis))
defjvp_batched(sp.log_softmax, lambda t, ans, x, axis=None: t - _sum_kept(anp.exp(ans) * t, batch_shifted_axis(axis, anp.ndim(x))))
defsparsity(sp.log_softmax,   _softmax_pattern)
defbatch(sp.log_softmax,      along_axis(sp.log_softmax, "all"))
# fmt: on
