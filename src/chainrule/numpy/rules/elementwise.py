"""Rules for elementwise functions: one line each, VJP and JVP together.

``elementwise(f, df)`` gives a unary function's local derivative df(ans, x);
``elementwise_n(f, dfdx, dfdy)`` gives a broadcasting binary function's partials.
Complex arguments follow autograd's convention: the VJP of a holomorphic f is
``g * f'(z)``; a real function of z with ``df = Re(D dz)`` has VJP ``g * D``.

Ties. Where a function is not differentiable because two candidates are equal
(maximum, minimum, fmax, fmin, clip at a bound), the gradient is shared equally
between the tied candidates: ``maximum(x, x)`` gives 0.5 to each argument.
"""

from __future__ import annotations

import numpy as _np

from ..._core.rule_table import rule_table
from ..._core.rules import defjvp_batched, defjvp_direct, deflabel, defsparsity, defvjp_direct
from ..._core.tracer import derivative_free, getval
from ..._sparsity.patterns import elementwise_pattern, no_dependency, shapes_only
from .. import numpy_wrapper as anp
from ._helpers import (
    batch_aligned,
    broadcast_batched_tangent,
    broadcast_tangent,
    dtype_of,
    elementwise,
    elementwise_n,
    linear,
    match_dtype,
    unbroadcast,
    zero_mask,
)

_LN2 = float(_np.log(2.0))
_LN10 = float(_np.log(10.0))
_DEG = float(_np.pi / 180.0)


def _share(x, ans, other):
    """1 where ``x`` gave ``ans`` alone, 0.5 where ``other`` gave it too, else 0 (constant)."""
    x, ans, other = derivative_free(x), derivative_free(ans), derivative_free(other)
    return _np.equal(x, ans) / (1.0 + _np.equal(other, ans))


def _lowered(y):
    """``y - 1`` where ``y`` is nonzero, else 1 (power's derivative exponent, finite at 0).

    A scalar exponent stays a scalar: a 0-d NumPy array would be refused by CuPy."""
    if type(y) in (int, float, complex) or isinstance(y, _np.generic):
        return y - 1 if y != 0 else 1.0
    return anp.where(y, y - 1, 1.0)


def _abs_derivative(ans, x):
    # conj(z) / |z| for complex z (autograd's convention), sign(x) for real x; 0 at 0
    return (anp.conj(x) if dtype_of(x).kind == "c" else x) / anp.where(ans, ans, 1)


def _sinc_derivative(ans, x):
    # d/dx sin(pi x)/(pi x) = (cos(pi x) - sinc(x)) / x; at x = 0 its Taylor term
    # -pi^2 x / 3 keeps the value (0) and the next two derivatives exact
    zero, any_zero = zero_mask(x)
    if not any_zero:
        return (anp.cos(_np.pi * x) - ans) / x
    safe_x = anp.where(zero, 1.0, x)
    return anp.where(zero, x * (-_np.pi ** 2 / 3), (anp.cos(_np.pi * x) - ans) / safe_x)


def _angle_derivative(x, deg):
    # angle(z) = Im(log z): d angle = Re(-1j dz / z); a real argument's angle is constant
    if dtype_of(x).kind != "c":
        return None
    return (-1j / _np.pi * 180.0 if deg else -1j) / x


def _angle_vjp(g, ans, z, deg=False):
    d = _angle_derivative(z, deg)
    return None if d is None else match_dtype(g * d, z)


def _angle_jvp(g, ans, z, deg=False):
    d = _angle_derivative(z, deg)
    return None if d is None else match_dtype(g * d, ans)


# clip(a, lo, hi) == minimum(maximum(a, lo), hi): each argument's share of the answer,
# with ties shared equally as for maximum and minimum.
def _clip_bounds(a_min, a_max, kwargs):
    lo = kwargs.get("min") if a_min is None or a_min is _np._NoValue else a_min
    hi = kwargs.get("max") if a_max is None or a_max is _np._NoValue else a_max
    lo = None if lo is _np._NoValue else lo
    hi = None if hi is _np._NoValue else hi
    return lo, hi


