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

import types

import numpy as _np

from .._core.tracer import getval, isbox, notrace_primitive, primitive

# fmt: off
DIFFERENTIABLE = {
    "elementwise": """
        abs absolute fabs negative positive reciprocal square sqrt cbrt exp exp2 expm1
        log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh
        arctanh asin acos atan asinh acosh atanh sinc deg2rad rad2deg degrees radians
        real imag conj conjugate angle real_if_close
        add subtract multiply divide true_divide power pow float_power arctan2 atan2 hypot
        logaddexp logaddexp2 maximum minimum fmax fmin mod remainder fmod copysign
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
        take take_along_axis compress extract select interp trapezoid convolve correlate
        polyval full linspace copy asarray asanyarray ascontiguousarray
        split array_split hsplit vsplit dsplit append insert delete
    """,
}

NONDIFFERENTIABLE = """
    sign floor ceil round around trunc rint fix floor_divide heaviside
    argmax argmin nanargmax nanargmin argsort argpartition nonzero flatnonzero argwhere
    searchsorted digitize count_nonzero unique isclose allclose array_equal array_equiv
    greater greater_equal less less_equal equal not_equal
    logical_and logical_or logical_not logical_xor isfinite isinf isnan isneginf isposinf
    isreal iscomplex signbit shape ndim size result_type iscomplexobj isrealobj
    zeros_like ones_like empty_like histogram
    any all eye identity isin
"""
# fmt: on


def _names(text: str) -> list[str]:
    return [name for name in text.split() if hasattr(_np, name)]


def _build() -> tuple[dict, dict]:
    """Wrap NumPy's functions; names that alias one NumPy object share one primitive."""
    wrapped_by_raw: dict = {}
    namespace: dict = {}
    for group in DIFFERENTIABLE.values():
        for name in _names(group):
            raw = getattr(_np, name)
            namespace[name] = wrapped_by_raw.setdefault(id(raw), primitive(raw))
    for name in _names(NONDIFFERENTIABLE):
        raw = getattr(_np, name)
        namespace[name] = wrapped_by_raw.setdefault(id(raw), notrace_primitive(raw))
    raw_to_wrapped = {
        getattr(_np, name): wrapped for name, wrapped in namespace.items()
    }
    return namespace, raw_to_wrapped


namespace, raw_to_wrapped = _build()
"""namespace: name -> wrapped function; raw_to_wrapped: NumPy function -> wrapped one."""

globals().update(namespace)
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
array_from_args = _spread(
    "array", lambda shape, dtype, *elems: _np.array(elems, dtype=dtype).reshape(shape)
)


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None or dtype is not None:
        return _np.concatenate(tuple(arrays), axis=axis, out=out, dtype=dtype, casting=casting)
    return concatenate_args(axis, *arrays)


def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None or dtype is not None:
        return _np.stack(tuple(arrays), axis=axis, out=out, dtype=dtype, casting=casting)
    return stack_args(axis, *arrays)


def _atleast(n, x):
    return [atleast_1d, atleast_2d, atleast_3d][n - 1](x)  # noqa: F821


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
        arrs.append(reshape(x, (-1, 1)) if _np.ndim(x) == 1 else x)  # noqa: F821
    return concatenate(arrs, axis=1)


row_stack = vstack
concat = concatenate


def _flatten_nested(obj, out):
    if isinstance(obj, (list, tuple)):
        shape = [len(obj)]
        inner = None
        for item in obj:
            inner = _flatten_nested(item, out)
        return shape + (inner or [])
    if isbox(obj) and _np.ndim(obj) > 0:
        out.extend(ravel(obj)[i] for i in range(_np.size(obj)))  # noqa: F821
        return list(_np.shape(obj))
    out.append(obj)
    return []


def _contains_box(obj) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_contains_box(item) for item in obj)
    return isbox(obj)


def array(obj, dtype=None, *args, **kwargs):
    """``numpy.array``, differentiable when ``obj`` holds traced values (nested lists too)."""
    if isbox(obj) and not args and not kwargs:
        return obj if dtype is None else obj.astype(dtype)
    if not _contains_box(obj):
        return _array_raw(obj, dtype, *args, **kwargs)
    elems: list = []
    shape = _flatten_nested(obj, elems)
    if dtype is None:
        dtype = _np.result_type(*[_np.asarray(getval(e)).dtype for e in elems])
    return array_from_args(tuple(shape), dtype, *elems)


def _is_wrapped(obj) -> bool:
    return getattr(obj, "_is_chainrule_primitive", False)


def install(target: dict) -> None:
    """Fill a module namespace with all of NumPy, then the wrapped names over it."""
    for name in dir(_np):
        if not name.startswith("__") and not isinstance(getattr(_np, name), types.ModuleType):
            target.setdefault(name, getattr(_np, name))
    target.update(namespace)
    for name in (
        "concatenate concat stack vstack hstack dstack column_stack row_stack array".split()
    ):
        target[name] = globals()[name]
    raw_to_wrapped.update(
        {getattr(_np, name): globals()[name]
         for name in "concatenate stack vstack hstack dstack column_stack array".split()}
    )
