"""``chainrule.jit``: trace a function once, then run it as straight-line NumPy.

The first call for a signature (pytree structure, type/shape/dtype/strides of each array
leaf, values of static arguments and of non-array leaves: ``_signature``) runs ``fun`` on a
*staging trace* (see ``_staging``), which records every primitive call, including the
forward and backward passes of ``grad``, ``jvp``, ``hessian`` ... nested inside ``fun``.
The first call answers from its trace; the record is emitted as a Python function of
plain calls (see ``_emit``), compiled and cached when it first runs, at the second call;
later calls run only that function. Python decisions on traced values become
guards: a call whose guards fail retraces and adds a variant, and past ``max_variants``
variants the function runs eagerly (with one warning). A call whose program raises is
evaluated eagerly; a trace that gave warnings the program does not give, or drew random
numbers, is handled as ``_effects`` says.

The contract (docs/jit.md): a jitted call returns what ``fun`` returns eagerly, on its
arguments with Python floats and complex numbers as NumPy float64 and complex128.
"""

from __future__ import annotations

import functools
import gc
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from .._core import tracer
from .._core.extension import observers
from .._core.heap import graph_memory, no_cycle_collection
from .._core.pytree import LEAF, DictKeys, TreeDef, _sorted_keys, tree_flatten, tree_unflatten
from .._core.tracer import check_not_leaked, front_ends, isbox, trace_leaves
from .._user_code.errstate import strict
from ..numpy.placement import byte_bounds
from . import _check, _effects, _staging
from ._check import JitCheckError
from ._emit import emit, emit_at_first_run, emit_straight, warn_large
from ._errstate import runs_strictly, warning_only
from ._notices import JitWarning, user_stacklevel
from ._program import MISS, RAISED, Program, copied_together
from ._readable import readable
from ._signature import (
    array_defaults,
    is_traced,
    static_key,
    static_parameters,
    walk,
    with_array_defaults,
)
from ._staging import Session, SourcedNode, StagingError, StagingNode

__all__ = ["jit", "JitWarning", "JitCheckError", "StagingError", "CacheInfo"]


class CacheInfo(NamedTuple):
    hits: int  # calls answered by a compiled variant
    misses: int  # calls that traced
    signatures: int  # signatures cached now
    variants: int  # compiled variants over all signatures
    eager: int  # calls run eagerly (traced values as inputs, a program that raised, a
    #            signature run eagerly: random draws, writes, too many variants ...)
    maxsize: int


class Lowered:
    """What ``jit(f).lower(*args)`` answers: the program for those arguments. ``source``
    is it as a reader wants it (``_readable``), ``compiled`` as it runs."""

    def __init__(self, program: Program, source: str):
        self.source = source
        self.compiled = program.source
        self.n_lines = program.n_lines
        self.n_calls = program.n_calls  # primitive calls one run makes (loops counted out)

    def __repr__(self) -> str:
        return self.source


def _unflattener(out_def: TreeDef) -> Callable:
    """From the program's tuple of output leaves to the output's structure: a compiled
    expression for tuples, lists, dicts and None, else ``tree_unflatten``."""
    if out_def.kind is tuple and all(c is LEAF for c in out_def.children):
        return _identity  # the program's tuple is the output
    counter = iter(range(out_def.num_leaves))
    expr = _rebuild_expr(out_def, counter)
    if expr is None:
        return functools.partial(tree_unflatten, out_def)
    return eval(f"lambda o: {expr}", {})  # noqa: S307 (an expression built just above)


def _rebuild_expr(treedef: TreeDef, counter) -> str | None:
    kind = treedef.kind
    if kind is None:
        return f"o[{next(counter)}]"
    if kind is type(None):
        return "None"
    parts = [_rebuild_expr(c, counter) for c in treedef.children]
    if any(p is None for p in parts):
        return None
    if kind is tuple:
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    if kind is list:
        return f"[{', '.join(parts)}]"
    if kind is dict and all(type(k) in (str, int) for k in treedef.aux):
        by_key = dict(zip(treedef.aux, parts))
        order = treedef.aux.order if type(treedef.aux) is DictKeys else treedef.aux
        return "{" + ", ".join(f"{k!r}: {by_key[k]}" for k in order) + "}"
    return None


