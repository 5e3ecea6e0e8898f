"""What a jitted function runs for a signature: a ``Program``, and what every program,
compiled (``_emit``) or run as a table (``_interpret``), shares: which recorded calls it
makes (``needed``: dead-code elimination that keeps every call eager evaluation could hear
of), what a guard checks (``guard_holds``, ``same``), and what it answers when it cannot
(``MISS``, ``RAISED``)."""

from __future__ import annotations

import struct
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.heap import no_cycle_collection
from .._core.tracer import getval
from ._staging import ArrayMeta, Guard, StagingNode, _identity, _NotraceCall, rules_of_call

MISS = object()  # what an emitted program answers when a guard fails
RAISED = object()  # what it answers when a call in it raised: the call is evaluated eagerly


class AtFirstRun:
    """A program's function, made when it first runs (``make()`` answers it: compiled
    source, a table, or the whole program: ``_emit.emit_at_first_run``): the call that
    traces answers from its trace, so a signature called once never pays for it.
    ``program``: a weak reference to the ``Program`` whose ``call`` this is, which then
    calls the function itself (no call through this object); None for a function only
    other code calls (a float program's exact program). (Weak: a program and its call
    would be a cycle, which only the cycle collector frees where the program never runs.)"""

    __slots__ = ("make", "fn", "program")

    def __init__(self, make: Callable[[], Callable]):
        self.make, self.fn, self.program = make, None, None

    def __call__(self, *args):
        fn = self.fn
        if fn is None:
            fn = self.made()
        return fn(*args)

    def made(self) -> Callable:
        """The function, made now if it was not yet (once: two threads' first runs take
        turns; an emit reads and marks the record's nodes)."""
        with _making:
            fn = self.fn
            if fn is None:
                # (the cycle collector paused: an emit makes objects a few per recorded
                # call, which its collections rescanned with the whole record: a full one
                # on a long record, 1.6 s of the 4096-character lstm's 3.5 s second call)
                with no_cycle_collection():
                    fn = self.make()
                fn = self.fn = fn
                self.make = None  # (what it was made from: freed)
                program = self.program and self.program()
                self.program = None
                if program is not None and program.call is self:  # (not wrapped since)
                    program.call = fn
        return fn


_making = threading.RLock()  # (re-entrant: a program made may make the functions it calls)


class Program:
    """One compiled variant: ``call(*leaves)`` answers the output leaves, ``MISS`` where a
    guard fails, or ``RAISED`` where a call raised (an overflow, a failed factorisation,
    a guard's ``int()`` of a nan: eager evaluation then answers, with its warnings or its
    exception, which the function may catch). ``run(*leaves)`` answers ``MISS`` for both
    (see ``JittedFunction.variants_for``)."""

    def __init__(self, source: str, call, n_lines: int, n_calls: int,
                 namespace: dict | None = None):
        self.source = source
        self.call = call
        if type(call) is AtFirstRun:
            call.program = weakref.ref(self)
        self.n_lines = n_lines
        self.n_calls = n_calls  # primitive calls one run makes (a rolled loop's, each time)
        self.namespace = {} if namespace is None else namespace  # its globals (f0, c0 ...)

    def run(self, *leaves):
        out = self.call(*leaves)
        return MISS if out is RAISED else out


def needed(nodes: list[StagingNode], outputs: list,
           guards: list[Guard]) -> tuple[list[StagingNode], list[StagingNode]]:
    """The nodes the program runs, in the order they were made (``nodes``: the record):
    what the outputs and the guards need, and every call that might raise or warn (a
    product may overflow, a Cholesky factorisation fail), with what it needs, for eager
    evaluation makes them too. Only calls that can do neither (their entries' ``silent``: views,
    reshapes, indexing with fixed indices, negation) are left out where nothing reads them.
    Also answers those that nothing reads (no output, guard or node it runs: those run
    for their errors and warnings only), known here for nothing earlier reads a node."""
    # A node read is marked on itself (its ``place``), not kept in a set: the walk touches
    # each node and its parents anyway, and a set of the record's nodes costs a hash
    # table as large (half the walk's time on a long record).
    read = object()  # (this walk's own mark)
    for node in outputs:
        node.place = read
    for g in guards:
        g.node.place = read
    found = []
    unread = []
    keep = found.append
    for node in reversed(nodes):
        if node.place is read:
            keep(node)
        elif not _silent(node):
            keep(node)
            unread.append(node)
        else:
            continue
        for parent in node.parents:
            parent.place = read
    found.reverse()
    return found, unread


