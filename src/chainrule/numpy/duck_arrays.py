"""Arrays beyond NumPy: Dask, CuPy and any array type that speaks NumPy's protocols.

chainrule imports neither Dask nor CuPy. A value whose type implements
``__array_function__`` and ``__array_ufunc__`` and has a shape and a dtype is
registered the first time the engine meets it: it is traced by ArrayBox and lives in
a DuckArrayVSpace, whose zeros, ones and basis vectors are made with ``*_like``
constructors so they stay of the value's own type (lazy for Dask, on the device for
CuPy). The rules need nothing more: they call NumPy functions, which dispatch to the
array library.
"""

from __future__ import annotations

import numpy as _np

from .._core.tracer import box_fallbacks, isbox
from .._core.vspace import vspace_fallbacks
from .numpy_boxes import ArrayBox
from .numpy_vspaces import ArrayVSpace


def is_duck_array(value) -> bool:
    cls = type(value)
    return (cls is not _np.ndarray and not isbox(value)
            and hasattr(cls, "__array_function__") and hasattr(cls, "__array_ufunc__")
            and hasattr(value, "shape") and hasattr(value, "dtype"))


def has_unknown_shape(shape) -> bool:
    """Dask marks sizes it cannot know before computing (after boolean masks) as nan."""
    return any(n != n for n in shape)


def check_known_shape(value) -> None:
    """Refuse a duck array whose shape is not known yet: no derivative can be laid out."""
    shape = getattr(value, "shape", ())
    if has_unknown_shape(shape):
        raise ValueError(
            f"chainrule cannot differentiate a {type(value).__module__.split('.')[0]} array of "
            f"unknown shape {shape} "
            f"(its chunk sizes are not known until it is computed, e.g. after a boolean "
            f"mask). Call x.compute_chunk_sizes() on it first (Dask), or index with integer "
            f"positions instead of a mask."
        )


class DuckArrayVSpace(ArrayVSpace):
    """The space of a duck array: new values are made like a stored prototype."""

    __slots__ = ("like",)

    def __init__(self, value):
        check_known_shape(value)
        super().__init__(value)
        self.like = value
        self.scalar_type = None  # answers stay arrays of the library's own type

    def _key(self):
        return (type(self.like), self.shape, self.dtype)

    def zeros(self):
        return _np.zeros_like(self.like)

    def ones(self):
        return _np.ones_like(self.like)

    def _as_like(self, array):
        return _np.asarray(array, like=self.like)

    def standard_basis(self):
        for vector in super().standard_basis():
            yield self._as_like(vector)

    def stacked_basis(self):
        return self._as_like(super().stacked_basis())

    def randn(self, rng=None):
        return self._as_like(super().randn(rng))

    def _inner_prod(self, x, y):
        return _np.sum(x * y)

    def unflatten(self, flat):
        return _np.reshape(flat, self.shape).astype(self.dtype)

    def cast(self, g):
        dtype = getattr(g, "dtype", None)
        if dtype is not None and dtype != self.dtype:
            g = _np.real(g) if dtype.kind == "c" and self.dtype.kind != "c" else g
            g = g.astype(self.dtype)
        return g


box_fallbacks.append((is_duck_array, ArrayBox))
vspace_fallbacks.append((is_duck_array, DuckArrayVSpace))