def _share_memory(leaves: list) -> bool:
    """May two of the array arguments share memory (the same array, views of one, arrays
    over one buffer)? Where their bytes' bounds overlap, as ``numpy.may_share_memory``
    tells, for all of them at once."""
    bounds = sorted(byte_bounds(leaf) for leaf in leaves
                    if isinstance(leaf, np.ndarray) and leaf.size)
    return any(low < high for (_, high), (low, _) in zip(bounds, bounds[1:]))


def _view_onto(view: np.ndarray, node, written, target: np.ndarray) -> np.ndarray:
    """``view`` (the trace's answer at ``node``, a view of ``written``: the last node of a
    written argument) made again from ``target`` (the caller's array, now holding the
    written contents) by the calls that made it, as eager evaluation made it: a view of
    target where NumPy makes one of its layout (``x[::-1]``, ``x.T``), a copy where not
    (``x.ravel()`` of a reversed x). ``view`` itself where the calls are not one chain."""
    chain = []
    while node is not written:
        if len(node.parents) != 1 or len(node.argnums) != 1:
            return view
        chain.append(node)
        node = node.parents[0]
    value = target
    try:
        for n in reversed(chain):
            args = [value] if n.args is n.argnums else \
                [value if k == n.argnums[0] else a for k, a in enumerate(n.args)]
            value = n.fun(*args, **n.kwargs)
    except Exception:
        return view
    if type(value) is not np.ndarray or value.shape != view.shape or \
            value.dtype != view.dtype or value.tobytes() != view.tobytes():
        return view
    return value


def _identity(x: Any) -> Any:
    return x


# nodes: a record kept this long is moved to the cycle collector's oldest generation
_OLD_RECORD = 20_000


def _as_old() -> None:
    """Move the objects alive now to the cycle collector's oldest generation, without a
    scan (``gc.freeze``, then ``gc.unfreeze``: two list splices). A record kept until
    its program is emitted is some 2.5 tracked objects per call, all of them young (the
    collector is paused while tracing): its first collection once it resumes would scan
    them all (0.45 s for the long trace's 300,000 calls, a third of its trace), and the
    next ones again as they age. The process's other young objects age with them; a full
    collection scans everything as it always does. Not done where the process froze
    objects of its own (unfreezing would thaw them)."""
    if not gc.get_freeze_count():
        gc.freeze()
        gc.unfreeze()


def _own_constants(items: list) -> list:
    """``items`` (what a program answers each output from) with the arrays among them (the
    constants) copied, sharing memory as they do (``copied_together``): the caller got the
    arrays themselves, and may change them before the program is emitted."""
    arrays = list({id(o): o for o in items if isinstance(o, np.ndarray)}.values())
    if not arrays:
        return items
    copies = dict(zip(map(id, arrays), copied_together(tuple(arrays))))
    return [copies[id(o)] if isinstance(o, np.ndarray) else o for o in items]


class _Trace:
    """What ``JittedFunction._record`` answers: the session of the staging trace (its
    nodes and guards), the traced leaves (``dyn``) and their boxes and root nodes, the
    output's leaves and TreeDef, the trace's id and the warnings it gave."""

    session: Session
    dyn: list
    boxes: list | tuple = ()  # (none where the function takes no traced leaf)
    roots: list
    out_leaves: list
    out_def: TreeDef
    trace_id: int
    caught: list

    def outputs(self) -> tuple[list, list]:
        """Per output leaf: what the program answers it from (a node of this trace, or a
        constant), and its value now."""
        items, plain = [], []
        for leaf in self.out_leaves:
            if isbox(leaf) and leaf._trace_id == self.trace_id:
                items.append(leaf._node)
                plain.append(leaf._value)
            else:
                if isbox(leaf):
                    check_not_leaked(leaf)  # (a box of an outer trace: not replayable)
                items.append(leaf)
                plain.append(leaf)
        return items, plain

    def written(self) -> list[int]:
        """The traced leaves the function wrote into in place: their boxes were rebound
        to later values (see ``ArrayBox._rebind``)."""
        return [i for i, (box, root) in enumerate(zip(self.boxes, self.roots))
                if box._node is not root and isinstance(self.dyn[i], np.ndarray)]


