"""Repeated structure in a record: a loop of the user's code leaves the same operations
in the same order once per iteration. ``explain`` folds such runs into one block
("× 1000"); ``jit`` rolls them back into a loop of the emitted program."""

from __future__ import annotations

from collections.abc import Sequence


def next_same(keys: Sequence) -> list[int]:
    """For each position, the next position holding an equal key, or -1."""
    following: dict = {}
    nxt = [-1] * len(keys)
    for i in range(len(keys) - 1, -1, -1):
        nxt[i] = following.get(keys[i], -1)
        following[keys[i]] = i
    return nxt


def run_at(keys: Sequence, i: int, nxt: list[int], candidates: int = 1) -> tuple[int, int]:
    """``(period, repeats)`` of the run starting at ``i``: ``keys[i:i + period]`` occurs
    ``repeats`` times in a row (``repeats`` is 1 where no period repeats). The candidate
    periods are the distances to the next ``candidates`` positions holding ``keys[i]``
    (one is enough where a key occurs once per iteration; an iteration that makes the same
    operation several times needs more); the run covering most keys wins, the shorter
    period on a tie."""
    best_period, best_repeats = 1, 1
    j = nxt[i]
    n = len(keys)
    for _ in range(candidates):
        if j < 0:
            break
        period = j - i
        head = min(period, 8)  # (most candidates differ early: no copy of a long pattern)
        if keys[i:i + head] != keys[j:j + head]:
            j = nxt[j]
            continue
        repeats = 1
        pattern = keys[i:j]
        start = j
        while start + period <= n and keys[start:start + period] == pattern:
            repeats += 1
            start += period
        if repeats > 1 and period * repeats > best_period * best_repeats:
            best_period, best_repeats = period, repeats
        j = nxt[j]
    return best_period, best_repeats
