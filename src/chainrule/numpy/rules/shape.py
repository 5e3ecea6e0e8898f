"""Rules for functions that move, copy or select elements without arithmetic.

All are linear in the array argument, so their JVP applies the function itself to
the tangent; the VJP puts the cotangent back where each element came from.
"""

from __future__ import annotations

import numpy as _np

from ..._core.reverse import primitive_vjps
from ..._core.rules import defjvp_argnums
from ..._core.tracer import primitive
from .. import numpy_wrapper as anp
from ..numpy_boxes import array_astype, array_getitem
from ._helpers import dtype_of, linear, match_dtype, shape_of, unbroadcast


def _is_basic_index(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, slice)) for p in parts)


@primitive
def untake(g, index, shape, dtype):
    """Zeros of ``shape`` with ``g`` added at ``index`` (repeated indices accumulate)."""
    out = _np.zeros(shape, dtype=dtype)
    if _is_basic_index(index):
        out[index] = g
    else:
        _np.add.at(out, index, g)
    return out


def _inverse_axes(axes, ndim):
    if axes is None:
        return None
    axes = [ax % ndim for ax in axes]
    return _np.argsort(axes).tolist()


# fmt: off
# ----------------------------------------------------------------------------- reshaping
linear(anp.reshape,      lambda g, ans, x, *a, **k: anp.reshape(g, shape_of(x)))
linear(anp.ravel,        lambda g, ans, x, *a, **k: anp.reshape(g, shape_of(x)))
linear(anp.squeeze,      lambda g, ans, x, *a, **k: anp.reshape(g, shape_of(x)))
linear(anp.expand_dims,  lambda g, ans, x, *a, **k: anp.reshape(g, shape_of(x)))
linear(anp.transpose,    lambda g, ans, x, axes=None: anp.transpose(g, _inverse_axes(axes, anp.ndim(x))))
linear(anp.swapaxes,     lambda g, ans, x, a1, a2: anp.swapaxes(g, a1, a2))
linear(anp.moveaxis,     lambda g, ans, x, src, dst: anp.moveaxis(g, dst, src))
linear(anp.broadcast_to, lambda g, ans, x, shape, **k: unbroadcast(g, x))

# ----------------------------------------------------------------------------- indexing, casting
linear(array_getitem,    lambda g, ans, x, index: untake(g, index, shape_of(x), dtype_of(x)))
linear(untake,           lambda g, ans, x, index, shape, dtype: array_getitem(g, index))
linear(array_astype,     lambda g, ans, x, *a, **k: match_dtype(g, x))
# fmt: on


# ----------------------------------------------------------------------------- joining
def _split_cotangent(g, axis, arrays, i):
    """The piece of ``g`` that came from ``arrays[i]`` in a concatenation along ``axis``."""
    sizes = [shape_of(a)[axis] for a in arrays]
    start = sum(sizes[:i])
    index = [slice(None)] * anp.ndim(g)
    index[axis] = slice(start, start + sizes[i])
    return array_getitem(g, tuple(index))


def _with_zeros(argnums, tangents, args, first):
    """Arguments from ``first`` on, with tangents where traced and zeros elsewhere."""
    by_argnum = dict(zip(argnums, tangents))
    return [by_argnum.get(i, _np.zeros_like(args[i])) for i in range(first, len(args))]


def _concatenate_vjp(g, ans, axis, *arrays, argnum):
    return match_dtype(_split_cotangent(g, axis, arrays, argnum - 1), arrays[argnum - 1])


def _stack_vjp(g, ans, axis, *arrays, argnum):
    index = (slice(None),) * (axis % anp.ndim(ans)) + (argnum - 1,)
    return match_dtype(array_getitem(g, index), arrays[argnum - 1])


def _array_vjp(g, ans, shape, dtype, *elems, argnum):
    return match_dtype(anp.ravel(g)[argnum - 2], elems[argnum - 2])


def _def_joining(fun, vjp, n_static):
    def rule(g, argnums, ans, args, kwargs):
        return tuple(vjp(g, ans, *args, argnum=i) for i in argnums)

    primitive_vjps[fun] = rule
    defjvp_argnums(fun, lambda argnums, gs, ans, args, kwargs: fun(
        *args[:n_static], *_with_zeros(argnums, gs, args, n_static)))


_def_joining(anp.concatenate_args, _concatenate_vjp, 1)
_def_joining(anp.stack_args, _stack_vjp, 1)
_def_joining(anp.array_from_args, _array_vjp, 2)
