"""The staging trace: a node type that records every primitive call, and the guards.

``StagingNode`` is one more consumer of the tracing core (as ``ExplainNode`` is): it keeps
each call (primitive, arguments, keywords, which arguments are traced, parents). Because a
trace nested inside this one (``grad``, ``jvp``, ``checkpoint`` ...) passes boxes of older
traces through to a recursive call of the same primitive, the calls of their forward and
backward passes on values derived from the inputs are recorded here too.

Python decisions on staged values (``bool()``, ``int()``, ``float()``, an index, and the
answers of notrace primitives such as comparisons, masks included) are recorded
as *guards*: the emitted program checks them and answers ``MISS`` when one fails, and
the caller retraces.
"""

from __future__ import annotations

import itertools
import operator
import threading
import weakref
from typing import Any

import numpy as np

from .._core import tracer
from .._core.rule_table import PrimitiveRules, rule_table
from .._core.tracer import Node, isbox
from .._user_code.lines import storing_an_item
from ..numpy._namespace import ufunc_of
from . import _errstate
from ._notices import call_site

_creation = itertools.count()
_BOX_TYPES = tracer.Box.types  # (the registry's own set: later registrations count)


class _State(threading.local):
    session = None  # this thread's staging trace (see Session), or None


_state = _State()


class StagingError(TypeError):
    """A construct inside a jitted function that cannot be staged."""


class Guard:
    """A decision taken at trace time: ``convert(value of node) == expected``."""

    __slots__ = ("node", "convert", "expected", "seq")

    def __init__(self, node: StagingNode, convert, expected):
        self.node = node
        self.convert = convert
        self.expected = expected
        self.seq = next(_creation)


class Session:
    """What one staging trace records: its nodes in the order they were made, the guards,
    and why the record cannot be reused, if it cannot: the function closed over values of
    another (outer) trace, or a staged call or decision raised an exception (the function
    went on, so it caught it: the path it took depends on an exception the program would
    not raise the same way)."""

    def __init__(self, trace_id: int):
        self.trace_id = trace_id
        self.nodes = Record(self)
        self.guards: list[Guard] = []
        self.impure = ""  # the record answers no later call (a value of an outer trace)
        self.raised = ""  # a staged call raised: this record is not kept
        # a traced value was written into a plain NumPy array (a[i] = x) or made one
        # (np.asarray(x)): the program would depend on its value through the array, which no
        # call records (a guard holds it: later calls would trace again and again)
        self.fills = False
        # the function set NumPy's error state to raise or call out around a staged call
        # (np.errstate(over="raise") inside it): the program runs under the caller's state
        self.errstate = _errstate.context()
        self.errstate_acts = False
        # whether some calls were made under a state that acts otherwise than the caller's
        self.errstate_changed = False
        self.errstate_modes = _errstate.modes()
        # the staged values eager evaluation holds as chainrule.numpy's buffers (made new
        # under a derivative trace: they take traced writes; see ``_holds_buffer``)
        self.buffers: set[StagingNode] = set()

    def close(self) -> None:
        """Free the record. Its nodes refer to it (``StagingNode.record``) and it to them:
        emptied, the nodes are freed by reference counting as the trace ends, rather than
        by the cycle collector, which would scan them all when it resumes (the first
        call's tenth)."""
        if self.nodes is not None:
            self.nodes.clear()
        self.nodes = self.guards = None


def current() -> Session | None:
    return _state.session


def _on_decision(box, convert):
    session = current()
    ours = session is not None and box._trace_id == session.trace_id
    if ours and convert is tracer.as_index and _integer_array(box._value):
        return box  # an integer array indexes as a value of the program (see _signature)
    try:
        value = convert(tracer.getval(box._value))
    except TypeError:
        raise  # (of the value's type, which the signature fixes: NumPy probes with int())
    except Exception as error:  # (of its value: int() of a nan)
        _on_error(box, error)
        raise
    if not ours:
        return value
    if convert is float and storing_an_item():
        session.fills = True  # (a[i] = x, with a a NumPy array: see Session)
    if convert is tracer.as_index:
        convert = tracer.getval  # (the same check)
    session.guards.append(Guard(box._node, convert, _kept(value)))
    return value


