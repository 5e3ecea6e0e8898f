"""ArrayBox: a traced NumPy value that behaves like an array.

Operators and methods call the wrapped primitives, so ``x * y``, ``x.sum()`` and
``x[1:]`` are recorded. Plain NumPy functions called on a box come back here
through NumPy's dispatch protocols and are sent to chainrule's rule for that
function, or fail with an error that names the function.
"""

from __future__ import annotations

import numpy as _np

from .._core.tracer import Box, getval, isbox
from . import numpy_wrapper as anp


class ArrayBox(Box):
    __slots__ = ()
    __array_priority__ = 100.0
    __hash__ = Box.__hash__

    # ------------------------------------------------------------------ array attributes
    @property
    def shape(self):
        return _np.shape(self._value)

    @property
    def ndim(self):
        return _np.ndim(self._value)

    @property
    def size(self):
        return _np.size(self._value)

    @property
    def dtype(self):
        return _np.result_type(self._value)

    @property
    def T(self):
        return anp.transpose(self)

    @property
    def real(self):
        return anp.real(self)

    @property
    def imag(self):
        return anp.imag(self)

    def __len__(self):
        return len(self._value)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        return array_getitem(self, index)

    def __setitem__(self, index, value):
        raise TypeError(
            "In-place assignment into a traced array is not supported yet: build a new array "
            "instead (e.g. with chainrule.numpy.where or concatenate)."
        )

    # ------------------------------------------------------------------ conversions
    def _refuse(self, what: str):
        raise TypeError(
            f"{what} of a traced value would drop its derivative. Keep the value as an "
            f"array inside the function being differentiated (use chainrule.numpy "
            f"functions), or strip tracing explicitly with chainrule.stop_gradient(x)."
        )

    def __float__(self):
        self._refuse("float()")

    def __int__(self):
        self._refuse("int()")

    def __complex__(self):
        self._refuse("complex()")

    def __index__(self):
        self._refuse("Using as an index")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "A traced value cannot be converted to a plain NumPy array (this happens with "
            "np.asarray(x) on a traced x, or when writing a traced value into a NumPy array, "
            "as in a[i] = x). Build the array from traced values instead: "
            "chainrule.numpy.array([...]), stack, concatenate or where."
        )

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        wrapped = anp.raw_to_wrapped.get(ufunc)
        if method != "__call__" or wrapped is None or kwargs.get("out") is not None:
            raise TypeError(
                f"chainrule has no derivative rule for numpy.{ufunc.__name__}"
                f"{'' if method == '__call__' else '.' + method} on traced values. Use a "
                f"chainrule.numpy function, or define a primitive with chainrule.extend."
            )
        return wrapped(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        wrapped = anp.raw_to_wrapped.get(func)
        name = getattr(func, "__name__", repr(func))
        if wrapped is None:
            raise TypeError(
                f"chainrule has no derivative rule for numpy.{name}: it cannot be applied to "
                f"traced values. Use a differentiable alternative from chainrule.numpy, or "
                f"define a primitive with chainrule.extend.primitive and defvjp/defjvp."
            )
        if any(isbox(v) for v in kwargs.values()):
            raise TypeError(
                f"chainrule traces only positional array arguments of numpy.{name}: pass "
                f"{', '.join(k for k, v in kwargs.items() if isbox(v))} positionally."
            )
        return wrapped(*args, **kwargs)

    # ------------------------------------------------------------------ operators
    def __neg__(self): return anp.negative(self)  # noqa: E704
    def __pos__(self): return self  # noqa: E704
    def __abs__(self): return anp.absolute(self)  # noqa: E704
    def __add__(self, other): return anp.add(self, other)  # noqa: E704
    def __radd__(self, other): return anp.add(other, self)  # noqa: E704
    def __sub__(self, other): return anp.subtract(self, other)  # noqa: E704
    def __rsub__(self, other): return anp.subtract(other, self)  # noqa: E704
    def __mul__(self, other): return anp.multiply(self, other)  # noqa: E704
    def __rmul__(self, other): return anp.multiply(other, self)  # noqa: E704
    def __truediv__(self, other): return anp.true_divide(self, other)  # noqa: E704
    def __rtruediv__(self, other): return anp.true_divide(other, self)  # noqa: E704
    def __pow__(self, other): return anp.power(self, other)  # noqa: E704
    def __rpow__(self, other): return anp.power(other, self)  # noqa: E704
    def __matmul__(self, other): return anp.matmul(self, other)  # noqa: E704
    def __rmatmul__(self, other): return anp.matmul(other, self)  # noqa: E704
    def __mod__(self, other): return anp.mod(self, other)  # noqa: E704
    def __rmod__(self, other): return anp.mod(other, self)  # noqa: E704
    def __floordiv__(self, other): return anp.floor_divide(self, other)  # noqa: E704
    def __rfloordiv__(self, other): return anp.floor_divide(other, self)  # noqa: E704

    # Comparisons give plain booleans: they have no derivative.
    def __eq__(self, other): return anp.equal(self, other)  # noqa: E704
    def __ne__(self, other): return anp.not_equal(self, other)  # noqa: E704
    def __gt__(self, other): return anp.greater(self, other)  # noqa: E704
    def __ge__(self, other): return anp.greater_equal(self, other)  # noqa: E704
    def __lt__(self, other): return anp.less(self, other)  # noqa: E704
    def __le__(self, other): return anp.less_equal(self, other)  # noqa: E704

    def __repr__(self):
        return f"ArrayBox({self._value!r}, trace={self._trace_id})"

    # ------------------------------------------------------------------ methods
    def astype(self, dtype, *args, **kwargs):
        return array_astype(self, dtype, *args, **kwargs)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return anp.reshape(self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return anp.transpose(self, axes or None)

    def item(self, *args):
        self._refuse("item()")

    def conj(self):
        return anp.conjugate(self)

    conjugate = conj

    def dot(self, other):
        return anp.dot(self, other)

    def flatten(self, order="C"):
        return anp.ravel(self, order=order)

    def tolist(self):
        return [self[i] for i in range(len(self))] if self.ndim else self


def _method(name):
    def method(self, *args, **kwargs):
        return getattr(anp, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in (
    "sum prod mean var std max min ptp cumsum cumprod ravel squeeze swapaxes clip "
    "diagonal trace repeat round sort argmax argmin argsort nonzero any all take compress"
).split():
    setattr(ArrayBox, _name, _method(_name))


# ----------------------------------------------------------------------------- box primitives
from .._core.tracer import primitive  # noqa: E402


@primitive
def array_getitem(x, index):
    return x[index]


@primitive
def array_astype(x, dtype, *args, **kwargs):
    return _np.asarray(x).astype(dtype, *args, **kwargs)


for _t in (_np.ndarray, float, complex, _np.float64, _np.float32, _np.float16,
           _np.complex64, _np.complex128, _np.longdouble, _np.clongdouble):
    ArrayBox.register(_t)

__all__ = ["ArrayBox", "getval"]


def _register_sequence_box_tree() -> None:
    # A traced list (split, meshgrid, gradient outputs; their tangents in nested forward
    # mode) must flatten to its traced elements like the list it stands for; otherwise
    # make_vjp/make_jvp see one opaque leaf. Belongs with SequenceBox in builtins.py.
    from .._core.pytree import register_pytree_node
    from ..builtins import SequenceBox

    register_pytree_node(SequenceBox, lambda box: (list(box), type(box._value)),
                         lambda kind, children: kind(children))


_register_sequence_box_tree()
