"""Shared pieces of the NumPy rule tables.

Every rule is written with wrapped (differentiable) functions, so a rule's output
can itself be differentiated: that is what makes every order work in both modes.
Broadcasting is undone in exactly one place, ``unbroadcast``, which every
broadcasting rule uses; ``broadcast_tangent`` is its forward-mode mirror.
"""

from __future__ import annotations

import functools
import math

import numpy as _np

from ..._core import forward, reverse
from ..._core.replay import subvals
from ..._core.reverse import ShapeOnly
from ..._core.rules import (
    defjvp_argnums,
    defjvp_batched,
    defjvp_direct,
    defsparsity,
    deftaylor_linear,
    defvjp_direct,
    defvjp_whole,
)
from ..._core.tracer import Box, derivative_free, getval, isbox
from ..._sparsity.detection import derived_pattern
from ..._sparsity.patterns import elementwise_pattern
from .. import numpy_wrapper as anp
from ..duck_arrays import check_known_shape
from ..numpy_boxes import array_astype
from ..placement import SCALAR_TYPES, constant_like, numpy_values


def bound_texts(params: tuple, texts: list[str], kwtexts: dict[str, str]) -> dict | None:
    """Parameter name -> argument code for a call written by ``chainrule.jit`` (the
    arguments after the first, positional ``texts`` and keyword ``kwtexts``), or None for
    a call that passes something outside ``params`` (the emission rules then keep the
    call as it is)."""
    if len(texts) > len(params) or any(k not in params for k in kwtexts):
        return None
    bound = dict(zip(params, texts))
    for k, v in kwtexts.items():
        if k in bound:
            return None
        bound[k] = v
    return bound


def zero_mask(x):
    """``(x == 0, whether any is zero)`` on x's raw value. For a duck array (Dask, CuPy)
    "any" is assumed True, so rules take their safe branch without computing it.

    Rules read values with ``derivative_free``, not ``getval``, wherever the answer
    depends on them (a mask, a winner, a branch): under ``chainrule.jit`` the value is
    then still the staged program's, so the program recomputes it on every call."""
    xv = derivative_free(x)
    if isbox(xv):
        # a value of a staged program (chainrule.jit): the program computes the mask, and
        # whether any entry is zero is a decision it guards (anp.any's answer)
        zero = xv == 0
        return zero, bool(anp.any(zero))
    if isinstance(xv, (_np.ndarray, _np.generic, float, int, complex)):
        zero = _np.asarray(xv) == 0
        return zero, bool(zero.any())
    return xv == 0, True


def shape_of(x) -> tuple:
    return getattr(x, "shape", ())


def dtype_of(x):
    dtype = getattr(x, "dtype", None)
    return _np.result_type(x) if dtype is None else dtype


# an ndarray argument, or what a node keeps of one (its shape and dtype)
_ARRAY_LIKE = frozenset([_np.ndarray, ShapeOnly])
# NumPy's numbers with a dtype and shape () (an argument kept as itself: reads=None)
NUMPY_SCALARS = frozenset([_np.float64, _np.float32, _np.complex128, _np.complex64])
_ndarray = _np.ndarray

# _kept_layout: the hot VJP rules (elementwise functions, add, subtract, multiply ...)
# test the common case of ``unbroadcast`` / ``match_dtype`` themselves, written out in the
# rule: ``type(g) is _ndarray and type(x) in _ARRAY_LIKE and g.dtype is x.dtype and
# g.shape == x.shape``, the cotangent already in its argument's layout, and hand ``g`` on
# without calling them (the call and its tests were ~8% of an lstm gradient, 80,000
# rule calls on 14-element arrays). ``is`` on dtypes: NumPy keeps one dtype object per
# built-in type, and two equal dtypes that are other objects take the full test.


