"""ArrayBox: a traced NumPy value that behaves like an array.

Operators and methods call the wrapped primitives, so ``x * y``, ``x.sum()`` and
``x[1:]`` are recorded. Plain NumPy functions called on a box come back here
through NumPy's dispatch protocols and are sent to chainrule's rule for that
function, or fail with an error that names the function.
"""

from __future__ import annotations

import dis
import math
import operator as _operator
import sys
import weakref as _weakref
from functools import cache, lru_cache

import numpy as _np

from .._core.tracer import (
    Box,
    as_index,
    check_not_leaked,
    decided,
    front_ends,
    getval,
    into_plain_array,
    isbox,
    notrace_primitive,
    primitive,
    register_view_maker,
    staged,
    traced_out_refused,
)
from .._sparsity.products import called_by_sparse_dispatch, product_with
from . import numpy_wrapper as anp
from ._scipy_hint import scipy_hint, scipy_ufunc_rules
from .placement import index_like


def staged_as_plain(box, dtype, copy, frame):
    """NumPy's array of a value without derivative that chainrule.jit stages (eagerly a
    NumPy array or a buffer: ``np.asarray(x)`` in ``jit(f)``), which the program cannot
    follow past here (the function then runs eagerly for its signature); None where the
    box is not such a value, or where chainrule's own code (``frame``) asks."""
    if box._node.on_plain_value is None or _asked_by_chainrule(frame):
        return None
    plain = box._node.on_plain_value(box, into_plain_array)
    return _np.asarray(plain, dtype) if copy is None else _np.array(plain, dtype)


def _asked_by_chainrule(frame) -> bool:
    """Whether NumPy converts a traced value for chainrule's own code (through NumPy's
    Python functions, if any): a raw call given a list of traced values, whose TypeError
    sends the call to the list's front end (``Box.on_refused_sequences``)."""
    while frame is not None and _module_of(frame).partition(".")[0] == "numpy":
        frame = frame.f_back
    return frame is not None and _module_of(frame).partition(".")[0] == "chainrule"


def _module_of(frame) -> str:
    return str(frame.f_globals.get("__name__", ""))


_NO_KEYWORDS: dict = {}  # (x[i]'s view, taken again after a write: shared, never written)
_BOX_TYPES = Box.types  # (the registry's own set)