def _on_plain_value(box, convert):
    """Eager evaluation has the plain value of a staged one here (``Node.on_plain_value``):
    a decision; written into a NumPy array (``a += x``), as ``a[i] = x``'s ``float()``."""
    value = _on_decision(box, convert)
    session = current()
    if convert is tracer.into_plain_array and session is not None and \
            box._trace_id == session.trace_id:
        session.fills = True  # (see Session)
    return value


def _integer_array(value: Any) -> bool:
    return type(value) is np.ndarray and value.dtype.kind in "iu"


def _kept(value: Any) -> Any:
    """A value a guard compares later calls with: an array is copied (the caller may
    change its own, an argument, in place)."""
    return value.copy() if type(value) is np.ndarray else value


def _on_error(box, error: BaseException | None = None) -> None:
    """A call or a decision on a staged value raised (``Node.on_error``)."""
    session = current()
    if session is not None and box._trace_id == session.trace_id and not session.raised:
        what = "a call on a traced value" if error is None else \
            f"a decision on a traced value ({type(error).__name__})"
        session.raised = f"{what} raised an exception that the function caught"


LARGE_CONSTANT = 1 << 20  # bytes: a baked-in array this large is warned about


def held_bytes(a: np.ndarray) -> int:
    """The bytes ``a``'s elements take (a broadcast view holds one row of its own axes)."""
    held = a.itemsize
    for n, stride in zip(a.shape, a.strides):
        if stride or not n:
            held *= n
    return held


class Record(list):
    """The nodes of one staging trace, in the order they were made, and the values of the
    constants they read (``constant``)."""

    def __init__(self, session: Session | None = None):
        super().__init__()
        self.copies: dict[int, tuple] = {}  # id(array) -> (a weak reference to it, its copy)
        self.large: list[np.ndarray] = []  # the copies over LARGE_CONSTANT bytes
        # the session that records here (None for a record made outside one): a staged
        # call finds it through its parents' record, not the thread-local (~70 ns a call)
        self.session = session

    def constant(self, value: Any) -> Any:
        """A constant argument as the call read it: an array (a list, a tuple holding
        arrays) is copied when the trace first reads it and read from the copy, which the
        program keeps; a later read of the same array gets the same copy where the array
        still holds the same bits, else a new copy. The function may change the array
        between two calls that read it (``e[:] = 0; e[i] = 1`` in a loop), or after the
        trace: each call reads the contents it had then, as eagerly."""
        t = type(value)
        if t is np.ndarray or isinstance(value, np.ndarray):  # (a memmap, a masked array...)
            key = id(value)
            known = self.copies.get(key)
            if known is not None and known[0]() is value and _same_bits(value, known[1]):
                return known[1]
            copy = _copied(value)
            self.copies[key] = (weakref.ref(value), copy)
            if held_bytes(copy) > LARGE_CONSTANT:  # (a broadcast copy holds one block)
                self.large.append(copy)
            return copy
        if t is tuple:
            items = tuple(map(self.constant, value))
            return value if all(map(operator.is_, items, value)) else items
        if t is list:
            return list(map(self.constant, value))
        return value

    def arithmetic_constant(self, value: Any) -> Any:
        """``constant``, for an operand of +, -, * or /: a large array holding one value
        throughout (the cotangent of a mean, negated or scaled at the trace) is kept as
        that value broadcast to its shape, a read-only view of one element: the program
        keeps no copy of its size, and the arithmetic's answers are the same bits
        (correctly rounded, element by element, whatever the layout)."""
        if type(value) is not np.ndarray or value.nbytes <= LARGE_CONSTANT or \
                value.dtype.kind not in "fc" or not _uniform(value):
            return self.constant(value)
        key = ("uniform", id(value))
        known = self.copies.get(key)
        if known is not None and known[0]() is value and _same_bits(value, known[1]):
            return known[1]
        # (its first element as an array of its own: no copy of the whole is made or kept)
        one = np.array(value.flat[0], dtype=value.dtype)
        compact = np.broadcast_to(one, value.shape)
        self.copies[key] = (weakref.ref(value), compact)
        return compact