def unbroadcast(g, x):
    """Sum ``g`` over the axes along which ``x`` was broadcast; match ``x``'s dtype."""
    g_type = type(g)
    if g_type is _np.ndarray:
        x_type = type(x)
        if x_type in _ARRAY_LIKE or x_type in NUMPY_SCALARS:
            if g.dtype == x.dtype:
                if g.shape == x.shape:
                    return g  # the common case: nothing to sum, same dtype
                if x.shape == ():
                    # a number broadcast (x - max(x)): the sum over every axis, the bits of
                    # the general path's sum over its axes (NumPy reads all axes as None),
                    # without its shape reads and wrapper (~4 µs at 2,500)
                    return g.sum()
    elif g_type is type(x) and (g_type in SCALAR_TYPES or _boxed_scalars(g, x)):
        return g
    # Shapes and dtypes are read on the raw values, which a box shares: under a nested
    # trace (a grad staged by chainrule.jit) g and x are boxes, and reading them through
    # the box properties would cost more than the rule itself.
    gv, xv = getval(g), getval(x)
    if type(gv) is type(xv) and type(gv) in SCALAR_TYPES:
        return g  # boxed scalars of one type (a staged gradient of scalar code)
    shape = shape_of(xv)
    g_shape = shape_of(gv)
    if g_shape != shape:  # (also when a Dask shape holds nan, which equals nothing)
        check_known_shape(xv)
        check_known_shape(gv)
        lead = len(g_shape) - len(shape)
        inner = tuple(lead + i for i, n in enumerate(shape) if n == 1 and g_shape[lead + i] != 1)
        if inner:
            summed = None
            if not lead and len(inner) == 1 and type(g) is _ndarray:
                summed = _axis_summed(g, inner[0])
            g = anp.sum(g, axis=tuple(range(lead)) + inner, keepdims=True) \
                if summed is None else summed
        elif lead == 1 and type(g) is _ndarray and len(g_shape) == 2 and g_shape[1] > 1 \
                and g.dtype in _ROWS_SUMMED_DTYPES and g.flags.c_contiguous:
            summed = rows_sum(g, 1, *g_shape)[0]  # (see _rows_summed)
            g = summed if _np.isfinite(summed).all() else g.sum(axis=0)
        elif lead:  # leading axes only: x's shape already (the method: no NumPy wrapper)
            g = g.sum(axis=tuple(range(lead)))
        gv = getval(g)
        if shape_of(gv) != shape:
            g = anp.reshape(g, shape)
            gv = getval(g)
    return _dtype_matched(g, gv, xv)


# _rows_summed: the sum over the rows of a C-ordered n x k cotangent (a (k,) argument
# broadcast over n rows: a bias, kmeans' |c|^2) is NumPy's add.reduce over axis 0, which
# adds row after row and pays its loop's set-up per row (13 µs at 1000 x 10); einsum adds
# the rows in the same order in one loop over them (4.6 µs: ``rows_sum`` of one block,
# below), the same bits (k >= 2: a
# single column is one contiguous run, which add.reduce sums pairwise; float16 einsum
# adds in float32). einsum reports no floating-point error: where a sum is not finite,
# the rows are summed again by add.reduce, for NumPy's warnings and errors (and jit's
# program, which sums by add.reduce, then warns as eager evaluation does).
_ROWS_SUMMED_DTYPES = (_np.dtype(_np.float64), _np.dtype(_np.float32))

# pair_sum: the sum over one axis of a C-ordered float array whose later axes hold two
# entries (gmm at d = 2: mu's (k, 1, 2) broadcast over n in x - mu), which NumPy's
# add.reduce adds along the axis in order, from 0.0, with one call of its inner loop per
# pair (270 µs at (25, 1000, 2)). Seen as complex numbers, the pairs are one array of
# (outer, n); its transpose copied, einsum adds its n rows in order in one loop (22 µs),
# the same bits. For outer == 1 that transpose is one contiguous column, which einsum sums
# pairwise while NumPy's reduce does not: add.accumulate's last entry is the in-order sum
# there. ``exact_pair_sum`` checks both against this NumPy once per dtype. Neither form
# reports NumPy's floating-point errors as add.reduce would (einsum none): where a sum is
# not finite, its callers ask NumPy's reduce (the eager rule) or eager evaluation (jit's
# kernel). Used by unbroadcast here and by jit's emitted programs (jit/_kernels.py).
# (a float dtype -> the complex one whose parts it is: pairs of floats seen as one number)
COMPLEX_OF = {_np.dtype(_np.float64): _np.complex128, _np.dtype(_np.float32): _np.complex64}
_PAIRS_SUMMED_MIN_SIZE = 256  # (below it NumPy's own reduce costs less)

