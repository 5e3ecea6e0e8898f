"""Batching rules (``chainrule.vmap``) for chainrule.numpy, .linalg and .fft.

A rule ``rule(values, batched, kwargs)`` computes a primitive for a whole batch: the
arguments flagged in ``batched`` hold the batch as their leading axis, and so does every
output. Most primitives follow one of a few patterns, so the rules are made by pattern:

- elementwise (every ufunc, found by ``batched.batching_rule``; and the functions below that
  broadcast like one): operands' example axes padded to one rank, then one call;
- along an axis (reductions, scans, sorts, flips, the FFTs): the axis moves past the batch;
  ``axis=None`` means all of an example's axes, or its flattened values for scans and sorts;
- over the last axes (linalg): NumPy already maps these over leading axes;
- index maps (reshape, transpose, indexing, concatenate, stack...), contractions (matmul,
  dot, outer, einsum): one call each, written out below.

A rule answers ``NotImplemented`` for a call its pattern does not cover (a batched
argument where the pattern expects a constant, say); that call runs once per example.
"""

from __future__ import annotations

import numpy as _np

from ..._core.rules import defbatch
from .. import linalg as alinalg
from .. import numpy_wrapper as anp
from ..batched import (
    batch_index,
    elementwise,
    example_ndim,
    flat_examples,
)
from ..batching_patterns import (
    along_axis,
    as_is,
    batch_size,
    named_axes,
    only_first,
    shifted_axis,
)
from ..numpy_boxes import array_astype, array_getitem
from .shape import untake


# ----------------------------------------------------------------------------- elementwise
def _each(names: str) -> list:
    """The chainrule.numpy functions of these names (those this NumPy has)."""
    return [anp.namespace[name] for name in names.split() if name in anp.namespace]


for _fun in _each("copy") + [array_astype]:
    defbatch(_fun, elementwise(_fun))


# ----------------------------------------------------------------------------- along an axis
for _fun in _each("flip"):
    defbatch(_fun, along_axis(_fun, "all"))
for _fun in _each("sort argsort partition repeat"):
    defbatch(_fun, along_axis(_fun, "flat"))


def _take(values, batched, kwargs):
    """take(a, indices, axis): each example's own indices into one array or its own."""
    if not batched[1]:
        return _take_along(values, batched, kwargs)
    a, indices = values[:2]
    axis = values[2] if len(values) > 2 else kwargs.get("axis")
    if len(values) > 3 or set(kwargs) - {"axis"} or any(batched[2:]):
        return NotImplemented  # (out=, mode=)
    if axis is None:
        a, axis = (flat_examples(a), 0) if batched[0] else (anp.ravel(a), 0)
    axis = shifted_axis(axis, example_ndim(a, batched[0])) - 1
    if not batched[0]:
        return anp.moveaxis(anp.take(a, indices, axis=axis), axis, 0)
    # a[b, ..., indices[b], ...]: the batch's rows next to the indices, moved back in place
    rows = _np.arange(_np.shape(a)[0]).reshape((-1,) + (1,) * (_np.ndim(indices) - 1))
    out = array_getitem(a, (rows,) + (slice(None),) * axis + (indices,))
    if not axis:
        return out
    index_axes = _np.ndim(indices) - 1
    return anp.moveaxis(out, tuple(range(1, 1 + index_axes)),
                        tuple(range(1 + axis, 1 + axis + index_axes)))


_take_along = along_axis(anp.take, "flat")
defbatch(anp.take, _take)


for _fun in _each("diff roll trapezoid"):
    defbatch(_fun, along_axis(_fun, "loop"))


for _fun in _each("interp"):
    defbatch(_fun, as_is(_fun))


def _polyval(values, batched, kwargs):
    p, x = values
    if batched[0]:
        return NotImplemented
    return anp.namespace["polyval"](p, x)


if "polyval" in anp.namespace:
    defbatch(anp.namespace["polyval"], _polyval)


def _norm(fun):
    """linalg.norm / vector_norm: ``axis=None`` is all of an example's axes (flattened for
    the 2-norm; a vector or matrix norm by the example's rank for other orders)."""

    def rule(values, batched, kwargs):
        if not only_first(batched) or len(values) > 1:
            return NotImplemented
        kwargs = dict(kwargs)
        x, ndim = values[0], example_ndim(values[0], True)
        if kwargs.get("axis") is None:
            if kwargs.get("keepdims"):
                return NotImplemented
            if kwargs.get("ord") is None or fun is not alinalg.norm:
                x, kwargs["axis"] = flat_examples(x), 1
            elif ndim in (1, 2):
                kwargs["axis"] = 1 if ndim == 1 else (1, 2)
            else:
                return NotImplemented
        else:
            kwargs["axis"] = shifted_axis(kwargs["axis"], ndim)
        return fun(x, **kwargs)

    return rule


