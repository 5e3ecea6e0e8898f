"""taylor: jet is nested forward mode, on generated programs.

For a program ``f(x, s)`` and a random curve x(t) = x + c_1 t + ... + c_k t^k (k from 1
to 4), ``chainrule.jet`` gives the derivatives of t -> f(x(t), s) at 0 that ``jvp`` nested
k times gives (to 1e-9 relative for float64, 1e-3 for float32, nan where it is nan), for
every output leaf (at arguments with extreme entries, inf, nan, +-1e308 or subnormal, only
where both are finite: there overflow and underflow make 0 * inf, and the order of the
arithmetic decides between nan and a number; nested forward mode differentiates |x| at
5e-324 to nan through the quotient rule of x / |x|, jet to 0); its primal is the untraced
value to the bit; where nested forward mode raises, jet raises the same exception class; no
call writes into its arguments. For a float32 program, where jet differs from float32's
nested jvp it must agree with nested jvp in float64 at the same point and curve (float32's
nested jvp overflows where jet's recurrences do not: x / y^4 for a small y).

The collapsed Laplacian (``laplacian``: the value once, the first coefficients batched over
the basis directions, one summed second coefficient) of the program's float outputs
contracted to one number equals the sum of the per-direction second derivatives (a jet of
order 2 along each basis direction, a Python loop), to the same tolerances (at arguments
with extreme entries the two sum terms up to 1e308 in other orders, so their values are not
compared there, nor where the program's value is not finite: at a pole the loop's jets
multiply it by other directions' zero coefficients); where the loop raises, it raises the
same exception class. In float32 the two may differ by float32's rounding of terms that
cancel: where they agree in float64 and the collapsed value is within 10 times the loop's
own float32 error of float64's.

Nested jvp uses the same rules as jet wherever a primitive has no Taylor rule of its own,
so an error in a rule's higher orders is in both. For smooth programs (float64, no branch,
kink, rounding or pole among their statements: a third of the cases) each term of order
j + 1 is also compared with the central difference of the term of order j along the curve
(jets at x(+-h), x(+-h/2) and x(+-h/4), h = 1e-3): where the three steps agree to 1 %,
the term must lie within 10 times the difference of h's and h/2's (the Richardson estimate
of the finer one's error, times 7.5) plus 1e-7 times the largest term of order j they
difference.

Beyond the shared hazards: poles (quotients, negative powers) met at an input entry set to
0.0 or -0.0 alone (edge values come with inf and nan, which skip most comparisons), interp
with its points as lists, and products (prod, cumprod, nanprod) at vectors holding two
zeros or more, where rules that divide by x must switch to exact forms.
"""

from __future__ import annotations

import dataclasses
from math import factorial

import numpy as onp

import chainrule
from chainrule._core.pytree import tree_flatten

from . import _programs as programs
from ._compare import Outcome, differences, snapshot, unchanged
from ._programs import Program, Template

NAME = "taylor"
CI_CASES = 40

# random draws differ between jet's one call and nested forward mode's many; float()/int()
# of a traced value is refused in both, so "convert" adds nothing
HAZARDS = {"nonsmooth", "signed_zero", "branch", "loop", "closure", "tuple_answer", "inplace",
           "nested", "index", "mask", "stop_gradient", "tree_out", "alias_out", "edge_values",
           "raise", "try_except"}

# poles at the input's zeros (an edge value): quotients and negative powers, whose
# recurrences divide by 0 there (jet must give nested jvp's infinities, not nan), and
# interp with its points given as lists, as NumPy takes them
_POLES = ("1.0 / {a}", "{s} / {a}", "{a} ** -2", "{b} / ({a} * {a} + 1.0)",
          "np.interp({a}, [-1.0, 0.0, 1.0], (0.0, 1.0, 4.0))")


def _poles(g) -> None:
    programs._assign(g, programs._fmt(g, g.pick(_POLES)))




# the closed-form linalg rules (inv, solve, det, slogdet, cholesky) on a well-conditioned
# matrix of the program's values: 2 I plus a rank-one term of norm <= 0.3
_LINALG = ("np.linalg.solve({m}, {b})", "np.linalg.inv({m}) @ {b}", "np.linalg.det({m}) * {b}",
           "np.linalg.slogdet({m})[1] * {b}", "np.linalg.cholesky({m} @ {m}.T) @ {b}")


