"""Vector spaces of NumPy arrays and Python/NumPy scalars."""

from __future__ import annotations

import numpy as _np

from .._core import reverse
from .._core.tracer import getval
from .._core.vspace import VSpace

# Names for the dtype kinds that have no gradient, so the error says what the value is.
_DTYPE_KIND_NAMES = {
    "b": "boolean",
    "i": "integer",
    "u": "unsigned integer",
    "O": "object",
    "U": "string",
    "S": "bytes",
    "M": "datetime",
    "m": "timedelta",
    "V": "structured (void)",
}


class ArrayVSpace(VSpace):
    """Real arrays (and real scalars, as 0-d arrays) of one shape and float dtype."""

    __slots__ = ("shape", "dtype", "scalar_type")
    iscomplex = False

    def __init__(self, value):
        self.shape = _np.shape(value)
        self.dtype = _np.result_type(value)
        # A Python or NumPy scalar gets its gradient back as a NumPy scalar.
        self.scalar_type = None if type(value) is _np.ndarray else self.dtype.type
        if self.dtype.kind not in "fc":
            kind = _DTYPE_KIND_NAMES.get(self.dtype.kind, "non-float")
            raise TypeError(
                f"Can't differentiate with respect to a value of {kind} dtype {self.dtype}: "
                f"{kind} values have no gradient, only floats do. Convert it to floats "
                f"first, e.g. x.astype(float) or 3.0 instead of 3."
            )

    @property
    def size(self) -> int:
        return int(_np.prod(self.shape))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _key(self):
        return (self.shape, self.dtype)

    def _out(self, arr):
        return arr[()] if self.scalar_type is not None else arr

    def zeros(self):
        return self._out(_np.zeros(self.shape, dtype=self.dtype))

    def ones(self):
        return self._out(_np.ones(self.shape, dtype=self.dtype))

    def standard_basis(self):
        for idx in _np.ndindex(*self.shape):
            vect = _np.zeros(self.shape, dtype=self.dtype)
            vect[idx] = 1
            yield self._out(vect)

    def stacked_basis(self):
        """The standard basis as one array, the basis index first: (size, *shape)."""
        return _np.eye(self.size, dtype=self.dtype).reshape((self.size,) + self.shape)

    def randn(self, rng=None):
        rng = _np.random if rng is None else rng
        return self._out(rng.standard_normal(self.shape).astype(self.dtype))

    def _inner_prod(self, x, y):
        return _np.dot(_np.ravel(x), _np.ravel(y))

    def flatten(self, x):
        return _np.ravel(x)

    def unflatten(self, flat):
        return self._out(_np.reshape(flat, self.shape).astype(self.dtype, copy=False))

    def cast(self, g):
        dtype = getattr(g, "dtype", None)
        if dtype is not None and dtype != self.dtype and dtype.kind in "fc":
            from . import numpy_wrapper as anp  # rules and casts are differentiable

            if dtype.kind == "c" and self.dtype.kind != "c":
                g = anp.real(g)
            if g.dtype != self.dtype:
                g = g.astype(self.dtype)
        if self.scalar_type is not None and type(getval(g)) is _np.ndarray:
            g = g[()]  # (a traced one too: under chainrule.jit a scalar, as untraced)
        return g

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype})"


class ComplexArrayVSpace(ArrayVSpace):
    """Complex arrays, as real vector spaces of twice the size."""

    __slots__ = ()
    iscomplex = True

    @property
    def size(self) -> int:
        return 2 * int(_np.prod(self.shape))

    def ones(self):
        # 1, not autograd's 1 + 1j (the sum of the basis): deriv, explain and Tensor seed
        # with ones(), and along 1 the derivative of a holomorphic f is f'(z) itself
        return self._out(_np.ones(self.shape, dtype=self.dtype))

    def standard_basis(self):
        for idx in _np.ndindex(*self.shape):
            for v in (1.0, 1.0j):
                vect = _np.zeros(self.shape, dtype=self.dtype)
                vect[idx] = v
                yield self._out(vect)

    def stacked_basis(self):
        n = self.size // 2
        eye = _np.eye(n, dtype=self.dtype)
        return _np.stack([eye, 1j * eye], axis=1).reshape((self.size,) + self.shape)

    def randn(self, rng=None):
        rng = _np.random if rng is None else rng
        re = rng.standard_normal(self.shape)
        im = rng.standard_normal(self.shape)
        return self._out((re + 1j * im).astype(self.dtype))

    def _inner_prod(self, x, y):
        return _np.real(_np.dot(_np.conj(_np.ravel(x)), _np.ravel(y)))

    def _covector(self, x):
        return _np.conj(x)

    def flatten(self, x):
        flat = _np.ravel(x)
        return _np.concatenate([_np.real(flat), _np.imag(flat)])

    def unflatten(self, flat):
        n = len(flat) // 2
        return self._out(_np.reshape(flat[:n] + 1j * flat[n:], self.shape).astype(self.dtype))


def array_vspace(value):
    if _np.iscomplexobj(value):
        return ComplexArrayVSpace(value)
    return ArrayVSpace(value)


for _t in (_np.ndarray, float, complex, _np.float64, _np.float32, _np.float16,
           _np.complex64, _np.complex128, _np.longdouble, _np.clongdouble,
           int, bool, _np.int64, _np.int32, _np.bool_):
    VSpace.register(_t, array_vspace)


def _add_into(acc, g):  # (the backward pass calls it with two ndarrays)
    if acc.shape == g.shape and acc.dtype == g.dtype:
        return _np.add(acc, g, acc)  # (out by position: ~30 ns less a call than out=)
    return acc + g


reverse.inplace_adders[_np.ndarray] = _add_into
reverse.droppable_types.add(_np.ndarray)  # nodes may keep an array as its shape and dtype


def _unaliased(a):
    # A read-only array cannot change under the node (NumPy refuses the write); any other
    # is copied (measured: ~1 us for 8 kB, ~0.1 ms for 1 MB, against the rule's own work),
    # in its own layout: a rule may take another path for a Fortran-ordered array (LAPACK's
    # triangular solve skips a zero's update in one order, not the other: the sign of a
    # zero), and under chainrule.jit the program hands the rule the array as it is.
    return a.copy(order="K") if a.flags.writeable else a


reverse.snapshot_types[_np.ndarray] = _unaliased
reverse.scalar_types.update([_np.float64, _np.float32, _np.float16, _np.complex128,
                             _np.complex64])
