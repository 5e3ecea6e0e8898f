"""The wrapped NumPy namespace: an explicit list of primitives, the rest re-exported.

Every name NumPy has is available. Names listed in DIFFERENTIABLE become
primitives (their rules live in the rule tables beside this file); names in
NONDIFFERENTIABLE accept traced values and return plain results; everything else
is NumPy's own object, and calling it on a traced value raises an error naming
the function (see ArrayBox.__array_function__). Functions that take their
arrays inside a list (concatenate, stack, array ...) are thin Python wrappers
around a primitive that takes the arrays positionally.
"""

from __future__ import annotations

import builtins as _builtins
import inspect
import math as _math
import operator as _operator
import types

import numpy as _np

from .._core import tracer as _tracer
from .._core.tracer import direct_types, getval, isbox, notrace_primitive, primitive
from . import _namespace
from ._namespace import raw_to_wrapped
from .placement import constant_like
from .short_axes import SHORT_AXES, with_short_axes

# fmt: off
DIFFERENTIABLE = {
    "elementwise": """
        abs absolute fabs negative positive reciprocal square sqrt cbrt exp exp2 expm1
        log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh
        arctanh asin acos atan asinh acosh atanh sinc deg2rad rad2deg degrees radians
        real imag conj conjugate angle real_if_close
        add subtract multiply divide true_divide power pow float_power arctan2 atan2 hypot
        logaddexp logaddexp2 maximum minimum fmax fmin mod remainder fmod copysign divmod
        where clip nan_to_num full_like
    """,
    "reductions": """
        sum prod mean var std max min amax amin ptp cumsum cumprod trace
        nansum nanprod nanmean nanvar nanstd nanmax nanmin nancumsum nancumprod
        cumulative_sum cumulative_prod bincount
        median nanmedian percentile nanpercentile quantile nanquantile average cov corrcoef
    """,
    "contraction": """
        dot vdot matmul inner outer tensordot einsum kron cross
    """,
    "shape": """
        reshape ravel squeeze expand_dims transpose permute_dims swapaxes moveaxis rollaxis
        broadcast_to atleast_1d atleast_2d atleast_3d repeat tile roll rot90 flip fliplr flipud
        diag diagonal diagflat tril triu pad sort partition diff gradient ediff1d
        take take_along_axis compress extract interp trapezoid convolve correlate
        polyval full linspace copy asarray asanyarray ascontiguousarray asfortranarray
        split array_split hsplit vsplit dsplit append insert delete meshgrid
    """,
}

NONDIFFERENTIABLE = """
    sign floor ceil round around trunc rint fix floor_divide heaviside
    argmax argmin nanargmax nanargmin argsort argpartition lexsort nonzero flatnonzero argwhere
    searchsorted digitize count_nonzero isclose allclose array_equal array_equiv
    greater greater_equal less less_equal equal not_equal
    logical_and logical_or logical_not logical_xor isfinite isinf isnan isneginf isposinf
    isreal iscomplex signbit shape ndim size result_type iscomplexobj isrealobj
    zeros_like ones_like empty_like histogram
    any all eye identity isin bitwise_and bitwise_or bitwise_xor invert
"""
# fmt: on


# The differentiable functions whose answer NumPy makes a view of their first argument
# (where it can: ``np.diag`` of a 2-D array, ``np.asarray`` of an array, the array itself):
# on chainrule.numpy's buffers and traced arrays their answer is a view too, which sees
# later writes into the argument (``tracer.view_makers``, filled by numpy_boxes, buffers).
VIEWING = """
    transpose permute_dims matrix_transpose reshape ravel squeeze expand_dims swapaxes
    moveaxis rollaxis broadcast_to atleast_1d atleast_2d atleast_3d flip fliplr flipud rot90
    diagonal diag real imag real_if_close split array_split hsplit vsplit dsplit
    asarray asanyarray ascontiguousarray asfortranarray
""".split()


def _names(text: str) -> list[str]:
    return [name for name in text.split() if hasattr(_np, name)]


# ----------------------------------------------------------------------------- scalar path
# A NumPy ufunc called on a float scalar costs ~1.5 us; the same IEEE operation costs ~0.1 us
# as Python's float arithmetic, math's C functions or NumPy's own scalar arithmetic. Scalar
# code (long chains of float operations, the backward pass of such chains) runs on this
# path. It returns a numpy.float64 as the ufunc would, and leaves to the ufunc every call
# whose result or warning could differ from NumPy's.
_FLOAT_SCALARS = frozenset([float, _np.float64])
_f64 = _np.float64
_isfinite = _math.isfinite

