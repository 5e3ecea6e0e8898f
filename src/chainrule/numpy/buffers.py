"""Buffers: arrays made by chainrule.numpy's constructors while a trace is live, which take
traced writes (allocate, then fill: ``y = np.zeros(n); y[0] = x[0] ** 2``).

Outside any trace the constructors give plain ``numpy.ndarray`` objects (one check of the
set of live traces). Under a trace they give a ``Buffer``: an object that behaves as the
NumPy array it holds until a traced value is written into it, through any index, ``+=``,
``out=``, ``np.add.at``, ``np.copyto``, ``np.put``, ``np.putmask``, ``fill`` or a view. From
that write on, the memory the buffer (and all its views) stands for is one traced value,
updated functionally (``index_update`` / ``index_add``, the primitives ArrayBox writes use),
so derivatives follow in every mode and to any order.

A view (what NumPy's indexing or ``reshape``/``.T``/... would return as a view) is a
``Buffer`` sharing its base's memory record, with ``positions``: the C-order flat positions
in the base of its elements. A write through a view is a write at those positions of the
base; a read of a view of a traced base picks them. Reads that NumPy answers with a copy
(a scalar, a fancy index) are copies here too, so ``y = a[0]; a[0] = x`` leaves ``y``.

To the engine a buffer is a front end (``register_front_end``): a primitive called with one
computes with the value it stands for; a function returning one returns that value (a
buffer is a pytree leaf, flattened as that value: ``FrontEnd.pytree_leaf``).
"""

from __future__ import annotations

import functools
import operator as _operator
import sys as _sys

import numpy as _np

from .._core import forward, reverse
from .._core import tracer as _tracer
from .._core.rules import (
    defbatch,
    defjvp_argnums,
    defnew_array,
    defsparsity,
    deftakes_masks,
    defvjp_argnums,
)
from .._core.tracer import (
    FrontEnd,
    isbox,
    live_trace_ids,
    register_front_end,
    register_view_maker,
)
from .._sparsity.patterns import elementwise_pattern
from . import numpy_wrapper as anp
from ._namespace import ufunc_of
from .batched import aligned
from .numpy_boxes import (
    MEMORY_OF,
    WRITES,
    ArrayBox,
    FlatIndexer,
    repeated,
    staged_as_plain,
    stored_as,
    underlying,
    write_flat,
)
from .placement import VALUE_OF

__all__ = ["Buffer"]


class _Memory:
    """What a base array and its views share: the NumPy memory (written while only constants
    are written) and, after the first traced write, the traced value of the base."""

    __slots__ = ("plain", "traced", "positions")

    def __init__(self, plain: _np.ndarray):
        self.plain = plain
        self.traced = None
        self.positions = None  # arange(size).reshape(shape), made on first use

    def all_positions(self) -> _np.ndarray:
        positions = self.positions
        # (made again where the array was reshaped in place since: b.shape = s, or NumPy's
        # own b.resize(s) before a traced write; views keep theirs, flat positions alike)
        if positions is None or positions.shape != self.plain.shape:
            positions = self.positions = _np.arange(self.plain.size).reshape(self.plain.shape)
        return positions

    def current(self):
        return self.plain if self.traced is None else self.traced


def _is_traced(value) -> bool:
    if type(value) is Buffer:
        return value._memory.traced is not None
    if type(value) in (list, tuple):  # (np.concatenate([a, b], out=c) of buffers)
        return any(_is_traced(item) for item in value)
    return anp._contains_box(value) or type(value) in _tracer.batched_types


def _value_of(obj):
    """``obj`` with buffers (also inside lists and tuples) replaced by what they stand for."""
    if type(obj) is Buffer:
        return obj._value()
    if type(obj) in (list, tuple):
        return type(obj)(_value_of(item) for item in obj)
    return obj