def _clip_share(which, ans, a, a_min=None, a_max=None, out=None, **kwargs):
    lo, hi = _clip_bounds(a_min, a_max, kwargs)
    a = derivative_free(a)
    t = a if lo is None else _np.maximum(a, derivative_free(lo))
    to_t = 1.0 if hi is None else _share(t, ans, hi)
    if which == "max":
        return _share(hi, ans, t)
    if which == "a":
        return to_t if lo is None else to_t * _share(a, t, lo)
    return to_t * _share(lo, t, a)


def _clip_vjp(argnum, which):
    def rule(g, ans, *args, **kwargs):
        return unbroadcast(g * _clip_share(which, ans, *args, **kwargs), args[argnum])
    return rule


def _clip_jvp(which):
    def rule(g, ans, *args, **kwargs):
        return broadcast_tangent(g * _clip_share(which, ans, *args, **kwargs), ans)
    return rule


def _finite_only(g, x):
    return anp.where(anp.isfinite(x), g, anp.zeros_like(g))


# fmt: off
def _divmod_partial(argnum, x, y):
    """The remainder's partial derivative (as np.remainder's); the quotient's is zero."""
    return 1.0 if argnum == 0 else -anp.floor(x / y)


def _divmod_tangent(t, ans):
    """divmod's tangent (quotient, remainder) from the remainder's."""
    return _np.zeros_like(getval(ans[0])), broadcast_tangent(t, ans[1])


# ----------------------------------------------------------------------------- arithmetic
defvjp_direct(anp.add,      lambda g, ans, x, y, *a, **k: unbroadcast(g, x),
                            lambda g, ans, x, y, *a, **k: unbroadcast(g, y),
              reads=())  # only the cotangent, unbroadcast to each operand's shape
defjvp_direct(anp.add,             lambda g, ans, x, y, *a, **k: broadcast_tangent(g, ans),
                            lambda g, ans, x, y, *a, **k: broadcast_tangent(g, ans))
defvjp_direct(anp.subtract, lambda g, ans, x, y, *a, **k: unbroadcast(g, x),
                            lambda g, ans, x, y, *a, **k: unbroadcast(-g, y), reads=())
defjvp_direct(anp.subtract,        lambda g, ans, x, y, *a, **k: broadcast_tangent(g, ans),
                            lambda g, ans, x, y, *a, **k: broadcast_tangent(-g, ans))
defjvp_batched(anp.add,      lambda g, ans, x, y, *a, **k: broadcast_batched_tangent(batch_aligned(g, x, ans), ans),
                            lambda g, ans, x, y, *a, **k: broadcast_batched_tangent(batch_aligned(g, y, ans), ans))
defjvp_batched(anp.subtract, lambda g, ans, x, y, *a, **k: broadcast_batched_tangent(batch_aligned(g, x, ans), ans),
                            lambda g, ans, x, y, *a, **k: broadcast_batched_tangent(batch_aligned(-g, y, ans), ans))
deflabel(anp.add,           "{0} + {1}")  # how explain writes a call
deflabel(anp.subtract,      "{0} - {1}")
elementwise_n(anp.multiply,  lambda ans, x, y: y,               lambda ans, x, y: x)
deflabel(anp.multiply,      "{0} * {1}")
elementwise_n(anp.divide,    lambda ans, x, y: anp.divide(1.0, y), lambda ans, x, y: -ans / y)  # true_divide; y may be a constant Python float, whose 1 / 0.0 raises
deflabel(anp.divide,        "{0} / {1}")
elementwise(anp.negative,   lambda ans, x: -1.0)
deflabel(anp.negative,      "-{0}")
elementwise(anp.positive,   lambda ans, x: 1.0)
elementwise(anp.reciprocal, lambda ans, x: -ans ** 2)
elementwise_n(anp.mod,       lambda ans, x, y: 1.0,             lambda ans, x, y: -anp.floor(x / y))  # remainder
elementwise_n(anp.fmod,      lambda ans, x, y: 1.0,             lambda ans, x, y: -anp.trunc(x / y))
defvjp_direct(anp.divmod,    lambda g, ans, x, y: unbroadcast(g[1] * _divmod_partial(0, x, y), x),
                            lambda g, ans, x, y: unbroadcast(g[1] * _divmod_partial(1, x, y), y))
