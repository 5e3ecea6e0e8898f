"""Taylor rules (``deftaylor``) of the NumPy primitives, grouped by kind.

A rule maps the normalized Taylor coefficients x_1..x_k of its traced arguments (x_0 is
the value) to the answer's, in O(k^2) operations (see ``chainrule._core.taylor``).

- linear: the answer's coefficient j is the JVP of the arguments' coefficients j. The
  primitives declared linear where their rules are (``_helpers.linear``, ``def_linear``)
  get theirs there; this file adds the other linear ones.
- recurrences: for y = f(x) with y' = g(x) x', y_j = (1/j) sum_{i=1..j} i x_i g_{j-i},
  where g's series comes from a product, quotient, power or exponential recurrence. Each
  needs only coefficients below j, so the whole series is O(k^2).

Every other primitive with a JVP nests its JVP (``nested_jvp_series``): exact, O(2^k).
Rules here apply to plain positional calls; a call with keywords (``out=``, ``where=``,
``dtype=``) takes the nested JVP, which handles everything the JVP does.
"""

from __future__ import annotations

import math
import numbers

import numpy as _np

from ..._core.containers import sequence_take, sequence_untake
from ..._core.rules import deftaylor, deftaylor_linear
from ..._core.taylor import make_linear_taylor, make_multilinear_taylor, nested_jvp_series
from ..._core.tracer import getval
from .. import fft as afft
from .. import numpy_wrapper as anp

# ----------------------------------------------------------------------------- series algebra
# A series here is a list [s_0, s_1, ..., s_k] of values (arrays, or boxes of outer traces).


def _cauchy(a: list, b: list, j: int):
    """Coefficient j of the product a * b."""
    total = a[0] * b[j]
    for i in range(1, j + 1):
        total = total + a[i] * b[j - i]
    return total


def weighted(x: list, g: list, j: int):
    """sum_{i=1..j} i x_i g_{j-i}: j times coefficient j of y, where y' = g x'."""
    total = x[1] * g[j - 1]
    for i in range(2, j + 1):
        total = total + i * x[i] * g[j - i]
    return total


def integrate(x: list, g: list, y0, order: int) -> list:
    """The series of y with y' = g(t) x'(t) and y(0) = y0 (g known to order - 1)."""
    y = [y0]
    for j in range(1, order + 1):
        y.append(weighted(x, g, j) / j)
    return y


def exp_series(x: list, y0, order: int) -> list:
    """exp(x(t)), given y0 = exp(x_0): y' = y x'."""
    y = [y0]
    for j in range(1, order + 1):
        y.append(weighted(x, y, j) / j)
    return y


def reciprocal_series(b: list, q0, order: int) -> list:
    """1 / b(t), given q0 = 1 / b_0: from b q = 1."""
    q = [q0]
    for j in range(1, order + 1):
        q.append(-_cauchy(b, q[:j] + [0.0], j) * q0)
    return q


def _quotient(a: list, b: list, q0, order: int) -> list:
    """a(t) / b(t), given q0 = a_0 / b_0: from b q = a."""
    q = [q0]
    for j in range(1, order + 1):
        q.append((a[j] - _cauchy(b, q[:j] + [0.0], j)) / b[0])
    return q


def power_series(x: list, y0, p, order: int) -> list:
    """x(t) ** p for a constant p where x_0 != 0, given y0 = x_0 ** p: from x y' = p x' y,
    y_j = sum_{i=1..j} ((p + 1) i - j) x_i y_{j-i} / (j x_0)."""
    y = [y0]
    for j in range(1, order + 1):
        total = ((p + 1) - j) * x[1] * y[j - 1]
        for i in range(2, j + 1):
            total = total + ((p + 1) * i - j) * x[i] * y[j - i]
        y.append(total / (j * x[0]))
    return y


def _integerpower_series(x: list, n: int, order: int) -> list:
    """x(t) ** n for an integer n >= 0 by squaring (Cauchy products, exact at x_0 = 0)."""
    result = [1.0] + [0.0] * order
    base = x
    while n:
        if n & 1:
            result = [_cauchy(result, base, j) for j in range(order + 1)]
        n >>= 1
        if n:
            base = [_cauchy(base, base, j) for j in range(order + 1)]
    return result


def _sin_cos(x: list, s0, c0, order: int, sign: float) -> tuple[list, list]:
    """sin and cos (sign -1) or sinh and cosh (sign +1) of x(t) together:
    s' = c x', c' = sign s x'."""
    s, c = [s0], [c0]
    for j in range(1, order + 1):
        s.append(weighted(x, c, j) / j)
        c.append(sign * weighted(x, s, j) / j)
    return s, c


def square_series(x: list, order: int) -> list:
    return [_cauchy(x, x, j) for j in range(order + 1)]


def shifted(x: list, constant) -> list:
    """constant + x(t)."""
    return [constant + x[0], *x[1:]]


