"""BatchedArray: the value of a whole batch inside ``chainrule.vmap``, and the dispatch of
primitives to their batching rules.

A BatchedArray stands for one example of the mapped function (its ``shape``, ``ndim``,
``len`` are an example's) and holds the whole batch, the batch as its leading axis. Like a
box, it belongs to a trace (one per vmap call): a primitive called with one of the newest
trace is answered by the primitive's batching rule (its rule-table entry's ``batch``
column) in one call for the whole batch, or, without a rule, once per example. Boxes of
newer traces (a ``grad`` inside the ``vmap``) record first and hand it on, so every
transform composes with vmap in any order.

A Python decision on a batched value (``if x > 0:``) is taken for the batch when every
example agrees; otherwise ``BatchSplit`` tells vmap to run the function per group of
agreeing examples. What cannot run batched (``np.asarray(x)`` in the mapped function)
raises ``BatchUnsupported``, and vmap falls back to its per-example loop.
"""

from __future__ import annotations

import inspect
import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as _np

from .._core import reverse, tracer
from .._core.pytree import tree_flatten, tree_unflatten
from .._core.rule_table import rule_table
from .._core.tracer import register_batched_type
from .._core.vspace import VSpace
from . import numpy_wrapper as anp
from ._namespace import raw_to_wrapped
from .numpy_boxes import ArrayBox
from .numpy_vspaces import ArrayVSpace


# The two signals to vmap are BaseExceptions, as GeneratorExit is: a mapped function's own
# ``except Exception:`` (around ``float(x)``, say) must not swallow them and go on with a
# made-up value for the whole batch.
class BatchSplit(BaseException):
    """The examples of a batch disagree on a Python decision: ``keys[i]`` is example i's."""

    def __init__(self, trace_id: int, keys: list):
        super().__init__("vmap: examples disagree on a Python decision")
        self.trace_id, self.keys = trace_id, keys


class BatchUnsupported(BaseException):
    """Something the mapped function does cannot run on the whole batch at once."""

    def __init__(self, trace_id: int, what: str):
        super().__init__(what)
        self.trace_id, self.what = trace_id, what


class BatchLoopWarning(UserWarning):
    """A primitive without a batching rule runs once per example under vmap."""


class BatchedArray(ArrayBox):
    """One example's view of a batch under vmap (see the module docstring)."""

    __slots__ = ("_size",)

    def __init__(self, value, trace_id: int, size: int):
        self._value, self._trace_id, self._node, self._size = value, trace_id, None, size

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
        return (f"BatchedArray(shape={self.shape} per example, batch of {self._size}, "
                f"trace={self._trace_id})")

    # ------------------------------------------------------------------ decisions
    def _decide(self, convert: Callable) -> Any:
        """``convert`` of each example: their common answer, or BatchSplit."""
        plain = self._value
        while tracer.isbox(plain) and plain._node.on_decision is None:
            plain = plain._value  # an older trace's box: a decision has no derivative
        if tracer.isbox(plain) or type(plain) is BatchedArray:
            # staged by jit, or batched by an outer vmap: each example decides by its rules
            examples = [self._value[i] for i in range(self._size)]
        else:
            examples = plain
        keys = [convert(example) for example in examples]
        if all(k == keys[0] for k in keys[1:]):
            return keys[0]
        raise BatchSplit(self._trace_id, keys)

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

    def __array__(self, dtype=None, copy=None):
        raise BatchUnsupported(self._trace_id, "a batched value converted to a NumPy array")

    # ------------------------------------------------------------------ NumPy's protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None:
            return batch_call(_per_example(ufunc, method), inputs, kwargs, self._trace_id)
        return batch_call(raw_to_wrapped.get(ufunc, ufunc), inputs, kwargs, self._trace_id)

    def __array_function__(self, func, types, args, kwargs):
        if func in _ABOUT_AN_EXAMPLE:
            return func(*[_stand_in(a) for a in args], **kwargs)
        return batch_call(raw_to_wrapped.get(func, func), args, kwargs, self._trace_id)


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
                     _np.empty_like}


def _per_example(ufunc, method: str) -> Callable:
    """``ufunc.method`` (reduce, accumulate, outer...), which has no batching rule."""

    def call(*args, **kwargs):
        return getattr(ufunc, method)(*args, **kwargs)
    call.__name__ = f"{ufunc.__name__}.{method}"
    return call


register_batched_type(BatchedArray)
VSpace.register(BatchedArray, lambda b: ArrayVSpace(_np.zeros(b.shape, b.dtype)))


# --------------------------------------------------------------------------- dispatch
def batch_call(fun: Callable, args, kwargs, trace_id: int):
    """``fun(*args, **kwargs)`` where some arguments are BatchedArrays of trace
    ``trace_id`` (the newest among them): by ``fun``'s batching rule, else once per
    example."""
    values, batched, size = [], [], None
    for arg in args:
        if type(arg) is BatchedArray and arg._trace_id == trace_id:
            values.append(arg._value)
            batched.append(True)
            size = arg._size
        else:
            values.append(arg)
            batched.append(False)
    if size is None:  # batched values only inside lists or keyword arguments
        size = _size_within((args, kwargs), trace_id)
        ans = _loop(fun, args, kwargs, size, trace_id,
                    "gets batched values inside a list or by keyword")
    else:
        rule = batching_rule(fun)
        ans = NotImplemented if rule is None else rule(values, tuple(batched), kwargs)
        if ans is NotImplemented:
            ans = _loop(fun, args, kwargs, size, trace_id,
                        "has no batching rule" if rule is None else
                        "has a batching rule that does not cover this call")
    return _as_batched(ans, trace_id, size)


