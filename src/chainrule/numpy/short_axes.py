"""Reductions over a short last axis, column by column, with NumPy's bits.

NumPy reduces over the last axis of a C-ordered array one row at a time, one call of its
inner loop per row: on short rows (kmeans' n x k distances, gmm's k x n x d squares
summed over d) that call's set-up is most of the time. Taken a column at a time, each
call is one long loop over the rows (at 25,000 x 10: a sum 359 -> 129 µs, a minimum
30 -> 8 µs at 1000 x 10):

- ``lane_extreme``: min and max. An extreme is one of its elements, so only which zero
  (-0.0 or 0.0) and which nan it answers could depend on the order: a row answering zero
  is NumPy's own reduce of that row (its reduce of a float64 row of 9 to 13 entries
  compares in another order: [-0, -0, -0, -0, 0, -0, -0, 0, 0]'s minimum is -0.0, column
  after column 0.0), an answer with a nan NumPy's reduce of all; ``exact_lane_extremes``
  checks this NumPy's zeros on shorter patterns.
- ``lane_sum``: a sum, added as NumPy adds each row: in order under 8 entries; from 8, its
  pairwise sum's eight running sums (one per position modulo 8, over the whole blocks of
  8) added as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the rest in order;
  all added to 0.0 (a sum of -0.0s is 0.0). ``exact_lane_sum`` checks this NumPy's order,
  signed zeros, nan and inf; an answer that is nan is NumPy's own (which nan a row of
  two answers depends on the order of each addition's operands).

A floating-point error in a column's call (run in ``strict()``: it raises where the
caller's error state hears of it) is told by NumPy's own call instead, once, as NumPy
tells it. chainrule.numpy's sum, min and max (and amin, amax) take these forms where they
apply (``with_short_axes``), untraced and traced alike; chainrule.jit's programs call
them too (jit/_kernels.py).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable

import numpy as _np

from .._user_code.errstate import strict

MAX_LANES = 16  # (at most this many entries on the axis: a call per entry)
LANE_SUM_MIN_SIZE = 1024  # (below these NumPy's own reduce costs less)
LANE_EXTREME_MIN_SIZE = 512
_FLOATS = (_np.dtype(_np.float64), _np.dtype(_np.float32))
_ndarray = _np.ndarray


def short_last_axis(shape: tuple, dtype, axis, min_size: int) -> bool:
    """Whether a reduction of an array of ``shape`` and ``dtype`` over ``axis`` (an int) is
    one these forms take, its layout aside: a float array of ``min_size`` entries or more,
    reduced over its last axis of 2 to ``MAX_LANES`` entries, not its only one."""
    return len(shape) >= 2 and (axis == -1 or axis == len(shape) - 1) and \
        2 <= shape[-1] <= MAX_LANES and math.prod(shape) >= min_size and dtype in _FLOATS


def applies(a, axis, min_size: int) -> bool:
    """Whether a reduction of the ndarray ``a`` over ``axis`` has a short-axis form: a
    ``short_last_axis`` one of a C-ordered array."""
    return short_last_axis(a.shape, a.dtype, axis, min_size) and a.flags.c_contiguous


def _in_order(ufunc: _np.ufunc, a: _ndarray) -> _ndarray:
    """``ufunc`` applied along the last axis column after column:
    ``ufunc(...ufunc(ufunc(a[..., 0], a[..., 1]), a[..., 2])..., a[..., -1])``."""
    out = ufunc(a[..., 0], a[..., 1])
    for c in range(2, a.shape[-1]):
        ufunc(out, a[..., c], out=out)
    return out


def lane_extreme(ufunc: _np.ufunc, a: _ndarray) -> _ndarray:
    """``ufunc.reduce(a, -1)`` (``ufunc``: minimum or maximum), column after column where
    ``exact_lane_extremes`` holds, a row answering zero NumPy's reduce of it; else (an
    answer that is nan) NumPy's reduce."""
    if exact_lane_extremes(a.dtype):
        out = _in_order(ufunc, a)
        # (nan first: comparing a signaling nan with zero would tell of an invalid value
        # NumPy's call does not)
        if not _np.isnan(out).any():
            # a nonzero number has one bit pattern; a zero answer's sign is the order's:
            # NumPy's reduce of those rows alone, each row reduced as in the whole array
            # (kmeans' centroids are points: a few exact zeros among 1000 rows)
            zero = out == 0
            if zero.any():
                out[zero] = ufunc.reduce(a[zero], -1)
            return out
    return ufunc.reduce(a, -1)


