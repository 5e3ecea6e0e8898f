"""Rules for functions that move, copy, select or assemble elements.

Most are linear in their array arguments. Three kinds of rule cover them:

* dedicated one-liners (reshape, transpose, broadcast_to, getitem ...);
* ``selection(f)`` for any function whose output elements are copies of input
  elements or zeros (flip, roll, tile, tril, pad, take, sort, insert ...): ``f``
  applied to the 1-based *positions* of the input elements tells where each
  output element came from (0: from nowhere). The VJP scatters the cotangent
  back to those positions (repeats accumulate, as numpy.add.at), the JVP
  gathers the tangent from them; both are primitives, so every order works;
* ``composite(f, impl)`` for the few whose derivative is best read off a
  formula (diff, gradient, interp, convolve ...).

Derivatives are taken w.r.t. the array arguments only: integer arguments
(shapes, axes, indices, repeats, conditions) have none. Documented limits:
``pad`` differentiates the modes that copy elements (constant, edge, reflect,
symmetric, wrap) and treats ``constant_values`` as a constant; ``gradient``
differentiates w.r.t. ``f`` and scalar spacings; ``interp`` w.r.t. ``x`` and
``fp`` (``xp`` is a grid of constants); ``diff``'s ``prepend``/``append`` and
``ediff1d``'s ``to_begin``/``to_end`` are constants (keyword arguments).
"""

from __future__ import annotations

import itertools
import math

import numpy as _np
from numpy.lib.array_utils import normalize_axis_tuple

from ..._core.reverse import ShapeOnly
from ..._core.rules import (
    defbatch,
    defjvp_argnums,
    defjvp_batched,
    defjvp_direct,
    deflabel,
    deflowered_by_value,
    deflowering,
    defsilent,
    defsparsity,
    deftakes_index_arrays,
    deftakes_masks,
    deftaylor,
    deftaylor_linear,
    defvjp_direct,
    defvjp_whole,
    not_differentiable,
)
from ..._core.taylor import make_multilinear_taylor
from ..._core.tracer import decided, derivative_free, getval, isbox, primitive
from ..._sparsity.patterns import (
    convolution_band,
    copy_rule,
    elementwise_pattern,
    first_position,
    identity_pattern,
    map_pattern,
    partition_pattern,
    positions_through,
    shapes_only,
    sort_pattern,
    source_pattern,
)
from .. import numpy_wrapper as anp
from ..batched import BatchedArray, batch_index, example_ndim, flat_examples, scalar_index
from ..batched import elementwise as elementwise_batch
from ..batching_patterns import (
    along_axis,
    as_is,
    batch_size,
    named_axes,
    only_first,
    shifted_axis,
)
from ..numpy_boxes import array_astype, array_getitem, memory_of
from ..numpy_vspaces import TakenSlices
from ..placement import constant_like, index_like, on_host
from ._helpers import (
    _ARRAY_LIKE,
    bound_texts,
    composite,
    dtype_of,
    linear,
    match_dtype,
    shape_of,
    unbroadcast,
)


def _is_basic_index(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, _np.integer, slice))
               for p in parts)


@primitive
def untake(g, index, shape, dtype):
    """Zeros of ``shape`` with ``g`` added at ``index`` (repeated indices accumulate)."""
    dtype = _np.result_type(dtype, getattr(g, "dtype", None) or _np.result_type(g))
    # zeros of g's own array type (a Dask or CuPy cotangent stays one)
    # (a 0-d Dask/CuPy cotangent too: np.zeros would compute it / copy it to the host)
    host = isinstance(g, (_np.ndarray, _np.generic, float, int, complex))
    out = _np.zeros(shape, dtype=dtype) if host else \
        _np.zeros_like(g, dtype=dtype, shape=shape)
    if _is_basic_index(index):
        out[index] = g
    elif type(out) is _np.ndarray:
        _np.add.at(out, index, g)
    elif _hits_each_once(index, shape):
        out[index_like(index, out)] = g  # other libraries (Dask) lack add.at; no repeats
    else:
        return _scatter_add_like(g, index, shape, dtype)
    return out


_PLAIN_INDEX_TYPES = frozenset([int, slice, type(None), type(Ellipsis)])


def _getitem_vjp(g, ans, x, index):
    # A plain real cotangent of a basic index, the common case (x[1:], x[:, 0]): the piece
    # and its index, which the backward pass adds into x's cotangent in place
    # (TakenSlices); otherwise (traced, batched, complex, other dtypes, integer arrays)
    # an array of zeros with the piece put in. (g.shape: x[0] of a vector has a scalar's
    # cotangent, where x's buffer[0] would be a copy, not a view to add into.)
    if type(g) is _np.ndarray and g.shape and g.dtype is x.dtype and x.dtype.kind == "f" \
            and (type(index) in _PLAIN_INDEX_TYPES or type(index) is tuple and all(
                type(part) in _PLAIN_INDEX_TYPES for part in index)):
        return TakenSlices(x.shape, x.dtype, index, g)
    return match_dtype(untake(g, index, shape_of(x), dtype_of(x)), x)


def _untake_pattern(argnum, ans, args, kwargs):
    """Output position p receives the elements of g that ``index`` sends to p."""
    g, index, shape = args[0], args[1], args[2]
    size, g_size = int(_np.prod(shape)), int(_np.size(g))
    rows = _np.arange(size).reshape(shape)[index]
    cols = _np.broadcast_to(_np.arange(g_size).reshape(_np.shape(g)), _np.shape(rows))
    return map_pattern(rows, cols, (size, g_size))


def _scatter_add_like(g, index, shape, dtype):
    """``untake`` with repeated indices for array libraries without ``numpy.add.at``: the
    flat positions ``index`` picks are static (found on the host), and a weighted
    ``bincount`` in g's own library (``like=g``) sums the repeats, lazily for Dask."""
    size = int(_np.prod(shape))
    grid = _np.arange(size).reshape(shape)
    if _host_index(index):
        positions = _np.asarray(grid[index].ravel(), like=g)
    else:  # an index in the library (sort's order): the positions are found there too
        positions = _np.ravel(constant_like(grid, g)[index_like(index, g)])
    flat = _np.ravel(g)

    def scatter(w):
        return _np.bincount(positions, weights=w, minlength=size)

    out = scatter(_np.real(flat)) + 1j * scatter(_np.imag(flat)) if dtype.kind == "c" \
        else scatter(flat)
    return _np.reshape(out, shape).astype(dtype, copy=False)