# rows_sum: the same sum where the later axes hold 3 to ROWS_SUMMED_MAX_WIDTH entries
# (gmm at d = 10: mu's (25, 1, 10) over n = 1000, 317 µs by add.reduce, one call of its
# inner loop per run of 10): einsum adds along the axis in order too, in one loop over
# the runs (87 µs), the same bits (``exact_rows_sum`` checks this NumPy once per dtype;
# not finite: NumPy's reduce again, as for pair_sum). Wider runs: NumPy's inner loop is
# long enough, and its reduce the faster (at 500 entries).
ROWS_SUMMED_MAX_WIDTH = 64


def _axis_summed(g, axis: int):
    """``np.sum(g, axis=axis, keepdims=True)`` by ``pair_sum`` or ``rows_sum``, or None
    where neither form applies, gives this NumPy's bits, or a sum is not finite."""
    g_shape = g.shape
    outer, n, width = math.prod(g_shape[:axis]), g_shape[axis], math.prod(g_shape[axis + 1:])
    if not 2 <= width <= ROWS_SUMMED_MAX_WIDTH or g.size < _PAIRS_SUMMED_MIN_SIZE or \
            g.dtype not in COMPLEX_OF or not g.flags.c_contiguous:
        return None
    if width == 2:
        # (not outer == 1: accumulate's form there would report its errors, then the reduce)
        if outer < 2 or not exact_pair_sum(g.dtype):
            return None
        summed = pair_sum(g, outer, n)
    elif exact_rows_sum(g.dtype):
        summed = rows_sum(g, outer, n, width)
    else:
        return None
    if not _np.isfinite(summed).all():
        return None
    return summed.reshape(g_shape[:axis] + (1,) + g_shape[axis + 1:])


def rows_sum(a, outer: int, n: int, width: int):
    """``np.add.reduce(a.reshape(outer, n, width), 1)`` of a C-ordered float64/float32
    array ``a``, with NumPy's bits where ``exact_rows_sum(a.dtype)`` holds."""
    return _np.einsum("onw->ow", a.reshape(outer, n, width))


def pair_sum(a, outer: int, n: int):
    """``np.add.reduce(a.reshape(outer, n, 2), 1)`` of a C-ordered float64/float32 array
    ``a``, with NumPy's bits where ``exact_pair_sum(a.dtype)`` holds, as (outer, 2)."""
    pairs = a.reshape(outer, n, 2).view(COMPLEX_OF[a.dtype])[:, :, 0]
    if outer == 1:
        summed = _np.add.accumulate(pairs, 1)[:, -1] + 0.0  # (from 0.0: -0.0 + 0.0)
    else:
        summed = _np.einsum("ij->j", _np.ascontiguousarray(pairs.T))
    return _np.ascontiguousarray(summed).view(a.dtype).reshape(outer, 2)


def _order_probe(dtype, shape: tuple, seed: int):
    """A float array of ``shape`` whose sums show their order in their last bits, with a
    column of -0.0s and one of -0.0s and a 0.0 (a sum of -0.0s is 0.0)."""
    rng = _np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * _np.exp2(rng.integers(-30, 30, shape))).astype(dtype)
    a[0, :, 0] = -0.0
    a[-1, :, 1] = -0.0
    a[-1, 5, 1] = 0.0
    return a


@functools.cache
def exact_rows_sum(dtype) -> bool:
    """Whether this NumPy's add.reduce over an axis followed by 3 to 64 entries gives
    ``rows_sum``'s bits: checked once per dtype, on sums whose order shows, with one
    block and with several."""
    for shape in ((5, 300, 3), (1, 300, 7), (4, 200, 10), (2, 100, 64), (3, 40, 33)):
        a = _order_probe(dtype, shape, 41)
        if _np.add.reduce(a, 1).tobytes() != rows_sum(a, *shape).tobytes():
            return False
    return True