def lane_sum(a: _ndarray) -> _ndarray:
    """``np.add.reduce(a, -1)``, lane by lane where ``exact_lane_sum`` holds, else (or
    where an addition errs in ``strict()``, or an answer is nan: of nan and -nan, a sum
    is either, as its additions order their operands, and NumPy's compiled pairwise sum
    orders them otherwise than its array add) NumPy's own."""
    if exact_lane_sum(a.dtype):
        try:
            with strict():
                total = _lanes_added(a, a.shape[-1])
            if not _np.isnan(total).any():
                return total
        except FloatingPointError:
            pass  # NumPy's call tells of it (once, in the caller's state)
    # (np.sum itself, not add.reduce: its warning then names NumPy's line, as np.sum's
    # does, which a filter by module (``module="numpy"``) or a once-per-line registry sees)
    return _np.sum(a, -1)


def _lanes_added(a: _ndarray, n: int) -> _ndarray:
    if n < 8:
        total = _in_order(_np.add, a)
    else:
        blocks = n - n % 8
        if blocks > 8:
            r = [_np.add(a[..., j], a[..., 8 + j]) for j in range(8)]
            for i in range(16, blocks, 8):
                for j in range(8):
                    _np.add(r[j], a[..., i + j], out=r[j])
        else:
            r = [a[..., j] for j in range(8)]
        total, half = _np.add(r[0], r[1]), _np.add(r[2], r[3])
        _np.add(total, half, out=total)
        other = _np.add(r[4], r[5])
        _np.add(other, _np.add(r[6], r[7], out=half), out=other)
        _np.add(total, other, out=total)
        for c in range(blocks, n):
            _np.add(total, a[..., c], out=total)
    _np.add(total, 0.0, out=total)
    return total


@functools.cache
def exact_lane_sum(dtype) -> bool:
    """Whether this NumPy's ``add.reduce`` over a short last axis of ``dtype`` gives
    ``_lanes_added``'s bits: checked once, on sums whose order shows in their last bits,
    with signed zeros, nan and inf."""
    rng = _np.random.default_rng(37)
    with _np.errstate(all="ignore"):
        for n in range(2, MAX_LANES + 1):
            a = (rng.standard_normal((256, n)) *
                 _np.exp2(rng.integers(-30, 30, (256, n)))).astype(dtype)
            a[0] = -0.0
            a[1, 0] = -0.0
            a[2, 0], a[3, -1], a[4, :2] = _np.nan, -_np.inf, [_np.inf, -_np.inf]
            if _np.add.reduce(a, -1).tobytes() != _lanes_added(a, n).tobytes():
                return False
    return True


@functools.cache
def exact_lane_extremes(dtype) -> bool:
    """Whether this NumPy's minimum.reduce and maximum.reduce over a short last axis
    answer the column-by-column extremes' bits: checked once per dtype, on every width,
    with rows of mixed zeros (-0.0 and 0.0 in every pattern over six entries)."""
    rng = _np.random.default_rng(43)
    patterns = _np.arange(64)[:, None] >> _np.arange(6)[None, :] & 1
    for n in range(2, MAX_LANES + 1):
        zeros = _np.where(patterns[:, _np.arange(n) % 6] == 1, -0.0, 0.0).astype(dtype)
        a = _np.concatenate([rng.standard_normal((64, n)).astype(dtype), zeros])
        for ufunc in (_np.minimum, _np.maximum):
            if ufunc.reduce(a, -1).tobytes() != _in_order(ufunc, a).tobytes():
                return False
    return True


def with_short_axes(fun: Callable, ufunc: _np.ufunc) -> Callable:
    """``fun`` (np.sum: ``ufunc`` add; np.min, np.max and their aliases: minimum,
    maximum), called as ``fun(a, axis)``, by its short-axis form where one applies."""
    summing = ufunc is _np.add
    min_size = LANE_SUM_MIN_SIZE if summing else LANE_EXTREME_MIN_SIZE

    def raw(a, axis=None, *args, **kwargs):
        if type(axis) is int and not args and not kwargs and type(a) is _ndarray and \
                applies(a, axis, min_size):
            return lane_sum(a) if summing else lane_extreme(ufunc, a)
        return fun(a, axis, *args, **kwargs)

    raw.__name__ = raw.__qualname__ = fun.__name__
    raw.__doc__ = fun.__doc__
    raw.__signature__ = inspect.signature(fun)  # (jit binds its calls' arguments by it)
    return raw


SHORT_AXES = {_np.sum: _np.add, _np.min: _np.minimum, _np.amin: _np.minimum,
              _np.max: _np.maximum, _np.amax: _np.maximum}
