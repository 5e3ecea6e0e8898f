"""Tensor methods with PyTorch's signatures and meanings.

Where NumPy and PyTorch give one name two meanings, the Tensor follows PyTorch:
``transpose(d0, d1)`` swaps two dims, ``repeat`` tiles, reductions take ``dim=`` and
``keepdim=`` (NumPy's ``axis=``/``keepdims=`` are accepted too, as PyTorch accepts
them), ``var``/``std`` are unbiased by default, ``max(dim)`` returns
``(values, indices)``. NumPy's functions (``chainrule.numpy.sum(t, axis=0)``) keep
NumPy's meanings. Every method calls chainrule.numpy primitives, so it shares
their derivative rules.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as _np

from .._core.tracer import getval
from ..numpy import linalg as alinalg
from ..numpy import numpy_wrapper as anp
from ..numpy.numpy_boxes import array_astype
from . import functional as F
from ._tensor import Tensor, _operands, _unwrap, _wrap_tree, inplace_update, link_view

# What max(dim)/min(dim) return, as torch.return_types.max/min: a named pair.
MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])


class Size(tuple):
    """A shape, as ``torch.Size``: a tuple with ``numel()``."""

    __slots__ = ()

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"Size({list(self)})"


# ----------------------------------------------------------------------------- arguments
def _dim(dim, axis, name: str):
    """``dim`` (or NumPy's alias ``axis``) as an int, a tuple of ints or None."""
    if dim is not None and axis is not None:
        raise TypeError(f"{name}() got both dim= and axis= (its NumPy alias); pass one.")
    dim = axis if dim is None else dim
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def _keep(keepdim: bool, keepdims: bool | None) -> bool:
    return bool(keepdim if keepdims is None else keepdims)


def _sizes(args: tuple) -> tuple:
    """Shape arguments given as ints (``view(2, 3)``) or as one sequence (``view((2, 3))``)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    return tuple(int(n) for n in args)


def _wrap(value) -> Tensor:
    # A primitive meeting a Tensor inside a functional transform may answer a Tensor.
    return value if isinstance(value, Tensor) else _wrap_tree(value)


def _raw(t: Tensor):
    return getval(t._value)


def _correction(name: str, unbiased, correction) -> int:
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}(): pass unbiased= or correction=, not both.")
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1  # PyTorch's default: Bessel's correction


def _plain_tensor(value) -> Tensor:
    return Tensor(_np.asarray(value), requires_grad=False)


# ----------------------------------------------------------------------------- reductions
def _reduction(fun, name: str):
    def method(
        self,
        dim=None,
        keepdim: bool = False,
        *,
        dtype=None,
        axis=None,
        keepdims: bool | None = None,
    ) -> Tensor:
        x = _unwrap(self if dtype is None else self.to(dtype))
        return _wrap(fun(x, axis=_dim(dim, axis, name), keepdims=_keep(keepdim, keepdims)))

    method.__name__ = name
    method.__doc__ = f"{name} over ``dim`` (all dims if None), as torch.Tensor.{name}."
    return method


def prod(
    self, dim=None, keepdim: bool = False, *, dtype=None, axis=None, keepdims: bool | None = None
) -> Tensor:
    dim = _dim(dim, axis, "prod")
    if isinstance(dim, tuple):
        raise TypeError("prod() takes one dim (an int), as in PyTorch.")
    x = _unwrap(self if dtype is None else self.to(dtype))
    return _wrap(anp.prod(x, axis=dim, keepdims=_keep(keepdim, keepdims)))


def _moment(fun, name: str):
    def method(
        self,
        dim=None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: int | None = None,
        axis=None,
        keepdims: bool | None = None,
    ):
        if isinstance(dim, bool):  # var(unbiased): PyTorch's other overload
            dim, unbiased = None, dim
        ddof = _correction(name, unbiased, correction)
        return _wrap(
            fun(
                _unwrap(self),
                axis=_dim(dim, axis, name),
                ddof=ddof,
                keepdims=_keep(keepdim, keepdims),
            )
        )

    method.__name__ = name
    method.__doc__ = (
        f"{name} over ``dim`` with Bessel's correction by default "
        f"(``correction=1``; ``unbiased=False`` or ``correction=0`` for the "
        f"population {name}), as torch.Tensor.{name}."
    )
    return method


def _extreme(fun, argfun, pairwise, result, name: str):
    def method(self, dim=None, keepdim: bool = False, *, axis=None, keepdims: bool | None = None):
        if isinstance(dim, Tensor) or isinstance(dim, _np.ndarray):
            return _wrap(pairwise(*_operands(self, dim)))  # max(other): elementwise
        dim = _dim(dim, axis, name)
        if dim is None:
            return _wrap(fun(_unwrap(self)))  # ties share the gradient, as in PyTorch
        if isinstance(dim, tuple):
            raise TypeError(f"{name}(dim) takes one dim; use amax/amin for several.")
        x = _unwrap(self)
        index = _np.expand_dims(argfun(_raw(self), axis=dim), dim)
        values = anp.take_along_axis(x, index, axis=dim)  # the gradient goes to `index`
        if not _keep(keepdim, keepdims):
            values, index = anp.squeeze(values, axis=dim), _np.squeeze(index, axis=dim)
        return result(_wrap(values), _plain_tensor(index))

    method.__name__ = name
    method.__doc__ = (
        f"``{name}()``: the {name}imum (a 0-d Tensor); ``{name}(dim, "
        f"keepdim=False)``: a named pair (values, indices) along dim; "
        f"``{name}(other)``: elementwise, as torch.Tensor.{name}."
    )
    return method


def _index_reduction(argfun, name: str):
    def method(
        self,
        dim: int | None = None,
        keepdim: bool = False,
        *,
        axis=None,
        keepdims: bool | None = None,
    ) -> Tensor:
        dim = _dim(dim, axis, name)
        return _plain_tensor(argfun(_raw(self), axis=dim, keepdims=_keep(keepdim, keepdims)))

    method.__name__ = name
    return method


def logsumexp(self, dim, keepdim: bool = False) -> Tensor:
    return F.logsumexp(self, dim, keepdim)


def norm(self, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """The vector p-norm over ``dim`` (all entries if None); 'fro' is p=2."""
    x = self if dtype is None else self.to(dtype)
    dims = dim if dim is None or isinstance(dim, (tuple, list)) else (dim,)
    dims = None if dims is None else tuple(dims)
    if p in ("fro", 2, 2.0):
        if dims is None or len(dims) <= 2:
            return _wrap(alinalg.norm(_unwrap(x), axis=dims, keepdims=keepdim))
        p = 2
    if p == "nuc" or isinstance(p, str):
        raise NotImplementedError(
            f"norm(p={p!r}) is not implemented; the vector norms (p a number, 'fro') are."
        )
    a = abs(x)
    if p == math.inf:
        return a.amax(dim=dims, keepdim=keepdim)
    if p == -math.inf:
        return a.amin(dim=dims, keepdim=keepdim)
    if p == 0:
        return _plain_tensor(_np.sum(_raw(x) != 0, axis=dims, keepdims=keepdim).astype(x.dtype))
    return (a**p).sum(dim=dims, keepdim=keepdim) ** (1.0 / p)


def _all_any(fun, name: str):
    def method(
        self, dim=None, keepdim: bool = False, *, axis=None, keepdims: bool | None = None
    ) -> Tensor:
        return _plain_tensor(
            fun(_raw(self), axis=_dim(dim, axis, name), keepdims=_keep(keepdim, keepdims))
        )

    method.__name__ = name
    return method


def _cumulative(fun, name: str):
    def method(self, dim: int | None = None, *, dtype=None, axis=None) -> Tensor:
        dim = _dim(dim, axis, name)
        if dim is None:
            raise TypeError(f"{name}() needs dim= (PyTorch has no flattening default).")
        x = _unwrap(self if dtype is None else self.to(dtype))
        return _wrap(fun(x, axis=dim))

    method.__name__ = name
    return method


# ----------------------------------------------------------------------------- shapes
def size(self, dim: int | None = None):
    """``size()``: the shape (a Size); ``size(d)``: the length of dim d."""
    shape = _np.shape(_raw(self))
    return Size(shape) if dim is None else shape[dim]


def shape(self) -> Size:
    return Size(_np.shape(_raw(self)))


def numel(self) -> int:
    return int(_np.size(_raw(self)))


def dim(self) -> int:
    return _np.ndim(_raw(self))


def reshape(self, *sizes, shape=None, order: str = "C") -> Tensor:
    """The same values in ``sizes`` (ints, or one sequence; -1: inferred), read and
    placed in ``order`` (NumPy's: "C" row-major, "F" column-major, "A"); ``shape=`` as
    NumPy's keyword."""
    if shape is not None:
        if sizes:
            raise TypeError("reshape(): give the shape either positionally or as shape=, "
                            "not both.")
        sizes = (shape,)
    value = _unwrap(self)
    if order == "C":  # (the common call: no keyword on the recorded call)
        return _wrap(anp.reshape(value, _sizes(sizes)))
    return _wrap(anp.reshape(value, _sizes(sizes), order=order))


def view(self, *shape) -> Tensor:
    """The same values with another shape (-1: inferred). Unlike PyTorch's view it is a
    copy that never shares memory, so it works on any Tensor."""
    return reshape(self, *shape)


def view_as(self, other) -> Tensor:
    return reshape(self, _np.shape(_raw(other)))


def unsqueeze(self, dim: int) -> Tensor:
    return _wrap(anp.expand_dims(_unwrap(self), dim))


def squeeze(self, dim=None, *, axis=None) -> Tensor:
    """Drop dims of size 1 (all, or those of ``dim`` that have size 1: PyTorch ignores
    the others instead of raising as NumPy does); ``axis=`` as NumPy's, which raises
    where one of them has another size."""
    if axis is not None:
        if dim is not None:
            raise TypeError("squeeze(): give dim (PyTorch's) or axis= (NumPy's), not both.")
        return _wrap(anp.squeeze(_unwrap(self), axis=axis))
    shape = _np.shape(_raw(self))
    if dim is None:
        dims = tuple(d for d, n in enumerate(shape) if n == 1)
    else:
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        dims = tuple(d % len(shape) for d in dims if shape and shape[d] == 1)
    return _wrap(anp.squeeze(_unwrap(self), axis=dims)) if dims else _wrap(_unwrap(self))


def permute(self, *args, dims=None) -> Tensor:
    """The dims reordered: ``permute(2, 0, 1)``, ``permute((2, 0, 1))`` or ``dims=``."""
    if dims is not None:
        if args:
            raise TypeError("permute(): give the dims positionally or as dims=, not both.")
        args = (dims,)
    return _wrap(anp.transpose(_unwrap(self), _sizes(args)))


def t(self) -> Tensor:
    ndim = _np.ndim(_raw(self))
    if ndim > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {ndim}D "
            f"(use transpose(d0, d1) or permute)."
        )
    return _wrap(anp.transpose(_unwrap(self))) if ndim == 2 else _wrap(_unwrap(self))


def flatten(self, start_dim: int | str = 0, end_dim: int = -1, order: str = "C") -> Tensor:
    """PyTorch's ``flatten(start_dim, end_dim)`` (those dims merged), or NumPy's
    ``flatten(order)`` (all dims, read in ``order``: "C", "F", "A", "K")."""
    if isinstance(start_dim, str):  # (NumPy's positional order)
        start_dim, order = 0, start_dim
    if order != "C":
        if (start_dim, end_dim) != (0, -1):
            raise TypeError(
                f"flatten(): order={order!r} (NumPy's) flattens all dims; with start_dim "
                f"and end_dim (PyTorch's) the order is 'C'. Reshape the Tensor with "
                f"reshape(..., order={order!r}) to merge some dims in another order.")
        return _wrap(anp.ravel(_unwrap(self), order=order))
    shape = _np.shape(_raw(self))
    if not shape:
        return reshape(self, 1)
    start, end = start_dim % len(shape), end_dim % len(shape)
    if start > end:
        raise ValueError("flatten(): start_dim cannot come after end_dim.")
    merged = math.prod(shape[start : end + 1])
    return reshape(self, shape[:start] + (merged,) + shape[end + 1 :])


def expand(self, *sizes) -> Tensor:
    """Broadcast to ``sizes`` (-1 keeps a dim); new dims go in front, as in PyTorch."""
    sizes = _sizes(sizes)
    shape = _np.shape(_raw(self))
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes ({len(sizes)}) must be at least the "
            f"number of dims ({len(shape)})."
        )
    target = tuple(shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(sizes))
    return _wrap(anp.broadcast_to(_unwrap(self), target))