@functools.cache
def exact_pair_sum(dtype) -> bool:
    """Whether this NumPy's add.reduce over an axis followed by two entries gives
    ``pair_sum``'s bits: checked once per dtype, with 5 rows and with 1, on sums whose
    order shows in their last bits, and on signed zeros (a sum of -0.0s is 0.0), inf and
    nan."""
    rng = _np.random.default_rng(37)
    a = (rng.standard_normal((5, 300, 2)) * _np.exp2(rng.integers(-30, 30, (5, 300, 2)))
         ).astype(dtype)
    a[0] = -0.0
    a[1, :, 0] = -0.0
    a[1, 5, 0] = 0.0
    a[2, :3, 1] = [_np.inf, -_np.inf, 1.0]
    a[2, 7, 0] = _np.nan
    with _np.errstate(all="ignore"):
        return all(_np.add.reduce(b, 1).tobytes() == pair_sum(b, len(b), 300).tobytes()
                   for b in (a, a[:1], a[1:2], a[3:4]))


def _boxed_scalars(g, x) -> bool:
    """Whether boxes ``g`` and ``x`` (of one type) hold scalars of one type: a gradient of
    scalar code staged by chainrule.jit, checked one level deep without ``getval``'s calls
    (the rules of such a trace run once per recorded operation)."""
    return type(g) in _BOX_TYPES and type(g._value) is type(x._value) and \
        type(g._value) in SCALAR_TYPES


_BOX_TYPES = Box.types  # (the registry's own set)


def match_dtype(g, x):
    """``g`` cast to ``x``'s dtype: the real part for a real ``x``, float32 stays float32."""
    g_type = type(g)
    if g_type is _np.ndarray:
        if type(x) in _ARRAY_LIKE and g.dtype == x.dtype:
            return g
    elif g_type is type(x) and (g_type in SCALAR_TYPES or _boxed_scalars(g, x)):
        return g
    return _dtype_matched(g, getval(g), getval(x))  # (raw values: see unbroadcast)


def _dtype_matched(g, gv, xv):
    """``match_dtype(g, x)`` given the raw values ``gv`` of ``g`` and ``xv`` of ``x``."""
    if type(gv) is type(xv) and type(gv) in SCALAR_TYPES:
        return g  # (as in unbroadcast)
    g_dtype = dtype_of(gv)
    x_dtype = dtype_of(xv)
    if g_dtype == x_dtype or x_dtype.kind not in "fc":
        return g
    if g_dtype.kind == "c" and x_dtype.kind != "c":
        g = anp.real(g)
        if dtype_of(getval(g)) == x_dtype:
            return g
    return array_astype(g, x_dtype)


def broadcast_tangent(t, ans):
    """A tangent contribution made to live in ``ans``'s space (shape and dtype)."""
    t_type = type(t)
    if t_type is type(ans) and (t_type in SCALAR_TYPES or (
            t_type is _np.ndarray and t.shape == ans.shape and t.dtype == ans.dtype)):
        return t
    shape = shape_of(ans)
    if shape_of(t) != shape:
        t = anp.broadcast_to(constant_like(t, ans), shape)  # a scalar's tangent: as ans's
    return match_dtype(t, ans)


def batch_aligned(t, x, ans):
    """A batched tangent ``t`` of ``x`` (leading batch axis) with length-1 axes inserted
    after the batch axis, so that x's axes line up with ``ans``'s under broadcasting."""
    lead = len(shape_of(ans)) - len(shape_of(x))
    if lead <= 0:
        return t
    t_shape = shape_of(t)
    return anp.reshape(t, t_shape[:1] + (1,) * lead + t_shape[1:])


