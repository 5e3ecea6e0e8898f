"""The Tensor trace: one reverse-mode trace shared by every Tensor, and its backward.

A Tensor that requires grad holds a box on ``TRACE_ID``, a trace made once at
import. It is the oldest trace there is, so when a Tensor meets a functional
transform (``grad(f)`` of code that uses Tensors) the transform's boxes wrap the
Tensor's box, and the tracer's nesting rules apply unchanged. Nodes on this
trace are ordinary VJP nodes: ``backward`` is the engine's ``backward_pass``,
and ``create_graph`` re-runs the recorded calls under the engine's ``make_vjp``
so that the gradients are themselves recorded. No derivative rule lives here.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from .._core.heap import keeping_heap_growth
from .._core.replay import calls_in_order, replay, values_used
from .._core.reverse import FreedGraphError, VJPNode, backward_pass, make_vjp, toposort
from .._core.rule_table import rule_table
from .._core.rules import defbatch, defjvp_direct, deflabel, defvjp_direct
from .._core.tracer import (
    isbox,
    live_trace_ids,
    new_box,
    new_trace_id,
    primitive,
)
from ..numpy import numpy_wrapper as anp
from ..numpy.numpy_boxes import array_astype, array_getitem

TRACE_ID = new_trace_id()
live_trace_ids.add_perpetual(TRACE_ID)  # the Tensor trace never ends


class TensorNode(VJPNode):
    """A node of the Tensor trace.

    Roots (leaf Tensors) also hold ``leaf``, a weak reference to their Tensor,
    which receives the gradient; interior nodes are made by the tracer with
    VJPNode's constructor and never read ``leaf``. Two marks serve the in-place
    check (``check_overwrites``), set only on interior nodes: ``overwritten`` is
    (the in-place method that later replaced the node's value in its Tensor, the
    node that method made), ``keeps_output`` says PyTorch's version of the function
    saves its output (relu, sigmoid, softmax are composites here). ``hooks`` and
    ``retains`` are set on the nodes of Tensors with gradient hooks (see ``add_hook``).
    """

    __slots__ = ("leaf", "overwritten", "keeps_output", "hooks", "retains")
    keeps_everything = True  # create_graph replays the recorded calls

    @property
    def name(self) -> str:
        if self.fun is None:
            return "leaf"
        return getattr(self.fun, "__name__", None) or repr(self.fun)

    def __repr__(self) -> str:
        return f"<TensorNode {self.name}>"


def leaf_box(raw, tensor):
    root = TensorNode.new_root()
    root.leaf = weakref.ref(tensor)
    return new_box(raw, TRACE_ID, root)


def tensor_box(value):
    """The box of ``value`` on the Tensor trace, or None (it is always the innermost box)."""
    while isbox(value):
        if value._trace_id == TRACE_ID:
            return value
        value = value._value
    return None


def strip(value):
    """``value`` without its Tensor-trace box; the boxes of functional transforms stay.

    A functional box around the Tensor box is rebuilt around the stripped value
    with an identity node (``positive``), so the transform still sees the value
    as depending on its input.
    """
    if not isbox(value):
        return value
    if value._trace_id == TRACE_ID:
        return value._value
    inner = strip(value._value)
    if inner is value._value:
        return value
    node = type(value._node)(inner, anp.positive, [value._value], {}, (0,), (value._node,))
    return new_box(inner, value._trace_id, node)


def _freed(node) -> FreedGraphError:
    return FreedGraphError(
        f"The graph through {node.name} was freed by an earlier backward pass. Keep it with "
        f"retain_graph=True (or create_graph=True) on the first backward()."
    )


# PyTorch's version counter, in effect. The graph keeps every value it recorded, so an
# in-place method (y.add_(1)) never corrupts a gradient here: it rebinds y to a new value.
# PyTorch instead writes into the memory that its graph saved, and refuses the backward
# pass when a saved value changed. The same programs are refused here so that a script
# runs the same in both: a node that PyTorch saves for backward (the inputs of most
# functions, the output of exp, tanh, sqrt, ...) must not have been overwritten.
# fmt: off
_SAVES_NO_INPUT = frozenset([
    anp.add, anp.subtract, anp.negative, anp.positive, anp.sum, anp.mean, anp.reshape,
    anp.transpose, anp.swapaxes, anp.moveaxis, anp.expand_dims, anp.squeeze, anp.ravel,
    anp.broadcast_to, anp.tile, anp.where, anp.take_along_axis, anp.concatenate, anp.stack,
    anp.cumsum, anp.flip, anp.roll, anp.diagonal, anp.trace, anp.triu, anp.tril, anp.conj,
    anp.real, anp.imag, anp.repeat, anp.pad, array_getitem, array_astype,
])
_SAVES_OUTPUT = frozenset([anp.exp, anp.expm1, anp.tanh, anp.sqrt, anp.reciprocal])
_PRODUCTS = frozenset([anp.multiply, anp.matmul, anp.dot])  # save each factor for the other
# fmt: on
# The nodes whose values were changed in place, while they live: when there are none (the
# usual case), backward() checks nothing.
_overwritten: weakref.WeakSet = weakref.WeakSet()


def mark_overwritten(node: TensorNode, method: str, by: TensorNode | None) -> None:
    node.overwritten = (method, by)
    _overwritten.add(node)


def keep_output(value) -> None:
    """Note that PyTorch saves this result of a composite function for its backward."""
    box = tensor_box(value)
    if box is not None and box._node.fun is not None:
        box._node.keeps_output = True


def _saves(node: TensorNode) -> tuple[tuple, bool]:
    """(argument positions PyTorch's backward would save, whether it saves the output)."""
    fun, argnums = node.fun, node.argnums
    saves_output = fun in _SAVES_OUTPUT or getattr(node, "keeps_output", False)
    if fun in _SAVES_NO_INPUT:
        return (), saves_output
    if fun in _PRODUCTS:  # a factor is saved only to differentiate the other one
        return tuple(i for i in argnums if len(argnums) > 1), saves_output
    if fun is anp.true_divide:  # d/da needs b; d/db needs a and b
        return tuple(i for i in argnums if i == 1 or 1 in argnums), saves_output
    entry = rule_table.get(fun)  # what the VJP reads, where its rules declare it
    unread = entry.unread_args if entry is not None else None
    saved = tuple(i for i in argnums if unread is None or i not in unread)
    return saved, saves_output or (unread is not None and entry.reads_ans)


def check_overwrites(end: TensorNode) -> None:
    for node in toposort([end]):
        if node.fun is None:
            continue
        saved, saves_output = _saves(node)
        culprits = [p for i, p in zip(node.argnums, node.parents) if i in saved]
        culprits += [node] if saves_output else []
        for culprit in culprits:
            method, by = getattr(culprit, "overwritten", (None, None))
            # The in-place method's own node reads the old value legitimately (PyTorch
            # keeps a copy where its backward needs one).
            if method is not None and (by is not node or culprit is node):
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: the output of {culprit.name}, changed by "
                    f"{method}() after {node.name} used it. PyTorch raises here too (its "
                    f"saved value would be wrong); use the out-of-place form (y = y + 1 "
                    f"instead of y.add_(1)) or change a .clone()."
                )


