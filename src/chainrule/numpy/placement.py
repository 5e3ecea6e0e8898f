"""Where a constant lives: NumPy constants made fit to mix with a traced value's array.

A rule or a box primitive that builds a constant (an index array, an identity, a pad)
passes it through ``constant_like``/``index_like``, so that it works on CuPy arrays too,
which refuse NumPy operands. This module sits below the boxes and the rule tables, which
both use it, and imports nothing of chainrule above the core.
"""

from __future__ import annotations

import numpy as _np

from .._core.tracer import Box, getval

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # (NumPy 1)
    from numpy import byte_bounds

SCALAR_TYPES = frozenset([float, complex, _np.float64, _np.float32, _np.complex128, _np.complex64])
_HOST_TYPES = frozenset([_np.ndarray, float, int, complex, bool]) | SCALAR_TYPES


# type -> the value an object of it stands for, for the types above this module that hold
# one (chainrule.numpy's buffers register theirs)
VALUE_OF: dict = {}


def _raw(x):
    """``x``'s raw value: looked through boxes, a vmap batch (a box getval keeps: its
    examples live in its value's array library) and a buffer (``VALUE_OF``)."""
    xv = getval(x)
    if type(xv) is _np.ndarray:  # (the common case, on rules' paths: one test)
        return xv
    while True:
        if isinstance(xv, Box):
            xv = xv._value
            continue
        value_of = VALUE_OF.get(type(xv))
        if value_of is None:
            return xv
        xv = value_of(xv)


def on_host(x) -> bool:
    """Whether ``x``'s raw value is a NumPy array or scalar (not a Dask or CuPy array, and
    not a vmap batch: ``numpy_values`` looks through one)."""
    xv = getval(x)
    return type(xv) in _HOST_TYPES or isinstance(xv, (_np.ndarray, _np.generic))


def numpy_values(x) -> bool:
    """Whether a rule may look at ``x``'s values (``on_host``, looked through a vmap batch
    and a buffer): False for another array library's (a GPU array's would be copied to the
    host, a lazy one's computed)."""
    xv = _raw(x)
    if type(xv) in _HOST_TYPES or isinstance(xv, (_np.ndarray, _np.generic)):
        return True
    # another array library's values (CuPy's, Dask's: they dispatch NumPy's functions);
    # anything else (a number, chainrule's own objects) is looked at as it always was
    kind = type(xv)
    return not hasattr(kind, "__array_function__") or kind.__module__.startswith("chainrule")


def constant_like(value, x):
    """A NumPy constant (an index array, an identity, a pad) fit to mix with ``x``.

    CuPy refuses NumPy arrays as operands and indices: for a traced value of such a
    library the constant becomes one of its arrays (``like=`` dispatches through
    ``__array_function__``). For NumPy, and for libraries that take NumPy operands
    (Dask: its graphs stay as they are), the constant is returned as it is."""
    xv = _raw(x)
    if type(xv) in _HOST_TYPES or _takes_host_arrays(xv) or getval(value) is not value:
        return value  # (a traced value is no constant)
    return _np.asarray(value, like=xv)


def index_like(index, x):
    """``index`` with its NumPy arrays made fit to index ``x`` (see ``constant_like``)."""
    if type(index) is tuple:
        if not any(isinstance(i, _np.ndarray) for i in index):
            return index
        return tuple(constant_like(i, x) if isinstance(i, _np.ndarray) else i for i in index)
    return constant_like(index, x) if isinstance(index, _np.ndarray) else index


_HOST_ARRAYS_TAKEN: dict = {_np.ndarray: True}


def _takes_host_arrays(xv) -> bool:
    """Whether ``xv``'s library takes NumPy arrays as operands: tried once per type,
    on an empty slice (a lazy library computes nothing)."""
    taken = _HOST_ARRAYS_TAKEN.get(type(xv))
    if taken is None:
        if isinstance(xv, _np.generic) or not hasattr(xv, "reshape"):
            taken = True
        else:
            try:
                _np.multiply(xv.reshape(-1)[:0], _np.zeros(0, dtype=xv.dtype))
                taken = True
            except TypeError:
                taken = False
        _HOST_ARRAYS_TAKEN[type(xv)] = taken
    return taken


def laid_out_like(a: _np.ndarray) -> _np.ndarray:
    """An array of ``a``'s shape and dtype in memory of its own laid out as ``a``'s, strides
    included (a reduction over it adds in the same order, a function reading the layout,
    reshape's order "A", reads it alike), its entries not yet written."""
    if a.flags.c_contiguous or a.flags.f_contiguous or a.size == 0:
        return _np.empty_like(a, order="K")
    low, high = byte_bounds(a)
    start = a.__array_interface__["data"][0] - low
    if start % a.itemsize:
        return _np.empty_like(a, order="K")
    flat = _np.empty((high - low) // a.itemsize + 1, a.dtype)
    return _np.lib.stride_tricks.as_strided(flat[start // a.itemsize:], a.shape, a.strides)