class _Entry:
    __slots__ = ("variants", "eager", "failed")

    def __init__(self):
        self.variants: list[Program] = []
        self.eager = False
        self.failed = 0  # traces whose record could not be kept (see _keep)


_AS_NUMPY = {float: np.float64, complex: np.complex128}


class JittedFunction:
    """``fun`` staged and compiled per signature; see ``chainrule.jit``."""

    def __init__(
        self,
        fun: Callable,
        static_argnums: Iterable[int],
        static_argnames: Iterable[str],
        max_variants: int,
        maxsize: int,
    ):
        self.fun = fun
        self.max_variants = max_variants
        self.maxsize = maxsize
        self._cache: OrderedDict = OrderedDict()
        self._hits = self._misses = self._eager = 0
        self._name = getattr(fun, "__name__", "fun").replace("<", "_").replace(">", "_")
        if not self._name.isidentifier():
            self._name = "fun"
        self.static_argnums, self.static_argnames, self._n_positional = static_parameters(
            fun, frozenset(static_argnums), frozenset(static_argnames),
            getattr(fun, "__name__", "the function"))
        self._positions: dict[int, frozenset[int]] = {}  # see _static_positions
        self._array_defaults = array_defaults(fun)  # (see _with_defaults)
        # The name, docstring and __wrapped__ only: copying ``fun.__dict__`` (what
        # update_wrapper does by default) would overwrite this object's own state with
        # the attributes of a chainrule primitive (``fun``), of another jitted function
        # (its cache) or of whatever a decorator copied onto ``fun``.
        functools.update_wrapper(self, fun, updated=())

    # -------------------------------------------------------------- signature
    def _static_positions(self, n_args: int) -> frozenset[int]:
        """``static_argnums`` as positions among ``n_args`` positional arguments: a
        negative one counts from the end of ``fun``'s positional parameters (as in JAX),
        or of the arguments given where ``fun`` takes ``*args``; one past the arguments
        given names no argument (a parameter left at its default)."""
        positions = self._positions.get(n_args)
        if positions is None:
            n = self._n_positional or n_args
            positions = self._positions[n_args] = frozenset(
                i % n for i in self.static_argnums if -n <= i < n and i % n < n_args)
        return positions

    def _signature(self, args, kwargs) -> tuple[tuple, list]:
        """The cache key and the traced leaves, in one pass over the arguments (see
        ``_signature.walk``). Keywords are walked in sorted order (``tree_flatten``'s),
        and their order as given is a token too (the function may read ``**kwargs`` in
        that order)."""
        tokens: list = []
        dyn: list = []
        statics = self._static_positions(len(args)) if self.static_argnums else ()
        if not statics:
            walk(args, tokens, dyn)
        else:
            for i, a in enumerate(args):
                if i in statics:
                    tokens.append(("static", i, _static_token(a)))
                else:
                    walk(a, tokens, dyn)
        if kwargs:
            tokens.append(tuple(kwargs))
            for k in _sorted_keys(kwargs):
                v = kwargs[k]
                if k in self.static_argnames:
                    tokens.append(("static", k, _static_token(v)))
                else:
                    tokens.append(k)
                    walk(v, tokens, dyn)
        return tuple(tokens), dyn

    def _split(self, args, kwargs):
        """The leaves, their TreeDef and the static arguments, for a trace."""
        statics = []
        dyn_args = list(args)
        for i in sorted(self._static_positions(len(args))):
            statics.append((i, args[i]))
            dyn_args[i] = None
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self.static_argnames:
                statics.append((k, v))
                dyn_kwargs[k] = None  # (a place holder: the keywords keep their order)
            else:
                dyn_kwargs[k] = v
        leaves, treedef = tree_flatten((tuple(dyn_args), dyn_kwargs))
        return leaves, treedef, statics

    def _call_with(self, leaves, treedef, statics):
        dyn_args, kwargs = tree_unflatten(treedef, leaves)
        args = list(dyn_args)
        kwargs = dict(kwargs)
        for where, v in statics:
            if type(where) is int:
                args[where] = v
            else:
                kwargs[where] = v
        return self.fun(*args, **kwargs)

    def _with_defaults(self, args, kwargs) -> dict:
        """The keywords, with the arrays of the parameters the call leaves to an array
        default: an argument, not a constant read when traced, so that the program reads
        the array's contents at each call, as eager evaluation does."""
        return with_array_defaults(self.fun, self._array_defaults, args, kwargs)

    # -------------------------------------------------------------- calls
    def __call__(self, *args, **kwargs):
        if self._array_defaults:
            kwargs = self._with_defaults(args, kwargs)
        if kwargs or self.static_argnums:
            key, dyn = self._signature(args, kwargs)
        else:  # (the common call, without a call of _signature)
            tokens: list = []
            dyn = []
            walk(args, tokens, dyn)
            key = tuple(tokens)
        if observers and any(observer.sees_every_run for observer in observers):
            # a tool that must see every run's calls (debug_nans) is on: a compiled
            # program makes no nodes, so the call is eager evaluation's, where it sees them
            return self._eager_call(args, kwargs, dyn)
        entry = self._cache.get(key)
        if entry is not None:
            if entry.eager:
                return self._eager_call(args, kwargs, dyn)
            strictly = runs_strictly()
            for program in entry.variants:
                if strictly:  # (see _errstate.runs_strictly: the program tells nothing)
                    with strict():
                        out = program.call(*dyn)
                else:
                    out = program.call(*dyn)
                if out is MISS:
                    continue
                if out is RAISED:
                    return self._eager_call(args, kwargs, dyn)
                self._hits += 1
                return program.unflatten(out)
        leaves, treedef, statics = self._split(args, kwargs)
        if any(isbox(leaf) or type(leaf) in front_ends or type(leaf) in tracer.batched_types
               for leaf in leaves):
            self._eager += 1  # inside another trace (grad(jit(f)), vmap): trace through
            return self.fun(*args, **kwargs)
        return self._trace(key, leaves, treedef, statics, entry, dyn)[0]

    def _eager_call(self, args, kwargs, dyn: list):
        """``fun`` evaluated eagerly, on the arguments as a trace sees them (Python floats
        and complex numbers as NumPy scalars; ``dyn``: the traced leaves)."""
        self._eager += 1
        if not any(type(x) in _AS_NUMPY for x in dyn):
            return self.fun(*args, **kwargs)
        leaves, treedef, statics = self._split(args, kwargs)
        leaves = [_AS_NUMPY[type(x)](x) if type(x) in _AS_NUMPY else x for x in leaves]
        return self._call_with(leaves, treedef, statics)

    def _trace(self, key, leaves, treedef, statics, entry, walked):
        # A trace makes many objects that live until the program is emitted, and the
        # cyclic collector would scan them again and again (a third of an RNN's trace);
        # reference counting frees them when the record is dropped. Its memory is kept
        # in the heap as a gradient's is (heap.graph_memory): that also sets glibc's
        # thresholds before the process's first program runs, whose arrays above glibc's
        # first mmap threshold (128 KiB) were otherwise mapped and unmapped at every call
        # of a process that only runs jitted programs.
        with graph_memory():
            return self._trace_and_emit(key, leaves, treedef, statics, entry, walked)

    def _trace_and_emit(self, key, leaves, treedef, statics, entry, walked):
        if entry is None:
            entry = self._cache[key] = _Entry()
            while len(self._cache) > self.maxsize:
                self._cache.popitem(last=False)
        elif len(entry.variants) + entry.failed >= self.max_variants:
            return self._give_up(entry, leaves, treedef, statics, (
                f"was traced {len(entry.variants) + entry.failed} times for one signature "
                f"because its guards (Python decisions on traced values: if, while, int(), "
                f"indexing) kept failing, or its calls raised exceptions it caught, or gave "
                f"warnings; it now runs eagerly for this signature. Raise max_variants, or "
                f"make the deciding argument static."))
        self._misses += 1
        randomness = _effects.RandomState(self.fun, [v for _, v in statics])
        # (arguments that share memory: a write into one is not seen through the other by
        # the trace, which boxes each apart; such a call is made again eagerly, from the
        # arrays and Python state the function reaches as they were: kept first)
        outside = _effects.Outside(self.fun, [v for _, v in statics]) if _share_memory(
            walked) else None
        trace = self._record(leaves, treedef, statics, walked, StagingNode)
        try:
            if outside is not None and trace.written():
                # f(x, x) writing into x: the trace read the other one's old contents; the
                # call is eager evaluation's, its draws and its effects outside made once
                # (the caller's arrays are as they were: the trace wrote into its copies)
                randomness.restore()
                outside.restore()
                leaves = [_AS_NUMPY[type(x)](x) if type(x) in _AS_NUMPY else x for x in leaves]
                return self._give_up(entry, leaves, treedef, statics, (
                    "writes into an argument that shares memory with another one (f(x, x), "
                    "f(x, x[::-1])), which a trace cannot follow; it runs eagerly for this "
                    "signature. Pass a copy (f(x, x.copy())) or write into a copy to "
                    "compile it."))
            return self._keep(trace, key, entry, randomness)
        finally:
            trace.session.close()

    def _record(self, leaves, treedef, statics, walked, node_type) -> _Trace:
        """Run ``fun`` on a staging trace (its nodes of ``node_type``): the record."""
        trace = _Trace()
        dyn_pos = [i for i, leaf in enumerate(leaves) if is_traced(leaf)]
        trace.dyn = dyn = [leaves[i] for i in dyn_pos]
        if len(dyn) != len(walked) or any(a is not b for a, b in zip(dyn, walked)):
            # the program's inputs are the cached call's walk: the two orders must agree
            raise AssertionError(
                "chainrule.jit: the signature walk and tree_flatten disagree on the order of "
                "the traced leaves; please report this with the argument types."
            )

        def staged(boxes):
            if boxes:
                session.trace_id = boxes[0]._trace_id
            trace.boxes = boxes
            for box in boxes:
                if type(box._value) is np.ndarray and box._value.dtype.kind in "iub":
                    _staging.staged_as_mask(box)
            full = list(leaves)
            for i, b in zip(dyn_pos, boxes):
                full[i] = b
            return tree_flatten(self._call_with(full, treedef, statics))

        trace.session = session = Session(0)
        previous = _staging.current()
        _staging._state.session = session
        caught: list = []
        try:
            with _effects.recording() as caught:
                (trace.out_leaves, trace.out_def), trace.trace_id, trace.roots = trace_leaves(
                    node_type, [(leaf, i) for i, leaf in enumerate(dyn)], staged, dyn, list)
        except BaseException:
            session.close()
            raise
        finally:
            _staging._state.session = previous
            _effects.show(caught)
        trace.caught = caught
        return trace

    def _keep(self, trace: _Trace, key, entry: _Entry, randomness):
        """The trace's result, and its program (emitted when it first runs), kept as a
        variant of ``entry`` where the record can answer later calls (else None)."""
        items, plain = trace.outputs()
        written = trace.written()
        if written:
            # The function wrote into an array argument (x[i] = v, x += v): eagerly the
            # caller's array changes, and a returned x is that array; the trace wrote
            # into its own copy, so the caller's array is given the contents it ends with.
            # An output that is a view of it (x[::-1]) is that view of the caller's array.
            views: dict = {}
            for i in written:
                final = trace.boxes[i]._value
                np.copyto(trace.dyn[i], final)
                for k, leaf in enumerate(trace.out_leaves):
                    if leaf is trace.boxes[i]:
                        plain[k] = trace.dyn[i]
                    elif type(plain[k]) is np.ndarray and isbox(leaf) and \
                            np.shares_memory(plain[k], final):
                        if id(plain[k]) not in views:
                            views[id(plain[k])] = _view_onto(
                                plain[k], leaf._node, trace.boxes[i]._node, trace.dyn[i])
                        plain[k] = views[id(plain[k])]
        result = tree_unflatten(trace.out_def, plain)
        session = trace.session
        if session.impure or any(isbox(leaf) for leaf in items):
            # A closed-over box of an outer trace: the result is right (the outer trace
            # recorded its part) but the record cannot be replayed without it.
            self._cache.pop(key, None)
            self._eager += 1
            return result, None
        why = ""
        if written:
            why = (f"writes into its argument{'s' if len(written) > 1 else ''} (x[i] = v, "
                   f"x += v), which a compiled program does not; it runs eagerly for this "
                   f"signature. Write into a copy (x = x.copy()) to compile it.")
        elif session.fills:
            why = ("writes traced values into a NumPy array it made (a[i] = x, a += x) or "
                   "makes one of them (numpy.asarray(x)), which a compiled program cannot "
                   "follow; it runs eagerly for this signature. Build the array from traced "
                   "values (np.stack, np.concatenate, np.where), write a = "
                   "chainrule.numpy.index_update(a, i, x), and compute with chainrule.numpy "
                   "rather than a NumPy array of x, to compile it.")
        elif session.errstate_acts:
            why = ("sets NumPy's error state to raise or call out inside (np.errstate, "
                   "np.seterr), which a compiled program, run under the caller's error "
                   "state, would not; it runs eagerly for this signature. Set the error "
                   "state around the call to compile it.")
        elif randomness.changed():
            why = ("draws random numbers (numpy.random, random, or a generator it reaches), "
                   "which a compiled program would draw once for all calls; it runs eagerly "
                   "for this signature. Draw them outside and pass them as arguments to "
                   "compile it.")
        if why:
            self._give_up(entry, None, None, None, why)
            return result, None
        if session.raised:
            entry.failed += 1  # (the next call traces again, or runs a variant)
            return result, None
        # emitted when it first runs (at the next call): a signature called once never
        # pays for it; until then the program keeps the record
        warn_large(self._name, session.nodes, session.guards, items)
        record = list(session.nodes)
        program = emit_at_first_run(len(trace.dyn), record, _own_constants(items),
                                    session.guards, self._name)
        if len(record) >= _OLD_RECORD:
            _as_old()
        program.unflatten = _unflattener(trace.out_def)
        if session.errstate_changed:
            program.call = _effects.Quiet(program.call)
        if trace.caught:
            program = self._with_warnings(program, trace.dyn, trace.caught)
            if program is None:
                entry.failed += 1
                return result, None
        entry.variants.append(program)
        return result, program

    def _with_warnings(self, program: Program, dyn: list, caught: list) -> Program | None:
        """The program of a trace that gave warnings: it gives NumPy's warnings itself
        where it makes the calls that gave them; the others (a transform's notice, a
        warning of the function's own or of a constant's computation) it gives again on
        each call. Found by running it once on the trace's inputs; None where it raised
        there (the call's values made NumPy warn: the next call traces again)."""
        with warnings.catch_warnings(record=True) as given, warning_only():
            warnings.simplefilter("always")
            out = program.call(*dyn)
        if out is RAISED or out is MISS:
            return None
        missing = _effects.not_given_by(caught, given)
        if missing:
            program.call = _effects.Replaying(program.call, missing)
        return program

    def _give_up(self, entry: _Entry, leaves, treedef, statics, why: str):
        """Run ``fun`` eagerly for this signature from now on (with one JitWarning)."""
        entry.eager = True
        warnings.warn(f"chainrule.jit: {self._name} {why}", JitWarning,
                      stacklevel=user_stacklevel())
        if leaves is None:
            return None
        self._eager += 1
        return self._call_with(leaves, treedef, statics), None

    def lower(self, *args, **kwargs) -> Lowered:
        """The program for these arguments, as a reader wants it: NumPy's names, and
        each call's primitive and the user's line that made it (``fun`` is traced anew,
        with nodes that note their lines; the cache is left as it was)."""
        if self._array_defaults:
            kwargs = self._with_defaults(args, kwargs)
        _, dyn = self._signature(args, kwargs)
        leaves, treedef, statics = self._split(args, kwargs)
        # (the cycle collector paused, as for a call's trace and emit: both make objects a
        # few per recorded call, which its collections would rescan with the whole record)
        with no_cycle_collection():
            return self._lowered(leaves, treedef, statics, dyn)

    def _lowered(self, leaves, treedef, statics, dyn) -> Lowered:
        trace = self._record(leaves, treedef, statics, dyn, SourcedNode)
        try:
            items, _ = trace.outputs()
            if trace.session.impure or any(isbox(leaf) for leaf in items):
                raise StagingError(
                    f"chainrule.jit: {self._name} cannot be staged for these arguments: it "
                    f"closes over values traced outside it.")
            session = trace.session
            program = emit(len(trace.dyn), session.nodes, items, session.guards, self._name)
            if not program.namespace:  # (a table: it is read as straight code)
                _, source, _, namespace = emit_straight(
                    len(trace.dyn), session.nodes, items, session.guards, self._name)
                note = (f"(it runs as a table of its {program.n_calls} calls: too long to "
                        f"compile, see chainrule.jit._interpret; here as straight code)")
                return Lowered(program, readable(source, namespace, note))
            return Lowered(program, readable(program.source, program.namespace))
        finally:
            trace.session.close()

    def variants_for(self, *args, **kwargs) -> list[Program] | None:
        """The programs compiled for the signature of these arguments, for a caller that
        runs them itself after a lighter check of its own (a solver calling one function
        at every step on arrays of one signature). ``program.run(*leaves)`` takes the
        array leaves in ``tree_flatten`` order and answers the output leaves, or ``MISS``
        where it cannot answer (a guard fails, or a call raised): calling the jitted
        function then answers (it traces a new variant, which is appended to this same
        list, or evaluates the call eagerly). None where the signature has no program (not
        traced yet, closing over values of an outer trace, or run eagerly)."""
        if self._array_defaults:
            kwargs = self._with_defaults(args, kwargs)
        entry = self._cache.get(self._signature(args, kwargs)[0])
        if entry is None or entry.eager or not entry.variants:
            return None
        return entry.variants

    def cache_info(self) -> CacheInfo:
        return CacheInfo(
            self._hits,
            self._misses,
            len(self._cache),
            sum(len(e.variants) for e in self._cache.values()),
            self._eager,
            self.maxsize,
        )

    def clear_cache(self) -> None:
        self._cache.clear()
        self._hits = self._misses = self._eager = 0

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)


