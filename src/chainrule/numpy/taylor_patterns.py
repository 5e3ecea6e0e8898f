"""Patterns for Taylor rules (``deftaylor``) of the NumPy and SciPy primitives: the
series algebra and the factories that make a rule from it. The rule tables
(``chainrule.numpy.rules.*``, ``chainrule.scipy.rules.*``) register each primitive's rule
beside its other columns.

A rule maps the normalized Taylor coefficients x_1..x_k of its traced arguments (x_0 is
the value) to the answer's, in O(k^2) operations (see ``chainrule._core.taylor``).

- linear: the answer's coefficient j is the JVP of the arguments' coefficients j
  (``deftaylor_linear``, ``make_multilinear_taylor`` for products).
- recurrences: for y = f(x) with y' = g(x) x', y_j = (1/j) sum_{i=1..j} i x_i g_{j-i},
  where g's series comes from a product, quotient, power or exponential recurrence. Each
  needs only coefficients below j, so the whole series is O(k^2).

Every other primitive with a JVP nests its JVP (``nested_jvp_series``): exact, O(2^k).
Recurrence rules apply to plain positional calls; a call with keywords (``out=``,
``where=``, ``dtype=``) takes the nested JVP, which handles everything the JVP does.
"""

from __future__ import annotations

import math as _math

import numpy as _np

from .._core.rules import deftaylor
from .._core.taylor import nested_jvp_series
from .._core.tracer import decided, getval
from . import numpy_wrapper as anp
from .placement import numpy_values

# ----------------------------------------------------------------------------- series algebra
# A series here is a list [s_0, s_1, ..., s_k] of values (arrays, or boxes of outer traces).


def cauchy(a: list, b: list, j: int, first: int = 0):
    """Coefficient j of the product a * b: the sum of a_i b_{j-i}, from i = ``first`` on
    (1 where a_0 is zero, or b_j not yet known: no product by a zero)."""
    total = a[first] * b[j - first]
    for i in range(first + 1, j + 1):
        total = total + a[i] * b[j - i]
    return total


def square_coefficient(x: list, j: int):
    """Coefficient j of x * x: the products x_i x_{j-i} with i < j - i, doubled, and the
    middle one's square (half the multiplications of ``cauchy(x, x, j)``)."""
    middle = x[j // 2] * x[j // 2] if j % 2 == 0 else None
    if j == 0:
        return middle
    total = x[0] * x[j]
    for i in range(1, (j + 1) // 2):
        total = total + x[i] * x[j - i]
    total = total + total  # (doubled exactly)
    return total if middle is None else total + middle


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
        q.append(-cauchy(b, q, j, 1) * q0)
    return q


def quotient_series(a: list, b: list, q0, order: int) -> list:
    """a(t) / b(t), given q0 = a_0 / b_0: from b q = a."""
    q = [q0]
    for j in range(1, order + 1):
        q.append((a[j] - cauchy(b, q, j, 1)) / b[0])
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


def integer_power_series(x: list, n: int, order: int) -> list:
    """x(t) ** n for an integer n >= 0 by squaring (Cauchy products, exact at x_0 = 0)."""
    if n == 0:
        return [1.0] + [0.0] * order
    result = None  # (1: the first factor is the product)
    base = x
    while n:
        if n & 1:
            result = base if result is None else [cauchy(result, base, j)
                                                  for j in range(order + 1)]
        n >>= 1
        if n:
            base = [square_coefficient(base, j) for j in range(order + 1)]
    return result


def sin_cos_series(x: list, s0, c0, order: int, sign: float) -> tuple[list, list]:
    """sin and cos (sign -1) or sinh and cosh (sign +1) of x(t) together:
    s' = c x', c' = sign s x'."""
    s, c = [s0], [c0]
    for j in range(1, order + 1):
        s.append(weighted(x, c, j) / j)
        c.append(sign * weighted(x, s, j) / j)
    return s, c


def composed_series(x: list, coefficients: list, order: int) -> list:
    """f(x(t)) from f's own Taylor coefficients at x_0 (``coefficients[n]`` =
    f^(n)(x_0) / n!, n = 0..order), by Horner's rule in u(t) = x(t) - x_0: O(order^3),
    for functions with a closed form of every derivative (gammaln's are polygammas)."""
    u = [0.0, *x[1:]]
    y = [coefficients[order]] + [0.0] * order
    for n in range(order - 1, -1, -1):  # y <- u y + f_n (u_0 is 0)
        y = [coefficients[n]] + [cauchy(u, y, j, 1) for j in range(1, order + 1)]
    return y


def square_series(x: list, order: int) -> list:
    return [square_coefficient(x, j) for j in range(order + 1)]


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
        series = tuple(series_of([args[0], *series_in[0]], ans, order)[1:])
        return finite_or_nested(series, fun, args, argnums, series_in, order)

    rule.kind = "recurrence"
    deftaylor(fun, rule)


def finite_or_nested(series: tuple, fun, args, argnums, series_in, order) -> tuple:
    """``series``, but where its last coefficient is not finite (a recurrence dividing by
    0 at a singular point, as sqrt's, cbrt's, log's or 1/x's 0, makes nan of the one-sided
    limits), the nested JVP's coefficients: those of nested ``jvp``, inf and -inf."""
    if not series:
        return series
    if known(series[-1], all_finite):
        return series
    nested = nested_jvp_series(fun, args, {}, argnums, series_in, order)
    finite = anp.isfinite(series[-1])
    return tuple(anp.where(finite, c, n) for c, n in zip(series, nested))


# Decisions a rule takes on the values of its traced arguments, through
# ``tracer.decided``: chainrule.jit guards them (its program runs again where the decision
# would go the other way), and a float program checks them on Python floats, on which they
# are exact (``float_predicate``).
def all_finite(value) -> bool:
    """Whether every element of ``value`` (a plain value) is finite."""
    if type(value) is float or type(value) is _np.float64:
        return _math.isfinite(value)
    return bool(_np.all(_np.isfinite(value)))


def all_nonzero(value) -> bool:
    """Whether every element of ``value`` (a plain value) is nonzero."""
    if type(value) is float or type(value) is _np.float64:
        return value != 0
    return bool(_np.all(value))


all_finite.float_predicate = all_nonzero.float_predicate = True


def known(value, predicate) -> bool:
    """Whether ``predicate`` (``all_finite``, ``all_nonzero``) holds of the traced
    ``value``, a decision jit guards; False (the rule's general branch) for a GPU or lazy
    array, which is not looked at (a copy to the host, a computation)."""
    return numpy_values(value) and decided(value, predicate)


def through_derivative(fun, derivative_series) -> None:
    """``fun`` with f'(x) = g(x): ``derivative_series(x, order)`` gives g's series."""
    unary(fun, lambda x, ans, order: integrate(x, derivative_series(x, order - 1), ans, order))


def inverse_sqrt_series(u: list, order: int) -> list:
    """u(t) ** -1/2."""
    return power_series(u, u[0] ** -0.5, -0.5, order)


def broadcast_like(c, ans):
    """A coefficient computed from constants only (0.0) made the answer's shape and dtype.
    (A Python float only: a NumPy float64 is a float too, a value computed from the
    series, whose -0.0 the sum with 0.0 would make 0.0, and only in eager evaluation.)"""
    if type(c) is float:
        return anp.zeros_like(getval(ans)) + c
    return c