class Buffer:
    """An array made by a chainrule.numpy constructor under a trace (see the module doc)."""

    __slots__ = ("_memory", "_plain", "_positions", "_part", "_source", "__weakref__")
    __array_priority__ = 200.0  # above ArrayBox's: box + buffer asks the buffer first

    def __init__(self, memory: _Memory, plain: _np.ndarray, positions, part=None,
                 source=None):
        self._memory = memory
        self._plain = plain  # the NumPy view of the memory this buffer is
        self._positions = positions  # None: the base itself
        self._part = part  # "real" or "imag": a view of that part of complex elements
        # (the buffer this view was taken from, how, and that one's shape then: its traced
        # value is taken so from that one's, a view laid out as NumPy's, whose strides
        # NumPy's loops follow)
        self._source = source

    @classmethod
    def holding(cls, array: _np.ndarray) -> Buffer:
        return cls(_Memory(array), array, None)

    # ------------------------------------------------------------------ what it stands for
    def _value(self):
        traced = self._memory.traced
        if traced is None:
            return self._plain
        if self._source is not None:
            buffer, make, shape = self._source
            value = buffer._value()
            if buffer._plain.shape != shape:  # (`b.shape = s` since: the view was of b as it was)
                value = anp.reshape(value, shape)
            return make(value)
        value = traced if self._positions is None else anp.ravel(traced)[self._positions]
        return value if self._part is None else getattr(anp, self._part)(value)

    def _all_positions(self) -> _np.ndarray:
        return self._memory.all_positions() if self._positions is None else self._positions

    @property
    def shape(self):
        return self._plain.shape

    @shape.setter
    def shape(self, shape) -> None:
        """``b.shape = s``: NumPy's reshape in place, which never copies (NumPy's errors
        where the layout cannot take the shape), so it keeps the elements' order: the
        positions, the traced value and a view's way from its source are reshaped too."""
        plain = self._plain
        view = plain.view()
        view.shape = shape  # (NumPy's checks and errors, on a view it then drops)
        memory, shape = self._memory, view.shape
        # (the base's positions are made again for its new shape: _Memory.all_positions)
        if plain is memory.plain:  # the base: its traced value follows
            if memory.traced is not None:
                memory.traced = anp.reshape(memory.traced, shape)
        else:
            if self._positions is not None:
                self._positions = self._positions.reshape(shape)
            if self._source is not None:
                source, make, source_shape = self._source
                self._source = (source, lambda a: make(a).reshape(shape), source_shape)
        plain.shape = shape

    @shape.deleter
    def shape(self) -> None:
        raise AttributeError("Cannot delete array shape")  # (NumPy's error)

    @property
    def ndim(self):
        return self._plain.ndim

    @property
    def size(self):
        return self._plain.size

    @property
    def dtype(self):
        return self._plain.dtype

    def __len__(self):
        return len(self._plain)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return f"Buffer({self._value()!r})"

    def __getattr__(self, name):
        # every other attribute and method: the value's (an ndarray's or an ArrayBox's); a
        # method's answer in new memory is a buffer, as a function's is (b.cumsum())
        attribute = getattr(self._value(), name)
        if not callable(attribute):
            return attribute
        return lambda *args, **kwargs: _fresh(attribute(*args, **kwargs))

    def __array__(self, dtype=None, copy=None):
        if self._memory.traced is not None:
            _tracer.check_not_leaked(self._memory.traced)  # kept past its trace: say that
            value = self._value()
            plain = None if not isbox(value) else staged_as_plain(value, dtype, copy,
                                                                  _sys._getframe(1))
            if plain is not None:  # (a value only chainrule.jit boxes: eagerly NumPy's)
                return plain
            raise TypeError(
                "This array was made by a chainrule.numpy constructor and holds a traced "
                "value since a traced value was written into it: converting it to a plain "
                "NumPy array (np.asarray, np.array, or writing it into a NumPy array) would "
                "drop its derivative. Compute with it through chainrule.numpy (or NumPy "
                "functions called on it), or return it."
            )
        plain = self._plain if dtype is None else self._plain.astype(dtype)
        return plain.copy() if copy else plain

    # ------------------------------------------------------------------ views and reads
    def _derived(self, make, of_traced: bool = True):
        """``make(array)``: a view of this buffer where NumPy gives a view (a list of views
        where it gives a list of them: ``np.split``), else the value. ``of_traced``:
        ``make`` takes a traced value too (chainrule's view functions and methods), and
        the view's traced value is made by it, laid out as NumPy's view is (``np.flip``'s
        negative strides: NumPy's loops for them give other last bits than for a copy)."""
        plain = make(self._plain)
        if plain is self._plain:  # (np.asarray(a), np.atleast_1d of a 1-D a: a itself)
            return self
        if _views_of(plain, self._plain):
            positions = make(self._all_positions())
            shape = self._plain.shape  # (the source's, should it be reshaped in place)
            if type(plain) is _np.ndarray:
                return Buffer(self._memory, plain, positions, self._part,
                              (self, make, shape) if of_traced else None)
            return type(plain)(
                Buffer(self._memory, p, q, self._part,
                       (self, lambda a, k=k: make(a)[k], shape) if of_traced else None)
                for k, (p, q) in enumerate(zip(plain, positions)))
        copied = make(self._value())
        if type(copied) is _np.ndarray:
            # a copy (a fancy or boolean index): a buffer of its own, as np.zeros(n) + 1.0
            # is, so ``a[idx] += x`` (read, add in place, write back) can take a traced x
            return Buffer.holding(copied)
        return copied

    def __getitem__(self, index):
        return self._derived(lambda a: a[_value_of(index)])

    @property
    def T(self):
        return self._derived(lambda a: a.T)

    def transpose(self, *axes):
        return self._derived(lambda a: a.transpose(*axes))

    def reshape(self, *shape, **kwargs):
        return self._derived(lambda a: a.reshape(*shape, **kwargs))

    def ravel(self, order="C"):
        return self._derived(lambda a: a.ravel(order))

    def swapaxes(self, axis1, axis2):
        return self._derived(lambda a: a.swapaxes(axis1, axis2))

    def squeeze(self, axis=None):
        return self._derived(lambda a: a.squeeze(axis))

    def diagonal(self, offset=0, axis1=0, axis2=1):
        # NumPy's is a read-only view: it sees later writes into the buffer
        return self._derived(lambda a: a.diagonal(offset, axis1, axis2))

    @property
    def mT(self):
        return self._derived(lambda a: a.mT)

    @property
    def real(self):
        if self.dtype.kind == "c":
            return Buffer(self._memory, self._plain.real, self._all_positions(), "real")
        return self._derived(lambda a: a.real)  # the array itself, as NumPy's

    @property
    def imag(self):
        if self.dtype.kind == "c":
            return Buffer(self._memory, self._plain.imag, self._all_positions(), "imag")
        return self._value().imag  # NumPy's: read-only zeros

    @real.setter
    def real(self, value):  # a.real = v: NumPy writes v into the real parts
        self.real[...] = value

    @imag.setter
    def imag(self, value):
        if self.dtype.kind != "c":
            raise TypeError("array does not have imaginary part to set")  # (NumPy's)
        self.imag[...] = value

    def view(self, dtype=None, type=None):
        if type is None and (dtype is None or _np.dtype(dtype) == self.dtype):
            return self._derived(lambda a: a.view(), of_traced=False)
        return self._value().view(*(() if dtype is None else (dtype,)),
                                  **({} if type is None else {"type": type}))

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        if not copy and _np.dtype(dtype) == self.dtype and order in ("K", "A"):
            return self  # NumPy answers the array itself
        return _fresh(self._value().astype(dtype, order, casting, subok, copy))

    def copy(self, order="C"):
        return copy(self, order=order)

    @property
    def at(self):
        """JAX's functional updates, out of place: ``a.at[i].set(v)`` (see ``numpy.at``)."""
        return anp.at(self._value())

    # ------------------------------------------------------------------ writes
    def _update(self, index, value, functional_update) -> None:
        """Write ``value`` at ``index`` of this buffer as a traced update of its base."""
        if not _np.issubdtype(self.dtype, _np.inexact):
            raise TypeError(
                f"Writing a traced value into an array of dtype {self.dtype}: NumPy would "
                f"cast it (rounding), and the cast has no derivative. Make the array a float "
                f"one (np.zeros(n), or dtype=float) to differentiate through the write."
            )
        if not self._plain.flags.writeable:  # a view NumPy makes read-only (diagonal)
            raise ValueError("assignment destination is read-only")
        memory = self._memory
        positions = self._all_positions()[_value_of(index)]
        value = _value_of(value)
        if self._part is not None:  # the complex elements, with the other part kept
            value = _into_part(self._part, value, anp.ravel(memory.current())[positions],
                               functional_update is anp.index_add)
        flat = functional_update(anp.ravel(memory.current()), positions, value)
        memory.traced = anp.reshape(flat, memory.plain.shape)

    def __setitem__(self, index, value):
        if self._memory.traced is None and not _is_traced(value):
            self._plain[_value_of(index)] = _value_of(value)
        else:
            self._update(index, value, anp.index_update)

    def fill(self, value):
        self[...] = value

    def put(self, indices, values, mode="raise"):
        return put(self, indices, values, mode)

    @property
    def flat(self):
        return FlatIndexer(self)

    @flat.setter
    def flat(self, value):  # a.flat = v: every element, v repeated (NumPy's)
        FlatIndexer(self)[...] = value

    def sort(self, axis=-1, kind=None, order=None):
        """In place, as ``ndarray.sort``; after a traced write, the sorted value written."""
        if self._memory.traced is None:
            return self._plain.sort(axis, kind, order)
        self[...] = anp.sort(self._value(), axis=axis, kind=kind, order=order)

    def _inplace(self, ufunc, other):
        if self._memory.traced is None and not _is_traced(other):
            ufunc(self._plain, _value_of(other), out=self._plain)
        else:
            self[...] = _cast_like(ufunc(self._value(), _value_of(other)), self, ufunc)
        return self

    def __iadd__(self, other): return self._inplace(_np.add, other)  # noqa: E704
    def __isub__(self, other): return self._inplace(_np.subtract, other)  # noqa: E704
    def __imul__(self, other): return self._inplace(_np.multiply, other)  # noqa: E704
    def __itruediv__(self, other): return self._inplace(_np.true_divide, other)  # noqa: E704
    def __ipow__(self, other): return self._inplace(_np.power, other)  # noqa: E704
    def __imatmul__(self, other): return self._inplace(_np.matmul, other)  # noqa: E704

    def _ufunc_at(self, ufunc, index, value=None):
        """``ufunc.at(self, index, value)``: unbuffered in place; ``add`` and ``subtract``
        accumulate repeated indices when traced too."""
        if self._memory.traced is None and not _is_traced(value):
            args = () if value is None else (_value_of(value),)
            return ufunc.at(self._plain, _value_of(index), *args)
        if ufunc is _np.add:
            return self._update(index, value, anp.index_add)
        if ufunc is _np.subtract:
            return self._update(index, anp.negative(_value_of(value)), anp.index_add)
        raise TypeError(
            f"numpy.{ufunc.__name__}.at with traced values: chainrule differentiates add.at "
            f"and subtract.at (repeated indices accumulate). Write the update as "
            f"a[idx] = {ufunc.__name__}(a[idx], v) where idx has no repeated positions."
        )

    # ------------------------------------------------------------------ NumPy's protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "at" and type(inputs[0]) is Buffer:
            return inputs[0]._ufunc_at(ufunc, *inputs[1:])
        out = kwargs.pop("out", None)
        if type(out) is tuple and len(out) == 1:
            out = out[0]
        if type(out) is Buffer and method == "__call__":
            return _as_output(out, ufunc, inputs, kwargs)
        if out is not None:
            kwargs["out"] = _value_of(out)
            return getattr(ufunc, method)(*_value_of(inputs), **_value_of(kwargs))
        return _fresh(getattr(ufunc, method)(*_value_of(inputs), **_value_of(kwargs)))

    def __array_function__(self, func, types, args, kwargs):
        own = _FUNCTIONS.get(func)
        if own is not None:
            return own(*args, **kwargs)
        if type(kwargs.get("out")) is Buffer:  # numpy.concatenate(xs, out=a), ...
            return _as_output(kwargs["out"], func, args,
                              {k: v for k, v in kwargs.items() if k != "out"})
        answer = func(*_value_of(args), **{k: _value_of(v) for k, v in kwargs.items()})
        if args and args[0] is self and self._memory.traced is None and \
                _views_of(answer, self._plain):
            # a view made by a function chainrule does not know (sliding_window_view):
            # taken as one, so that it sees later writes (a traced one too)
            return self._derived(lambda a: func(a, *_value_of(args[1:]), **kwargs),
                                 of_traced=False)
        # new memory under a trace is a buffer, as a ufunc's or chainrule.numpy's answer
        # is (np.fix, np.round, np.sort, np.concatenate of a buffer answer here; np.tile's
        # is a view of memory of its own)
        return _fresh(answer, made_from=self._plain)


