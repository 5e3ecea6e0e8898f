"""BatchedArray: the value of a whole batch inside ``chainrule.vmap``, and the dispatch of
primitives to their batching rules.

A BatchedArray stands for one example of the mapped function (its ``shape``, ``ndim``,
``len`` are an example's) and holds the whole batch, the batch as its leading axis. Like a
box, it belongs to a trace (one per vmap call, a ``BatchTrace``): a primitive called with
one of the newest trace is answered by the primitive's batching rule (its rule-table
entry's ``batch`` column) in one call for the whole batch, or, without a rule, once per
example. Boxes of newer traces (a ``grad`` inside the ``vmap``) record first and hand it
on, so every transform composes with vmap in any order.

A batch held as a plain NumPy array is the examples' memory: an in-place write (``y +=
1``, ``y[i] = v``, ``y.fill(s)``, ``out=y``) goes into it, so aliases and views of ``y``
see the write as they would in the Python loop.

Two signals go back to vmap. A Python decision on a batched value (``if x > 0:``) is taken
for the batch when every example agrees; otherwise ``BatchSplit`` tells vmap to run the
function per group of agreeing examples. What cannot run on the batch (``np.asarray(x)``,
a batched value written into a plain NumPy array, a NumPy function chainrule does not
wrap) raises ``BatchUnsupported``, and vmap runs the function once per example. A signal
is also kept on its trace, so a mapped function that catches it (or NumPy, which turns
some into other errors) cannot go on with a made-up value: vmap reads it when the
function returns or raises.
"""

from __future__ import annotations

import inspect
import operator
import struct
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as _np

from .._core import reverse, tracer
from .._core.containers import SequenceBox
from .._core.pytree import tree_flatten, tree_unflatten
from .._core.rule_table import rule_table
from .._core.tracer import (
    LeakedTracerError,
    front_ends,
    register_batched_type,
    register_view_maker,
)
from .._core.vspace import VSpace, vspace
from . import numpy_wrapper as anp
from ._namespace import raw_to_wrapped, ufunc_of
from .numpy_boxes import ArrayBox, _as_view, array_getitem, view_of_traced
from .numpy_vspaces import ArrayVSpace
from .placement import constant_like


# The two signals to vmap are BaseExceptions, as GeneratorExit is: a mapped function's own
# ``except Exception:`` (around ``float(x)``, say) should not catch them; and the trace
# keeps the first one in case something does.
class BatchSplit(BaseException):
    """The examples of a batch disagree on a Python decision: ``keys[i]`` (an integer
    array) is example i's."""

    def __init__(self, trace_id: int, keys):
        super().__init__("vmap: examples disagree on a Python decision")
        self.trace_id, self.keys = trace_id, keys


class BatchUnsupported(BaseException):
    """Something the mapped function does cannot run on the whole batch at once."""

    def __init__(self, trace_id: int, what: str):
        super().__init__(what)
        self.trace_id, self.what = trace_id, what


class BatchLoopWarning(UserWarning):
    """A primitive without a batching rule runs once per example under vmap."""


# BatchUnsupported's ``what`` when a batched run passed its deadline (not a construct)
OUT_OF_TIME = "a batched run that took longer than the examples left would one by one"


