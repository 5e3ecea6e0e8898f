"""Fold repeated structure: loop iterations are runs of the same source lines in the same
order, shown once with how many times they ran ("× 1000")."""

from __future__ import annotations

import dataclasses

from .._core.repeats import next_same, run_at

MIN_REPEATS = 2


@dataclasses.dataclass
class Block:
    """``lines`` (Sources, in the order one iteration made them) ran ``repeats`` times in a
    row; ``names[i]`` are the operations iteration i made."""

    lines: list
    repeats: int
    names: list[list[str]]


def fold(steps) -> list[Block]:
    """The operations that have a source line, in the order they were made, grouped into
    consecutive runs of their call sites (one call making several operations counts once).
    A call site is a line and the place on it (``ExplainNode.site``): a loop whose body is
    one line still repeats, a line with several calls does not."""
    runs: list[tuple] = []  # ((source, site), [names]) per run of one call site
    for v in sorted((v for v in steps if v.source is not None), key=lambda v: v.seq):
        key = (v.source, v._node.site)
        if runs and runs[-1][0] == key:
            runs[-1][1].append(v.name)
        else:
            runs.append((key, [v.name]))
    keys = [source for source, _ in runs]
    nxt = next_same(keys)
    blocks: list[Block] = []
    i = 0
    while i < len(keys):
        period, repeats = run_at(keys, i, nxt)
        if repeats >= MIN_REPEATS:
            names = [
                [n for _, ns in runs[i + r * period : i + (r + 1) * period] for n in ns]
                for r in range(repeats)
            ]
            blocks.append(Block(_lines(keys[i : i + period]), repeats, names))
            i += repeats * period
        elif blocks and blocks[-1].repeats == 1 and blocks[-1].lines[-1] == keys[i][0]:
            blocks[-1].names[0] += runs[i][1]  # another call on the same line
            i += 1
        else:
            blocks.append(Block([keys[i][0]], 1, [list(runs[i][1])]))
            i += 1
    return blocks


def _lines(keys: list[tuple]) -> list:
    """The source lines of call sites, each once where it repeats in a row."""
    lines: list = []
    for source, _ in keys:
        if not lines or lines[-1] != source:
            lines.append(source)
    return lines
