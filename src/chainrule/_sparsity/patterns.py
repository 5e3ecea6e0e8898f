"""The local patterns that primitives declare (``defsparsity``), and the factories that
make them (elementwise, reductions, copies, contractions, ...).

A local pattern is the boolean matrix of d answer / d args[argnum] (answer size x
argument size, CSR). Rules are called with the node's arguments; a global pattern must
hold at every x, so a rule reads the value of no traced argument: it declares the
positions whose shapes alone it reads (``shape_only``), or takes ``traced`` and
``local`` (``wants_traced``) and reads a traced value only when ``local`` is true.
Detection and propagation are in ``detection``; colouring and evaluation, which are
transforms, in ``chainrule._transforms`` (``colouring``, ``sparse``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as _np


def scipy_sparse():
    """``scipy.sparse``, imported on first use: chainrule imports without SciPy."""
    import scipy.sparse as sp

    return sp


def _size(value) -> int:
    return int(_np.size(value))


# ----------------------------------------------------------------------------- local patterns
# Helpers the rule tables use in their ``defsparsity`` declarations.


def map_pattern(rows, cols, shape):
    """A boolean CSR matrix with ones at (rows, cols)."""
    sp = scipy_sparse()
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


class _Unchanged:
    """What a rule answers where d answer / d argument is the identity (an elementwise
    function of an argument of the answer's shape): the answer's pattern is the argument's,
    taken as it is (no product to form)."""

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = _Unchanged()


def elementwise_pattern(argnum: int, ans, args, kwargs):
    """A broadcasting elementwise function: output element i depends on the element of
    ``args[argnum]`` broadcast onto i."""
    x = args[argnum]
    shape, out_shape = _np.shape(x), _np.shape(ans)
    if shape == out_shape:
        return UNCHANGED
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


def _through_positions(raw: Callable, args, kwargs, argnum: int, zeroed=()):
    args = list(args)
    for i in zeroed:
        if i != argnum and i < len(args):
            args[i] = _np.zeros(_np.shape(args[i]))
    x = args[argnum]
    args[argnum] = _np.arange(1, _size(x) + 1, dtype=float).reshape(_np.shape(x))
    return raw(*args, **kwargs)


def positions_through(raw: Callable, args, kwargs, argnum: int, zeroed=()) -> _np.ndarray:
    """Where each output element of ``raw`` (a function that only copies, moves or drops
    elements) comes from: ``raw`` applied to the 1-based flat positions of ``args[argnum]``,
    the arguments at the positions in ``zeroed`` replaced by zeros (0: from none of them).
    The batched JVPs of such functions gather by this map; their sparsity rules read it."""
    return _np.asarray(_through_positions(raw, args, kwargs, argnum, zeroed))


def copy_rule(raw: Callable, first: int = 0, only: tuple | None = None):
    """The sparsity rule of a function whose outputs are copies of elements of its data
    arguments (``args[first:]``, or the positions in ``only``) or constants
    (``positions_through``, the other data arguments zeroed). An answer made of several
    arrays (``split``, ``meshgrid``) is read leaf after leaf."""

    def rule(argnum, ans, args, kwargs):
        data = range(first, len(args)) if only is None else only
        source = _through_positions(raw, args, kwargs, argnum, data)
        if isinstance(source, (tuple, list)):
            source = _np.concatenate([_np.ravel(leaf) for leaf in source] or [_np.zeros(0)])
        return source_pattern(source, 1, _size(args[argnum]), _size_of_leaves(ans))

    # the data are replaced by positions and zeros; the rest (indices, axes) is read
    return shapes_only(rule, lambda n: range(first, n) if only is None else only)


def _size_of_leaves(ans) -> int:
    if isinstance(ans, (tuple, list)):
        return sum(_size_of_leaves(leaf) for leaf in ans)
    return _size(ans)


def dense_rule(why: str) -> Callable:
    """The sparsity rule of a primitive each of whose outputs reads every input, ``why``
    saying so (the coverage table's sparsity column shows it): detection counts it dense,
    which for it is the truth, not a missing rule."""

    def rule(argnum, ans, args, kwargs):
        return None

    rule.dense_because = why
    return shapes_only(rule)


def identity_pattern(argnum: int, ans, args, kwargs):
    """An output that is its argument, element for element (a copy, a cast)."""
    return UNCHANGED


shapes_only(identity_pattern)


def no_dependency(argnum: int, ans, args, kwargs):
    """An argument the answer does not depend on differentiably (``full_like``'s array)."""
    return map_pattern([], [], (_size_of_leaves(ans), _size_of_leaves(args[argnum])))


shapes_only(no_dependency)


def _axis_letters(n: int, fresh=()) -> str:
    """Letters for n axes; those in ``fresh`` get letters of their own (a second set)."""
    return "".join(_LETTERS[26 + i] if i in fresh else _LETTERS[i] for i in range(n))


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def along_axes_pattern(in_shape: tuple, out_shape: tuple, axes) -> Any:
    """A transform along ``axes`` (an FFT, a softmax): each output element depends on every
    input element with its indices on the other axes (same number of axes in and out)."""
    n = len(in_shape)
    moved = {a % n for a in axes} if n else set()
    return contraction_pattern([_axis_letters(n)], _axis_letters(n, moved), [in_shape],
                               out_shape, 0, [None])  # fmt: skip


def reduced_pattern(in_shape: tuple, out_shape: tuple, axes):
    """A reduction over ``axes``: each output element depends on the input elements with its
    indices on the other axes (``out_shape`` with the reduced axes, of length 1, or
    without them). None where ``out_shape`` is neither."""
    n = len(in_shape)
    axes = {a % n for a in axes} if n else set()
    own = _axis_letters(n)
    if len(out_shape) == n:  # keepdims
        out = _axis_letters(n, axes)
    else:
        out = "".join(c for i, c in enumerate(own) if i not in axes)
    if len(out) != len(out_shape):
        return None
    return contraction_pattern([own], out, [in_shape], out_shape, 0, [None])


def batched_pattern(in_shape: tuple, out, core: int):
    """A function of stacks of matrices (the last ``core`` axes of the input): each element
    of each output leaf depends on the whole matrix of its batch index (the leading axes
    of the leaf are the input's). None where an output leaf has no such leading axes."""
    batch = len(in_shape) - core
    own = _axis_letters(len(in_shape))
    blocks = []
    for leaf in out if isinstance(out, (tuple, list)) else [out]:
        shape = _np.shape(leaf)
        if batch < 0 or tuple(shape[:batch]) != tuple(in_shape[:batch]):
            return None
        letters = own[:batch] + _axis_letters(len(shape), range(batch, len(shape)))[batch:]
        blocks.append(contraction_pattern([own], letters, [in_shape], shape, 0, [None]))
    return scipy_sparse().vstack(blocks, format="csr") if blocks else None


def columns_pattern(b_shape: tuple, out_shape: tuple):
    """x = A^-1 b (a solve, stacked or not): column k of x reads column k of b (all of b
    where b is a vector); the answer's leading axes are the stack's (or a grid's)."""
    batch = len(out_shape) - (1 if len(b_shape) == 1 else 2)
    lead = _axis_letters(batch)
    if len(b_shape) == 1:
        return contraction_pattern(["X"], lead + "Y", [b_shape], out_shape, 0, [None])
    own = lead[batch - (len(b_shape) - 2):] + "XZ"
    return contraction_pattern([own], lead + "YZ", [b_shape], out_shape, 0, [None])


def convolution_band(n_out: int, n_own: int, n_other: int, start: int) -> Any:
    """The pattern of a 1-D convolution's output (full output shifted by ``start``) with
    respect to one operand: output o reads element m of it where 0 <= o + start - m < the
    other operand's length."""
    o = _np.repeat(_np.arange(n_out), n_other)
    m = o + start - _np.tile(_np.arange(n_other), n_out)
    keep = (m >= 0) & (m < n_own)
    return map_pattern(o[keep], m[keep], (n_out, n_own))


def contraction_pattern(terms: list, out: str, shapes: list, out_shape: tuple, which: int,
                        masks: list):  # fmt: skip
    """The pattern of an einsum-like product ``out = sum of prod_k operand_k`` (``terms``:
    the letters of each operand, explicit, no ellipsis; ``out``: the output's letters, its
    flat order that of ``out_shape``) with respect to operand ``which``. ``masks[k]``:
    where operand k may be nonzero (None: anywhere; ``which``'s own is not read). An
    operand's axis of length 1 under a longer letter broadcasts. Output element O depends
    on element K of the operand where their shared letters agree and some values of the
    remaining letters make every other operand nonzero; the entries are enumerated from
    the other operands' nonzeros, so the cost is that of the pattern."""
    dims: dict = {}
    for letters, shape in zip([out, *terms], [out_shape, *shapes]):
        for letter, n in zip(letters, shape):
            dims[letter] = max(dims.get(letter, 1), int(n))

    def varying(k) -> tuple:  # operand k's axes that do not broadcast
        return tuple(i for i, (c, n) in enumerate(zip(terms[k], shapes[k]))
                     if int(n) == dims[c] or dims[c] == 1)  # fmt: skip

    own = terms[which]
    grid = "".join(dict.fromkeys(out + own))  # the letters of an (output, operand) pair
    others = {k: "".join(terms[k][i] for i in varying(k)) for k in range(len(terms))
              if k != which}  # fmt: skip
    related = "".join(c for c in grid if any(c in letters for letters in others.values()))
    if related and any(masks[k] is not None for k in others):
        # where the other operands can all be nonzero, over the related letters
        operands = []
        for k in others:
            mask = _np.ones(shapes[k], dtype=bool) if masks[k] is None else masks[k]
            operands.append(_np.reshape(mask, [shapes[k][i] for i in varying(k)]))
        joint = _np.einsum(",".join(others.values()) + "->" + related, *operands)
        coords = dict(zip(related, _np.nonzero(joint)))
        count = coords[related[0]].size
    elif related:  # (an operand sharing no letter is a factor: 0 * u counts, as elementwise)
        shape = tuple(dims[c] for c in related)
        coords = dict(zip(related, _np.indices(shape).reshape(len(related), -1)))
        count = int(_np.prod(shape, dtype=_np.int64))
    else:
        coords, count = {}, 1
    free = "".join(c for c in grid if c not in related)
    free_shape = tuple(dims[c] for c in free)
    n_free = int(_np.prod(free_shape, dtype=_np.int64))
    values = {c: _np.repeat(v, n_free) for c, v in coords.items()}
    if free:
        for c, v in zip(free, _np.indices(free_shape).reshape(len(free), -1)):
            values[c] = _np.tile(v, count)
    size = count * n_free

    def flat(letters, shape):
        if not letters:
            return _np.zeros(size, dtype=_np.intp)
        index = [values[c] if int(n) == dims[c] else _np.zeros(size, dtype=_np.intp)
                 for c, n in zip(letters, shape)]  # fmt: skip
        return _np.ravel_multi_index(index, tuple(int(n) for n in shape))

    rows, cols = flat(out, out_shape), flat(own, shapes[which])
    return map_pattern(rows, cols, (int(_np.prod(out_shape)), int(_np.prod(shapes[which]))))


# ----------------------------------------------------------------------------- colouring