def _linalg(g) -> None:
    a, b = g.vec(), g.vec()
    m = g.name("M")
    g.emit(f"{m} = np.outer(np.tanh({a}), np.sin({b})) * (0.3 / n) + 2.0 * np.eye(n)")
    g.emit(f"{g.new_vec()} = {g.pick(_LINALG).format(m=m, b=b)}")


# products (prod, cumprod, nanprod) of vectors that hold zeros, two or more per slice at
# times: their rules divide by x where no entry is zero; at zeros, derivatives of every
# order must still be exact (the second derivative with two zeros was 0)
_PRODUCTS = ("np.prod({a}) * {b}", "np.cumprod({a})", "np.cumprod({a}[::-1])[::-1] * {b}",
             "np.prod(np.reshape(np.concatenate([{a}, {b}]), (2, n)), axis=0)",
             "np.nanprod(x) * {b}", "np.cumprod(x * {b})", "np.prod(x) + {a}",
             "np.cumprod(np.stack([x, {a}]), axis=1)[1]")


def _products(g) -> None:
    programs._assign(g, programs._fmt(g, g.pick(_PRODUCTS)))


OWN = [Template("poles", _poles, 0.5), Template("linalg", _linalg),
       Template("products", _products, 0.7)]

# the hazards of programs smooth along every curve (at zeros of x included): their jet
# terms are also checked against central differences of the terms one order below
SMOOTH = frozenset({"products", "linalg", "index", "inplace", "tree_out", "alias_out",
                    "nested"})


@dataclasses.dataclass
class Case:
    program: Program
    args: list
    order: int
    curves: list  # per argument tuple, the k coefficients c_1..c_k

    def __str__(self) -> str:
        return (f"{self.program}\n# called at {self.args!r}\n# order {self.order}, curve "
                f"coefficients {self.curves!r}")


def generate(rng: onp.random.Generator) -> Case:
    # (a third of the programs smooth: their terms are compared with differences too)
    hazards = SMOOTH if rng.random() < 0.3 else HAZARDS | {"poles", "linalg", "products"}
    program = programs.generate(rng, hazards, extra=OWN)
    args = program.inputs(rng, 2)
    if rng.random() < 0.3:  # a singular point alone (edge values come with inf and nan)
        x, _ = args[0]
        x[rng.integers(program.n)] = rng.choice([0.0, -0.0])
    if "products" in program.hazards and rng.random() < 0.5:  # zeros in a product's slice
        x, _ = args[-1]
        zeros = rng.choice(program.n, size=int(rng.integers(2, program.n + 1)), replace=False)
        x[zeros] = rng.choice([0.0, -0.0], size=zeros.size)
    order = int(rng.integers(1, 5))
    curves = [[rng.standard_normal(program.n).astype(program.dtype) for _ in range(order)]
              for _ in args]
    return Case(program, args, order, curves)


def check(case: Case) -> list[str]:
    out: list[str] = []
    for (x, s), curve in zip(case.args, case.curves):
        out += _check_at(case.program, x, s, case.order, curve)
        out += _check_collapsed(case.program, x, s)
        if case.program.hazards <= SMOOTH and onp.dtype(case.program.dtype) == onp.float64:
            out += _check_differences(case.program, x, s, case.order, curve)
    return out


def _terms_at(p: Program, x, s, curve: list, tau: float) -> list | None:
    """[f, d/dt f, ..., d^k/dt^k f] of t -> f(x(t)) at t = tau, by jet (the curve's own
    derivatives at tau as its terms), one flat float64 array per order; None where a call
    raises or a value is not finite."""
    k = len(curve)
    point = x + sum(c * tau ** (m + 1) for m, c in enumerate(curve))
    terms = [sum(c * (factorial(m + 1) / factorial(m + 1 - i)) * tau ** (m + 1 - i)
                 for m, c in enumerate(curve) if m + 1 >= i) for i in range(1, k + 1)]
    with onp.errstate(all="ignore"):
        got = Outcome.of(lambda: chainrule.jet(lambda z: p.fn(z, s), (point,), (terms,)))
    if got.error is not None:
        return None
    value, series = got.value
    values = [leaf for leaf in tree_flatten(value)[0] if _float_leaf(leaf)]
    flat = tree_flatten(series)[0]
    per_order = [[onp.ravel(onp.asarray(v, dtype=float)) for v in values]]
    leaves = [leaf for leaf in tree_flatten(value)[0]]
    for j in range(k):
        per_order.append([onp.ravel(onp.asarray(flat[n * k + j], dtype=float))
                          for n, leaf in enumerate(leaves) if _float_leaf(leaf)])
    out = [onp.concatenate(order) if order else onp.zeros(0) for order in per_order]
    return out if all(onp.isfinite(o).all() for o in out) else None