# (numpy_boxes asks whether an array is a view of a buffer through this: NumPy's
# may_share_memory of the buffer itself would ask its __array_function__)
MEMORY_OF[Buffer] = lambda buffer: underlying(buffer._value())
# (placement asks which array library a buffer's values are in: CuPy's are not NumPy's)
VALUE_OF[Buffer] = Buffer._value


def _into_part(part: str, value, old, adding: bool):
    """What a write of ``value`` into the ``part`` ("real" or "imag") of the complex
    elements ``old`` writes (or, ``adding``, adds) into those elements."""
    if adding:
        return value if part == "real" else value * 1j
    if part == "real":
        return value + 1j * anp.imag(old)
    return anp.real(old) + 1j * value


def _views_of(answer, memory: _np.ndarray) -> bool:
    """Is ``answer`` (computed from ``memory``) a view of its elements, or a list of such
    views? (Not a reinterpreting view, as ``.real`` of complex memory is: another dtype.)"""
    parts = answer if type(answer) in (list, tuple) and answer else (answer,)
    return (all(type(p) is _np.ndarray and p.dtype == memory.dtype for p in parts)
            and any(p.size for p in parts)
            and all(not p.size or _np.shares_memory(p, memory) for p in parts))


def _as_output(buffer: Buffer, function, args, kwargs):
    """``function(*args, out=buffer, **kwargs)``: NumPy's own call where nothing is traced,
    else the answer computed, then written (where ``where=``) into the buffer."""
    where = kwargs.pop("where", True)
    if not any(_is_traced(v) for v in (buffer, where, *args, *kwargs.values())):
        raw = getattr(function, "fun", function)
        if where is not True:  # (given only where given: most functions have no where=)
            kwargs["where"] = _value_of(where)
        raw(*_value_of(args), out=buffer._plain, **_value_of(kwargs))
        return buffer
    args, kwargs = _value_of(args), _value_of(kwargs)
    ufunc = ufunc_of(function)
    if where is not True and ufunc is None:
        kwargs["where"] = _value_of(where)  # (a reduction's: the elements it reads)
        where = True
    if getattr(function, "fun", function) in _ACCUMULATES_IN_OUT and kwargs.get("dtype") is None:
        kwargs["dtype"] = buffer.dtype  # (NumPy's: float32 summed into float64 in float64)
    if where is True:
        result = function(*args, **kwargs)
    else:
        old, mask = buffer._value(), _value_of(where)
        if ufunc.signature is None:
            # NumPy's own masked call (its derivatives the composite's, _masked_into): the
            # composite computes on new arrays, where NumPy's loops for a caller's array of
            # negative strides (x[::-1]) are other ones, whose last bits differ
            reversed_axes = tuple(i for i, s in enumerate(buffer._plain.strides) if s < 0)
            result = _ufunc_where(function, reversed_axes, mask, old, *args, **kwargs)
        else:
            result = _masked_into(function, mask, old, args, kwargs)
    buffer[...] = _cast_like(result, buffer, function)
    return buffer