# fmt: off
# name -> the float function. math's functions raise (ValueError, OverflowError) where
# NumPy's would warn: outside the domain, on overflow, sin and cos of inf.
_SCALAR_UNARY = {
    "negative": _operator.neg,
    "absolute": _builtins.abs,
    "sin":      _math.sin,
    "cos":      _math.cos,
    "exp":      _math.exp,
    "log":      _math.log,
    "sqrt":     _math.sqrt,
}
_SCALAR_BINARY = {
    "add":      _operator.add,
    "subtract": _operator.sub,
    "multiply": _operator.mul,
    "divide":   _operator.truediv,
}
# Operators whose ufunc has no float path above; on NumPy scalars they are the operator
# too (see _NUMPY_SCALARS).
_OPERATOR_ONLY = {
    "floor_divide": _operator.floordiv,
    "remainder":    _operator.mod,
    "power":        _operator.pow,
    "divmod":       _builtins.divmod,
}
# fmt: on

# NumPy's scalars have their own arithmetic behind their operators, which differs from
# the ufuncs' in the last bit on some inputs: complex products and absolute values (a
# third of them), x ** 2 and x ** -1 (the ufunc's square and reciprocal). ``x * y``,
# ``x ** 2`` or ``abs(x)`` on traced scalars are these primitives, so on NumPy scalars
# (and numbers with them) they compute what the operators compute untraced, as the
# float path does on float scalars; so does ``power`` of an array by a number (the
# array's ** takes a fast path of its own). Elsewhere the ufunc answers.
_NUMPY_SCALARS = frozenset([_np.float64, _np.float32, _np.float16, _np.complex128,
                            _np.complex64])
_SCALAR_OPERANDS = _NUMPY_SCALARS | {float, complex, int}
# an array's ** by a number is NumPy's fast path (square, sqrt, reciprocal: their warnings,
# "overflow encountered in square"), not the power ufunc
_ndarray = _np.ndarray
_POWER_EXPONENTS = frozenset([int, float])


direct_types.add(_np.ndarray)  # (raw.direct, below: an ndarray operand is the ufunc's call)


def _with_scalar_path(ufunc, scalar, floats: bool = True):
    """``ufunc``, with ``scalar`` taking the calls whose operands are all float scalars
    (``floats``: False for the operators of _OPERATOR_ONLY) or NumPy scalars.

    One Python frame per call: the float function is a C function, not a lambda."""
    if ufunc.nin == 1:
        def raw(x, *args, **kwargs):
            if args or kwargs:
                return ufunc(x, *args, **kwargs)
            x_type = type(x)
            if x_type in _FLOAT_SCALARS:
                try:
                    return _f64(scalar(x))
                except (ValueError, OverflowError):
                    pass  # NumPy's value, with its warning
            elif x_type in _NUMPY_SCALARS and (scalar is _builtins.abs or scalar is _operator.neg):
                return scalar(x)
            return ufunc(x)  # (a plain call: forwarding empty *args, **kwargs costs ~0.5 us)
    else:
        def raw(x, y, *args, **kwargs):
            if args or kwargs:
                return ufunc(x, y, *args, **kwargs)
            x_type, y_type = type(x), type(y)
            if x_type is _ndarray and y_type is _ndarray:
                return ufunc(x, y)  # (the common call of array code: no scalar path)
            if x_type is float and y_type is float and floats:
                # Python's arithmetic neither warns nor divides by zero: a non-finite
                # result goes to NumPy (inf and nan operands, overflow, 0/0).
                try:
                    r = scalar(x, y)
                    if _isfinite(r):
                        return _f64(r)
                except ZeroDivisionError:
                    pass
            elif (x_type is _f64 and y_type in _FLOAT_SCALARS) or \
                    (y_type is _f64 and x_type is float):  # (identity tests: cheaper than sets)
                return scalar(x, y)  # NumPy's scalar arithmetic: its values and warnings
            elif (x_type in _NUMPY_SCALARS and y_type in _SCALAR_OPERANDS) or \
                    (y_type in _NUMPY_SCALARS and x_type in _SCALAR_OPERANDS) or \
                    (x_type is _ndarray and y_type in _POWER_EXPONENTS and not floats):
                return scalar(x, y)  # (an array ** a number: NumPy's square, sqrt ...)
            return ufunc(x, y)
    raw.__name__ = raw.__qualname__ = ufunc.__name__
    raw.__doc__ = ufunc.__doc__
    raw.ufunc = ufunc  # for dispatch to foreign operands (numpy_boxes)
    if floats:
        raw.scalar = scalar  # for chainrule.jit's programs of floats
        # a call with an ndarray operand is the ufunc's (tracer.direct_types; not for the
        # operators of _OPERATOR_ONLY: an array ** a number takes NumPy's own fast path)
        raw.direct = ufunc
    return raw