def _copied(value: np.ndarray) -> np.ndarray:
    """``value.copy(order="K")``; a broadcast view (zero strides) as a copy of one block
    broadcast as the view is. Order K would lay its zero-stride axes out innermost, and
    NumPy lays out what is computed from an array by its strides (a ufunc's answer,
    index_update's copy): the program's sums over them would add in another order than
    eagerly, another last bit."""
    if type(value) is not np.ndarray or 0 not in value.strides or value.size < 2:
        return value.copy(order="K")
    block = value[tuple(0 if s == 0 else slice(None) for s in value.strides)].copy(order="K")
    inner = iter(block.strides)
    strides = [0 if s == 0 else next(inner) for s in value.strides]
    return np.lib.stride_tricks.as_strided(block, value.shape, strides,
                                           writeable=value.flags.writeable)


# type -> is a value of it read as a constant copy (``Record.constant``): arrays, their
# subclasses (memmap, recarray, masked arrays: read by reference, a buffer the function
# rebuilt between two uses was read as it ended, at both), and the lists and tuples that
# may hold them; learned per type (``_mutable``)
_MUTABLE: dict = {np.ndarray: True, tuple: True, list: True, float: False, int: False,
                  bool: False, type(None): False}


def _mutable(value: Any) -> bool:
    t = type(value)
    known = _MUTABLE.get(t)
    if known is None:
        known = _MUTABLE[t] = isinstance(value, (np.ndarray, tuple, list))
    return known


