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

import math
import numbers

import numpy as _np

from ..._core.rules import (
    defbatch,
    deffinite_from_inf,
    defjvp_argnums,
    defjvp_batched,
    defjvp_direct,
    deflabel,
    deflayout_by_value,
    deflowering,
    defneutral,
    defsilent,
    defsparsity,
    defsymmetric,
    deftakes_masks,
    deftaylor,
    deftaylor_linear,
    defvjp_direct,
)
from ..._core.taylor import make_linear_taylor, make_multilinear_taylor, nested_jvp_series
from ..._core.tracer import derivative_free, getval
from ..._sparsity.patterns import elementwise_pattern, no_dependency, shapes_only
from .. import numpy_wrapper as anp
from ..batched import aligned, example_ndim, flat_examples
from ..batched import elementwise as elementwise_batch
from ..batching_patterns import batch_size
from ..numpy_boxes import array_astype
from ..taylor_patterns import (
    all_nonzero,
    broadcast_like,
    exp_series,
    finite_or_nested,
    integer_power_series,
    inverse_sqrt_series,
    known,
    power_series,
    quotient_series,
    reciprocal_series,
    scaled,
    shifted,
    sin_cos_series,
    square_coefficient,
    square_series,
    through_derivative,
    unary,
    weighted,
)
from ._helpers import (
    batch_aligned,
    binary_rule,
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


def _power_partial(ans, x, y):
    """d x**y / dx, ``y * x ** (y - 1)``; a square's is ``2 * x`` (x ** 1 is x, bit for
    bit), one traced call less: in forward-over-reverse (a Hessian's diagonal) the power
    is itself differentiated, its own rules calling four more primitives."""
    if type(y) in (int, float) and y == 2:
        return y * x
    return y * x ** _lowered(y)


def _array_to_a_number(vals, texts, kwtexts):
    """jit's code for ``power`` of an array by a Python number: the array's ``**``, which
    the raw function calls (NumPy's fast path: square, sqrt, reciprocal, their warnings)."""
    if len(vals) == 2 and type(vals[1]) in (int, float) and not kwtexts:
        return f"{texts[0]} ** {texts[1]}"
    return None


def _abs_derivative(ans, x):
    # conj(z) / |z| for complex z (autograd's convention), x / |x| for real x; 0 at 0,
    # taken from 0 * x there (the sign of a zero kept), so that its own derivative is 0 at
    # 0 too (x / where(|x|, |x|, 1) alone gave |x| a second derivative of 1 there). A mask,
    # not sign(x): jit computes masks in the program, but guards sign's values.
    nonzero = anp.where(ans, ans, 1)
    if dtype_of(x).kind == "c":
        return anp.conj(x) / nonzero
    return anp.where(ans, x / nonzero, 0.0 * x)


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


# The Taylor rules' series functions (``chainrule.numpy.taylor_patterns``): y' = g(x) x'.
def _tanh_series(x: list, ans, order: int) -> list:
    """tanh: y' = (1 - y^2) x', the factor's coefficients following y's."""
    y, z = [ans], [1.0 - ans * ans]
    for j in range(1, order + 1):
        y.append(weighted(x, z, j) / j)
        z.append(-square_coefficient(y, j))
    return y


def _sqrt_series(x: list, ans, order: int) -> list:
    """sqrt: from y^2 = x, y_j = (x_j - sum_{i=1..j-1} y_i y_{j-i}) / (2 y_0)."""
    y = [ans]
    for j in range(1, order + 1):
        total = x[j]
        for i in range(1, j):
            total = total - y[i] * y[j - i]
        y.append(total / (2 * ans))
    return y


def _one_minus_square(x: list, k: int) -> list:
    return shifted(scaled(square_series(x, k), -1.0), 1.0)


def _is_scalar(p) -> bool:
    return isinstance(p, numbers.Number) or (isinstance(p, _np.ndarray | _np.generic)
                                             and _np.ndim(p) == 0)


def _power_taylor(series_in, argnums, ans, args, kwargs, order):
    """x ** p for a constant scalar p: squaring for whole p (exact where x is 0), else the
    power recurrence where no x_0 is 0; anything else nests the JVP."""
    if not kwargs and argnums == (0,) and len(args) == 2 and _is_scalar(args[1]):
        p = args[1]
        x = [args[0], *series_in[0]]
        whole = math.isfinite(float(getval(p))) and float(getval(p)).is_integer()
        if whole and abs(int(getval(p))) <= 64:
            n = int(getval(p))
            y = integer_power_series(x, abs(n), order)
            if n < 0:
                y = reciprocal_series(y, ans, order)
            series = tuple(broadcast_like(c, ans) for c in y[1:])
            if n >= 0:
                return series
            # (at x = 0 the reciprocal's recurrence makes nan of nested jvp's infinities)
            return finite_or_nested(series, anp.power, args, argnums, series_in, order)
        if known(args[0], all_nonzero):
            return tuple(power_series(x, ans, p, order)[1:])
    return nested_jvp_series(anp.power, args, kwargs, argnums, series_in, order)


_power_taylor.kind = "recurrence"


def _divide_taylor(series_in, argnums, ans, args, kwargs, order):
    """a / b: q_j = (a_j - sum_{i=1..j} b_i q_{j-i}) / b_0 (b constant: a's coefficients / b)."""
    if kwargs or len(args) != 2:
        return nested_jvp_series(anp.divide, args, kwargs, argnums, series_in, order)
    a, b = args
    zeros = [0.0] * order
    a_series = [a, *series_in[argnums.index(0)]] if 0 in argnums else [a, *zeros]
    if 1 not in argnums:
        return tuple(c / b for c in a_series[1:])
    b_series = [b, *series_in[argnums.index(1)]]
    series = tuple(broadcast_like(c, ans) for c in quotient_series(a_series, b_series, ans,
                                                                    order)[1:])
    # (where b is 0 the recurrence makes nan of nested jvp's infinities)
    return finite_or_nested(series, anp.divide, args, argnums, series_in, order)


_divide_taylor.kind = "recurrence"


def _absolute_taylor(series_in, argnums, ans, args, kwargs, order):
    """|x|: piecewise linear for real x away from 0. The modulus of a complex x is not, and
    at x = 0 the series is what nested forward mode, grad of grad and hessian see (the
    JVP's sign(x), whose own derivative is 0); both take the nested JVP."""
    if _np.iscomplexobj(getval(args[0])) or not known(args[0], all_nonzero):
        return nested_jvp_series(anp.absolute, args, kwargs, argnums, series_in, order)
    return _absolute_linear(series_in, argnums, ans, args, kwargs, order)


_absolute_linear = make_linear_taylor(anp.absolute)
_absolute_taylor.kind = "linear"


# batching rules written out (``chainrule.numpy.batching_patterns`` has the patterns)
def _nonzero_indices(x):
    """nonzero of each example of the batch ``x`` as a batch (one row of indices per
    example, per axis), or NotImplemented when examples have different counts (their
    answers cannot be one array: the call runs per example)."""
    if _np.ndim(x) < 2:
        return NotImplemented  # (0-d examples: NumPy's refusal comes from the loop)
    found = anp.nonzero(x)
    counts = _np.bincount(found[0], minlength=_np.shape(x)[0])
    if len(counts) and (counts != counts[0]).any():
        return NotImplemented
    count = int(counts[0]) if len(counts) else 0
    return tuple(anp.reshape(axis, (_np.shape(x)[0], count)) for axis in found[1:])


def _nonzero(values, batched, kwargs):
    return _nonzero_indices(values[0]) if len(values) == 1 and not kwargs else NotImplemented


def _where_batch(values, batched, kwargs):
    """where(c, x, y) elementwise; where(c), as nonzero(c), per example."""
    if len(values) == 1:
        return _nonzero(values, batched, kwargs)
    return anp.where(*aligned(values, batched), **kwargs)


def _flatnonzero(values, batched, kwargs):
    found = _nonzero_indices(flat_examples(values[0])) if len(values) == 1 else NotImplemented
    return found if found is NotImplemented else found[0]


def _argwhere(values, batched, kwargs):
    found = _nonzero(values, batched, kwargs)
    return found if found is NotImplemented else anp.stack(found, axis=-1)


def _full_like_batch(values, batched, kwargs):
    """full_like(a, fill_value): a's example shape and dtype, filled with each example's
    fill_value (or the same one), as ``full_like`` casts it."""
    if len(values) > 2 or set(kwargs) - {"dtype"}:
        return NotImplemented
    (a, fill), (batched_a, batched_fill) = values, batched
    shape = _np.shape(a)[1:] if batched_a else _np.shape(a)
    dtype = kwargs.get("dtype") or _np.result_type(a)
    size = batch_size(values, batched)
    if batched_fill:
        missing = len(shape) - example_ndim(fill, True)
        if missing < 0:
            return NotImplemented
        fill = anp.expand_dims(fill, tuple(range(1, 1 + missing))) if missing else fill
    out = anp.broadcast_to(fill, (size,) + shape)
    return array_astype(out, dtype)


def _batched_elementwise(fun) -> None:
    """``fun`` under vmap broadcasts like a ufunc (ufuncs need no rule: vmap finds them)."""
    defbatch(fun, elementwise_batch(fun))


# One block per primitive: its VJP and JVP (or the helper that registers both, with the
# batched JVP and the elementwise sparsity pattern), then its label, batching rule and
# Taylor rule. Taylor: ``unary`` and ``through_derivative`` for recurrences, linear for the
# (piecewise) linear ones, where the piece is chosen by the value alone.
# fmt: off
def _divmod_partial(argnum, x, y):
    """The remainder's partial derivative (as np.remainder's); the quotient's is zero."""
    return 1.0 if argnum == 0 else -anp.floor(x / y)


def _divmod_tangent(t, ans):
    """divmod's tangent (quotient, remainder) from the remainder's."""
    return _np.zeros_like(getval(ans[0])), broadcast_tangent(t, ans[1])


def _tangents_added(negated: bool):
    """add's (``negated``: subtract's) JVP: the operands' tangents added (subtracted) in
    one operation where both are traced, not each broadcast to the answer and then added
    (two n x k arrays made, a negation, three rule calls); ``a - b`` is ``a + (-b)`` bit
    for bit, and the broadcast of the sum is the sum of the broadcasts."""

    def jvp(argnums, tangents, ans, args, kwargs):
        if len(argnums) == 2:
            a, b = tangents
            return broadcast_tangent(a - b if negated else a + b, ans)
        t = tangents[0]
        return broadcast_tangent(-t if negated and argnums[0] == 1 else t, ans)

    return jvp


# ----------------------------------------------------------------------------- arithmetic
defvjp_direct(anp.add,      binary_rule(0), binary_rule(1),
              reads=())  # only the cotangent, unbroadcast to each operand's shape
defjvp_argnums(anp.add,            _tangents_added(negated=False))
defjvp_batched(anp.add,      lambda g, ans, x, y, *a, **k: broadcast_batched_tangent(batch_aligned(g, x, ans), ans),
                            lambda g, ans, x, y, *a, **k: broadcast_batched_tangent(batch_aligned(g, y, ans), ans))
deflabel(anp.add,           "{0} + {1}", operator=True)  # how explain (and jit, on scalars) writes a call
defsymmetric(anp.add)       # x + x: one cotangent for both
defsparsity(anp.add,        elementwise_pattern)
deftaylor_linear(anp.add)
defvjp_direct(anp.subtract, binary_rule(0), binary_rule(1, negated=True), reads=())
defjvp_argnums(anp.subtract,       _tangents_added(negated=True))
defjvp_batched(anp.subtract, lambda g, ans, x, y, *a, **k: broadcast_batched_tangent(batch_aligned(g, x, ans), ans),
                            lambda g, ans, x, y, *a, **k: broadcast_batched_tangent(batch_aligned(-g, y, ans), ans))
deflabel(anp.subtract,      "{0} - {1}", operator=True)
defsparsity(anp.subtract,   elementwise_pattern)
deftaylor_linear(anp.subtract)
elementwise_n(anp.multiply,  lambda ans, x, y: y,               lambda ans, x, y: x,
              reads={0: (1,), 1: (0,)})  # each partial is the other operand
deflabel(anp.multiply,      "{0} * {1}", operator=True)
defneutral(anp.multiply,    "ones")  # x * 1 is x: jit drops the call
defsymmetric(anp.multiply)  # x * x: g * x once, for both
deftaylor(anp.multiply,     make_multilinear_taylor(anp.multiply))  # a Cauchy product
elementwise_n(anp.divide,    lambda ans, x, y: anp.divide(1.0, y), lambda ans, x, y: -ans / y,
              reads={0: (1,), 1: (1, "ans")})  # true_divide; y may be a constant Python float, whose 1 / 0.0 raises
deflabel(anp.divide,        "{0} / {1}", operator=True)
deffinite_from_inf(anp.divide, 1)  # x / inf is 0
deftaylor(anp.divide,       _divide_taylor)
elementwise(anp.negative,   lambda ans, x: -1.0, product=lambda g, ans, x: -g)
deflabel(anp.negative,      "-{0}", operator=True)
defsilent(anp.negative)     # neither raises nor warns (jit may leave it out)
deftaylor_linear(anp.negative)
elementwise(anp.positive,   lambda ans, x: 1.0)
deftaylor_linear(anp.positive)
defsilent(anp.positive)
elementwise(anp.reciprocal, lambda ans, x: -ans ** 2)
unary(anp.reciprocal,       lambda x, ans, k: reciprocal_series(x, ans, k))
elementwise_n(anp.mod,       lambda ans, x, y: 1.0,             lambda ans, x, y: -anp.floor(x / y))  # remainder
deftaylor_linear(anp.mod)
elementwise_n(anp.fmod,      lambda ans, x, y: 1.0,             lambda ans, x, y: -anp.trunc(x / y))
deftaylor_linear(anp.fmod)
defvjp_direct(anp.divmod,    lambda g, ans, x, y: unbroadcast(g[1] * _divmod_partial(0, x, y), x),
                            lambda g, ans, x, y: unbroadcast(g[1] * _divmod_partial(1, x, y), y))
defjvp_direct(anp.divmod,    lambda g, ans, x, y: _divmod_tangent(g * _divmod_partial(0, x, y), ans),
                            lambda g, ans, x, y: _divmod_tangent(g * _divmod_partial(1, x, y), ans))

# ----------------------------------------------------------------------------- powers, exp, log
elementwise_n(anp.power,     _power_partial,                                                      # pow
                            lambda ans, x, y: anp.log(anp.where(x, x, 1.0)) * ans)
deflabel(anp.power,         "{0} ** {1}")
deflowering(anp.power,      _array_to_a_number)  # NumPy's fast path (square, sqrt ...)
deftaylor(anp.power,        _power_taylor)
elementwise_n(anp.float_power, lambda ans, x, y: y * anp.float_power(x, _lowered(y)),
                            lambda ans, x, y: anp.log(anp.where(x, x, 1.0)) * ans)
deflabel(anp.float_power,   "{0} ** {1}")
elementwise(anp.square,     lambda ans, x: 2 * x)
unary(anp.square,           lambda x, ans, k: square_series(x, k))
elementwise(anp.sqrt,       lambda ans, x: 0.5 / ans)
unary(anp.sqrt,             _sqrt_series)
elementwise(anp.cbrt,       lambda ans, x: ans ** -2.0 / 3.0)  # (signed zeros: the limits)
unary(anp.cbrt,             lambda x, ans, k: power_series(x, ans, 1.0 / 3.0, k))
elementwise(anp.exp,        lambda ans, x: ans, reads=("ans",), product=lambda g, ans, x: g * ans)
unary(anp.exp,              lambda x, ans, k: exp_series(x, ans, k))
deffinite_from_inf(anp.exp, 0)  # exp(-inf) is 0
elementwise(anp.exp2,       lambda ans, x: ans * _LN2)
unary(anp.exp2,             lambda x, ans, k: exp_series(scaled(x, math.log(2.0)), ans, k))
elementwise(anp.expm1,      lambda ans, x: ans + 1)
unary(anp.expm1,            lambda x, ans, k: shifted(exp_series(x, ans + 1.0, k), -1.0))
elementwise(anp.log,        lambda ans, x: 1 / x)
through_derivative(anp.log, lambda x, k: reciprocal_series(x, 1.0 / x[0], k))
elementwise(anp.log2,       lambda ans, x: 1 / (x * _LN2))
through_derivative(anp.log2, lambda x, k: scaled(reciprocal_series(x, 1.0 / x[0], k), 1 / math.log(2.0)))
elementwise(anp.log10,      lambda ans, x: 1 / (x * _LN10))
through_derivative(anp.log10, lambda x, k: scaled(reciprocal_series(x, 1.0 / x[0], k), 1 / math.log(10.0)))
elementwise(anp.log1p,      lambda ans, x: 1 / (x + 1))
through_derivative(anp.log1p, lambda x, k: reciprocal_series(shifted(x, 1.0), 1.0 / (1.0 + x[0]), k))
elementwise_n(anp.logaddexp, lambda ans, x, y: anp.exp(x - ans), lambda ans, x, y: anp.exp(y - ans))
elementwise_n(anp.logaddexp2, lambda ans, x, y: anp.exp2(x - ans), lambda ans, x, y: anp.exp2(y - ans))

# ----------------------------------------------------------------------------- trigonometric
elementwise(anp.sin,        lambda ans, x: anp.cos(x))
unary(anp.sin,              lambda x, ans, k: sin_cos_series(x, ans, anp.cos(x[0]), k, -1.0)[0])
elementwise(anp.cos,        lambda ans, x: -anp.sin(x))
unary(anp.cos,              lambda x, ans, k: sin_cos_series(x, anp.sin(x[0]), ans, k, -1.0)[1])
elementwise(anp.tan,        lambda ans, x: 1 + ans ** 2)
unary(anp.tan,              lambda x, ans, k: quotient_series(
    *sin_cos_series(x, anp.sin(x[0]), anp.cos(x[0]), k, -1.0), ans, k))
elementwise(anp.arcsin,     lambda ans, x: 1 / anp.sqrt(1 - x ** 2))                  # asin
through_derivative(anp.arcsin, lambda x, k: inverse_sqrt_series(_one_minus_square(x, k), k))
elementwise(anp.arccos,     lambda ans, x: -1 / anp.sqrt(1 - x ** 2))                 # acos
through_derivative(anp.arccos, lambda x, k: scaled(inverse_sqrt_series(_one_minus_square(x, k), k), -1.0))
elementwise(anp.arctan,     lambda ans, x: 1 / (1 + x ** 2))                          # atan
through_derivative(anp.arctan, lambda x, k: reciprocal_series(shifted(square_series(x, k), 1.0),
                                                              1.0 / (1.0 + x[0] * x[0]), k))
elementwise_n(anp.arctan2,   lambda ans, y, x: x / (x ** 2 + y ** 2),                  # atan2
                            lambda ans, y, x: -y / (x ** 2 + y ** 2))
elementwise_n(anp.hypot,     lambda ans, x, y: x / ans,         lambda ans, x, y: y / ans)
elementwise(anp.sinc,       _sinc_derivative)
_batched_elementwise(anp.sinc)
elementwise(anp.deg2rad,    lambda ans, x: _DEG)
deftaylor_linear(anp.deg2rad)
elementwise(anp.radians,    lambda ans, x: _DEG)
deftaylor_linear(anp.radians)
elementwise(anp.rad2deg,    lambda ans, x: 1 / _DEG)
deftaylor_linear(anp.rad2deg)
elementwise(anp.degrees,    lambda ans, x: 1 / _DEG)
deftaylor_linear(anp.degrees)

# ----------------------------------------------------------------------------- hyperbolic
elementwise(anp.sinh,       lambda ans, x: anp.cosh(x))
unary(anp.sinh,             lambda x, ans, k: sin_cos_series(x, ans, anp.cosh(x[0]), k, 1.0)[0])
elementwise(anp.cosh,       lambda ans, x: anp.sinh(x))
unary(anp.cosh,             lambda x, ans, k: sin_cos_series(x, anp.sinh(x[0]), ans, k, 1.0)[1])
elementwise(anp.tanh,       lambda ans, x: 1.0 - ans ** 2, reads=("ans",),  # (1.0: a float operand is cheaper)
            product=lambda g, ans, x: g * (1.0 - ans ** 2))
unary(anp.tanh,             _tanh_series)
elementwise(anp.arcsinh,    lambda ans, x: 1 / anp.sqrt(x ** 2 + 1))                  # asinh
through_derivative(anp.arcsinh, lambda x, k: inverse_sqrt_series(shifted(square_series(x, k), 1.0), k))
elementwise(anp.arccosh,    lambda ans, x: 1 / (anp.sqrt(x - 1) * anp.sqrt(x + 1)))   # acosh
elementwise(anp.arctanh,    lambda ans, x: 1 / (1 - x ** 2))                          # atanh
through_derivative(anp.arctanh, lambda x, k: reciprocal_series(_one_minus_square(x, k),
                                                               1.0 / (1.0 - x[0] * x[0]), k))

# ----------------------------------------------------------------------------- complex parts
elementwise(anp.absolute,   _abs_derivative)                                          # abs
deflabel(anp.absolute,      "abs({0})")
deftaylor(anp.absolute,     _absolute_taylor)
elementwise(anp.fabs,       lambda ans, x: anp.sign(x))
deftaylor_linear(anp.fabs)
linear(anp.conjugate,       lambda g, ans, x, *a, **k: anp.conj(g))                   # conj
defsparsity(anp.conjugate,  elementwise_pattern)
defsilent(anp.conjugate)
linear(anp.real,            lambda g, ans, x: match_dtype(anp.real(g), x))
defsparsity(anp.real,       elementwise_pattern)
_batched_elementwise(anp.real)
defsilent(anp.real)
linear(anp.imag,            lambda g, ans, x: match_dtype(-1j * g, x))
defsparsity(anp.imag,       elementwise_pattern)
_batched_elementwise(anp.imag)
defsilent(anp.imag)
defvjp_direct(anp.angle,    _angle_vjp)
defjvp_direct(anp.angle,           _angle_jvp)
defsparsity(anp.angle,      elementwise_pattern)
_batched_elementwise(anp.angle)
defvjp_direct(anp.real_if_close, lambda g, ans, x, *a, **k: match_dtype(g, x))
defjvp_direct(anp.real_if_close,   lambda g, ans, x, *a, **k: match_dtype(g, ans))
defsparsity(anp.real_if_close, elementwise_pattern)
_batched_elementwise(anp.real_if_close)
deftaylor_linear(anp.real_if_close)
deflayout_by_value(anp.real_if_close)  # real where every imaginary part is small
elementwise_n(anp.copysign,  lambda ans, x, y: anp.sign(x) * anp.sign(ans), None)
deftaylor_linear(anp.copysign)

# ----------------------------------------------------------------------------- selection
elementwise_n(anp.maximum,   lambda ans, x, y: _share(x, ans, y), lambda ans, x, y: _share(y, ans, x))
deftaylor_linear(anp.maximum)
elementwise_n(anp.minimum,   lambda ans, x, y: _share(x, ans, y), lambda ans, x, y: _share(y, ans, x))
deftaylor_linear(anp.minimum)
elementwise_n(anp.fmax,      lambda ans, x, y: _share(x, ans, y), lambda ans, x, y: _share(y, ans, x))
deftaylor_linear(anp.fmax)
elementwise_n(anp.fmin,      lambda ans, x, y: _share(x, ans, y), lambda ans, x, y: _share(y, ans, x))
deftaylor_linear(anp.fmin)
defvjp_direct(anp.clip,     _clip_vjp(0, "a"), _clip_vjp(1, "min"), _clip_vjp(2, "max"))
defjvp_direct(anp.clip,            _clip_jvp("a"), _clip_jvp("min"), _clip_jvp("max"))
defsparsity(anp.clip,       elementwise_pattern)
_batched_elementwise(anp.clip)
deftaylor_linear(anp.clip)
defvjp_direct(anp.nan_to_num, lambda g, ans, x, *a, **k: match_dtype(_finite_only(g, x), x))
defjvp_direct(anp.nan_to_num,      lambda g, ans, x, *a, **k: match_dtype(_finite_only(g, x), ans))
defsparsity(anp.nan_to_num, elementwise_pattern)
_batched_elementwise(anp.nan_to_num)
deftaylor_linear(anp.nan_to_num)
defvjp_direct(anp.full_like, None, lambda g, ans, a, fill, *args, **kw: unbroadcast(g, fill))
defjvp_direct(anp.full_like,       None, lambda g, ans, a, fill, *args, **kw: anp.full_like(a, g, *args, **kw))
# full_like(a, fill): fill broadcast; a only gives the shape
defsparsity(anp.full_like, shapes_only(
    lambda argnum, ans, args, kwargs: (elementwise_pattern if argnum else no_dependency)(
        argnum, ans, args, kwargs)))
defbatch(anp.full_like,     _full_like_batch)
deftaylor_linear(anp.full_like)
defvjp_direct(anp.where, None,
              lambda g, ans, c, x, y: unbroadcast(anp.where(c, g, anp.zeros_like(g)), x),
              lambda g, ans, c, x, y: unbroadcast(anp.where(c, anp.zeros_like(g), g), y))
defjvp_direct(anp.where, None,
       lambda g, ans, c, x, y: anp.where(c, broadcast_tangent(g, ans), anp.zeros_like(ans)),
       lambda g, ans, c, x, y: anp.where(c, anp.zeros_like(ans), broadcast_tangent(g, ans)))
defsparsity(anp.where,      elementwise_pattern)
defbatch(anp.where,         _where_batch)  # where(c) is nonzero(c)
deftaylor_linear(anp.where)
deftakes_masks(anp.where,   n_args=3)  # where(c, x, y)'s shape is not c's values' (jit)

# ----------------------------------------------------------------------------- no derivative
# (elementwise, but piecewise constant or not differentiated: only their batching rule)
for _name in ("i0", "round", "around", "fix"):
    if _name in anp.namespace:  # (those this NumPy has)
        _batched_elementwise(anp.namespace[_name])
defbatch(anp.nonzero,       _nonzero)
defbatch(anp.namespace["flatnonzero"], _flatnonzero)
defbatch(anp.namespace["argwhere"], _argwhere)
# fmt: on
