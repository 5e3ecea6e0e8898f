"""Taylor mode: Taylor nodes carry a truncated power series alongside each value.

A traced value x stands for the curve x(t) = x_0 + x_1 t + ... + x_k t^k (x_0 is the
value itself; x_1..x_k, *normalized* coefficients x^(j)(0) / j!, are the node's
``series``). Like a JVP node, a TaylorNode computes its series from its parents' the
moment it is made, so no graph is kept: with k = 1 it is forward mode.

Each primitive's entry may hold a ``taylor`` rule
``rule(series_in, argnums, ans, args, kwargs, order) -> series_out``: ``series_in`` holds
one tuple of ``order`` coefficients per traced argument (in ``argnums`` order), and the
answer is the tuple of the output's ``order`` coefficients (each shaped like ``ans``).
A primitive without one gets ``nested_jvp_series``: its own JVP nested ``order`` times
along t -> f(x(t)), exact but O(2^order) calls of its JVP rule (the coverage table says
which primitives use it). ``make_linear_taylor`` and ``make_bilinear_taylor`` give the rules
of linear and bilinear primitives, built from their JVP and the primitive itself; the closed-form
recurrences of the elementwise functions live in ``chainrule.numpy.taylor_patterns``.

Rules compute with primitives, so a Taylor trace nests in (and under) every other mode.
"""

from __future__ import annotations

from collections.abc import Callable
from math import factorial

import numpy as _np

from .forward import JVPNode, flattened_output
from .pytree import tree_unflatten
from .rule_table import rule_table
from .tracer import Node, check_not_leaked, isbox, trace_leaves
from .vspace import add_values, vspace

_entry_of = rule_table.get


class TaylorNode(Node):
    __slots__ = ("series",)

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        series_in = tuple(p.series for p in parents)
        rule = taylor_rule(fun)
        self.series = tuple(rule(series_in, argnums, ans, args, kwargs, len(series_in[0])))

    def initialize_root(self, series) -> None:
        self.series = tuple(series)