def scaled(x: list, factor) -> list:
    return [factor * c for c in x]


# ----------------------------------------------------------------------------- registration


def unary(fun, series_of) -> None:
    """``fun``'s Taylor rule from ``series_of(x, ans, order) -> [y_0, ..., y_k]``."""

    def rule(series_in, argnums, ans, args, kwargs, order):
        if kwargs or len(args) != 1:
            return nested_jvp_series(fun, args, kwargs, argnums, series_in, order)
        return tuple(series_of([args[0], *series_in[0]], ans, order)[1:])

    rule.kind = "recurrence"
    deftaylor(fun, rule)


def through_derivative(fun, derivative_series) -> None:
    """``fun`` with f'(x) = g(x): ``derivative_series(x, order)`` gives g's series."""
    unary(fun, lambda x, ans, order: integrate(x, derivative_series(x, order - 1), ans, order))


def _padded(x: list, order: int) -> list:
    return x + [0.0] * (order + 1 - len(x))


# exp and log
unary(anp.exp, lambda x, ans, k: exp_series(x, ans, k))
unary(anp.exp2, lambda x, ans, k: exp_series(scaled(x, math.log(2.0)), ans, k))
unary(anp.expm1, lambda x, ans, k: shifted(exp_series(x, ans + 1.0, k), -1.0))
through_derivative(anp.log, lambda x, k: reciprocal_series(x, 1.0 / x[0], k))
through_derivative(anp.log2, lambda x, k: scaled(reciprocal_series(x, 1.0 / x[0], k), 1 / math.log(2.0)))
through_derivative(anp.log10,
                    lambda x, k: scaled(reciprocal_series(x, 1.0 / x[0], k), 1 / math.log(10.0)))
through_derivative(anp.log1p, lambda x, k: reciprocal_series(shifted(x, 1.0), 1.0 / (1.0 + x[0]), k))

# trigonometric and hyperbolic
unary(anp.sin, lambda x, ans, k: _sin_cos(x, ans, anp.cos(x[0]), k, -1.0)[0])
unary(anp.cos, lambda x, ans, k: _sin_cos(x, anp.sin(x[0]), ans, k, -1.0)[1])
unary(anp.sinh, lambda x, ans, k: _sin_cos(x, ans, anp.cosh(x[0]), k, 1.0)[0])
unary(anp.cosh, lambda x, ans, k: _sin_cos(x, anp.sinh(x[0]), ans, k, 1.0)[1])
unary(anp.tan, lambda x, ans, k: _quotient(*_sin_cos(x, anp.sin(x[0]), anp.cos(x[0]), k, -1.0),
                                            ans, k))


def _tanh(x: list, ans, order: int) -> list:
    """tanh: y' = (1 - y^2) x', the factor's coefficients following y's."""
    y, z = [ans], [1.0 - ans * ans]
    for j in range(1, order + 1):
        y.append(weighted(x, z, j) / j)
        z.append(-_cauchy(y, y, j))
    return y


unary(anp.tanh, _tanh)
through_derivative(anp.arctan, lambda x, k: reciprocal_series(shifted(square_series(x, k), 1.0),
                                                         1.0 / (1.0 + x[0] * x[0]), k))
through_derivative(anp.arctanh, lambda x, k: reciprocal_series(shifted(scaled(square_series(x, k), -1.0), 1.0),
                                                          1.0 / (1.0 - x[0] * x[0]), k))


def _inverse_sqrt(u: list, order: int) -> list:
    """u(t) ** -1/2."""
    return power_series(u, u[0] ** -0.5, -0.5, order)


through_derivative(anp.arcsin, lambda x, k: _inverse_sqrt(shifted(scaled(square_series(x, k), -1.0), 1.0), k))
through_derivative(anp.arccos, lambda x, k: scaled(
    _inverse_sqrt(shifted(scaled(square_series(x, k), -1.0), 1.0), k), -1.0))
through_derivative(anp.arcsinh, lambda x, k: _inverse_sqrt(shifted(square_series(x, k), 1.0), k))


# powers
def _sqrt(x: list, ans, order: int) -> list:
    """sqrt: from y^2 = x, y_j = (x_j - sum_{i=1..j-1} y_i y_{j-i}) / (2 y_0)."""
    y = [ans]
    for j in range(1, order + 1):
        total = x[j]
        for i in range(1, j):
            total = total - y[i] * y[j - i]
        y.append(total / (2 * ans))
    return y


unary(anp.sqrt, _sqrt)
unary(anp.square, lambda x, ans, k: square_series(x, k))
unary(anp.reciprocal, lambda x, ans, k: reciprocal_series(x, ans, k))
unary(anp.cbrt, lambda x, ans, k: power_series(x, ans, 1.0 / 3.0, k))


def _is_scalar(p) -> bool:
    return isinstance(p, numbers.Number) or (isinstance(p, _np.ndarray | _np.generic)
                                             and _np.ndim(p) == 0)