def _silent(node: StagingNode) -> bool:
    fun = node.fun
    if fun is None or type(fun) is _NotraceCall:
        return True  # (an input; a comparison, whose answer is guarded where it is used)
    when = rules_of_call(node).silent
    if when is None:
        return False
    if when == "always":
        return True
    if node.argnums != (0,):
        return False  # "fixed index": indexing by a traced index may be out of range
    return when == "fixed index" or _one_number(node.parents[0].ans)  # "one number"


def _one_number(ans: Any) -> bool:
    return type(ans) in _FLOAT_SCALARS or (type(ans) is ArrayMeta and ans.shape == ())


def same(a: Any, b: Any) -> bool:
    """Whether a guarded value is the one the trace decided on: of the same type and
    equal bit for bit (``-0.0`` is not ``0.0``, a nan is itself), a tuple or list item
    by item (``np.nonzero``, ``np.histogram``)."""
    t = type(a)
    if t is not type(b):
        return False
    if t is tuple or t is list:
        return len(a) == len(b) and all(map(same, a, b))
    if t is float:
        return _DOUBLE.pack(a) == _DOUBLE.pack(b)
    if t is complex:
        return _DOUBLE.pack(a.real) == _DOUBLE.pack(b.real) and \
            _DOUBLE.pack(a.imag) == _DOUBLE.pack(b.imag)
    if t is np.ndarray or isinstance(a, np.generic):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.hasobject:
            return bool(np.array_equal(a, b))
        return a.tobytes() == b.tobytes()
    try:
        return bool(a == b)
    except Exception:
        return False


_DOUBLE = struct.Struct("<d")


def copied_together(arrays: tuple) -> tuple:
    """Copies of ``arrays`` (the array constants among a program's outputs) that share
    memory as they do: each base array copied once, each view of it rebuilt on that copy
    with its own offset and strides (``v`` and ``v[::-1]`` stay a base and its view, as
    eager evaluation returns them). A program copies them at its trace and again on every
    call, so no call's output is another's."""
    copies: dict[int, np.ndarray] = {}
    out = []
    for a in arrays:
        if type(a) is not np.ndarray:  # (a masked array, a recarray: its own copy keeps its
            out.append(a.copy(order="K"))  # class and mask, a view's of its base would not)
            continue
        base = a
        while isinstance(base.base, np.ndarray):
            base = base.base
        if not (base.flags.c_contiguous or base.flags.f_contiguous) or not a.size:
            base = a  # (a base NumPy cannot rebuild views on: a copy of its own)
        copy = copies.get(id(base))
        if copy is None:
            copy = copies[id(base)] = base.copy(order="K")
        if base is not a:
            offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
            copy = np.ndarray(a.shape, a.dtype, buffer=copy, offset=offset, strides=a.strides)
        out.append(copy)
    return tuple(out)


def guard_holds(guard: Guard, value: Any) -> bool:
    """What the check ``_guard_code`` writes answers: whether the value a guard reads on
    this call is the one its trace decided on."""
    expected = guard.expected
    plain = guard.convert is _identity or guard.convert is getval
    if guard.convert is bool or (plain and type(expected) in (bool, np.bool_)):
        return bool(value) == bool(expected)
    return same(value if plain else guard.convert(value), expected)


_FLOAT_SCALARS = (float, np.float64)
