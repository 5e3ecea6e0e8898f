"""Repeated structure in a record: a loop of the user's code leaves the same operations
in the same order once per iteration. ``explain`` folds such runs into one block
("× 1000"); ``jit`` rolls them back into a loop of the emitted program."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import count

import numpy as _np


def numbered(keys: Sequence) -> list[int]:
    """The keys as numbers, equal where they are equal (a key's first position: one
    lookup per key)."""
    return list(map({}.setdefault, keys, count()))


def next_same(keys: Sequence, numbers: bool = False, array: bool = False):
    """For each position, the next position holding an equal key, or -1, as a list (an
    int64 array where ``array``; ``numbers``: the keys are ``numbered`` already, a list or
    an int64 array)."""
    codes = _np.asarray(keys if numbers else numbered(keys), _np.int64)
    order = _np.argsort(codes, kind="stable")  # equal keys together, in order of position
    same = codes[order[1:]] == codes[order[:-1]]
    nxt = _np.full(len(keys), -1, _np.int64)
    nxt[order[:-1][same]] = order[1:][same]
    return nxt if array else nxt.tolist()


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
        if best_repeats > 1 and period % best_period == 0 and \
                period <= best_period * best_repeats:
            # keys[i:j] repeats the best run's pattern: so does all this period's run,
            # which covers no more than the best one
            j = nxt[j]
            continue
        # (most candidates differ early: their second keys first, then no copy of a long
        # pattern)
        if period > 1 and j + 1 < n and keys[i + 1] != keys[j + 1]:
            j = nxt[j]
            continue
        head = min(period, 8)
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


def run_starts(keys: Sequence, nxt: Sequence, candidates: int, stretch: Callable,
               lo: int = 0, hi: int | None = None) -> list[int]:
    """The positions where ``run_at`` may find a run long enough for the caller, found for
    all positions at once: those where, for one of the first ``candidates`` positions
    holding the same key (a candidate period), the next ``stretch(period)`` keys equal
    those a period later (``stretch``: of an int64 array). The pairs of positions that
    still agree are narrowed key by key, so a record with few repeats costs little (a
    period many pairs share, as a long loop's, is settled for all of them in one pass
    instead), and ``run_at`` is asked at these positions only. ``period + stretch(period)``
    must not decrease as the period grows: then a position whose candidate's stretch runs
    past the record's end has no later candidate that fits either, and is dropped.
    ``lo``, ``hi``: the positions asked about (the starts among them are the same as the
    whole record's; the keys compared lie anywhere after them)."""
    codes = _np.asarray(keys, _np.int64)
    n = len(codes)
    hi = n if hi is None else hi
    following = _np.asarray(nxt, _np.int64)
    possible = _np.zeros(hi - lo, bool)  # (by position less lo, as ``ahead``)
    ahead = following[lo:hi].copy()  # each position's current candidate (-1: none left)
    disagreements: dict = {}  # (see _by_common_periods)
    for tried in range(candidates):
        i = _np.flatnonzero(ahead >= 0)
        if not len(i):
            break
        j = ahead[i]
        i += lo
        last = len(i) <= _FEW  # (then every candidate left of these positions at once)
        if last:
            i, j = _later_candidates(i, j, following, candidates - tried)
        need = stretch(j - i)
        fits = j + need <= n  # (a pair whose stretch runs past the record's end fails,
        ahead[i[~fits] - lo] = -1  # and so do its later candidates: see the docstring)
        i, j, need = i[fits], j[fits], need[fits]
        t, width, common = 1, 1, False
        while len(i):
            if not common and t >= _NARROWED_FIRST:
                # (after a few keys, on pairs that still agree: on a record without loops
                # most pairs differ at once, and a period shared by many pairs before
                # narrowing would cost a pass over the record for little)
                i, j, need = _by_common_periods(codes, i, j, need, possible, disagreements,
                                                lo, hi)
                common = True
                if not len(i):
                    break
            done = t >= need  # (agreed over the whole stretch: a start; no need to go on)
            if done.any():
                possible[i[done] - lo] = True
                i, j, need = i[~done], j[~done], need[~done]
                if not len(i):
                    break
            # offsets t .. t + width - 1 at once, each pair up to its own stretch (the
            # width doubles: most pairs differ at once, a long loop's agree for thousands)
            offsets = t + _np.arange(min(width, int((need - t).max())))
            later = j[:, None] + offsets
            same = (codes[_np.minimum(i[:, None] + offsets, n - 1)]
                    == codes[_np.minimum(later, n - 1)])
            same &= later < n  # (i < j: where j's offset is inside, so is i's)
            same |= offsets >= need[:, None]
            agree = same.all(axis=1)
            i, j, need = i[agree], j[agree], need[agree]
            t += len(offsets)
            width = min(2 * width, 256)
        if last:
            break
        # (a position found possible needs no further candidate: on a long loop the first
        # candidate finds nearly all of them)
        ahead = _np.where((ahead >= 0) & ~possible, following[_np.maximum(ahead, 0)], -1)
    return (_np.flatnonzero(possible) + lo).tolist()


class Starts:
    """``run_starts`` asked as a caller walks the record from its start: ``after(i)`` is
    the first start at ``i`` or later (``len(keys)`` where none is), found a window of
    positions at a time, each twice as wide as the one before, and the next one from the
    place asked (a caller skips the runs it finds: a record that is mostly a few long
    loops costs a few windows instead of a pass over the record per candidate)."""

    def __init__(self, keys, nxt, candidates: int, stretch: Callable, width: int = 4096):
        self.keys, self.nxt = _np.asarray(keys, _np.int64), _np.asarray(nxt, _np.int64)
        self.candidates, self.stretch, self.width = candidates, stretch, width
        self.found: list[int] = []
        self.next = 0  # (the first of ``found`` not asked yet)
        self.hi = 0  # (the end of the window ``found`` is of)

    def after(self, i: int) -> int:
        n = len(self.keys)
        while True:
            found, k = self.found, self.next
            while k < len(found) and found[k] < i:
                k += 1
            self.next = k
            if k < len(found):
                return found[k]
            lo = max(i, self.hi)
            if lo >= n:
                return n
            self.hi = min(n, lo + self.width)
            self.width *= 2
            self.found = run_starts(self.keys, self.nxt, self.candidates, self.stretch,
                                    lo, self.hi)
            self.next = 0


# keys compared pair by pair before periods many pairs share are settled by a pass over
# the record (``_by_common_periods``)
_NARROWED_FIRST = 32
# positions left: their candidates are tried all in one pass (the last positions of a
# loop, which agree with none, would each cost a pass per candidate)
_FEW = 64


def _later_candidates(i, j, following, left: int) -> tuple:
    """The pairs of positions ``i`` with their candidates ``j`` and the ``left - 1``
    candidates after those (``following``: the next position of the same key)."""
    pairs_i, pairs_j = [i], [j]
    for _ in range(left - 1):
        j = following[j]
        i = i[j >= 0]
        j = j[j >= 0]
        if not len(j):
            break
        pairs_i.append(i)
        pairs_j.append(j)
    return _np.concatenate(pairs_i), _np.concatenate(pairs_j)


_COMMON = 32  # pairs sharing a period: settle them in one pass over the record


def _by_common_periods(codes, i, j, need, possible, disagreements: dict, lo: int,
                      hi: int) -> tuple:
    """Settle the pairs ``(i, j)`` whose period ``j - i`` many pairs share (a loop's):
    for such a period d, the positions p where ``codes[p] != codes[p + d]`` are found in
    one pass over the keys the positions ``lo .. hi - 1`` reach (kept in
    ``disagreements``, by period, for the later candidates), and a pair agrees where none
    lies in ``i + 1 .. i + need - 1``. Marks ``possible`` (by position less ``lo``) and
    answers the other pairs, to narrow."""
    if len(i) < _COMMON:
        return i, j, need  # (no period is shared by that many pairs)
    periods = j - i
    counts = _np.bincount(periods)
    common = _np.flatnonzero(counts >= _COMMON)
    if not len(common):
        return i, j, need
    for d in common.tolist():
        at = _np.flatnonzero(periods == d)
        bad = disagreements.get(d)
        if bad is None:
            # (a pair of period d compares up to its stretch, the same for all of them,
            # and fits in the record)
            top = min(hi - 1 + int(need[at[0]]), len(codes) - d)
            bad = disagreements[d] = lo + _np.flatnonzero(codes[lo:top] != codes[lo + d:top + d])
        starts = i[at]
        ok = bad.searchsorted(starts + 1) == bad.searchsorted(starts + need[at])
        possible[starts[ok] - lo] = True
    rest = counts[periods] < _COMMON
    return i[rest], j[rest], need[rest]