def _masked_into(function, mask, old, args, kwargs):
    """``function(*args, out=<old>, where=mask)`` as chainrule differentiates it: the
    answer computed (an elementwise ufunc's only where the mask holds), then put where the
    mask holds into ``old``'s entries."""
    ufunc = ufunc_of(function)
    if ufunc.signature is None:
        args = _computed_only_where(ufunc, mask, args)
    # (cast as the ufunc casts its own answer, before the entries it leaves are put
    # back: out's dtype would promote the answer's, and the cast's error is NumPy's)
    computed = _cast_like(function(*args, **kwargs), old, function)
    return anp.where(mask, computed, old)


@_tracer.primitive
def _ufunc_where(function, reversed_axes, mask, old, *args, **kwargs):
    """``function``'s ufunc ``(*args, out=<a copy of old>, where=mask)``, the copy taken
    backwards along ``reversed_axes`` as the caller's out= array is (NumPy's loops follow
    the output's strides too; a program's copy of a constant ``old`` has its own)."""
    flip = tuple(slice(None, None, -1 if i in reversed_axes else 1) for i in range(old.ndim))
    out = old[flip].copy()[flip] if old.ndim else _np.array(old)  # (a 0-d one: no scalar)
    ufunc_of(function)(*args, out=out, where=mask, **kwargs)
    return out