# ----------------------------------------------------------------------------- hooks
# PyTorch's Tensor.register_hook and retain_grad: functions of the gradient with respect
# to a Tensor's value, run when a backward pass has summed it. Kept on the Tensor's node,
# so a hook registered after the Tensor was used still sees every use, as in PyTorch. The
# engine's backward pass has no place for them, so a graph with a hooked interior node is
# replayed (as create_graph replays it) with ``hook_point`` after each such node.

# The interior nodes with hooks, while they live (a leaf's hooks run as its gradient is
# accumulated: a graph with hooked leaves only takes the engine's pass).
_hooked: weakref.WeakSet = weakref.WeakSet()

# The nodes of create_graph's replay (on the Tensor trace) at and after a hooked node, while
# they live. PyTorch runs an interior Tensor's hooks again when a later pass differentiates the
# recorded gradient, on gradients that reach the Tensor through the values its backward
# saved; the replay's gradients reach those values by other paths, so such a pass could
# give other numbers: it is refused (see gradients).
_replayed_hook_points: weakref.WeakSet = weakref.WeakSet()


def add_hook(node: TensorNode, hook: Callable) -> Callable[[], None]:
    """Run ``hook(gradient, record) -> gradient`` on the gradient with respect to ``node``'s
    value whenever a backward pass computes it (``record``: the pass records, as
    create_graph=True does); returns the function that removes the hook."""
    hooks = getattr(node, "hooks", None)
    if hooks is None:
        hooks = node.hooks = []
    hooks.append(hook)
    if node.fun is not None:
        _hooked.add(node)

    def remove() -> None:
        if hook in hooks:
            hooks.remove(hook)

    return remove