def _in_own_library(fun):
    """``fun`` (asarray and kin) leaving a Dask or CuPy array in its library: NumPy's own
    would compute it or copy it to the host; ``like=`` dispatches to the library's."""
    def raw(a, *args, **kwargs):
        if type(a) is not _np.ndarray and "like" not in kwargs and \
                hasattr(type(a), "__array_function__") and not isinstance(a, _np.generic):
            return fun(a, *args, like=a, **kwargs)
        return fun(a, *args, **kwargs)

    raw.__name__ = raw.__qualname__ = fun.__name__
    raw.__doc__ = fun.__doc__
    return raw


_KEEP_LIBRARY = frozenset([_np.asarray, _np.asanyarray, _np.ascontiguousarray,
                           _np.asfortranarray])


def _out_position(fun) -> int | None:
    """Where NumPy's ``fun`` takes its output array positionally (``out``), if it does."""
    if isinstance(fun, _np.ufunc):
        return fun.nin
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for position, param in enumerate(params):
        if param.kind not in positional:  # out after *operands (einsum): keyword only
            return None
        if param.name == "out":
            return position
    return None


def _where(condition, x=None, y=None):
    if x is None and y is None:
        return _np.where(condition)
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y should be given (as NumPy).")
    if type(condition) is bool and not isinstance(x, _np.ndarray) \
            and not isinstance(y, _np.ndarray):
        return x if condition else y  # as autograd's: Python values keep their type
    return _np.where(condition, x, y)


_where.__name__ = _where.__qualname__ = "where"
_where.__doc__ = "``numpy.where``; also by keyword (condition=, x=, y=), as autograd's.\n" + (
    _np.where.__doc__ or "")

# NumPy functions whose parameters are positional-only but that autograd accepts by name
_BY_KEYWORD = {_np.where: _where}


_SCALAR_PATHS = {getattr(_np, name): impl
                 for name, impl in {**_SCALAR_UNARY, **_SCALAR_BINARY}.items()}
_OPERATOR_PATHS = {getattr(_np, name): impl for name, impl in _OPERATOR_ONLY.items()}


def _differentiable(raw):
    """The primitive that stands for NumPy's differentiable function ``raw``."""
    impl = _SCALAR_PATHS.get(raw)
    operator = _OPERATOR_PATHS.get(raw)
    return primitive(
        _in_own_library(raw) if raw in _KEEP_LIBRARY else
        with_short_axes(raw, SHORT_AXES[raw]) if raw in SHORT_AXES else
        _BY_KEYWORD[raw] if raw in _BY_KEYWORD else
        _with_scalar_path(raw, impl) if impl is not None else
        _with_scalar_path(raw, operator, floats=False) if operator is not None else raw,
        out_position=_out_position(raw), answers_view=raw in _VIEWING_RAW)


_VIEWING_RAW = frozenset(getattr(_np, name) for name in VIEWING if hasattr(_np, name))


# name -> wrapped function; names that alias one NumPy object share one (the two lists
# name no object in common)
namespace = {
    **_namespace.primitives(
        _np, [name for group in DIFFERENTIABLE.values() for name in _names(group)],
        _differentiable),
    **_namespace.primitives(_np, _names(NONDIFFERENTIABLE), notrace_primitive),
}
raw_to_wrapped.update({getattr(_np, name): wrapped for name, wrapped in namespace.items()})