_NO_KEYWORDS: dict = {}
# the ufuncs whose answers are correctly rounded, element by element, whatever their
# operands' layout (``Record.arithmetic_constant``)
_ARITHMETIC = frozenset({np.add, np.subtract, np.multiply, np.true_divide})
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _uniform(a: np.ndarray) -> bool:
    """Whether ``a`` has elements, every one with the bits of its first."""
    if not a.size:
        return False
    as_int = _UINT.get(a.dtype.itemsize)
    if as_int is None:  # (complex128: two float64 halves)
        flat = a.reshape(-1).view(_UINT[a.dtype.itemsize // 2])
        return bool((flat[0::2] == flat[0]).all() and (flat[1::2] == flat[1]).all())
    flat = a.reshape(-1).view(as_int)
    first = flat[0]
    return bool((flat[:64] == first).all() and (flat == first).all())


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.hasobject:
        return False  # (objects may change inside: never the same)
    as_int = _UINT.get(a.dtype.itemsize)
    if as_int is None:
        return a.tobytes() == b.tobytes()
    return bool(np.array_equal(a.view(as_int), b.view(as_int)))


class ArrayMeta:
    """An ndarray the trace made, as far as the emitter reads it: type, shape, dtype and
    layout. The record keeps no array data (it kept every value, backward pass included,
    so that a trace touched several times the fresh memory of the eager pass it stages)."""

    __slots__ = ("shape", "dtype", "strides", "ndim")

    def __init__(self, shape: tuple, dtype: np.dtype, strides: tuple):
        self.shape, self.dtype, self.strides, self.ndim = shape, dtype, strides, len(shape)


# (shape, dtype, strides) -> its ArrayMeta: one object for all the answers of one layout
# (a record holds one per call; its size, a few hundred bytes per call, is most of a
# record's memory). Emptied when it grows: metas are never compared by identity.
_metas: dict[tuple, ArrayMeta] = {}
_MAX_METAS = 4096


def array_meta(a: np.ndarray) -> ArrayMeta:
    layout = (a.shape, a.dtype, a.strides)
    meta = _metas.get(layout)
    if meta is None:
        if len(_metas) >= _MAX_METAS:
            _metas.clear()
        meta = _metas[layout] = ArrayMeta(*layout)
    return meta


_masks_made = False  # whether a staged mask was ever made (until then no parent is one)


class StagingNode(Node):
    """A recorded call: ``args`` holds its constant arguments (None where an argument is
    traced: its value is the answer of the parent; where every argument is traced,
    ``args`` is ``argnums``, of the same length), ``ans`` the answer (an ``ArrayMeta``
    for an ndarray; a mask keeps its values, which guards compare). ``key``: a number
    equal for calls of one function, traced positions, number of arguments and answer
    type, which folding compares (``_fold``). ``place``: the emitter's scratch (a mark of
    ``needed``'s walk, a slot of ``interpret``'s table), None until then."""

    __slots__ = ("fun", "args", "kwargs", "argnums", "parents", "ans", "seq", "index", "mask",
                 "key", "record", "place")
    on_decision = staticmethod(_on_decision)
    on_error = staticmethod(_on_error)
    on_plain_value = staticmethod(_on_plain_value)
    # (and on_notrace, on_traced_keywords, on_untraceable_answer: set below, beside the
    # functions, which read the staging tables defined there)

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        # (runs once per recorded call, so it does only what the record needs; ``index``
        # is set for inputs only)
        # the record of this node's trace: its parents' (a call for an outer staging trace
        # may come while an inner one is the thread's session), or the session's for an
        # input; the session breaks the cycle this makes (``Session.close``)
        if parents:
            self.record = record = parents[0].record
            session = record.session
        else:
            session = _state.session
            self.record = record = Record() if session is None else session.nodes
        record.append(self)
        if session is not None and _errstate_now() is not session.errstate:
            session.errstate = _errstate_now()  # (checked once per change)
            # (a state with the caller's modes, as after a transform's own, sets nothing)
            changed = _errstate.modes() != session.errstate_modes
            session.errstate_acts = session.errstate_acts or (changed and _errstate.acts())
            session.errstate_changed = session.errstate_changed or changed
        self.fun = fun
        self.kwargs = kwargs or _NO_KEYWORDS  # (one empty dict for all: none is changed)
        self.argnums = argnums
        self.parents = parents
        self.seq = next(_creation)
        self.mask = False
        self.place = None
        n = len(args)
        kind = type(ans)
        if len(argnums) == n:
            self.args = argnums  # (every argument traced: the length is all there is)
            try:
                self.key = _key_numbers[fun][n][kind]  # (lookups: no tuple to make, hash)
            except KeyError:
                self.key = _new_key(fun, (n,), kind)
        else:
            for i in argnums:
                args[i] = None  # (the tracer's own list of the call's values)
            for a in args:
                mutable = _MUTABLE.get(type(a))  # (a known type: one lookup, no call)
                if mutable or mutable is None and _mutable(a):
                    if not kwargs and ufunc_of(fun) in _ARITHMETIC:
                        args[:] = map(record.arithmetic_constant, args)
                    else:
                        args[:] = map(record.constant, args)  # (rare: the loop only then)
                    break
            self.args = args
            try:
                self.key = _key_numbers[fun][argnums][n][kind]
            except KeyError:
                self.key = _new_key(fun, (argnums, n), kind)
        if kwargs and any(map(_mutable, kwargs.values())):
            for k, v in kwargs.items():
                kwargs[k] = record.constant(v)
        if kind is _NDARRAY:
            # (array_meta's look-up, inline: a layout met before costs no call, ~50 ns)
            meta = _metas.get((ans.shape, ans.dtype, ans.strides))
            self.ans = array_meta(ans) if meta is None else meta
        elif kind in _BOX_TYPES:
            # A box of an older trace (one the function closed over) took part: the call
            # was recorded on that trace too, and answered with one of its boxes.
            self.ans = ans
            session = current()
            if session is not None:
                session.impure = "it uses a value traced outside it (a closed-over box)"
        else:
            self.ans = ans
        if rule_table.get(fun, _NO_RULES).layout_by_value:
            _guard_layout(self, ans)
        if _masks_made:
            for p in parents:
                if p.mask and not _takes_masks(fun, p, n):
                    _guard_mask(p)  # (a notrace consumer's own answer is guarded instead)

    def initialize_root(self, value, index: int) -> None:
        self.__init__(value, None, [], {}, (), ())
        self.index = index

    def __repr__(self) -> str:
        name = "input" if self.fun is None else getattr(self.fun, "__name__", "?")
        return f"<StagingNode {name} #{self.seq}>"


_NO_RULES = PrimitiveRules(None)  # (what is read of a function without rules: nothing)


def rules_of_call(node: StagingNode) -> PrimitiveRules:
    """The rule entry of a staged call's primitive (an empty one for a function without
    rules): what jit may rely on when it writes the call (``PrimitiveRules``' emission
    hints, such as ``new_array``)."""
    return rule_table.get(node.fun, _NO_RULES)


class SourcedNode(StagingNode):
    """A staging node that knows the user's line that made it (``lower()`` writes it in
    the comment of the call's line; it costs a look up the stack per call). An observer
    of the engine may give a better one (explain's ``report.code``: for a call of the
    backward pass, the forward line it differentiates), or None for none."""

    __slots__ = ("source",)

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        super().__init__(ans, fun, args, kwargs, argnums, parents)
        self.source = call_site()


_NDARRAY = np.ndarray
_errstate_now = _errstate.context

# function -> number of arguments (all traced), or traced positions -> number of
# arguments -> answer type -> the key's number (``StagingNode.key``). Numbers are never
# reused, so the table may be emptied (it keeps the functions alive) without making two
# keys equal.
_key_numbers: dict = {}
_numbers = itertools.count()
_MAX_FUNCTIONS = 4096


def _new_key(fun, path: tuple, kind) -> int:
    """The number of a new key: ``path``, the keys of the levels between the function and
    the answer type."""
    if len(_key_numbers) >= _MAX_FUNCTIONS:
        _key_numbers.clear()
    # (setdefault: two threads meeting a new key agree on its number)
    table = _key_numbers.setdefault(fun, {})
    for step in path:
        table = table.setdefault(step, {})
    return table.setdefault(kind, next(_numbers))


def _layout(value: Any) -> tuple:
    """A value's type, dtype and shape (of each member of a tuple answer)."""
    if type(value) is tuple:
        return tuple(_layout(v) for v in value)
    return type(value), getattr(value, "dtype", None), np.shape(value)


def _guard_layout(node: StagingNode, ans: Any) -> None:
    """Guard the type, dtype and shape of a call's answer where its arguments' values
    decide them (the primitive's entry says so, ``deflayout_by_value``: ``real_if_close``,
    ``eig``, ``eigvals``, ``sqrtm``): the code after it was traced for that layout."""
    session = current()
    if session is not None:
        session.guards.append(Guard(node, _layout, _layout(ans)))


def _staged_box(x, trace_id: int):
    """The staging box inside ``x`` (any level of boxing), or None."""
    while isbox(x):
        if x._trace_id == trace_id:
            return x
        x = x._value
    return None


class _NotraceCall:
    """The raw function of a notrace primitive, recorded like a primitive's (``fun.fun``)."""

    def __init__(self, f_raw):
        self.fun = f_raw
        self.__name__ = getattr(f_raw, "__name__", repr(f_raw))


_notrace_calls: dict = {}

# notrace functions whose answer depends only on shapes and dtypes, which the signature
# fixes: their answers are constants of the trace, with no guard
_SHAPE_ONLY = {
    id(f)
    for f in (
        np.shape,
        np.ndim,
        np.size,
        np.result_type,
        np.iscomplexobj,
        np.isrealobj,
        np.zeros_like,
        np.ones_like,
        np.empty_like,
    )
}


def _on_notrace(box, f_wrapped, args, kwargs):
    """Record a notrace primitive (a comparison, argmax, sign ...) on staged values: its
    answer depends on the inputs, and is guarded at once (``Node.on_notrace``)."""
    session = current()
    f_raw = f_wrapped.fun
    if session is None or box._trace_id != session.trace_id or id(f_raw) in _SHAPE_ONLY:
        return NotImplemented
    if kwargs:
        kwargs = _masks_made_plain(kwargs, session)
    tid = session.trace_id
    staged = [_staged_box(a, tid) for a in args]
    hidden = any(
        _staged_box(v, tid) is not None
        for a in itertools.chain(args, kwargs.values())
        if type(a) in (list, tuple)
        for v in a
    ) or any(_staged_box(v, tid) is not None for v in kwargs.values())
    if hidden:
        raise StagingError(
            f"chainrule.jit cannot stage {getattr(f_raw, '__name__', f_raw)} called with "
            f"traced values inside a list, tuple or keyword argument. Pass them "
            f"positionally, or mark the argument static (static_argnums)."
        )
    if all(s is None for s in staged):
        return NotImplemented
    argvals = [tracer.getval(a) for a in args]
    argnums = tuple(i for i, s in enumerate(staged) if s is not None)
    try:
        ans = f_raw(*argvals, **kwargs)
    except Exception:
        _on_error(staged[argnums[0]])
        raise
    call = _notrace_calls.get(f_raw)
    if call is None:
        call = _notrace_calls[f_raw] = _NotraceCall(f_raw)
    parents = tuple(staged[i]._node for i in argnums)
    # other arguments are constants: plain values (boxes of newer traces hold no staged value)
    node = type(parents[0])(ans, call, list(argvals), dict(kwargs), argnums, parents)
    if isinstance(f_raw, np.ufunc) and type(ans) is np.ndarray and ans.ndim and ans.dtype == bool:
        # A mask (x > 0, isnan(x), a & b: a ufunc's boolean answer, elementwise by
        # definition) is a value of the program: it goes on as a staged box, and
        # is guarded by value only where it reaches a function outside _takes_masks (one
        # whose result's shape or Python-visible structure could depend on it). (A float
        # answer, np.floor's, stays guarded by value: a later write into it, which no
        # mask meets, would reach the calls that read it before.)
        global _masks_made
        _masks_made = True
        node.mask = True
        node.ans = ans  # (its values: guards compare them)
        return tracer.new_box(ans, tid, node)
    # The answer goes on as a plain value (code around notrace functions expects one), so
    # the program is specialised on it: a guard checks it is the same on later calls.
    session.guards.append(Guard(node, _identity, ans))
    return ans


StagingNode.on_notrace = staticmethod(_on_notrace)


def _on_buffer_answer(box) -> None:
    """chainrule.numpy would make a buffer of this answer (``Node.on_buffer_answer``): so
    does eager evaluation where a trace newer than this one is live (eagerly, the
    derivative trace that makes chainrule.numpy's new arrays buffers)."""
    session = current()
    if session is None or box._trace_id != session.trace_id:
        return
    live = tracer.live_trace_ids
    if any(t > box._trace_id for t in live if t not in live.perpetual):
        session.buffers.add(box._node)


def _holds_buffer(box) -> bool:
    """Whether eager evaluation holds a buffer where the staging trace holds ``box``
    (``Node.holds_buffer``): a float value noted, or computed from a noted value (eagerly
    every function, ufunc, operator or method given a buffer answers a buffer, or a view
    of one). Asked once per value: the write then rebinds the box, or is refused."""
    session = current()
    if (session is None or box._trace_id != session.trace_id or not session.buffers
            or _np_dtype_kind(box) not in ("f", "c")):
        return False
    seen, todo = set(), [box._node]
    while todo:
        node = todo.pop()
        if node in session.buffers:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(node.parents)
    return False


def _np_dtype_kind(box) -> str:
    value = tracer.getval(box)
    return value.dtype.kind if type(value) is np.ndarray else ""


StagingNode.on_buffer_answer = staticmethod(_on_buffer_answer)
StagingNode.holds_buffer = staticmethod(_holds_buffer)


def staged_as_mask(box) -> None:
    """An integer or boolean array given as an argument: a value of the program that no
    derivative reaches, staged as masks are (its uses outside ``_takes_masks`` are
    guarded by value)."""
    global _masks_made
    _masks_made = True
    box._node.mask = True
    box._node.ans = box._value


def _takes_masks(fun, parent: StagingNode, n_args: int) -> bool:
    """Whether a recorded function of ``n_args`` arguments may take a staged mask (or
    integer array, see ``_signature``) ``parent`` as a value: an elementwise function (a
    ufunc, a chainrule ufunc wrapper) or one whose entry ``takes_masks`` (``where`` of
    three arguments, ``astype``, ``sum``): its answer's shape does not depend on the
    mask's values; an integer array also where the entry ``takes_index_arrays`` (``x[i]``,
    ``np.take``, their derivatives), whose answers have its shape. Python decisions on a mask (``if
    m.any():``, a boolean index) are guarded where they happen, by ``on_decision``."""
    if fun is None:
        return False
    if type(fun) is _NotraceCall:
        return True  # its own answer is guarded (or is a mask)
    entry = rule_table.get(fun, _NO_RULES)
    takes = entry.takes_masks  # True, or the number of arguments it needs
    raw = fun.fun
    return (
        isinstance(raw, np.ufunc)
        or getattr(raw, "ufunc", None) is not None
        or takes is True or (takes is not False and takes == n_args)
        or (entry.takes_index_arrays and _integer_array(parent.ans))
    )


def _guard_mask(node: StagingNode) -> None:
    """Specialise the program on a mask's value (its consumer may read it as a plain
    value: boolean indexing, whose answer's shape depends on it, or a rule's Python)."""
    session = current()
    if session is not None and not any(g.node is node for g in session.guards):
        session.guards.append(Guard(node, _identity, _kept(node.ans)))


def _masks_made_plain(kwargs: dict, session: Session) -> dict:
    """``kwargs`` with each staged mask (or other boolean or integer value) replaced by its
    value, guarded by value: keywords are constants of a recorded call (``where=x > 0``),
    so the program is specialised on it, as on a mask read as a plain value, or on a
    boolean or integer argument of the jitted function. (A staged float stays: it is a
    value of the program, which a keyword cannot carry.)"""
    plain = dict(kwargs)
    for key, value in kwargs.items():
        if (
            isbox(value)
            and value._trace_id == session.trace_id
            and (value._node.mask or getattr(value._value, "dtype", _FLOAT).kind in "biu")
        ):
            _guard_mask(value._node)
            plain[key] = value._value
    return plain


_FLOAT = np.dtype(float)


def _plain_keyword_masks(kwargs: dict):
    """``StagingNode.on_traced_keywords``: the keywords with staged masks made plain, or
    NotImplemented where another traced value remains."""
    session = current()
    if session is None:
        return NotImplemented
    plain = _masks_made_plain(kwargs, session)
    if any(isbox(v) or type(v) in tracer.batched_types for v in plain.values()):
        return NotImplemented
    return plain


StagingNode.on_traced_keywords = staticmethod(_plain_keyword_masks)


def _identity(x: Any) -> Any:
    return x


def _plain_answer_of_masks(f_raw, args, kwargs):
    """An answer no box holds (``mask[i]``, a NumPy bool) computed from staged masks only:
    the masks are guarded by value (see ``StagingNode``), so the answer is a constant of
    the program and goes on as a plain value, as it did before masks were staged."""
    session = current()
    if session is None:
        return NotImplemented
    staged = [_staged_box(a, session.trace_id) for a in args]
    staged = [s for s in staged if s is not None]
    if not staged or not all(s._node.mask for s in staged) or any(
        isbox(a) and _staged_box(a, session.trace_id) is None for a in args
    ):
        return NotImplemented
    for s in staged:
        _guard_mask(s._node)
    return f_raw(*[tracer.getval(a) for a in args], **kwargs)


StagingNode.on_untraceable_answer = staticmethod(_plain_answer_of_masks)
