"""The tracing core: boxes, trace ids and the primitive wrapper.

This module knows no calculus. It records calls: when a *primitive* function is
called with a *boxed* argument, it unboxes the arguments, calls the raw function
and boxes the result together with a *node*. What a node does with the call is
the business of the mode that made the trace (reverse mode stores what the
backward pass needs, forward mode pushes tangents), so reverse mode, forward
mode, the Tensor front end and `explain` all sit on this one recorder.

Nesting. Every trace gets a fresh id from an increasing counter, so a trace
started inside another one (``grad(grad(f))``) always has the larger id. A
primitive only records on the *newest* trace among its arguments; boxes of
older traces are passed through to a recursive call of the same primitive,
which records them on their own trace. A value closed over from an outer trace
is therefore a constant to the inner trace, and perturbation confusion (the
inner derivative leaking into the outer one) cannot happen. The state traces share,
the counter and the set of live trace ids, changes only by atomic operations (``next()``,
set add and discard under a lock), so threads can trace freely.

Leaks. A box kept past the end of its trace (appended to a global list inside
``grad``) belongs to a graph nobody will differentiate again; using it later would
hand back boxes instead of numbers. ``trace_leaves`` keeps the ids of the traces
still running in ``live_trace_ids``, and the places where traces meet (mixed ids in
``_plan_in_general``, a transform's output check, conversions to plain values)
refuse a box whose trace has ended. The one-trace fast path does not look: that
check would be paid by every primitive call.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import threading
from collections.abc import Callable
from functools import cache, wraps
from typing import Any, NamedTuple

from .extension import observers
from .pytree import register_leaf_value

_trace_ids = itertools.count(1)


def new_trace_id() -> int:
    return next(_trace_ids)


class LiveTraceIds(set):
    """The ids of the traces whose function is still running, and of those that never end
    (``perpetual``: the Tensor trace). ``transforming`` says whether code runs under a
    transform (a trace that will end is live): chainrule.numpy's constructors ask on every
    call, so it is kept up to date here, under a lock so threads may trace at once."""

    __slots__ = ("perpetual", "transforming")

    def __init__(self):
        super().__init__()
        self.perpetual: set[int] = set()
        self.transforming = False

    # (each written out: add and discard run once per transformed call, and a shared
    # method's frame cost them ~0.05 µs each)
    def add(self, trace_id: int) -> None:
        with _trace_ids_lock:
            set.add(self, trace_id)
            self.transforming = len(self) > len(self.perpetual)

    def discard(self, trace_id: int) -> None:
        with _trace_ids_lock:
            set.discard(self, trace_id)
            self.transforming = len(self) > len(self.perpetual)

    def add_perpetual(self, trace_id: int) -> None:
        with _trace_ids_lock:
            self.perpetual.add(trace_id)
            set.add(self, trace_id)
            self.transforming = len(self) > len(self.perpetual)


_trace_ids_lock = threading.Lock()
live_trace_ids = LiveTraceIds()


class LeakedTracerError(RuntimeError):
    """A traced value was used after the trace that made it had ended."""


def leaked_error(box: Box) -> LeakedTracerError:
    return LeakedTracerError(
        f"a value traced by an earlier grad/jvp call was used after that call returned: "
        f"{box!r} belongs to trace {box._trace_id}, which has ended, so its derivative "
        f"can no longer be taken. This happens when a function being differentiated stores "
        f"an intermediate value outside itself (a global, a list, an attribute). Store "
        f"chainrule.stop_gradient(x) (its plain value) instead, or return the value from "
        f"the function (grad_and_aux, value_and_grad) and use that."
    )


def check_not_leaked(x: Any) -> None:
    """Raise if ``x`` is a box whose trace has ended (for rare paths and output checks)."""
    while type(x) in _box_types:
        if x._trace_id not in live_trace_ids:
            raise leaked_error(x)
        x = x._value


class Node:
    """One recorded primitive call; each mode subclasses it.

    Every node type is built with the same arguments (``ans, fun, args, kwargs,
    argnums, parents``) so the tracer can make nodes without knowing the mode.
    """

    __slots__ = ("__weakref__",)

    # Hook for Python decisions on traced values (bool(), int(), float(), an index; see
    # ``decided``): a node type that stages programs (chainrule.jit) sets it to
    # ``on_decision(box, convert) -> convert(value)`` and records the decision as a guard.
    # Read only on those rare conversion paths, so other modes pay nothing.
    on_decision: Callable | None = None

    # Hook for calls of notrace primitives (comparisons, argmax, sign ...) on traced values:
    # a node type that follows every value computed from its inputs, derivative or not
    # (sparsity detection, chainrule.jit), sets it to ``on_notrace(box, f_wrapped, args,
    # kwargs) -> answer``, which records the call, or NotImplemented (not its call: the next
    # box is asked). Told for the boxes of its type among the arguments, nested ones and
    # those inside lists, tuples and keywords too, newest trace first (see
    # ``notrace_primitive``). Other modes pay one look per box.
    on_notrace: Callable | None = None

    # Hooks for two rare ends of a recorded call, told on the node types met among the
    # call's arguments (every level of boxing), each once: a node type that takes Python
    # decisions on its values (sparsity detection, chainrule.jit) may read a value as a
    # plain one, a decision, where the engine would refuse it:
    # - ``on_untraceable_answer(f_raw, args, kwargs)``: the call's answer is of a type no box
    #   holds (``mask[0]``, a NumPy bool): the answer computed another way, or NotImplemented;
    # - ``on_traced_keywords(kwargs)``: traced values given by keywords that cannot be
    #   passed positionally: the keywords made plain values, or NotImplemented.
    on_untraceable_answer: Callable | None = None
    on_traced_keywords: Callable | None = None

    # Hook for exceptions: a node type that follows Python's path through the function
    # (sparsity detection, chainrule.jit) sets it to ``on_error(box)``, told for each box of
    # its type among a raising primitive call's arguments, nested ones too (the function may
    # catch the exception and go another way, a path its record cannot replay). Read only
    # when a traced call raises.
    on_error: Callable | None = None

    # Hook for the places where eager evaluation hands Python or NumPy the plain value that
    # a trace keeps boxed (``x.tolist()``, ``x.item()``, a ufunc's ``out=`` writing ``x``
    # into a NumPy array, ``into_plain_array``): a node type that stages programs
    # (chainrule.jit) sets it to ``on_plain_value(box, convert) -> convert(value)``, a
    # guarded decision, so staged calls answer as eager ones; every other trace keeps the
    # value boxed or refuses it (it would drop the derivative). Read only on those paths.
    on_plain_value: Callable | None = None

    # Hooks for the arrays a front end makes that take traced writes where a NumPy array
    # refuses them (chainrule.numpy's buffers: new memory made under a derivative trace).
    # Where eager evaluation holds such a buffer, a staging trace (chainrule.jit) may hold
    # its own box instead: ``on_buffer_answer(box)`` is told that the front end would have
    # made a buffer of this answer, and ``holds_buffer(box) -> bool`` says whether eager
    # evaluation holds one here (this value or one it was computed from), so that a
    # traced write into it is taken, as eagerly, or refused, as by a NumPy array.
    on_buffer_answer: Callable | None = None
    holds_buffer: Callable | None = None

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        raise NotImplementedError

    @classmethod
    def new_root(cls, *args, **kwargs) -> Node:
        root = cls.__new__(cls)
        root.initialize_root(*args, **kwargs)
        return root

    def initialize_root(self, *args, **kwargs) -> None:
        raise NotImplementedError


class Box:
    """A value being traced: the raw value, the id of its trace, and its node."""

    __slots__ = ("_value", "_trace_id", "_node", "__weakref__")
    type_mappings: dict[type, Callable] = {}  # value type -> box class (or factory)
    types: set[type] = set()

    # Set by the front end whose box type this is, for calls its values meet on rare paths:
    # - ``on_refused_sequences(f_wrapped, args, kwargs)``: a call whose raw function raised
    #   TypeError with boxes of this type inside list or tuple arguments (np.mean([a, b])),
    #   redone another way (chainrule.numpy: the lists made traced arrays);
    # - ``on_untraceable_answer(f_raw, args, kwargs)``: as ``Node``'s, asked after the node
    #   types' (chainrule.numpy: a foreign container such as xarray's DataArray applies a
    #   ufunc to traced operands itself, so that it holds the traced result).
    # - ``on_notrace_answer(answer)``: the answer of a notrace call (``np.floor(x)``) of
    #   boxes of this type, computed from their plain values, made what the front end makes
    #   of new memory (chainrule.numpy: a float array becomes a buffer, so that a later
    #   traced write into it takes, as it does eagerly).
    on_refused_sequences: Callable | None = None
    on_untraceable_answer: Callable | None = None
    on_notrace_answer: Callable | None = None

    def __init__(self, value, trace_id: int, node: Node):
        self._value = value
        self._trace_id = trace_id
        self._node = node

    def __bool__(self) -> bool:
        return decided(self, bool)

    def __repr__(self) -> str:
        if staged(self):
            return decided(self, repr)
        ended = "" if self._trace_id in live_trace_ids else " (ended)"
        return f"{type(self).__name__}({self._value!r}, trace={self._trace_id}{ended})"

    def __str__(self) -> str:
        return decided(self, str) if staged(self) else repr(self)

    # A copy of a traced value is the same value on the graph: ``copy_of`` is an identity
    # primitive (its rules pass the derivative through), so copy.copy / copy.deepcopy keep
    # the derivative instead of copying the graph away from its inputs.
    def __copy__(self) -> Box:
        return copy_of(self)

    def __deepcopy__(self, memo: dict) -> Box:
        return copy_of(self)

    def __reduce_ex__(self, protocol):
        raise TypeError(
            f"cannot pickle a traced value ({type(self).__name__} on trace "
            f"{self._trace_id}): a pickle cannot keep its place on the graph, so its "
            f"derivative would be lost. Pickle the value outside the function being "
            f"differentiated, or pickle chainrule.stop_gradient(x) (or getval(x)), its plain "
            f"value without a derivative."
        )

    @classmethod
    def register(cls, value_type: type) -> None:
        """Box values of ``value_type`` (and their Box type itself) with this class."""
        Box.types.add(cls)
        _traced_types.add(cls)
        Box.type_mappings[value_type] = cls
        Box.type_mappings[cls] = cls


_box_types = Box.types  # the same set object: registration updates it



class FrontEnd(NamedTuple):
    """How the tracer meets the objects of a front end (chainrule.tensor's Tensor), which
    hold a value (a box while it is traced) and are handed to primitives whole.

    - ``unwrap(obj)``: the value the object stands for as an argument;
    - ``value_of(obj)``: the value an object that a primitive answered with holds;
    - ``wrap(answer)``: an answer (or a container of answers) made objects of the front end.

    A primitive called with front-end objects and no traced value runs on what they hold and
    its answer is wrapped back (user primitives keep their rules). Where they meet values of
    a trace, an object holding a value of that same trace, or a plain one, takes part as
    that value; one holding a value of another trace stays whole, a constant to this trace
    as boxes of older traces are, so the rules compute with it and the derivatives they
    give are front-end objects too. An answer that comes back as a front-end object is
    recorded as the value it holds and handed back wrapped.
    """

    unwrap: Callable
    value_of: Callable
    wrap: Callable
    # as_output(obj, f_wrapped, args, kwargs): a primitive's call given ``obj`` as its
    # output array (``out=``, or NumPy's output position; ``args``/``kwargs`` without it)
    # made by the front end, which writes the answer into the object and returns what the
    # call returns (chainrule.numpy's buffers). None: an output array refused, as ever.
    as_output: Callable | None = None
    # pytree_leaf: the object stands for one array (chainrule.numpy's buffers): pytrees
    # flatten it as one leaf, ``value_of(obj)``, so every transform sees that array where
    # a function returns one. False: the object itself is a leaf (a Tensor).
    pytree_leaf: bool = False


# front-end type -> its FrontEnd (registered by chainrule.tensor, via register_front_end)
front_ends: dict[type, FrontEnd] = {}
_box_type_of = Box.type_mappings  # likewise

# Batched values (chainrule.vmap's BatchedArray): a value of a whole batch on a batching
# trace, with a trace id like a box's, but no node: a primitive called with one whose trace
# is the newest among its arguments is answered by its type's ``call(f_wrapped, args,
# kwargs, trace_id)`` (the primitive's batching rule) instead of being recorded: the call
# whole, keywords and output arrays (``out=``, a batched one too) included. (The newest
# trace may be one that a front-end object's value is on: a Tensor holding grad's box
# under vmap.) batched type -> its call, registered by ``register_batched_type``.
batched_types: dict[type, Callable] = {}

# View makers: the primitives that answer a view of their first argument (``primitive(f,
# answers_view=True)``: NumPy's transpose, reshape, split ...) called with a value of a
# registered type as that argument are answered by ``make(f_wrapped, args, kwargs)``, which
# makes the answer a view that sees later writes into the argument (chainrule.numpy's
# buffers and traced arrays, whose writes the engine does not see). ``f_wrapped.records``
# computes and records the call itself. type -> make, registered by ``register_view_maker``.
view_makers: dict[type, Callable] = {}

# Value types on which a primitive's ``f_raw.direct`` answers as ``f_raw`` (chainrule.numpy:
# ndarray. NumPy's ufuncs are wrapped in a function that gives float operands Python's
# arithmetic; a call with an array operand skips that frame, ~0.1 µs of a recorded call).
direct_types: set[type] = set()

# Types whose values a box may hold as a value of an older trace (boxes and batched values):
# a call meeting one recurses, so that its own trace handles it.
_traced_types: set[type] = set(Box.types)
# Argument types that send a primitive call to the general path (front ends, batched values);
# the fast path checks this one set.
_general_types: set[type] = set()


def register_front_end(cls: type, front_end: FrontEnd) -> None:
    front_ends[cls] = front_end
    _general_types.add(cls)
    if front_end.pytree_leaf:
        register_leaf_value(cls, front_end.value_of)


def register_batched_type(cls: type, call: Callable) -> None:
    """Values of ``cls`` are batched values; ``call(f_wrapped, args, kwargs, trace_id)``
    answers a primitive's call on them (see ``batched_types``)."""
    batched_types[cls] = call
    _traced_types.add(cls)
    _general_types.add(cls)


def register_view_maker(cls: type, make: Callable) -> None:
    """Calls of view primitives with a value of ``cls`` first are answered by ``make``
    (see ``view_makers``)."""
    view_makers[cls] = make


def isbox(x: Any) -> bool:
    return type(x) in _box_types


def getval(x: Any) -> Any:
    """Strip every level of boxing from ``x``."""
    while type(x) in _box_types:
        x = x._value
    return x


def derivative_free(x: Any) -> Any:
    """``x`` without the boxing of derivative traces (``stop_gradient``): like ``getval``,
    but a staging trace's box (chainrule.jit, ``Node.on_decision``) is kept, so the value
    stays an input-dependent value of the staged program, a constant to every derivative."""
    while type(x) in _box_types and x._node.on_decision is None:
        x = x._value
    return x


def into_plain_array(value: Any) -> Any:
    """The ``convert`` of ``Node.on_plain_value`` for a traced value that a ufunc's
    ``out=`` writes into a plain NumPy array (``a += x``): the value itself."""
    return value


def as_index(x: Any) -> Any:
    """The plain value of ``x`` used as an index (``a[x]``): a decision like ``int(x)``,
    which a node type told of it (``Node.on_decision``) may answer with ``x`` itself,
    to index with a value it keeps traced (chainrule.jit, for integer arrays)."""
    return getval(x)


def staged(x: Any) -> bool:
    """Whether a live level of boxing of ``x`` has ``on_decision`` (a staging trace): its
    text (``str(x)``, ``repr(x)``, ``f"{x}"``) is then a Python value made from the traced
    value, which a compiled program must guard as it guards ``if x:`` (eagerly it is the
    value's text, not the box's)."""
    while type(x) in _box_types:
        if x._node.on_decision is not None and x._trace_id in live_trace_ids:
            return True
        x = x._value
    return False


def decided(x: Any, convert: Callable) -> Any:
    """``convert(plain value of x)`` for a Python decision (``if x:``, ``int(x)``, an
    index): the first level of boxing whose node type has ``on_decision`` is told (see
    ``Node.on_decision``); otherwise it is ``convert(getval(x))``."""
    while type(x) in _box_types:
        if x._node.on_decision is not None:
            return x._node.on_decision(x, convert)
        x = x._value
    return convert(x)


def _strip(x: Any) -> Any:
    if type(x) in (list, tuple):
        return type(x)(map(_strip, x))
    return getval(x)


# Predicates for value types no module registered ahead (e.g. Dask or CuPy arrays, which
# chainrule never imports): (matches(value), box_class); a match registers the type.
box_fallbacks: list[tuple[Callable, type]] = []


def _handlers_met(values, name: str, box_types_too: bool = False) -> list[Callable]:
    """The handlers called ``name`` of the node types (and, with ``box_types_too``, then of
    the box types) met at every level of boxing of ``values``, each once, in the order met."""
    handlers: list[Callable] = []
    for owners in ("nodes", "box types") if box_types_too else ("nodes",):
        for value in values:
            while type(value) in _box_types:
                owner = value._node if owners == "nodes" else type(value)
                handler = getattr(owner, name)
                if handler is not None and handler not in handlers:
                    handlers.append(handler)
                value = value._value
    return handlers


def _record_rare_answer(ans, top: Box, f_wrapped, f_raw, args, argvals, kwargs, argnums,
                        parents) -> Any:
    """Record a call whose answer's type has no box type registered ahead (the tail of
    ``primitive``'s, for this rare path). A front-end object made by the raw function (a
    user primitive's body that made a chainrule.numpy buffer under a live trace) is
    recorded as the value it holds, which rules and boxes know (a buffer would otherwise be
    boxed as a duck array, its type registered as one for good)."""
    front_end = front_ends.get(type(ans))
    if front_end is not None:
        ans = front_end.value_of(ans)
    node = type(top._node)(ans, f_wrapped, argvals, kwargs, argnums, parents)
    if observers:
        for observer in observers:
            observer.node_made(node, ans, f_wrapped, args)
    return _box_answer(ans, top._trace_id, node, f_raw, args, kwargs)


def _box_answer(ans, trace_id: int, node: Node, f_raw: Callable, args, kwargs) -> Any:
    """The rare path of a recorded call: ``ans`` has no box type registered ahead."""
    try:
        return new_box(ans, trace_id, node)
    except TypeError:
        for handler in _handlers_met(args, "on_untraceable_answer", box_types_too=True):
            result = handler(f_raw, args, kwargs)
            if result is not NotImplemented:
                return result
        raise


def new_box(value, trace_id: int, node: Node) -> Box:
    try:
        return Box.type_mappings[type(value)](value, trace_id, node)
    except KeyError:
        for matches, box_class in box_fallbacks:
            if matches(value):
                box_class.register(type(value))
                return box_class(value, trace_id, node)
        raise TypeError(
            f"chainrule cannot trace a value of type {type(value).__name__}: only floats, "
            f"complex numbers, NumPy arrays and scalars (and containers of them) can be "
            f"differentiated. Convert the value to a float array first."
        ) from None


def primitive(f_raw: Callable, out_position: int | None = None,
              answers_view: bool = False) -> Callable:
    """Wrap ``f_raw`` so that calls with boxed positional arguments are recorded.

    Only positional arguments are traced; keyword arguments are passed through
    as constants. With no boxed argument the cost is one scan of ``args``.
    ``out_position``: where ``f_raw`` takes an output array positionally (NumPy's
    ``out``); a traced call that passes one there, or ``out=``, is refused before
    anything runs, since the write would land outside the graph.
    ``answers_view``: ``f_raw`` answers a view of its first argument (NumPy's transpose,
    reshape ...): a call whose first argument's type has a view maker is answered by it
    (see ``view_makers``); only such primitives pay for the question.
    ``f_raw.direct``, where ``f_raw`` has it: a function that answers as ``f_raw`` does
    when one of the traced values of a recorded call (one or two arguments) is of a type
    in ``direct_types``; the recording calls it instead (see ``direct_types``).
    """

    direct = getattr(f_raw, "direct", None)

    @wraps(f_raw)
    def f_wrapped(*args, **kwargs):
        try:
            # Fast path: one or two positional arguments, traced on one trace, no keywords,
            # no front-end objects: most calls of a numerical program. It only finds what
            # to record (or answers an untraced call); every other call asks the general
            # path. Both end in the one tail below. Boxes holding boxes of older traces
            # (grad inside grad, or inside chainrule.jit) take it too: their values are
            # passed to ``call``, the recursive call that records them on their own trace.
            n = 0 if kwargs else len(args)
            top = None
            call = f_raw
            if n == 1:
                x = args[0]
                if type(x) in _box_types:
                    argvals, argnums, parents, top = [x._value], _FIRST, (x._node,), x
                    if type(x._value) in _traced_types:
                        call = _recursive(f_wrapped, top)
                    elif direct is not None and type(x._value) in direct_types:
                        call = direct
                elif type(x) not in _general_types:
                    return f_raw(x)
            elif n == 2 and out_position != 1:  # (np.sin(x, out_array): the general path)
                x, y = args
                x_boxed, y_boxed = type(x) in _box_types, type(y) in _box_types
                if x_boxed and y_boxed:
                    if x._trace_id == y._trace_id:
                        xv, yv = x._value, y._value
                        argvals, argnums, parents, top = ([xv, yv], _BOTH,
                                                          (x._node, y._node), x)
                        if type(xv) in _traced_types or type(yv) in _traced_types:
                            call = _recursive(f_wrapped, top)
                        elif direct is not None and (type(xv) in direct_types
                                                     or type(yv) in direct_types):
                            call = direct
                elif x_boxed:
                    if type(y) not in _general_types:
                        argvals, argnums, parents, top = [x._value, y], _FIRST, (x._node,), x
                        if type(x._value) in _traced_types:
                            call = _recursive(f_wrapped, top)
                        elif direct is not None and type(x._value) in direct_types:
                            call = direct
                elif y_boxed:
                    if type(x) not in _general_types:
                        argvals, argnums, parents, top = [x, y._value], _SECOND, (y._node,), y
                        if type(y._value) in _traced_types:
                            call = _recursive(f_wrapped, top)
                        elif direct is not None and type(y._value) in direct_types:
                            call = direct
                elif type(x) not in _general_types and type(y) not in _general_types:
                    return f_raw(x, y)
            if top is None:
                plan = _plan_in_general(f_wrapped, f_raw, args, kwargs)
                if type(plan) is not _Plan:
                    return plan  # answered without recording here
                call, argvals, kwargs, argnums, parents, top, wrap = plan
                ans = call(*argvals, **kwargs)
            else:  # (one or two arguments: by position, not call(*argvals), ~0.07 µs less)
                ans = call(argvals[0]) if n == 1 else call(argvals[0], argvals[1])
                wrap = None
            box_type = _box_type_of.get(type(ans))
            if box_type is None:
                result = _record_rare_answer(ans, top, f_wrapped, f_raw, args, argvals, kwargs,
                                             argnums, parents)
            else:
                node = type(top._node)(ans, f_wrapped, argvals, kwargs, argnums, parents)
                if observers:  # (extension.Observer: debug_nans, report.code)
                    for observer in observers:
                        observer.node_made(node, ans, f_wrapped, args)
                result = box_type(ans, top._trace_id, node)
            return result if wrap is None else wrap(result)
        except TypeError:
            # A list or tuple argument holding traced values (np.mean([a, b])): the raw
            # function refused them; their box type's front end (chainrule.numpy) may redo
            # the call (``Box.on_refused_sequences``). Only this failure path pays: a try
            # costs nothing in CPython 3.11+.
            redo = _sequences_redone_by((*args, *kwargs.values()))
            if redo is None:
                _tell_error(args)
                raise
            try:
                return redo(f_wrapped, args, kwargs)
            except Exception:
                _tell_error(args)
                raise
        except Exception:
            _tell_error(args)
            raise

    if answers_view:
        records = f_wrapped

        @wraps(f_raw)
        def f_wrapped(*args, **kwargs):  # noqa: F811 - the primitive, as recorded (below)
            make = view_makers.get(type(args[0])) if args else None
            if make is not None:
                return make(f_wrapped, args, kwargs)
            return records(*args, **kwargs) if kwargs else records(*args)  # (cheaper)

        # ``records`` names ``f_wrapped`` as a free variable: rebound here, its nodes, rule
        # look-ups and recursive calls name this function, the one primitive rules key on.
        f_wrapped.records = records
    f_wrapped.fun = f_raw
    f_wrapped.out_position = out_position
    f_wrapped._is_chainrule_primitive = True
    return f_wrapped


_FIRST, _SECOND, _BOTH = (0,), (1,), (0, 1)


def _sequences_redone_by(values, inside: bool = False) -> Callable | None:
    """The ``on_refused_sequences`` of the first box type that has one among the boxes
    inside the list and tuple ``values`` (nested ones too), or None."""
    for value in values:
        if inside and type(value) in _box_types:
            if type(value).on_refused_sequences is not None:
                return type(value).on_refused_sequences
        elif isinstance(value, (list, tuple)):
            redo = _sequences_redone_by(value, inside=True)
            if redo is not None:
                return redo
    return None


def _tell_error(args) -> None:
    """A traced call raised: tell the node types that follow the path (``Node.on_error``)."""
    for arg in args:
        while type(arg) in _box_types:
            if arg._node.on_error is not None:
                arg._node.on_error(arg)
            arg = arg._value


def _recursive(f_wrapped: Callable, top: Box) -> Callable:
    """``f_wrapped`` itself, the call that records the values of ``top``'s call on their
    own, older traces. Traces meet here, so a box whose trace has ended is refused."""
    if top._trace_id not in live_trace_ids:
        raise leaked_error(top)
    return f_wrapped


def _refuse_output_array(f_wrapped, f_raw, args, kwargs) -> None:
    out_at = f_wrapped.out_position
    if kwargs.get("out") is None and (out_at is None or len(args) <= out_at
                                      or args[out_at] is None):
        return
    name = getattr(f_raw, "__name__", "this function")
    raise TypeError(
        f"{name}: an output array (out=, or the output position) cannot be given with a "
        f"traced value: NumPy would write the result into that array, outside what chainrule "
        f"records, so its derivative would be lost. Use the returned value instead "
        f"(y = {name}(x)); nothing was written."
    )


class _Plan(tuple):
    """What the general path found to record: ``(call, argvals, kwargs, argnums, parents,
    top, wrap)``; ``wrap`` is None or hands the answer back as front-end objects."""

    __slots__ = ()


def _plan_in_general(f_wrapped, f_raw, args, kwargs, met_front_ends: bool = False):
    """Any call of a primitive: keywords, nested traces, front-end objects, many arguments.
    Returns the ``_Plan`` of what to record, or the answer of a call that records nothing
    here. (``met_front_ends``: called back by ``_plan_with_front_ends`` with the front-end
    objects that remain as constants.)"""
    if kwargs or (f_wrapped.out_position is not None and len(args) > f_wrapped.out_position):
        answer = _front_end_output(f_wrapped, args, kwargs)
        if answer is not _NO_OUTPUT_OBJECT:
            return answer
    trace_id = 0  # trace ids start at 1
    held = []
    for arg in args:
        if type(arg) in _traced_types:
            if arg._trace_id > trace_id:
                trace_id = arg._trace_id
                top = arg
        elif type(arg) in front_ends:
            held.append(arg)
    if kwargs and any(type(v) in _traced_types for v in kwargs.values()):
        newest = max((v for v in kwargs.values() if type(v) in _traced_types),
                     key=lambda v: v._trace_id)
        if type(newest) in batched_types and newest._trace_id >= trace_id:
            # (vmap's batching rules take the call whole, out= an array of the batch too)
            return batched_types[type(newest)](f_wrapped, args, kwargs, newest._trace_id)
        return _call_with_traced_keywords(f_wrapped, f_raw, args, kwargs)
    if not trace_id:
        if held:
            return _through_front_end(f_wrapped, args, kwargs)
        return f_raw(*args, **kwargs)
    if kwargs:
        args, kwargs = _keywords_in_place(f_raw, args, kwargs)
    if held and not met_front_ends:
        # (the newest trace may be one a front-end object's value is on)
        newest = max([trace_id] + [_trace_of(front_ends[type(obj)].unwrap(obj))
                                   for obj in held])
        return _plan_with_front_ends(f_wrapped, f_raw, args, kwargs, newest)
    if type(top) in batched_types:
        # (vmap's batching rules take the call whole, output arrays included)
        if trace_id not in live_trace_ids:
            raise leaked_error(top)
        return batched_types[type(top)](f_wrapped, args, kwargs, trace_id)
    _refuse_output_array(f_wrapped, f_raw, args, kwargs)

    argvals = list(args)
    argnums = []
    parents = []
    older_boxes = False
    for i, arg in enumerate(args):
        if type(arg) in _traced_types:
            if arg._trace_id == trace_id:
                argnums.append(i)
                parents.append(arg._node)
                arg = argvals[i] = arg._value
                older_boxes = older_boxes or type(arg) in _traced_types
            elif arg._trace_id in live_trace_ids:
                older_boxes = True
            else:  # traces meet here, and this one has ended
                raise leaked_error(arg)
    if older_boxes and trace_id not in live_trace_ids:
        raise leaked_error(top)
    # Values boxed by older traces are recorded on those traces by the
    # recursive call; this one records only the newest trace.
    call = f_wrapped if older_boxes else f_raw
    if met_front_ends:
        call = _answers_unwrapped(call)
    return _Plan((call, argvals, kwargs, tuple(argnums), tuple(parents), top, None))


_NO_OUTPUT_OBJECT = object()


def _front_end_output(f_wrapped, args, kwargs):
    """A call whose output array is a front-end object that takes writes (``as_output``):
    that front end makes it; ``_NO_OUTPUT_OBJECT`` where the output array is not one."""
    out_at = f_wrapped.out_position
    out = kwargs.get("out")
    positional = out is None and out_at is not None and len(args) > out_at
    if positional:
        out = args[out_at]
    if type(out) is tuple and len(out) == 1:
        out = out[0]
    front_end = front_ends.get(type(out))
    if front_end is None or front_end.as_output is None:
        return _NO_OUTPUT_OBJECT
    if positional:
        args = args[:out_at] + args[out_at + 1:]
    kwargs = {key: value for key, value in kwargs.items() if key != "out"}
    return front_end.as_output(out, f_wrapped, args, kwargs)


def _trace_of(value) -> int:
    return value._trace_id if type(value) in _traced_types else 0


def _plan_with_front_ends(f_wrapped, f_raw, args, kwargs, trace_id: int):
    """A traced call with front-end objects among its arguments (see ``FrontEnd``): the
    answer is handed back as an object of their front end."""
    operands = []
    for arg in args:
        if type(arg) in front_ends:
            wrap = front_ends[type(arg)].wrap
            value = front_ends[type(arg)].unwrap(arg)
            if type(value) not in _box_types or value._trace_id == trace_id:
                arg = value
        operands.append(arg)
    plan = _plan_in_general(f_wrapped, f_raw, tuple(operands), kwargs, met_front_ends=True)
    if type(plan) is not _Plan:
        return wrap(plan)
    return _Plan(plan[:-1] + (wrap,))


def _answers_unwrapped(call: Callable) -> Callable:
    """``call`` answering with the value a front-end object holds instead of the object."""

    def unwrapped(*argvals, **kwargs):
        ans = call(*argvals, **kwargs)
        front_end = front_ends.get(type(ans))
        return ans if front_end is None else front_end.value_of(ans)

    return unwrapped


def _through_front_end(f_wrapped, args, kwargs):
    """Call ``f_wrapped`` on the boxes that front-end objects (Tensors) hold, and wrap
    its answer back, so user primitives and their rules see plain boxes."""
    wrap = None
    unwrapped = []
    for arg in args:
        front_end = front_ends.get(type(arg))
        if front_end is not None:
            arg = front_end.unwrap(arg)
            wrap = front_end.wrap
        unwrapped.append(arg)
    return wrap(f_wrapped(*unwrapped, **kwargs))


@cache
def _positional_names(f_raw) -> tuple:
    """Names of ``f_raw``'s leading required parameters that may be given by position."""
    try:
        params = inspect.signature(f_raw).parameters.values()
    except (TypeError, ValueError):  # no signature (e.g. a ufunc)
        return ()
    return tuple(itertools.takewhile(lambda name: name is not None, (
        p.name if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty else None
        for p in params)))


def _keywords_in_place(f_raw, args, kwargs):
    """A traced call with required arguments given by NumPy's names (moveaxis(x, source=0,
    destination=1)) passes them by position, where rules read them: rules name required
    parameters as they like; those with defaults they read by NumPy's name."""
    names = _positional_names(f_raw)
    if len(args) >= len(names) or names[len(args)] not in kwargs:
        return args, kwargs
    args, kwargs = list(args), dict(kwargs)
    while len(args) < len(names) and names[len(args)] in kwargs:
        args.append(kwargs.pop(names[len(args)]))
    return tuple(args), kwargs


def traced_out_refused(name: str, method: str = "__call__") -> TypeError:
    """``out=`` a traced array (not an array that takes writes, such as chainrule.numpy's
    buffers): NumPy would overwrite the array's value, which its trace has recorded."""
    call = name if method == "__call__" else f"{name}.{method}"
    return TypeError(
        f"{call} with out= a traced array: NumPy would write the result into that "
        f"array's value outside what chainrule records, so the derivatives of everything "
        f"computed from the array would be wrong. Nothing was written. Use the returned "
        f"value instead (y = {call}(...) without out=), or write into the array with "
        f"y[...] = value, which chainrule records."
    )


def _call_with_traced_keywords(f_wrapped, f_raw, args, kwargs):
    """Pass traced values given by keyword positionally, where the signature allows it."""
    out = kwargs.get("out")
    if any(type(o) in _traced_types for o in (out if type(out) is tuple else (out,))):
        raise traced_out_refused(getattr(f_raw, "__name__", "this function"))
    given = args, kwargs
    args, kwargs = list(args), dict(kwargs)
    try:
        params = list(inspect.signature(f_raw).parameters.values())[len(args):]
    except (TypeError, ValueError):  # no signature (e.g. a ufunc)
        params = []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for param in params:
        if not any(type(v) in _traced_types for v in kwargs.values()):
            return f_wrapped(*args, **kwargs)
        if param.kind not in positional or (param.name not in kwargs
                                            and param.default is param.empty):
            break
        args.append(kwargs.pop(param.name, param.default))
    names = ", ".join(k for k, v in kwargs.items() if type(v) in _traced_types)
    if not names:
        return f_wrapped(*args, **kwargs)
    for handler in _handlers_met(given[1].values(), "on_traced_keywords"):
        plain = handler(given[1])
        if plain is not NotImplemented:
            return f_wrapped(*given[0], **plain)
    raise TypeError(
        f"{getattr(f_raw, '__name__', f_raw)}: chainrule traces positional arguments only, "
        f"and {names} cannot be passed positionally here. Pass it positionally, or wrap "
        f"the call in a function of it."
    )


def _notrace_followers(args, kwargs) -> list[Box]:
    """The boxes among a notrace call's arguments whose node type has ``on_notrace``: every
    level of boxing, inside list and tuple arguments and keywords too; one per trace,
    newest trace first (as a primitive records on the newest trace). Plain arguments
    cost one look each."""
    found: dict[int, Box] = {}
    for value in itertools.chain(args, kwargs.values()) if kwargs else args:
        if type(value) in _box_types:
            _add_followers(value, found)
        elif type(value) in (list, tuple):
            for item in value:
                if type(item) in _box_types:
                    _add_followers(item, found)
    return [found[trace_id] for trace_id in sorted(found, reverse=True)] if found else []


def _add_followers(box: Box, found: dict[int, Box]) -> None:
    while type(box) in _box_types:
        if box._node.on_notrace is not None and box._trace_id not in found:
            found[box._trace_id] = box
        box = box._value


def _notrace_answer(ans, args, kwargs) -> Any:
    """A notrace call's answer (plain, or a node type's ``on_notrace`` answer), as the box
    type of the first box among the arguments makes it (``Box.on_notrace_answer``)."""
    for value in itertools.chain(args, kwargs.values()) if kwargs else args:
        if type(value) in _box_types and type(value).on_notrace_answer is not None:
            return type(value).on_notrace_answer(ans)
    return ans


def notrace_primitive(f_raw: Callable) -> Callable:
    """Wrap a function whose output does not depend differentiably on its inputs."""

    @wraps(f_raw)
    def f_wrapped(*args, **kwargs):
        if not kwargs:  # (the common call: plain positional arguments, one look each)
            for arg in args:
                if type(arg) in _box_types or type(arg) in (list, tuple):
                    break
            else:
                return f_raw(*args)
        for box in _notrace_followers(args, kwargs):
            ans = box._node.on_notrace(box, f_wrapped, args, kwargs)
            if ans is not NotImplemented:
                return _notrace_answer(ans, args, kwargs)
        # Boxes may also sit inside a sequence argument (lexsort((a, b))): strip those
        # too, or the raw function would dispatch back here forever.
        ans = f_raw(*map(_strip, args), **{k: _strip(v) for k, v in kwargs.items()})
        return _notrace_answer(ans, args, kwargs)

    f_wrapped.fun = f_raw
    f_wrapped._is_chainrule_primitive = True
    f_wrapped._chainrule_notrace = True
    return f_wrapped


def trace_leaves(node_type: type[Node], root_args, fun: Callable, leaves: list, rebuild: Callable):
    """Box each leaf with its own root node on a new trace and call ``fun``.

    ``root_args[i]`` are the arguments of ``node_type.new_root`` for leaf i.
    Returns ``(output, trace_id, root_nodes)``.
    """
    trace_id = next(_trace_ids)
    roots = [node_type.new_root(*r) for r in root_args]
    for leaf in leaves:
        if type(leaf) in _box_types:
            check_not_leaked(leaf)  # differentiating at a leaked value
    boxes = list(map(new_box, leaves, itertools.repeat(trace_id), roots))
    live_trace_ids.add(trace_id)
    try:
        return fun(rebuild(boxes)), trace_id, roots
    finally:
        live_trace_ids.discard(trace_id)


@primitive
def copy_of(value):
    """A copy of ``value``: what copy.copy and copy.deepcopy of a traced value record. Its
    rules (identity in both modes) are registered in rules.py."""
    return copy.deepcopy(value)