defjvp_direct(anp.divmod,    lambda g, ans, x, y: _divmod_tangent(g * _divmod_partial(0, x, y), ans),
                            lambda g, ans, x, y: _divmod_tangent(g * _divmod_partial(1, x, y), ans))

# ----------------------------------------------------------------------------- powers, exp, log
elementwise_n(anp.power,     lambda ans, x, y: y * x ** _lowered(y),                                # pow
                            lambda ans, x, y: anp.log(anp.where(x, x, 1.0)) * ans)
elementwise_n(anp.float_power, lambda ans, x, y: y * anp.float_power(x, _lowered(y)),
                            lambda ans, x, y: anp.log(anp.where(x, x, 1.0)) * ans)
deflabel(anp.power,         "{0} ** {1}")
deflabel(anp.float_power,   "{0} ** {1}")
elementwise(anp.square,     lambda ans, x: 2 * x)
elementwise(anp.sqrt,       lambda ans, x: 0.5 / ans)
elementwise(anp.cbrt,       lambda ans, x: 1 / (3 * ans ** 2))
elementwise(anp.exp,        lambda ans, x: ans, reads=("ans",))
elementwise(anp.exp2,       lambda ans, x: ans * _LN2)
elementwise(anp.expm1,      lambda ans, x: ans + 1)
elementwise(anp.log,        lambda ans, x: 1 / x)
elementwise(anp.log2,       lambda ans, x: 1 / (x * _LN2))
elementwise(anp.log10,      lambda ans, x: 1 / (x * _LN10))
elementwise(anp.log1p,      lambda ans, x: 1 / (x + 1))
elementwise_n(anp.logaddexp, lambda ans, x, y: anp.exp(x - ans), lambda ans, x, y: anp.exp(y - ans))
elementwise_n(anp.logaddexp2, lambda ans, x, y: anp.exp2(x - ans), lambda ans, x, y: anp.exp2(y - ans))

# ----------------------------------------------------------------------------- trigonometric
elementwise(anp.sin,        lambda ans, x: anp.cos(x))
elementwise(anp.cos,        lambda ans, x: -anp.sin(x))
elementwise(anp.tan,        lambda ans, x: 1 + ans ** 2)
elementwise(anp.arcsin,     lambda ans, x: 1 / anp.sqrt(1 - x ** 2))                  # asin
elementwise(anp.arccos,     lambda ans, x: -1 / anp.sqrt(1 - x ** 2))                 # acos
elementwise(anp.arctan,     lambda ans, x: 1 / (1 + x ** 2))                          # atan
elementwise_n(anp.arctan2,   lambda ans, y, x: x / (x ** 2 + y ** 2),                  # atan2
                            lambda ans, y, x: -y / (x ** 2 + y ** 2))
elementwise_n(anp.hypot,     lambda ans, x, y: x / ans,         lambda ans, x, y: y / ans)
elementwise(anp.sinc,       _sinc_derivative)
elementwise(anp.deg2rad,    lambda ans, x: _DEG)
elementwise(anp.radians,    lambda ans, x: _DEG)
elementwise(anp.rad2deg,    lambda ans, x: 1 / _DEG)
elementwise(anp.degrees,    lambda ans, x: 1 / _DEG)

# ----------------------------------------------------------------------------- hyperbolic
elementwise(anp.sinh,       lambda ans, x: anp.cosh(x))
elementwise(anp.cosh,       lambda ans, x: anp.sinh(x))
elementwise(anp.tanh,       lambda ans, x: 1.0 - ans ** 2, reads=("ans",))  # (1.0: a float operand is cheaper)
elementwise(anp.arcsinh,    lambda ans, x: 1 / anp.sqrt(x ** 2 + 1))                  # asinh
elementwise(anp.arccosh,    lambda ans, x: 1 / (anp.sqrt(x - 1) * anp.sqrt(x + 1)))   # acosh
elementwise(anp.arctanh,    lambda ans, x: 1 / (1 - x ** 2))                          # atanh