def _where_composite(argnums, args, kwargs):
    """``_ufunc_where`` as chainrule computes it where it differentiates (``_masked_into``),
    a function of the arguments at ``argnums``: its derivatives are the primitive's."""
    def composite(varied):
        full = list(args)
        for i, v in zip(argnums, varied):
            full[i] = v
        function, _, mask, old, *xs = full
        result = _masked_into(function, mask, old, xs, kwargs)
        dtype = _np.result_type(_tracer.getval(old))  # (the primitive's: out's)
        return result if _np.result_type(_tracer.getval(result)) == dtype else \
            stored_as(result, dtype)
    return composite


defjvp_argnums(_ufunc_where, lambda argnums, tangents, ans, args, kwargs: forward.make_jvp(
    _where_composite(argnums, args, kwargs), tuple(args[i] for i in argnums))(tuple(tangents))[1])
defvjp_argnums(_ufunc_where, lambda argnums, ans, args, kwargs: reverse.make_vjp(
    _where_composite(argnums, args, kwargs), tuple(args[i] for i in argnums))[0])
defsparsity(_ufunc_where, elementwise_pattern)  # (the mask included: either value is taken)


def _ufunc_where_batch(values, batched, kwargs):
    """The batch of ``_ufunc_where``'s calls: one call, into the batch of the outs (the
    operands broadcast elementwise, the batch axis first)."""
    function, reversed_axes, *arrays = values
    mask, old, *args = aligned(arrays, batched[2:])
    shape = _np.broadcast_shapes(*(_np.shape(a) for a in (mask, old, *args)))
    if _np.shape(old) != shape:
        old = anp.broadcast_to(old, shape)
    return _ufunc_where(function, tuple(a + 1 for a in reversed_axes), mask, old, *args,
                        **kwargs)


defbatch(_ufunc_where, _ufunc_where_batch)
deftakes_masks(_ufunc_where)
defnew_array(_ufunc_where)


# the ufuncs that warn on nan ("invalid value") for real operands
_NAN_WARNS = frozenset([_np.logaddexp, _np.logaddexp2])


def _computed_only_where(ufunc, mask, args):
    """An elementwise ufunc's arguments for ``where=mask``: NumPy computes (and warns)
    only where the mask holds, so at the other entries each array argument is a constant
    (no derivative comes from entries NumPy does not compute: 1 / 0 there would send
    0 * inf = nan back), nan for real floats (quiet: it warns nowhere, and decides
    nothing under chainrule.jit)."""
    quiet = ufunc not in _NAN_WARNS
    out = []
    for a in args:
        value = _tracer.getval(a)
        if not _np.ndim(value) and not _is_traced(a):
            out.append(a)  # (a number: NumPy computes with it where the mask holds too)
            continue
        real = _np.result_type(value).kind == "f"
        out.append(anp.where(mask, a, _np.nan if quiet and real else
                             _tracer.derivative_free(a)))
    return out


# the reductions and scans whose accumulator, where out= is given and dtype= is not, has
# out's dtype (as if dtype=out.dtype were passed): the functions chainrule's primitives
# call (NumPy's own, or a faster form of it: np.sum's is short_axes')
_ACCUMULATES_IN_OUT = frozenset(getattr(anp.namespace[name], "fun", None) for name in (
    "sum", "prod", "mean", "cumsum", "cumprod", "nansum", "nanprod", "nanmean", "nancumsum",
    "nancumprod", "trace"))


def _cast_like(result, target, function=None):
    """``result`` as an in-place ufunc (``function``) writes it into ``target`` (an array or
    a buffer, by its dtype; casting 'same_kind'; the ufunc casts, so that its floating-point
    errors are the ufunc's)."""
    dtype = _np.result_type(_tracer.getval(result))
    if not _np.can_cast(dtype, target.dtype, "same_kind"):
        ufunc = ufunc_of(function)
        if ufunc is not None and ufunc.nout == 1:  # NumPy's own error, class and message
            ufunc(*[_np.zeros((), dtype)] * ufunc.nin, out=_np.empty((), target.dtype))
        raise TypeError(f"Cannot cast ufunc output from dtype {dtype} to {target.dtype} "
                        f"with casting rule 'same_kind' (as NumPy)")
    if dtype != target.dtype and isinstance(function, _np.ufunc):
        return stored_as(result, target.dtype, function.__name__)
    return result


def _fresh(answer, made_from=None):
    """An untraced answer computed from a buffer under a trace, in new memory: a buffer too,
    so ``r = np.zeros(n) + 1.0; r[0] = x`` takes the write as ``np.ones(n)`` would. (An
    answer that is a view stays a plain array: a traced write into it is refused clearly,
    since it could not reach the buffer it views. Given the memory ``made_from``, a view
    of other memory is new memory.)"""
    if not live_trace_ids.transforming:
        return answer
    if type(answer) is _np.ndarray and (answer.base is None or made_from is not None
                                        and not _np.may_share_memory(answer, made_from)):
        return Buffer.holding(answer)
    if isbox(answer) and answer._node.on_buffer_answer is not None:
        # a staged value (chainrule.jit) that eager evaluation holds as a buffer: the
        # staging trace notes it, and a traced write into it is taken as eagerly
        plain = _tracer.getval(answer)
        if type(plain) is _np.ndarray and plain.base is None:
            answer._node.on_buffer_answer(answer)
    return answer