tracer.batch_hook = lambda f_wrapped, args, kwargs, trace_id: batch_call(
    f_wrapped, args, kwargs, trace_id)


def _as_batched(ans, trace_id: int, size: int):
    if isinstance(ans, tuple):
        items = [_as_batched(a, trace_id, size) for a in ans]
        return type(ans)(*items) if hasattr(ans, "_fields") else type(ans)(items)
    if isinstance(ans, list):
        return [_as_batched(a, trace_id, size) for a in ans]
    return BatchedArray(ans, trace_id, size)


_warned: set = set()
_quiet_traces: set = set()  # batching traces of chainrule's own (no warnings: see below)


def _loop(fun, args, kwargs, size: int, trace_id: int, why: str):
    """``fun`` once per example, the answers stacked: the batching of last resort."""
    name = getattr(fun, "__name__", repr(fun))
    if (name, why) not in _warned and trace_id not in _quiet_traces:
        _warned.add((name, why))
        warnings.warn(
            f"vmap: {name} {why}, so it runs once per example (correct, but as slow as a "
            f"Python loop). A rule can be given with chainrule.extend.defbatch.",
            BatchLoopWarning, stacklevel=4)
    answers = []
    for i in range(size):
        example_args, example_kwargs = _example((args, kwargs), i, trace_id)
        answers.append(fun(*example_args, **example_kwargs))
    return stack_answers(answers, trace_id)


def _example(obj, i: int, trace_id: int):
    """``obj`` (arguments, lists and dicts of them) with each batched value of the trace
    replaced by its example ``i``."""
    if type(obj) is BatchedArray and obj._trace_id == trace_id:
        return obj._value[i]
    if type(obj) in (list, tuple):
        return type(obj)(_example(v, i, trace_id) for v in obj)
    if type(obj) is dict:
        return {k: _example(v, i, trace_id) for k, v in obj.items()}
    return obj


def _size_within(obj, trace_id: int) -> int:
    if type(obj) is BatchedArray and obj._trace_id == trace_id:
        return obj._size
    items = obj.values() if type(obj) is dict else obj if type(obj) in (list, tuple) else ()
    for v in items:
        size = _size_within(v, trace_id)
        if size is not None:
            return size
    return None


def stack_answers(answers: list, trace_id: int):
    """Per-example answers (arrays, or tuples/lists of them) stacked along a new axis 0."""
    first = answers[0]
    # (a tuple answer of a primitive recorded by an older trace, e.g. chainrule.jit's, is
    # a SequenceBox: its items are taken through it, so that trace records them)
    kind = type(tracer.getval(first))
    if issubclass(kind, (tuple, list)):
        parts = [stack_answers([a[j] for a in answers], trace_id) for j in range(len(first))]
        return kind(*parts) if hasattr(kind, "_fields") else kind(parts)
    shapes = {_np.shape(a) for a in answers}
    if len(shapes) > 1:
        raise BatchUnsupported(trace_id, f"answers of different shapes per example {shapes}")
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
    if isinstance(_raw_function(fun), _np.ufunc):
        return _elementwise_rule(fun)
    return None


def example_ndim(value, batched: bool) -> int:
    if batched:
        return _np.ndim(value) - 1
    return 0 if isinstance(value, (type, str, _np.dtype)) else _np.ndim(value)


def aligned(values, batched) -> list:
    """Batched operands of a broadcasting function with their example axes padded on the
    left to a common rank, so the batch axis lines up; plain ones broadcast as they are."""
    rank = max(example_ndim(v, b) for v, b in zip(values, batched))
    out = []
    for v, b in zip(values, batched):
        missing = rank - example_ndim(v, b) if b else 0
        out.append(anp.expand_dims(v, tuple(range(1, 1 + missing))) if missing else v)
    return out


def _elementwise_rule(fun: Callable) -> Callable:
    def elementwise(values, batched, kwargs):
        return fun(*aligned(values, batched), **kwargs)
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
    trace_id = tracer.new_trace_id()
    tracer.live_trace_ids.add(trace_id)
    _quiet_traces.add(trace_id)
    try:
        leaves, treedef = tree_flatten(tree)
        batched = [leaf if leaf is None else BatchedArray(leaf, trace_id, size)
                   for leaf in leaves]
        out_leaves, out_def = tree_flatten(fun(tree_unflatten(treedef, batched)))
        return tree_unflatten(out_def, [
            leaf._value if type(leaf) is BatchedArray and leaf._trace_id == trace_id
            else anp.broadcast_to(leaf, (size,) + _np.shape(leaf)) for leaf in out_leaves])
    except (BatchSplit, BatchUnsupported) as failure:
        if failure.trace_id != trace_id:
            raise
        return None
    finally:
        _quiet_traces.discard(trace_id)
        tracer.live_trace_ids.discard(trace_id)


def jvp_over_batch(jvp, tangents, argnums, ans, args, kwargs, size: int):
    """A JVP rule applied to ``size`` tangents at once (see ``reverse.jvp_over_batch``)."""
    return over_batch(lambda t: jvp(t, argnums, ans, args, kwargs), tangents, size)


reverse.jvp_over_batch = jvp_over_batch
