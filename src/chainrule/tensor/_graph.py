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

from .._core.reverse import FreedGraphError, VJPNode, backward_pass, make_vjp, toposort
from .._core.rule_table import rule_table
from .._core.tracer import isbox, live_trace_ids, new_box, new_trace_id
from ..numpy import numpy_wrapper as anp
from ..numpy.numpy_boxes import array_astype, array_getitem

TRACE_ID = new_trace_id()
live_trace_ids.add(TRACE_ID)  # the Tensor trace never ends


class TensorNode(VJPNode):
    """A node of the Tensor trace.

    Roots (leaf Tensors) also hold ``leaf``, a weak reference to their Tensor,
    which receives the gradient; interior nodes are made by the tracer with
    VJPNode's constructor and never read ``leaf``. Two marks serve the in-place
    check (``check_overwrites``), set only on interior nodes: ``overwritten`` is
    (the in-place method that later replaced the node's value in its Tensor, the
    node that method made), ``keeps_output`` says PyTorch's version of the function
    saves its output (relu, sigmoid, softmax are composites here).
    """

    __slots__ = ("leaf", "overwritten", "keeps_output")
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


def gradients(end: TensorNode, g, retain_graph: bool, create_graph: bool) -> dict:
    """{root node: gradient} for the leaves that ``end`` depends on."""
    if _overwritten:
        check_overwrites(end)
    if not create_graph:
        return backward_pass([(end, g)], free=not retain_graph)
    if end.fun is None:
        return {end: g}
    return _recorded_gradients(end, g)


def _recorded_gradients(end: TensorNode, g) -> dict:
    # The nodes keep raw values, so a backward pass over them computes raw
    # gradients. To record the gradients too, the graph is replayed as a
    # function of its leaves (the leaves' Tensor boxes as inputs) and
    # differentiated by make_vjp on a new trace: the rules then run on
    # Tensor-traced values and their results are Tensor-traced.
    order = list(toposort([end]))[::-1]  # parents before children
    raw_leaves: dict = {}
    for node in order:
        if node.fun is None:
            continue
        if node.args is None:
            raise _freed(node)
        for argnum, parent in zip(node.argnums, node.parents):
            if parent.fun is None:
                raw_leaves.setdefault(parent, node.args[argnum])  # the value the graph used
    roots = list(raw_leaves)

    def replay(leaves):
        values = dict(zip(roots, leaves))
        for node in order:
            if node.fun is not None:
                args = list(node.args)
                for argnum, parent in zip(node.argnums, node.parents):
                    args[argnum] = values[parent]
                values[node] = node.fun(*args, **node.kwargs)
        return values[end]

    inputs = [new_box(raw_leaves[root], TRACE_ID, root) for root in roots]
    vjp, _ = make_vjp(replay, inputs, free=True)
    return dict(zip(roots, vjp(g)))
