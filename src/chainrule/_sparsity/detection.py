"""Sparsity detection: ``fun`` recorded once at x on a trace of its own, and the pattern of
d output / d x propagated through the record, node by node.

The detection trace (``DetectionNode``) records every primitive call on a value computed
from x, and follows x where a derivative trace would lose it:

- an elementwise notrace function (a comparison, ``sign``, ``floor``, ``isnan`` ...)
  answers a traced value without a derivative (``Node.on_notrace``): a mask or a sign
  computed from x stays a value of the record, one whose zeros a global pattern never
  reads;
- every other value Python reads from x is a *decision* (``bool()``, ``int()``,
  ``float()``, an index, ``argmax``'s answer, a keyword argument; ``Node.on_decision``):
  the record, and a pattern found from it, then describe the path those decisions took.

Each node carries the boolean pattern of d node / d x (CSR, node size x x size): the
sum over its traced arguments of (local pattern) @ (argument's pattern), the local
pattern from the primitive's ``sparsity`` rule (``defsparsity``); without one, dense.

Global patterns (the default) hold at every x. A rule is handed the node's arguments,
the values of traced ones included, so global detection calls a rule only where those
values cannot matter: the rule takes ``traced`` and ``local`` itself (``wants_traced``:
a product counts a traced factor as all nonzero), or each traced argument other than the
one differentiated sits where the rule reads only shapes (``shape_only``: the operands of
an elementwise function, the data of a copy or a reduction). Elsewhere (an index or a
count computed from x) the node is dense, and its answer's shape may depend on x. With
``local=True`` rules read every value at x, and the pattern holds at that x only.

Guards. A record without decisions and without such nodes is the same at every x (one
path through ``fun``, with the same shapes and constants), so its pattern holds
everywhere. Otherwise its ``Detection`` is *guarded*: an evaluator records ``fun`` again
at each new x and compares ``structure_key`` (all a pattern is computed from) before it
reuses a pattern (``chainrule._transforms.sparse``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as _np

from .._core.containers import container_add, sequence_take, sequence_untake
from .._core.pytree import _sorted_keys, tree_flatten
from .._core.replay import subvals
from .._core.reverse import KeptVJPNode, Recording, make_vjp
from .._core.rule_table import rule_table
from .._core.rules import defsparsity
from .._core.tracer import copy_of, decided, getval, isbox, new_box
from .._core.vspace import vspace
from .._user_code import reach
from .._user_code.lines import storing_an_item
from .patterns import UNCHANGED, _size, identity_pattern, map_pattern, scipy_sparse
from .products import is_sparse_type


class Detection:
    """What one detection record found besides its graph: whether it is *guarded* (the
    record could differ at another x), and the first reason why."""

    __slots__ = ("guarded", "reason")

    def __init__(self):
        self.guarded, self.reason = False, ""

    def guard(self, reason: str) -> None:
        if not self.guarded:
            self.guarded, self.reason = True, reason


def _name(fun) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def _on_decision(box, convert):
    """A Python decision on a value computed from x (``Node.on_decision``)."""
    if convert is float and storing_an_item():
        # NumPy writing the value into a plain array (a[i] = x): grad and jacobian refuse
        # it (the value would lose its derivative); a pattern without it would be wrong
        box.refuse_conversion(float)
    box._node.detection.guard(f"a Python decision ({_name(convert)}) on a value computed from x")
    return decided(box._value, convert)  # an older trace (chainrule.jit) decides too


# notrace functions answering one element per element of their broadcast operands: their
# answers stay values of the record; any other notrace answer is a decision
_ELEMENTWISE_FUNCTIONS = frozenset(
    [_np.round, _np.around, _np.fix, _np.isneginf, _np.isposinf, _np.isreal, _np.iscomplex,
     _np.isclose]
)  # fmt: skip
# notrace functions whose answers depend on shapes and dtypes only: constants of the record
_SHAPE_ONLY = frozenset(
    [_np.shape, _np.ndim, _np.size, _np.result_type, _np.iscomplexobj, _np.isrealobj,
     _np.zeros_like, _np.ones_like, _np.empty_like, _np.eye, _np.identity]
)  # fmt: skip
_TRACEABLE = (_np.ndarray, float, complex, _np.inexact)


def _detection_trace(values) -> int:
    """The newest detection trace among the levels of boxing of ``values`` (0: none)."""
    found = 0
    for value in values:
        while isbox(value):
            if type(value._node) is DetectionNode and value._trace_id > found:
                found = value._trace_id
            value = value._value
    return found


def _at_level(value, trace_id: int):
    """``value`` with the boxing of ``trace_id`` and of newer traces taken off, and the
    box of ``trace_id`` it held (or None)."""
    while isbox(value) and value._trace_id > trace_id:
        value = value._value
    if isbox(value) and value._trace_id == trace_id:
        return value._value, value
    return value, None


def _on_notrace(box, f_wrapped, args, kwargs):
    """A notrace primitive called on values of the record (``Node.on_notrace``)."""
    trace_id = box._trace_id
    detection = box._node.detection
    values, argnums, parents = [], [], []
    for i, arg in enumerate(args):
        value, at_level = _at_level(arg, trace_id)
        if at_level is not None:
            argnums.append(i)
            parents.append(at_level._node)
        values.append(value)
    if not parents:
        # only inside a list, a tuple or a keyword: NumPy reads the plain value (the engine
        # strips it when every trace has declined), so the answer is a decision
        detection.guard(f"{_name(f_wrapped)} on a value computed from x inside a list, "
                        f"a tuple or a keyword, read as a plain value")
        return NotImplemented
    plain = _plain_keywords(kwargs, trace_id, detection)
    try:
        ans = f_wrapped(*values, **plain)  # (a recursive call: an older trace records its part)
    except Exception:
        detection.guard(f"an exception raised by {_name(f_wrapped)} on a value computed from x")
        raise
    raw = f_wrapped.fun
    if raw in _SHAPE_ONLY:
        return ans
    if (isinstance(raw, _np.ufunc) or raw in _ELEMENTWISE_FUNCTIONS) and isinstance(
        getval(ans), _TRACEABLE
    ):
        node = DetectionNode(ans, f_wrapped, values, plain, tuple(argnums), tuple(parents))
        return new_box(ans, trace_id, node)
    detection.guard(f"{_name(raw)}'s answer on a value computed from x, read as a plain value")
    return ans


def _plain_keywords(kwargs: dict, trace_id: int, detection: Detection) -> dict:
    """Keyword arguments are constants of a recorded call: values of the record given
    by keyword are read as plain values (a decision)."""
    plain = {}
    for key, value in kwargs.items():
        value, box = _at_level(value, trace_id)
        if box is not None:
            detection.guard(f"the keyword {key}= computed from x, read as a plain value")
        plain[key] = value
    return plain


def _on_error(box) -> None:
    """A primitive call on a value computed from x raised (``Node.on_error``): ``fun`` may
    catch it and go another way, a path that depends on x."""
    box._node.detection.guard("an exception raised by a call on a value computed from x")


class DetectionNode(KeptVJPNode):
    """A call recorded for sparsity detection: a ``KeptVJPNode`` (every argument and answer
    kept, for the rules) that shares its record's ``Detection``."""

    __slots__ = ("detection",)
    on_decision = staticmethod(_on_decision)
    on_notrace = staticmethod(_on_notrace)
    on_error = staticmethod(_on_error)
    # (on_untraceable_answer and on_traced_keywords: set below, after their helpers)

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        KeptVJPNode.__init__(self, ans, fun, args, kwargs, argnums, parents)
        self.detection = parents[0].detection
        read = _read_values(fun, argnums, len(args))
        if read:  # (recorded now: the answer may be read for its shape alone, len(a[m]))
            self.detection.guard(
                f"{_name(fun)} reads argument {read[0]}, computed from x, as a value "
                f"(its answer's shape or contents may depend on it)"
            )
        elif any(getattr(getattr(leaf, "dtype", None), "kind", "") in ("i", "u")
                 for leaf in _leaves(getval(ans))):
            # integers computed from x (where(c)'s indices, a count): their number or values
            # may decide what the function does next, as a decision would
            self.detection.guard(
                f"{_name(fun)}'s answer, integers computed from x (indices, counts)")

    def initialize_root(self, detection: Detection) -> None:
        KeptVJPNode.initialize_root(self)
        self.detection = detection