def batch_shifted_axis(axis, ndim: int):
    """``axis`` of an argument as an axis of its batched tangent (a leading batch axis);
    None (every axis) is every axis but the batch axis."""
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, tuple):
        return tuple(a % ndim + 1 for a in axis)
    return axis % ndim + 1


def broadcast_batched_tangent(t, ans):
    """``broadcast_tangent`` for a batched contribution ``t`` aligned with ``ans``."""
    shape = shape_of(t)[:1] + shape_of(ans)
    if shape_of(t) != shape:
        t = anp.broadcast_to(t, shape)
    return match_dtype(t, ans)


def keepdims_shape(shape: tuple, axis) -> tuple:
    """The shape a reduction over ``axis`` has with keepdims=True."""
    if axis is None:
        return (1,) * len(shape)
    if type(axis) is int and shape:  # (the common call: one axis)
        a = axis % len(shape)
        return shape[:a] + (1,) + shape[a + 1:]
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = {a % len(shape) for a in axes} if shape else set()
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def reduced_count(shape: tuple, axis) -> int:
    """How many elements each output of a reduction over ``axis`` combines."""
    kept = keepdims_shape(shape, axis)
    return int(_np.prod(shape)) // max(int(_np.prod(kept)), 1) if shape else 1


# A full reduction's cotangent, a plain number, for an argument of at most this many
# elements is made as a new array: NumPy's broadcast_to is Python code (expand_to took
# 3.5 µs a call, np.full 0.6 µs; an lstm gradient makes 2,046), and a filled array of a
# few thousand numbers costs less; larger arguments keep the broadcast view, which holds
# no memory of their size. (A Dask shape's nan compares False: the view.)
_FILLED_UP_TO = 4096


# a number's type -> the dtype of np.full's array of it (its own; a Python float's float64)
_SCALAR_DTYPES = {t: _np.dtype(t) for t in SCALAR_TYPES}


def keeps_dims(keepdims) -> bool:
    """A reduction's ``keepdims`` as NumPy reads it: its no-value default is False (a traced
    ``where=`` is passed by position, and brings the defaults before it along)."""
    return keepdims is not _np._NoValue and bool(keepdims)


def expand_to(g, x, axis, keepdims):
    """A reduction's cotangent ``g`` broadcast back to ``x``'s shape."""
    shape = shape_of(x)
    if type(g) in SCALAR_TYPES and axis is None:
        if type(x) is not _ndarray and not numpy_values(x):
            # (a number's view below in x's own library: CuPy refuses NumPy's)
            g = constant_like(_np.asarray(g), x)
        elif math.prod(shape) <= _FILLED_UP_TO:
            # (the values of broadcast_to(g, shape), writeable: np.full's array without its
            # Python layer, asarray and copyto, ~0.4 µs a call)
            filled = _np.empty(shape, _SCALAR_DTYPES[type(g)])
            filled.fill(g)
            return filled
    if not keeps_dims(keepdims):
        g = anp.reshape(g, keepdims_shape(shape, axis))
    if type(g) is _ndarray and math.prod(shape) <= _FILLED_UP_TO:
        filled = _np.empty(shape, g.dtype)  # (as a number's above: a partial reduction's)
        filled[...] = g
        return filled
    return anp.broadcast_to(g, shape)


# ----------------------------------------------------------------------------- table helpers


def elementwise(fun, derivative, reads: tuple | None = None, product=None) -> None:
    """A unary elementwise function with local derivative ``derivative(ans, x)``.

    VJP and JVP are both a multiplication by the derivative (no conjugation:
    complex gradients follow autograd's convention); a real function of a complex
    argument keeps the real part of its tangent. ``reads``: see ``defvjp_direct``.
    ``product(g, ans, x)``: ``g * derivative(ans, x)`` as one expression, for the hot
    functions of array code (exp, tanh, negative), whose rules then call no derivative.
    """
    def vjp(g, ans, x, *a, **k):
        g = g * derivative(ans, x) if product is None else product(g, ans, x)
        if type(g) is _ndarray and type(x) in _ARRAY_LIKE and g.dtype is x.dtype:
            return g  # (match_dtype's common case, without its call: see _kept_layout)
        return match_dtype(g, x)

    defvjp_direct(fun, vjp, reads=reads)
    jvp = lambda g, ans, x, *a, **k: match_dtype(  # noqa: E731
        g * derivative(ans, x) if product is None else product(g, ans, x), ans)
    defjvp_direct(fun, jvp)
    defjvp_batched(fun, jvp)  # a leading batch axis on g broadcasts through unchanged
    defsparsity(fun, elementwise_pattern)  # output i depends on input i only


