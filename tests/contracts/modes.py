"""modes: reverse mode, forward mode and finite differences agree; nothing is modified.

For a scalar program ``f(x, s)``: ``grad`` (reverse) and ``jvp`` (forward) give the same
directional derivative to 1e-10 relative, or where the terms of grad·v cancel, to their
rounding (``_compare.dot_spread``): they evaluate the same rules in another order (where
the program's value overflows, only where both are finite: their sums of infinite
intermediates make inf - inf = nan in one order and inf in the other);
where the program is smooth (no branch, kink or rounding among its hazards) both equal a
central difference to 1e-5 relative; the primal value that ``value_and_grad`` reports
is the untraced value to the bit; and no call writes into its arguments.
"""

from __future__ import annotations

import dataclasses

import numpy as onp

import chainrule

from . import _programs as programs
from ._compare import (
    Outcome,
    differences,
    dot_spread,
    overflowed,
    snapshot,
    unchanged,
    within_spread,
)
from ._programs import Program
from ._runner import Refusal

NAME = "modes"
CI_CASES = 1000  # cases of the fixed-seed slice tests/contracts/test_contracts.py runs

# float()/int() of a traced value is refused under grad (clearly), so "convert" is left out
HAZARDS = {"nonsmooth", "branch", "loop", "index", "mask", "stop_gradient", "nested", "inplace",
           "tuple_answer", "signed_zero", "closure", "wide"}
# finite differences see through stop_gradient, so programs with it are not compared to them
SMOOTH = HAZARDS - {"nonsmooth", "branch", "loop", "mask", "tuple_answer", "signed_zero",
                    "closure", "stop_gradient", "wide"}


@dataclasses.dataclass
class Case:
    program: Program
    args: list

    def __str__(self) -> str:
        return f"{self.program}\n# called at {self.args!r}"


def generate(rng: onp.random.Generator) -> Case:
    program = programs.generate(rng, HAZARDS, output="scalar", dtype="float64")
    return Case(program, program.inputs(rng, 2, edges=False))


def check(case: Case) -> list[str]:
    out: list[str] = []
    for x, s in case.args:
        out += _check_at(case.program, x, s)
    return out


def _check_at(p: Program, x, s) -> list[str]:
    copies = snapshot([x])
    p.reset()
    plain = Outcome.of(lambda: p.fn(x, s))
    p.reset()
    both = Outcome.of(lambda: chainrule.value_and_grad(p.fn)(x, s))
    out = unchanged([x], copies)
    if plain.error is None and _refused(both.error):
        return [Refusal(f"grad refused: {both.error}")]
    if plain.error is not None or both.error is not None:
        return out + differences(plain, Outcome(error=both.error) if both.error else
                                 Outcome(value=both.value[0]))
    value, g = both.value
    out += [f"value_and_grad's value: {d}" for d in
            differences(plain, Outcome(value=value), types=False)]
    u = onp.random.default_rng(0).standard_normal(p.n)
    p.reset()
    _, tangent = chainrule.jvp(lambda z: p.fn(z, s), (x,), (u,))
    reverse = float(onp.dot(g, u))
    if not _close(reverse, float(tangent), 1e-10, 1e-12) and not overflowed(
            value, reverse, float(tangent)) and not within_spread(
            float(tangent), reverse, dot_spread(g, u), 1e-10, 1e-12):
        out.append(f"reverse mode {reverse!r} and forward mode {float(tangent)!r} differ")
    if p.hazards <= SMOOTH and onp.isfinite(reverse):
        h = 1e-6
        p.reset()
        fp = p.fn(x + h * u, s)
        p.reset()
        fm = p.fn(x - h * u, s)
        fd = (float(fp) - float(fm)) / (2 * h)
        if not _close(reverse, fd, 1e-5, 1e-6):
            out.append(f"reverse mode {reverse!r} and central differences {fd!r} differ")
    return out


def _refused(error: BaseException | None) -> bool:
    """A clear refusal: chainrule's TypeError naming the traced value it cannot handle, or
    NumPy's error for a traced value written into a plain array (chainrule chains the fix
    to it; issue 38 makes arrays of chainrule's constructors take such writes)."""
    if isinstance(error, ValueError) and "setting an array element with a sequence" in str(
            error):
        return True
    return isinstance(error, TypeError) and "traced" in str(error)


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    if onp.isnan(a) or onp.isnan(b):
        return onp.isnan(a) and onp.isnan(b)
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b))