def _leaves(value) -> tuple | list:
    return (value,) if type(value) is _np.ndarray else tree_flatten(value)[0]  # (most: one)


def _detection_of(values, trace_id: int) -> Detection:
    """The ``Detection`` of the record ``trace_id`` that one of ``values`` belongs to."""
    return next(box._node.detection for box in (_at_level(v, trace_id)[1] for v in values)
                if box is not None)  # fmt: skip


def _plain_answer(f_raw, args, kwargs):
    """``DetectionNode.on_untraceable_answer``: an answer no box holds (``mask[0]``, a
    NumPy bool) computed from values of a record: a plain value, and a decision."""
    trace_id = _detection_trace(args)
    if not trace_id:
        return NotImplemented
    values = [_at_level(arg, trace_id)[0] for arg in args]
    if any(isbox(v) for v in values):
        return NotImplemented  # a value of an older trace too: that trace's handler's
    _detection_of(args, trace_id).guard(
        f"{_name(f_raw)}'s answer on a value computed from x, read as a plain value")
    return f_raw(*values, **kwargs)


def _keywords_made_plain(kwargs: dict):
    """``DetectionNode.on_traced_keywords``: values of a record made plain (a decision),
    or NotImplemented where another traced value remains."""
    trace_id = _detection_trace(kwargs.values())
    if not trace_id:
        return NotImplemented
    plain = _plain_keywords(kwargs, trace_id, _detection_of(kwargs.values(), trace_id))
    if any(isbox(v) for v in plain.values()):
        return NotImplemented
    return plain