class NoClosedForm:
    """Marks an argument whose derivative has no closed form: differentiating it raises."""

    def __init__(self, why: str):
        self.why = why

    def rule(self, fun, argnum: int):
        def raise_error(*args, **kwargs):
            raise NotImplementedError(
                f"{fun.__name__} is not differentiable with respect to argument {argnum} in "
                f"chainrule: {self.why} Pass that argument as a constant (not traced)."
            )

        return raise_error


def elementwise_n(fun, *partials, reads: tuple | dict | None = None) -> None:
    """A broadcasting function of n arguments with partials ``d(ans, *args)``, one per
    argument, in both modes and batched.

    A partial may be ``None`` (no derivative: zero, for discrete arguments such as an
    integer order) or a ``NoClosedForm`` (differentiating raises). ``reads``: what each
    partial reads besides its own argument's shape (see ``defvjp_direct``).
    """
    vjps, jvps, batched = [], [], []
    for argnum, d in enumerate(partials):
        if d is None or isinstance(d, NoClosedForm):
            rule = None if d is None else d.rule(fun, argnum)
            vjps.append(rule), jvps.append(rule), batched.append(None)
            continue
        # (a traced call passes exactly the function's n inputs: an output array given
        # by position is refused before any rule runs; two operands are named, not packed
        # into a tuple and unpacked again, for the common binary call)
        if len(partials) == 2:
            vjps.append(binary_rule(argnum, d))
        else:
            vjps.append(lambda g, ans, *args, _i=argnum, _d=d, **k: unbroadcast(
                g * _d(ans, *args), args[_i]))
        jvps.append(lambda g, ans, *args, _d=d, **k: broadcast_tangent(g * _d(ans, *args), ans))
        batched.append(lambda g, ans, *args, _i=argnum, _d=d, **k: broadcast_batched_tangent(
            batch_aligned(g, args[_i], ans) * _d(ans, *args), ans))
    defvjp_direct(fun, *vjps, reads=reads)
    defjvp_direct(fun, *jvps)
    defjvp_batched(fun, *batched)
    defsparsity(fun, elementwise_pattern)  # output i on the elements broadcast onto it


def binary_rule(argnum: int, partial=None, negated: bool = False):
    """The VJP rule of argument ``argnum`` (0 or 1) of a broadcasting binary function: the
    cotangent times ``partial(ans, x, y)`` (None: the cotangent itself, negated with
    ``negated``: add, subtract), unbroadcast to that argument."""
    first = argnum == 0

    def vjp(g, ans, x, y, *a, **k):
        arg = x if first else y
        if partial is not None:
            g = g * partial(ans, x, y)
        elif negated:
            if type(g) is _ndarray and g.dtype in _ROWS_SUMMED_DTYPES and g.shape and \
                    (type(arg) in _ARRAY_LIKE or type(arg) in NUMPY_SCALARS) and \
                    g.dtype == arg.dtype:
                if arg.shape == ():
                    return negated_sum(_ADD_REDUCE, g)  # (unbroadcast's number of -g)
                if arg.shape != g.shape and g.size >= _NEGATED_UNBROADCAST_MIN_SIZE:
                    return _negated_unbroadcast(g, arg)
            g = -g
        g_type = type(g)
        if g_type is _ndarray:
            if type(arg) in _ARRAY_LIKE and g.dtype is arg.dtype and g.shape == arg.shape:
                return g  # (see _kept_layout)
        elif g_type is type(arg) and g_type in SCALAR_TYPES:
            return g  # (unbroadcast's numbers of one type: a + log(s) of lse)
        return unbroadcast(g, arg)

    return vjp