class CheckedJittedFunction(JittedFunction):
    """``jit(fun, check=True)``: each call is run jitted and eagerly, and a difference
    raises ``JitCheckError`` naming the program's line, the primitive and the line of
    ``fun`` that made the first value that differs (see ``_check``). Python side effects
    of ``fun`` happen twice per call (three times where a difference is named)."""

    def __call__(self, *args, **kwargs):
        states = _check.RandomStates()
        copies = [_check.same_layout_copy(x) if isinstance(x, np.ndarray) else x
                  for x in tree_flatten((args, kwargs))[0]]
        got = _check.Outcome(lambda: JittedFunction.__call__(self, *args, **kwargs))
        states.restore()
        copied_args, copied_kwargs = tree_unflatten(tree_flatten((args, kwargs))[1], copies)
        want = _check.Outcome(lambda: self._reference(copied_args, copied_kwargs))
        originals = tree_flatten((args, kwargs))[0]
        problems = _check.differences(want, got, originals, copies)
        if problems:
            raise _check.JitCheckError(self._report(problems, args, kwargs))
        return got.give()

    def _reference(self, args, kwargs):
        """``fun`` evaluated eagerly, on the arguments as a trace sees them."""
        leaves, treedef, statics = self._split(args, kwargs)
        leaves = [_AS_NUMPY[type(x)](x) if type(x) in _AS_NUMPY else x for x in leaves]
        return self._call_with(leaves, treedef, statics)

    def _record(self, leaves, treedef, statics, walked, node_type) -> _Trace:
        # (checked: every record keeps its values and lines, and a program its record)
        return super()._record(leaves, treedef, statics, walked, _check.CheckedNode)

    def _keep(self, trace: _Trace, key, entry: _Entry, randomness):
        record = list(trace.session.nodes)  # (the session empties its own when it closes)
        result, program = super()._keep(trace, key, entry, randomness)
        if program is not None:
            program.record = record
        return result, program

    def _report(self, problems: list[str], args, kwargs) -> str:
        head = (f"chainrule.jit(check=True): {self._name} differs from eager evaluation on "
                f"this call:\n  " + "\n  ".join(problems))
        try:
            where = self._where(args, kwargs)
        except Exception as error:  # noqa: BLE001 (the report must not hide the difference)
            where = f"(tracing it again to find the line raised {type(error).__name__}: {error})"
        return f"{head}\n{where}"

    def _where(self, args, kwargs) -> str:
        """Where the difference comes from: the trace itself, a constant or a path of the
        function that changed since its program was traced, or the first value of the
        program that is not eager evaluation's."""
        key, dyn = self._signature(args, kwargs)
        leaves, treedef, statics = self._split(args, kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = self._record(leaves, treedef, statics, dyn, _check.CheckedNode)
            try:
                items, plain = trace.outputs()
                traced = _check.Outcome(lambda: tree_unflatten(trace.out_def, plain))
                reference = _check.Outcome(lambda: self._reference(args, kwargs))
                if _check.differences(reference, traced, []):
                    return _check.TRACE_DIFFERS
                entry = self._cache.get(key)
                for program in entry.variants if entry is not None else ():
                    if program.run(*dyn) is not MISS:
                        changed = _check.changed_since(program.record, trace.session.nodes)
                        if changed:
                            return changed
                program, source, placed, _ = emit_straight(
                    len(trace.dyn), trace.session.nodes, items, trace.session.guards,
                    self._name)
                return _check.first_wrong_value(program, source, placed, trace.dyn)
            finally:
                trace.session.close()


def _static_token(value: Any) -> Any:
    try:
        return static_key(value)
    except TypeError:
        raise StagingError(
            "chainrule.jit: static arguments must be hashable (they are part of the cache "
            "key); pass arrays as ordinary (traced) arguments."
        ) from None


def jit(
    fun: Callable | None = None,
    *,
    static_argnums: int | Iterable[int] = (),
    static_argnames: str | Iterable[str] = (),
    max_variants: int = 8,
    maxsize: int = 64,
    check: bool = False,
) -> Any:
    """Trace ``fun`` once per signature and run it afterwards as straight-line NumPy.

    ``jit(grad(f))``, ``jit(hessian(f))`` and ``jit(lambda p: value_and_grad(loss)(p, b))``
    stage the whole derivative computation, backward passes included.

    Semantics, as in JAX: Python side effects in ``fun`` happen when it is traced only;
    values computed from globals, closures or ``numpy.random`` inside ``fun`` are
    constants of the trace (a warning names arrays over 1 MB that are baked in). Python
    decisions on traced values (``if x > 0``, ``while``, ``int(x)``, indexing with a
    traced integer) become guards: a call where one fails retraces and adds a variant;
    after ``max_variants`` variants for one signature, ``fun`` runs eagerly (one warning).
    Integer arguments and other non-array leaves are part of the signature, like
    ``static_argnums``/``static_argnames`` (which must be hashable). Called with traced
    values (``grad(jit(f))``), ``fun`` is traced through. ``f.lower(*args).source`` is the
    emitted program; ``f.cache_info()``, ``f.clear_cache()``; at most ``maxsize``
    signatures are kept (oldest dropped first).
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    if fun is None:
        return functools.partial(
            jit,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            max_variants=max_variants,
            maxsize=maxsize,
            check=check,
        )
    kind = CheckedJittedFunction if check else JittedFunction
    return kind(fun, static_argnums, static_argnames, max_variants, maxsize)


# ``chainrule.jit`` is this function (the package's name is taken by it on ``chainrule``):
# the names a user needs with it are its attributes too (``chainrule.jit.JitCheckError``)
jit.MISS = MISS
jit.JitWarning = JitWarning
jit.JitCheckError = JitCheckError
jit.StagingError = StagingError