DetectionNode.on_untraceable_answer = staticmethod(_plain_answer)
DetectionNode.on_traced_keywords = staticmethod(_keywords_made_plain)


# ----------------------------------------------------------------------------- records


def record(fun: Callable, x: Any) -> tuple[Recording, Detection]:
    """``fun(x)`` recorded for sparsity detection."""
    generators = reach.GeneratorStates(reach.Reach([fun]).generators)
    detection = Detection()
    recording = Recording(fun, x, node_type=DetectionNode, root_args=(detection,))
    drawn = generators.drawn()
    if drawn:
        raise ValueError(
            f"{_name(fun)} draws random numbers ({reach.describe(drawn[0])}): a sparse "
            f"derivative evaluates it several times (to find the pattern, then once per "
            f"colour), each time with new draws, so its entries would come from different "
            f"functions. Draw the numbers outside and pass them in (an argument fixed with "
            f"functools.partial, or a closure value), or use the dense derivative.")
    return recording, detection


def _answer_key(value) -> tuple:
    return tuple(
        (_np.shape(leaf), str(getattr(leaf, "dtype", type(leaf).__name__)))
        for leaf in tree_flatten(value)[0]
    )


def _digest(array: _np.ndarray) -> bytes:
    return hashlib.blake2b(_np.ascontiguousarray(array).tobytes(), digest_size=16).digest()


def constant_key(value) -> Any:
    """A comparable stand-in for a constant (an argument of a recorded call, a value the
    recorded function reads from outside x): equal for equal values (arrays by
    their bytes, floats by their text, so -0.0 and nan count), by identity otherwise."""
    kind = type(value)
    if kind is _np.ndarray:
        return (kind, value.shape, value.dtype.str, _digest(value))
    if isinstance(value, _np.ndarray):  # (a memmap, a masked array with its mask, a matrix)
        mask = _digest(_np.ma.getmaskarray(value)) if _np.ma.isMaskedArray(value) else None
        return (kind, value.shape, value.dtype.str, _digest(_np.asarray(value)), mask)
    if kind is tuple or kind is list:
        return (kind, tuple(map(constant_key, value)))
    if kind is dict:
        return (kind, tuple((k, constant_key(v)) for k, v in value.items()))
    if kind is slice:
        return (kind, constant_key(value.start), constant_key(value.stop),
                constant_key(value.step))  # fmt: skip
    if kind is float or kind is complex or isinstance(value, _np.inexact):
        return (kind, repr(value))
    if is_sparse_type(kind):
        coo = value.tocoo()
        return (kind, coo.shape, _digest(coo.row), _digest(coo.col))
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))
    return (kind, value)