def _notrace_answer(answer):
    """A notrace function's answer computed from traced arrays (``np.floor(x)``,
    ``np.sign(x)``): a float array in new memory is a buffer, as ``_fresh`` makes, so that
    a later traced write into it (``y += t``) takes as it does eagerly. Masks and indices
    stay NumPy's arrays (no traced value can be written into them)."""
    if type(answer) is _np.ndarray and answer.dtype.kind in "fc":
        return _fresh(answer)
    return answer


def _binary(op):
    return (lambda self, other: _fresh(op(self._value(), _value_of(other))),
            lambda self, other: _fresh(op(_value_of(other), self._value())))


for _name, _op in [("add", _operator.add), ("sub", _operator.sub), ("mul", _operator.mul),
                   ("truediv", _operator.truediv), ("floordiv", _operator.floordiv),
                   ("mod", _operator.mod), ("pow", _operator.pow), ("matmul", _operator.matmul),
                   ("and", _operator.and_), ("or", _operator.or_), ("xor", _operator.xor)]:
    _forward, _reflected = _binary(_op)
    setattr(Buffer, f"__{_name}__", _forward)
    setattr(Buffer, f"__r{_name}__", _reflected)
for _name, _op in [("eq", _operator.eq), ("ne", _operator.ne), ("lt", _operator.lt),
                   ("le", _operator.le), ("gt", _operator.gt), ("ge", _operator.ge)]:
    setattr(Buffer, f"__{_name}__", _binary(_op)[0])
for _name, _op in [("neg", _operator.neg), ("pos", _operator.pos), ("abs", abs),
                   ("invert", _operator.invert)]:
    setattr(Buffer, f"__{_name}__", lambda self, _op=_op: _fresh(_op(self._value())))
for _name, _op in [("float", float), ("int", int), ("complex", complex), ("bool", bool),
                   ("index", _operator.index)]:
    setattr(Buffer, f"__{_name}__", lambda self, _op=_op: _op(self._value()))
Buffer.__hash__ = None  # as ndarray's: mutable


# ----------------------------------------------------------------------------- writes by function
# Into a buffer or a traced array (ArrayBox, whose writes rebind it), with a traced value
# among the arguments, these are traced writes; otherwise NumPy's own functions.
def _writes_traced(target, *values) -> bool:
    if type(target) is not Buffer and not isbox(target):
        return False
    return any(_is_traced(v) for v in (target, *values))


def copyto(dst, src, casting="same_kind", where=True):
    """``numpy.copyto``."""
    if not _writes_traced(dst, src, where):
        return _np.copyto(_value_of(dst), _value_of(src), casting=casting, where=_value_of(where))
    src_dtype = _np.result_type(_tracer.getval(_value_of(src)))
    if not _np.can_cast(src_dtype, _np.result_type(_tracer.getval(_value_of(dst))), casting):
        raise TypeError(f"Cannot cast array data from {src_dtype!r} to {dst.dtype!r} "
                        f"according to the rule {casting!r} (as numpy.copyto)")
    new = _value_of(src) if where is True else anp.where(_value_of(where), _value_of(src),
                                                           _value_of(dst))
    dst[...] = new


def fill_diagonal(a, val, wrap=False):
    """``numpy.fill_diagonal``: the main diagonal's positions (of a 2-D array, with
    ``wrap`` for tall ones; of an n-D array of equal sides) take ``val``, repeated."""
    if not _writes_traced(a, val):
        return _np.fill_diagonal(_value_of(a), _value_of(val), wrap)
    shape = a.shape
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) > 2 and len(set(shape)) > 1:
        raise ValueError("All dimensions of input must be of equal length")
    # consecutive diagonal elements lie one step along every axis apart in C order
    step = 1 + sum(int(_np.prod(shape[k + 1:])) for k in range(len(shape) - 1))
    stop = a.size if wrap or len(shape) > 2 else shape[1] * shape[1]
    write_flat(a, _np.arange(a.size)[:stop:step], _value_of(val))


def place(arr, mask, vals):
    """``numpy.place``: the positions where ``mask`` is true take ``vals`` in order,
    repeated where it has fewer."""
    if not _writes_traced(arr, vals, mask):
        return _np.place(_value_of(arr), _value_of(mask), _value_of(vals))
    if _np.size(_tracer.getval(_value_of(mask))) != arr.size:  # (NumPy's checks, its order)
        raise ValueError("place: mask and data must be the same size")
    _cast_checked(_np.place, arr.dtype, vals)
    positions = _np.flatnonzero(_np.asarray(_value_of(mask)))  # (under jit: a guarded read)
    if positions.size and not _np.size(_tracer.getval(_value_of(vals))):
        raise ValueError("Cannot insert from an empty array!")
    write_flat(arr, positions, _value_of(vals))