def _host_index(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(on_host(p) for p in parts if hasattr(p, "shape"))


def _hits_each_once(index, shape) -> bool:
    if not _host_index(index):
        return False  # an index in the array's library: finding out would copy it to the host
    positions = _np.arange(int(_np.prod(shape))).reshape(shape)[index]
    return _np.unique(positions).size == _np.size(positions)


def _reshape(g, shape, order):
    # order only when it is not the default: other array libraries (Dask) take no order=
    return anp.reshape(g, shape) if order == "C" else anp.reshape(g, shape, order=order)


# ----------------------------------------------------------------------------- memory order
# reshape's and ravel's order "A" (and ravel's "K") read x in an order set by x's memory
# layout. A tangent or cotangent is laid out in C order whatever x's layout, so the rules
# (and the maps of positions of the batched JVP and the sparsity) take the order NumPy took
# on x, read once from x's shape and strides: an array, a box's value, jit's staged value.
def _contiguous(shape, strides, itemsize) -> bool:
    """NumPy's C-contiguous flag (axes of length 1 take any stride; empty arrays are)."""
    if 0 in shape:
        return True
    step = itemsize
    for n, stride in zip(reversed(shape), reversed(strides)):
        if n != 1:
            if stride != step:
                return False
            step *= n
    return True


def _kept_axes(shape, strides) -> tuple:
    """The axes, outermost first, in which NumPy's iterator reads an array with order "K"
    (``ravel(x, "K") == ravel(transpose(x, axes))``): a stable insertion sort by |stride|
    where a zero stride (a broadcast or length-1 axis) is not compared; axes running
    backwards stay backwards."""
    strides = [0 if n == 1 else s for n, s in zip(shape, strides)]
    perm = list(range(len(shape)))[::-1]  # innermost first, as the iterator sorts
    for i in range(1, len(perm)):
        moved, to = strides[perm[i]], i
        for j in range(i - 1, -1, -1):
            other = strides[perm[j]]
            if moved and other:
                if abs(other) <= abs(moved):
                    break
                to = j
        perm.insert(to, perm.pop(i))
    return tuple(reversed(perm))


def read_order(x, order, batched: bool = False):
    """The order in which NumPy's reshape/ravel reads ``x`` given ``order``: "C" or "F"
    ("A": "F" where x is Fortran- and not C-contiguous), or for "K" the axes of
    ``_kept_axes`` ("C" where those are in order). Other orders are passed on as given
    (NumPy's own call raises on the bad ones, and on reshape's "K"). ``batched``: x is a
    batch, read the layout of its examples (vmap's ``x[i]``)."""
    if order is None:
        return "C"
    if not isinstance(order, str) or order.upper() not in ("A", "K"):
        return order
    if type(x) is BatchedArray:  # (a rule's argument in vmap's batched run: its examples)
        x, batched = x._value, True
    value = memory_of(x)  # (under jit, a buffer's staged array: its layout at the trace)
    strides = getattr(value, "strides", None)
    if strides is None:  # a list or a number: NumPy reads it as the C array it makes
        return "C"
    shape, strides = tuple(value.shape)[batched:], tuple(strides)[batched:]
    if order.upper() == "K":
        axes = _kept_axes(shape, strides)
        return "C" if axes == tuple(range(len(shape))) else axes
    itemsize = _np.dtype(value.dtype).itemsize
    fortran = _contiguous(shape[::-1], strides[::-1], itemsize)
    return "F" if fortran and not _contiguous(shape, strides, itemsize) else "C"


def _moved(v, x, shape, order):
    """``v``, shaped as ``x`` and laid out in C order, reshaped to ``shape`` reading its
    elements in the order NumPy reads ``x`` with ``order``."""
    if order != "C":  # (the common call reads no layout)
        order = read_order(x, order)
        if isinstance(order, tuple):  # (ravel's "K")
            return anp.reshape(anp.transpose(v, order), shape)
    return _reshape(v, shape, order)


def _moved_back(g, x, order):
    """The VJP of ``_moved``: ``g`` put back in ``x``'s shape, each element where it was read."""
    if order != "C":
        order = read_order(x, order)
        if isinstance(order, tuple):
            laid = anp.reshape(g, tuple(shape_of(x)[i] for i in order))
            return anp.transpose(laid, tuple(_np.argsort(order).tolist()))
    return _reshape(g, shape_of(x), order)


def _reshape_moves(v, x, shape=None, order="C", **kwargs):
    if shape is None:  # (NumPy's deprecated keyword)
        shape = kwargs["newshape"]
    return _moved(v, x, shape, order)


def _ravel_moves(v, x, order="C"):
    return _moved(v, x, (-1,), order)


def _inverse_axes(axes, ndim):
    if axes is None:
        return None
    axes = [ax % ndim for ax in axes]
    return _np.argsort(axes).tolist()


# ----------------------------------------------------------------------------- selections
def _positions(args, argnums):
    """1-based flat positions for the arguments in ``argnums``, numbered one after another."""
    args = list(args)
    offsets = {}
    start = 1
    for i in argnums:
        shape = _np.shape(getval(args[i]))
        size = int(_np.prod(shape))
        offsets[i] = (start, size, shape)
        args[i] = _np.arange(start, start + size).reshape(shape)
        start += size
    return args, offsets, start


def _gather(flat, source):
    """``flat[source]`` shaped like ``source`` (position 0 holds a zero)."""
    return array_getitem(flat, source)


def _batched_gather(t, source, start: int, size: int, ans):
    """A batched tangent (leading batch axis) of the output of a selection: ``t`` is the
    batched tangent of the argument numbered from ``start`` (``size`` elements), ``source``
    says where each output element comes from (other positions: zero). None where the map is
    not a NumPy array (the caller then loops)."""
    if type(source) is not _np.ndarray:
        return None
    batch = shape_of(t)[0]
    local = _np.where((source >= start) & (source < start + size), source - (start - 1), 0)
    zero = constant_like(_np.zeros((batch, 1), dtype=dtype_of(t)), t)
    flat = anp.concatenate([zero, anp.reshape(t, (batch, size))], axis=1)
    return match_dtype(array_getitem(flat, (slice(None), local)), ans)


def gathered_in_batches(fun, moves=None) -> None:
    """A batched JVP for ``fun`` that only moves, copies or drops the elements of its first
    argument (reshape, transpose, indexing ...): where each output element comes from is
    found once, by applying ``fun`` to the argument's flat positions, and every tangent of
    the batch is gathered from there in one call. ``moves(v, x, *args, **kwargs)``: ``fun``
    applied to ``v``, shaped as ``x`` and laid out in C order, as NumPy applies it to ``x``
    (for a ``fun`` that reads x's memory layout: reshape's and ravel's orders)."""
    raw = fun.fun

    def source(x, args, kwargs):
        through = raw if moves is None else (
            lambda v, *args, **kwargs: moves(v, x, *args, **kwargs))
        return positions_through(through, (x, *args), kwargs, 0)

    def rule(t, ans, x, *args, **kwargs):
        return _batched_gather(t, source(x, args, kwargs).astype(_np.intp), 1,
                               int(_np.prod(shape_of(x))), ans)

    def pattern(argnum, ans, args, kwargs):  # the same map of positions
        return source_pattern(source(args[0], args[1:], kwargs), 1,
                              int(_np.size(getval(args[0]))), int(_np.size(ans)))

    defjvp_batched(fun, rule)
    defsparsity(fun, shapes_only(pattern, lambda n: (0,)))  # (reads the rest: the index)


def _selection_vjp(g, source, offsets, total, argnum, x):
    start, size, shape = offsets[argnum]
    flat = untake(anp.ravel(g), _np.ravel(source), (total,), dtype_of(x))
    return match_dtype(anp.reshape(array_getitem(flat, slice(start, start + size)), shape), x)


def selection(fun, argnums=(0,), source=None):
    """Rules for ``fun`` whose outputs are copies of elements of ``args[argnums]`` or zeros.

    ``source(positions_args, args, kwargs)`` overrides how the map of where each
    output element came from is computed (e.g. for sort, whose map depends on data).
    """
    raw = fun.fun

    def source_map(args, kwargs):
        pos_args, offsets, total = _positions(args, argnums)
        like = next((a for a in args if hasattr(a, "shape") and not on_host(a)), None)
        if like is not None:  # other arguments (indices) in CuPy: the positions join them
            pos_args = [constant_like(p, like) if i in offsets else p
                        for i, p in enumerate(pos_args)]
        if source is not None:
            src = source(pos_args, args, kwargs)
        else:
            src = raw(*pos_args, **kwargs)
        return (src if hasattr(src, "shape") else _np.asarray(src)), offsets, total

    def check_differentiable(diff_argnums, mode):
        for i in diff_argnums:
            if i not in argnums:
                raise not_differentiable(fun, i, mode)

    def vjp(g, diff_argnums, ans, args, kwargs):
        check_differentiable(diff_argnums, "VJP")
        src, offsets, total = source_map(args, kwargs)
        return tuple(_selection_vjp(g, src, offsets, total, i, args[i]) for i in diff_argnums)

    def jvp(diff_argnums, tangents, ans, args, kwargs):
        check_differentiable(diff_argnums, "JVP")
        src, offsets, total = source_map(args, kwargs)
        by_argnum = dict(zip(diff_argnums, tangents))
        like = tangents[0]
        parts = [constant_like(_np.zeros(1, dtype=dtype_of(ans)), like)]
        for i in argnums:
            _, size, shape = offsets[i]
            t = by_argnum.get(i)
            parts.append(constant_like(_np.zeros(size, dtype=dtype_of(ans)), like) if t is None
                         else anp.ravel(t))
        return match_dtype(_gather(anp.concatenate(parts), src), ans)

    def batched(i):
        def rule(t, ans, *args, **kwargs):
            src, offsets, _ = source_map(args, kwargs)
            start, size, _ = offsets[i]
            return _batched_gather(t, src, start, size, ans)

        return rule

    defvjp_whole(fun, vjp)
    defjvp_argnums(fun, jvp)
    defjvp_batched(fun, *map(batched, argnums), argnums=argnums)

    def pattern(i, ans, args, kwargs):
        src, offsets, _ = source_map(args, kwargs)
        start, size, _ = offsets[i]
        return source_pattern(_np.asarray(src), start, size, int(_np.size(ans)))

    if source is None or source is _pad_source:  # sort's map depends on the values: dense
        defsparsity(fun, shapes_only(pattern, lambda n: argnums))


def _pad_source(pos_args, args, kwargs):
    mode = pos_args[2] if len(pos_args) > 2 else kwargs.get("mode", "constant")
    if callable(mode) or mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        raise NotImplementedError(
            f"chainrule differentiates numpy.pad in the modes that copy elements (constant, "
            f"edge, reflect, symmetric, wrap), not mode={mode!r}. Build the padding from "
            f"slices and concatenate instead."
        )
    kwargs = {k: v for k, v in kwargs.items() if k not in ("constant_values", "mode")}
    return _np.pad(pos_args[0], pos_args[1], mode, **kwargs)  # padding by constants: position 0


def _sort_source(pos_args, args, kwargs):
    x, pos = derivative_free(args[0]), pos_args[0]  # (under jit, argsort's answer is guarded)
    axis = kwargs.get("axis", args[1] if len(args) > 1 else -1)
    if axis is None:
        x, pos, axis = _np.ravel(x), _np.ravel(pos), 0
    order = _np.argsort(x, axis=axis, kind="stable")
    return _np.take_along_axis(constant_like(pos, order), order, axis=axis)


def _partition_source(pos_args, args, kwargs):
    x, pos = derivative_free(args[0]), pos_args[0]
    kth = args[1] if len(args) > 1 else kwargs["kth"]
    axis = kwargs.get("axis", args[2] if len(args) > 2 else -1)
    if axis is None:
        x, pos, axis = _np.ravel(x), _np.ravel(pos), 0
    order = _np.argpartition(x, kth, axis=axis)
    return _np.take_along_axis(constant_like(pos, order), order, axis=axis)


# ----------------------------------------------------------------------------- atleast_nd
def _atleast_vjp(g, argnums, ans, args, kwargs):
    # atleast_nd only inserts axes of length 1: undo it with a reshape (per array when
    # several arrays were passed and a tuple came back)
    if len(args) == 1:
        return (anp.reshape(g, shape_of(args[0])),)
    return tuple(anp.reshape(g[i], shape_of(args[i])) for i in argnums)


def _def_atleast(fun):
    defvjp_whole(fun, _atleast_vjp)
    defjvp_argnums(fun, lambda argnums, gs, ans, args, kwargs: fun(
        *_with_zeros(argnums, gs, args, 0)))


# ----------------------------------------------------------------------------- splitting
def _split_axis(name, x, axis):
    if name == "hsplit":
        return 0 if anp.ndim(x) == 1 else 1
    return {"vsplit": 0, "dsplit": 2}.get(name, axis)


def _def_split(fun):
    def vjp(g, ans, x, indices_or_sections, axis=0):
        axis = _split_axis(fun.__name__, x, axis)
        return match_dtype(anp.concatenate(list(g), axis=axis), x)

    linear(fun, vjp)


# ----------------------------------------------------------------------------- joining
# The VJPs of joining functions take all the pieces' cotangents at once (``positions``:
# which pieces are traced), so that joining M traced pieces costs O(M), not O(M^2).
def _offsets(sizes):
    """Start of each piece in the joined axis, and the end of the last."""
    return list(itertools.accumulate(sizes, initial=0))


def _concatenate_vjp(g, ans, static, arrays, positions):
    (axis,) = static
    if axis is None:  # NumPy flattens each piece first
        return _array_vjp(g, ans, (None, None), arrays, positions)
    # (the arrays kept as ShapeOnly; a constant piece may be a list: np.shape's)
    starts = _offsets([a.shape[axis] if type(a) in _ARRAY_LIKE else _np.shape(a)[axis]
                       for a in arrays])
    if type(g) is _np.ndarray:  # (the common case: its pieces are views, taken here)
        lead = (slice(None),) * (axis % g.ndim)
        return tuple(match_dtype(g[lead + (slice(starts[i], starts[i + 1]),)], arrays[i])
                     for i in positions)
    lead = (slice(None),) * (axis % anp.ndim(g))
    return tuple(match_dtype(array_getitem(g, lead + (slice(starts[i], starts[i + 1]),)),
                             arrays[i]) for i in positions)


def _stack_vjp(g, ans, static, arrays, positions):
    (axis,) = static
    leading = (slice(None),) * (axis % anp.ndim(ans))
    return tuple(match_dtype(array_getitem(g, leading + (i,)), arrays[i]) for i in positions)


def _size(x) -> int:
    """The size of a piece, or of what a node keeps of it (``ShapeOnly``: the shape)."""
    return math.prod(x.shape) if type(x) is ShapeOnly else int(_np.size(getval(x)))


def _array_vjp(g, ans, static, elems, positions):
    starts = _offsets(_size(e) for e in elems)
    flat = anp.ravel(g)
    return tuple(match_dtype(anp.reshape(array_getitem(flat, slice(starts[i], starts[i + 1])),
                                         shape_of(elems[i])), elems[i])
                 for i in positions)


def _with_zeros(argnums, tangents, args, first):
    """Arguments from ``first`` on, with tangents where traced and zeros elsewhere."""
    by_argnum = dict(zip(argnums, tangents))
    return [by_argnum[i] if i in by_argnum else
            constant_like(_np.zeros_like(getval(args[i])), tangents[0])
            for i in range(first, len(args))]


def _def_joining(fun, vjp, n_static, reads=None):
    def rule(g, argnums, ans, args, kwargs):
        return vjp(g, ans, args[:n_static], args[n_static:], [i - n_static for i in argnums])

    defvjp_whole(fun, rule, reads=reads)
    defjvp_argnums(fun, lambda argnums, gs, ans, args, kwargs: match_dtype(fun(
        *args[:n_static], *_with_zeros(argnums, gs, args, n_static)), ans))


# ----------------------------------------------------------------------------- functional updates
def _last_writes(shape, index):
    """Mask over ``x[index]``'s elements: True where the write is the one NumPy keeps
    (with repeated integer indices, the last write to a position wins)."""
    pos = _np.zeros(shape, dtype=_np.intp)
    sel_shape = _np.shape(pos[index])
    n = int(_np.prod(sel_shape))
    pos[index] = _np.arange(1, n + 1).reshape(sel_shape)
    kept = _np.zeros(n, dtype=bool)
    kept[pos[pos > 0] - 1] = True
    return kept.reshape(sel_shape)


def _update_vjp_v(g, ans, x, index, v):
    picked = array_getitem(g, index)
    if not _is_basic_index(index):
        kept = _last_writes(shape_of(x), index)
        if not kept.all():
            picked = anp.where(kept, picked, _np.zeros((), dtype_of(picked)))
    return unbroadcast(picked, v)


def _add_vjp_v(g, ans, x, index, v):
    return unbroadcast(array_getitem(g, index), v)


def _update_jvp_v(t, ans, x, index, v):
    return anp.index_update(_np.zeros_like(getval(ans)), index, t)


# ----------------------------------------------------------------------------- constructors
def _full_vjp(g, ans, shape, fill_value, *a, **k):
    return unbroadcast(g, fill_value)


def _linspace_impl(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    steps = _np.linspace(0.0, 1.0, num, endpoint=endpoint)
    # (numbers stay numbers: a 0-d NumPy array would not mix with a CuPy start or stop)
    start_, stop_ = (anp.asarray(v) if isinstance(v, (list, tuple)) else v for v in (start, stop))
    ndim = max(anp.ndim(start_), anp.ndim(stop_))
    steps = constant_like(steps.reshape((-1,) + (1,) * ndim),
                          start_ if not on_host(start_) else stop_)
    out = start_ * (1.0 - steps) + stop_ * steps
    if endpoint and num > 1:  # NumPy sets the last sample to ``stop`` exactly
        out = anp.concatenate([out[:-1], anp.expand_dims(stop_ + 0.0 * start_, 0)], axis=0)
    out = anp.moveaxis(out, 0, axis) if axis != 0 else out
    if dtype is not None:
        out = out.astype(dtype)
    if retstep:
        div = (num - 1) if endpoint else num
        return out, (stop_ - start_) / div
    return out


def _diff_impl(a, n=1, axis=-1, prepend=None, append=None):
    parts = []
    if _given(prepend):
        parts.append(_side(prepend, a, axis))
    parts.append(a)
    if _given(append):
        parts.append(_side(append, a, axis))
    x = anp.concatenate(parts, axis=axis) if len(parts) > 1 else a
    ndim = anp.ndim(x)
    hi = tuple(slice(1, None) if i == axis % ndim else slice(None) for i in range(ndim))
    lo = tuple(slice(None, -1) if i == axis % ndim else slice(None) for i in range(ndim))
    for _ in range(n):
        x = x[hi] - x[lo]
    return x


def _given(value) -> bool:
    # (NumPy's own default, where a traced keyword moved the arguments into place)
    return value is not None and value is not _np._NoValue


def _side(value, a, axis):
    """``prepend``/``append`` of ``diff`` broadcast to a side of ``a`` (traced, where it
    is: ``diff(x, append=x[-1:])``)."""
    shape = _side_shape(a, axis, value)
    if isbox(value):
        return anp.broadcast_to(value, shape)
    return _np.broadcast_to(constant_like(_np.asarray(value), a), shape)


def _side_shape(a, axis, value):
    shape = list(shape_of(a))
    if _np.ndim(value) == 0:
        shape[axis] = 1
        return tuple(shape)
    return _np.shape(value)


def _ediff1d_impl(ary, to_end=None, to_begin=None):
    flat = anp.ravel(ary)
    out = flat[1:] - flat[:-1]
    parts = [p for p in (to_begin, out, to_end) if p is not None]
    parts = [anp.ravel(p if isbox(p) else constant_like(_np.asarray(p), ary).astype(
        dtype_of(ary))) if p is not out else p for p in parts]
    return anp.concatenate(parts) if len(parts) > 1 else out


def _axis_slices(ndim, axis, *slices):
    return [tuple(s if i == axis else slice(None) for i in range(ndim)) for s in slices]


def _gradient_1d(f, h, axis, edge_order):
    n = anp.ndim(f)
    mid, hi, lo, first, second, third, last, last2, last3 = _axis_slices(
        n, axis, slice(1, -1), slice(2, None), slice(None, -2), slice(0, 1), slice(1, 2),
        slice(2, 3), slice(-1, None), slice(-2, -1), slice(-3, -2))
    del mid
    inner = (f[hi] - f[lo]) / (2.0 * h)
    if edge_order == 1:
        begin = (f[second] - f[first]) / h
        end = (f[last] - f[last2]) / h
    else:
        begin = (-1.5 * f[first] + 2.0 * f[second] - 0.5 * f[third]) / h
        end = (1.5 * f[last] - 2.0 * f[last2] + 0.5 * f[last3]) / h
    return anp.concatenate([begin, inner, end], axis=axis)


def _gradient_impl(f, *varargs, axis=None, edge_order=1):
    n = anp.ndim(f)
    axes = list(range(n)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    axes = [a % n for a in axes]
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacing = list(varargs) * len(axes)
    else:
        spacing = list(varargs)
    if any(anp.ndim(h) != 0 for h in spacing):
        raise NotImplementedError(
            "chainrule differentiates numpy.gradient with scalar spacings only; for "
            "coordinate arrays, write the differences with chainrule.numpy.diff."
        )
    if not _np.issubdtype(dtype_of(f), _np.inexact):
        f = f.astype(float)
    out = tuple(_gradient_1d(f, h, ax, edge_order) for ax, h in zip(axes, spacing))
    return out[0] if len(out) == 1 else out


def _interp_impl(x, xp, fp, left=None, right=None, period=None):
    if period is not None:
        raise NotImplementedError("chainrule differentiates numpy.interp without period=.")
    # (NumPy takes sequences too; the intervals found index them below)
    xp, fp = (anp.array(v) if isinstance(v, list | tuple) else v for v in (xp, fp))
    xp_raw = _np.asarray(decided(xp, _np.asarray))  # (under chainrule.jit, guarded)
    x_raw = derivative_free(x)  # (under jit, searchsorted's answer is guarded)
    i = _np.clip(_np.searchsorted(xp_raw, x_raw, side="right") - 1, 0, len(xp_raw) - 2)
    x0, x1 = xp[i], xp[i + 1]
    w = (x - x0) / (x1 - x0)
    w = anp.where(x_raw < xp_raw[0], 0.0, anp.where(x_raw > xp_raw[-1], 1.0, w))
    out = fp[i] * (1.0 - w) + fp[i + 1] * w
    if left is not None:
        out = anp.where(x_raw < xp_raw[0], left, out)
    if right is not None:
        out = anp.where(x_raw > xp_raw[-1], right, out)
    return out


def _trapezoid_impl(y, x=None, dx=1.0, axis=-1):
    n = anp.ndim(y)
    hi, lo = _axis_slices(n, axis % n, slice(1, None), slice(None, -1))
    if x is None:
        d = dx
    else:
        d = x[1:] - x[:-1] if anp.ndim(x) == 1 else x[hi] - x[lo]
        if anp.ndim(x) == 1 and n > 1:
            d = anp.reshape(d, tuple(-1 if i == axis % n else 1 for i in range(n)))
    return anp.sum(d * (y[hi] + y[lo]), axis=axis) / 2.0


def _convolve_full(a, v):
    na, nv = anp.size(a), anp.size(v)
    k = _np.arange(na + nv - 1)[:, None] - _np.arange(na)[None, :]  # v's index per term
    valid = (k >= 0) & (k < nv)
    v_pad = anp.concatenate([v, constant_like(_np.zeros(1, dtype=dtype_of(v)), v)])
    taps = v_pad[index_like(_np.where(valid, k, nv), v_pad)]
    return anp.sum(taps * a, axis=1)


def _convolve_impl(a, v, mode="full"):
    full = _convolve_full(anp.ravel(a), anp.ravel(v))
    long, short = max(anp.size(a), anp.size(v)), min(anp.size(a), anp.size(v))
    if mode == "full":
        return full
    if mode == "same":
        start = (short - 1) // 2
        return full[start:start + long]
    if mode == "valid":
        return full[short - 1:long]
    raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', not {mode!r}")


def _correlate_impl(a, v, mode="valid"):
    return _convolve_impl(a, anp.conj(v)[::-1], mode)


def _polyval_impl(p, x):
    y = anp.zeros_like(getval(x))
    for i in range(len(p)):
        y = y * x + p[i]
    return y


def _meshgrid_impl(*xi, copy=True, sparse=False, indexing="xy"):
    n = len(xi)
    axes = list(range(n))
    if indexing == "xy" and n > 1:
        axes[0], axes[1] = 1, 0
    grids = [anp.reshape(x, tuple(-1 if d == ax else 1 for d in range(n)))
             for x, ax in zip(xi, axes)]
    if not sparse:
        shape = tuple(_np.size(getval(x)) for x in xi)
        if indexing == "xy" and n > 1:
            shape = (shape[1], shape[0]) + shape[2:]
        grids = [anp.broadcast_to(gr, shape) for gr in grids]
    return tuple(grids)


# ----------------------------------------------------------------------------- sparsity
# (chainrule._sparsity.patterns; the functions defined by ``selection``, ``gathered_in_batches`` and
# ``composite`` above carry theirs: copies read off positions, composites found from impl)
def _convolution_pattern(correlate: bool):
    """``convolve``/``correlate`` of 1-D ``a`` and ``v``: output n reads a band of each."""

    def rule(argnum, ans, args, kwargs):
        na, nv = int(_np.size(args[0])), int(_np.size(args[1]))
        mode = args[2] if len(args) > 2 else kwargs.get("mode", "valid" if correlate else "full")
        short = min(na, nv)
        start = {"full": 0, "same": (short - 1) // 2, "valid": short - 1}.get(mode)
        if start is None:
            return None
        own, other = (na, nv) if argnum == 0 else (nv, na)
        band = convolution_band(int(_np.size(ans)), own, other, start)
        if argnum == 1 and correlate:  # correlate reads v reversed (and conjugated)
            band = band[:, ::-1]
        return band.tocsr()

    return shapes_only(rule)  # (mode is read; a and v only by their lengths)


def _index_add_pattern(argnum, ans, args, kwargs):
    """``index_add(x, index, v)``: x passes through; v's elements add into x[index]."""
    if argnum == 0:
        return identity_pattern(argnum, ans, args, kwargs)
    x, index, v = args[0], args[1], args[2]
    rows = _np.arange(int(_np.size(x))).reshape(shape_of(x))[index]
    cols = _np.broadcast_to(_np.arange(int(_np.size(v))).reshape(shape_of(v)), _np.shape(rows))
    return map_pattern(rows, cols, (int(_np.size(ans)), int(_np.size(v))))


def _interp_pattern(argnum, ans, args, kwargs):
    """``interp(x, xp, fp)``: output i reads x[i]; which xp and fp it reads depends on x."""
    return elementwise_pattern(argnum, ans, args, kwargs) if argnum == 0 else None



# ----------------------------------------------------------------------------- batching rules
# (``chainrule.vmap``; the patterns they share are ``chainrule.numpy.batching_patterns``')
def _take_batch(values, batched, kwargs):
    """take(a, indices, axis): each example's own indices into one array or its own."""
    if not batched[1]:
        return _take_shared_indices_batch(values, batched, kwargs)
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


_take_shared_indices_batch = along_axis(anp.take, "flat")


def _polyval_batch(values, batched, kwargs):
    p, x = values
    if batched[0]:
        return NotImplemented
    return anp.polyval(p, x)


def _flip_axis_batch(axis: int):
    """fliplr / flipud: an example's axis ``axis`` flipped."""

    def rule(values, batched, kwargs):
        if not only_first(batched) or example_ndim(values[0], True) <= axis:
            return NotImplemented
        return anp.flip(values[0], axis + 1)
    return rule


def _expand_dims_batch(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    axis = values[1] if len(values) > 1 else kwargs["axis"]
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    ndim = example_ndim(values[0], True) + len(axes)
    return anp.expand_dims(values[0], shifted_axis(axes, ndim))


def _squeeze_batch(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    axis = values[1] if len(values) > 1 else kwargs.get("axis")
    shape = _np.shape(values[0])[1:]
    if axis is None:
        axis = tuple(i for i, n in enumerate(shape) if n == 1)
    return anp.squeeze(values[0], shifted_axis(axis, len(shape)))


def _reshape_batch(values, batched, kwargs):
    order = values[2] if len(values) > 2 else kwargs.get("order", "C")
    if not only_first(batched) or read_order(values[0], order, batched=True) != "C":
        return NotImplemented
    shape = values[1] if len(values) > 1 else kwargs.get("shape", kwargs.get("newshape"))
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    if -1 in shape:  # worked out for an example, as an empty batch cannot
        shape = _np.broadcast_to(False, _np.shape(values[0])[1:]).reshape(shape).shape
    return anp.reshape(values[0], (_np.shape(values[0])[0],) + shape)


def _ravel_batch(values, batched, kwargs):
    order = values[1] if len(values) > 1 else kwargs.get("order", "C")
    if read_order(values[0], order, batched=True) != "C":  # (F, or "K" reordering axes)
        return NotImplemented
    return flat_examples(values[0])


def _transpose_batch(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    ndim = example_ndim(values[0], True)
    axes = values[1] if len(values) > 1 else kwargs.get("axes")
    axes = tuple(reversed(range(ndim))) if axes is None else tuple(axes)
    return anp.transpose(values[0], (0,) + shifted_axis(axes, ndim))


def _broadcast_to_batch(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    shape = values[1] if len(values) > 1 else kwargs["shape"]
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(shape)
    value = values[0]
    missing = len(shape) - example_ndim(value, True)
    if missing:
        value = anp.expand_dims(value, tuple(range(1, 1 + missing)))
    return anp.broadcast_to(value, (_np.shape(value)[0],) + shape)


def _getitem_batch(values, batched, kwargs):
    (x, index), (batched_x, batched_index) = values, batched
    if batched_index:  # x[i], i an integer array of each example's own indices
        if _np.result_type(index).kind not in "iu" or not example_ndim(x, batched_x):
            return NotImplemented
        if not batched_x:
            return array_getitem(x, index)
        rows = _np.arange(_np.shape(x)[0]).reshape((-1,) + (1,) * (_np.ndim(index) - 1))
        return array_getitem(x, (rows, index))
    entries = batch_index(index)
    if entries is None:
        return NotImplemented
    entries = array_getitem(x, entries)
    if _np.ndim(entries) == 1 and scalar_index(index):
        return anp.copy(entries)
    if _advanced(index):
        # (a new array, each example's in C order as x[index] is: NumPy lays x[:, index]
        # out with the batch axis innermost, and a sum over the examples' rows after it
        # would add in another order than the loop's)
        return anp.ascontiguousarray(entries)
    return entries


def _advanced(index) -> bool:
    """Whether an index (of one example) holds an integer or boolean array: NumPy's
    answer is then a new array, not a view."""
    parts = index if type(index) is tuple else (index,)
    return any(isinstance(p, (list, _np.ndarray)) and _np.ndim(p) > 0 for p in parts)


def _untake_batch(values, batched, kwargs):
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


def _index_write_batch(fun):
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


def _atleast_batch(n: int):
    """atleast_1d / atleast_2d of one array: axes added in front of an example's."""

    def rule(values, batched, kwargs):
        if len(values) != 1:
            return NotImplemented
        missing = n - example_ndim(values[0], True)
        if missing <= 0:
            return values[0]
        return anp.expand_dims(values[0], tuple(range(1, 1 + missing)))

    return rule


def _atleast_3d_batch(values, batched, kwargs):
    """atleast_3d of one array: (1, 1, 1), (1, N, 1) and (M, N, 1) for 0-, 1- and 2-d."""
    if len(values) != 1:
        return NotImplemented
    v, ndim = values[0], example_ndim(values[0], True)
    axes = {0: (1, 2, 3), 1: (1, 3), 2: (3,)}.get(ndim)
    return v if axes is None else anp.expand_dims(v, axes)


def _rollaxis_batch(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    v, ndim = values[0], example_ndim(values[0], True)
    axis = values[1] if len(values) > 1 else kwargs["axis"]
    start = values[2] if len(values) > 2 else kwargs.get("start", 0)
    if not -ndim <= start <= ndim:
        return NotImplemented  # NumPy's error, from the loop
    return anp.rollaxis(v, shifted_axis(axis, ndim), (start + ndim if start < 0 else start) + 1)


def _take_along_axis_batch(values, batched, kwargs):
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


def _tile_batch(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    a, reps = values[0], values[1] if len(values) > 1 else kwargs["reps"]
    reps = (reps,) if isinstance(reps, (int, _np.integer)) else tuple(reps)
    ndim = example_ndim(a, True)
    if len(reps) > ndim:
        a = anp.expand_dims(a, tuple(range(1, 1 + len(reps) - ndim)))
    reps = (1,) * (max(ndim, len(reps)) - len(reps)) + reps
    return anp.tile(a, (1,) + reps)


def _pad_batch(values, batched, kwargs):
    if not only_first(batched):
        return NotImplemented
    a, width = values[0], values[1] if len(values) > 1 else kwargs["pad_width"]
    width = _np.broadcast_to(_np.asarray(width), (example_ndim(a, True), 2))
    return anp.pad(a, [(0, 0)] + [tuple(w) for w in width.tolist()], *values[2:], **kwargs)


def _split_batch(fun):
    rule = along_axis(fun, "loop")

    def split(values, batched, kwargs):
        if not only_first(batched):
            return NotImplemented
        return list(rule(values, batched, kwargs))

    return split


def _directional_split_batch(fun):
    """hsplit / vsplit / dsplit of a batch: ``split`` along the example's axis (hsplit's
    second, the first of 1-D examples; vsplit's first; dsplit's third) moved past the
    batch; examples with too few axes run once each, for NumPy's error."""
    least_ndim = {"hsplit": 1, "vsplit": 2, "dsplit": 3}[fun.__name__]

    def split(values, batched, kwargs):
        ndim = example_ndim(values[0], True)
        if not only_first(batched) or kwargs or len(values) != 2 or ndim < least_ndim:
            return NotImplemented
        axis = _split_axis(fun.__name__, _np.empty((0,) * ndim), None)
        return list(anp.split(values[0], values[1], axis=axis + 1))

    return split


def _array_of_batch(values, batched, kwargs):
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


def _joined_batch(fun, new_axis: bool):
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


def _diag_batch(flat: bool):
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


# How chainrule.jit writes these calls on an ndarray (the ``lowering`` column): the C
# function NumPy's Python layer ends in, which answers the same bits and the same views.
def _transpose_method(vals, texts, kwtexts):
    b = bound_texts(("axes",), texts[1:], kwtexts)
    return None if b is None else f"{texts[0]}.transpose({b.get('axes', '')})"


def _reshape_method(vals, texts, kwtexts):
    b = bound_texts(("shape", "order"), texts[1:], kwtexts)
    if b is None or "shape" not in b:
        return None
    order = f", order={b['order']}" if "order" in b else ""
    return f"{texts[0]}.reshape({b['shape']}{order})"


def _moveaxis_as_transpose(vals, texts, kwtexts):
    """The ``transpose`` with the permutation that ``moveaxis`` computes from the shape
    (read from the axes' values: the entry's ``lowered_by_value``)."""
    if len(vals) != 3 or kwtexts:
        return None
    ndim = vals[0].ndim
    source = normalize_axis_tuple(vals[1], ndim, "source")
    destination = normalize_axis_tuple(vals[2], ndim, "destination")
    if len(source) != len(destination):
        return None
    order = [n for n in range(ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return f"{texts[0]}.transpose({tuple(order)!r})"


def _subscript(vals, texts, kwtexts):
    return f"{texts[0]}[{texts[1]}]" if len(texts) == 2 and not kwtexts else None


# fmt: off
# One block per primitive: its VJP and JVP (or the helper that registers both: ``linear``,
# ``selection``, ``composite`` ...), batched JVP, sparsity pattern, label, batching rule and
# Taylor rule (linear: the primitive only moves, copies or adds its arguments' elements;
# multilinear: a product of two).
# ----------------------------------------------------------------------------- reshaping
# (``gathered_in_batches``: the batched JVP and the sparsity, from the map of positions)
# (order "A", ravel's "K": the order NumPy reads x in, from x's layout: ``read_order``; the
# JVPs call NumPy's function directly in the common order "C", ~5% of a chain of reshapes)
linear(anp.reshape,      lambda g, ans, x, shape=None, order="C", **k: _moved_back(g, x, order),
       jvp_rule=lambda t, ans, x, shape=None, order="C", **k: anp.reshape(t, shape)
       if order == "C" and shape is not None else _reshape_moves(t, x, shape, order, **k))
gathered_in_batches(anp.reshape, _reshape_moves)
defbatch(anp.reshape,    _reshape_batch)
deflowering(anp.reshape, _reshape_method)  # the ndarray method (jit)
defsilent(anp.reshape)   # neither raises nor warns (jit may leave it out)
linear(anp.ravel,        lambda g, ans, x, order="C": _moved_back(g, x, order),
       jvp_rule=lambda t, ans, x, order="C": anp.ravel(t) if order == "C" else _ravel_moves(
           t, x, order))
gathered_in_batches(anp.ravel, _ravel_moves)
defbatch(anp.ravel,      _ravel_batch)
defsilent(anp.ravel)
linear(anp.squeeze,      lambda g, ans, x, *a, **k: anp.reshape(g, shape_of(x)))
gathered_in_batches(anp.squeeze)
defbatch(anp.squeeze,    _squeeze_batch)
defsilent(anp.squeeze)
linear(anp.expand_dims,  lambda g, ans, x, *a, **k: anp.reshape(g, shape_of(x)))
gathered_in_batches(anp.expand_dims)
defbatch(anp.expand_dims, _expand_dims_batch)
defsilent(anp.expand_dims)
linear(anp.transpose,    lambda g, ans, x, axes=None: anp.transpose(g, _inverse_axes(axes, anp.ndim(x))))
gathered_in_batches(anp.transpose)
defbatch(anp.transpose,  _transpose_batch)
deflowering(anp.transpose, _transpose_method)
defsilent(anp.transpose)
if anp.permute_dims is not anp.transpose:  # (NumPy 2: the same function)
    selection(anp.permute_dims)
linear(anp.swapaxes,     lambda g, ans, x, a1, a2: anp.swapaxes(g, a1, a2))
gathered_in_batches(anp.swapaxes)
defbatch(anp.swapaxes,   named_axes(anp.swapaxes, (1, "axis1", None), (2, "axis2", None)))
defsilent(anp.swapaxes)
linear(anp.moveaxis,     lambda g, ans, x, src, dst: anp.moveaxis(g, dst, src))
gathered_in_batches(anp.moveaxis)
defbatch(anp.moveaxis,   named_axes(anp.moveaxis, (1, "source", None), (2, "destination", None)))
deflowering(anp.moveaxis, _moveaxis_as_transpose)
deflowered_by_value(anp.moveaxis)  # jit writes the transpose its axes make
defsilent(anp.moveaxis)
linear(anp.broadcast_to, lambda g, ans, x, shape, **k: unbroadcast(g, x))
gathered_in_batches(anp.broadcast_to)
defbatch(anp.broadcast_to, _broadcast_to_batch)
defsilent(anp.broadcast_to)
selection(anp.rollaxis)
defbatch(anp.rollaxis,   _rollaxis_batch)
deftaylor_linear(anp.rollaxis)
for _fun, _batch in ((anp.atleast_1d, _atleast_batch(1)), (anp.atleast_2d, _atleast_batch(2)),
                     (anp.atleast_3d, _atleast_3d_batch)):
    _def_atleast(_fun)
    defsparsity(_fun, copy_rule(_fun.fun))  # several arrays in: a tuple of them out
    defbatch(_fun, _batch)
    deftaylor_linear(_fun)
    defsilent(_fun)

# ----------------------------------------------------------------------------- copies, casting
for _fun in (anp.copy, anp.asarray, anp.asanyarray, anp.ascontiguousarray, anp.asfortranarray,
             array_astype):
    linear(_fun,         lambda g, ans, x, *a, **k: match_dtype(g, x))
    defsparsity(_fun,    identity_pattern)
defbatch(anp.copy,       elementwise_batch(anp.copy))
defsilent(anp.copy)
defbatch(array_astype,   elementwise_batch(array_astype))
deftakes_masks(array_astype)  # elementwise: jit stages a mask through it
for _fun in (anp.asarray, anp.asanyarray, anp.ascontiguousarray):
    defbatch(_fun,       as_is(_fun))


def _asfortranarray_batch(values, batched, kwargs):
    """Each example Fortran-ordered (the batch's axis its outermost): the batch itself
    where its examples already are, as NumPy answers each example itself."""
    if not only_first(batched) or kwargs:
        return NotImplemented
    return anp.moveaxis(anp.asfortranarray(anp.moveaxis(values[0], 0, -1)), -1, 0)


defbatch(anp.asfortranarray, _asfortranarray_batch)

# ----------------------------------------------------------------------------- indexing
linear(array_getitem,    _getitem_vjp, reads=(1,))  # of x, only its shape and dtype
gathered_in_batches(array_getitem)
deflabel(array_getitem,  "{0}[{1:index}]")  # how explain writes a call (index notation)
defbatch(array_getitem,  _getitem_batch)
deflowering(array_getitem, _subscript)
defsilent(array_getitem, "fixed index")  # a traced index may be out of range
deftakes_index_arrays(array_getitem)  # x[i] has i's shape: jit stages i
linear(untake,           lambda g, ans, x, index, shape, dtype: array_getitem(g, index))
defsparsity(untake,      shapes_only(_untake_pattern, first_position))
defbatch(untake,         _untake_batch)
deftakes_index_arrays(untake)
selection(anp.take)
defbatch(anp.take,       _take_batch)
deftakes_index_arrays(anp.take)
deftaylor_linear(anp.take)
selection(anp.take_along_axis)
defbatch(anp.take_along_axis, _take_along_axis_batch)
deftakes_index_arrays(anp.take_along_axis)
deftaylor_linear(anp.take_along_axis)
selection(anp.compress,  argnums=(1,))
deftaylor_linear(anp.compress)
selection(anp.extract,   argnums=(1,))
deftaylor_linear(anp.extract)
selection(anp.delete)
deftaylor_linear(anp.delete)
selection(anp.insert,    argnums=(0, 2))
deftaylor_linear(anp.insert)
selection(anp.append,    argnums=(0, 1))
deftaylor_linear(anp.append)

# ----------------------------------------------------------------------------- rearranging
selection(anp.flip)
defbatch(anp.flip,       along_axis(anp.flip, "all"))
deftaylor_linear(anp.flip)
selection(anp.fliplr)
defbatch(anp.fliplr,     _flip_axis_batch(1))
deftaylor_linear(anp.fliplr)
selection(anp.flipud)
defbatch(anp.flipud,     _flip_axis_batch(0))
deftaylor_linear(anp.flipud)
selection(anp.rot90)
defbatch(anp.rot90,      named_axes(anp.rot90, (2, "axes", (0, 1))))
deftaylor_linear(anp.rot90)
selection(anp.roll)
defbatch(anp.roll,       along_axis(anp.roll, "loop"))
deftaylor_linear(anp.roll)
selection(anp.repeat)
defbatch(anp.repeat,     along_axis(anp.repeat, "flat"))
deftaylor_linear(anp.repeat)
selection(anp.tile)
defbatch(anp.tile,       _tile_batch)
deftaylor_linear(anp.tile)
selection(anp.pad,       source=_pad_source)
defbatch(anp.pad,        _pad_batch)
deftaylor_linear(anp.pad)

# ----------------------------------------------------------------------------- diagonals, triangles
selection(anp.diag)
defbatch(anp.diag,       _diag_batch(flat=False))
deftaylor_linear(anp.diag)
selection(anp.diagflat)
defbatch(anp.diagflat,   _diag_batch(flat=True))
deftaylor_linear(anp.diagflat)
selection(anp.diagonal)
defbatch(anp.diagonal,   named_axes(anp.diagonal, (2, "axis1", 0), (3, "axis2", 1)))
deftaylor_linear(anp.diagonal)
for _fun in (anp.tril, anp.triu):
    selection(_fun)
    defbatch(_fun,       as_is(_fun, 2))
    deftaylor_linear(_fun)

# ----------------------------------------------------------------------------- sorting
# (the order depends on the values: the sparsity is whole lines along the axis)
selection(anp.sort,      source=_sort_source)
defsparsity(anp.sort,    sort_pattern)
defbatch(anp.sort,       along_axis(anp.sort, "flat"))
deftaylor_linear(anp.sort)
selection(anp.partition, source=_partition_source)
defsparsity(anp.partition, partition_pattern)
defbatch(anp.partition,  along_axis(anp.partition, "flat"))
deftaylor_linear(anp.partition)
defbatch(anp.argsort,    along_axis(anp.argsort, "flat"))  # (integers: no derivative)

# ----------------------------------------------------------------------------- splitting
for _fun in (anp.split, anp.array_split, anp.hsplit, anp.vsplit, anp.dsplit):
    _def_split(_fun)
    defsparsity(_fun,    copy_rule(_fun.fun, only=(0,)))
for _fun in (anp.split, anp.array_split):
    defbatch(_fun,       _split_batch(_fun))
for _fun in (anp.hsplit, anp.vsplit, anp.dsplit):  # (a batch's views, not looped copies)
    defbatch(_fun,       _directional_split_batch(_fun))

# ----------------------------------------------------------------------------- joining
_def_joining(anp.concatenate_args, _concatenate_vjp, 1, reads=(0,))  # the pieces' shapes only
defsparsity(anp.concatenate_args, copy_rule(anp.concatenate_args.fun, first=1))
deflabel(anp.concatenate_args, lambda t: f"concatenate([{', '.join(t[1:])}], axis={t[0]})")
defbatch(anp.concatenate_args, _joined_batch(anp.concatenate_args, False))
deftaylor_linear(anp.concatenate_args)
_def_joining(anp.stack_args, _stack_vjp, 1)
defsparsity(anp.stack_args, copy_rule(anp.stack_args.fun, first=1))
deflabel(anp.stack_args, lambda t: f"stack([{', '.join(t[1:])}], axis={t[0]})")
defbatch(anp.stack_args, _joined_batch(anp.stack_args, True))
deftaylor_linear(anp.stack_args)
_def_joining(anp.array_from_args, _array_vjp, 2)
defsparsity(anp.array_from_args, copy_rule(anp.array_from_args.fun, first=2))
deflabel(anp.array_from_args, lambda t: f"array([{', '.join(t[2:])}])")
defbatch(anp.array_from_args, _array_of_batch)

# ----------------------------------------------------------------------------- functional updates
defvjp_direct(anp.index_update, lambda g, ans, x, index, v: match_dtype(anp.index_update(g, index, 0.0), x),
                                None, _update_vjp_v)
defjvp_direct(anp.index_update,        lambda t, ans, x, index, v: anp.index_update(t, index, 0.0),
                                None, _update_jvp_v)
defsparsity(anp.index_update,   copy_rule(anp.index_update.fun, only=(0, 2)))
defbatch(anp.index_update,      _index_write_batch(anp.index_update))
deftakes_index_arrays(anp.index_update)
# (linear in x and v together: each coefficient its own write, so a pole's inf written into
# x keeps to its order; the nested JVP mixed orders, 0 * nan of a higher one made nan)
deftaylor_linear(anp.index_update)
defvjp_direct(anp.index_add,    lambda g, ans, x, index, v: match_dtype(g, x),
                                None, _add_vjp_v)
defjvp_direct(anp.index_add,           lambda t, ans, x, index, v: match_dtype(t, ans),
                                None, lambda t, ans, x, index, v: anp.index_add(
                                    _np.zeros_like(getval(ans)), index, t))
defsparsity(anp.index_add,      shapes_only(_index_add_pattern, lambda n: (0, 2)))
defbatch(anp.index_add,         _index_write_batch(anp.index_add))
deftaylor_linear(anp.index_add)

# ----------------------------------------------------------------------------- constructors
defvjp_direct(anp.full, None, _full_vjp)
defjvp_direct(anp.full,        None, lambda t, ans, shape, fill_value, *a, **k: match_dtype(anp.broadcast_to(t, shape_of(ans)), ans))
defsparsity(anp.full,   shapes_only(lambda argnum, ans, args, kwargs: elementwise_pattern(argnum, ans, args, kwargs)))
deftaylor_linear(anp.full)
composite(anp.linspace, _linspace_impl)
deftaylor_linear(anp.linspace)
composite(anp.meshgrid, _meshgrid_impl)

# ----------------------------------------------------------------------------- formulas
# (``composite``: the VJP, JVP and sparsity of the formula ``impl``)
composite(anp.diff,      _diff_impl)
defbatch(anp.diff,       along_axis(anp.diff, "loop"))
deftaylor_linear(anp.diff)
composite(anp.ediff1d,   _ediff1d_impl)
deftaylor_linear(anp.ediff1d)
composite(anp.gradient,  _gradient_impl)
composite(anp.interp,    _interp_impl)
defsparsity(anp.interp,  shapes_only(_interp_pattern))
defbatch(anp.interp,     as_is(anp.interp))
composite(anp.trapezoid, _trapezoid_impl)
defbatch(anp.trapezoid,  along_axis(anp.trapezoid, "loop"))
deftaylor(anp.trapezoid, make_multilinear_taylor(anp.trapezoid))
composite(anp.convolve,  _convolve_impl)
defsparsity(anp.convolve, _convolution_pattern(correlate=False))
deftaylor(anp.convolve,  make_multilinear_taylor(anp.convolve))
composite(anp.correlate, _correlate_impl)
defsparsity(anp.correlate, _convolution_pattern(correlate=True))
deftaylor(anp.correlate, make_multilinear_taylor(anp.correlate))
composite(anp.polyval,   _polyval_impl)
defbatch(anp.polyval,    _polyval_batch)
# fmt: on