def structure_key(recording: Recording) -> tuple:
    """What the pattern of ``recording`` is computed from: per node its primitive, traced
    positions, parents, answer's shapes and constants; the outputs. Two records with equal
    keys have equal global patterns."""
    number = {root: i for i, root in enumerate(recording.roots)}
    nodes = []
    for node in reversed(recording.order()):
        if node.fun is None:
            continue
        number[node] = len(number)
        constants = tuple(
            constant_key(arg) for i, arg in enumerate(node.args) if i not in node.argnums
        )
        keywords = tuple((k, constant_key(v)) for k, v in sorted(node.kwargs.items()))
        nodes.append((node.fun, node.argnums, tuple(number[p] for p in node.parents),
                      _answer_key(node.ans), constants, keywords))  # fmt: skip
    ends = tuple((i, number[node]) for i, node in recording.ends)
    return tuple(nodes), ends, tuple(_answer_key(v) for v in recording.out_values)


# ----------------------------------------------------------------------------- propagation


def _empty(n_out: int, n_in: int):
    return scipy_sparse().csr_matrix((n_out, n_in), dtype=bool)


def _dense_pattern(n_out: int, parents_pattern):
    """Every output depends on every input column any parent depends on."""
    cols = _np.unique(parents_pattern.indices)
    rows = _np.repeat(_np.arange(n_out), cols.size)
    return map_pattern(rows, _np.tile(cols, n_out), (n_out, parents_pattern.shape[1]))


def _only_itself(n_args: int) -> tuple:
    return ()


def _read_values(fun, argnums: tuple, n_args: int) -> list:
    """The traced positions of a call whose values ``fun``'s sparsity rule reads (all but
    one of them may be read: the one differentiated is excused), where there are two
    traced positions or more; empty for rules that take ``traced`` themselves."""
    if len(argnums) < 2:
        return []
    entry = rule_table.get(fun)
    rule = None if entry is None else entry.sparsity
    if rule is None or getattr(rule, "wants_traced", False):
        return []
    shape_only = getattr(rule, "shape_only", _only_itself)(n_args)
    return [i for i in argnums if i not in shape_only]


def _local_pattern(rule, node, argnum: int, local: bool):
    """The rule's pattern of d node / d args[argnum], or None (dense) where a global
    pattern cannot use it: it would read the value of another traced argument (the
    record is guarded for it, see ``DetectionNode``)."""
    if rule is None:
        return None
    if getattr(rule, "wants_traced", False):
        return rule(argnum, node.ans, node.args, node.kwargs, traced=node.argnums, local=local)
    if not local and any(i != argnum for i in _read_values(node.fun, node.argnums,
                                                           len(node.args))):  # fmt: skip
        return None
    return rule(argnum, node.ans, node.args, node.kwargs)


def _node_pattern(node, patterns: dict, n_in: int, local: bool):
    # a primitive answering a tuple (qr, svd, array_split ...): its leaves one after
    # another, each depending on all of them unless a rule says otherwise
    n_out = sum(_size(leaf) for leaf in tree_flatten(node.ans)[0])
    if getattr(node.fun, "_chainrule_notrace", False):
        return _empty(n_out, n_in)  # a mask or a sign: a value without a derivative
    entry = rule_table.get(node.fun)
    rule = None if entry is None else entry.sparsity
    total = None
    for parent, argnum in zip(node.parents, node.argnums):
        parent_pattern = patterns[parent]
        if parent_pattern.nnz == 0:
            continue  # (a mask's: nothing to carry, and no value of it is read)
        local_pattern = _local_pattern(rule, node, argnum, local)
        if local_pattern is None:
            part = _dense_pattern(n_out, parent_pattern)
        elif local_pattern is UNCHANGED:
            part = parent_pattern
        else:
            part = (local_pattern @ parent_pattern).astype(bool)
        total = part if total is None else (total + part).astype(bool)
    return _empty(n_out, n_in) if total is None else total.tocsr()


def recorded_pattern(recording: Recording, local: bool):
    """The pattern of the Jacobian of a detection record's function: rows its flattened
    outputs, columns its flattened inputs."""
    sp = scipy_sparse()
    # one column per element (a complex one too, whose space counts two real dimensions)
    sizes = [int(_np.prod(space.shape, dtype=_np.int64)) for space in recording.spaces]
    n_in = sum(sizes)
    patterns, start = {}, 0
    for root, size in zip(recording.roots, sizes):
        rows = _np.arange(size)
        patterns[root] = map_pattern(rows, rows + start, (size, n_in))
        start += size
    for node in reversed(recording.order()):
        if node.fun is not None:
            patterns[node] = _node_pattern(node, patterns, n_in, local)
    blocks = []
    for i, value in enumerate(recording.out_values):
        node = next((n for j, n in recording.ends if j == i), None)
        blocks.append(_empty(_size(value), n_in) if node is None else patterns[node])
    return sp.vstack(blocks, format="csr").astype(bool)