_ADD_REDUCE = _np.add.reduce  # (one bound method: each attribute read makes one)
# (below it -g's pass costs less than the tests of the negated totals)
_NEGATED_UNBROADCAST_MIN_SIZE = 8192


def _negated_unbroadcast(g, x):
    """``unbroadcast(-g, x)`` of a float array ``g`` larger than ``x`` (subtract's VJP of
    a broadcast operand: gmm's mu in x - mu), as ``negated_sum`` computes a total: the
    sums of ``g`` negated, without -g's array, where no total is zero or nan; else the
    sums of -g, quietly (the sums of ``g`` told of their errors as -g's would)."""
    total = unbroadcast(g, x)
    if type(total) is _ndarray and total.base is not g and total is not g and \
            not _np.isnan(total).any() and (total != 0).all():
        return _np.negative(total, out=total)  # (a sum's array, made here)
    with _np.errstate(all="ignore"):
        return unbroadcast(-g, x)


def negated_sum(reduce, x, axis=None, *args, **kwargs):
    """``reduce(np.negative(x), axis, *args, **kwargs)``, a sum of floats (``np.add.reduce``),
    as ``-reduce(x, ...)``, without -x's array (~0.4 µs at 2,500): rounding to nearest is
    symmetric, so each partial sum of the negated terms is the negated partial sum, with
    the same floating-point errors, which the first sum reports as -x's sum would. A
    total that is zero (-x's sum starts from +0.0) or nan (which nan: an addition of
    infinities sets its sign) is the negated terms' own sum, quietly. (subtract's VJP of a
    number, x - max(x); jit's programs, ``_kernels.negated_sum``.)"""
    # (the rules' call, reduce(g, None), without packing what it does not pass: 0.1 µs)
    total = reduce(x, axis, *args, **kwargs) if args or kwargs else reduce(x, axis)
    if type(total) is not _ndarray:  # (a number: the sum over all axes)
        if total != 0 and total == total:
            return -total
    elif (total != 0).all() and not _np.isnan(total).any():
        return _np.negative(total, out=total)
    with _np.errstate(all="ignore"):
        return reduce(_np.negative(x), axis, *args, **kwargs)


def linear(fun, vjp_rule, reads: tuple | None = None, jvp_rule=None) -> None:
    """A function linear in its first argument: the JVP applies ``fun`` to the tangent
    (or ``jvp_rule(t, ans, x, ...)``, for a ``fun`` whose map depends on x's memory layout:
    the tangent's is not x's). ``reads``: see ``defvjp_direct``."""
    defvjp_direct(fun, vjp_rule, reads=reads)
    defjvp_direct(fun, jvp_rule or (lambda g, ans, x, *args, **kwargs: fun(g, *args, **kwargs)))
    deftaylor_linear(fun)


def composite(fun, impl) -> None:
    """Rules for ``fun`` taken from ``impl``, an equal function built from primitives.

    For functions whose derivative is easiest stated as "differentiate this
    formula" (diff, gradient, interp, convolve...): the VJP and JVP trace
    ``impl`` on the traced arguments, so every order works in both modes while
    the primal keeps NumPy's fast implementation.
    """
    def call(args, argnums, kwargs):
        def f(xs):
            return impl(*subvals(args, zip(argnums, xs)), **kwargs)

        return f

    def vjp(g, argnums, ans, args, kwargs):
        xs = tuple(args[i] for i in argnums)
        return reverse.make_vjp(call(args, argnums, kwargs), xs)[0](g)

    def jvp(argnums, tangents, ans, args, kwargs):
        xs = tuple(args[i] for i in argnums)
        return forward.make_jvp(call(args, argnums, kwargs), xs)(tuple(tangents))[1]

    defvjp_whole(fun, vjp)
    defjvp_argnums(fun, jvp)
    defsparsity(fun, derived_pattern(impl))  # the pattern of impl, found on the node's values