def put_along_axis(arr, indices, values, axis):
    """``numpy.put_along_axis``: ``arr`` at ``indices`` along ``axis`` (the other axes
    matched position by position, as take_along_axis reads) takes ``values``, broadcast."""
    if not _writes_traced(arr, values):
        return _np.put_along_axis(_value_of(arr), indices, _value_of(values), axis)
    indices = _np.asarray(_value_of(indices))  # (under jit: a guarded read)
    if axis is None:
        return write_flat(arr, _np.arange(arr.size)[indices.ravel()], _value_of(values))
    shape = arr.shape
    axis = axis % len(shape)
    index = tuple(indices if k == axis else
                  _np.arange(shape[k]).reshape([-1 if j == k else 1 for j in range(len(shape))])
                  for k in range(len(shape)))
    arr[index] = _value_of(values)


def put(a, ind, v, mode="raise"):
    """``numpy.put``: ``a.flat[ind] = v``, ``v`` repeated to the indices' count, the
    indices checked (``'raise'``), wrapped or clipped as NumPy's ``mode`` says."""
    if not _writes_traced(a, v):
        return _np.put(_value_of(a), ind, _value_of(v), mode=mode)
    size = a.size
    ind = _np.asarray(_value_of(ind), dtype=_np.intp).ravel()
    if mode == "wrap" and size:
        ind = ind % size
    elif mode == "clip":
        ind = _np.clip(ind, 0, size - 1)
    elif mode != "raise":
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    write_flat(a, _np.arange(size)[ind], _value_of(v))  # (out of range: NumPy's IndexError)


def putmask(a, mask, values):
    """``numpy.putmask``: where ``mask``, ``a`` takes ``values``: the value at the same
    C-order position, ``values`` repeated cyclically when it has fewer (NumPy's rule, not
    broadcasting: ``values`` of shape (2, 1) into (2, 3) alternates along each row)."""
    if not _writes_traced(a, values, mask):  # (jit traces masks: x > 0 is one)
        return _np.putmask(_value_of(a), _value_of(mask), _value_of(values))
    mask = _value_of(mask)
    if _np.size(_tracer.getval(mask)) != a.size:  # (its size: NumPy reads it in C order)
        raise ValueError("putmask: mask and data must be the same size")
    _cast_checked(_np.putmask, a.dtype, values)
    taken = repeated(_value_of(values), a.size)
    if taken is not None:
        a[...] = anp.where(anp.reshape(mask, a.shape), anp.reshape(taken, a.shape),
                           _value_of(a))


def _cast_checked(write, dtype, values) -> None:
    """NumPy's own cast check of ``write`` (``putmask``, ``place``: 'safe' for an array of
    values, none for a scalar) for ``values`` into an array of ``dtype``, on stand-ins."""
    plain = _np.asarray(_tracer.getval(_value_of(values)))
    write(_np.zeros(1, dtype), _np.zeros(1, bool),
          _np.zeros(1, plain.dtype) if plain.ndim else plain.dtype.type(0))


def _ufunc_at(ufunc, a, indices, b=None):
    """``np.add.at`` / ``np.subtract.at`` of chainrule.numpy (whose add is a primitive)."""
    if type(a) is Buffer:
        return a._ufunc_at(ufunc, indices, b)
    if isbox(a) and ufunc in (_np.add, _np.subtract):
        a[...] = anp.index_add(a, indices, b if ufunc is _np.add else anp.negative(b))
        return None
    return ufunc.at(a, indices, *(() if b is None else (b,)))


# ----------------------------------------------------------------------------- views by function
def view_of_buffer(f_wrapped, args, kwargs):
    """A view function (``tracer.view_makers``: np.transpose, reshape, split ...) called on
    a buffer ``args[0]``: a view of it where NumPy's answer is one (a list of views:
    ``np.split``), which sees later writes into the buffer and takes writes through it, as
    the methods' (``a.T``); the buffer itself where NumPy answers its array
    (``np.asarray(a)``); ``np.real``/``np.imag``: the attribute, as NumPy's."""
    buffer = args[0]
    part = _PARTS.get(f_wrapped)
    if part is not None:
        return getattr(buffer, part)
    rest = _value_of(args[1:])
    kwargs = {key: _value_of(value) for key, value in kwargs.items()}
    return buffer._derived(lambda value: f_wrapped.records(value, *rest, **kwargs))


_PARTS = {anp.real: "real", anp.imag: "imag"}


# ----------------------------------------------------------------------------- constructors
# Outside every transform a constructor is NumPy's own after one flag
# (``live_trace_ids.transforming``): the untraced cost the benchmark
# (benchmarks/bench_fill.py) measures. The commonest ones spell NumPy's parameters out and
# pass NumPy only those given, since packing arguments, keyword-only parameters and passing
# the defaults NumPy would fill in itself cost more than allocating a small array.
def _held(ans):
    return Buffer.holding(ans) if type(ans) is _np.ndarray else ans


def _held_copy(ans):
    """``np.array(x)`` / ``np.copy(x)``: of a traced x (new memory), a buffer holding it, so
    that a view taken from the copy sees later writes into it, as NumPy's would."""
    if isbox(ans) and type(_tracer.getval(ans)) is _np.ndarray:
        held = Buffer.holding(_tracer.getval(ans).copy())
        held._memory.traced = ans
        return held
    return _held(ans)