class CollapsedTaylorNode(Node):
    """Collapsed Taylor mode of second order (Dangel et al., NeurIPS 2025), for sums over
    d directions v_i of second derivatives along them (the Laplacian: the v_i a basis).

    A traced value carries its ``first`` coefficients along every direction at once (one
    value batched over the directions, ``directions`` says how) and ONE ``second``
    coefficient: the sum over the directions of the normalized second coefficients (None
    while it is zero). The value itself is computed once. As the second coefficient of an
    output is linear in the inputs' second coefficients plus a quadratic form Q of their
    first ones, y_2 = L(x_2) + Q(x_1), its sum over the directions is L(sum x_2) +
    sum Q(x_1): the linear part runs once on the sum, and only Q runs per direction (not
    at all for a linear primitive). Both parts come from the primitive's Taylor rule: at
    order 2 with the second coefficients zero it answers (L(x_1), Q(x_1)), at order 1 on
    the summed coefficient L(sum x_2).

    ``directions`` may keep the first coefficients in a form of its own (the Laplacian's
    coordinate basis, never materialised): the node hands them to ``directions.image``
    for a linear primitive, to ``times`` and ``total_of_squares`` for an elementwise one,
    and asks ``directions.dense`` for batched values before any other rule reads them.
    """

    __slots__ = ("first", "second", "directions")

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        self.directions = directions = parents[0].directions
        rule = taylor_rule(fun)
        if len(argnums) <= getattr(rule, "linear_up_to", 0):
            def linear(*firsts):
                return rule(tuple((f,) for f in firsts), argnums, ans, args, kwargs, 1)[0]

            self.first = directions.image(linear, _transpose(fun, argnums, ans, args, kwargs),
                                          [p.first for p in parents], ans)
            quadratic = None
        elif getattr(rule, "kind", None) == "recurrence" and len(argnums) == 1:
            self._elementwise(rule, ans, args, kwargs, argnums, parents[0])
            return
        else:
            firsts = directions.dense([p.first for p in parents])
            no_second = tuple((first, vspace(args[n]).zeros())
                              for first, n in zip(firsts, argnums))
            self.first, quadratic = rule(no_second, argnums, ans, args, kwargs, 2)
            quadratic = self.directions.total(quadratic)
        if all(p.second is None for p in parents):
            self.second = quadratic
            return
        summed = tuple((vspace(args[n]).zeros() if p.second is None else p.second,)
                       for p, n in zip(parents, argnums))
        (linear,) = rule(summed, argnums, ans, args, kwargs, 1)
        self.second = linear if quadratic is None else add_values(quadratic, linear)

    def _elementwise(self, rule, ans, args, kwargs, argnums, parent) -> None:
        """A recurrence rule's primitive is elementwise in its one traced argument (with
        broadcasting): along every direction y_1 = f'(x_0) x_1 and y_2 = f'(x_0) x_2 +
        f''(x_0) x_1^2 / 2, so the rule runs once, unbatched, along the unit curve x_0 + t
        (giving f' and f''/2), and the directions only meet two products and a sum."""
        (n,) = argnums
        space = vspace(args[n])
        first, second = parent.first, parent.second
        # (f' or f''/2 can overflow where the directions' own coefficients keep y_2 finite:
        # s / x at x = 6e-17 in float32, f''/2 = s / x^3 ~ 1e48 and x_1^2 ~ 1e-31. A pass
        # whose answer is not finite runs again with ``directions.scale`` giving c, the
        # coefficients' size: the curve is x_0 + c t, and f' c and f'' c^2 / 2 meet x_1 / c)
        scale = self.directions.scale(first)
        speed = space.ones() if scale is None else scale
        slope, half_curvature = rule(((speed, space.zeros()),), argnums, ans, args, kwargs, 2)
        if scale is not None:
            first = self.directions.times(1 / scale, first)
            second = None if second is None else second / scale
        self.first = self.directions.times(slope, first)
        self.second = half_curvature * self.directions.total_of_squares(first)
        if second is not None:
            self.second = self.second + slope * second

    def initialize_root(self, first, directions) -> None:
        self.first, self.second, self.directions = first, None, directions


def _transpose(fun: Callable, argnums, ans, args, kwargs) -> Callable | None:
    """The transpose of the linear map ``fun``'s JVP makes of its one traced argument (its
    VJP: cotangent of the answer -> cotangent of the argument), or None (no VJP, or more
    than one traced argument). Its answer is what the VJP answers: None for zero, or a partial
    cotangent (``vspace.partial_types``)."""
    entry = _entry_of(fun)
    if entry is None or entry.vjp is None or len(argnums) != 1:
        return None
    return lambda cotangent: entry.vjp(cotangent, argnums, ans, args, kwargs)[0]


def collapsed_trace(fun: Callable, leaf, first, directions):
    """Call ``fun(box)`` on a collapsed Taylor trace (see ``CollapsedTaylorNode``) where
    ``leaf`` moves along the directions whose first coefficients ``first`` holds, batched as
    ``directions`` knows: ``total(value)`` sums a value over them, ``times(factor, first)``
    scales each direction's coefficients by a factor common to all,
    ``total_of_squares(first)`` sums their squares, ``scale(first)`` is None (or, in a pass
    run again because the first overflowed, the largest of their sizes, positive),
    ``image(linear, transpose, firsts, ans)`` is ``linear(*firsts)`` (a linear map of each
    direction's coefficients, shaped like ``ans``; ``transpose`` its transpose, or None) and
    ``dense(firsts)`` the firsts as values a rule can read.
    Returns ``(out_leaves, out_treedef, [(first, second) per output leaf])``, ``second``
    the summed second coefficient (None where it is zero, and both None for an output
    leaf off the trace)."""
    return _traced_outputs(CollapsedTaylorNode, [(first, directions)], fun, [leaf],
                           lambda boxes: boxes[0], lambda node: (node.first, node.second),
                           lambda leaf: (None, None))