def retain(node: TensorNode, tensor) -> None:
    """Add each gradient with respect to ``node``'s value into ``tensor.grad`` (after the
    hooks have run, as PyTorch's retain_grad): ``tensor`` is a non-leaf Tensor."""
    node.retains = weakref.ref(tensor)
    _hooked.add(node)


def retaining(node: TensorNode):
    """The Tensor whose gradient ``node`` retains, or None."""
    ref = getattr(node, "retains", None)
    return None if ref is None else ref()


def run_hooks(node: TensorNode, g, record: bool):
    for hook in list(getattr(node, "hooks", None) or ()):
        g = hook(g, record)
    tensor = retaining(node)
    if tensor is not None:
        tensor._accumulate(node, g, record)
    return g


@primitive
def hook_point(x, node: TensorNode, record: bool):
    """``x`` itself; its VJP runs ``node``'s hooks on the cotangent."""
    return x


defvjp_direct(hook_point, lambda g, ans, x, node, record: run_hooks(node, g, record), reads=())
defjvp_direct(hook_point, lambda g, ans, x, node, record: g)
defbatch(hook_point, lambda values, batched, kwargs: values[0])
deflabel(hook_point, "{0}")


def _hooked_interior(end: TensorNode) -> set:
    return {node for node in toposort([end]) if node in _hooked}


# ----------------------------------------------------------------------------- backward
def gradients(end: TensorNode, g, retain_graph: bool, create_graph: bool) -> dict:
    """{root node: gradient} for the leaves that ``end`` depends on (the leaves' own hooks
    are the caller's to run)."""
    if _overwritten:
        check_overwrites(end)
    if _replayed_hook_points and any(n in _replayed_hook_points for n in toposort([end])):
        raise RuntimeError(
            "backward() through a gradient recorded with create_graph=True past a Tensor "
            "with a hook (register_hook or retain_grad on a computed Tensor) is not "
            "supported: PyTorch runs that Tensor's hooks again in this pass, on gradients "
            "that chainrule does not form the same way, so the numbers could differ. Remove "
            "the hooks (handle.remove()) before the first backward(create_graph=True); hooks "
            "on leaf Tensors are fine."
        )
    if end.fun is None:
        return {end: g}
    hooked = _hooked_interior(end) if _hooked else set()
    if not create_graph and not hooked:
        with keeping_heap_growth():  # (the graph's memory stays for the next step's)
            return backward_pass([(end, g)], free=not retain_graph)
    order = calls_in_order([end])
    grads = _replayed_gradients(end, g, order, hooked, record=create_graph)
    if not retain_graph:
        for node in order:  # as backward_pass(free=True) leaves them
            node.args = node.kwargs = node.ans = None
            node.parents = ()
    return grads


def _replayed_gradients(end: TensorNode, g, order: list, hooked: set, record: bool) -> dict:
    # The graph is replayed as a function of its leaves and differentiated by make_vjp on
    # a new trace, with hook_point after the hooked nodes. To record the gradients too
    # (``record``, create_graph), the leaves' Tensor boxes are its inputs: the rules then
    # run on Tensor-traced values and their results are Tensor-traced; otherwise the raw
    # values the graph used are, and the gradients are raw, as the engine's pass gives.
    raw_leaves = values_used(order, _freed)
    roots = list(raw_leaves)

    def hooked_after(node, value):
        if node not in hooked:
            return value
        hooked_value, value = value, hook_point(value, node, record)
        if record:  # a later pass may reach the node by its value or past it
            for box in (tensor_box(hooked_value), tensor_box(value)):
                if box is not None:
                    _replayed_hook_points.add(box._node)
        return value

    def tensor_program(leaves):
        return replay(order, dict(zip(roots, leaves)), hooked_after)[end]

    if record:
        inputs = [new_box(raw_leaves[root], TRACE_ID, root) for root in roots]
    else:
        inputs = [raw_leaves[root] for root in roots]
    vjp, _ = make_vjp(tensor_program, inputs, free=True)
    return dict(zip(roots, vjp(g)))