# ----------------------------------------------------------------------------- complex parts
elementwise(anp.absolute,   _abs_derivative)                                          # abs
deflabel(anp.absolute,      "abs({0})")
elementwise(anp.fabs,       lambda ans, x: anp.sign(x))
linear(anp.conjugate,       lambda g, ans, x, *a, **k: anp.conj(g))                   # conj
linear(anp.real,            lambda g, ans, x: match_dtype(anp.real(g), x))
linear(anp.imag,            lambda g, ans, x: match_dtype(-1j * g, x))
defvjp_direct(anp.angle,    _angle_vjp)
defjvp_direct(anp.angle,           _angle_jvp)
defvjp_direct(anp.real_if_close, lambda g, ans, x, *a, **k: match_dtype(g, x))
defjvp_direct(anp.real_if_close,   lambda g, ans, x, *a, **k: match_dtype(g, ans))
elementwise_n(anp.copysign,  lambda ans, x, y: anp.sign(x) * anp.sign(ans), None)

# ----------------------------------------------------------------------------- selection
elementwise_n(anp.maximum,   lambda ans, x, y: _share(x, ans, y), lambda ans, x, y: _share(y, ans, x))
elementwise_n(anp.minimum,   lambda ans, x, y: _share(x, ans, y), lambda ans, x, y: _share(y, ans, x))
elementwise_n(anp.fmax,      lambda ans, x, y: _share(x, ans, y), lambda ans, x, y: _share(y, ans, x))
elementwise_n(anp.fmin,      lambda ans, x, y: _share(x, ans, y), lambda ans, x, y: _share(y, ans, x))
defvjp_direct(anp.clip,     _clip_vjp(0, "a"), _clip_vjp(1, "min"), _clip_vjp(2, "max"))
defjvp_direct(anp.clip,            _clip_jvp("a"), _clip_jvp("min"), _clip_jvp("max"))
defvjp_direct(anp.nan_to_num, lambda g, ans, x, *a, **k: match_dtype(_finite_only(g, x), x))
defjvp_direct(anp.nan_to_num,      lambda g, ans, x, *a, **k: match_dtype(_finite_only(g, x), ans))
defvjp_direct(anp.full_like, None, lambda g, ans, a, fill, *args, **kw: unbroadcast(g, fill))
defjvp_direct(anp.full_like,       None, lambda g, ans, a, fill, *args, **kw: anp.full_like(a, g, *args, **kw))
defvjp_direct(anp.where, None,
              lambda g, ans, c, x, y: unbroadcast(anp.where(c, g, anp.zeros_like(g)), x),
              lambda g, ans, c, x, y: unbroadcast(anp.where(c, anp.zeros_like(g), g), y))
defjvp_direct(anp.where, None,
       lambda g, ans, c, x, y: anp.where(c, broadcast_tangent(g, ans), anp.zeros_like(ans)),
       lambda g, ans, c, x, y: anp.where(c, anp.zeros_like(ans), broadcast_tangent(g, ans)))
# fmt: on


# sparsity (chainrule._sparsity.patterns): the broadcasting functions registered one by one above
for _name in ("add", "subtract", "multiply", "divide", "true_divide", "power", "float_power",
              "negative", "positive", "absolute", "fabs", "conj", "conjugate", "where",
              "arctan2", "hypot", "logaddexp", "logaddexp2", "fmod", "mod", "maximum",
              "minimum", "fmax", "fmin", "square", "sqrt", "exp", "log", "sin", "cos",
              "tanh", "reciprocal", "clip", "real", "imag", "angle", "real_if_close",
              "nan_to_num"):
    _fun = getattr(anp, _name, None)
    if _fun is not None and _fun in rule_table:
        defsparsity(_fun, elementwise_pattern)
# full_like(a, fill): fill broadcast; a only gives the shape
defsparsity(anp.full_like, shapes_only(
    lambda argnum, ans, args, kwargs: (elementwise_pattern if argnum else no_dependency)(
        argnum, ans, args, kwargs)))