class BatchTrace:
    """What the batched values of one vmap call share: the trace id, the batch size, the
    first signal raised on them, ``quiet`` for chainrule's own batching (no warnings), and
    ``deadline`` (a ``time.perf_counter`` reading, or None): a primitive (or, where it
    has no batching rule, its run for one example) that starts after it stops the run
    (BatchUnsupported OUT_OF_TIME), so that vmap can bound its cost."""

    __slots__ = ("id", "size", "signal", "quiet", "deadline")

    def __init__(self, size: int, quiet: bool = False, deadline: float | None = None):
        self.id, self.size, self.signal, self.quiet = tracer.new_trace_id(), size, None, quiet
        self.deadline = deadline

    def signalled(self, signal: BaseException) -> BaseException:
        if self.id not in tracer.live_trace_ids:  # (not a run's signal: nothing catches it)
            raise LeakedTracerError(
                f"vmap: a batched value of a mapped call that has returned was used ({signal}"
                f"): it stands for the examples of that call only. Return the value from the "
                f"mapped function instead of keeping it outside the function.")
        if self.signal is None:
            self.signal = signal
        return signal

    def split(self, keys) -> BatchSplit:
        return self.signalled(BatchSplit(self.id, keys))

    def unsupported(self, what: str) -> BatchUnsupported:
        return self.signalled(BatchUnsupported(self.id, what))

    def check_time(self) -> None:
        """Stop the run (BatchUnsupported OUT_OF_TIME) where it is past its deadline."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise self.unsupported(OUT_OF_TIME)


def _answers(examples, convert: Callable):
    """``convert`` of each example (or the error it raised), and one code per example: equal
    codes for answers that are the same to the bit (0.0 and -0.0 differ, every nan matches
    itself), or errors of one class and message."""
    if (convert is bool and type(examples) is _np.ndarray and examples.ndim == 1
            and examples.dtype.kind in "biufc"):  # if x > 0: one NumPy call for the batch
        truth = examples.astype(bool)
        return [bool(truth[0])], truth != truth[0]
    if type(examples) is _np.ndarray and examples.ndim == 1 and len(examples) and (
            convert in (int, operator.index) and examples.dtype.kind in "iu"
            or convert is float and examples.dtype == _np.float64):
        # k = int(np.argmax(x)), t = float(x[0]): equal values (floats: to the bit) answer
        # alike, so the values serve as codes, less the first (wrapping around: a bijection)
        bits = examples if examples.dtype.kind in "iu" else examples.view(_np.int64)
        return [convert(examples[0])], bits - bits[0]
    answers = []
    for example in examples:
        try:
            answers.append(convert(example))
        except Exception as error:  # noqa: BLE001  (int(nan) for some examples only)
            answers.append(error)
    codes: dict = {}
    return answers, _np.array([codes.setdefault(_exactly(a), len(codes)) for a in answers])


def _agreed(answer):
    """The answer every example gave (an error each raised alike is raised)."""
    if isinstance(answer, Exception):
        raise answer
    return answer


def _exactly(answer):
    if isinstance(answer, Exception):
        return type(answer), str(answer)
    if type(answer) is float:
        return struct.pack("<d", answer)
    if type(answer) is complex:
        return struct.pack("<dd", answer.real, answer.imag)
    return answer


# Operand types that hold no traced value: an operator of a batched value and one of these
# has nothing to record on another trace first.
_PLAIN_OPERANDS = frozenset({float, int, bool, complex, _np.ndarray, _np.float64, _np.float32,
                             _np.int64, _np.int32, _np.bool_, _np.complex128})


def _operator(fun: Callable, ufunc: _np.ufunc | None = None, reflected: bool = False):
    """A binary operator of BatchedArray: ``fun``'s batching rule at once where the other
    operand is plain or of the same batch; otherwise the primitive (or, for a comparison,
    NumPy's ufunc protocol: ``ufunc``), which finds the newest trace."""

    def operator_(self, other):
        if type(other) in _PLAIN_OPERANDS or (type(other) is BatchedArray
                                              and other._trace is self._trace):
            if self._trace_id not in tracer.live_trace_ids:
                raise tracer.leaked_error(self)
            return batch_call(fun, (other, self) if reflected else (self, other), {},
                              self._trace_id)
        if ufunc is not None:
            return self.__array_ufunc__(ufunc, "__call__", self, other)
        return fun(other, self) if reflected else fun(self, other)
    return operator_


def _is_plain_index(index) -> bool:
    """Is ``index`` made of ints and slices only (no array, no traced value)?"""
    if type(index) is tuple:
        return all(type(part) in _PLAIN_INDEX_PARTS for part in index)
    return type(index) in _PLAIN_INDEX_PARTS


_PLAIN_INDEX_PARTS = frozenset({int, slice, type(None), type(Ellipsis), _np.int64})


class BatchedArray(ArrayBox):
    """One example's view of a batch under vmap (see the module docstring)."""

    __slots__ = ("_trace",)

    def __init__(self, value, trace: BatchTrace):
        self._value, self._trace, self._trace_id, self._node = value, trace, trace.id, None

    @property
    def _size(self) -> int:
        return self._trace.size

    @property
    def shape(self):
        return _np.shape(self._value)[1:]

    @property
    def ndim(self):
        return _np.ndim(self._value) - 1

    @property
    def size(self):
        return int(_np.prod(self.shape))

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    def __repr__(self) -> str:
        ended = "" if self._trace_id in tracer.live_trace_ids else ", ended"
        return (f"BatchedArray(shape={self.shape} per example, batch of {self._size}, "
                f"trace={self._trace_id}{ended})")

    def _check_live(self) -> None:
        if self._trace_id not in tracer.live_trace_ids:
            raise LeakedTracerError(
                f"{self!r} was used after its vmap call returned: it stands for the examples "
                f"of that call only. Return the value from the mapped function (or store "
                f"chainrule.stop_gradient of what vmap returned) instead of keeping it.")

    def _unsupported(self, what: str) -> BatchUnsupported:
        self._check_live()
        return self._trace.unsupported(what)

    # ------------------------------------------------------------------ decisions
    def _decide(self, convert: Callable) -> Any:
        """``convert`` of each example: their common answer, or a signal. A value batched
        by outer vmaps too is decided for all their examples at once: where the answers
        vary along one vmap's examples only, that vmap splits; along several, the
        outermost of them runs its examples one by one (each then splits as it needs)."""
        self._check_live()
        if type(self._value) is _np.ndarray and self._size:  # (batched by this vmap only)
            if convert is bool and self._value.dtype == _np.bool_ and self._value.ndim == 1:
                true = _np.count_nonzero(self._value)  # (if x > 0: one C call when they agree)
                if true == len(self._value) or not true:
                    return bool(true)
            answers, codes = _answers(self._value, convert)
            if codes.any():
                raise self._trace.split(codes)
            return _agreed(answers[0])
        traces, plain = [], self
        while True:
            if type(plain) is BatchedArray:
                traces.append(plain._trace)
                plain = plain._value
            elif tracer.isbox(plain) and plain._node.on_decision is None:
                plain = plain._value  # an older trace's box: a decision has no derivative
            else:
                break
        traces.reverse()  # outermost first, as the leading axes of plain
        empty = next((t for t in traces if not t.size), None)
        if empty is not None:
            raise empty.unsupported("a Python decision on the values of an empty batch")
        if tracer.isbox(plain):  # staged by jit: each example decides by jit's rules
            examples = [self._value[i] for i in range(self._size)]
            answers, codes = _answers(examples, convert)
            if codes.any():
                raise self._trace.split(codes)
            return _agreed(answers[0])
        batch_shape = _np.shape(plain)[:len(traces)]
        answers, codes = _answers(_np.reshape(plain, (-1,) + _np.shape(plain)[len(traces):]),
                                  convert)
        if not codes.any():
            return _agreed(answers[0])
        codes = codes.reshape(batch_shape)
        varying = [k for k in range(len(traces))
                   if (codes != codes.take([0], axis=k)).any()]
        if len(varying) > 1:
            raise traces[varying[0]].unsupported(
                "a Python decision that differs along the examples of nested vmaps")
        k = varying[0]
        keys = codes[(0,) * k + (slice(None),) + (0,) * (len(traces) - k - 1)]
        raise traces[k].split(keys.copy())

    def __bool__(self):
        return self._decide(bool)

    def __int__(self):
        return self._decide(int)

    def __float__(self):
        return self._decide(float)

    def __complex__(self):
        return self._decide(complex)

    def __index__(self):
        return self._decide(operator.index)

    def item(self, *args):
        return self._decide(lambda example: example.item(*args))

    def tolist(self):
        return [self[i] for i in range(len(self))] if self.ndim else self

    # The loop makes each example's text (print(x), f"{x}", "%s" % x, str(x) == "0.1"): the
    # whole function runs per example. (repr stays the box's: error messages use it.)
    def __str__(self) -> str:
        raise self._unsupported("the text of a batched value (str(x), print(x), f'{x}')")

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        raise self._unsupported(f"formatting a batched value (f'{{x:{spec}}}')")

    def __array__(self, dtype=None, copy=None):
        raise self._unsupported("a batched value converted to a NumPy array")

    # Arithmetic and comparisons: straight to the batching dispatch where the other operand
    # is plain or of this batch (no newer trace's box, which would record first), without
    # the primitive's search for the newest trace and NumPy's dispatch.
    __add__, __radd__ = _operator(anp.add), _operator(anp.add, reflected=True)
    __sub__, __rsub__ = _operator(anp.subtract), _operator(anp.subtract, reflected=True)
    __mul__, __rmul__ = _operator(anp.multiply), _operator(anp.multiply, reflected=True)
    __truediv__ = _operator(anp.true_divide)
    __rtruediv__ = _operator(anp.true_divide, reflected=True)
    __pow__, __rpow__ = _operator(anp.power), _operator(anp.power, reflected=True)
    __eq__, __ne__ = _operator(anp.equal, _np.equal), _operator(anp.not_equal, _np.not_equal)
    __gt__, __ge__ = _operator(anp.greater, _np.greater), _operator(anp.greater_equal,
                                                                    _np.greater_equal)
    __lt__, __le__ = _operator(anp.less, _np.less), _operator(anp.less_equal, _np.less_equal)
    __hash__ = ArrayBox.__hash__

    def __getitem__(self, index):
        if tracer.isbox(index):
            index = tracer.decided(index, tracer.getval)  # an index has no derivative
        if _is_plain_index(index):  # (no other trace's value in it: straight to the batch)
            if self._trace_id not in tracer.live_trace_ids:
                raise tracer.leaked_error(self)
            if type(self._value) is _np.ndarray:
                try:  # (the rule's answer, without its dispatch: x[i] in a loop of x[i])
                    entries = self._value[batch_index(index)]
                    if entries.ndim == 1 and scalar_index(index):
                        entries = entries.copy()  # (see scalar_index)
                    return BatchedArray(entries, self._trace)
                except Exception:  # noqa: BLE001  (the rule's path makes it a signal)
                    pass
            result = batch_call(array_getitem, (self, index), {}, self._trace_id)
        else:
            result = array_getitem(self, index)
        if type(self._value) is not _np.ndarray:  # (a plain batch's views share its memory)
            _as_view(result, self, array_getitem, index)  # (taken again after a write)
        return result

    def __getattr__(self, name: str):
        if not name.startswith("_") and hasattr(_np.ndarray, name):
            # an ndarray method chainrule does not have (x.sort(), x.resize(...)): the
            # loop's examples are NumPy arrays, which have it
            raise self._unsupported(f"x.{name}")
        raise AttributeError(f"'BatchedArray' object has no attribute '{name}'")

    # ------------------------------------------------------------------ in-place writes
    def _inplace(self, op, other, symbol: str, caller):
        if not self.shape:
            return op(self, other)  # an example with no axes is a NumPy scalar: immutable
        new = op(self, other)
        if (type(new) is not BatchedArray or new._trace is not self._trace
                or new.shape != self.shape
                or not _np.can_cast(new.dtype, self.dtype, "same_kind")):
            # another transform's value written in, or NumPy's refusal: the loop shows which
            raise self._unsupported(f"x {symbol} y on a batched x")
        self._write(Ellipsis, new, f"x {symbol} y")
        return self

    def __setitem__(self, index, value):
        self._write(index, value, "x[i] = v")

    def fill(self, value):
        if type(self._value) is _np.ndarray and not _holds_traced(value):
            self._value.fill(value)  # NumPy's own fill, of every example at once
        elif _np.ndim(value):
            raise self._unsupported("x.fill(v) with an array v")
        else:
            self._write(Ellipsis, value, "x.fill(v)")

    def _write(self, index, value, what: str) -> None:
        """``self[index] = value`` for every example: into the batch's memory when it is
        plain arrays (aliases and views see it, as in the loop); as a functional update when
        it is an older trace's value (grad's rules for in-place writes)."""
        self._check_live()
        if tracer.isbox(index):
            index = tracer.decided(index, tracer.getval)  # an index has no derivative
        if type(self._value) is _np.ndarray:
            self._write_into_memory(index, value, what)
            return
        memory = _memory_of(self)
        if memory is None and getattr(self, "_view_of", None) is not None:
            raise self._trace.unsupported(f"{what} through a view of another array")
        new = anp.index_update(self, index, value)  # (the batching rules align every batch)
        if type(new) is not BatchedArray or new._trace is not self._trace:
            raise self._trace.unsupported(f"{what} with another transform's value")
        if memory is None:
            self._rebind(new)  # (its views taken before see the write, as NumPy's do)
            return
        new_memory = _memory_of(new)  # batched by outer vmaps too: their examples' memory
        if type(new_memory) is not _np.ndarray or new_memory.shape != memory.shape:
            raise self._trace.unsupported(f"{what} into a batch of several vmaps")
        try:
            memory[...] = new_memory
        except Exception:  # noqa: BLE001  (NumPy's refusal: the loop raises it per example)
            raise self._trace.unsupported(f"{what} refused by NumPy") from None

    def _write_into_memory(self, index, value, what: str) -> None:
        if _holds_batched(index, self._trace_id):
            if not _is_example_mask(index, self):
                raise self._trace.unsupported(f"{what} at an index that differs per example")
            where = index._value
        else:
            where = batch_index(index)
        if where is None:
            raise self._trace.unsupported(f"{what} at separated advanced indices")
        if type(value) is BatchedArray and value._trace is self._trace:
            if type(value._value) is not _np.ndarray:
                raise self._trace.unsupported(f"{what} with another transform's value")
            target_ndim = _np.ndim(self._value[where])
            missing = target_ndim - _np.ndim(value._value)
            if missing < 0 or type(where) is not tuple and where is not Ellipsis:
                raise self._trace.unsupported(f"{what}: v has more axes than x[i]")
            value = _np.expand_dims(value._value, tuple(range(1, 1 + missing)))
        elif _holds_traced(value):
            raise self._trace.unsupported(f"{what} with another transform's value")
        try:
            self._value[where] = value
        except Exception:  # noqa: BLE001  (NumPy's refusal: the loop raises it per example)
            raise self._trace.unsupported(f"{what} refused by NumPy") from None

    # ------------------------------------------------------------------ NumPy's protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        newest = _newest(inputs)  # (NumPy asks the first batched operand, maybe an older one)
        if newest is not self:
            if type(newest) is BatchedArray:
                return newest.__array_ufunc__(ufunc, method, *inputs, **kwargs)
            wrapped = raw_to_wrapped.get(ufunc)
            if method == "__call__" and wrapped is not None:
                return wrapped(*inputs, **kwargs)  # a newer trace's box: it records first
            return newest.__array_ufunc__(ufunc, method, *inputs, **kwargs)
        name = f"numpy.{ufunc.__name__}"
        if method == "at":
            raise self._unsupported(f"{name}.at writing into an array")
        out = kwargs.pop("out", None)
        where = True
        if out is not None:
            _check_outputs(self._trace, out, f"{name}(..., out=)")
            where = kwargs.pop("where", True) if method == "__call__" else True
        if method != "__call__":
            answer = batch_call(_per_example(ufunc, method), inputs, kwargs, self._trace_id)
        else:
            answer = batch_call(raw_to_wrapped.get(ufunc, ufunc), inputs, kwargs,
                                self._trace_id)
        return answer if out is None else _written(out, answer, f"{name}(..., out=)", where)

    def __array_function__(self, func, types, args, kwargs):
        if func in _ABOUT_AN_EXAMPLE:
            return func(*[_stand_in(a) for a in args], **kwargs)
        wrapped = raw_to_wrapped.get(func)
        newest = _newest(args)
        if newest is not self:
            if type(newest) is BatchedArray or wrapped is None:
                return newest.__array_function__(func, types, args, kwargs)
            return wrapped(*args, **kwargs)  # a newer trace's box: it records first
        if wrapped is None:  # (copyto, put, putmask, place... write into their arguments)
            raise self._unsupported(f"numpy.{getattr(func, '__name__', func)}, which "
                                    f"chainrule.numpy does not provide")
        return batch_call(wrapped, args, kwargs, self._trace_id)


def _newest(args):
    """The argument (or item of a list or tuple argument) traced on the newest trace."""
    newest, trace_id = None, 0
    for arg in args:
        if type(arg) in (list, tuple):
            arg = _newest(arg)
        if type(arg) in tracer._traced_types and arg._trace_id > trace_id:
            newest, trace_id = arg, arg._trace_id
    return newest


def _check_outputs(trace: BatchTrace, out, what: str) -> None:
    """Only batched arrays of this trace can take a batch of answers (NumPy's ``out=``)."""
    outs = out if isinstance(out, tuple) else (out,)
    if not all(type(o) is BatchedArray and o._trace is trace for o in outs):
        raise trace.unsupported(f"{what} writing a batched value into a NumPy array (as "
                                f"a += x does, with a a NumPy array)")


def _written(out, answer, what: str, where=True):
    """``answer`` written into the output arrays ``out``, which are returned (as NumPy's
    ``out=`` does); ``where``: a ufunc's mask of the entries it writes (the others keep
    out's: the answer, computed without the mask, is whole)."""
    outs = out if isinstance(out, tuple) else (out,)
    answers = answer if isinstance(answer, tuple) else (answer,)
    for o, a in zip(outs, answers):
        if where is not True:
            a = anp.where(where, a, o)
        o._write(Ellipsis, a, what)
    return outs[0] if len(outs) == 1 else out


def _memory_of(batch: BatchedArray):
    """The plain array under a batch of one or more vmaps (their examples' memory), or
    None where an older trace's box is under it."""
    value = batch._value
    while type(value) is BatchedArray:
        value = value._value
    return value if type(value) is _np.ndarray else None


def _holds_batched(obj, trace_id: int) -> bool:
    if type(obj) is BatchedArray:
        return obj._trace_id == trace_id
    if type(obj) in (tuple, list):
        return any(_holds_batched(item, trace_id) for item in obj)
    return False


def _holds_traced(obj) -> bool:
    if type(obj) in tracer._traced_types:
        return True
    if type(obj) in (tuple, list):
        return any(_holds_traced(item) for item in obj)
    return type(obj) in front_ends


def _is_example_mask(index, target: BatchedArray) -> bool:
    """Is ``index`` a boolean mask of the example's shape (``x[x < 0] = 0``)?"""
    return (type(index) is BatchedArray and type(index._value) is _np.ndarray
            and index._value.dtype == _np.bool_ and index.shape == target.shape)


def _stand_in(arg):
    """An array with an example's shape and dtype (no memory of its own) in place of a
    batched value, for functions that read only those."""
    if type(arg) is BatchedArray:
        return _np.broadcast_to(_np.zeros((), arg.dtype), arg.shape)
    return arg


# Functions of an example's shape and dtype only: same for every example, so their
# answers are not batched (zeros_like(x) is a constant under vmap).
_ABOUT_AN_EXAMPLE = {_np.shape, _np.ndim, _np.size, _np.result_type, _np.iscomplexobj,
                     _np.isrealobj, _np.common_type, _np.zeros_like, _np.ones_like,
                     _np.empty_like, _np.tril_indices_from, _np.triu_indices_from,
                     _np.diag_indices_from}


def _per_example(ufunc, method: str) -> Callable:
    """``ufunc.method`` (reduce, accumulate, outer...), which has no batching rule."""

    def call(*args, **kwargs):
        return getattr(ufunc, method)(*args, **kwargs)
    call.__name__ = f"{ufunc.__name__}.{method}"
    return call


def _example_space(b: BatchedArray) -> VSpace:
    """The space of one example of ``b``: its values made in the batch's own array library
    (a seed of ones, zeros: CuPy refuses NumPy operands)."""
    if type(b._value) is _np.ndarray:
        return ArrayVSpace(_np.zeros(b.shape, b.dtype))
    return vspace(constant_like(_np.zeros(b.shape, b.dtype), b))


VSpace.register(BatchedArray, _example_space)


def batch_index(index):
    """``index`` of an example as an index of the batch, or None where NumPy would put
    the axes of separated advanced indices (ints count, next to arrays) first, before the
    batch axis."""
    index = index if isinstance(index, tuple) else (index,)
    if any(_is_advanced(part) for part in index):
        advanced = [i for i, part in enumerate(index)
                    if _is_advanced(part) or isinstance(part, (int, _np.integer))]
        if advanced[-1] - advanced[0] + 1 != len(advanced):
            return None
    return (slice(None),) + index


def scalar_index(index) -> bool:
    """Whether ``index``, picking an entry without axes from an example, answers NumPy's
    scalar (integers, no Ellipsis: ``x[...]`` and ``x[..., 1]`` of a 0-d answer are
    views). The batch's entries are then a copy, not a view of the batch's column, which a
    later write into x would change."""
    return index is not Ellipsis and not (
        type(index) is tuple and any(part is Ellipsis for part in index))


def _is_advanced(part) -> bool:
    return isinstance(part, (list, _np.ndarray)) or (
        hasattr(part, "shape") and not isinstance(part, (int, _np.integer)))


# --------------------------------------------------------------------------- dispatch
def batch_call(fun: Callable, args, kwargs, trace_id: int):
    """``fun(*args, **kwargs)`` where some arguments are BatchedArrays of trace
    ``trace_id`` (the newest among them): by ``fun``'s batching rule, else once per
    example."""
    values, batched, trace = [], [], None
    for arg in args:
        if type(arg) is BatchedArray and arg._trace_id == trace_id:
            values.append(arg._value)
            batched.append(True)
            trace = arg._trace
        else:
            values.append(arg)
            batched.append(False)
    if trace is not None:
        trace.check_time()
    out_at = getattr(fun, "out_position", None)
    if kwargs.get("out") is not None or (out_at is not None and len(args) > out_at
                                         and args[out_at] is not None):
        return _with_output_arrays(fun, args, kwargs, trace_id)
    if trace is None or kwargs and _trace_within(kwargs, trace_id) is not None:
        # batched values inside lists or given by keyword: rules read plain ones only
        trace = trace or _trace_within((args, kwargs), trace_id)
        rule = None
        why = "gets batched values inside a list or by keyword"
    else:
        rule = batching_rule(fun)
        why = "has no batching rule" if rule is None else \
            "has a batching rule that does not cover this call"
    try:
        ans = NotImplemented if rule is None else rule(values, tuple(batched), kwargs)
        if ans is NotImplemented:
            ans = _loop(fun, args, kwargs, trace, why)
    except Exception as error:
        # (some examples may fail where others do not, and the function may catch it, as
        # in try: cholesky(a) except LinAlgError: ...: the loop knows which take which path)
        raise trace.unsupported(f"{getattr(fun, '__name__', fun)} raising "
                                f"{type(error).__name__} on the batch") from error
    return _as_batched(ans, trace)


def _with_output_arrays(fun, args, kwargs, trace_id: int):
    """A primitive told to write into output arrays (``out=``, or its output position)."""
    args, kwargs = list(args), dict(kwargs)
    out = kwargs.pop("out", None)
    if out is None:
        out = tuple(args[fun.out_position:])
        del args[fun.out_position:]  # (ufuncs take nothing positionally after their outputs)
    what = f"{getattr(fun, '__name__', fun)}(..., out=)"
    _check_outputs(_trace_within((args, kwargs, out), trace_id), out, what)
    # (a ufunc's where= writes some entries; a reduction's reads some: its own)
    where = kwargs.pop("where", True) if ufunc_of(fun) is not None else True
    return _written(out, batch_call(fun, tuple(args), kwargs, trace_id), what, where)


register_batched_type(BatchedArray, batch_call)


def _snapshot(batch: BatchedArray) -> BatchedArray:
    """What a recorded node keeps of a batch among a call's constants: a copy of a
    writeable one, as of an example's array (numpy_vspaces' snapshot), which a later write
    into the batch (``f = np.floor(x); y = f * x; f[1] = 7``) would otherwise reach."""
    value = batch._value
    if type(value) is _np.ndarray and value.flags.writeable:
        return BatchedArray(value.copy(order="K"), batch._trace)
    return batch


reverse.snapshot_types[BatchedArray] = _snapshot
register_view_maker(BatchedArray, view_of_traced)  # (a batch's views are views too)


def _as_batched(ans, trace: BatchTrace):
    if type(ans) is _np.ndarray:
        return BatchedArray(ans, trace)
    if isinstance(ans, tuple):
        items = [_as_batched(a, trace) for a in ans]
        return type(ans)(*items) if hasattr(ans, "_fields") else type(ans)(items)
    if isinstance(ans, list):
        return [_as_batched(a, trace) for a in ans]
    if type(ans) is SequenceBox:  # (a traced tuple, as jit's of slogdet: batch each item)
        items = [_as_batched(a, trace) for a in ans]
        kind = type(ans._value)
        return kind(*items) if hasattr(kind, "_fields") else kind(items)
    front_end = front_ends.get(type(ans))
    if front_end is not None:  # a Tensor met as a constant answers with a Tensor
        ans = front_end.value_of(ans)
    return BatchedArray(ans, trace)


_warned: set = set()


def _loop(fun, args, kwargs, trace: BatchTrace, why: str):
    """``fun`` once per example, the answers stacked: the batching of last resort, for
    chainrule's primitives (which write into nothing they are given)."""
    name = getattr(fun, "__name__", repr(fun))
    if (name, why) not in _warned and not trace.quiet:
        _warned.add((name, why))
        warnings.warn(
            f"vmap: {name} {why}, so it runs once per example (as slow as a Python loop of "
            f"it). A rule can be given with chainrule.extend.defbatch.",
            BatchLoopWarning, stacklevel=4)
    if not trace.size:
        return _empty_answer(fun, args, kwargs, trace)
    answers = []
    for i in range(trace.size):
        trace.check_time()  # (a primitive run per example may cost most of the loop)
        example_args, example_kwargs = _example((args, kwargs), i, trace.id)
        answers.append(fun(*example_args, **example_kwargs))
    return stack_answers(answers, trace)


def _empty_answer(fun, args, kwargs, trace: BatchTrace):
    """``fun``'s answer for an empty batch: arrays of no examples, shaped and typed as
    ``fun``'s answer for a stand-in example of zeros."""
    example_args, example_kwargs = _example((args, kwargs), None, trace.id)
    with _np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        answer = fun(*example_args, **example_kwargs)
    leaves, treedef = tree_flatten(answer)
    return tree_unflatten(treedef, [
        _np.zeros((0,) + _np.shape(leaf), _np.result_type(tracer.getval(leaf)))
        for leaf in leaves])


def _example(obj, i: int | None, trace_id: int):
    """``obj`` (arguments, lists and dicts of them) with each batched value of the trace
    replaced by its example ``i`` (None: a stand-in example of zeros)."""
    if type(obj) is BatchedArray and obj._trace_id == trace_id:
        if i is None:
            return _np.zeros(obj.shape, obj.dtype)
        return obj._value[i]
    if type(obj) in (list, tuple):
        return type(obj)(_example(v, i, trace_id) for v in obj)
    if type(obj) is dict:
        return {k: _example(v, i, trace_id) for k, v in obj.items()}
    return obj


def _trace_within(obj, trace_id: int) -> BatchTrace | None:
    if type(obj) is BatchedArray and obj._trace_id == trace_id:
        return obj._trace
    items = obj.values() if type(obj) is dict else obj if type(obj) in (list, tuple) else ()
    for v in items:
        trace = _trace_within(v, trace_id)
        if trace is not None:
            return trace
    return None


def stack_answers(answers: list, trace: BatchTrace):
    """Per-example answers (arrays, or tuples/lists of them) stacked along a new axis 0."""
    first = answers[0]
    # (a tuple answer of a primitive recorded by an older trace, e.g. chainrule.jit's, is
    # a SequenceBox: its items are taken through it, so that trace records them)
    kind = type(tracer.getval(first))
    if issubclass(kind, (tuple, list)):
        parts = [stack_answers([a[j] for a in answers], trace) for j in range(len(first))]
        return kind(*parts) if hasattr(kind, "_fields") else kind(parts)
    shapes = {_np.shape(a) for a in answers}
    if len(shapes) > 1:
        raise trace.unsupported(f"answers of different shapes per example {shapes}")
    return anp.stack(answers)


# --------------------------------------------------------------------------- rules
def _raw_function(fun: Callable) -> Any:
    """The NumPy/SciPy function a chainrule one stands for (a ufunc for elementwise ones)."""
    return getattr(fun, "stands_for", None) or getattr(fun, "fun", fun)


def batching_rule(fun: Callable) -> Callable | None:
    """``fun``'s batching rule: its rule-table entry's, or the elementwise rule for a ufunc
    (every NumPy and SciPy ufunc batches the same way); None: it loops."""
    entry = rule_table.get(fun)
    if entry is not None and entry.batch is not None:
        return entry.batch
    rule = _elementwise_rules.get(fun)
    if rule is None and isinstance(_raw_function(fun), _np.ufunc):
        rule = _elementwise_rules[fun] = _elementwise_rule(fun)
    return rule


_elementwise_rules: dict = {}  # (made once per function)


def example_ndim(value, batched: bool) -> int:
    ndim = value.ndim if type(value) is _np.ndarray else None  # (np.ndim dispatches: slow)
    if batched:
        return (_np.ndim(value) if ndim is None else ndim) - 1
    if ndim is not None:
        return ndim
    return 0 if isinstance(value, (type, str, _np.dtype, float, int)) else _np.ndim(value)


def example_shape(value, batched: bool) -> tuple:
    return _np.shape(value)[1:] if batched else _np.shape(value)


def flat_examples(value):
    """A batch with each example flattened: shape (batch, example size). (Not reshape to
    (batch, -1), which an empty batch cannot do.)"""
    shape = _np.shape(value)
    return anp.reshape(value, (shape[0], int(_np.prod(shape[1:]))))


def aligned(values, batched) -> list:
    """Batched operands of a broadcasting function with their example axes padded on the
    left to a common rank, so the batch axis lines up; plain ones broadcast as they are."""
    if len(values) == 2 and type(values[1]) in (float, int) and batched[0]:
        return values  # (x * 2.0, the usual call: nothing to pad)
    rank = max(example_ndim(v, b) for v, b in zip(values, batched))
    out = []
    for v, b in zip(values, batched):
        missing = rank - example_ndim(v, b) if b else 0
        out.append(anp.expand_dims(v, tuple(range(1, 1 + missing))) if missing else v)
    return out


def _elementwise_rule(fun: Callable) -> Callable:
    raw = getattr(fun, "fun", fun)  # (what the primitive calls with plain operands)

    def elementwise(values, batched, kwargs):
        values = aligned(values, batched)
        if not kwargs and _PLAIN_OPERANDS.issuperset(map(type, values)):
            return raw(*values)  # (nothing to record: no box among them)
        return fun(*values, **kwargs)
    return elementwise


def elementwise(fun: Callable) -> Callable:
    """The batching rule of a function that broadcasts its operands elementwise."""
    return _elementwise_rule(fun)


def axis_parameter(fun: Callable) -> tuple[int, Any] | None:
    """(position, default) of ``fun``'s ``axis`` parameter, from NumPy's signature."""
    try:
        params = list(inspect.signature(_raw_function(fun)).parameters.values())
    except (TypeError, ValueError):
        return None
    for i, p in enumerate(params):
        if p.name == "axis":
            return i, p.default
    return None


# --------------------------------------------------------------------------- batched JVPs
def over_batch(fun: Callable, tree, size: int):
    """``fun(tree)`` for a whole batch in one call, through the batching rules: each leaf
    of ``tree`` (None aside) holds ``size`` values along its leading axis, and so does each
    leaf of the answer. None where that cannot run batched (the caller loops). Used by
    chainrule's own sweeps, so primitives that loop do not warn."""
    trace = BatchTrace(size, quiet=True)
    tracer.live_trace_ids.add(trace.id)
    try:
        leaves, treedef = tree_flatten(tree)
        batched = [leaf if leaf is None else BatchedArray(leaf, trace) for leaf in leaves]
        out_leaves, out_def = tree_flatten(fun(tree_unflatten(treedef, batched)))
        if trace.signal is not None:
            return None
        return tree_unflatten(out_def, [
            leaf._value if type(leaf) is BatchedArray and leaf._trace is trace
            else anp.broadcast_to(leaf, (size,) + _np.shape(leaf)) for leaf in out_leaves])
    except BaseException:
        if trace.signal is None:
            raise
        return None
    finally:
        tracer.live_trace_ids.discard(trace.id)


def jvp_over_batch(jvp, tangents, argnums, ans, args, kwargs, size: int):
    """A JVP rule applied to ``size`` tangents at once, or None (the ``over_batch`` of
    ``reverse.Recording.push_forward_batched``)."""
    return over_batch(lambda t: jvp(t, argnums, ans, args, kwargs), tangents, size)