# Other modules call the primitives as this module's attributes (``anp.sum``); the ones
# the wrappers below call are also bound by name.
globals().update(namespace)
atleast_1d = namespace["atleast_1d"]
atleast_2d = namespace["atleast_2d"]
atleast_3d = namespace["atleast_3d"]
broadcast_to = namespace["broadcast_to"]
copy = namespace["copy"]
expand_dims = namespace["expand_dims"]
ravel = namespace["ravel"]
reshape = namespace["reshape"]
take = namespace["take"]
transpose = namespace["transpose"]
where = namespace["where"]
_array_raw = _np.array


# ----------------------------------------------------------------------------- list-taking
# Arrays passed inside a list are spread into positional arguments so that the
# tracer sees them; the primitive is named after the NumPy function it serves.

def _spread(name: str, build):
    raw = primitive(build)
    raw.__name__ = raw.__qualname__ = f"{name}_args"
    return raw


concatenate_args = _spread("concatenate", lambda axis, *arrs: _np.concatenate(arrs, axis=axis))
stack_args = _spread("stack", lambda axis, *arrs: _np.stack(arrs, axis=axis))


def _array_build(shape, dtype, *elems):
    flat = [_np.ravel(e) for e in elems]
    return _np.concatenate(flat).astype(dtype, copy=False).reshape(shape)


array_from_args = _spread("array", _array_build)


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = tuple(arrays)
    if (out is not None or dtype is not None) and not _contains_box(arrays):
        return _np.concatenate(arrays, axis=axis, out=out, dtype=dtype, casting=casting)
    joined = concatenate_args(axis, *arrays)
    if dtype is not None:
        if not _np.can_cast(joined.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {joined.dtype!r} to "
                            f"{_np.dtype(dtype)!r} according to the rule {casting!r}")
        joined = joined.astype(dtype)
    if out is None:
        return joined
    out[...] = joined  # (a plain NumPy out: the clear error of a traced write into one)
    return out


def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None or dtype is not None:
        return _np.stack(tuple(arrays), axis=axis, out=out, dtype=dtype, casting=casting)
    return stack_args(axis, *arrays)


def _atleast(n, x):
    return [atleast_1d, atleast_2d, atleast_3d][n - 1](x)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([_atleast(2, x) for x in tup], axis=0)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [_atleast(1, x) for x in tup]
    return concatenate(arrs, axis=0 if arrs and _np.ndim(arrs[0]) == 1 else 1)


def dstack(tup):
    return concatenate([_atleast(3, x) for x in tup], axis=2)


def column_stack(tup):
    arrs = []
    for x in tup:
        x = _atleast(1, x)
        arrs.append(reshape(x, (-1, 1)) if _np.ndim(x) == 1 else x)
    return concatenate(arrs, axis=1)


row_stack = vstack
concat = concatenate


def _block_depth(obj) -> int:
    return 1 + _block_depth(obj[0]) if isinstance(obj, list) and obj else 0


def block(arrays):
    """``numpy.block``: nested lists are joined innermost first along the last axes."""
    depth = _block_depth(arrays)

    def join(obj, level):
        if not isinstance(obj, list):
            return obj
        parts = [join(item, level + 1) for item in obj]
        ndim = _builtins.max(depth, *(_np.ndim(p) for p in parts))
        parts = [reshape(p, (1,) * (ndim - _np.ndim(p)) + _np.shape(p))
                 for p in parts]
        return concatenate(parts, axis=level - depth)

    return join(arrays, 0)