def derived_pattern(impl: Callable) -> Callable:
    """The sparsity rule of a primitive whose value equals ``impl``, a function built from
    primitives (``composite``): ``impl`` recorded on the node's arguments, the traced ones
    as its inputs, and its pattern's block for the argument asked. Dense where that record
    took a decision on a traced value (it would hold on one path only)."""

    def rule(argnum, ans, args, kwargs, traced=(), local=False):
        positions = sorted(set(traced) | {argnum})

        def with_inputs(xs):
            return impl(*subvals(args, zip(positions, xs)), **kwargs)

        recording, detection = record(with_inputs, tuple(args[i] for i in positions))
        if detection.guarded and not local:
            return None
        pattern = recorded_pattern(recording, local)
        start = sum(_size(args[i]) for i in positions[: positions.index(argnum)])
        return pattern[:, start : start + _size(args[argnum])].tocsr()

    rule.wants_traced = True
    return rule


# ----------------------------------------------------------------------------- the engine's own
# The engine's primitives for containers and copies, whose rules live in the core (which
# does not know patterns): an item of a container, a container around an item, a sum.


def _leaf_sizes(container) -> tuple[list, list]:
    """The keys of ``container`` in its flattened order (a dict's sorted) and the number of
    elements under each."""
    keys = _sorted_keys(container) if isinstance(container, dict) else range(len(container))
    return list(keys), [sum(_size(leaf) for leaf in tree_flatten(container[k])[0]) for k in keys]


def _item_rows(container, index) -> _np.ndarray:
    keys, sizes = _leaf_sizes(container)
    if not isinstance(container, dict):
        index = keys[index]  # (a negative index)
    start = sum(sizes[: keys.index(index)])
    return _np.arange(start, start + sizes[keys.index(index)])


def _take_pattern(argnum, ans, args, kwargs):
    container, index = args[0], args[1]
    if argnum != 0 or isinstance(index, slice):
        return None
    rows = _item_rows(container, index)
    return map_pattern(_np.arange(rows.size), rows, (rows.size, sum(_leaf_sizes(container)[1])))


def _untake_pattern(argnum, ans, args, kwargs):
    if argnum != 0 or isinstance(args[1], slice):
        return None
    rows = _item_rows(ans, args[1])
    return map_pattern(rows, _np.arange(rows.size), (sum(_leaf_sizes(ans)[1]), rows.size))


defsparsity(sequence_take, _take_pattern)
defsparsity(sequence_untake, _untake_pattern)
defsparsity(container_add, identity_pattern)
defsparsity(copy_of, identity_pattern)


def gradient(fun: Callable) -> Callable:
    """The gradient of scalar ``fun`` by one reverse pass (the engine's, not the public
    ``grad``: the rule tables import this module, and ``grad`` imports them)."""

    def gradient_of_fun(x):
        vjp, ans = make_vjp(fun, x)
        if _size(ans) != 1:
            raise TypeError(
                f"a sparse Hessian needs a scalar function; this one returns "
                f"shape {_np.shape(ans)}."
            )
        return vjp(vspace(ans).ones())

    return gradient_of_fun


def jacobian_sparsity(fun: Callable, x: Any, local: bool = False):
    """The structural sparsity pattern of the Jacobian of ``fun`` at ``x``: a boolean
    ``scipy.sparse`` CSR matrix, rows the flattened outputs, columns the flattened inputs
    (pytree leaves in order). Global unless ``local=True``: it holds at every x that takes
    the Python decisions ``fun`` took at ``x`` (every x, where it takes none)."""
    recording, _ = record(fun, x)
    return recorded_pattern(recording, local)


def hessian_sparsity(fun: Callable, x: Any, local: bool = False):
    """The structural sparsity pattern of the Hessian of scalar ``fun`` at ``x``: the
    pattern of the Jacobian of its gradient, whose backward pass is recorded by the outer
    trace (conservative where a recorded backward primitive declares no pattern)."""
    return jacobian_sparsity(gradient(fun), x, local=local)