def expand_as(self, other) -> Tensor:
    return expand(self, _np.shape(_raw(other)))


def repeat(self, *sizes) -> Tensor:
    """Tile the Tensor ``sizes[i]`` times along dim i (PyTorch's repeat is NumPy's tile;
    NumPy's element-wise repeat is chainrule.numpy.repeat / torch.repeat_interleave)."""
    sizes = _sizes(sizes)
    if len(sizes) < _np.ndim(_raw(self)):
        raise RuntimeError("repeat: give at least as many repeats as the Tensor has dims.")
    return _wrap(anp.tile(_unwrap(self), sizes))


# ----------------------------------------------------------------------------- arithmetic
def _numpy_method(fun):
    """The method ``t.name(...)`` as ``chainrule.numpy.name(t, ...)``: for the names whose
    NumPy and PyTorch meanings agree."""

    def method(self, *args, **kwargs):
        return _wrap_tree(fun(_unwrap(self), *args, **kwargs))

    method.__name__ = fun.__name__
    return method


def _binary_method(fun, name: str):
    def method(self, other) -> Tensor:
        return _wrap(fun(*_operands(self, other)))

    method.__name__ = name
    return method


def add(self, other, *, alpha=1) -> Tensor:
    return self + (other if alpha == 1 else other * alpha)