def _converging(coarser: onp.ndarray, finer: onp.ndarray, rounding: float) -> onp.ndarray:
    """Where a central difference's changes as its step halves, ``coarser`` then ``finer``,
    shrink as the step squared, as they do where the step resolves the curve (each change
    about 4 times the next), or are both rounding. Three steps agreeing to 1 % do not show
    it: a fast oscillation of small amplitude, which every step averages out alike (case
    1,546 of seed 1414: cos(v) with v = 9781 and v' ~ 1e5 adds 0.4 % to the second
    derivative, -1.20815e11, jet's and mpmath's, which the differences of the first at
    h = 1e-3, 5e-4, 2.5e-4 all miss: -1.203548e11, -1.203545e11, -1.203575e11, changes
    of 2.8e5 then -3.0e6)."""
    with onp.errstate(invalid="ignore", divide="ignore"):
        ratio = coarser / finer
    small = (onp.abs(coarser) <= rounding) & (onp.abs(finer) <= rounding)
    return small | ((ratio >= 2.0) & (ratio <= 8.0))


def _float_leaf(leaf) -> bool:
    return isinstance(leaf, float) or onp.dtype(getattr(leaf, "dtype", object)).kind == "f"


def _check_differences(p: Program, x, s, order: int, curve: list) -> list[str]:
    """Each term of order j + 1 equals the central difference of the term of order j along
    the curve (jet at x(+-h)), for a smooth program: an independent check of the rules'
    higher orders, which nested jvp shares with jet. The difference's error is estimated
    from two steps (h and h/2, Richardson): only a term far beyond it differs, where the
    two steps agree to 1 %."""
    h = 1e-3
    at = {tau: _terms_at(p, x, s, curve, tau)
          for tau in (0.0, h, -h, h / 2, -h / 2, h / 4, -h / 4)}
    if any(v is None for v in at.values()):
        return []
    out = []
    for j in range(order):
        coarse = (at[h][j] - at[-h][j]) / (2 * h)
        fine = (at[h / 2][j] - at[-h / 2][j]) / h
        finer = (at[h / 4][j] - at[-h / 4][j]) / (h / 2)
        want = at[0.0][j + 1]
        # (the differences' rounding scales with the terms they difference: the term at 0
        # is not among them, and where the curve varies far below the step it is far larger
        # than theirs, case 4,049 of seed 0: a bump of width 1e-8 that h = 1e-3 steps over,
        # which an allowance scaled by the term at 0 passed as resolved)
        scale = 1.0 + max(onp.abs(at[tau][j]).max(initial=0.0) for tau in at if tau)
        error = onp.abs(coarse - fine)  # (4/3 of the finer difference's error, or more)
        # (where two steps disagree by 1 % the curve varies on the step's scale: the
        # differences resolve nothing there, and are not compared. Three steps: two can
        # agree by chance on a curve oscillating far faster than they step, case 6,612 of
        # seed 0: sin(v) with v' = 2e5, whose differences at h and h/2 agreed to 0.4 %)
        resolved = ((error <= 1e-2 * onp.abs(fine) + 1e-7 * scale)
                    & (onp.abs(fine - finer) <= 1e-2 * onp.abs(finer) + 1e-7 * scale)
                    & _converging(coarse - fine, fine - finer, 1e-7 * scale))
        bad = resolved & (onp.abs(want - fine) > 10 * error + 1e-7 * scale)
        if bad.any():
            i = int(onp.argmax(bad))
            out.append(f"derivative {j + 1}, output entry {i}: jet {want[i]!r}, the central "
                       f"difference of derivative {j} along the curve {fine[i]!r} (with a "
                       f"step twice as long {coarse[i]!r})")
    return out


def _contracted(p: Program, s):
    """z -> the program's float output leaves at (z, s), contracted with fixed weights."""
    import chainrule.numpy as anp

    def g(z):
        p.reset()
        total = 0.0
        for leaf in tree_flatten(p.fn(z, s))[0]:
            if not isinstance(leaf, float | complex) and (
                    not hasattr(leaf, "dtype") or onp.dtype(leaf.dtype).kind not in "fc"):
                continue
            weights = onp.cos(onp.arange(anp.size(leaf))).reshape(anp.shape(leaf))
            total = total + anp.sum(anp.real(leaf) * weights)
        return total

    return g


