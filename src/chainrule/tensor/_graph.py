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
from .._core.tracer import isbox, live_trace_ids, new_box, new_trace_id
from ..numpy import numpy_wrapper as anp

TRACE_ID = new_trace_id()
live_trace_ids.add(TRACE_ID)  # the Tensor trace never ends


class TensorNode(VJPNode):
    """A node of the Tensor trace.

    Roots (leaf Tensors) also hold ``leaf``, a weak reference to their Tensor,
    which receives the gradient; interior nodes are made by the tracer with
    VJPNode's constructor and never read ``leaf``.
    """

    __slots__ = ("leaf",)
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


def gradients(end: TensorNode, g, retain_graph: bool, create_graph: bool) -> dict:
    """{root node: gradient} for the leaves that ``end`` depends on."""
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