def taylor_rule(fun: Callable) -> Callable:
    """``fun``'s Taylor rule: its entry's, or the nested JVP of its JVP rule."""
    entry = _entry_of(fun)
    rule = None if entry is None else entry.taylor
    if rule is not None:
        return rule
    if entry is None or entry.jvp is None:
        name = getattr(fun, "__qualname__", getattr(fun, "__name__", repr(fun)))
        raise NotImplementedError(
            f"chainrule has no JVP rule for {name}, so Taylor mode (jet, "
            f"taylor_derivatives, laplacian) cannot differentiate it. Define one with "
            f"chainrule.extend.defjvp({name}, ...) (Taylor mode then nests it), or a "
            f"Taylor rule with chainrule.extend.deftaylor({name}, ...)."
        )
    return lambda series_in, argnums, ans, args, kwargs, order: nested_jvp_series(
        fun, args, kwargs, argnums, series_in, order)


def taylor_trace(fun: Callable, leaves: list, series: list, rebuild: Callable):
    """Call ``fun(rebuild(boxes))`` on a Taylor trace where ``leaves[i]`` carries the
    normalized coefficients ``series[i]`` (one tuple of ``order`` values per leaf).
    Returns ``(out_leaves, out_treedef, out_series)``: the output's leaves, its structure,
    and per leaf its tuple of coefficients (zeros where the output does not depend on the
    inputs)."""
    order = len(series[0]) if series else 0
    return _traced_outputs(TaylorNode, [(s,) for s in series], fun, leaves, rebuild,
                           lambda node: node.series,
                           lambda leaf: (vspace(leaf).zeros(),) * order)


def _traced_outputs(node_type, root_args, fun, leaves, rebuild, read, zero):
    """Trace ``fun`` (see ``trace_leaves``) and split its output's leaves into values and
    what ``read(node)`` takes from each leaf's node (``zero(leaf)`` for a leaf off the
    trace). Returns ``(values, out_treedef, derived)``."""
    (out_leaves, out_def), trace_id, _ = trace_leaves(
        node_type, root_args, flattened_output(fun), leaves, rebuild
    )
    values, derived = [], []
    for leaf in out_leaves:
        if isbox(leaf) and leaf._trace_id == trace_id:
            values.append(leaf._value)
            derived.append(read(leaf._node))
        else:
            check_not_leaked(leaf)
            values.append(leaf)
            derived.append(zero(leaf))
    return values, out_def, derived


# ----------------------------------------------------------------------------- rules


def make_linear_taylor(fun: Callable) -> Callable:
    """The Taylor rule of ``fun`` when it is linear (or affine) in its traced arguments
    jointly: each coefficient of the answer is ``fun``'s JVP of the same coefficients."""

    def rule(series_in, argnums, ans, args, kwargs, order):
        jvp = _entry_of(fun).jvp
        return tuple(jvp(tuple(s[j] for s in series_in), argnums, ans, args, kwargs)
                     for j in range(order))

    rule.kind = "linear"
    # collapsed Taylor mode sends the summed second coefficient of a rule linear in this
    # many traced arguments through order 1 alone (abs's rule, marked "linear" but not
    # linear at 0, does not say so)
    rule.linear_up_to = float("inf")
    return rule


