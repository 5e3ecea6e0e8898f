"""``vmap``: a function mapped over an axis of its arguments (JAX's ``in_axes``/``out_axes``,
torch.func's ``randomness``).

The contract: ``vmap(f)(xs)`` returns ``stack([f(x) for x in xs])`` (tree by tree, along
``out_axes``) — values, dtypes, pytree — or raises a clear error naming what it cannot do.

The function is called once, on BatchedArrays (``chainrule.numpy.batched``): each stands
for one example and holds the whole batch, and each primitive answers for the whole batch
by its batching rule (or, lacking one, once per example). vmap is a trace like grad's, so it
composes with every transform in any order (``vmap(grad(f))`` gives per-example gradients,
``grad`` of a summed ``vmap`` differentiates through it).

Where the batched call cannot keep the contract, vmap reruns the whole function: per group
of examples that agree when a Python decision on the data splits them (``if x.sum() > 0``),
per example when something cannot run on the batch (a batched value written into a NumPy
array, ``np.asarray(x)``) or when the function drew random numbers (randomness
"different"). Splitting is bounded: once it would cost more than ``_SPLIT_BUDGET`` times
the per-example loop (measured as it goes), the remaining examples run one by one. The
first batched run of a call has a deadline too, from what an example cost in an earlier
call, or (a first call) from example 0 run alone before the others, as the loop's own first
run. A mapped function called inside an outer vmap's batched run runs once on the product
batch of both vmaps' examples (``_Call._product``).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any

import numpy as _np

from .. import numpy as anp
from .._core import tracer
from .._core.pytree import LEAF, tree_flatten, tree_unflatten
from .._core.tracer import live_trace_ids
from .._sparsity.products import is_sparse_type
from .._user_code import reach
from ..numpy.batched import OUT_OF_TIME, BatchedArray, BatchSplit, BatchTrace
from ..numpy.numpy_boxes import memory_of, underlying
from ..numpy.placement import constant_like

AxisSpec = Any  # an int, None, or a pytree of them (a prefix of the arguments' structure)

RANDOMNESS = ("different", "same", "error")
# Splitting a batch on Python decisions may take this many times the (estimated) time of
# the per-example loop before the examples left run one by one.
_SPLIT_BUDGET = 1.35
# A mapped function whose call cost more than the loop (its examples split or ran one by
# one) runs as the loop for its next calls, then tries again: as many calls as spread that
# call's excess over the loop to _EXCESS of the loop per call, and at least twice as many
# as the last time it backed off, at most _MAX_BACKOFF.
_EXCESS = 0.2
_MAX_BACKOFF = 256
_FIRST_BACKOFF = 2
# What a mapped function's first batched run of a kind of call is taken to cost, in
# examples run alone, before one has run: a batched value's call costs more than NumPy's
# own (on small arrays about twice), so a small batch of a cheap function runs as the loop.
_FIRST_RUN_COST = 2.0
# What a batched run costs at least, however cheap the function (its trace, the batched
# arguments, the answer taken apart): a batch of functions of 0.1 µs runs as the loop.
_LEAST_RUN_SECONDS = 2e-5
# A batch of this many examples or fewer runs as the loop but for its trials (see
# _Call._loop_at_once).
_SMALL_BATCH = 8
# A first call of this many examples or more times examples 0 and 1 alone, not only 0.
_TWO_TIMED = 16
# Examples run alone after a split, to know what an example costs (the middle one counts).
_MEASURED = 3
# What an example costs is kept for this many kinds of call (shapes and dtypes of the
# arguments) of one mapped function.
_ESTIMATES = 16


def _broadcast_prefix(spec: AxisSpec, tree: Any, what: str) -> list:
    """One axis (int or None) per leaf of ``tree``: ``spec`` is an int/None for the whole
    tree, or a pytree whose leaves stand for whole subtrees of ``tree`` (JAX's prefix rule)."""
    if spec is None or isinstance(spec, int):
        return [spec] if type(tree) in _ARRAY_LEAVES else [spec] * len(tree_flatten(tree)[0])
    if isinstance(spec, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(spec) != len(tree):
            raise ValueError(
                f"vmap: {what} has {len(spec)} entries but the value it "
                f"describes has {len(tree)}; give one axis per entry."
            )
        return [ax for s, t in zip(spec, tree) for ax in _broadcast_prefix(s, t, what)]
    if isinstance(spec, dict) and isinstance(tree, dict):
        if set(spec) != set(tree):
            raise ValueError(
                f"vmap: {what} has keys {sorted(spec)} but the value it "
                f"describes has keys {sorted(tree)}."
            )
        # tree_flatten orders dict leaves by sorted key; follow the same order
        keys = sorted(tree)
        return [ax for k in keys for ax in _broadcast_prefix(spec[k], tree[k], what)]
    raise ValueError(
        f"vmap: {what} must be an int, None, or a tuple/list/dict of them "
        f"matching the structure of the value; got {spec!r}."
    )


def _normalize_axis(axis: int, ndim: int, what: str) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"vmap: {what} is {axis}, out of range for a value with {ndim} dimension(s)."
        )
    return axis % ndim


def vmap(
    fun: Callable, in_axes: AxisSpec = 0, out_axes: AxisSpec = 0,
    axis_size: int | None = None, randomness: str = "different",
) -> Callable:
    """``fun`` mapped over an axis of its arguments: ``vmap(fun)(xs)`` returns
    ``stack([fun(x) for x in xs])`` (values, dtypes and pytree), or raises a clear error.

    ``in_axes``: for each positional argument, the axis mapped over (an int, negative ones
    counting from the end), or None for an argument passed whole to every call; an int or
    None applies to every argument, a tuple gives one entry per argument, and an entry may
    itself be a pytree matching that argument. ``out_axes``: where the mapped axis goes in
    each output (same forms; None for an output that does not depend on the example, which
    is checked). ``axis_size``: the batch size, needed only when no argument is mapped.
    Keyword arguments are mapped over their leading axis. ``randomness`` (torch.func's):
    random numbers drawn by ``fun`` are the per-example loop's ("different"), one draw
    shared by every example ("same"), or an error ("error"); see docs/vmap.md for the
    generators vmap sees.

    ``fun`` runs once, each primitive by its batching rule for the whole batch (a primitive
    without one runs once per example, with a ``BatchLoopWarning``). A Python decision on
    the data (``if x.sum() > 0``) where the examples disagree reruns ``fun`` per group of
    agreeing examples; what cannot run on the batch (a batched value written into a NumPy
    array, ``np.asarray(x)``) makes ``fun`` run once per example (both with a
    ``VmapFallbackWarning``).

    >>> import chainrule as cr, chainrule.numpy as np
    >>> per_example = cr.vmap(cr.grad(lambda w, x: np.sum(w * x) ** 2), in_axes=(None, 0))
    >>> per_example(np.ones(2), np.array([[1.0, 2.0], [3.0, 0.0]])).tolist()
    [[6.0, 12.0], [18.0, 0.0]]
    """
    if randomness not in RANDOMNESS:
        raise ValueError(f"vmap: randomness must be one of {', '.join(map(repr, RANDOMNESS))}"
                         f"; got {randomness!r}.")

    example_function = _example_function(fun)  # (what runs one example alone)
    spec = _InAxes(in_axes)

    def call(args: tuple, kwargs: dict) -> _Call:
        leaves, axes, treedef, size, flat = _mapped_arguments(args, kwargs, spec, axis_size)
        return _Call(fun, leaves, axes, treedef, size, flat, out_axes, randomness, memory,
                     example_function)

    @wraps(fun)
    def mapped(*args: Any, **kwargs: Any) -> Any:
        return call(args, kwargs).answer()

    memory = _Memory()
    # (after wraps, which copies the __dict__ of fun: an inner mapped function's own pair;
    # a weak reference to itself, as a strong one would make every mapped function a cycle
    # for the garbage collector: a nested vmap made per call then cost twice its loop)
    mapped._vmap_as_the_loop = (weakref.ref(mapped), _AsTheLoop(call, fun))
    return mapped


@contextlib.contextmanager
def batched_runs_first() -> Iterator[None]:
    """Within the block, every call of a mapped function starts with a batched run of its
    whole batch, one example included, without a deadline, and runs each group of a split
    batched: no choice of the loop for its cost. The batching rules' own contract
    (tests/contracts/vmap.py compares these calls with the loop too: by cost, most calls of
    a small batch of a cheap function would run as the loop). What cannot run batched
    still runs per example, as in any call."""
    global _batched_runs_first
    was, _batched_runs_first = _batched_runs_first, True
    try:
        yield
    finally:
        _batched_runs_first = was


_batched_runs_first = False


class _AsTheLoop:
    """A mapped function run as its loop, where an outer vmap runs its examples one by one
    (nested vmaps): the loop of loops. (The outer batch could not run at once, and a run of
    the inner batch would meet that again: no inner batched attempt, split and fallback
    per outer example.) ``call(args, kwargs)``: the mapped function's _Call of them;
    ``fun``: the function it maps."""

    __slots__ = ("call", "fun")

    def __init__(self, call: Callable, fun: Callable):
        self.call, self.fun = call, fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(args, kwargs).loop_answer()

    def rows(self, rows: list, stacked: bool = False) -> list | _np.ndarray:
        """Its answers for each row of positional arguments, in order. Where every row's
        examples answer scalars of one type, they are stacked at once (the per-row stacks
        cost more than a cheap function's calls), and with ``stacked`` answered as that
        one array, the rows' stack (the outer loop's stack, made once); any other row is
        stacked as it ends, as the loop of loops stacks it (a later row may write into an
        array it answered)."""
        first = self.call(rows[0], {})
        # (the rows an outer call cuts are alike: the first one's reading of its arguments,
        # whose twins run as rows where it does)
        calls, as_rows = [first], _runs_as_rows(first)
        for row in rows[1:]:
            call = first.twin(row)
            if call is None:
                call = self.call(row, {})
                as_rows = as_rows and _runs_as_rows(call)
            calls.append(call)
        if not as_rows:
            return [call.loop_answer() for call in calls]
        answers, waiting, scalars = [], [], set()
        cut: dict = {}  # (see _examples_of: a vector mapped in every row is cut once)
        # (where every row answers arrays of one shape and dtype: the rows' stack, each row
        # written into it as it ends, as the loop stacks it, and no stack of the stacks)
        whole = None
        for j, call in enumerate(calls):
            row = call.loop_answers(cut, stacked=True)
            kind = type(row[0])
            waits = type(row) is list and kind in _SCALARS and len(set(map(type, row))) == 1
            written = False
            if waits:
                scalars.add(kind)  # (immutable: they may wait for the other rows)
            elif type(row) is list:  # (else the stack of a loop of loops: see above)
                if not j and stacked and kind is _np.ndarray:
                    whole = _np.empty((len(rows), len(row), *row[0].shape), row[0].dtype)
                written = whole is not None and _written_into(whole[j], row)
                row = whole[j] if written else call.loop_stacked(row)
            if not written:
                whole = None
            answers.append(row)
            waiting.append(waits)
        if whole is not None:
            return whole
        if all(waiting) and len(scalars) == 1 and len({len(row) for row in answers}) == 1:
            whole = _np.array([a for row in answers for a in row]).reshape(len(rows), -1)
            return whole if stacked else list(whole)
        return [call.loop_stacked(row) if waits else row
                for call, row, waits in zip(calls, answers, waiting)]


def _runs_as_rows(call: _Call) -> bool:
    """Whether a row's call answers as a row of the loop of loops (see _AsTheLoop.rows):
    positional arrays, examples, the batch axis first, each example's own draws."""
    return bool(call.flat and call.size and type(call.out_axes) is int
                and call.out_axes == 0 and call.randomness == "different")


def _written_into(out: _np.ndarray, arrays: list) -> bool:
    """Write NumPy arrays of ``out[0]``'s shape and dtype into the rows of ``out`` (what
    ``numpy.stack`` of them holds); False, writing nothing, where one is not such an array.
    (C-contiguous ones only: ``out`` is in C order, as numpy.stack lays out their stack;
    it lays out others' as they are, a transpose's as transposed, and NumPy's reductions
    over another layout give other last bits.)"""
    if len(arrays) != len(out):
        return False
    shape, dtype = out.shape[1:], out.dtype
    for a in arrays:
        if type(a) is not _np.ndarray or a.shape != shape or a.dtype != dtype or \
                not a.flags.c_contiguous:
            return False
    for i, a in enumerate(arrays):
        out[i] = a
    return True


def _example_function(fun: Callable) -> Callable:
    """What vmap calls for one example where it runs ``fun`` example by example: ``fun``
    itself, or where ``fun`` is a mapped function, ``fun`` run as its loop (_AsTheLoop)."""
    own = getattr(fun, "_vmap_as_the_loop", None)
    # (a function that functools.wraps a mapped one copies the pair: its own body runs)
    return own[1] if type(own) is tuple and own[0]() is fun else fun


class _Memory:
    """What a mapped function keeps from call to call: the one-time notes it has given,
    what it reaches outside itself, how many calls to run as the loop before it tries
    the batch again (after calls where batching cost more than the loop), and what one
    example cost, by the kind of call (``_Call.kind``)."""

    __slots__ = ("notes", "reach", "arrays_reach", "loop_calls", "backoff", "estimates",
                 "run_costs", "small_calls", "unmapped")

    def __init__(self):
        self.notes: set = set()
        self.reach: reach.Reach | None = None
        # the arrays to hold read-only: a complete search (every item of every container:
        # a view of an outside array past a list's 64th item, written in a batched run,
        # went unseen); the state put back stays the plain search's (a complete one reads
        # library objects' insides, a threading.Event's flag)
        self.arrays_reach: reach.Reach | None = None
        self.unmapped: tuple | None = None  # (unmapped arguments, what they reach)
        self.loop_calls = self.backoff = 0
        self.estimates: dict = {}
        self.run_costs: dict = {}  # what a batched run cost, in examples run alone, by kind
        self.small_calls: dict = {}  # calls of a small batch, by kind (see _loop_at_once)

    def outside(self, fun, unmapped: list) -> tuple[list, list, list]:
        """The random generators, the arrays and the Python state (``reach.PythonState``)
        ``fun`` reaches (its unmapped arguments included)."""
        if self.reach is None or not self.reach.current() or not self.arrays_reach.current():
            self.reach = reach.reached_from(fun)
            self.arrays_reach = reach.reached_from(fun, complete=True)
        generators, arrays = self.reach.generators, self.arrays_reach.arrays
        state = self.reach.state
        if unmapped:
            known = self.unmapped  # (the last call's: a list or dict of parameters again)
            if known is None or len(known[0]) != len(unmapped) or any(
                    a is not b for a, b in zip(known[0], unmapped)) or not known[1].current() \
                    or not known[2].current():
                known = self.unmapped = (unmapped, reach.Reach(unmapped),
                                         reach.Reach(unmapped, complete=True))
            more = known[1]
            generators = generators + [g for g in more.generators
                                       if all(g is not other for other in generators)]
            arrays, state = arrays + known[2].arrays, state + more.state
        return generators, arrays, state

    def learn(self, call: _Call) -> None:
        """After a call that left the batch: was that dearer than the loop?"""
        if not call.examples_run:
            return
        loop = call.size * call.per_example()
        spent = time.perf_counter() - call.started
        if spent > loop:
            excess = math.ceil((spent / loop - 1) / _EXCESS) if loop else _MAX_BACKOFF
            if not self.backoff:  # (one call's excess, maybe a cold start's: soon again)
                excess = min(excess, _FIRST_BACKOFF)
            self.backoff = min(max(2 * self.backoff, excess), _MAX_BACKOFF)
            self.loop_calls = self.backoff
        else:
            self.backoff = 0


class _InAxes:
    """A mapped function's in_axes, read once: ``spec`` (a list as a tuple, as JAX reads
    it), and whether it is an int, None or a tuple of them (``simple``: positional arrays
    then need no tree)."""

    __slots__ = ("spec", "simple")

    def __init__(self, in_axes: AxisSpec):
        self.spec = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        spec = self.spec
        self.simple = spec is None or type(spec) is int or type(spec) is tuple and (
            _AXES.issuperset(map(type, spec)))


def _mapped_arguments(args, kwargs, in_axes: _InAxes, axis_size):
    """The arguments' leaves, each one's mapped axis (None: not mapped), their tree, the
    batch size, and whether the leaves are the positional arguments themselves."""
    spec = in_axes.spec
    if isinstance(spec, tuple) and len(spec) != len(args):
        raise ValueError(
            f"vmap: in_axes has {len(spec)} entries but the function "
            f"was called with {len(args)} positional argument(s)."
        )
    flat = in_axes.simple and not kwargs and _ARRAY_LEAVES.issuperset(map(type, args))
    if flat:  # (the usual call, positional arrays: no tree to flatten)
        leaves, treedef = list(args), _flat_tree(len(args))
        axes = list(spec) if type(spec) is tuple else [spec] * len(args)
    else:
        # an unmapped argument (or part of one) is one leaf, passed as it is: the loop
        # passes the caller's list or dict (the function may change it), not one rebuilt
        # from its leaves
        by_stand_in: dict = {}
        args = tuple(_unmapped_kept(spec if type(spec) is not tuple else spec[i], arg,
                                    by_stand_in) for i, arg in enumerate(args))
        # keyword arguments are mapped over their leading axis (as JAX does)
        leaves, treedef = tree_flatten((args, kwargs))
        axes = _broadcast_prefix(spec, args, "in_axes")
        axes += [0] * (len(leaves) - len(axes))
        if by_stand_in:
            leaves = [by_stand_in.get(id(leaf), leaf) if type(leaf) is _Kept else leaf
                      for leaf in leaves]
    size = axis_size
    normalized = []
    for leaf, ax in zip(leaves, axes):
        if ax is None:
            normalized.append(None)
            continue
        shape = leaf.shape if type(leaf) is _np.ndarray else _shape(leaf)
        if not shape:
            raise ValueError(
                f"vmap: in_axes maps axis {ax} of a scalar argument; give "
                f"None for arguments that are not mapped."
            )
        if not 0 <= ax < len(shape):
            ax = _normalize_axis(ax, len(shape), "an in_axes entry")
        n = shape[ax]
        if size is None:
            size = n
        elif n != size:
            raise ValueError(
                f"vmap: mapped arguments disagree on the batch size: "
                f"{size} and {n} (axis {ax} of an argument of shape {shape})."
            )
        normalized.append(ax)
    if size is None:
        raise ValueError(
            "vmap: no argument is mapped (every in_axes entry is None); "
            "give axis_size to say how many times to call the function."
        )
    return leaves, normalized, treedef, size, flat


class _Kept:
    """Where an unmapped argument is in the tree of a call's arguments (a leaf)."""

    __slots__ = ()


def _unmapped_kept(spec: AxisSpec, arg: Any, by_stand_in: dict) -> Any:
    """``arg`` with each part that ``spec`` (its in_axes entry) leaves unmapped replaced by
    a _Kept stand-in, recorded in ``by_stand_in`` (chainrule's own values, a Tensor, are
    rebuilt: tensor.vmap refuses their in-place changes)."""
    if spec is None:
        if type(arg).__module__.startswith("chainrule"):
            return arg
        stand_in = _Kept()
        by_stand_in[id(stand_in)] = arg
        return stand_in
    if type(spec) in (tuple, list) and type(arg) in (tuple, list) and len(spec) == len(arg):
        return type(arg)(_unmapped_kept(s, a, by_stand_in) for s, a in zip(spec, arg))
    if type(spec) is dict and type(arg) is dict and set(spec) == set(arg):
        return {k: _unmapped_kept(spec[k], v, by_stand_in) for k, v in arg.items()}
    return arg


# Values that are leaves of a tree of arguments (arrays, scalars, traced values)
_ARRAY_LEAVES = reach.INERT | tracer._traced_types
_AXES = frozenset({int, type(None)})


@functools.lru_cache(maxsize=64)
def _flat_tree(count: int):
    return tree_flatten((tuple(range(count)), {}))[1]


def _shape(value) -> tuple:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else anp.shape(value)


class VmapFallbackWarning(UserWarning):
    """vmap runs a function per group of examples, or per example, instead of batched."""


class _Restart(Exception):
    """Only the loop, run in order from the call's start, gives this call's answer: the
    function drew random numbers (randomness "different") or writes into arrays outside
    itself."""


class _Stacked:
    """An output leaf of some examples: the examples' values stacked along axis 0."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _Shared:
    """An output leaf of some examples that is one value for all of them."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _Part:
    """The answers for some examples: their indices, the answers' tree, its leaves (each
    _Stacked or _Shared), and one answer as the function gave it (its dicts' key order);
    ``whole``: where known, the answers stacked as the loop stacks them (fresh arrays);
    ``loop_answers``: the function's own answers, where the loop gave them. A part of the
    loop's answers (``_Part.of_loop``) stacks them when its tree or leaves are first read:
    as the loop, after its last example (the function may change an answer it keeps), and
    once, where the loop's parts join into one."""

    __slots__ = ("examples", "_tree", "_leaves", "answer", "whole", "loop_answers")

    def __init__(self, examples, tree, leaves: list | None, answer, whole=None):
        self.examples, self._tree, self._leaves, self.answer = examples, tree, leaves, answer
        self.whole = whole
        self.loop_answers = None

    @classmethod
    def of_loop(cls, examples, answers: list) -> _Part:
        part = cls(examples, None, None, answers[0])
        part.loop_answers = answers
        return part

    @property
    def tree(self):
        if self._tree is None:
            self._stack()
        return self._tree

    @property
    def leaves(self) -> list:
        if self._leaves is None:
            self._stack()
        return self._leaves

    def stacked_whole(self):
        """The answers stacked as the loop stacks them, where they stack as a whole (see
        _stacked_tree), else None."""
        if self.whole is None and self._tree is None:
            stacked = _stacked_part(self.examples, self.loop_answers)
            self.whole, self._tree, self._leaves = stacked.whole, stacked._tree, stacked._leaves
        return self.whole

    def _stack(self) -> None:
        if self.stacked_whole() is not None and self._tree is None:  # (its leaves: stacks)
            leaves, self._tree = tree_flatten(self.whole)
            self._leaves = list(map(_Stacked, leaves))


class _Call:
    """One call of a mapped function: its batched runs, what they fall back to, and the
    answer put together from them in the examples' order."""

    # (what a call that runs as the loop keeps as it is: class defaults, made once)
    generators = reach.GeneratorStates([])
    python_state = reach.PythonState([])  # (what the function reaches, as the loop starts)
    outside_arrays: list = []  # (replaced, never changed)
    watch_draws = shared_draws = False  # ("same": once the function has drawn)
    read_only = reach.ReadOnly([])
    in_order = False  # running the loop itself (its errors are the answer)
    batched_seconds, batched_runs = 0.0, 0
    example_seconds, examples_run = 0.0, 0
    estimate: float | None = None  # what one example costs (an earlier call's, or example 0's)
    trial = False  # a small batch's one batched run (see _loop_at_once)

    def __init__(self, fun, leaves, axes, treedef, size: int, flat: bool, out_axes,
                 randomness: str, memory: _Memory, example_function: Callable):
        self.fun, self.leaves, self.axes, self.treedef = fun, leaves, axes, treedef
        self.size, self.out_axes, self.randomness, self.memory = size, out_axes, randomness, memory
        self.flat = flat  # positional arrays only (the usual call): examples need no tree
        self.example_function = example_function  # (what runs one example alone)
        self.started = time.perf_counter()
        self.example_times: list = []  # of examples run alone
        # (see batched_runs_first; under a staging trace, chainrule.jit's, the run is
        # recorded once as the program of every later call: examples timed alone would be
        # staged as calls of their own, and a time taken while tracing tells nothing)
        self.batched_first = _batched_runs_first or any(map(tracer.staged, leaves))

    def twin(self, args: tuple) -> _Call | None:
        """This call of other positional arguments (a loop of loops' next row) where their
        types, and the mapped arrays' shapes and dtypes, are the same (then so are the
        batch, the axes and the tree: no arguments to read again); else None."""
        if not self.flat or len(args) != len(self.leaves):
            return None
        for new, old, ax in zip(args, self.leaves, self.axes):
            if type(new) is not type(old) or ax is not None and (
                    type(new) is not _np.ndarray or new.shape != old.shape
                    or new.dtype != old.dtype):
                return None
        return _Call(self.fun, list(args), self.axes, self.treedef, self.size, True,
                     self.out_axes, self.randomness, self.memory, self.example_function)

    def _look_outside(self) -> None:
        """Find the generators and arrays the function reaches, and the generators' states."""
        unmapped = [leaf for leaf, ax in zip(self.leaves, self.axes) if ax is None]
        # (a mapped function reaches what the function it maps reaches: searched from that
        # one, whose search is kept, where the mapped function is often made anew per call)
        fun = self.example_function
        fun = fun.fun if type(fun) is _AsTheLoop else self.fun
        generators, self.outside_arrays, state = self.memory.outside(fun, unmapped)
        self.generators = reach.GeneratorStates(generators)
        self.python_state = reach.PythonState(state)
        self.watch_draws = bool(generators)

    def answer(self) -> Any:
        memory = self.memory
        outer = self._outer_trace()
        if outer is not None:
            return self._product(outer)
        if self._loop_at_once():
            return self.loop_answer()
        # (what an example cost in an earlier call of this kind bounds the first run: a
        # decision late in the function is met only after most of the batch's work)
        self.estimate = memory.estimates.get(self.kind)
        parts = []  # (the loop's first examples, run in order)
        if self.estimate is None and self.size and self.randomness == "different" and not (
                self._inside_a_batch() or self.batched_first):
            # a first call: example 0 alone, the loop's own first run (in order, its draws
            # and writes outside the function the loop's: nothing to watch yet), tells what
            # an example costs, so the batched run of the others has a deadline too (and
            # example 1, where the batch is large enough to spare it: the first example's
            # time may be a cold start's, several times an example's in the loop)
            timed = 2 if self.size >= _TWO_TIMED else 1
            parts.append(self._in_order(_np.arange(timed), timed=True))
            self.estimate = self.per_example()
        done = sum(len(part.examples) for part in parts)  # (examples answered in order)
        if (self.estimate is not None and self.randomness == "different" and not (
                self.batched_first or self._inside_a_batch())
                and self._no_batched_run(self.size - done)):
            # (one example left, whose run alone costs less than batched, or too little time
            # for a batched run: the loop goes on, with nothing to watch)
            parts.append(self._in_order(_np.arange(done, self.size)))
            return self._answered(parts)
        self._look_outside()
        # (no run but the loop writes outside the function: its writes show who needs it)
        self.read_only = reach.ReadOnly(self.outside_arrays)
        try:
            parts += self._parts(done)
            if len(parts) > 1 and _shared_containers(parts):
                # (a list or dict the function keeps and answers again: a batched part read
                # it when its run ended, the loop stacks it after the last example)
                raise _Restart
            if self.batched_runs and self.python_state.changed():
                raise _Restart  # (examples run alone out of order changed it: see _batched)
        except _Restart:
            self.read_only.release()
            self.generators.restore()
            self.python_state.restore()
            parts = parts[:1] + [self._the_loop(done)] if done else [self._the_loop()]
        finally:
            self.read_only.release()  # (again, where _parts raised)
        return self._answered(parts)

    def _loop_at_once(self) -> bool:
        """Is the loop this call's answer, without a batched run? While vmap backs off; and
        for a small batch (_SMALL_BATCH), where a batched run gains little if anything (by
        the first guess, _FIRST_RUN_COST, it costs more than the loop below 6 examples) and
        a first call would pay for timing an example, unless a run of this kind of call
        ended cheaper: calls 2, 4, 8, 16 ... of each kind of 3 or more examples try one (a
        trial, whose run may take the loop's time; until one ends), so a function that
        batches well (a per-example gradient) runs batched from then on. (An empty batch's
        answer is a batched run's, where one can be had.)"""
        memory = self.memory
        if not self.size or self.batched_first:
            return False
        if memory.loop_calls:
            memory.loop_calls -= 1
            return True
        if self.size > _SMALL_BATCH:
            return False
        if self.size < 3:  # (no trial: a batched run does not beat one or two examples)
            return True
        run = memory.run_costs.get(self.kind) if memory.run_costs else None
        if run is not None:
            return run >= self.size
        calls = memory.small_calls.get(self.kind, 0)
        memory.small_calls[self.kind] = calls + 1
        self.trial = bool(calls) and not calls & (calls + 1)
        return not self.trial

    def _answered(self, parts: list) -> Any:
        """The call's answer from its parts, after learning what it cost."""
        memory = self.memory
        if self.examples_run:
            if len(memory.estimates) >= _ESTIMATES:
                memory.estimates.clear()
                memory.run_costs.clear()
                memory.small_calls.clear()
            memory.estimates[self.kind] = self.per_example()
        if len(parts) > 1 or self.examples_run:
            memory.learn(self)
        else:
            memory.backoff = 0
        if len(parts) > 1 and all(part.loop_answers is not None for part in parts):
            # (every example run alone, some out of order: the loop's answers in its order,
            # stacked once, as the loop stacks them after its last example)
            examples = _np.concatenate([part.examples for part in parts])
            order = _np.argsort(examples, kind="stable")
            if len(examples) == self.size and (examples[order] == _np.arange(self.size)).all():
                answers = [answer for part in parts for answer in part.loop_answers]
                parts = [_Part.of_loop(examples[order], [answers[i] for i in order.tolist()])]
        return self._assembled(parts)

    def loop_answer(self) -> Any:
        """The answer of the loop itself (no batched run)."""
        if self.randomness != "different":  # (the loop draws as the loop otherwise)
            self._look_outside()
        elif self.size:
            answers = self.loop_answers(stacked=type(self.out_axes) is int)
            if type(answers) is _np.ndarray:  # (a loop of loops' stack: see _AsTheLoop.rows)
                return self._along_out_axes(answers)
            return self.loop_stacked(answers)
        return self._assembled([self._the_loop()])

    def loop_stacked(self, answers: list) -> Any:
        """The loop's answers (of every example, in order) stacked as the loop stacks them."""
        if type(self.out_axes) is int:
            whole = _stacked_tree(answers)
            if whole is not None:
                return self._along_out_axes(whole)
        return self._assembled([_Part.of_loop(_np.arange(self.size), answers)])

    def _along_out_axes(self, whole):
        """The loop's stacks (``_stacked_tree``'s) with the batch axis where an int
        ``out_axes`` puts it."""
        return _batch_axis_moved(whole, self.out_axes) if self.out_axes else whole

    def loop_answers(self, cut: dict | None = None, stacked: bool = False
                     ) -> list | _np.ndarray:
        """The loop's answer of each example, not stacked (randomness "different"), but
        where ``stacked`` allows a loop of loops to answer its stack (see _AsTheLoop.rows);
        ``cut``: see _examples_of."""
        # (nothing to watch, time or put back in order)
        columns, fun = self._columns(range(self.size), cut), self.example_function
        if not self.flat:
            return [fun(*args, **kwargs) for args, kwargs in (
                tree_unflatten(self.treedef, sliced) for sliced in zip(*columns))]
        if type(fun) is _AsTheLoop:  # (nested vmaps)
            return fun.rows(list(zip(*columns)), stacked)
        return list(map(fun, *columns))

    @functools.cached_property
    def kind(self) -> tuple:
        """The arguments' shapes and dtypes (and the batch size): calls of one kind cost
        alike per example."""
        return (self.size, *((ax, leaf.shape, leaf.dtype) if type(leaf) is _np.ndarray else
                             (ax, getattr(leaf, "shape", None), getattr(leaf, "dtype", None))
                             if hasattr(leaf, "shape") else (ax, type(leaf))
                             for leaf, ax in zip(self.leaves, self.axes)))

    def per_example(self) -> float:
        """What one example run alone cost: the least of those timed alone, where less
        than the mean. (Examples timed alone, after a batched run or first in a call, find
        colder caches than the loop's: their middle one was 1.6 times the loop's time per
        example, and the split budget with it.)"""
        per_example = self.example_seconds / self.examples_run
        if self.example_times:
            per_example = min(per_example, min(self.example_times))
        return per_example

    def _example_cost(self) -> float | None:
        """What an example costs: as timed in this call, else an earlier call's estimate
        (None: unknown, as for an inner vmap's first call inside an outer batched run)."""
        return self.per_example() if self.examples_run else self.estimate

    def _the_loop(self, start: int = 0) -> _Part:
        """The loop itself, from example ``start`` (those before it run in order): the
        function on each example in order, its random draws and writes outside itself those
        of the loop."""
        self.watch_draws = self.watch_draws and self.randomness != "different"
        self.in_order = True
        return self._one_by_one(_np.arange(start, self.size))

    def _in_order(self, examples, timed: bool = False) -> _Part:
        """The loop's run of ``examples``, the next ones in order (its errors the loop's)."""
        self.in_order, was = True, self.in_order
        try:
            return self._one_by_one(examples, timed)
        finally:
            self.in_order = was

    # ------------------------------------------------------------------ runs
    def _parts(self, done: int) -> list:
        """The answers of the examples after the first ``done`` (run in order) by batched
        runs: the whole batch, then (where the examples split) each group that the budget
        affords, the largest first; the examples left run one by one, in one pass."""
        parts, todo, loose = [], [], []  # (loose: arrays of examples)
        batch = _np.arange(done, self.size)
        if self.estimate is None and not done and self.size > 1 and not (
                self._inside_a_batch() or self.batched_first):
            # (a first call: example 0 alone, the loop's own run of it, tells what an
            # example costs, so the batched run of the others has a deadline too)
            parts.append(self._one_by_one(batch[:1], timed=True))
            self.estimate = self.per_example()
            batch = batch[1:]
        if not self.batched_first and len(batch) and self._no_batched_run(len(batch)):
            # (a batched run of one example costs more than its run, and one of a batch
            # with too little time left would be stopped: the loop goes on, in order)
            return parts + [self._the_loop(int(batch[0]))]
        deadline = None if self.batched_first else self._deadline(len(batch))
        self._sort_out(self._batched(batch, deadline), parts, todo, loose)
        if todo and not parts and self.watch_draws and self.randomness == "different" \
                and not self.batched_first:
            # (the batch split, and the function reaches a random generator: a group's run
            # or an example's out of order that draws would restart the call as the loop,
            # from here, after it; the loop goes on at once instead)
            return [self._the_loop(int(batch[0]))]
        while todo:
            todo.sort(key=len)
            group = todo.pop()  # the largest first: it gains most from running batched
            if self.batched_first:
                self._sort_out(self._batched(group, None), parts, todo, loose)
                continue
            if self.examples_run < _MEASURED:  # examples alone, to know what the loop costs
                measured = _MEASURED - self.examples_run
                parts.append(self._one_by_one(group[:measured], timed=True))
                if len(group) > measured:
                    todo.append(group[measured:])
                continue
            left = len(group) + sum(map(len, loose)) + sum(map(len, todo))
            if len(group) > 1 and self._affordable(left):
                self._sort_out(self._batched(group, self._deadline(left)), parts, todo, loose)
            else:
                # (no run since: every group left is as unaffordable, or of one example)
                loose += [group] + todo
                todo = []
        if loose:
            parts.append(self._one_by_one(_np.sort(_np.concatenate(loose))))
        return parts

    def _outer_trace(self) -> BatchTrace | None:
        """The trace of the outer vmap whose batched run this call is in, where this call
        can run as one batch of both vmaps' examples (see _product): some arguments are
        batched by that run (NumPy arrays under it, no other trace), the others are NumPy's
        own values (or lists, tuples and dicts of them), and each example's answers stack
        along an axis."""
        trace = None
        for leaf in self.leaves:
            if type(leaf) is BatchedArray:
                if (type(leaf._value) is not _np.ndarray or trace is not None
                        and leaf._trace is not trace):
                    return None
                trace = leaf._trace
            elif type(leaf) not in reach.INERT and not (
                    type(leaf) in (list, tuple, dict)  # (an unmapped one passed as it is)
                    and reach.INERT.issuperset(map(type, tree_flatten(leaf)[0]))):
                return None
        if (trace is None or not self.size or not trace.size or type(self.out_axes) is not int
                or self.randomness != "different" or trace.id not in live_trace_ids):
            return None
        return trace

    def _product(self, outer: BatchTrace) -> Any:
        """This call inside the batched run of an outer vmap (``outer``), as one call of
        the function on the product batch (each outer example's examples in turn: the order
        of the loop of loops), its answer batched by the outer run. (Not a batch of batches:
        a decision where the examples differ along both vmaps splits this one batch into
        groups as any other.) Where the function reaches values of the outer run other
        than through its arguments (a closure), its answers are not NumPy's: the outer run
        stops and runs its examples one by one."""
        size, count = outer.size, self.size
        leaves, axes = [], []
        for leaf, ax in zip(self.leaves, self.axes):
            if type(leaf) is BatchedArray:
                value = leaf._value
                value = (_np.broadcast_to(value[:, None], (size, count) + value.shape[1:])
                         if ax is None else _np.moveaxis(value, ax + 1, 1))
            elif ax is None:
                leaves.append(leaf)
                axes.append(None)
                continue
            else:
                value = _np.moveaxis(_np.asarray(leaf), ax, 0)
                value = _np.broadcast_to(value, (size,) + value.shape)
            leaves.append(value.reshape((size * count,) + value.shape[2:]))
            axes.append(0)
        product = _Call(self.fun, leaves, axes, self.treedef, size * count, self.flat, 0,
                        self.randomness, self.memory,
                        self.example_function)
        answer = product.answer()
        answers, tree = tree_flatten(answer)
        if not all(type(leaf) is _np.ndarray for leaf in answers):
            raise outer.unsupported("a nested vmap's function that reaches the outer vmap's "
                                    "values other than through its arguments")
        batched_answers = []
        for leaf in answers:
            leaf = leaf.reshape((size, count) + leaf.shape[1:])
            if self.out_axes:
                ax = _normalize_axis(self.out_axes, leaf.ndim - 1, "an out_axes entry")
                leaf = _np.moveaxis(leaf, 1, ax + 1)
            batched_answers.append(BatchedArray(leaf, outer))
        return _in_order_of(tree_unflatten(tree, batched_answers), answer)

    def _inside_a_batch(self) -> bool:
        """Are some arguments batched by an outer vmap's run? (Its example 0 alone would
        decide on the outer batch, splitting it by this call's example 0, and the outer
        run's own deadline bounds this call.)"""
        return any(type(leaf) is BatchedArray for leaf in self.leaves)

    def _sort_out(self, outcome, parts: list, todo: list, loose: list) -> None:
        """A batched run's outcome: answers, groups to run, or examples to run one by one."""
        if isinstance(outcome, _Part):
            parts.append(outcome)
        elif isinstance(outcome, BatchSplit):
            self._note("split", "vmap: the examples took different branches of a Python "
                       "decision on their values; the function runs once per group of "
                       "examples that agree, and the answers are put back in order.")
            todo += _groups(outcome.examples, outcome.keys)
        else:
            if outcome.what != OUT_OF_TIME:  # (not a construct: batching cost too much)
                self._note("loop", f"vmap: {outcome.what} cannot run on the whole batch, "
                           f"so the function runs once per example.")
            if len(outcome.examples):
                loose.append(outcome.examples)
            else:
                parts.append(self._stand_in())  # (an empty batch: its answer's shapes)

    def _affordable(self, left: int) -> bool:
        """Can one more batched run be afforded (its time, then the examples left one by
        one in the worst case) within the split budget?"""
        per_example = self.per_example()
        # (the mean batched run, not the longest: one run may meet a pause of the machine)
        batched_run = self.batched_seconds / self.batched_runs
        spent = time.perf_counter() - self.started
        return spent + batched_run + left * per_example <= _SPLIT_BUDGET * self.size * per_example

    def _no_batched_run(self, left: int) -> bool:
        """Should the ``left`` examples still to run go on as the loop, with no batched run?
        Where one is left (its run alone costs less than batched), or a batched run would
        not end before its deadline."""
        return left < 2 or not self._in_time_for_a_run(self._deadline(left))

    def _in_time_for_a_run(self, deadline: float | None) -> bool:
        """Could a batched run finish before its deadline? It makes every call an example
        makes, each dearer (a batched value's call does more than NumPy's): what a run of
        this kind cost before, or a first guess, in examples run alone. (A small batch of a
        cheap function may have less time than that left, its run sure to be stopped and
        wasted: the loop is the cheaper answer.)"""
        per_example = self._example_cost()
        run = 1.0 if self._exploring() else self.memory.run_costs.get(self.kind,
                                                                      _FIRST_RUN_COST)
        return deadline is None or deadline - time.perf_counter() >= max(
            run * per_example, _LEAST_RUN_SECONDS)

    def _deadline(self, left: int) -> float | None:
        """When a batched run must stop for the call to stay within the split budget with
        ``left`` examples (its own included) still to run one by one: each run's, the
        first's and those after a split (None: what an example costs is unknown, as for an
        inner vmap's first call inside an outer batched run)."""
        per_example = self._example_cost()
        if per_example is None:
            return None
        budget = _SPLIT_BUDGET * self.size - left
        if not self.batched_runs and self._first_run_may_take_the_loops_time():
            budget = max(budget, self.size)
        return self.started + budget * per_example

    def _first_run_may_take_the_loops_time(self) -> bool:
        """May this call's first batched run take up to the loop's time (not only the split
        budget's share of it)? Where such a run of this kind ended before at less than the
        loop's cost, and when exploring: a run that costs half the loop is worth it when it
        ends (a split or an unsupported construct then costs the loop twice, once, after
        which vmap backs off for longer)."""
        run = self.memory.run_costs.get(self.kind)
        return self._exploring() or run is not None and run < self.size

    def _exploring(self) -> bool:
        """Is this the first batched run of the first call after backing off, or of a small
        batch's trial (run whatever the last runs cost, or the first guess says: it measures
        them again, a first call's maybe on cold caches)?"""
        return (self.memory.backoff > 0 or self.trial) and not self.batched_runs
    def _batched(self, examples, deadline: float | None):
        """One call of the function on the batch of ``examples`` (stopped at ``deadline``, see
        _deadline): their answers (a _Part), or the signal that stopped it (BatchSplit,
        BatchUnsupported), with ``.examples`` set."""
        trace = BatchTrace(len(examples), deadline=deadline)
        live_trace_ids.add(trace.id)
        start = time.perf_counter()
        self._before_run()
        try:
            arguments = [leaf if ax is None else BatchedArray(_batch_of(leaf, ax, examples),
                                                              trace)
                         for leaf, ax in zip(self.leaves, self.axes)]
            if self.flat:
                answer = self.fun(*arguments)
            else:
                call_args, call_kwargs = tree_unflatten(self.treedef, arguments)
                answer = self.fun(*call_args, **call_kwargs)
            if trace.signal is None:
                self._learn_run_cost(len(examples), time.perf_counter() - start)
                leaves, tree = tree_flatten(answer)
                return _Part(examples, tree, [
                    _Stacked(leaf._value) if type(leaf) is BatchedArray and leaf._trace is trace
                    else _Shared(leaf) for leaf in leaves], answer)
        except BaseException as error:
            if trace.signal is None:
                if isinstance(error, Exception):  # (raised at which example? the loop's)
                    self._note("raised", f"vmap: the function raised "
                               f"{type(error).__name__} on the batch; it runs once per example, "
                               f"in order, as the loop does.")
                    raise _Restart from None
                raise
        finally:
            live_trace_ids.discard(trace.id)
            self.batched_seconds += time.perf_counter() - start
            self.batched_runs += 1
            self._after_run()
            if self.python_state.changed():
                # (a counter counted, a list appended to: once for the batch, where the loop
                # changes it once per example; no run may read it: the loop runs)
                raise _Restart
        trace.signal.examples = examples
        trace.signal.__traceback__ = None  # (its frames hold the trace, which holds it)
        return trace.signal

    def _learn_run_cost(self, examples: int, seconds: float) -> None:
        """Keep what a batched run of (nearly) the whole batch cost, in examples run alone."""
        per_example = self._example_cost()
        if per_example and examples >= self.size - 1:
            self.memory.run_costs[self.kind] = seconds / per_example

    def _one_by_one(self, examples, timed: bool = False) -> _Part:
        """The function called once per example (the loop itself); ``timed``: each call
        timed alone, to know what an example costs."""
        if not len(examples):
            return self._stand_in()
        return _Part.of_loop(examples, self._answers_one_by_one(examples, timed))

    def _answers_one_by_one(self, examples, timed: bool = False) -> list:
        """The answers of the function called once per example (see _one_by_one)."""
        columns = self._columns(examples)
        start = time.perf_counter()
        try:
            if timed or self.randomness == "same" and self.watch_draws or self.shared_draws:
                answers = [self._one(sliced, watch=not timed) for sliced in zip(*columns)]
            elif self.flat and type(self.example_function) is _AsTheLoop:  # (nested vmaps)
                answers = self.example_function.rows(list(zip(*columns)))
            elif self.flat:
                answers = list(map(self.example_function, *columns))
            else:
                answers = [self._one(sliced, watch=False) for sliced in zip(*columns)]
        except Exception as error:
            # out of order, or into arrays outside the function: the loop says what is raised
            if not self.in_order or reach.written(error, self.read_only):
                raise _Restart from None
            raise
        self.example_seconds += time.perf_counter() - start  # (the calls only: the loop's)
        self.examples_run += len(examples)
        if self.watch_draws:
            self._after_run()
        return answers

    def _columns(self, examples, cut: dict | None = None) -> list:
        """Each argument leaf's value for each of ``examples`` (see _examples_of)."""
        return [itertools.repeat(leaf, len(examples)) if ax is None else
                _examples_of(leaf, ax, examples, cut)
                for leaf, ax in zip(self.leaves, self.axes)]

    def _one(self, sliced, watch: bool):
        """The function on one example's argument leaves (timed alone)."""
        self._before_run()
        start = time.perf_counter()
        if self.flat:
            answer = self.example_function(*sliced)
        else:
            call_args, call_kwargs = tree_unflatten(self.treedef, sliced)
            answer = self.example_function(*call_args, **call_kwargs)
        self.example_times.append(time.perf_counter() - start)
        if watch:
            self._after_run()  # (randomness "same": from the first draw on, restore each)
        return answer

    def _stand_in(self) -> _Part:
        """For an empty batch that cannot run batched: the answer's shapes and dtypes from
        the function called on a stand-in example of zeros (its draws and the changes of
        the Python state it reaches undone, its writes outside itself refused: the loop
        would make none)."""
        sliced = [leaf if ax is None else anp.zeros(
            anp.shape(leaf)[:ax] + anp.shape(leaf)[ax + 1:], anp.result_type(leaf))
            for leaf, ax in zip(self.leaves, self.axes)]
        call_args, call_kwargs = tree_unflatten(self.treedef, sliced)
        if self.generators is _Call.generators:  # (not looked for yet: the loop's call)
            self._look_outside()
        read_only = reach.ReadOnly(self.outside_arrays)
        try:
            with _np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                answer = self.fun(*call_args, **call_kwargs)
        except Exception as error:
            raise ValueError(
                "vmap: the batch is empty and the function cannot run on an empty batch "
                "(it takes a Python decision on its values, or leaves chainrule), so vmap "
                "ran it on a stand-in example of zeros to learn the shape of its answer, "
                f"and that raised {type(error).__name__}: {error}") from error
        finally:
            read_only.release()
            self.generators.restore()
            self.python_state.restore()
        leaves, tree = tree_flatten(answer)
        return _Part(_np.arange(0), tree, [_Stacked(_np.zeros((0,) + anp.shape(leaf),
                                                              anp.result_type(leaf)))
                                           for leaf in leaves], answer)

    # ------------------------------------------------------------------ random draws
    def _before_run(self) -> None:
        if self.shared_draws:
            self.generators.restore()  # randomness "same": every run draws the same

    def _after_run(self) -> None:
        if not self.watch_draws:
            return
        drawn = self.generators.drawn()
        if not drawn:
            return
        self.watch_draws = False
        if self.randomness == "same":
            self.shared_draws = True
            return
        self.generators.restore()
        if self.randomness == "different":
            raise _Restart
        raise ValueError(
            f"vmap(randomness='error'): the function drew random numbers from "
            f"{reach.describe(drawn[0])}. Give randomness='different' (each example "
            f"its own draws, as a loop; then the function runs once per example) or "
            f"'same' (one draw shared by every example).")

    def _note(self, kind: str, text: str) -> None:
        if kind not in self.memory.notes:
            self.memory.notes.add(kind)
            warnings.warn(text, VmapFallbackWarning, stacklevel=5)

    # ------------------------------------------------------------------ the answer
    def _assembled(self, parts: list) -> Any:
        """The parts' answers as one: each output leaf stacked along its out_axes entry in
        the examples' order, or (out_axes None) the value every example agrees on."""
        if len(parts) == 1 and type(self.out_axes) is int:
            whole = parts[0].stacked_whole()
            if whole is not None:  # (the loop's own stacks)
                return self._along_out_axes(whole)
            if not self.out_axes and parts[0].tree is LEAF and type(
                    parts[0].leaves[0]) is _Stacked:
                return _fresh(parts[0].leaves[0].value, {})  # (the usual answer: one stack)
        tree = parts[0].tree
        for part in parts[1:]:
            if part.tree != tree:
                raise ValueError(
                    f"vmap: the function answered with different structures for different "
                    f"examples ({tree!r} and {part.tree!r}), so the answers cannot be "
                    f"stacked (nor can the loop's).")
        if tree is LEAF and (self.out_axes is None or type(self.out_axes) is int):
            axes = [self.out_axes]
        else:
            skeleton = tree_unflatten(tree, [leaf.value for leaf in parts[0].leaves])
            axes = _broadcast_prefix(_out_spec(self.out_axes, skeleton), skeleton, "out_axes")
        inverse = None
        if len(parts) > 1:
            order = _np.concatenate([part.examples for part in parts])
            if (order != _np.arange(self.size)).any():
                inverse = _np.argsort(order)
        out, memory = [], {}
        for j, ax in enumerate(axes):
            column = [part.leaves[j] for part in parts]
            if ax is None:
                out.append(_same_for_all(column, parts))
                continue
            leaf = _fresh(_joined(column, parts, inverse, self.size), memory)
            if ax:
                ax = _normalize_axis(ax, len(_shape(leaf)), "an out_axes entry")
            out.append(anp.moveaxis(leaf, 0, ax) if ax else leaf)
        if tree is LEAF:
            return out[0]
        first = next(part for part in parts if not len(part.examples) or 0 in part.examples)
        return _in_order_of(tree_unflatten(tree, out), first.answer)


def _shared_containers(parts: list) -> bool:
    """Do some parts' answers hold one list or dict (the function's own, answered again)?"""
    seen: dict = {}
    for k, part in enumerate(parts):
        answers = part.loop_answers if part.loop_answers is not None else [part.answer]
        if reach.INERT.issuperset(map(type, answers)):  # (arrays and scalars: no container)
            continue
        pending = list(answers)
        while pending:
            item = pending.pop()
            if isinstance(item, (list, dict, tuple)):
                if type(item) is not tuple and seen.setdefault(id(item), k) != k:
                    return True
                pending.extend(item.values() if isinstance(item, dict) else item)
    return False


def _in_order_of(tree, answer):
    """``tree`` with its dicts' keys in the order of ``answer``'s (the function's own:
    tree_unflatten sorts them)."""
    if type(tree) is dict and type(answer) is dict:
        return {k: _in_order_of(tree[k], answer[k]) for k in answer}
    if isinstance(tree, (list, tuple)) and type(answer) is type(tree):
        items = [_in_order_of(t, a) for t, a in zip(tree, answer)]
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    return tree


def _groups(examples, keys: list) -> list:
    """``examples`` in groups of equal keys (numbers), each group in order, the groups in
    the order of their first examples. (One stable sort: a decision such as
    ``float(x.sum())`` gives every example a group of its own.)"""
    keys = _np.asarray(keys)
    order = _np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = _np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    bounds = [0, *starts.tolist(), len(keys)]
    firsts = order[bounds[:-1]]  # (each group's first example: the sort is stable)
    members = examples[order]
    return [members[bounds[k]:bounds[k + 1]] for k in _np.argsort(firsts).tolist()]


def _batch_of(leaf, axis: int, examples):
    """The argument's values for ``examples``, the batch as axis 0, in memory of their own
    (the function may write into its arguments; the caller's arrays stay as they are),
    laid out as _copy_layout says."""
    if type(leaf) is _np.ndarray:  # (NumPy's own calls: nothing to trace)
        whole = len(examples) == leaf.shape[axis]
        return _own_copy(_np.moveaxis(leaf, axis, 0) if axis else leaf, batch=True,
                         rows=None if whole else examples)
    moved = anp.moveaxis(leaf, axis, 0)
    if len(examples) == anp.shape(leaf)[axis]:
        # (a traced copy too: under jit, an answer that is the argument is a fresh array)
        batch = anp.copy(moved)
    else:
        rows = constant_like(_np.asarray(examples, dtype=_np.intp), leaf)  # (CuPy's own)
        batch = anp.moveaxis(anp.take(leaf, rows, axis=axis), axis, 0)
    callers, value = memory_of(moved), memory_of(batch)
    if type(callers) is not _np.ndarray or type(value) is not _np.ndarray or not len(callers):
        return batch
    shape, index, axes = _copy_layout(callers[0], (len(examples),))
    if _strides_of(shape, index, axes, value.itemsize) == value.strides:
        return batch  # (its layout at the trace: jit's key holds the arguments' strides)
    own = anp.transpose(anp.empty(shape, value.dtype)[index], axes)
    own[...] = batch
    return own


def _strides_of(shape: tuple, index: tuple, axes: tuple, itemsize: int) -> tuple:
    """The strides of ``np.empty(shape)[index].transpose(axes)`` (``_copy_layout``'s),
    without the array."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    strides = [s * (part.step or 1) for s, part in zip(reversed(strides), index)]
    return tuple(strides[a] for a in axes)


def _own_copy(a: _np.ndarray, batch: bool, rows=None) -> _np.ndarray:
    """``a``'s values (its ``rows`` where given) in memory of their own laid out as
    _copy_layout says (each example: ``a``'s rows where ``batch``, else ``a``)."""
    if a.flags.c_contiguous:  # (the common argument: its copy is laid out so)
        return a.copy() if rows is None else a.take(rows, 0)
    if batch and not len(a):
        return a.copy(order="K")
    shape, index, axes = _copy_layout(a[0] if batch else a,
                                      (len(a) if rows is None else len(rows),) if batch else ())
    own = _np.empty(shape, a.dtype)[index].transpose(axes)
    if rows is None:
        own[...] = a
    else:
        _np.take(a, rows, axis=0, out=own)
    return own


def _copy_layout(example: _np.ndarray, lead: tuple) -> tuple:
    """How vmap lays out its copy of a batch (``lead``: its size; ``()`` for one
    example) whose examples are laid out as the caller's ``example``: the (shape, index,
    axes) of ``np.empty(shape)[index].transpose(axes)``. Each example is a block of its
    own, as NumPy's arrays computed from it are (an elementwise answer's layout follows
    its operand's), compact in the order of the caller's strides (what reshape's and
    ravel's orders "A" and "K" read) -- but for an example whose strides are in F's order
    without being F-contiguous (a column's slice), which compact would make F-contiguous:
    there its outermost axis steps over as much again, as neither C- nor F-contiguous."""
    order = sorted(range(example.ndim), key=lambda i: -abs(example.strides[i]))
    spaced = -1
    if example.ndim >= 2 and not (example.flags.f_contiguous or example.flags.c_contiguous):
        big = [i for i in order if example.shape[i] > 1]
        if len(big) >= 2 and big == sorted(big, reverse=True):
            spaced = order.index(big[0])
    shape = lead + tuple(example.shape[i] * (1 + (k == spaced)) for k, i in enumerate(order))
    index = (slice(None),) * len(lead) + tuple(
        slice(None, None, 1 + (k == spaced)) for k in range(len(order)))
    axes = tuple(range(len(lead))) + tuple(len(lead) + k for k in _np.argsort(order).tolist())
    return shape, index, axes


def _examples_of(leaf, axis: int, examples, cut: dict | None = None) -> list:
    """The argument's value for each of ``examples``, in memory of their own (the
    function may write into its arguments; the caller's arrays stay as they are). ``cut``
    (id: list), where given, keeps the NumPy scalars of a whole vector for the next call
    on it (the rows of a loop of loops: scalars nothing can write into, each made once;
    the vectors live while it runs)."""
    if type(leaf) is _np.ndarray:
        if cut is not None and leaf.ndim == 1 and len(examples) == len(leaf):
            scalars = cut.get(id(leaf))
            if scalars is None:
                scalars = cut[id(leaf)] = list(leaf)
            return scalars
        if len(examples) == 1 and leaf.ndim > 1:  # (a third of the time of the batch's copy)
            return [_own_copy(leaf[examples[0]] if not axis else
                              leaf[(slice(None),) * axis + (examples[0],)], batch=False)]
        if leaf.ndim == 1 and len(examples) == len(leaf):
            return list(leaf)  # (NumPy scalars, which nothing can write into)
        if axis:  # (the mapped axis first: a transpose, without moveaxis's checks)
            leaf = leaf.transpose((axis, *range(axis), *range(axis + 1, leaf.ndim)))
        whole = len(examples) == len(leaf)
        return list(_own_copy(leaf, batch=True, rows=None if whole else examples))
    return [leaf[(slice(None),) * axis + (i,)] for i in examples]


def _stacked_part(examples, answers: list) -> _Part:
    """Per-example answers as one part: each leaf stacked along a new axis 0."""
    first = answers[0]
    whole = _stacked_tree(answers)
    if whole is not None:  # (NumPy's own values, alone or in dicts, lists, tuples: at once)
        return _Part(examples, None, None, first, whole)
    flat = [tree_flatten(answer) for answer in answers]
    tree = flat[0][1]
    for (_, other), i in zip(flat[1:], examples[1:]):
        if other != tree:
            raise ValueError(
                f"vmap: the function answered with different structures for example "
                f"{examples[0]} ({tree!r}) and example {i} ({other!r}), so the answers "
                f"cannot be stacked (nor can the loop's).")
    leaves, stacked = [], {}
    for j in range(len(flat[0][0])):
        column = [leaves_[j] for leaves_, _ in flat]
        key = tuple(map(id, column))
        if key in stacked:  # one answer twice (return y, y): a copy of the last stack
            stacked[key] = anp.copy(stacked[key])
            leaves.append(_Stacked(stacked[key]))
            continue
        _no_sparse_matrix(column[0], examples[0])
        _same_shapes([anp.shape(v) for v in column], examples)
        stacked[key] = anp.stack(column)
        leaves.append(_Stacked(stacked[key]))
    return _Part(examples, tree, leaves, first)


def _batch_axis_moved(whole, axis: int):
    """The loop's stacks (a tree of ``_stacked_tree``'s) with the batch axis of each leaf
    moved to ``axis`` (NumPy's views of the fresh stacks)."""
    if type(whole) is _np.ndarray:  # (moveaxis's view, by a transpose without its checks)
        order = list(range(1, whole.ndim))
        order.insert(_normalize_axis(axis, whole.ndim, "an out_axes entry"), 0)
        return whole.transpose(order)
    if type(whole) is dict:
        return {k: _batch_axis_moved(v, axis) for k, v in whole.items()}
    return type(whole)(_batch_axis_moved(v, axis) for v in whole)


def _stacked_tree(answers: list):
    """The answers stacked leaf by leaf as the loop stacks them (``numpy.stack``, dicts in
    the first answer's key order), where they are dicts, lists and tuples of one structure
    with NumPy arrays of one shape, or scalars of one type, at each leaf; else None."""
    first = answers[0]
    kind = type(first)
    if len(answers) > 1 and any(type(answer) is not kind for answer in answers):
        # (scalars of other types by example, a float32 here and a float64 there: promoted
        # as the loop's numpy.stack promotes them; NumPy's own scalars by numpy.array, alike
        # and a tenth of its time)
        types = set(map(type, answers))
        if _NUMPY_SCALARS.issuperset(types):
            return _np.array(answers)
        return _np.stack(answers) if _SCALARS.issuperset(types) else None
    if kind is _np.ndarray:
        shape = first.shape
        return _stack(answers) if all(a.shape == shape for a in answers) else None
    if kind in _SCALARS:
        return _np.array(answers)
    if kind is dict:
        keys = list(first)
        if any(list(answer) != keys for answer in answers):
            return None
        stacked = {k: _stacked_tree([answer[k] for answer in answers]) for k in keys}
        return None if any(v is None for v in stacked.values()) else stacked
    if kind is tuple or kind is list:
        if any(len(answer) != len(first) for answer in answers):
            return None
        stacked = [_stacked_tree(list(column)) for column in zip(*answers)]
        return None if any(v is None for v in stacked) else kind(stacked)
    return None


def _stack(arrays: list):
    """``numpy.stack(arrays)`` of NumPy arrays of one shape, without its checks."""
    if len(arrays) == 1 and arrays[0].flags.c_contiguous:
        # (a third of concatenate's time; its C layout too, where the other layouts it
        # follows, a transpose's stack laid out transposed, give reductions other last bits)
        return arrays[0][None].copy()
    return _np.concatenate([a[None] for a in arrays])


_NUMPY_SCALARS = frozenset({_np.float64, _np.float32, _np.int64, _np.bool_, _np.complex128})
_SCALARS = _NUMPY_SCALARS | {float, int, bool, complex}


def _no_sparse_matrix(leaf, example) -> None:
    if is_sparse_type(type(leaf)):  # (hessian(f, sparse=True) and the like)
        raise TypeError(
            f"vmap: the function answers a scipy.sparse matrix (example {example}), which "
            f"has no batch axis: NumPy would stack the loop's matrices as an object array. "
            f"Return matrix.toarray() for a dense batch, or loop: [f(x) for x in xs].")


def _same_shapes(shapes: list, examples) -> None:
    for shape, i in zip(shapes[1:], examples[1:]):
        if shape != shapes[0]:
            raise ValueError(
                f"vmap: the function's answer has shape {shapes[0]} for example "
                f"{examples[0]} but {shape} for example {i}, so the answers cannot be "
                f"stacked (nor can the loop's, stack([f(x) for x in xs])). Pad them to one "
                f"shape, or return them in a list from a loop of your own.")


def _joined(column: list, parts: list, inverse, size: int):
    """One output leaf of every example, stacked along axis 0 in the examples' order."""
    if len(column) == 1:
        leaf = column[0]
        return leaf.value if isinstance(leaf, _Stacked) else _repeated(leaf.value, size)
    pieces = [leaf.value if isinstance(leaf, _Stacked) else
              _repeated(leaf.value, len(part.examples)) for leaf, part in zip(column, parts)]
    _same_shapes([anp.shape(p)[1:] for p in pieces], [p.examples[0] for p in parts])
    if all(type(p) is _np.ndarray for p in pieces):  # (NumPy's own: nothing to trace)
        joined = _np.concatenate(pieces, axis=0)
        return joined if inverse is None else _np.take(joined, inverse, axis=0)
    joined = anp.concatenate(pieces, axis=0)
    return joined if inverse is None else anp.take(joined, inverse, axis=0)


def _repeated(value, count: int):
    """``value`` (an answer the same for every example) stacked ``count`` times."""
    return anp.repeat(anp.expand_dims(value, 0), count, axis=0)


def _fresh(leaf, memory: dict):
    """``leaf``, or a copy where it is an earlier output, shares memory with one, or is
    read-only: the loop's stacked answers are fresh arrays. (Traced values, as under jit,
    are judged by the arrays they hold; one value answered twice is copied from its last
    copy, as jit takes two copies of one value for one call.)"""
    if id(leaf) in memory:
        memory[id(leaf)] = leaf = anp.copy(memory[id(leaf)])
        return leaf
    # (the memory under boxes and chainrule.numpy's buffers: under jit the batch's copy
    # of an argument is a buffer, and an answer that is it beside a view of it was kept)
    value = leaf if type(leaf) is _np.ndarray else memory_of(underlying(leaf))
    if type(value) is _np.ndarray:
        base = value
        while isinstance(base.base, _np.ndarray):
            base = base.base
        if id(base) in memory or not value.flags.writeable:
            leaf = anp.copy(leaf)
        memory[id(base)] = base
    memory[id(leaf)] = leaf
    return leaf


def _out_spec(out_axes: AxisSpec, answer: Any) -> AxisSpec:
    if isinstance(out_axes, list) and not isinstance(answer, list):
        return tuple(out_axes)
    return out_axes


def _equal(a, b) -> bool:
    # (array_equal is a notrace primitive: under chainrule.jit each answer is a guarded
    # decision, so a later call whose examples differ retraces and raises here too)
    nan_is_nan = all(anp.issubdtype(anp.result_type(v), _np.inexact) for v in (a, b))
    return bool(anp.array_equal(a, b, equal_nan=nan_is_nan))


def _same_for_all(column: list, parts: list) -> Any:
    """An output that out_axes says is the same for every example: example 0's, once
    every example is checked to agree with it."""
    first_part = min(range(len(parts)), key=lambda k: parts[k].examples.min(initial=0))
    first = column[first_part]
    if isinstance(first, _Stacked):
        if not len(parts[first_part].examples):
            raise ValueError("vmap: out_axes is None for an output of an empty batch that "
                             "depends on the example; give it an axis to stack along.")
        first = first.value[int(_np.argmin(parts[first_part].examples))]
        first = first.copy() if type(first) is _np.ndarray else first
    else:
        first = first.value
    for leaf in column:
        if isinstance(leaf, _Shared):
            agree = _equal(first, leaf.value)
        elif type(leaf.value) is _np.ndarray:  # every example at once
            agree = _equal(anp.broadcast_to(first, anp.shape(leaf.value)), leaf.value)
        else:
            agree = all(_equal(first, leaf.value[k]) for k in range(len(leaf.value)))
        if not agree:
            raise ValueError(
                "vmap: out_axes is None for an output that differs between "
                "examples; give it an axis to stack along.")
    return first
