"""Faster forms of NumPy calls whose inner loop is short, with NumPy's bits.

NumPy runs a ufunc over the broadcast shape with one C call of its inner loop per run of
the innermost axis that all operands can merge: ``x[None, :, :] - mu[:, None, :]`` of
shape (5, 1000, 2) makes 5000 calls of two elements each, and ``np.sum(a, axis=-1)`` of
that shape 5000 reductions of two. On small axes that per-call cost is most of the
time (GradBench's gmm at d=2). The emitted program writes such calls as these functions,
which do the same arithmetic in other loops:

- ``lanes``: an elementwise ufunc, one call per position of the short last axis (each a
  long loop over the others). Elementwise, so the same values, into an answer laid out
  as NumPy lays out its own (C order: the emitter checks the traced answer's strides).
  A sum or difference of pairs (operands whose last axis is two contiguous entries) is
  one call on the pairs seen as complex numbers, whose parts add as the floats do.
- ``lane_sum``: ``np.add.reduce`` over a short last axis (2 to 16 entries) of a C-ordered
  float array, lane by lane, as NumPy adds each row (``chainrule.numpy.short_axes``,
  which eager ``np.sum`` calls too; ``exact_lane_sum`` checks this NumPy's order once).
- ``pair_sum``: ``np.add.reduce`` over an axis followed by two entries (gmm's d=2
  ``mu`` cotangent, a sum over n of (k, n, 2)): NumPy adds along the axis in order (its
  inner loop is the pair), as the pairs seen as complex numbers add in one long loop
  (the rules' ``pair_sum``, which eager ``unbroadcast`` uses too; ``exact_pair_sum``
  checks it once).
- ``rows_sum``: the same where the later axes hold 3 to 64 entries (gmm's d=10 ``mu``
  cotangent): einsum adds along the axis in order too, in one loop (the rules'
  ``rows_sum``, as eager ``unbroadcast``; ``exact_rows_sum`` checks it once).
- ``lane_extreme``: ``np.minimum.reduce`` / ``np.maximum.reduce`` over a short last axis
  (kmeans' nearest centroid), column after column (``short_axes.lane_extreme``, as eager
  ``np.min`` does; a row answering zero: NumPy's reduce of it; a nan: of all).
- ``indicator_divide``: a boolean array divided by positive integer counts (the
  derivative of ``max``: ``(x == max) / count``), NumPy's division casting the booleans
  through buffers: 1.0 / count copied where the booleans hold, into zeros.
- ``mask_product``: a boolean mask times a number (max's derivative without ties): the
  number times 0.0 everywhere, the number copied where the mask holds.
- ``negated_sum``: a sum over all axes of ``np.negative(x)`` (subtraction's derivative
  for a broadcast operand), as the negated sum of ``x`` where that is the same bits;
  ``negated_rows_sum`` the same for ``rows_sum``'s sums over one axis.
- ``scatter_sum``: the cotangent of a vector indexed by a constant integer array (``det``'s
  minors), ``np.add.at`` into zeros, as ``np.bincount`` with weights (a fifth of the time).
- ``placed``: ``untake`` by a basic index, ``g`` written into zeros without its Python;
  ``placed_added``: a sum from 0.0 plus such a placed row (det's rows of its cotangent),
  the row added where it lies (the rest plus 0.0 is itself: no -0.0 there).
- ``count_true``: ``np.add.reduce`` of a boolean array over all axes, NumPy's count of
  its true entries, by ``np.count_nonzero`` (a tenth of the time).
- ``filled_where``: ``np.where(condition, x, y)`` of a float64 array ``x`` and a Python
  float ``y`` (min's and max's derivatives: the cotangent where the minimum was): ``y``
  filled, ``x`` copied where the condition holds, both copies of bits (a third of the
  time of NumPy's ``where``, which selects through buffers).
- a boolean mask times a constant of ones (a cotangent seeded with ones, times min's
  mask; ``ones_mask`` says where): the mask's 1.0s and 0.0s, ``mask.astype(float)``, a
  cast (a third of the time; the emitter writes it, ``_emit._as_float``).

A floating-point error (overflow, invalid, division by zero; an underflow where the
caller's error state hears of it) raises in them where the caller's error state does not
ignore it: the program then answers ``RAISED`` and the call is evaluated eagerly, which
gives NumPy's own warning or error (a split call would warn once per lane, and a sum's
warning names ``add``, not ``reduce``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._user_code.errstate import strict
from ..numpy import short_axes
from ..numpy.numpy_boxes import array_getitem
from ..numpy.numpy_wrapper import where as _where
from ..numpy.rules._helpers import (
    COMPLEX_OF,
    ROWS_SUMMED_MAX_WIDTH,
    exact_pair_sum,
    exact_rows_sum,
)
from ..numpy.rules._helpers import negated_sum as rules_negated_sum
from ..numpy.rules._helpers import pair_sum as rules_pair_sum
from ..numpy.rules._helpers import rows_sum as rules_rows_sum
from ..numpy.rules.shape import untake
from ..numpy.short_axes import LANE_EXTREME_MIN_SIZE, lane_extreme
from ._staging import ArrayMeta

_GETITEM = array_getitem.fun
WHERE = _where.fun

# lanes: split where the last axis has at most this many entries and the answer at least
# LANES_MIN_SIZE (below it the Python of the split costs more than the calls it saves)
MAX_LANES = 4
LANES_MIN_SIZE = 4096
# outer_lanes: a short vector's columns (at most this many), where the long vector has
# at least OUTER_LANE_ROWS rows per column and one more (fewer: NumPy's call is as fast)
MAX_OUTER_LANES = 8
OUTER_LANE_ROWS = 100
# np.outer by a constant short vector: its entries repeated, times the vector tiled, a
# constant the program keeps, up to this many entries (above: outer_lanes, as fast)
OUTER_TILE_SIZE = 4096
# lane_sum (short_axes.MAX_LANES entries at most) and the other sums' forms from this many
SUM_MIN_SIZE = 1024
# indicator_divide and negated_sum save a pass over the array for some µs of checks
INDICATOR_MIN_SIZE = 16384
NEGATED_MIN_SIZE = 32768
# scatter_sum: np.add.at (one-dimensional) from this many terms, np.bincount below
SCATTER_AT_SIZE = 2048


def lanes(ufunc: np.ufunc, shape: tuple, dtype: np.dtype, *operands: Any,
          out: np.ndarray | None = None) -> np.ndarray:
    """``ufunc(*operands)`` of answer ``shape`` and ``dtype``, one call per position of
    the last axis (``out``: the operand whose memory it writes into, as the emitter's
    ``out=``). An operand whose last axis is 1 (or a scalar) is the same in every call."""
    fresh = out is None
    if fresh:
        out = np.empty(shape, dtype)
    try:
        with strict():
            _split(ufunc, shape[-1], dtype, operands, out)
    except FloatingPointError:
        if not fresh:  # (the lanes written so far are in an operand: the program's error)
            raise
        return ufunc(*operands)  # NumPy's call tells of it (once, in the caller's state)
    return out


def _split(ufunc: np.ufunc, n: int, dtype: np.dtype, operands: tuple, out: np.ndarray):
    if n == 2 and (ufunc is np.add or ufunc is np.subtract) and dtype in COMPLEX_OF and all(
            type(op) is np.ndarray and op.dtype == dtype and op.ndim and op.shape[-1] == 2
            and op.strides[-1] == op.itemsize for op in operands):
        # pairs added or subtracted as complex numbers: part by part, the same operations
        # (gmm's x - mu at d=2), in one call whose inner loop is long and contiguous
        pairs = COMPLEX_OF[dtype]
        ufunc(*[op.view(pairs)[..., 0] for op in operands], out=out.view(pairs)[..., 0])
        return
    columns = [[op] * n if not isinstance(op, np.ndarray) or not op.ndim else
               [op[..., c] for c in range(n)] if op.shape[-1] == n else [op[..., 0]] * n
               for op in operands]
    for c, args in enumerate(zip(*columns)):
        ufunc(*args, out=out[..., c])


def outer_lanes(a: np.ndarray, b: np.ndarray, shape: tuple) -> np.ndarray:
    """``np.outer(a, b)`` of two vectors of one float dtype, ``b`` short: one product of
    ``a`` by each entry of ``b`` (a NumPy scalar of their dtype), written into its column
    of the answer. NumPy's own call loops over the rows, each a call of its inner loop
    over ``b`` (at (840, 3), 5.5 µs against 3; ``lanes`` does the same with the Python
    of any operands, as slow as NumPy's call there)."""
    out = np.empty(shape, a.dtype)
    try:
        with strict():
            for c in range(shape[1]):
                np.multiply(a, b[c], out[:, c])
    except FloatingPointError:  # NumPy's call tells of it (once, in the caller's state)
        return np.multiply(a[:, None], b[None, :])
    return out


def lane_sum(a: np.ndarray, shape: tuple | None = None) -> np.ndarray:
    """``np.add.reduce(a, -1)`` of a C-ordered float array whose last axis is short, lane
    by lane (``short_axes.lane_sum``, as eager ``np.sum`` computes it). ``shape``: the
    answer's (``keepdims``)."""
    total = short_axes.lane_sum(a)
    return total if shape is None else total.reshape(shape)


def pair_sum(a: np.ndarray, outer: int, n: int, shape: tuple) -> np.ndarray:
    """``np.add.reduce`` over one axis of a C-ordered float array whose later axes hold
    two entries, by the rules' ``pair_sum``; where a sum is not finite (einsum's form
    reports no floating-point error), by NumPy's reduce itself, which tells of its
    errors as the call does. ``outer``/``n``: the sizes before the axis and of it;
    ``shape``: the answer's."""
    try:
        with strict():  # (accumulate's form, for one row, raises its errors itself)
            summed = rules_pair_sum(a, outer, n)
        finite = np.isfinite(summed).all()
    except FloatingPointError:
        finite = False
    if not finite:  # NumPy's reduce tells of its errors, once, in the caller's state
        summed = np.add.reduce(a.reshape(outer, n, 2), 1)
    return summed.reshape(shape)


def rows_sum(a: np.ndarray, outer: int, n: int, width: int, shape: tuple) -> np.ndarray:
    """``np.add.reduce`` over one axis of a C-ordered float array whose later axes hold
    3 to ``ROWS_SUMMED_MAX_WIDTH`` entries, by the rules' ``rows_sum``; where a sum is not
    finite (einsum reports no floating-point error), by NumPy's reduce itself, which tells
    of its errors as the call does. ``outer``/``n``/``width``: the sizes before the axis,
    of it and after it; ``shape``: the answer's."""
    summed = rules_rows_sum(a, outer, n, width)
    if not np.isfinite(summed).all():  # NumPy's reduce tells of its errors (caller's state)
        summed = np.add.reduce(a.reshape(outer, n, width), 1)
    return summed.reshape(shape)


def negated_rows_sum(a: np.ndarray, outer: int, n: int, width: int, shape: tuple) -> np.ndarray:
    """``rows_sum`` of ``np.negative(a)`` (subtraction's derivative for an operand
    broadcast over an axis: gmm's mu), as the negated sums of ``a`` where no total is zero
    or not finite (``negated_sum``'s reasoning: the same bits, without -a's pass); else
    the sums of -a, which tell of their errors as NumPy's reduce of -a does."""
    summed = rules_rows_sum(a, outer, n, width)  # (einsum: no floating-point error told)
    if (summed != 0).all() and np.isfinite(summed).all():
        return np.negative(summed, out=summed).reshape(shape)
    return rows_sum(np.negative(a), outer, n, width, shape)


def extreme_code(ufunc: np.ufunc, a: Any, axis: Any, ans: Any, text: str, bind) -> str | None:
    """The code of ``ufunc.reduce(a, axis)`` (min, max: no keepdims, initial or where) by
    ``lane_extreme`` where its axis is a short last one; else None."""
    if type(axis) is tuple and len(axis) == 1:
        axis = axis[0]
    if type(a) is not ArrayMeta or type(ans) is not ArrayMeta or type(axis) is not int or \
            not short_axes.short_last_axis(a.shape, a.dtype, axis, LANE_EXTREME_MIN_SIZE) \
            or ans.dtype != a.dtype or not (c_ordered(a) and c_ordered(ans)
                                            and short_axes.exact_lane_extremes(a.dtype)):
        return None
    return f"{bind(lane_extreme)}({bind(ufunc)}, {text})"


def indicator_divide(b: np.ndarray, c: Any, shape: tuple,
                     out: np.ndarray | None = None) -> np.ndarray:
    """``np.divide(b, c)`` of a boolean array by positive counts (max's derivative: its
    places over their number): 1.0 / c where ``b`` holds, 0.0 elsewhere, as NumPy's
    division gives them, written into zeros. Counts that are not all positive divide
    as NumPy does (0 / 0 is nan, 0 / -1 is -0.0). ``shape``: the answer's."""
    counts = np.asarray(c, np.float64)
    if not (counts > 0).all():
        return np.divide(b, c, out=out)
    share = np.divide(1.0, counts)
    if out is None:
        out = np.zeros(shape)
    else:
        out.fill(0.0)
    np.copyto(out, share, where=b)
    return out


def negated_sum(reduce: Any, x: np.ndarray, *args: Any, **kwargs: Any) -> Any:
    """``reduce(np.negative(x), *args, **kwargs)``, a sum of floats over all axes, as the
    rules' ``negated_sum`` computes it (the negated sum of ``x`` where that is the same
    bits), named here in a program."""
    return rules_negated_sum(reduce, x, *args, **kwargs)


def scatter_sum(g: np.ndarray, index: np.ndarray, shape: tuple,
                into: np.ndarray | None = None) -> np.ndarray:
    """``untake(g, index, shape, float64)`` of a vector (an integer array index's cotangent:
    ``np.add.at`` into zeros). From ``SCATTER_AT_SIZE`` terms, ``np.add.at`` itself on the
    raveled index and terms (the same terms in the same order: NumPy's fast path of
    ``at`` for one-dimensional operands, 0.7 of ``bincount``'s time, where a
    multi-dimensional index takes ``at``'s slow path, 5 times ``bincount``'s). Below, by
    ``np.bincount``, which adds the same terms in the same order from 0.0, in one C loop,
    with less fixed cost. Where either form would have warned (``add.at`` of a raveled
    index raising in ``strict``; ``bincount``'s sums not all finite), ``untake`` itself:
    the fast path's warning names ``add``, the slow path's ``at``. ``into``: 0.0s of
    ``shape`` to add into (a row of a larger array: ``scatter_added``), answered."""
    if index.size >= SCATTER_AT_SIZE:
        out = np.zeros(shape) if into is None else into
        if index.ndim == 1:  # (untake's own call: its warnings, in the caller's state)
            np.add.at(out, index, g)
            return out
        try:
            with strict():
                np.add.at(out, index.ravel(), g.ravel())
            return out
        except FloatingPointError:
            out = untake(g, index, shape, np.dtype(np.float64))
    else:
        out = np.bincount(index.ravel(), weights=g.ravel(), minlength=shape[0])
        # (a short vector's check in Python floats: a fifth of NumPy's isfinite and all)
        if not (all(map(math.isfinite, out.tolist())) if len(out) <= 64 else
                np.logical_and.reduce(np.isfinite(out), None)):
            out = untake(g, index, shape, np.dtype(np.float64))
    if into is None:
        return out
    into[...] = out
    return into


def mask_product(a: Any, b: Any, shape: tuple, out: np.ndarray | None = None) -> np.ndarray:
    """``np.multiply(a, b)`` of a boolean mask and a float64 number of one entry (max's
    derivative where the trace saw no tie: the cotangent times the mask), which NumPy
    computes casting the booleans through buffers: the number times 0.0 everywhere, the
    number itself (times 1.0) where the mask holds. A number that is not finite (whose
    product by 0.0 is nan, with a warning) multiplies as NumPy does."""
    mask, number = (a, b) if getattr(a, "dtype", None) == np.bool_ else (b, a)
    factor = np.asarray(number).reshape(-1)
    if factor.size != 1 or not np.isfinite(factor[0]):
        return np.multiply(a, b, out=out)
    return filled_where(mask, factor[0], factor[0] * 0.0, shape, out)


def filled_where(condition: np.ndarray, x: Any, y: float, shape: tuple,
                 out: np.ndarray | None = None) -> np.ndarray:
    """``np.where(condition, x, y)`` of a boolean array, a float64 array and a Python
    float: ``y`` everywhere, ``x`` copied where ``condition`` holds (both broadcast to the
    answer's ``shape``): the bits ``where`` selects, without its buffers (``out``: the
    array to write into)."""
    if out is None:
        out = np.empty(shape)
    out.fill(y)
    np.copyto(out, x, where=condition)
    return out


def count_true(a: np.ndarray, shape: tuple | None, dtype: np.dtype) -> Any:
    """``np.add.reduce(a, None)`` of a boolean array: a scalar of ``dtype``, or an array
    of ``shape`` (``keepdims``)."""
    n = np.count_nonzero(a)
    return dtype.type(n) if shape is None else np.full(shape, n, dtype)


def where_code(vals: list, ans: Any, texts: list[str], bind) -> str | None:
    """``filled_where``'s code for ``np.where(condition, x, y)`` (``vals``: the three, at
    trace time) of a boolean array, a float64 array and a Python float into a float64
    answer laid out in C order, as large as ``INDICATOR_MIN_SIZE``; else None. (The types
    and layouts decide it, all in the emitter's key of the call: ``layout_key``.)"""
    if len(vals) != 3 or type(ans) is not ArrayMeta or ans.dtype != np.float64:
        return None
    condition, x, y = vals
    if type(condition) not in ARRAYS or condition.dtype != np.bool_ or type(y) is not float \
            or type(x) not in ARRAYS or x.dtype != np.float64 \
            or math.prod(ans.shape) < INDICATOR_MIN_SIZE or not c_ordered(ans):
        return None
    return f"{bind(filled_where)}({', '.join(texts)}, {ans.shape!r})"


def ones_mask(constant: Any, mask: Any, ans: Any) -> bool:
    """Whether ``multiply(constant, mask)`` is ``mask.astype(ans.dtype)``: a boolean mask
    in C order times a constant of real ones no larger (1.0 * True is 1.0, 1.0 * False
    0.0: the cast's bits), into a float answer of the mask's shape in C order."""
    return type(mask) in ARRAYS and mask.dtype == np.bool_ and type(ans) is ArrayMeta \
        and ans.dtype.kind == "f" and ans.shape == mask.shape and c_ordered(ans) \
        and c_ordered(mask) and np.ndim(constant) <= mask.ndim \
        and isinstance(constant, (np.ndarray, np.generic, int, float)) \
        and np.dtype(getattr(constant, "dtype", type(constant))).kind in "fiu" \
        and bool(np.all(np.asarray(constant) == 1))


ARRAYS = (ArrayMeta, np.ndarray)  # (a traced mask is staged with its values: an ndarray)


def c_ordered(meta: Any) -> bool:
    """Whether an array (its ``ArrayMeta``) is laid out as ``np.empty`` lays out a new
    array of its shape and dtype (C order), as every answer of these functions is."""
    return meta.strides == np.empty(meta.shape, meta.dtype).strides


def ufunc_code(ufunc: np.ufunc, vals: list, ans: Any, texts: list[str], bind) -> str | None:
    """``lanes``' code for an elementwise call of ``ufunc`` on ``vals`` (their code
    ``texts``) answering ``ans``, where NumPy's inner loop would be the short last axis;
    None where the plain call is as fast (or the answer is not laid out in C order)."""
    if ufunc is np.divide and len(vals) == 2 and type(ans) is ArrayMeta \
            and ans.dtype == np.float64 and getattr(vals[0], "dtype", None) == np.bool_ \
            and np.dtype(getattr(vals[1], "dtype", type(vals[1]))).kind in "iu" \
            and vals[0].shape == ans.shape and math.prod(ans.shape) >= INDICATOR_MIN_SIZE \
            and c_ordered(ans):
        return f"{bind(indicator_divide)}({', '.join(texts)}, {ans.shape!r})"
    if ufunc is np.multiply and len(vals) == 2 and type(ans) is ArrayMeta \
            and ans.dtype == np.float64 and math.prod(ans.shape) >= INDICATOR_MIN_SIZE \
            and c_ordered(ans) and sorted(getattr(v, "dtype", None) == np.bool_
                                          for v in vals) == [False, True]:
        mask, number = vals if getattr(vals[0], "dtype", None) == np.bool_ else vals[::-1]
        if mask.shape == ans.shape and getattr(number, "dtype", None) == np.float64 \
                and math.prod(np.shape(number) if type(number) is not ArrayMeta
                          else number.shape) == 1:
            return f"{bind(mask_product)}({', '.join(texts)}, {ans.shape!r})"
    if type(ans) is not ArrayMeta or ans.ndim < 2 or not 2 <= ans.shape[-1] <= MAX_LANES \
            or ans.dtype.hasobject or math.prod(ans.shape) < LANES_MIN_SIZE \
            or ufunc.nout != 1 or ufunc.nin != len(vals):
        return None
    if any(type(v) is not ArrayMeta and type(v) is not np.ndarray and not np.isscalar(v)
           for v in vals) or _merges_last_two(vals, ans.shape) or not c_ordered(ans):
        return None
    return (f"{bind(lanes)}({bind(ufunc)}, {ans.shape!r}, {bind(ans.dtype)}, "
            f"{', '.join(texts)})")


def outer_code(vals: list, ans: Any, texts: list[str], bind,
               const: Callable[[Any], str] | None = None) -> str | None:
    """``np.outer(a, b)`` of two vectors (``multiply(a[:, None], b[None, :])``, as NumPy
    writes it). ``b`` a short constant (``det``'s signs, whose matmul's cotangent is this
    outer): ``a``'s entries each repeated ``len(b)`` times, times ``b`` tiled (a constant
    named by ``const``), one long product of the same pairs in the same order (the same
    bits and warnings: NumPy's call runs its inner loop once per row, at (840, 3) 5.4 µs
    against 1.9). Else by ``outer_lanes`` where ``b`` is short and ``a`` long enough
    (``det``'s cotangents of its minors), else as that product itself (without
    ``outer``'s Python: its ``asarray`` and ``ravel``, which a vector's product does not
    need)."""
    if len(vals) != 2 or not all(
            (type(v) is ArrayMeta or type(v) is np.ndarray) and v.ndim == 1 for v in vals):
        return None
    rows, n = vals[0].shape[0], vals[1].shape[0]
    if const is not None and _tiles(vals, ans):
        tiled = np.tile(vals[1], rows).reshape(ans.shape)
        return f"{bind(np.multiply)}({texts[0]}.repeat({n}).reshape({ans.shape!r}), " \
            f"{const(tiled)})"
    if 2 <= n <= MAX_OUTER_LANES and rows >= OUTER_LANE_ROWS * (n + 1) \
            and type(ans) is ArrayMeta and ans.shape == (rows, n) and c_ordered(ans) \
            and ans.dtype in (np.float64, np.float32) \
            and vals[0].dtype == vals[1].dtype == ans.dtype:
        return f"{bind(outer_lanes)}({texts[0]}, {texts[1]}, {ans.shape!r})"
    a, b = f"{texts[0]}[:, None]", f"{texts[1]}[None, :]"
    column = ArrayMeta(vals[0].shape + (1,), vals[0].dtype, vals[0].strides + (0,))
    row = ArrayMeta((1,) + vals[1].shape, vals[1].dtype, (0,) + vals[1].strides)
    return ufunc_code(np.multiply, [column, row], ans, [a, b], bind) or \
        f"{bind(np.multiply)}({a}, {b})"


def _tiles(vals: list, ans: Any) -> bool:
    """Whether ``np.outer(*vals)`` takes ``outer_code``'s tiled form: a constant ``b``
    (a copy the program keeps, as the trace read it) of 2 to ``MAX_OUTER_LANES``
    entries of the float answer's dtype, an answer of at most ``OUTER_TILE_SIZE``."""
    a, b = vals
    return type(b) is np.ndarray and b.ndim == 1 and 2 <= b.shape[0] <= MAX_OUTER_LANES \
        and (type(a) is ArrayMeta or type(a) is np.ndarray) and a.ndim == 1 \
        and type(ans) is ArrayMeta and ans.shape == (a.shape[0], b.shape[0]) \
        and a.shape[0] * b.shape[0] <= OUTER_TILE_SIZE and c_ordered(ans) \
        and ans.dtype in (np.float64, np.float32) and a.dtype == b.dtype == ans.dtype


def _merges_last_two(vals: list, shape: tuple) -> bool:
    """Whether NumPy merges the last two axes of ``shape`` into its inner loop for every
    array operand (each contiguous across them, or broadcast along both)."""
    n = shape[-1]
    for v in vals:
        ndim = np.ndim(v)
        if ndim == 0:
            continue
        vshape, strides = v.shape, v.strides
        last = strides[-1] if vshape[-1] != 1 else 0
        second = strides[-2] if ndim >= 2 and vshape[-2] != 1 else 0
        if second != last * n:
            return False
    return True


def sum_code(a: Any, axis: Any, keepdims: bool, ans: Any, text: str, bind) -> str | None:
    """The code of ``np.add.reduce(a, axis, keepdims=keepdims)`` (``a``'s code ``text``)
    by ``lane_sum`` or ``count_true``, where it is NumPy's sum and faster; else None."""
    if type(a) is not ArrayMeta and type(a) is not np.ndarray:
        return None
    shape = ans.shape if keepdims and type(ans) is ArrayMeta else None
    if a.dtype == np.bool_ and axis is None:
        dtype = getattr(ans, "dtype", None)
        if dtype is None or dtype.kind != "i" or (shape is None) != isinstance(ans, np.generic):
            return None
        return f"{bind(count_true)}({text}, {shape!r}, {bind(dtype)})"
    form = _sum_form(a, axis, ans)
    if form is None:
        return None
    if form == "lanes":
        return f"{bind(lane_sum)}({text}, {shape!r})" if shape else \
            f"{bind(lane_sum)}({text})"
    outer, n, width = form
    if width == 2:
        return f"{bind(pair_sum)}({text}, {outer}, {n}, {ans.shape!r})"
    return f"{bind(rows_sum)}({text}, {outer}, {n}, {width}, {ans.shape!r})"


def negated_sum_code(a: Any, axis: Any, ans: Any, text: str, bind) -> str | None:
    """The code of ``np.add.reduce(np.negative(a), axis)`` (``a``'s code ``text``) by
    ``negated_rows_sum``, where the sum is over an axis followed by 3 to 64 entries; else
    None (a sum over all axes: ``negated_sum``)."""
    form = negated_form(a, axis, ans)
    if form is None:
        return None
    outer, n, width = form
    return f"{bind(negated_rows_sum)}({text}, {outer}, {n}, {width}, {ans.shape!r})"


def negated_form(a: Any, axis: Any, ans: Any) -> tuple | None:
    """``(outer, n, width)`` where ``negated_rows_sum`` sums -a over ``axis``, else None."""
    form = _sum_form(a, axis, ans)
    return form if type(form) is tuple and form[2] > 2 else None


def _sum_form(a: Any, axis: Any, ans: Any) -> str | tuple | None:
    """How a float sum of ``a`` over one ``axis`` is faster with NumPy's bits: "lanes" (a
    short last axis), ``(outer, n, width)`` (an axis followed by 2 to 64 entries:
    ``pair_sum`` for 2, ``rows_sum`` from 3), or None."""
    if type(axis) is tuple and len(axis) == 1:
        axis = axis[0]
    if type(axis) is not int or type(a) is not ArrayMeta or not -a.ndim <= axis < a.ndim \
            or a.dtype not in (np.float64, np.float32) or math.prod(a.shape) < SUM_MIN_SIZE \
            or type(ans) is not ArrayMeta or ans.dtype != a.dtype \
            or not (c_ordered(a) and c_ordered(ans)):
        return None
    axis %= a.ndim
    if axis == a.ndim - 1:
        return "lanes" if short_axes.short_last_axis(a.shape, a.dtype, axis, SUM_MIN_SIZE) \
            and short_axes.exact_lane_sum(a.dtype) else None
    outer, n, width = math.prod(a.shape[:axis]), a.shape[axis], math.prod(a.shape[axis + 1:])
    if n < 2 or not 2 <= width <= ROWS_SUMMED_MAX_WIDTH or \
            not (exact_pair_sum(a.dtype) if width == 2 else exact_rows_sum(a.dtype)):
        return None
    return outer, n, width


def scatter_code(vals: list, texts: list[str], bind) -> str | None:
    """The code of a call ``untake(g, index, shape, dtype)`` (``texts``: their code) of
    float64 ``g`` and answer: ``scatter_sum``'s for a constant integer index of ``g``'s
    shape within a vector's bounds (``add.at``'s negative indices and errors are its
    own), ``placed``'s for a basic index; else None. (No values in the code: it is kept
    for the next call of the same types, ``layout_key``.)"""
    if len(vals) != 4:
        return None
    if _scatters(*vals):
        return f"{bind(scatter_sum)}({texts[0]}, {texts[1]}, {texts[2]})"
    if _places(*vals):
        return f"{bind(placed)}({texts[0]}, {texts[1]}, {texts[2]})"
    return None


def placed(g: np.ndarray, index: Any, shape: tuple) -> np.ndarray:
    """``untake(g, index, shape, float64)`` of a basic index (det's rows of its
    cotangent): ``g`` written into zeros, ``untake``'s own path without its Python."""
    out = np.zeros(shape)
    out[index] = g
    return out


def placed_added(a: np.ndarray, g: np.ndarray, index: Any, first: bool,
                 out: np.ndarray | None = None) -> np.ndarray:
    """``np.add(a, placed(g, index, a.shape))`` (``first``: ``placed`` is the first
    operand) of an ``a`` that holds no -0.0 and no signalling nan (``_emit``'s sums
    from 0.0: a scatter's, a placed row of one, a sum with one): outside ``index``, ``a``
    plus 0.0 is ``a``'s own bits, and raises no floating-point error; at ``index``, the
    sum as the call adds it, in the operands' order (a nan's payload is the first's).
    ``out``: ``a`` itself, where it dies here (the emitter's ``out=``)."""
    if out is None:
        out = a.copy()
    row = out[index]
    if first:
        np.add(g, row, out=row)
    else:
        np.add(row, g, out=row)
    return out


def scatter_added(a: np.ndarray, g: np.ndarray, index: np.ndarray, row: int,
                  out: np.ndarray | None = None) -> np.ndarray:
    """``placed_added(a, scatter_sum(g, index, a.shape[1:]), row, ...)`` where ``a[row]``
    holds 0.0s (``_emit`` knows which rows of a placed row's zeros are still zeros): 0.0
    plus a sum from 0.0 is that sum (no -0.0; a nan's own payload; no floating-point
    error), so the scatter adds into the row itself, no vector of zeros made, no sum."""
    if out is None:
        out = a.copy()
    scatter_sum(g, index, out.shape[1:], out[row])
    return out


def _places(g: Any, index: Any, shape: Any, dtype: Any) -> bool:
    return type(g) is ArrayMeta and g.dtype == np.float64 and dtype == np.float64 \
        and type(shape) is tuple and all(type(p) in _BASIC for p in (
            index if type(index) is tuple else (index,)))


_BASIC = frozenset([int, slice, type(None), type(Ellipsis)])


def _scatters(g: Any, index: Any, shape: Any, dtype: Any) -> bool:
    return type(g) is ArrayMeta and g.dtype == np.float64 and type(index) is np.ndarray \
        and index.dtype.kind in "iu" and index.shape == g.shape and index.size > 0 \
        and type(shape) is tuple and len(shape) == 1 and dtype == np.float64 \
        and 0 <= index.min() and index.max() < shape[0]


def as_index(raw: Any, position: int, a: Any) -> Any:
    """A constant operand as the program passes it: an index array of a subscript or of
    ``untake`` of a narrower integer type (``det``'s int8 minors) as ``intp``, the type
    NumPy casts it to on every call (the same values: the same elements taken)."""
    if position != 1 or (raw is not _GETITEM and raw is not untake.fun):
        return a
    if type(a) is np.ndarray:
        return _intp(a)
    if type(a) is tuple and any(type(p) is np.ndarray for p in a):
        return tuple(_intp(p) if type(p) is np.ndarray else p for p in a)
    return a


def _intp(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu" and a.dtype.itemsize < np.dtype(np.intp).itemsize:
        return a.astype(np.intp)
    return a


def layout_key(raw: Any, entry: Any, vals: list, ans: Any) -> tuple:
    """What beyond its types decides a call's code here (``_emit`` keeps a call's code
    for the next call of the same types): its answer's and operands' layouts, where the
    call might take a faster form; () where it cannot (most calls: a cheap test)."""
    if raw is untake.fun:
        return (len(vals) == 4 and _scatters(*vals), len(vals) == 4 and _places(*vals))
    if raw is np.outer and len(vals) == 2 and _tiles(vals, ans):
        # (the tiled form's constant is made from ``b``'s values)
        return (_layout(ans), *map(_layout, vals), vals[1].tobytes())
    if raw is np.outer or raw is WHERE:
        return (_layout(ans), *map(_layout, vals))
    if entry.reduction is np.add or entry.reduction is np.minimum or \
            entry.reduction is np.maximum:
        # (which axis and how long: any sum; min and max over a short last axis)
        return (_layout(ans), *map(_layout, vals))
    if getattr(raw, "ufunc", None) is None:
        return ()
    if raw.ufunc is np.power:  # (an array by the number 2 is its square: _direct)
        return (len(vals) == 2 and type(vals[1]) is int and vals[1] == 2,)
    if not (type(ans) is ArrayMeta and ans.ndim and ans.shape[-1] <= short_axes.MAX_LANES) and \
            not any(getattr(v, "dtype", None) == np.bool_ for v in vals):
        return ()
    return (_layout(ans), *map(_layout, vals))


def _layout(v: Any) -> tuple:
    if type(v) is ArrayMeta:
        return v.shape, v.dtype, v.strides
    return type(v), np.shape(v), getattr(v, "dtype", None), getattr(v, "strides", None)