def _allocating(raw):
    """``zeros``, ``ones``, ``empty``: NumPy's ``raw``, answering buffers under a trace."""

    @functools.wraps(raw)
    def constructor(shape, dtype=None, order="C", device=None, like=None):
        # (NumPy's keyword-only device and like are plain parameters here: keyword-only
        # ones, or **kwargs, make every call of a Python function dearer than zeros(10))
        if not live_trace_ids.transforming and device is None and like is None:
            return raw(shape) if dtype is None and order == "C" else raw(shape, dtype, order)
        ans = raw(shape, dtype, order, device=device, like=like)
        return _held(ans) if live_trace_ids.transforming else ans

    return constructor


def _alike(make, raw):
    """The ``*_like`` family (no fill value): NumPy's ``raw`` on a plain prototype outside a
    trace, chainrule.numpy's ``make`` otherwise, answering buffers under a trace."""

    @functools.wraps(raw)
    def constructor(prototype, dtype=None, order="K", subok=True, shape=None, **kwargs):
        if not live_trace_ids.transforming and type(prototype) is _np.ndarray:
            return raw(prototype, dtype, order, subok, shape, **kwargs)
        # (NumPy's defaults left out: CuPy refuses any subok, even NumPy's default True)
        if subok is not True:
            kwargs["subok"] = subok
        if shape is not None:
            kwargs["shape"] = shape
        ans = make(_value_of(prototype), dtype, order, **kwargs)
        return _held(ans) if live_trace_ids.transforming else ans

    return constructor


def _buffered(make, raw, copying: bool = False):
    """Any other constructor: ``make`` (chainrule.numpy's), answering buffers under a trace;
    NumPy's ``raw`` outside a trace on plain arguments."""

    @functools.wraps(make)
    def constructor(*args, **kwargs):
        if not live_trace_ids.transforming:
            if not args or type(args[0]) in _PLAIN:
                return raw(*args, **kwargs)
            return make(*args, **kwargs)
        if args and _answers_its_argument(raw, args, kwargs):
            return args[0]  # np.asarray(a): a itself, which sees a's later writes
        ans = make(*_value_of(args), **{k: _value_of(v) for k, v in kwargs.items()})
        return _held_copy(ans) if copying else _held(ans)

    return constructor


def _answers_its_argument(raw, args, kwargs) -> bool:
    """Whether NumPy's ``raw`` (``asarray``, ``array(copy=False)``, ...) answers the array
    the buffer ``args[0]`` holds itself rather than new memory."""
    if type(args[0]) is not Buffer:
        return False
    plain = args[0]._plain
    try:
        return raw(plain, *_value_of(args[1:]), **kwargs) is plain
    except (TypeError, ValueError):
        return False


_PLAIN = frozenset([_np.ndarray, int, float, tuple])  # a plain array, a size or a shape
_ALLOCATING = ("zeros", "ones", "empty")
_ALIKE = ("zeros_like", "ones_like", "empty_like")
_OTHERS = ("full", "eye", "identity", "arange", "linspace", "full_like", "array", "asarray",
           "copy")
# those whose answer is new memory even where it holds a traced value (np.full(n, s) of a
# traced s): a buffer holding it, which takes writes and out= as np.zeros(n) does
_NEW_MEMORY = ("array", "copy", "full", "full_like")


def _wrapped_constructors(namespace: dict) -> dict:
    return {**{name: _allocating(getattr(_np, name)) for name in _ALLOCATING},
            **{name: _alike(namespace[name], getattr(_np, name)) for name in _ALIKE},
            **{name: _buffered(namespace[name], getattr(_np, name), name in _NEW_MEMORY)
               for name in _OTHERS}}


def install(namespace: dict) -> None:
    """Put the constructors and write functions over chainrule.numpy's ``namespace``, and
    send NumPy's own (``np.zeros_like(x)`` of a traced ``x``) to them."""
    constructors = _wrapped_constructors(namespace)
    writes = {"copyto": copyto, "put": put, "putmask": putmask, "fill_diagonal": fill_diagonal,
              "place": place, "put_along_axis": put_along_axis}
    own = {**constructors, **writes}
    for name, function in own.items():
        namespace[name] = function
        _FUNCTIONS[getattr(_np, name)] = function
    for name, function in writes.items():  # (met on a traced array: ArrayBox's dispatch)
        WRITES[getattr(_np, name)] = function
    # (NumPy's write functions called on other arrays, batched ones included, keep their
    # own handling: only a buffer among the arguments sends them here)
    for name, function in constructors.items():
        anp.raw_to_wrapped[getattr(_np, name)] = function
    # NumPy's view functions called on a buffer: chainrule.numpy's, which answer views
    for name in anp.VIEWING:
        if name not in own and namespace.get(name) is not getattr(_np, name, None):
            _FUNCTIONS[getattr(_np, name)] = namespace[name]
    for name, ufunc in (("add", _np.add), ("subtract", _np.subtract)):
        namespace[name].at = functools.partial(_ufunc_at, ufunc)
    global copy  # noqa: PLW0603 - Buffer.copy calls the namespace's
    copy = own["copy"]


_FUNCTIONS: dict = {}  # NumPy's function -> ours, for buffers met by __array_function__
copy = None  # set by install

register_front_end(Buffer, FrontEnd(unwrap=Buffer._value, value_of=Buffer._value,
                                    wrap=_fresh, as_output=_as_output, pytree_leaf=True))
register_view_maker(Buffer, view_of_buffer)
ArrayBox.on_notrace_answer = staticmethod(_notrace_answer)