def _check_collapsed(p: Program, x, s) -> list[str]:
    g = _contracted(p, s)
    copies = snapshot([x])
    collapsed = Outcome.of(lambda: chainrule.laplacian(g)(x))
    basis = onp.eye(onp.size(x), dtype=x.dtype)

    def per_direction():
        total = 0.0
        for e in basis:
            _, (_, second) = chainrule.jet(g, (x,), ([e.reshape(x.shape), 0 * e],))
            total = total + second
        return total

    reference = Outcome.of(per_direction)
    out = [f"laplacian: {d}" for d in unchanged([x], copies)]
    if collapsed.error is not None or reference.error is not None:
        if type(collapsed.error) is not type(reference.error):
            out.append(f"laplacian raised {collapsed.error!r} where the per-direction jets "
                       f"raised {reference.error!r}")
        return out
    if _extreme(x) or not _finite_value(g, x):
        # (at a pole the per-direction jets multiply its infinite value by the other
        # directions' zero coefficients, nan; the collapsed pass never forms those products)
        return out
    small = onp.dtype(p.dtype) == onp.float32
    problem = _far(onp.asarray(collapsed.value), onp.asarray(reference.value),
                   1e-3 if small else 1e-9, False)
    if problem and small and _float32_rounding(p, x, s, collapsed.value, reference.value):
        problem = ""
    if problem:
        out.append(f"laplacian: {problem} (the per-direction jets' sum)")
    return out


def _float32_rounding(p: Program, x, s, collapsed, reference) -> bool:
    """Whether float32's collapsed Laplacian and per-direction sum differ by float32's
    rounding alone: in float64 the two agree (to 1e-9), and float32's collapsed value is no
    farther from float64's sum than 10 times float32's own sum is. (Case 2,985 of seed 0:
    sum(tanh(v)) - sum(v7) + grad(t * sum(v7)), whose terms of 1.6e7 cancel to a Laplacian
    of 0: float32 answers 0.41 and -0.12, float64 0 both ways, the per-direction sum's error
    of 0.12 being float32's at 1.6e7.)"""
    x64, s64 = _widened(x, s)
    g = _contracted(p, s64)
    basis = onp.eye(onp.size(x))

    def per_direction():
        return sum(chainrule.jet(g, (x64,), ([e.reshape(x.shape), 0 * e],))[1][1]
                   for e in basis)

    with onp.errstate(all="ignore"):
        collapsed64 = Outcome.of(lambda: chainrule.laplacian(g)(x64))
        reference64 = Outcome.of(per_direction)
    if collapsed64.error is not None or reference64.error is not None:
        return False
    want = float(reference64.value)
    if _far(onp.asarray(collapsed64.value), onp.asarray(want), 1e-9, False):
        return False
    return bool(abs(float(collapsed) - want) <= 10 * abs(float(reference) - want))


def _finite_value(g, x) -> bool:
    with onp.errstate(all="ignore"):
        value = Outcome.of(lambda: g(x))
    return value.error is None and bool(onp.all(onp.isfinite(value.value)))


def _check_at(p: Program, x, s, order: int, curve: list) -> list[str]:
    copies = snapshot([x, *curve])
    p.reset()
    plain = Outcome.of(lambda: p.fn(x, s))
    p.reset()
    terms = [c * factorial(j + 1) for j, c in enumerate(curve)]
    jet = Outcome.of(lambda: chainrule.jet(lambda z: p.fn(z, s), (x,), (terms,)))
    reference = Outcome.of(lambda: _nested_jvp(p, x, s, curve, order))
    out = unchanged([x, *curve], copies)
    if jet.error is not None or reference.error is not None:
        if type(jet.error) is not type(reference.error):
            out.append(f"jet raised {jet.error!r} where nested jvp raised {reference.error!r}")
        return out
    value, series = jet.value
    if plain.error is None:
        out += [f"jet's value: {d}" for d in
                differences(plain, Outcome(value=value), types=False)]
    flat = tree_flatten(series)[0]
    small = onp.dtype(p.dtype) == onp.float32
    overflowing = _extreme(x)
    wide = _Float64Reference(p, x, s, curve, order) if small else None
    for j, want in enumerate(reference.value[1:], start=1):
        want_leaves = tree_flatten(want)[0]
        got_leaves = flat[j - 1::order]
        if len(got_leaves) != len(want_leaves):
            out.append(f"derivative {j}: {len(got_leaves)} leaves, nested jvp {len(want_leaves)}")
            continue
        for n, (got, w) in enumerate(zip(got_leaves, want_leaves)):
            problem = _far(onp.asarray(got), onp.asarray(w), 1e-3 if small else 1e-9,
                           overflowing)
            if problem and wide is not None and wide.agrees(j, n, got, overflowing):
                problem = ""
            if problem:
                out.append(f"derivative {j}, output leaf {n}: {problem}")
    return out