for _fun in (alinalg.norm, alinalg.vector_norm):
    defbatch(_fun, _norm(_fun))






def _flip_axis(axis: int):
    def rule(values, batched, kwargs):
        if not only_first(batched) or example_ndim(values[0], True) <= axis:
            return NotImplemented
        return anp.flip(values[0], axis + 1)
    return rule


defbatch(anp.fliplr, _flip_axis(1))
defbatch(anp.flipud, _flip_axis(0))
defbatch(anp.rot90, named_axes(anp.rot90, (2, "axes", (0, 1))))
defbatch(alinalg.matrix_transpose, as_is(alinalg.matrix_transpose, 2))
defbatch(alinalg.matrix_norm, as_is(alinalg.matrix_norm, 2))
defbatch(anp.swapaxes, named_axes(anp.swapaxes, (1, "axis1", None), (2, "axis2", None)))
defbatch(anp.moveaxis, named_axes(anp.moveaxis, (1, "source", None),
                                  (2, "destination", None)))
defbatch(anp.diagonal, named_axes(anp.diagonal, (2, "axis1", 0), (3, "axis2", 1)))


# ----------------------------------------------------------------------------- index maps
def _expand_dims(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    axis = values[1] if len(values) > 1 else kwargs["axis"]
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    ndim = example_ndim(values[0], True) + len(axes)
    return anp.expand_dims(values[0], shifted_axis(axes, ndim))


def _squeeze(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    axis = values[1] if len(values) > 1 else kwargs.get("axis")
    shape = _np.shape(values[0])[1:]
    if axis is None:
        axis = tuple(i for i, n in enumerate(shape) if n == 1)
    return anp.squeeze(values[0], shifted_axis(axis, len(shape)))


def _reshape(values, batched, kwargs):
    order = values[2] if len(values) > 2 else kwargs.get("order", "C")
    if not only_first(batched) or order != "C":
        return NotImplemented
    shape = values[1] if len(values) > 1 else kwargs.get("shape", kwargs.get("newshape"))
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    if -1 in shape:  # worked out for an example, as an empty batch cannot
        shape = _np.broadcast_to(False, _np.shape(values[0])[1:]).reshape(shape).shape
    return anp.reshape(values[0], (_np.shape(values[0])[0],) + shape)


def _ravel(values, batched, kwargs):
    if len(values) > 1 or kwargs.get("order", "C") != "C":
        return NotImplemented
    return flat_examples(values[0])


def _transpose(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    ndim = example_ndim(values[0], True)
    axes = values[1] if len(values) > 1 else kwargs.get("axes")
    axes = tuple(reversed(range(ndim))) if axes is None else tuple(axes)
    return anp.transpose(values[0], (0,) + shifted_axis(axes, ndim))


def _broadcast_to(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    shape = values[1] if len(values) > 1 else kwargs["shape"]
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    value = values[0]
    missing = len(shape) - example_ndim(value, True)
    if missing:
        value = anp.expand_dims(value, tuple(range(1, 1 + missing)))
    return anp.broadcast_to(value, (_np.shape(value)[0],) + shape)


def _getitem(values, batched, kwargs):
    (x, index), (batched_x, batched_index) = values, batched
    if batched_index:  # x[i], i an integer array of each example's own indices
        if _np.result_type(index).kind not in "iu" or not example_ndim(x, batched_x):
            return NotImplemented
        if not batched_x:
            return array_getitem(x, index)
        rows = _np.arange(_np.shape(x)[0]).reshape((-1,) + (1,) * (_np.ndim(index) - 1))
        return array_getitem(x, (rows, index))
    index = batch_index(index)
    if index is None:
        return NotImplemented
    return array_getitem(x, index)


def _untake(values, batched, kwargs):
    (g, index, shape, dtype), size = values, batch_size(values, batched)
    if batched[2] or batched[3]:
        return NotImplemented
    if batched[1]:  # each example's own integer indices (the VJP of x[i])
        if _np.result_type(index).kind not in "iu":
            return NotImplemented
        if not batched[0]:
            g = anp.broadcast_to(g, (size,) + _np.shape(g))
        rows = _np.arange(size).reshape((-1,) + (1,) * (_np.ndim(index) - 1))
        return untake(g, (rows, index), (size,) + tuple(shape), dtype)
    index = batch_index(index)
    if index is None:
        return NotImplemented
    return untake(g, index, (size,) + tuple(shape), dtype)


def _index_write(fun):
    """index_update / index_add (x, index, v): x made a batch if it is the same for
    every example; v's example axes padded to those of x[index]."""

    def rule(values, batched, kwargs):
        (x, index, v), (batched_x, batched_index, batched_v) = values, batched
        where = batch_index(index)
        if batched_index or where is None:
            return NotImplemented
        size = batch_size(values, batched)
        example_shape = _np.shape(x)[1:] if batched_x else _np.shape(x)
        if not batched_x:
            x = anp.broadcast_to(x, (size,) + example_shape)
        if batched_v:
            target = _np.broadcast_to(0, example_shape)[index].ndim
            missing = target - example_ndim(v, True)
            if missing > 0:
                v = anp.expand_dims(v, tuple(range(1, 1 + missing)))
        return fun(x, where, v)

    return rule


def _atleast(n: int):
    """atleast_1d / atleast_2d of one array: axes added in front of an example's."""

    def rule(values, batched, kwargs):
        if len(values) != 1:
            return NotImplemented
        missing = n - example_ndim(values[0], True)
        if missing <= 0:
            return values[0]
        return anp.expand_dims(values[0], tuple(range(1, 1 + missing)))

    return rule


def _take_along_axis(values, batched, kwargs):
    arr, indices = values[:2]
    axis = values[2] if len(values) > 2 else kwargs.get("axis", -1)
    if axis is None:
        return NotImplemented
    size = batch_size(values, batched)
    if not batched[0]:
        arr = anp.broadcast_to(arr, (size,) + _np.shape(arr))
    if not batched[1]:
        indices = _np.broadcast_to(indices, (size,) + _np.shape(indices))
    return anp.take_along_axis(arr, indices, shifted_axis(axis, example_ndim(arr, True)))


def _tile(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    a, reps = values[0], values[1] if len(values) > 1 else kwargs["reps"]
    reps = (reps,) if isinstance(reps, (int, _np.integer)) else tuple(reps)
    ndim = example_ndim(a, True)
    if len(reps) > ndim:
        a = anp.expand_dims(a, tuple(range(1, 1 + len(reps) - ndim)))
    reps = (1,) * (max(ndim, len(reps)) - len(reps)) + reps
    return anp.tile(a, (1,) + reps)


def _pad(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    a, width = values[0], values[1] if len(values) > 1 else kwargs["pad_width"]
    width = _np.broadcast_to(_np.asarray(width), (example_ndim(a, True), 2))
    return anp.pad(a, [(0, 0)] + [tuple(w) for w in width.tolist()], *values[2:], **kwargs)


def _split(fun):
    rule = along_axis(fun, "loop")

    def split(values, batched, kwargs):
        if not only_first(batched):
            return NotImplemented
        return list(rule(values, batched, kwargs))

    return split


def _array_of(values, batched, kwargs):
    """array_from_args(shape, dtype, *elements): each example's elements flattened side
    by side, as the primitive does for one."""
    shape, dtype, elements = values[0], values[1], values[2:]
    if batched[0] or batched[1]:
        return NotImplemented
    size = batch_size(values, batched)
    flat = [flat_examples(e) if b else
            anp.broadcast_to(anp.reshape(e, (1, -1)), (size, _np.size(e)))
            for e, b in zip(elements, batched[2:])]
    out = anp.reshape(anp.concatenate_args(1, *flat), (size,) + tuple(shape))
    return out if dtype is None else array_astype(out, dtype)


def _diag(flat: bool):
    """diag (diagflat): a 1-D example (flattened, for diagflat) laid on diagonal k of a
    matrix, a 2-D one's diagonal k taken."""

    def rule(values, batched, kwargs):
        if not only_first(batched):
            return NotImplemented
        v, k = values[0], values[1] if len(values) > 1 else kwargs.get("k", 0)
        if flat:
            v = flat_examples(v)
        if example_ndim(v, True) == 2:
            return anp.diagonal(v, k, 1, 2)
        if example_ndim(v, True) != 1:
            return NotImplemented
        n = _np.shape(v)[1]
        # (not v times an identity: inf * 0 off the diagonal would be nan, 0 * -1 a -0.0)
        out = anp.where(_np.eye(n, dtype=bool), anp.expand_dims(v, -1),
                        _np.zeros((), _np.result_type(v)))
        if k:
            rows, cols = ((0, k), (k, 0)) if k > 0 else ((-k, 0), (0, -k))
            out = anp.pad(out, [(0, 0), rows, cols])
        return out

    return rule


defbatch(anp.diag, _diag(False))
defbatch(anp.diagflat, _diag(True))
def _atleast_3d(values, batched, kwargs):
    """atleast_3d of one array: (1, 1, 1), (1, N, 1) and (M, N, 1) for 0-, 1- and 2-d."""
    if len(values) != 1:
        return NotImplemented
    v, ndim = values[0], example_ndim(values[0], True)
    axes = {0: (1, 2, 3), 1: (1, 3), 2: (3,)}.get(ndim)
    return v if axes is None else anp.expand_dims(v, axes)


def _rollaxis(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    v, ndim = values[0], example_ndim(values[0], True)
    axis = values[1] if len(values) > 1 else kwargs["axis"]
    start = values[2] if len(values) > 2 else kwargs.get("start", 0)
    if not -ndim <= start <= ndim:
        return NotImplemented  # NumPy's error, from the loop
    return anp.rollaxis(v, shifted_axis(axis, ndim), (start + ndim if start < 0 else start) + 1)


for _fun, _n in zip(_each("atleast_1d atleast_2d"), (1, 2)):
    defbatch(_fun, _atleast(_n))
defbatch(anp.namespace["atleast_3d"], _atleast_3d)
defbatch(anp.namespace["rollaxis"], _rollaxis)
for _fun in _each("asarray asanyarray ascontiguousarray"):
    defbatch(_fun, as_is(_fun))
for _fun in _each("split array_split"):
    defbatch(_fun, _split(_fun))
defbatch(anp.take_along_axis, _take_along_axis)
defbatch(anp.tile, _tile)
defbatch(anp.pad, _pad)
defbatch(anp.array_from_args, _array_of)
defbatch(untake, _untake)
defbatch(anp.index_update, _index_write(anp.index_update))
defbatch(anp.index_add, _index_write(anp.index_add))


defbatch(anp.expand_dims, _expand_dims)
defbatch(anp.squeeze, _squeeze)
defbatch(anp.reshape, _reshape)
defbatch(anp.ravel, _ravel)
defbatch(anp.transpose, _transpose)
defbatch(anp.broadcast_to, _broadcast_to)
defbatch(array_getitem, _getitem)


def _joined(fun, new_axis: bool):
    """concatenate_args / stack_args (axis, *pieces): pieces that are the same for every
    example are repeated along the batch."""

    def rule(values, batched, kwargs):
        axis = values[0]
        if batched[0] or axis is None:
            return NotImplemented
        size = batch_size(values, batched)
        pieces = [v if b else anp.broadcast_to(v, (size,) + _np.shape(v))
                  for v, b in zip(values[1:], batched[1:])]
        ndim = example_ndim(pieces[0], True) + new_axis
        return fun(shifted_axis(axis, ndim), *pieces, **kwargs)

    return rule


defbatch(anp.concatenate_args, _joined(anp.concatenate_args, False))
defbatch(anp.stack_args, _joined(anp.stack_args, True))


for _fun in (anp.tril, anp.triu):
    defbatch(_fun, as_is(_fun, 2))


# ----------------------------------------------------------------------------- linalg
for _fun in (alinalg.inv, alinalg.det, alinalg.slogdet_tuple, alinalg.cholesky,
             alinalg.eigh_tuple, alinalg.eigvalsh, alinalg.eig_tuple, alinalg.eigvals,
             alinalg.svd_tuple, alinalg.svd_values, alinalg.pinv, alinalg.matrix_power,
             alinalg.qr_tuple, alinalg.qr_r):
    defbatch(_fun, as_is(_fun, 2))


def _solve(values, batched, kwargs):
    """solve(a, b): b of one example a vector, or a stack of matrices like a's (NumPy 2
    reads only a 1-D b as a vector, so a batch of vectors is made one of one-column
    matrices); the batched operands' stacking axes are padded to a common rank."""
    (a, b), (batched_a, batched_b) = values, batched
    nd_a, nd_b = example_ndim(a, batched_a), example_ndim(b, batched_b)
    if kwargs or nd_a < 2:
        return NotImplemented
    if not batched_a and nd_a == 2 and nd_b <= 2:
        # one matrix for the whole batch: one factorization, the examples as its columns
        shape = _np.shape(b)
        columns = anp.reshape(anp.moveaxis(b, 0, 1), (shape[1], shape[0] * int(_np.prod(shape[2:]))))
        out = anp.reshape(alinalg.solve(a, columns), (shape[1], shape[0]) + shape[2:])
        return anp.moveaxis(out, 1, 0)
    vector = nd_b == 1
    if vector:
        b, nd_b = anp.expand_dims(b, -1), 2
    lead = max(nd_a, nd_b) - 2
    if batched_a and nd_a - 2 < lead:
        a = anp.expand_dims(a, tuple(range(1, 1 + lead - (nd_a - 2))))
    if batched_b and nd_b - 2 < lead:
        b = anp.expand_dims(b, tuple(range(1, 1 + lead - (nd_b - 2))))
    out = alinalg.solve(a, b)
    return anp.squeeze(out, -1) if vector else out


defbatch(alinalg.solve, _solve)
