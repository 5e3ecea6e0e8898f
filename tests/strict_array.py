"""A strict stand-in for CuPy: a duck array that refuses any host conversion and any NumPy
array operand (as CuPy does), so the GPU path is checked without a GPU.

Used by tests/test_duck_arrays.py and by ``benchmarks/duck_sweep.py strict``.
"""

from __future__ import annotations

import numpy as onp


class Strict(onp.lib.mixins.NDArrayOperatorsMixin):
    """Wraps an ndarray; NumPy functions and ufuncs run on it and return Strict.

    Like CuPy, it takes NumPy scalars and Python numbers as operands but raises on a NumPy
    array of any dimension, and on ``float()``, ``bool()`` and ``numpy.asarray()``; the
    explicit copy to the device, ``numpy.asarray(host, like=strict)`` (``cupy.asarray``), is
    allowed."""

    def __init__(self, data):
        self.data = onp.asarray(data)

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)
    T = property(lambda self: Strict(self.data.T))
    real = property(lambda self: Strict(self.data.real))
    imag = property(lambda self: Strict(self.data.imag))

    def __repr__(self) -> str:
        return f"Strict({self.data!r})"

    def __array__(self, *args, **kwargs):
        raise TypeError("Strict: implicit conversion to a NumPy array is not allowed")

    def __float__(self):
        raise TypeError("Strict: float() would copy to the host")

    def __bool__(self):
        raise TypeError("Strict: bool() would copy to the host")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        _refuse_host_arrays(index, "indexing")
        return Strict(self.data[_unwrap(index)])

    def __setitem__(self, index, value):
        _refuse_host_arrays((index, value), "item assignment")
        self.data[_unwrap(index)] = _unwrap(value)

    def astype(self, dtype, **kwargs):
        return Strict(self.data.astype(dtype, **kwargs))

    def reshape(self, *shape, **kwargs):
        return Strict(self.data.reshape(*shape, **kwargs))

    def sum(self, *args, **kwargs):
        return Strict(self.data.sum(*args, **kwargs))

    def any(self, *args, **kwargs):
        return Strict(self.data.any(*args, **kwargs))

    def all(self, *args, **kwargs):
        return Strict(self.data.all(*args, **kwargs))

    def conj(self):
        return Strict(self.data.conj())

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(_foreign(v) for v in inputs):
            return NotImplemented  # NEP 13: let the other operand (a chainrule box) act
        _refuse_host_arrays((inputs, kwargs), ufunc.__name__)
        out = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
        return _wrap(out)

    def __array_function__(self, func, types, args, kwargs):
        if any(not issubclass(t, (Strict, onp.ndarray)) for t in types):
            return NotImplemented
        kwargs = {k: v for k, v in kwargs.items() if k != "like"}
        subok = args[3] if func in _LIKE_CONSTRUCTORS and len(args) > 3 else kwargs.get("subok")
        if subok is not None:  # (as CuPy, which supports no subok, not even True)
            raise TypeError(f"Strict: subok is not supported ({func.__name__})")
        if func not in _TRANSFERS:  # cupy.asarray(numpy_array) is the explicit copy to the device
            _refuse_host_arrays((args, kwargs), func.__name__)
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))


_TRANSFERS = {onp.asarray, onp.array, onp.asanyarray, onp.ascontiguousarray}
_LIKE_CONSTRUCTORS = {onp.zeros_like, onp.ones_like, onp.empty_like}  # (full_like: 4th is dtype)


def _refuse_host_arrays(v, where: str) -> None:
    if isinstance(v, onp.ndarray):
        raise TypeError(f"Strict: NumPy array operand in {where} (shape {v.shape})")
    if isinstance(v, (list, tuple)):
        for e in v:
            _refuse_host_arrays(e, where)
    elif isinstance(v, dict):
        for e in v.values():
            _refuse_host_arrays(e, where)


def _foreign(v):
    return hasattr(v, "__array_ufunc__") and not isinstance(v, (Strict, onp.ndarray, onp.generic))


def _unwrap(v):
    if isinstance(v, Strict):
        return v.data
    if isinstance(v, (list, tuple)):
        return type(v)(_unwrap(e) for e in v)
    if isinstance(v, dict):
        return {k: _unwrap(e) for k, e in v.items()}
    return v


def _wrap(v):
    if isinstance(v, (onp.ndarray, onp.generic)):
        return Strict(v)
    if isinstance(v, tuple):
        return tuple(_wrap(e) for e in v)
    if isinstance(v, list):
        return [_wrap(e) for e in v]
    return v


def to_strict(v):
    """NumPy arrays anywhere in ``v`` (lists, tuples) as Strict arrays."""
    if isinstance(v, onp.ndarray):
        return Strict(v)
    if isinstance(v, (list, tuple)):
        return type(v)(to_strict(e) for e in v)
    return v