def _widened(x, s) -> tuple:
    """A float32 program's arguments in float64 (s a Python float: weak, as NumPy types it)."""
    return x.astype(onp.float64), float(s)


class _Float64Reference:
    """Nested jvp of a float32 program at the same point and curve in float64, computed
    when float32's differs from jet: nested jvp's float32 intermediates overflow or cancel
    where jet's do not (case 1,197 of seed 0: t / exp(-v^2) with exp(-v^2) = 1.4e-18, whose
    third derivative nested forward mode divides by exp(-v^2)^4, 0 in float32, and answers
    -inf, where jet's recurrence divides by exp(-v^2) alone and answers -3.2698e20, as float64
    does). Jet's float32 coefficients agreeing with float64's to float32's tolerance are
    right; where float64's run raises or has other leaves, nothing is excused."""

    def __init__(self, p: Program, x, s, curve: list, order: int):
        self.p, self.order = p, order
        (self.x, self.s), self.curve = _widened(x, s), [c.astype(onp.float64) for c in curve]
        self.value = None

    def agrees(self, j: int, n: int, got, overflowing: bool) -> bool:
        if self.value is None:
            with onp.errstate(all="ignore"):
                self.value = Outcome.of(lambda: _nested_jvp(self.p, self.x, self.s, self.curve,
                                                            self.order))
        if self.value.error is not None:
            return False
        leaves = tree_flatten(self.value.value[j])[0]
        return n < len(leaves) and not _far(onp.asarray(got, dtype=onp.float64),
                                            onp.asarray(leaves[n], dtype=onp.float64),
                                            1e-3, overflowing)


def _nested_jvp(p: Program, x, s, curve: list, order: int) -> list:
    """[f(x(0)), d/dt f(x(t)), ..., d^order/dt^order] at t = 0 by nesting chainrule.jvp."""
    def along(t):
        step, power = 0.0, t
        for c in curve:
            step = step + c * power
            power = power * t
        z = x + -((-step) + 0.0)  # the step is -0.0 at t = 0: x + -0.0 is x, -0.0 included
        z = z.astype(x.dtype)  # (t's powers are float64 NumPy scalars; float32 stays float32)
        p.reset()
        return p.fn(z, s)

    # the value too from a traced call (a plain one would not refuse float() of x)
    derivatives, h = [chainrule.jvp(along, (0.0,), (1.0,))[0]], along
    for _ in range(order):
        h = (lambda inner: lambda t: chainrule.jvp(inner, (t,), (1.0,))[1])(h)
        derivatives.append(h(0.0))
    return derivatives


def _extreme(x) -> bool:
    magnitude = onp.abs(x)
    return bool(not onp.all(onp.isfinite(x)) or onp.any(magnitude > 1e300)
                or onp.any((magnitude > 0) & (magnitude < 1e-300)))


def _far(got, want, rtol: float, overflowing: bool) -> str:
    if got.shape != want.shape:
        return f"shape {got.shape}, nested jvp {want.shape}"
    if overflowing:
        both = onp.isfinite(got) & onp.isfinite(want)
        got, want = got[both], want[both]
    if not onp.array_equal(onp.isnan(got), onp.isnan(want)):
        return f"nan at other places: {got!r} vs nested jvp {want!r}"
    finite = onp.isfinite(want) & onp.isfinite(got)
    if not onp.array_equal(got[~finite & ~onp.isnan(want)], want[~finite & ~onp.isnan(want)]):
        return f"infinities differ: {got!r} vs nested jvp {want!r}"
    scale = max(1.0, float(onp.max(onp.abs(want[finite]), initial=0.0)))
    if not onp.allclose(got[finite], want[finite], rtol=rtol, atol=rtol * scale):
        return f"{got!r} vs nested jvp {want!r}"
    return ""