class ArrayBox(Box):
    """A traced array. In-place writes (``x[i] = v``, ``x += y``) rebind the box to a
    functional update of its old value, so earlier uses keep the old value, as their
    nodes hold it, and the views taken of it before that are still alive are taken again
    from the new value (so they see the write, as NumPy's views do). A write through a
    view of another traced array raises, since the base cannot be changed behind it.
    Views are recognised when made by indexing, ``.T``, ``.real`` and the methods
    reshape, ravel, transpose, swapaxes, squeeze and diagonal; a view made by a function
    (``np.reshape(x, s)``) is written as a copy.
    """

    # the box this one is a NumPy view of, if any; the views of this one that may still be
    # read (weak references, each with how to take it again from this box)
    __slots__ = ("_view_of", "_views")
    __array_priority__ = 100.0
    __hash__ = Box.__hash__

    # ------------------------------------------------------------------ array attributes
    @property
    def shape(self):
        shape = getattr(self._value, "shape", None)  # (a 0-d one's () too: np.shape ~0.5 µs)
        return _np.shape(self._value) if shape is None else shape

    @shape.setter
    def shape(self, shape) -> None:
        """``x.shape = s``: NumPy's reshape in place, which never copies (NumPy's errors
        where the layout cannot take the shape); the box becomes ``x.reshape(s)``."""
        value = getval(self)
        if not isinstance(value, _np.ndarray):
            raise AttributeError(f"attribute 'shape' of {type(value).__name__!r} objects is "
                                 f"not writable")
        value.view().shape = shape  # (NumPy's checks and errors, on a view it then drops)
        if getattr(self, "_view_of", None) is not None or getattr(self, "_views", None):
            raise TypeError(
                "x.shape = s on a traced array that is a view of another, or has views "
                "taken of it: chainrule would have to change them too. Write x = "
                "x.reshape(s) instead.")
        self._rebind(anp.reshape(self, shape))

    @property
    def ndim(self):
        value = self._value
        return value.ndim if type(value) is _np.ndarray else _np.ndim(value)

    @property
    def size(self):
        value = self._value
        return value.size if type(value) is _np.ndarray else _np.size(value)

    @property
    def dtype(self):
        dtype = getattr(self._value, "dtype", None)
        return _np.result_type(self._value) if dtype is None else dtype

    # (the view functions answer views of a traced array themselves: view_of_traced)
    @property
    def T(self):
        return anp.transpose(self)

    @property
    def mT(self):
        return anp.swapaxes(self, -1, -2)

    @property
    def real(self):
        return anp.real(self)

    @property
    def imag(self):
        return anp.imag(self)

    # x.real = v, x.imag = v: writes into x's parts, as NumPy's (x[...] = v's rules)
    @real.setter
    def real(self, value):
        complex_ = _np.issubdtype(self.dtype, _np.complexfloating)
        self[...] = value + 1j * anp.imag(self) if complex_ else value

    @imag.setter
    def imag(self, value):
        if not _np.issubdtype(self.dtype, _np.complexfloating):
            raise TypeError("array does not have imaginary part to set")  # (NumPy's)
        self[...] = anp.real(self) + 1j * value

    def __len__(self):
        return len(self._value)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        # (an int, slice or index array is plain: only a box, or a tuple that may hold
        # one, asks _plain_index)
        if type(index) is tuple or type(index) in _BOX_TYPES:
            index = _plain_index(index)
        return _marked_view(array_getitem(self, index), self, array_getitem, (index,),
                            _NO_KEYWORDS)

    def __setitem__(self, index, value):
        if getattr(self, "_view_of", None) is not None:
            if self._written_through(index, value):
                return
            self._check_not_view(f"x[{_index_repr(index)}] = ...")
        if _derivative_free_under_staging(self, value):
            # (eagerly a plain array: NumPy's own error, raised by writing into a copy)
            getval(self).copy()[_plain_index(index)] = value
        self._rebind(anp.index_update(self, _plain_index(index), value))

    # ------------------------------------------------------------------ in-place writes
    def _check_not_view(self, what: str) -> None:
        if getattr(self, "_view_of", None) is not None:
            raise TypeError(
                f"{what} writes through a view of another traced array (made by slicing, "
                f"reshape or .T), which would have to change that base array too; chainrule "
                f"cannot change the base behind a view. Assign to the base instead, e.g. "
                f"x[0, 1:] = v rather than row = x[0]; row[1:] = v, or use "
                f"chainrule.numpy.index_update(x, index, v) / np.at(x)[index].set(v)."
            )

    def _staged_view(self) -> tuple | None:
        """How this view was taken from its base (the ``_views`` entry), where both are
        values a staging trace (chainrule.jit) boxes: eagerly NumPy's arrays or buffers,
        whose views take writes into their base. None otherwise."""
        base = self._view_of
        if self._node.on_plain_value is None or not isinstance(base, ArrayBox) or \
                base._node.on_plain_value is None:
            return None
        for entry in getattr(base, "_views", None) or ():
            if entry[0]() is self:
                return entry
        return None

    def _written_through(self, index, value) -> bool:
        """``self[index] = value`` into a staged view (``_staged_view``): written into the
        base at the view's positions (the base and its views then taken again), as eager
        evaluation writes through NumPy's view or a buffer's. False where not such a view."""
        entry = self._staged_view()
        if entry is None:
            return False
        if _derivative_free_under_staging(self, value):
            # (eagerly a plain array: NumPy's own error, raised by writing into a copy)
            getval(self).copy()[_plain_index(index)] = value
        if not getattr(getval(self), "flags", _WRITEABLE).writeable:  # (np.diagonal's)
            raise ValueError("assignment destination is read-only")
        _, fun, args, kwargs = entry
        shape = _np.shape(getval(self._view_of))
        positions = fun(_np.arange(math.prod(shape)).reshape(shape), *args, **kwargs)
        self._view_of[_np.unravel_index(positions[_plain_index(index)], shape)] = value
        return True

    def _rebind(self, new) -> None:
        """Make this box the traced value ``new``: its later uses see the update, and so do
        the views taken of it before (as NumPy's views see a write into their base): each
        live one is taken again from the new value."""
        value = new._value
        if type(value) is _np.ndarray and type(self._value) is _np.ndarray:
            value = _laid_out_as(value, self._value)
        self._value, self._trace_id, self._node = value, new._trace_id, new._node
        views = getattr(self, "_views", None)
        if views:
            self._views = live = []
            for ref, fun, args, kwargs in views:
                view = ref()
                if view is not None:
                    view._rebind(fun(self, *args, **kwargs))
                    live.append((ref, fun, args, kwargs))

    def _inplace(self, op, other, symbol: str, caller):
        if not _mutable(getval(self)):
            return op(self, other)  # scalars are immutable: s += 1 makes a new one
        if getattr(self, "_view_of", None) is not None and _stores_subscript_next(caller):
            return op(self, other)  # x[i] += v: Python stores the result back into x
        if getattr(self, "_view_of", None) is not None and self._staged_view() is not None \
                and not _derivative_free_under_staging(self, other):
            if not getattr(getval(self), "flags", _WRITEABLE).writeable:  # (np.diagonal's)
                raise ValueError("output array is read-only")  # (NumPy's, for out=)
            self[...] = fitted_in_place(op(self, other), self.shape, self.dtype,
                                        f"x {symbol} y", stored_by=op.__name__)
            return self
        self._check_not_view(f"x {symbol} ...")
        if _derivative_free_under_staging(self, other):
            raise _plain_write_refused(f"numpy.{op.__name__}")
        new = fitted_in_place(op(self, other), self.shape, self.dtype, f"x {symbol} y",
                              stored_by=op.__name__)
        self._rebind(new)
        return self

    def __iadd__(self, other): return self._inplace(anp.add, other, "+=", sys._getframe(1))  # noqa: E704,E501
    def __isub__(self, other): return self._inplace(anp.subtract, other, "-=", sys._getframe(1))  # noqa: E704,E501
    def __imul__(self, other): return self._inplace(anp.multiply, other, "*=", sys._getframe(1))  # noqa: E704,E501
    def __itruediv__(self, other): return self._inplace(anp.true_divide, other, "/=", sys._getframe(1))  # noqa: E704,E501
    def __ipow__(self, other): return self._inplace(anp.power, other, "**=", sys._getframe(1))  # noqa: E704,E501
    def __imatmul__(self, other): return self._inplace(anp.matmul, other, "@=", sys._getframe(1))  # noqa: E704,E501

    # ------------------------------------------------------------------ conversions
    def _refuse(self, what: str, hint: str = ""):
        check_not_leaked(self)  # a box kept past its trace: that is the problem to name
        raise TypeError(
            f"{what} of a traced value would drop its derivative. Keep the value as an "
            f"array inside the function being differentiated (use chainrule.numpy "
            f"functions), or strip tracing explicitly with chainrule.stop_gradient(x).{hint}"
            f"{scipy_hint(sys._getframe(2))}"
        )

    # A staging trace (chainrule.jit) turns these conversions into guards, see
    # Node.on_decision; every other trace refuses them.
    def __float__(self):
        if self._node.on_decision is not None:
            return self._node.on_decision(self, float)
        self.refuse_conversion(float)

    def __int__(self):
        if self._node.on_decision is not None:
            return self._node.on_decision(self, int)
        self.refuse_conversion(int)

    def __complex__(self):
        if self._node.on_decision is not None:
            return self._node.on_decision(self, complex)
        self.refuse_conversion(complex)

    def __round__(self, ndigits=None):
        # as NumPy's scalars answer it (its arrays do not define round()): an int, a
        # decision like int(x); with ndigits, np.round's scalar, a value without derivative
        if not isinstance(getval(self), (_np.generic, float)):
            raise TypeError(f"type {type(getval(self)).__module__}."
                            f"{type(getval(self)).__name__} doesn't define __round__ method")
        if ndigits is not None:
            return anp.round(self, ndigits)
        if self._node.on_decision is not None:
            return self._node.on_decision(self, round)
        self.refuse_conversion(round)

    def refuse_conversion(self, convert) -> None:
        """The error for ``float(x)``, ``int(x)``, ``complex(x)`` of a value with a
        derivative (also raised by sparsity detection, whose dense Jacobian raises it)."""
        # NumPy calls float() for a[i] = x with a a NumPy array, and reports the failure as
        # "setting an array element with a sequence" caused by this error: say what to do
        hint = (" If this came from writing a traced value into a plain NumPy array (a[i] = "
                "x, which NumPy reports as 'setting an array element with a sequence'), "
                f"{_WRITE_INSTEAD}") if convert is float else ""
        self._refuse(f"{convert.__name__}()", hint)

    def __index__(self):
        if self._node.on_decision is not None:
            return self._node.on_decision(self, _operator.index)
        self._refuse("Using as an index")

    def __array__(self, dtype=None, copy=None):
        return self._as_plain_array(dtype, copy, sys._getframe(1))

    def _as_plain_array(self, dtype, copy, frame):
        """``__array__`` for the code of ``frame`` (NumPy's array of this value)."""
        check_not_leaked(self)
        if (dtype is not None and _carries_no_derivative(dtype)) or \
                _carries_no_derivative(self.dtype):
            # numpy.int64(x): indices, as autograd; an integer or boolean value (only
            # chainrule.jit traces those) as itself (under chainrule.jit, a guarded decision)
            return decided(self, _Plain("asarray", _np.asarray, dtype))
        if dtype is None and _carries_no_derivative(self.dtype):
            # a mask that a staging or detection trace follows, indexing a NumPy array
            # (a[x > 0]): its plain value, a decision (other traces never box one)
            return decided(self, _Plain("asarray", _np.asarray, self.dtype))
        if dtype is None and called_by_sparse_dispatch(frame):
            return _np.empty((), dtype=object)  # SciPy then lets __rmatmul__ answer A @ x
        plain = staged_as_plain(self, dtype, copy, frame)
        if plain is not None:
            return plain
        raise TypeError(
            "A traced value cannot be converted to a plain NumPy array (this happens with "
            "np.asarray(x) on a traced x, or when writing a traced value into a NumPy array, "
            f"as in a[i] = x with a a NumPy array). To keep the derivative, {_WRITE_INSTEAD}"
            f"{scipy_hint(frame)}"
        )

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        wrapped = anp.raw_to_wrapped.get(ufunc)
        if method == "__call__" and wrapped is not None and not kwargs:
            return wrapped(*inputs)  # the common case (ndarray @ box, ndarray + box)
        if wrapped is None and scipy_ufunc_rules(ufunc):
            wrapped = anp.raw_to_wrapped.get(ufunc)
        name = _ufunc_name(ufunc)
        if kwargs.get("out") is not None and not _takes_writes(kwargs["out"]):
            if _writes_followed(inputs, kwargs["out"]):
                # (a staging trace follows the write: the function then runs eagerly)
                return _on_plain_values(ufunc, method, inputs, kwargs)
            if _any_traced(kwargs["out"]):
                raise traced_out_refused(name, method)
            raise _plain_write_refused(name)
        if method != "__call__" and _followed(inputs):
            # np.add.reduce & co. of values only chainrule.jit's staging trace boxes:
            # eagerly NumPy's own call on plain arrays, which the staging trace follows
            return _on_plain_values(ufunc, method, inputs, kwargs)
        if method == "__call__" and wrapped is None and _followed(inputs):
            # a ufunc with no rule (np.modf, np.frexp, np.ldexp) on values only jit's
            # staging trace boxes (no derivative asked): a call without one, as eagerly
            return _without_rule(ufunc)(*inputs, **kwargs)
        if method != "__call__" or wrapped is None:
            raise TypeError(
                f"chainrule has no derivative rule for {name}"
                f"{'' if method == '__call__' else '.' + method} on traced values. Use a "
                f"chainrule.numpy function, or define a primitive with chainrule.extend."
                f"{scipy_hint(function=ufunc)}"
            )
        return wrapped(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        wrapped = anp.raw_to_wrapped.get(func)
        if wrapped is not None and not kwargs:
            return wrapped(*args)
        name = getattr(func, "__name__", repr(func))
        write = WRITES.get(func)
        if write is not None:  # numpy.copyto(a, x), numpy.put(a, i, x), ...
            if isbox(args[0]):
                return write(*args, **kwargs)
            # into a NumPy array: NumPy's array of each traced value, as a[...] = x takes it
            # (under chainrule.jit, a call made again eagerly; otherwise a clear error)
            frame = sys._getframe(1)
            plain = lambda v: v._as_plain_array(None, None, frame) if isbox(v) else v  # noqa: E731
            return func(args[0], *map(plain, args[1:]), **{k: plain(v) for k, v in kwargs.items()})
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
    # The primitives themselves, where the box is the first operand: one call fewer.
    __neg__ = anp.negative
    __pos__ = anp.positive  # (NumPy's +v: an array of its own, which a write into v leaves)
    __abs__ = anp.absolute
    __add__ = anp.add
    def __radd__(self, other): return anp.add(other, self)  # noqa: E704
    __sub__ = anp.subtract
    def __rsub__(self, other): return anp.subtract(other, self)  # noqa: E704
    __mul__ = anp.multiply
    def __rmul__(self, other): return anp.multiply(other, self)  # noqa: E704
    __truediv__ = anp.true_divide
    def __rtruediv__(self, other): return anp.true_divide(other, self)  # noqa: E704
    __pow__ = anp.power
    def __rpow__(self, other): return anp.power(other, self)  # noqa: E704
    def __matmul__(self, other):
        product = product_with(other)  # a scipy.sparse operand brings its own product
        return anp.matmul(self, other) if product is None else product(self, other)

    def __rmatmul__(self, other):
        product = product_with(other)
        return anp.matmul(other, self) if product is None else product(other, self)

    __mod__ = anp.mod
    def __rmod__(self, other): return anp.mod(other, self)  # noqa: E704
    __floordiv__ = anp.floor_divide
    def __rfloordiv__(self, other): return anp.floor_divide(other, self)  # noqa: E704
    __divmod__ = anp.divmod
    def __rdivmod__(self, other): return anp.divmod(other, self)  # noqa: E704

    # Comparisons give plain booleans: they have no derivative.
    __eq__ = anp.equal
    __ne__ = anp.not_equal
    __gt__ = anp.greater
    __ge__ = anp.greater_equal
    __lt__ = anp.less
    __le__ = anp.less_equal
    # Bitwise operators, on boolean masks mostly (a & b, ~m): plain answers, as comparisons.
    __and__ = anp.bitwise_and
    def __rand__(self, other): return anp.bitwise_and(other, self)  # noqa: E704
    __or__ = anp.bitwise_or
    def __ror__(self, other): return anp.bitwise_or(other, self)  # noqa: E704
    __xor__ = anp.bitwise_xor
    def __rxor__(self, other): return anp.bitwise_xor(other, self)  # noqa: E704
    __invert__ = anp.invert

    # ------------------------------------------------------------------ methods
    def view(self, dtype=None, type=None):
        if type is not None or (dtype is not None and _np.dtype(dtype) != self.dtype):
            raise TypeError("x.view(dtype) of a traced array reinterprets its bytes, which "
                            "has no derivative: use x.astype(dtype) to convert the values")
        return self.reshape(self.shape)  # a view of the same elements, as NumPy's

    def astype(self, dtype, *args, **kwargs):
        if not kwargs.get("copy", True) and _np.dtype(dtype) == self.dtype:
            return self  # NumPy answers the array itself
        if _carries_no_derivative(dtype):
            return decided(self, _Plain("astype", array_astype, dtype, args, kwargs))
        return array_astype(self, dtype, *args, **kwargs)

    def reshape(self, *shape, order="C", copy=None):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        if copy is not None:  # (NumPy's: True always copies, False raises where it would)
            return anp.reshape(self, shape, order=order, copy=copy)
        # (NumPy's default order given by no keyword: a call with keywords is recorded
        # through the tracer's general path, ~1 µs more)
        return anp.reshape(self, shape) if order == "C" else anp.reshape(self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return anp.transpose(self, axes or None)

    def ravel(self, order="C"):
        return anp.ravel(self) if order == "C" else anp.ravel(self, order=order)

    def squeeze(self, axis=None):
        return anp.squeeze(self, axis=axis)

    def swapaxes(self, axis1, axis2):
        return anp.swapaxes(self, axis1, axis2)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return anp.diagonal(self, offset, axis1, axis2)

    def copy(self, order="C"):
        return anp.copy(self, order=order)

    @property
    def at(self):
        """JAX's functional updates, out of place: ``x.at[i].set(v)`` (see ``numpy.at``)."""
        return anp.at(self)

    def fill(self, value):
        self._check_not_view("x.fill(...)")
        self._rebind(anp.index_update(self, Ellipsis, value))

    def sort(self, axis=-1, kind=None, order=None):
        self._check_not_view("x.sort()")
        self._rebind(anp.sort(self, axis=axis, kind=kind, order=order))

    @property
    def flat(self):
        return FlatIndexer(self)

    @flat.setter
    def flat(self, value):  # x.flat = v: every element, v repeated (NumPy's)
        FlatIndexer(self)[...] = value

    def item(self, *args):
        if self._node.on_plain_value is not None:  # (a Python number, as eagerly)
            return self._node.on_plain_value(self, lambda value: value.item(*args))
        self._refuse("item()")

    def __format__(self, spec: str) -> str:
        if not spec and not staged(self):
            return str(self)  # (the box's text)
        # text has no derivative: f"{loss:.3f}" formats the value (a guard under jit)
        return decided(self, lambda value: format(value, spec))

    def conj(self):
        # (NumPy's method answers a real array itself; np.conjugate a new array)
        return anp.conjugate(self) if _np.iscomplexobj(getval(self)) else self

    conjugate = conj

    def dot(self, other):
        return anp.dot(self, other)

    def flatten(self, order="C"):
        return anp.ravel.records(self, order=order)  # (a copy: ravel's call, not a view)

    def tolist(self):
        if self._node.on_plain_value is not None:  # (Python numbers, as eagerly)
            return self._node.on_plain_value(self, _tolist)
        return [self[i] for i in range(len(self))] if self.ndim else self


def _ufunc_name(ufunc) -> str:
    """``numpy.sin`` for NumPy's ufuncs, ``the ufunc wofz`` for others (e.g. SciPy's)."""
    if getattr(_np, ufunc.__name__, None) is ufunc:
        return f"numpy.{ufunc.__name__}"
    return f"the ufunc {ufunc.__name__}"


def _method(name):
    def method(self, *args, **kwargs):
        return getattr(anp, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in (
    "sum prod mean var std max min ptp cumsum cumprod clip "
    "trace repeat round argmax argmin argsort nonzero any all take compress"
).split():
    setattr(ArrayBox, _name, _method(_name))


class FlatIndexer:
    """``a.flat`` of a traced array or a chainrule.numpy buffer: indexed by C-order position;
    a read copies, as NumPy's; a write repeats its values as NumPy's flat iterator does
    (``a.flat[[0, 1, 2]] = [1, 2]`` writes 1, 2, 1)."""

    __slots__ = ("_array",)

    def __init__(self, array):
        self._array = array

    def __len__(self):
        return self._array.size

    def __iter__(self):
        return iter(self[:])

    def __getitem__(self, index):
        read = anp.ravel(self._array)[index]
        return read.copy() if type(read) is _np.ndarray else read

    def __setitem__(self, index, value):
        write_flat(self._array, _np.arange(self._array.size)[index], value)


def write_flat(target, positions, values) -> None:
    """``target.flat[positions] = values`` (a traced array or a buffer), ``values``
    repeated (or cut) to the positions' count as NumPy's put and flat writes do."""
    values = repeated(values, _np.size(positions))
    if values is not None:
        target[_np.unravel_index(positions, target.shape)] = anp.reshape(
            values, _np.shape(positions))


def repeated(values, count: int):
    """``values`` flattened and repeated cyclically to ``count`` elements (NumPy's rule for
    put, putmask and flat writes); None where there are no values (NumPy writes nothing)."""
    flat = anp.ravel(values)
    size = _np.size(getval(flat))
    if size == 0:
        return None
    return flat if size == count else flat[_np.arange(count) % size]


def _takes_writes(out) -> bool:
    """Is ``out`` (a ufunc's ``out=``) a front-end array that takes traced writes (a
    chainrule.numpy buffer)? The primitive then writes into it."""
    if type(out) is tuple and len(out) == 1:
        out = out[0]
    front_end = front_ends.get(type(out))
    return front_end is not None and front_end.as_output is not None


def _as_view(result, base, fun=None, *args, **kwargs):
    """Mark ``result`` as a view of ``base`` when NumPy made it one (shared memory); given
    ``fun`` (``result = fun(base, *args, **kwargs)``), a later write into ``base`` takes
    the view again from the written value (``ArrayBox._rebind``)."""
    return _marked_view(result, base, fun, args, kwargs)


# NumPy's may_share_memory of two ndarrays without its __array_function__ dispatch (~0.3
# µs of each view made from a traced array: x[i], reshape): NumPy's own C function.
_arrays_may_share = getattr(_np.may_share_memory, "_implementation", _np.may_share_memory)


def _marked_view(result, base, fun, args: tuple, kwargs: dict):
    """``_as_view`` with ``fun``'s arguments as they are kept (no packing: x[i]'s call)."""
    # (a box of an array, the common answer, unwrapped here without underlying's frame)
    memory = result._value if type(result) is ArrayBox else underlying(result)
    if type(memory) is not _np.ndarray:
        memory = underlying(memory)
    if isinstance(result, ArrayBox) and type(memory) is _np.ndarray and (
            _arrays_may_share(memory, shared) if type(shared := memory_of(base)) is
            _np.ndarray else _np.may_share_memory(memory, shared)):
        result._view_of = base
        if fun is not None and isinstance(base, ArrayBox):
            views = getattr(base, "_views", None)
            if views is None:
                views = base._views = []
            views.append((_weakref.ref(result), fun, args, kwargs))
    return result


def memory_of(value):
    """The memory under ``value``'s boxes, as NumPy's: a chainrule.numpy buffer (an array
    made under a trace, jit's and vmap's batch together) as the array its value is
    (NumPy's may_share_memory of the buffer itself asks its __array_function__, which has
    no rule for it and raised: vmap then ran its loop under jit)."""
    while isinstance(value, ArrayBox):
        value = value._value
    if type(value) is _np.ndarray:
        return value
    read = MEMORY_OF.get(type(value))
    return value if read is None else read(value)


def view_of_traced(f_wrapped, args, kwargs):
    """A view function (``tracer.view_makers``) called on a traced array ``args[0]``: its
    answer marked as a view of it where NumPy's is one (a list of views: ``np.split``), so
    that it sees later writes into it (``np.asarray(a)``: a view of all of it)."""
    base, rest, records = args[0], args[1:], f_wrapped.records
    result = records(*args, **kwargs)
    if isinstance(result, ArrayBox):  # (np.asarray(a): a view of all of a, recorded)
        return _marked_view(result, base, records, rest, kwargs)
    # np.split's list (traced: a box of the list): a list of views, as NumPy's
    return [_marked_view(result[i], base, _part(records, i), rest, kwargs)
            for i in range(len(result))]


def _part(function, i: int):
    """``function``'s answer's part ``i`` (a list's item), as a function of the same
    arguments (how a write into the base takes ``np.split``'s views again)."""

    def part(*args, **kwargs):
        return function(*args, **kwargs)[i]

    return part


def underlying(x):
    """The value under every box, and under vmap's batch (an ArrayBox getval leaves)."""
    while isinstance(x, ArrayBox):
        x = x._value
    return x


def _laid_out_as(value: _np.ndarray, old: _np.ndarray) -> _np.ndarray:
    """``value`` in ``old``'s memory order where ``old`` runs backwards along an axis (a
    reversed argument, ``x[::-1]``) and ``value`` does not: NumPy's write in place keeps
    the array's own strides, and NumPy's loops of some float32 functions (arctan2, sin
    ...) round a reversed array's elements otherwise than a forward one's."""
    strides = old.strides
    if value.shape != old.shape or value.dtype != old.dtype or value.strides == strides \
            or all(s >= 0 for s in strides) or old.size < 2:
        return value
    flips = tuple(slice(None, None, -1) if s < 0 else slice(None) for s in strides)
    laid = _np.empty_like(old[flips])[flips]  # (old's axis order, its reversals)
    laid[...] = value
    return laid


def _mutable(value) -> bool:
    """Does an in-place operator change ``value`` (a box's plain value), or make a new one
    (a scalar)? Under vmap it is a batch, an array when its examples have axes."""
    return type(value) is _np.ndarray or (isinstance(value, ArrayBox) and value.ndim > 0)


def _index_repr(index) -> str:
    parts = index if isinstance(index, tuple) else (index,)
    return ", ".join("..." if p is Ellipsis else ":" if isinstance(p, slice) else
                     type(p).__name__ if hasattr(p, "shape") else repr(p) for p in parts)


@lru_cache(maxsize=256)
def _next_opnames(code) -> dict:
    """For each instruction offset of ``code``, the name of the next instruction that does
    more than shuffle the stack."""
    instructions = list(dis.get_instructions(code))
    shuffles = {"SWAP", "COPY", "ROT_TWO", "ROT_THREE", "ROT_FOUR", "NOP", "CACHE",
                "EXTENDED_ARG", "DUP_TOP_TWO"}
    following: dict = {}
    upcoming = None
    for ins in reversed(instructions):
        following[ins.offset] = upcoming
        if ins.opname not in shuffles:
            upcoming = ins.opname
    return following


def _stores_subscript_next(frame) -> bool:
    """Is the caller executing ``x[i] op= v``, whose result Python stores back into x?

    For that statement Python reads x[i] (here a view), applies the in-place
    operator, then calls x.__setitem__(i, result): the update can be made on
    x itself. Any other in-place write through a view is refused.
    """
    return _next_opnames(frame.f_code).get(frame.f_lasti) == "STORE_SUBSCR"


# ----------------------------------------------------------------------------- box primitives
def array_getitem(x, index):
    if type(x) is not _np.ndarray and type(index) in (_np.ndarray, tuple):
        index = index_like(index, x)  # CuPy refuses NumPy index arrays
    return x[index]


# an ndarray's x[index] recorded without this function's frame (tracer.direct_types)
array_getitem.direct = _operator.getitem
array_getitem = primitive(array_getitem)


_WRITE_INSTEAD = (
    "make the array with chainrule.numpy (np.zeros(n), np.empty_like(x), np.zeros_like(x) "
    "of a traced x, ...: under a transform its arrays take traced writes), or "
    "build the array from traced values instead (chainrule.numpy.array([...]), stack, "
    "concatenate or where), or write a = chainrule.numpy.index_update(a, i, x): a is then "
    "a traced copy, and further writes a[j] = y into it are differentiable."
)


class _Plain:
    """A value's plain integer or boolean array, ``fun(value, dtype, ...)``: a conversion
    that drops the derivative, and under ``chainrule.jit`` a decision the program guards
    (``tracer.decided``), so a later call with other values does not reuse this answer."""

    def __init__(self, name, fun, dtype, args=(), kwargs=None):
        self.__name__, self.fun, self.dtype = name, fun, dtype
        self.args, self.kwargs = args, kwargs or {}

    def __call__(self, value):
        return self.fun(value, self.dtype, *self.args, **self.kwargs)


# NumPy's functions that write into their first argument (numpy.copyto -> chainrule's),
# and the array a buffer's value is (Buffer -> a function: ``memory_of``), filled by
# chainrule.numpy.buffers, which defines them (and is built on this module)
WRITES: dict = {}
MEMORY_OF: dict = {}


def _plain_index(index):
    """An index as indexing takes it: a traced one is a decision (it has no derivative;
    ``as_index``: under chainrule.jit an integer array stays a value of the program), and
    so is each traced part of a tuple index (a guarded value under chainrule.jit)."""
    if isbox(index):
        return decided(index, as_index)
    if type(index) is tuple and any(isbox(part) for part in index):
        return tuple(decided(part, getval) if isbox(part) else part for part in index)
    return index


def _carries_no_derivative(dtype) -> bool:
    """Integer and boolean results (x.astype(int), numpy.int64(x)) are plain arrays, as in
    autograd: their derivative is zero wherever it exists, and they serve as indices."""
    return _np.issubdtype(dtype, _np.integer) or _np.issubdtype(dtype, _np.bool_)


def fitted_in_place(result, shape: tuple, dtype, operation: str,
                    errors: tuple[type, type] = (ValueError, TypeError), stored_by: str = ""):
    """``result`` of an in-place ``operation`` cast to the ``dtype`` of the array it is
    stored in, or the error NumPy (``errors``: for shape, for dtype) raises there: the
    result keeps the array's shape, and casts to its dtype only within a kind ('same_kind').
    ``stored_by``: the ufunc's name (``"add"`` for ``a += b``), as whose the cast's
    floating-point errors are reported, as NumPy's ``out=`` reports them.
    """
    shape_error, cast_error = errors
    if _np.shape(getval(result)) != shape:
        raise shape_error(
            f"{operation}: non-broadcastable output operand: the result has shape "
            f"{_np.shape(getval(result))}, which cannot be stored in place of shape "
            f"{tuple(shape)}; use the out-of-place form (x = x + y)."
        )
    result_dtype = _np.result_type(getval(result))
    if result_dtype == dtype:
        return result
    if not _np.can_cast(result_dtype, dtype, "same_kind"):
        raise cast_error(
            f"{operation}: the result's dtype {result_dtype} can't be cast to the output's "
            f"dtype {dtype} with casting rule 'same_kind'; use the out-of-place form "
            f"(x = x + y)."
        )
    return stored_as(result, dtype, stored_by)


def stored_as(result, dtype, stored_by: str = ""):
    """``result`` cast to ``dtype`` as an in-place ufunc named ``stored_by`` stores it
    (``a += b``: NumPy's ``out=`` cast, whose floating-point errors are the ufunc's), where
    that gives the cast's own bits; else cast."""
    if stored_by in _NEUTRAL and _np.dtype(dtype).kind == "f":
        return array_astype(result, dtype, stored_by=stored_by)
    return array_astype(result, dtype)


# x op neutral == x, bit for bit, for real x (-0.0 and nan included; not for complex x,
# whose zero imaginary parts may change sign): a cast made by the ufunc itself
_NEUTRAL = {"add": -0.0, "subtract": 0.0, "multiply": 1.0, "divide": 1.0, "power": 1.0}


@primitive
def array_astype(x, dtype, *args, stored_by: str = "", **kwargs):
    if type(x) is not _np.ndarray and hasattr(x, "astype") and not isinstance(x, _np.generic):
        return x.astype(dtype, *args, **kwargs)  # a Dask or CuPy array stays one
    if stored_by:
        # the cast of an in-place ufunc's answer (a += b of a float32 a): made by that ufunc
        # into the array's dtype, as NumPy's out= does, so that an overflow warns "in add"
        ufunc = getattr(_np, stored_by)
        return ufunc(x, _NEUTRAL[stored_by], out=_np.empty(_np.shape(x), dtype))
    return _np.asarray(x).astype(dtype, *args, **kwargs)


for _t in (_np.ndarray, float, complex, _np.float64, _np.float32, _np.float16,
           _np.complex64, _np.complex128, _np.longdouble, _np.clongdouble):
    ArrayBox.register(_t)
register_view_maker(ArrayBox, view_of_traced)


def _box_as_numpy_scalar(scalar_type):
    """Box a Python float (complex) as the NumPy scalar of the same value. Rules compute
    with the values they are given: with a Python float, ``1 / x`` at 0 raises
    ZeroDivisionError and ``x ** 0.5`` of a negative base turns complex, where NumPy gives
    inf or nan with its warning. A NumPy scalar makes every rule follow NumPy's semantics,
    so a Python float's derivative is bit for bit the np.float64's."""
    def box(value, trace_id, node):
        return ArrayBox(scalar_type(value), trace_id, node)
    return box


ArrayBox.type_mappings[float] = _box_as_numpy_scalar(_np.float64)
ArrayBox.type_mappings[complex] = _box_as_numpy_scalar(_np.complex128)


def _ufunc_by_foreign_operand(f_raw, args, kwargs):
    """A ufunc whose answer is a foreign container (xarray's DataArray...), which no box
    holds: let that operand's ``__array_ufunc__`` apply the ufunc to its contents and the
    traced operands itself, as NumPy's dispatch would, so that it holds a traced value
    (autograd allows this)."""
    ufunc = f_raw if isinstance(f_raw, _np.ufunc) else getattr(f_raw, "ufunc", None)
    if ufunc is None:
        return NotImplemented
    for arg in args:
        handler = getattr(type(arg), "__array_ufunc__", None)
        if handler is not None and not isbox(arg) and handler is not _ndarray_ufunc:
            return arg.__array_ufunc__(ufunc, "__call__", *args, **kwargs)
    return NotImplemented


_ndarray_ufunc = _np.ndarray.__array_ufunc__
ArrayBox.on_untraceable_answer = staticmethod(_ufunc_by_foreign_operand)
ArrayBox.on_refused_sequences = staticmethod(anp._sequences_as_arrays)

__all__ = ["ArrayBox", "getval"]


def _followed(inputs: tuple) -> bool:
    """Whether the trace of every traced input follows plain values of it
    (``Node.on_plain_value``: chainrule.jit's staging trace)."""
    return all(x._node.on_plain_value is not None for x in inputs if isbox(x))


def _writes_followed(inputs: tuple, out: object) -> bool:
    """Whether a ufunc's ``out=`` writing traced ``inputs`` into plain NumPy arrays is
    followed by the trace of every traced input."""
    outs = out if isinstance(out, tuple) else (out,)
    return all(type(o) is _np.ndarray for o in outs) and _followed(inputs)


@cache
def _without_rule(ufunc: _np.ufunc):
    """``ufunc`` as a primitive without a derivative (one per ufunc: jit stages calls of it)."""
    return notrace_primitive(ufunc)


def _on_plain_values(ufunc, method: str, inputs: tuple, kwargs: dict):
    """NumPy's own ``ufunc.method`` on the plain values of followed traced inputs."""
    plain = [x._node.on_plain_value(x, into_plain_array) if isbox(x) else x for x in inputs]
    return getattr(ufunc, method)(*plain, **kwargs)


_WRITEABLE = _np.empty(0).flags


def _derivative_free_under_staging(target, other) -> bool:
    """Whether ``target op= other`` (or ``target[i] = other``) writes a value of a
    derivative trace into a value that only a staging trace boxes (chainrule.jit's, for a
    value that carries no derivative) where eager evaluation holds a plain NumPy array,
    which refuses the write, so the staged call refuses it too. (Where eager evaluation
    holds a buffer, e.g. ``np.floor(x) + s`` under grad, the staging trace says so:
    ``Node.holds_buffer``, and the write is taken.)"""
    node = target._node
    return (node.on_plain_value is not None and isbox(other)
            and other._node.on_plain_value is None and other._trace_id > target._trace_id
            and not (node.holds_buffer is not None and node.holds_buffer(target)))


def _plain_write_refused(name: str) -> TypeError:
    return TypeError(
        f"{name} with out= would write a traced value into a plain "
        f"NumPy array (as in a += x or a[i] = x with a a NumPy array and x traced), "
        f"which drops its derivative. Make the result a new array (a = a + x) or "
        f"build it from traced values with chainrule.numpy functions."
    )


def _any_traced(out: object) -> bool:
    return any(isbox(o) for o in (out if isinstance(out, tuple) else (out,)))


def _tolist(value: object) -> object:
    return value.tolist()
