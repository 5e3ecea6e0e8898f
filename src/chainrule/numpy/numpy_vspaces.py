"""Vector spaces of NumPy arrays and Python/NumPy scalars."""

from __future__ import annotations

import math

import numpy as _np

from .._core import reverse
from .._core.tracer import getval
from .._core.vspace import VSpace, partial_types
from .._user_code import reach

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
        # (np.shape and np.result_type cost ~1 µs: an array's and a NumPy scalar's own
        # attributes say the same, but for a byte order result_type makes native)
        cls = type(value)
        if cls is _np.ndarray and value.dtype.isnative:
            self.shape, self.dtype, self.scalar_type = value.shape, value.dtype, None
        elif cls in _NUMPY_SCALARS:
            self.shape, self.dtype, self.scalar_type = (), value.dtype, cls
        else:
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
        return math.prod(self.shape)  # (np.prod: ~2 µs)

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
        if self.scalar_type is not None and not self.shape:  # (grad's seed: ~0.5 µs less)
            return self.scalar_type(1)
        # (an ndarray subclass has a scalar_type too: its ones are an array of its shape)
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
        if dtype is not None and dtype is not self.dtype and dtype != self.dtype and \
                dtype.kind in "fc":
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
        return 2 * math.prod(self.shape)

    def ones(self):
        # 1, not autograd's 1 + 1j (the sum of the basis): deriv, explain and Tensor seed
        # with ones(), and along 1 the derivative of a holomorphic f is f'(z) itself
        return super().ones()

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
    cls = type(value)
    space = _scalar_spaces.get(cls)
    if space is not None:
        return space
    space = ComplexArrayVSpace(value) if (
        value.dtype.kind == "c" if cls is _np.ndarray or cls in _NUMPY_SCALARS else
        _np.iscomplexobj(value)) else ArrayVSpace(value)
    if cls in _NUMPY_SCALARS or cls is float or cls is complex:
        _scalar_spaces[cls] = space  # (a scalar's space is its type's, made once: immutable)
    return space


_scalar_spaces: dict = {}  # scalar type -> its space (grad's output, a float argument)


_NUMPY_SCALARS = {_np.float64, _np.float32, _np.float16, _np.complex64, _np.complex128,
                  _np.longdouble, _np.clongdouble, _np.int64, _np.int32, _np.bool_}
for _t in (_np.ndarray, float, complex, int, bool, *_NUMPY_SCALARS):
    VSpace.register(_t, array_vspace)


def _add_into(acc, g):  # (the backward pass calls it with two ndarrays)
    if acc.shape == g.shape and acc.dtype == g.dtype:
        return _np.add(acc, g, acc)  # (out by position: ~30 ns less a call than out=)
    return acc + g


reverse.inplace_adders[_np.ndarray] = _add_into


class TakenSlices:
    """The cotangent of a real array while pieces of it taken by basic indexing
    (``x[1:]``, ``x[:, 0]``) have given it cotangents: a partial cotangent
    (``vspace.partial_types``), so that the pieces are added in place into one buffer
    instead of each making an array of zeros that the backward pass then adds whole.

    Made by ``x[index]``'s VJP as one piece (``index``, ``piece``: an ndarray of the
    array's dtype); the buffer is made when a second cotangent arrives, or by ``dense``.
    What the sums of per-piece zeros gave, bit for bit: each element gets the same
    additions in the same order, less the zeros a piece added where it did not reach,
    which change only a sum of negative zeros (-0.0 + 0.0 is +0.0). ``missed`` keeps the
    indices of the pieces added into the buffer, whose zeros ``dense`` puts back where
    the buffer holds -0.0 (the first piece's zeros are the buffer's own).
    """

    __slots__ = ("shape", "dtype", "index", "piece", "buffer", "missed")

    def __init__(self, shape: tuple, dtype, index, piece):
        self.shape, self.dtype, self.index, self.piece = shape, dtype, index, piece
        self.buffer = None
        self.missed: list = []

    def _own_buffer(self):
        buffer = self.buffer
        if buffer is None:
            buffer = self.buffer = _np.zeros(self.shape, self.dtype)
            buffer[self.index] = self.piece
            self.piece = None
        return buffer

    def merge(self, g) -> bool:
        if type(g) is TakenSlices and g.buffer is None:
            buffer = self._own_buffer()
            part = buffer[g.index]  # (a view: the add writes into the buffer)
            _np.add(part, g.piece, part)
            self.missed.append(g.index)
            return True
        if type(g) is _np.ndarray and g.dtype is self.dtype and g.shape == self.shape:
            buffer = self._own_buffer()
            _np.add(buffer, g, buffer)
            return True
        return False

    def added_to(self, acc, owned: bool):
        if type(acc) is not _np.ndarray or acc.dtype is not self.dtype or \
                acc.shape != self.shape or self.buffer is not None:
            return None
        piece, self.piece = self.piece, None
        self.buffer = acc if owned else acc.copy()
        self.missed.append(self.index)  # (acc first, as acc + the piece's zeros added)
        part = self.buffer[self.index]
        _np.add(part, piece, part)
        return self

    def dense(self):
        buffer = self._own_buffer()
        if self.missed:
            zero = buffer == 0
            if zero.any():
                negative = zero & _np.signbit(buffer)
                if negative.any():  # -0.0 where a piece added zeros: those sums are +0.0
                    # (hits per element: the pieces' sizes, not an array per piece)
                    hits = _np.zeros(self.shape, dtype=_np.intp)
                    for index in self.missed:
                        hits[index] += 1
                    buffer[negative & (hits < len(self.missed))] = 0.0
        return buffer


partial_types.add(TakenSlices)
reverse.droppable_types.add(_np.ndarray)  # nodes may keep an array as its shape and dtype


def _unaliased(a):
    # A read-only array cannot change under the node (NumPy refuses the write); any other
    # is copied (measured: ~1 us for 8 kB, ~0.1 ms for 1 MB, against the rule's own work),
    # in its own layout: a rule may take another path for a Fortran-ordered array (LAPACK's
    # triangular solve skips a zero's update in one order, not the other: the sign of a
    # zero), and under chainrule.jit the program hands the rule the array as it is. (A
    # memmap's copy is a plain array: it has no file.)
    if not a.flags.writeable:
        return a
    if a.nbytes >= SNAPSHOT_COPY_MAX:
        reach.large_copies[0] += 1  # (grad's function gets a window: reach.note_large)
    return a.copy(order="K") if type(a) is _np.ndarray else _np.array(a, order="K")


# From this size on, a closed recording's node (grad's) keeps a writeable constant array
# itself, read-only until the recording's call ends (reach.Window), instead of a copy.
# Holding costs a search of what the function reaches, and making it read-only, ~18 us for
# a one-line function (more for a larger program), where a copy costs its bytes: measured
# on grad of sum(x * c) (benchmarks/snapshot_threshold.py), holding cost 1.61x copying at
# 8 KiB, 1.00x at 1 MiB, 0.86x at 4 MiB, 0.77x at 8 MiB; 4 MiB leaves a margin for larger
# programs' searches.
SNAPSHOT_COPY_MAX = 4 << 20


def _held_or_unaliased(a):
    window = reach.current_window()
    return a if window is not None and window.holds(a) else _unaliased(a)


for _type in (_np.ndarray, _np.memmap):
    reverse.snapshot_types[_type] = _unaliased
    reverse.window_snapshot_types[_type] = _held_or_unaliased
reverse.scalar_types.update([_np.float64, _np.float32, _np.float16, _np.complex128,
                             _np.complex64])
