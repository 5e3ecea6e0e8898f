"""Sparse derivatives, the pieces below the rule tables: the local patterns that primitives
declare (``defsparsity``), and the colourings of a pattern's columns.

A local pattern is the boolean matrix of d answer / d args[argnum] (answer size x
argument size, CSR). Rules are called with the node's arguments; a global pattern must
hold at every x, so a rule reads the value of no traced argument: it declares the
positions whose shapes alone it reads (``shape_only``), or takes ``traced`` and
``local`` (``wants_traced``) and reads a traced value only when ``local`` is true.
Detection and propagation are in ``_sparse_detect``, evaluation in ``_sparse_eval``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as _np


def _sp():
    import scipy.sparse as sp  # imported on first use: scipy is not needed to import chainrule

    return sp


def _size(value) -> int:
    return int(_np.size(value))


# ----------------------------------------------------------------------------- local patterns
# Helpers the rule tables use in their ``defsparsity`` declarations.


def map_pattern(rows, cols, shape):
    """A boolean CSR matrix with ones at (rows, cols)."""
    sp = _sp()
    rows, cols = _np.ravel(rows), _np.ravel(cols)
    data = _np.ones(rows.size, dtype=bool)
    return sp.csr_matrix((data, (rows, cols)), shape=shape)


def every_position(n_args: int) -> range:
    return range(n_args)


def first_position(n_args: int) -> tuple:
    return (0,)


def shapes_only(rule: Callable, positions: Callable = every_position) -> Callable:
    """Declare that ``rule`` reads only the shapes of the arguments at ``positions(number
    of arguments)``, so a traced argument there (a mask, a second operand) leaves the
    rule's pattern global. Unmarked rules read every argument but the one differentiated.
    Returns ``rule``."""
    rule.shape_only = positions
    return rule


def elementwise_pattern(argnum: int, ans, args, kwargs):
    """A broadcasting elementwise function: output element i depends on the element of
    ``args[argnum]`` broadcast onto i."""
    x = args[argnum]
    shape, out_shape = _np.shape(x), _np.shape(ans)
    size = _size(x)
    cols = _np.broadcast_to(_np.arange(size).reshape(shape), out_shape)
    return map_pattern(_np.arange(_size(ans)), cols, (_size(ans), size))


shapes_only(elementwise_pattern)  # (where's condition included: either branch may be taken)


def reduction_pattern(argnum: int, ans, args, kwargs):
    """A reduction along ``axis`` (argument 1 or keyword): each output depends on the
    elements reduced into it."""
    x = args[argnum]
    shape = _np.shape(x)
    axis = kwargs.get("axis", args[1] if len(args) > 1 else None)
    # keepdims (by keyword or position) keeps the rank: read it off the answer
    keepdims = _np.ndim(ans) == len(shape)
    out = _np.arange(_size(ans)).reshape(_np.shape(ans))
    if axis is None:
        rows = _np.zeros(shape, dtype=_np.intp)
    else:
        axes = (axis,) if _np.ndim(axis) == 0 else tuple(axis)
        axes = sorted(a % len(shape) for a in axes)
        if not keepdims:
            out = _np.expand_dims(out, tuple(axes))
        rows = _np.broadcast_to(out, shape)
    return map_pattern(rows, _np.arange(_size(x)), (_size(ans), _size(x)))


shapes_only(reduction_pattern, first_position)  # (the axis is read)


def _lines(shape: tuple, axis) -> _np.ndarray:
    """The flat positions of an array of ``shape``, one row per line along ``axis``
    (the flattened array for None)."""
    positions = _np.arange(int(_np.prod(shape, dtype=_np.int64))).reshape(shape)
    if axis is None:
        return positions.reshape(1, -1)
    moved = _np.moveaxis(positions, axis, -1)
    return moved.reshape(-1, moved.shape[-1]) if moved.ndim else positions.reshape(1, 1)


def cumulative_pattern(argnum: int, ans, args, kwargs):
    """``cumsum``/``cumprod`` (and the nan forms) along ``axis`` (argument 1 or keyword;
    None: the flattened array): output i of a line depends on elements 0 .. i of it."""
    x = args[argnum]
    axis = kwargs.get("axis", args[1] if len(args) > 1 else None)
    lines = _lines(_np.shape(x), axis)
    before, upto = _np.tril_indices(lines.shape[1])
    # the answer has x's shape (or its flattening): its line positions are x's
    return map_pattern(lines[:, before], lines[:, upto], (_size(ans), _size(x)))


shapes_only(cumulative_pattern, first_position)


def _ordered(x, ans, axis, order: Callable, local: bool):
    """The pattern of a reordering along ``axis`` (None: of the flattened array):
    globally each output depends on its whole line; locally on the element ``order(x,
    axis)`` puts there."""
    if axis is None:
        x, axis = _np.ravel(x), 0
    shape = (_size(ans), _size(x))
    if local:
        positions = _np.arange(x.size).reshape(x.shape)
        source = _np.take_along_axis(positions, order(x, axis), axis=axis)
        return map_pattern(_np.arange(x.size), source, shape)
    lines = _lines(x.shape, axis)
    width = lines.shape[1]
    return map_pattern(_np.repeat(lines, width, axis=1), _np.tile(lines, (1, width)), shape)


def sort_pattern(argnum: int, ans, args, kwargs, traced=(), local: bool = False):
    """``sort(x, axis=-1)``: where each element lands depends on the values."""
    axis = kwargs.get("axis", args[1] if len(args) > 1 else -1)
    order = lambda v, a: _np.argsort(v, axis=a, kind="stable")  # noqa: E731  (as sort's JVP)
    return _ordered(_np.asarray(args[argnum]), ans, axis, order, local)


def partition_pattern(argnum: int, ans, args, kwargs, traced=(), local: bool = False):
    """``partition(x, kth, axis=-1)``: as ``sort``."""
    kth = args[1] if len(args) > 1 else kwargs["kth"]
    axis = kwargs.get("axis", args[2] if len(args) > 2 else -1)
    order = lambda v, a: _np.argpartition(v, kth, axis=a)  # noqa: E731
    return _ordered(_np.asarray(args[argnum]), ans, axis, order, local)


sort_pattern.wants_traced = partition_pattern.wants_traced = True  # they take ``local``


def source_pattern(source, start: int, size: int, ans_size: int):
    """The pattern of a selection: ``source`` holds, per output element, the 1-based
    position it was copied from (positions ``start`` .. ``start + size - 1`` belong to the
    argument; anything else, the other arguments or 0 for a constant)."""
    src = _np.ravel(_np.asarray(source))
    rows = _np.nonzero((src >= start) & (src < start + size))[0]
    return map_pattern(rows, src[rows] - start, (ans_size, size))


def positions_through(raw: Callable, args, kwargs, argnum: int, zeroed=()) -> _np.ndarray:
    """Where each output element of ``raw`` (a function that only copies, moves or drops
    elements) comes from: ``raw`` applied to the 1-based flat positions of ``args[argnum]``,
    the arguments at the positions in ``zeroed`` replaced by zeros (0: from none of them).
    The batched JVPs of such functions gather by this map; their sparsity rules read it."""
    args = list(args)
    for i in zeroed:
        if i != argnum and i < len(args):
            args[i] = _np.zeros(_np.shape(args[i]))
    x = args[argnum]
    args[argnum] = _np.arange(1, _size(x) + 1, dtype=float).reshape(_np.shape(x))
    return _np.asarray(raw(*args, **kwargs))


def copy_rule(raw: Callable, first: int = 0, only: tuple | None = None):
    """The sparsity rule of a function whose outputs are copies of elements of its data
    arguments (``args[first:]``, or the positions in ``only``) or constants
    (``positions_through``, the other data arguments zeroed)."""

    def rule(argnum, ans, args, kwargs):
        data = range(first, len(args)) if only is None else only
        source = positions_through(raw, args, kwargs, argnum, zeroed=data)
        return source_pattern(source, 1, _size(args[argnum]), _size(ans))

    # the data are replaced by positions and zeros; the rest (indices, axes) is read
    return shapes_only(rule, lambda n: range(first, n) if only is None else only)


def _nonzero(value, traced: bool, local: bool):
    """Where a factor of a product may be nonzero: everywhere if it is traced (its value
    changes with x) unless the pattern is local."""
    value = _np.asarray(value)
    if traced and not local:
        return _np.ones(value.shape, dtype=bool)
    return value != 0


def product_pattern(argnum: int, ans, args, kwargs, traced=(), local: bool = False):
    """``matmul``/``dot`` of operands of at most two dimensions: the other operand's
    nonzeros say which elements meet in each output. None (dense) for other shapes."""
    a, b = args[0], args[1]
    na, nb = _np.ndim(a), _np.ndim(b)
    if not (1 <= na <= 2 and 1 <= nb <= 2):
        return None
    sp = _sp()
    if argnum == 1:
        other = sp.csr_matrix(_nonzero(a, 0 in traced, local))
        if na == 1:
            other = other.reshape(1, -1)  # a (n,) with b (n,) or (n, k)
        k = 1 if nb == 1 else _np.shape(b)[1]
        return sp.kron(other, sp.identity(k, dtype=bool), format="csr").astype(bool)
    other = sp.csr_matrix(_nonzero(b, 1 in traced, local))
    if nb == 1:
        other = other.reshape(1, -1)  # b (n,): out[i] = sum_l a[i, l] b[l]
    else:
        other = other.T  # out[i, j] needs a[i, l] where b[l, j] != 0
    m = 1 if na == 1 else _np.shape(a)[0]
    return sp.kron(sp.identity(m, dtype=bool), other, format="csr").astype(bool)


product_pattern.wants_traced = True  # it is given which arguments are traced, and local


# ----------------------------------------------------------------------------- colouring


def colour_columns(pattern) -> _np.ndarray:
    """A greedy distance-1 colouring of the columns of ``pattern``: two columns sharing a
    row get different colours, so one sweep per colour recovers every column (columns
    taken in order of decreasing count, which keeps the colour count low)."""
    sp = _sp()
    csc = sp.csc_matrix(pattern, dtype=bool)
    banded = _band_colouring(csc)
    if banded is not None:
        return banded
    graph = (csc.T @ csc).tocsr()  # columns that meet in some row
    n = graph.shape[0]
    colours = _np.full(n, -1, dtype=_np.intp)
    # plain Python lists: this loop runs once per column, numpy scalars would dominate it
    indptr, indices = graph.indptr.tolist(), graph.indices.tolist()
    order = _np.argsort(-_np.diff(csc.indptr), kind="stable").tolist()
    colour = [-1] * n
    mark = [-1] * (n + 1)  # mark[c] == j: colour c is taken next to column j
    for j in order:
        for k in indices[indptr[j] : indptr[j + 1]]:
            c = colour[k]
            if c >= 0:
                mark[c] = j
        c = 0
        while mark[c] == j:
            c += 1
        colour[j] = c
    colours = _np.asarray(colour, dtype=_np.intp)
    return colours


def _band_colouring(pattern):
    """``j mod w`` for the columns of a pattern whose nonzeros lie within a band of w
    diagonals, when some row fills the band (no colouring has fewer colours than a row
    has nonzeros, so this one is optimal, and found without the greedy loop); else None.
    Two columns closer than w may share a row; two further apart never do."""
    coo = pattern.tocoo()
    if coo.nnz == 0:
        return None
    offset = coo.col.astype(_np.intp) - coo.row
    width = int(offset.max() - offset.min()) + 1
    if int(_np.diff(pattern.tocsr().indptr).max()) != width:
        return None
    return _np.arange(pattern.shape[1], dtype=_np.intp) % width


def _seeds(colours: _np.ndarray, shape: tuple, dtype) -> _np.ndarray:
    """One seed per colour: the sum of the basis vectors of that colour's columns."""
    count = int(colours.max()) + 1 if colours.size else 0
    seeds = _np.zeros((count, colours.size), dtype=dtype)
    seeds[colours, _np.arange(colours.size)] = 1
    return seeds.reshape((count,) + tuple(shape))


def direct_recovery(pattern, colours: _np.ndarray, by_rows: bool) -> Callable:
    """A function giving the matrix with ``pattern``'s nonzeros read from the compressed
    sweeps: ``compressed[c]`` is J @ seed_c (forward; flat over rows) or seed_c @ J
    (reverse; flat over columns). Where each nonzero is read is found once, here; a call
    is one gather into the CSR arrays of ``pattern``."""
    sp = _sp()
    csr = sp.csr_matrix(pattern)
    csr.sort_indices()
    rows = _np.repeat(_np.arange(csr.shape[0]), _np.diff(csr.indptr))
    cols = csr.indices
    if by_rows:
        flat = colours[rows] * csr.shape[1] + cols
    else:
        flat = colours[cols] * csr.shape[0] + rows

    def recover(compressed: _np.ndarray):
        values = _np.ravel(compressed)[flat]
        return sp.csr_matrix((values, csr.indices, csr.indptr), shape=csr.shape)

    return recover


def count_colours(colours: _np.ndarray) -> int:
    return int(colours.max()) + 1 if colours.size else 0