def select(condlist, choicelist, default=0):
    """``numpy.select`` as a chain of ``where``: differentiable in the choices and default."""
    if len(condlist) != len(choicelist):
        raise ValueError("select: list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    out = default
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        out = where(cond, choice, out)
    shape = _np.broadcast_shapes(*(_np.shape(c) for c in (*condlist, *choicelist)))
    return broadcast_to(out, shape) if _np.shape(out) != shape else out


def _flatten_nested(obj, out):
    """Leaves of nested lists into ``out``; returns the nested shape."""
    if isinstance(obj, (list, tuple)):
        shapes = [_flatten_nested(item, out) for item in obj]
        if _builtins.any(s != shapes[0] for s in shapes):
            raise ValueError(
                "chainrule.numpy.array: the nested sequence is ragged (its parts have shapes "
                f"{shapes}); every part must have the same shape."
            )
        return [len(obj)] + (shapes[0] if shapes else [])
    out.append(obj)
    return list(_np.shape(obj))


def _contains_box(obj) -> bool:
    if isinstance(obj, (list, tuple)):
        return _builtins.any(_contains_box(item) for item in obj)
    return isbox(obj)


def _dtype_of(value):
    # a Dask or CuPy array's own dtype (numpy.asarray would compute it or copy it)
    dtype = getattr(value, "dtype", None)
    return _np.asarray(value).dtype if dtype is None else dtype


def array(obj, dtype=None, *args, **kwargs):
    """``numpy.array``, differentiable when ``obj`` holds traced values (nested lists too)."""
    if isbox(obj) and not args and not kwargs:
        return copy(obj) if dtype is None else obj.astype(dtype)
    if isbox(obj) and kwargs.get("copy", True) is not True:
        plain = getval(obj)  # (NumPy answers the array itself where it needs no copy)
        if _array_raw(plain, dtype, *args, **kwargs) is plain:
            return obj
    if not _contains_box(obj):
        return _array_raw(obj, dtype, *args, **kwargs)
    elems: list = []
    shape = _flatten_nested(obj, elems)
    if dtype is None:
        dtype = _np.result_type(*[_dtype_of(getval(e)) if _np.ndim(getval(e))
                                  else getval(e) for e in elems])
    return array_from_args(tuple(shape), dtype, *elems)


class _AxisConcatenator:
    """``r_`` and ``c_``: NumPy's index tricks, differentiable when an item is traced.

    With no traced item, NumPy's own object does the work (every directive it knows);
    otherwise each item is raised to ``ndmin`` dimensions as NumPy does, and the pieces
    go through the concatenate primitive."""

    def __init__(self, numpys, axis: int, ndmin: int, trans1d: int):
        self.numpys, self.axis, self.ndmin, self.trans1d = numpys, axis, ndmin, trans1d

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        if not _contains_box(list(items)):
            return self.numpys[key]
        settings = [self.axis, self.ndmin, self.trans1d]
        pieces = []
        for k, item in enumerate(items):
            if isinstance(item, str):  # 'axis[,ndmin[,trans1d]]'
                parts = item.split(",")
                if k != 0 or len(parts) > 3 or not _builtins.all(p.strip().lstrip("-").isdigit()
                                                       for p in parts):
                    raise ValueError(
                        f"chainrule.numpy index tricks: the directive {item!r} is not "
                        "supported with traced items (only a leading 'axis[,ndmin[,trans1d]]').")
                settings[:len(parts)] = map(int, parts)
                continue
            if isinstance(item, slice):
                item = _np.r_[item]  # NumPy's range: a constant
            pieces.append(self._raised(item, *settings[1:]))
        return concatenate(pieces, axis=settings[0])

    @staticmethod
    def _raised(item, ndmin: int, trans1d: int):
        """``item`` with ``ndmin`` dimensions, its own axes where NumPy's ``trans1d`` puts them."""
        shape = _np.shape(getval(item))
        if len(shape) >= ndmin:
            return item
        raised = reshape(item, (1,) * (ndmin - len(shape)) + shape)
        if trans1d == -1:
            return raised
        k2, k1 = ndmin - len(shape), trans1d
        if k1 < 0:
            k1 += k2 + 1
        axes = list(range(ndmin))
        return transpose(raised, axes[:k1] + axes[k2:] + axes[k1:k2])


r_ = _AxisConcatenator(_np.r_, axis=0, ndmin=1, trans1d=-1)
c_ = _AxisConcatenator(_np.c_, axis=-1, ndmin=2, trans1d=0)


def _holds_box(arg) -> bool:
    return isinstance(arg, (list, tuple)) and _contains_box(arg)


def _sequences_as_arrays(f_wrapped, args, kwargs):
    """``ArrayBox.on_refused_sequences`` (set in numpy_boxes): redo a primitive call whose
    list or tuple arguments hold traced values (np.mean([a, b]), as autograd accepts) with
    them made traced arrays by the differentiable ``array``. The engine asks only after the
    plain call failed, so calls without such lists pay nothing."""
    args = [array(a) if _holds_box(a) else a for a in args]
    kwargs = {k: array(v) if _holds_box(v) else v for k, v in kwargs.items()}
    return f_wrapped(*args, **kwargs)


def astype(x, dtype, /, *, copy=True, device=None):
    """``numpy.astype`` (NumPy 2's function form of ``x.astype``): differentiable to float
    and complex dtypes; to integer and boolean ones it gives plain arrays, as ``x.astype``."""
    if isbox(x):
        return x.astype(dtype, copy=copy)
    return _np.astype(x, dtype, copy=copy, **({} if device is None else {"device": device}))


# ----------------------------------------------------------------------------- functional updates
def _copy(x):
    # a duck array (Dask, CuPy) copies itself: np.array(x) would bring it to the host
    if isinstance(x, (_np.ndarray, _np.generic)) or not hasattr(x, "__array_function__"):
        if type(x) is _np.ndarray and 0 in x.strides and x.size > 1:
            return _broadcast_copied(x)
        return _np.array(x, copy=True, subok=True)
    return x.copy()


def _broadcast_copied(x: _np.ndarray) -> _np.ndarray:
    """A copy of a broadcast view (zero strides) laid out in C order through its last
    zero-stride axis and, after it, as NumPy's copy (order K) lays out one block of the
    later axes. Order K itself would put a zero-stride axis innermost, so an unbatched
    buffer written by vmap's batch, such a view, would give examples that are not blocks
    of their own as the loop's copies are; all in C order, an example that the loop copies
    in another order (a Fortran-ordered buffer): reductions then add in another order,
    another last bit."""
    last = x.ndim - 1 - x.strides[::-1].index(0)  # (this module's max is np.max)
    block = _np.empty_like(x[(0,) * (last + 1)])  # (order K: as np.array(..., copy=True))
    later = _builtins.sorted(range(block.ndim), key=lambda i: -block.strides[i])  # outer first
    axes = list(range(last + 1)) + [last + 1 + i for i in later]
    out = _np.empty([x.shape[i] for i in axes], x.dtype).transpose(_np.argsort(axes))
    _np.copyto(out, x)
    return out


@primitive
def index_update(x, index, v):
    """``x`` with ``x[index] = v`` applied to a copy; the functional form of assignment.

    Differentiable w.r.t. ``x`` and ``v``. Where ``index`` repeats a position,
    NumPy keeps the last write, and only that element of ``v`` gets a gradient.
    """
    out = _copy(x)
    out[index] = v
    return out


@primitive
def index_add(x, index, v):
    """``x`` with ``v`` added at ``index``; repeated indices accumulate (as numpy.add.at)."""
    out = _copy(x)
    _np.add.at(out, index, v)
    return out


class _AtIndexed:
    """``at(x)[index]``: JAX's out-of-place indexed updates. Repeated positions: ``set``
    keeps the last write (NumPy's rule; JAX leaves it unspecified), ``add`` accumulates
    (numpy.add.at); ``multiply``, ``divide``, ``power``, ``min`` and ``max`` combine each
    position once and refuse an index that repeats one."""

    __slots__ = ("x", "index")

    def __init__(self, x, index):
        self.x, self.index = x, index

    def get(self):
        return self.x[self.index]

    def set(self, v):
        return index_update(self.x, self.index, v)

    def add(self, v):
        return index_add(self.x, self.index, v)

    def _combined(self, combine, v, name: str):
        positions = _np.arange(_np.size(getval(self.x))).reshape(_np.shape(getval(self.x)))
        chosen = _np.ravel(positions[self.index])
        if len(_np.unique(chosen)) != len(chosen):
            raise NotImplementedError(
                f"x.at[index].{name}(v) with an index that repeats a position: chainrule "
                f"combines each position once. Combine the repeated values first (e.g. "
                f"prod or min of them), or use .add, which accumulates repeats."
            )
        return index_update(self.x, self.index, combine(self.x[self.index], v))

    def multiply(self, v):
        return self._combined(namespace["multiply"], v, "multiply")

    def divide(self, v):
        return self._combined(namespace["true_divide"], v, "divide")

    def power(self, v):
        return self._combined(namespace["power"], v, "power")

    def min(self, v):
        return self._combined(namespace["minimum"], v, "min")

    def max(self, v):
        return self._combined(namespace["maximum"], v, "max")


class at:  # noqa: N801  (named like JAX's x.at[...] property, used as np.at(x)[...])
    """``np.at(x)[idx].set(v)`` / ``.add`` / ``.multiply`` / ``.divide`` / ``.power`` /
    ``.min`` / ``.max`` / ``.get()``: functional indexed updates, as JAX's ``x.at``, on
    traced and plain arrays (``x.at[...]`` on traced ones too)."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, index):
        return _AtIndexed(self.x, index)


def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """The complement of ``diagonal``: ``D``'s last axis laid along the diagonal of two
    new last axes, shape ``D.shape + D.shape[-1:]`` (autograd's name; its only supported
    form is ``offset=0, axis1=-1, axis2=-2``)."""
    if offset != 0 or {axis1, axis2} != {-1, -2}:
        raise NotImplementedError(
            "make_diagonal supports offset=0, axis1=-1, axis2=-2 only; for a 1-D D with an "
            "offset use chainrule.numpy.diag(D, k)."
        )
    n = _np.shape(D)[-1]
    eye = constant_like(_np.eye(n, dtype=_np.result_type(getval(D))), D)
    return expand_dims(D, -1) * eye


def piecewise(x, condlist, funclist, *args, **kw):
    """``numpy.piecewise``, differentiable w.r.t. ``x`` (and values the functions close
    over): each piece is ``f(x[cond])`` written into the result with ``index_update``."""
    x_raw = _np.asarray(getval(x))
    # NumPy's reading of condlist: one condition unless it is a list of arrays/lists
    if _np.isscalar(condlist) or (
            not isinstance(getval(condlist[0]), (list, _np.ndarray)) and x_raw.ndim != 0):
        condlist = [condlist]
    # (a traced condition's plain value: under chainrule.jit a guarded decision, __array__)
    conditions = [_np.asarray(c, dtype=bool) for c in condlist]
    if len(funclist) == len(conditions) + 1:  # the last function covers "otherwise"
        conditions.append(~_np.any(conditions, axis=0))
    elif len(funclist) != len(conditions):
        raise ValueError(f"piecewise: {len(condlist)} conditions need {len(condlist)} or "
                         f"{len(condlist) + 1} functions, got {len(funclist)}")
    out = _np.zeros(x_raw.shape, dtype=_np.result_type(x_raw, float))
    for cond, piece in zip(conditions, funclist):
        if cond.ndim == 0:
            cond = _np.broadcast_to(cond, x_raw.shape)
        value = piece(x[cond], *args, **kw) if callable(piece) else piece
        out = index_update(out, cond, value)
    return out


def _same_value(x):
    return x


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, sorted=True):  # noqa: A002 - NumPy's name
    """``numpy.unique``; the unique values are differentiable: each is a copy of the
    first element equal to it, which gets its gradient (the other copies get none,
    like the positions ``sort`` or ``max`` do not pick)."""
    raw = _tracer.decided(ar, _same_value)  # (under chainrule.jit, guarded: shapes follow)
    # sorted= is passed only when asked for: NumPy before 2.3 does not know it
    found = _np.unique(raw, True, return_inverse, return_counts, axis=axis,
                       equal_nan=equal_nan, **({} if sorted else {"sorted": False}))
    first = found[1]
    values = ravel(ar)[first] if axis is None else take(ar, first, axis=axis)
    extras = [first] if return_index else []
    extras += list(found[2:])
    return (values, *extras) if extras else values


def install(target: dict) -> None:
    """Fill a module namespace with all of NumPy, then the wrapped names over it."""
    # vars, not dir: dir also lists the submodules NumPy imports lazily on attribute access
    # (f2py, testing, ...: ~0.2 s), and modules are left out here anyway
    names = [name for name, value in vars(_np).items()
             if not name.startswith("__") and not isinstance(value, types.ModuleType)]
    own = {name: globals()[name] for name in WRAPPERS}
    _namespace.install(target, _np, {**namespace, **own}, names=names, dispatch=WRAPPERS)
    # A wrapped ufunc keeps NumPy's methods (np.add.reduce, np.multiply.outer ...): NumPy's
    # answer on plain arrays; on traced ones NumPy hands the call to the box, which
    # refuses it by name (they were an AttributeError of a 'function' object)
    for name, wrapped in target.items():
        ufunc = getattr(_np, name, None)
        if isinstance(ufunc, _np.ufunc) and wrapped is not ufunc:
            for method in ("reduce", "accumulate", "reduceat", "outer", "at"):
                if not hasattr(wrapped, method):
                    setattr(wrapped, method, getattr(ufunc, method))


# Python functions (not primitives) that install() puts over NumPy's names.
WRAPPERS = """
    concatenate concat stack vstack hstack dstack column_stack row_stack block select array
    index_update index_add at make_diagonal piecewise unique astype r_ c_
""".split()
