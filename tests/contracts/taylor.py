"""taylor: jet is nested forward mode, on generated programs.

For a program ``f(x, s)`` and a random curve x(t) = x + c_1 t + ... + c_k t^k (k from 1
to 4), ``chainrule.jet`` gives the derivatives of t -> f(x(t), s) at 0 that ``jvp`` nested
k times gives (to 1e-9 relative for float64, 1e-3 for float32, nan where it is nan), for
every output leaf (at arguments with extreme entries, inf, nan, +-1e308 or subnormal, only
where both are finite: there overflow and underflow make 0 * inf, and the order of the
arithmetic decides between nan and a number; nested forward mode differentiates |x| at
5e-324 to nan through the quotient rule of x / |x|, jet to 0); its primal is the untraced
value to the bit; where nested forward mode raises, jet raises the same exception class; no
call writes into its arguments.

The collapsed Laplacian (``laplacian``: the value once, the first coefficients batched over
the basis directions, one summed second coefficient) of the program's float outputs
contracted to one number equals the sum of the per-direction second derivatives (a jet of
order 2 along each basis direction, a Python loop), to the same tolerances (at arguments
with extreme entries the two sum terms up to 1e308 in other orders, so their values are not
compared there, nor where the program's value is not finite: at a pole the loop's jets
multiply it by other directions' zero coefficients); where the loop raises, it raises the
same exception class.

Beyond the shared hazards: poles (quotients, negative powers) met at an input entry set to
0.0 or -0.0 alone (edge values come with inf and nan, which skip most comparisons), and
interp with its points as lists.
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


OWN = [Template("poles", _poles, 0.5), Template("linalg", _linalg)]


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
    program = programs.generate(rng, HAZARDS | {"poles", "linalg"}, extra=OWN)
    args = program.inputs(rng, 2)
    if rng.random() < 0.3:  # a singular point alone (edge values come with inf and nan)
        x, _ = args[0]
        x[rng.integers(program.n)] = rng.choice([0.0, -0.0])
    order = int(rng.integers(1, 5))
    curves = [[rng.standard_normal(program.n).astype(program.dtype) for _ in range(order)]
              for _ in args]
    return Case(program, args, order, curves)


def check(case: Case) -> list[str]:
    out: list[str] = []
    for (x, s), curve in zip(case.args, case.curves):
        out += _check_at(case.program, x, s, case.order, curve)
        out += _check_collapsed(case.program, x, s)
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
    if problem:
        out.append(f"laplacian: {problem} (the per-direction jets' sum)")
    return out


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
    for j, want in enumerate(reference.value[1:], start=1):
        want_leaves = tree_flatten(want)[0]
        got_leaves = flat[j - 1::order]
        if len(got_leaves) != len(want_leaves):
            out.append(f"derivative {j}: {len(got_leaves)} leaves, nested jvp {len(want_leaves)}")
            continue
        for n, (got, w) in enumerate(zip(got_leaves, want_leaves)):
            problem = _far(onp.asarray(got), onp.asarray(w), 1e-3 if small else 1e-9,
                           overflowing)
            if problem:
                out.append(f"derivative {j}, output leaf {n}: {problem}")
    return out


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