def _power_rule(series_in, argnums, ans, args, kwargs, order):
    """x ** p for a constant scalar p: squaring for whole p (exact where x is 0), else the
    power recurrence where no x_0 is 0; anything else nests the JVP."""
    if not kwargs and argnums == (0,) and len(args) == 2 and _is_scalar(args[1]):
        p = args[1]
        x = [args[0], *series_in[0]]
        whole = math.isfinite(float(getval(p))) and float(getval(p)).is_integer()
        if whole and abs(int(getval(p))) <= 64:
            n = int(getval(p))
            y = _integerpower_series(x, abs(n), order)
            if n < 0:
                y = reciprocal_series(y, ans, order)
            return tuple(_broadcast_like(c, ans) for c in y[1:])
        if _np.all(getval(args[0]) != 0):
            return tuple(power_series(x, ans, p, order)[1:])
    return nested_jvp_series(anp.power, args, kwargs, argnums, series_in, order)


def _broadcast_like(c, ans):
    """A coefficient computed from constants only (0.0) made the answer's shape and dtype."""
    if isinstance(c, float):
        return anp.zeros_like(getval(ans)) + c
    return c


_power_rule.kind = "recurrence"
deftaylor(anp.power, _power_rule)


def _divide_rule(series_in, argnums, ans, args, kwargs, order):
    """a / b: q_j = (a_j - sum_{i=1..j} b_i q_{j-i}) / b_0 (b constant: a's coefficients / b)."""
    if kwargs or len(args) != 2:
        return nested_jvp_series(anp.divide, args, kwargs, argnums, series_in, order)
    a, b = args
    zeros = [0.0] * order
    a_series = [a, *series_in[argnums.index(0)]] if 0 in argnums else [a, *zeros]
    if 1 not in argnums:
        return tuple(c / b for c in a_series[1:])
    b_series = [b, *series_in[argnums.index(1)]]
    return tuple(_broadcast_like(c, ans) for c in _quotient(a_series, b_series, ans, order)[1:])


_divide_rule.kind = "recurrence"
deftaylor(anp.divide, _divide_rule)

# products: Cauchy
deftaylor(anp.multiply, make_multilinear_taylor(anp.multiply))

# ----------------------------------------------------------------------------- linear
# Linear, or piecewise linear where the piece is chosen by the value alone (abs, maximum,
# sort, clip, where ...): the JVP at the value maps every coefficient.
_PIECEWISE_LINEAR = (
    "fabs", "amax", "amin", "max", "min", "maximum", "minimum", "fmax", "fmin",
    "clip", "sort", "median", "partition", "percentile", "quantile", "ptp", "nanmax", "nanmin",
    "nansum", "nanmean", "nancumsum", "nanmedian", "nanpercentile", "nanquantile", "append",
    "atleast_1d", "atleast_2d", "atleast_3d", "compress", "delete", "diag", "diagflat",
    "diagonal", "diff", "ediff1d", "extract", "flip", "fliplr", "flipud", "insert", "pad",
    "repeat", "roll", "rollaxis", "rot90", "take", "take_along_axis", "tile", "tril", "triu",
    "where", "deg2rad", "rad2deg", "degrees", "radians", "real_if_close", "full", "full_like",
    "linspace", "nan_to_num", "copysign", "fmod", "remainder",
)
for _name in _PIECEWISE_LINEAR:
    deftaylor_linear(getattr(anp, _name))


def _absolute_rule(series_in, argnums, ans, args, kwargs, order):
    """|x|: piecewise linear for real x away from 0. The modulus of a complex x is not, and
    at x = 0 the JVP's own derivative (x / |x|, read as x / 1 there) has a second order
    that nested forward mode, grad of grad and hessian all see; both take the nested JVP."""
    value = getval(args[0])
    if _np.iscomplexobj(value) or not _np.all(value):
        return nested_jvp_series(anp.absolute, args, kwargs, argnums, series_in, order)
    return _absolute_linear(series_in, argnums, ans, args, kwargs, order)


_absolute_linear = make_linear_taylor(anp.absolute)
_absolute_rule.kind = "linear"
deftaylor(anp.absolute, _absolute_rule)
deftaylor_linear(sequence_take)
deftaylor_linear(sequence_untake)
for _name in ("convolve", "correlate", "trapezoid"):
    deftaylor(getattr(anp, _name), make_multilinear_taylor(getattr(anp, _name)))
for _fun in (anp.add, anp.subtract, anp.negative, anp.positive, anp.sum, anp.mean,
             anp.concatenate_args, anp.stack_args,
             afft.fft, afft.ifft, afft.fft2, afft.ifft2, afft.fftn, afft.ifftn, afft.rfft,
             afft.irfft, afft.hfft, afft.ihfft, afft.rfft2, afft.irfft2, afft.rfftn,
             afft.irfftn, afft.fftshift, afft.ifftshift):
    deftaylor_linear(_fun)
