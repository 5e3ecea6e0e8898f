"""Rolling: a run of instructions that repeats (a loop of the user's code, traced once per
iteration, and its backward pass) becomes one loop of the emitted program.

Python compiles some 10 µs per emitted line, so a 1000-step loop, its backward pass and
a guard per step would cost more to compile than the trace itself. A run is rolled where
each iteration makes the same instructions (same code, same kinds of operands) and every
operand of an iteration is, in the same way in every iteration:

- ``local``: made earlier in the same iteration (offset ``k``);
- ``carry``: made by the previous iteration (offset ``k``), by ``init`` in the first;
- ``inv``: the same instruction before the run;
- ``seq``: one instruction before the run per iteration (the forward values a backward
  pass reads, in reverse order; stored in a list by the loop that made them): a list,
  or a ``Stride`` where ``_fold`` found them kept by one loop;
- ``const``: the same constant, or ``cseq``: one constant per iteration (``xs[t]``).

The rolled loop computes the same calls in the same order as the straight code, so it
answers the same bits.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._core.repeats import Starts, next_same, run_at

MIN_REPEATS = 4  # iterations: fewer stay straight-line code
MIN_INSTRUCTIONS = 48  # instructions in the whole run: a shorter one compiles fast anyway
CANDIDATES = 16  # candidate periods per position (see ``run_at``)


class Stride(NamedTuple):
    """The values ``loop`` keeps for body ``offset`` at list indices ``start + step*i``
    (see ``_render.Plan._stored``: a carried offset's list starts with its first value);
    with ``head`` or ``tail`` (instructions of straight code read before or after them:
    a backward pass reads its forward values reversed, ending with the first iteration's),
    ``count`` of them, at steps of 1 or -1."""

    loop: Loop
    offset: int
    start: int
    step: int
    count: int = 0
    head: tuple = ()
    tail: tuple = ()


class Loop:
    """``repeats`` iterations of ``body`` (the first iteration's instructions);
    ``operands[k][j]``: how operand j of offset k reads, one of the forms above."""

    def __init__(self, body: list, repeats: int, operands: list[list[tuple]], inits: dict):
        self.body = body
        self.repeats = repeats
        self.operands = operands
        self.inits = inits  # offset -> what its carried value is before the first iteration
        self.stored: dict[int, str] = {}  # offset -> the list its values are kept in
        self.exported: set[int] = set()  # offsets whose last value is read after the loop


def roll(instrs: list) -> list:
    """``instrs`` as units: an instruction (straight code) or a ``Loop``. Each rolled
    instruction gets ``loop``, ``offset`` and ``iteration``."""
    min_repeats, min_instructions = MIN_REPEATS, MIN_INSTRUCTIONS  # (tests lower them)
    ids: dict = {}
    keys = [ids.setdefault(ins.key, len(ids)) for ins in instrs]  # (ints compare fast)
    following = next_same(keys, array=True)
    nxt = following.tolist()
    units: list = []
    i = 0
    n = len(instrs)
    # (a run to roll has min_repeats iterations, and min_instructions in all)
    stretch = lambda period: np.maximum((min_repeats - 1) * period, min_instructions - period)  # noqa: E731,E501
    starts = Starts(keys, following, CANDIDATES, stretch)
    while True:
        start = starts.after(i)  # (not inside a loop made)
        units += instrs[i:start]  # (no run starts among these: straight code)
        i = start
        if i == n:
            break
        period, repeats = run_at(keys, i, nxt, CANDIDATES)
        loop = None
        if repeats >= min_repeats and period * repeats >= min_instructions:
            loop = _verified(instrs, i, period, repeats)
        if loop is None or loop.repeats < min_repeats or \
                period * loop.repeats < min_instructions:
            units.append(instrs[i])
            i += 1
            continue
        for r in range(loop.repeats):
            for k in range(period):
                ins = instrs[i + r * period + k]
                ins.loop, ins.offset, ins.iteration = loop, k, r
        units.append(loop)
        i += period * loop.repeats
    return units


def _verified(instrs: list, start: int, period: int, repeats: int) -> Loop | None:
    """The loop of the first iterations whose operands all read in one form: each
    operand is checked over every iteration at once (positions as arrays), and the first
    iteration where one does not fit ends the loop."""
    bases = start + period * np.arange(repeats)
    done = repeats
    columns = []  # (offset, slot, the operand in each iteration, positions relative to bases)
    for k in range(period):
        rows = [instrs[start + r * period + k].slots for r in range(repeats)]
        for j, first in enumerate(rows[0]):
            column = [row[j] for row in rows]
            if type(first) is tuple:
                columns.append((k, j, column, None))
                continue
            pos = np.fromiter([q.pos for q in column], np.int64, repeats)
            rel = pos - bases
            if rel[0] >= 0:  # made earlier in the iteration, in every one
                bad = rel != rel[0]
            elif repeats > 1 and -period <= rel[1] < 0 and pos[0] < start:
                bad = rel != rel[1]  # made by the previous iteration
                bad[0] = False
            else:  # made before the loop
                bad = pos >= start
            cut = int(bad.argmax()) if bad.any() else repeats
            done = min(done, cut)
            columns.append((k, j, column, rel))
    if done < 2:
        return None
    operands: list[list] = [[None] * len(ins.slots) for ins in instrs[start:start + period]]
    inits: dict[int, object] = {}
    for k, j, column, rel in columns:
        column = column[:done]
        if rel is None:
            first = column[0]
            same = all(c is first or (c[1] == first[1] and c[2] == first[2]) for c in column)
            form = ("const", first) if same else ("cseq", column)
        elif rel[0] >= 0:
            form = ("local", int(rel[0]))
        elif column[1].pos >= start:
            offset = int(rel[1]) + period
            form = ("carry", offset, column[0])
            if inits.setdefault(offset, column[0]) is not column[0]:
                return None  # two operands carry one value from different starts
        else:
            first = column[0]
            same = all(q is first for q in column)
            form = ("inv", first) if same else ("seq", column)
        operands[k][j] = form
    return Loop(instrs[start:start + period], done, operands, inits)