def sub(self, other, *, alpha=1) -> Tensor:
    return self - (other if alpha == 1 else other * alpha)


def div(self, other, *, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is None:
        return self / other
    if rounding_mode == "floor":
        return self // other
    raise NotImplementedError(f"div(rounding_mode={rounding_mode!r}): only None and 'floor'.")


def mm(self, other) -> Tensor:
    if _np.ndim(_raw(self)) != 2 or _np.ndim(_raw(_as_tensor(other))) != 2:
        raise RuntimeError("mm: both operands must be 2-D matrices (matmul broadcasts).")
    return self @ other


def _as_tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else _plain_tensor(x)


def clamp(self, min=None, max=None) -> Tensor:  # noqa: A002 (PyTorch's parameter names)
    """Values limited to [min, max]; the gradient passes where min <= x <= max."""
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of min and max must be given.")
    out = self
    if min is not None:
        out = anp.where(_raw(out) >= _raw(_as_tensor(min)), out, min)
    if max is not None:
        out = anp.where(_raw(out) <= _raw(_as_tensor(max)), out, max)
    return out if isinstance(out, Tensor) else _wrap(out)


def clone(self) -> Tensor:
    """A copy on the graph (gradients flow back to self)."""
    return _wrap(anp.positive(_unwrap(self)))


# ----------------------------------------------------------------------------- dtypes
def to(self, *args, dtype=None, **kwargs) -> Tensor:
    """``to(dtype)``, ``to(other)`` (other's dtype) or ``to("cpu")`` (no change): dtypes
    are NumPy's (``to(numpy.float32)``); there are no devices."""
    for arg in args:
        if isinstance(arg, Tensor):
            dtype = arg.dtype
        elif isinstance(arg, str) and arg.split(":")[0] == "cpu":
            continue
        elif isinstance(arg, str):
            raise RuntimeError(
                f"to({arg!r}): chainrule Tensors have no devices; GPU arrays "
                f"come from CuPy (see docs/arrays.md)."
            )
        else:
            dtype = arg
    if dtype is None or _np.dtype(dtype) == self.dtype:
        return self
    return _wrap(array_astype(_unwrap(self), _np.dtype(dtype)))


def _cast(dtype, name: str):
    def method(self) -> Tensor:
        return to(self, dtype)

    method.__name__ = name
    method.__doc__ = f"This Tensor as {_np.dtype(dtype)}, as torch.Tensor.{name}()."
    return method


def contiguous(self) -> Tensor:
    return self


# ----------------------------------------------------------------------------- nonlinearities
def softmax(self, dim: int) -> Tensor:
    return F.softmax(self, dim)


def log_softmax(self, dim: int) -> Tensor:
    return F.log_softmax(self, dim)


def relu(self) -> Tensor:
    return F.relu(self)


def sigmoid(self) -> Tensor:
    return F.sigmoid(self)


def nonzero(self) -> Tensor:
    """The indices of the nonzero entries, shape (count, ndim), as in PyTorch."""
    return _plain_tensor(_np.argwhere(_raw(self)))


def argsort(self, dim: int = -1, descending: bool = False) -> Tensor:
    order = _np.argsort(-_raw(self) if descending else _raw(self), axis=dim, kind="stable")
    return _plain_tensor(order)


# ----------------------------------------------------------------------------- comparisons
def equal(self, other) -> bool:
    """Whether ``other`` has this shape and these values (a Python bool), as torch.equal."""
    a, b = _raw(self), _raw(_as_tensor(other))
    return _np.shape(a) == _np.shape(b) and bool(_np.all(a == b))


def _predicate(fun, name: str):
    """A boolean Tensor of ``fun`` of the values (and of ``other``'s, for a binary ``fun``)."""
    if fun.nin == 2:

        def method(self, other) -> Tensor:
            return _plain_tensor(fun(_raw(self), _raw(_as_tensor(other))))
    else:

        def method(self) -> Tensor:
            return _plain_tensor(fun(_raw(self)))

    method.__name__ = name
    return method


# ----------------------------------------------------------------------------- in place
def _inplace_method(out_of_place, name: str):
    def method(self, *args, **kwargs) -> Tensor:
        return inplace_update(self, lambda: out_of_place(self, *args, **kwargs), name)

    method.__name__ = name
    method.__doc__ = (
        f"The in-place form of ``{out_of_place.__name__}`` (see "
        f"docs/tensor.md: recorded graphs keep the old value)."
    )
    return method


def fill_(self, value) -> Tensor:
    mask = _np.zeros(_np.shape(_raw(self)), dtype=bool)  # keeps the graph: gradient 0
    return inplace_update(self, lambda: anp.where(mask, _unwrap(self), value), "fill_")


def zero_(self) -> Tensor:
    return fill_(self, 0)


def copy_(self, src) -> Tensor:
    """Copy ``src`` (broadcast to this shape) into this Tensor; gradients flow to src."""
    mask = _np.ones(_np.shape(_raw(self)), dtype=bool)
    return inplace_update(
        self, lambda: anp.where(mask, _unwrap(_as_tensor(src)), _unwrap(self)), "copy_"
    )


# fmt: off
METHODS = {
    "sum": _reduction(anp.sum, "sum"), "mean": _reduction(anp.mean, "mean"),
    "amax": _reduction(anp.max, "amax"), "amin": _reduction(anp.min, "amin"),
    "prod": prod, "var": _moment(anp.var, "var"), "std": _moment(anp.std, "std"),
    "max": _extreme(anp.max, _np.argmax, anp.maximum, MaxResult, "max"),
    "min": _extreme(anp.min, _np.argmin, anp.minimum, MinResult, "min"),
    "argmax": _index_reduction(_np.argmax, "argmax"),
    "argmin": _index_reduction(_np.argmin, "argmin"),
    "all": _all_any(_np.all, "all"), "any": _all_any(_np.any, "any"),
    "cumsum": _cumulative(anp.cumsum, "cumsum"), "cumprod": _cumulative(anp.cumprod, "cumprod"),
    "logsumexp": logsumexp, "norm": norm,
    "size": size, "numel": numel, "nelement": numel, "dim": dim, "ndimension": dim,
    "reshape": reshape, "view": view, "view_as": view_as, "reshape_as": view_as,
    "unsqueeze": unsqueeze, "squeeze": squeeze, "permute": permute, "t": t,
    "flatten": flatten, "expand": expand, "expand_as": expand_as, "repeat": repeat,
    "add": add, "sub": sub, "subtract": sub, "div": div, "divide": div,
    "mul": _binary_method(anp.multiply, "mul"), "multiply": _binary_method(anp.multiply, "mul"),
    "true_divide": _binary_method(anp.true_divide, "true_divide"),
    "pow": _binary_method(anp.power, "pow"), "matmul": _binary_method(anp.matmul, "matmul"),
    "maximum": _binary_method(anp.maximum, "maximum"),
    "minimum": _binary_method(anp.minimum, "minimum"),
    "mm": mm, "clamp": clamp, "clip": clamp, "clone": clone,
    "neg": lambda self: -self, "negative": lambda self: -self,
    "to": to, "float": _cast(_np.float32, "float"), "double": _cast(_np.float64, "double"),
    "half": _cast(_np.float16, "half"), "long": _cast(_np.int64, "long"),
    "int": _cast(_np.int32, "int"), "bool": _cast(_np.bool_, "bool"),
    "contiguous": contiguous, "softmax": softmax, "log_softmax": log_softmax,
    "relu": relu, "sigmoid": sigmoid, "nonzero": nonzero, "argsort": argsort,
    "fill_": fill_, "zero_": zero_, "copy_": copy_,
    "eq": Tensor.__eq__, "ne": Tensor.__ne__, "lt": Tensor.__lt__, "le": Tensor.__le__,
    "gt": Tensor.__gt__, "ge": Tensor.__ge__, "equal": equal,
    **{name: _predicate(getattr(_np, name), name) for name in
       "logical_and logical_or logical_xor logical_not isnan isinf isfinite".split()},
    **{name: _numpy_method(getattr(anp, name)) for name in
       "ravel swapaxes diagonal trace conj exp log sin cos tan tanh sqrt abs sign".split()},
}
for _name in "add sub mul div pow clamp clip relu sigmoid neg".split():
    METHODS[f"{_name}_"] = _inplace_method(METHODS[_name], f"{_name}_")
for _name in "tanh exp".split():
    METHODS[f"{_name}_"] = _inplace_method(METHODS[_name], f"{_name}_")
# fmt: on


def _as_view(method):
    """``method``, noting its result as a view of self: PyTorch's version shares memory."""

    def view_method(self, *args, **kwargs):
        return link_view(self, method(self, *args, **kwargs))

    view_method.__name__, view_method.__doc__ = method.__name__, method.__doc__
    return view_method


for _name in (
    "reshape view view_as reshape_as unsqueeze squeeze permute t flatten expand "
    "expand_as ravel swapaxes diagonal"
).split():
    METHODS[_name] = _as_view(METHODS[_name])

for _name, _method in METHODS.items():
    setattr(Tensor, _name, _method)
Tensor.shape = property(shape, doc="The shape, a Size (a tuple).")