def make_multilinear_taylor(fun: Callable) -> Callable:
    """The Taylor rule of ``fun`` linear in each argument separately (a product: multiply,
    dot, matmul, einsum ...): the answer's series is the Cauchy product
    y_j = sum over i_1 + ... + i_m = j of fun(a_{i_1}, ..., b_{i_m}) over the traced
    arguments (coefficient 0 being the value); with one traced argument it is linear."""
    linear = make_linear_taylor(fun)

    def rule(series_in, argnums, ans, args, kwargs, order):
        out = linear(series_in, argnums, ans, args, kwargs, order)  # all of j on one argument
        if len(argnums) == 1:
            return out
        out = list(out)
        for j in range(2, order + 1):
            for parts in _compositions(j, len(argnums)):
                if max(parts) == j:
                    continue  # counted by the JVP above
                call_args = list(args)
                for argnum, series, i in zip(argnums, series_in, parts):
                    if i:
                        call_args[argnum] = series[i - 1]
                out[j - 1] = add_values(out[j - 1], fun(*call_args, **kwargs))
        return tuple(out)

    rule.kind = "multilinear"
    rule.linear_up_to = 1  # (traced arguments)
    return rule


def _compositions(total: int, parts: int):
    """Every tuple of ``parts`` non-negative ints summing to ``total``."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def nested_jvp_series(fun: Callable, args, kwargs, argnums, series_in, order: int) -> tuple:
    """The normalized series of ``fun(*args)`` when ``args[argnums[i]]`` moves along the
    curve with coefficients ``series_in[i]``, by nesting forward mode ``order`` times
    (exact; O(2^order) calls of fun's JVP rules). Returns ``order`` values.

    With y_j = j! c_j the curve's derivatives (y_0 the value) and D_k(y_0, ..., y_k) the
    k-th derivative of t -> fun(y(t)), D_{k+1} is the JVP of D_k at (y_0, ..., y_k) along
    (y_1, ..., y_{k+1}): the curve's derivatives enter as themselves, so D_k reads none
    above y_k, and a coefficient that is not finite (a pole's series, as 1/x's
    (inf, nan, nan) at x = 0) is not multiplied by the 0 of a power of t at t = 0 (which
    made a nan of every order).
    """
    levels = [[args[n] for n in argnums]]
    for j in range(order):
        levels.append([vspace(c[j]).scalar_mul(c[j], float(factorial(j + 1))) if j else c[j]
                       for c in series_in])

    def value(levels):
        call_args = list(args)
        for argnum, v in zip(argnums, levels[0]):
            call_args[argnum] = v
        return (fun(*call_args, **kwargs),)

    f = value
    for k in range(order):
        f = _with_derivative(f, k)
    derivatives = f(levels)
    return tuple(vspace(d).scalar_mul(d, 1.0 / factorial(j)) if j > 1 else d
                 for j, d in enumerate(derivatives[1:], start=1))


def _plain_zero(c) -> bool:
    """Whether ``c`` is a plain (untraced) value of zeros."""
    return isinstance(c, _np.ndarray | _np.generic | float | int) and not _np.any(c)


def _with_derivative(f: Callable, k: int) -> Callable:
    """``levels -> f(levels) + (D,)``, ``f`` reading ``levels[0..k]`` and D the derivative of
    its last item along the curve: one JVP trace of ``levels[0..k]`` with tangents
    ``levels[1..k+1]``. (A derivative y_i whose tangent y_{i+1} is a plain zero stays
    untraced: at a singular point, as sqrt's 0, its JVP would make 0 * inf = nan of the
    limit. The value y_0 moves always, as nested jvp moves it: along a curve whose first
    derivative is 0, 1/x at x = 0 has the derivative 0 / 0.)"""

    def extended(levels):
        moving = [(i, a) for i in range(k + 1) for a in range(len(levels[0]))
                  if i == 0 or not _plain_zero(levels[i + 1][a])]

        def rebuild(boxes):
            out = [list(level) for level in levels]
            for (i, a), box in zip(moving, boxes):
                out[i][a] = box
            return out

        values, out_def, tangents = _traced_outputs(
            JVPNode, [(levels[i + 1][a],) for i, a in moving], f,
            [levels[i][a] for i, a in moving], rebuild, lambda node: node.g,
            lambda leaf: vspace(leaf).zeros())
        values = tree_unflatten(out_def, values)
        tangents = tree_unflatten(out_def, tangents)
        return (*values, tangents[-1])

    return extended
