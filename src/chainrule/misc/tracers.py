"""``const_graph``: trace a function once, then replay the recorded primitive calls.

For a function called many times on inputs of the same structure, replaying the
graph skips the Python code between primitive calls (loops, branches, attribute
look-ups). Everything that does not depend on the inputs is frozen at the first
call: control flow, closed-over values and keyword arguments. Use it only for
functions whose graph does not change with the input's values.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps

from .._core.pytree import tree_flatten, tree_unflatten
from .._core.replay import calls_in_order, replay
from .._core.tracer import Node, isbox, trace_leaves


class ConstGraphNode(Node):
    """Records a call and nothing else: the primitive, its arguments and parents."""

    __slots__ = ("fun", "args", "kwargs", "argnums", "parents")

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        self.fun, self.args, self.kwargs = fun, args, kwargs
        self.argnums, self.parents = argnums, parents

    def initialize_root(self) -> None:
        self.fun, self.parents = None, ()


def const_graph_unary(fun: Callable) -> Callable:
    """``fun(x)`` of one (pytree) argument, traced on the first call and replayed after."""
    graph: dict = {}

    def cached(x):
        leaves, treedef = tree_flatten(x)
        if not graph:
            return _record(graph, fun, leaves, treedef)
        if treedef != graph["treedef"]:
            raise ValueError(f"const_graph: called with structure {treedef!r}, but the graph "
                             f"was recorded for {graph['treedef']!r}.")
        values = replay(graph["order"], dict(zip(graph["roots"], leaves)))
        out = [values[node] if node is not None else const for node, const in graph["outputs"]]
        return tree_unflatten(graph["out_def"], out)

    return cached


def _record(graph: dict, fun: Callable, leaves: list, treedef):
    out, trace_id, roots = trace_leaves(
        ConstGraphNode, [()] * len(leaves), fun, leaves, lambda bs: tree_unflatten(treedef, bs))
    out_leaves, out_def = tree_flatten(out)
    outputs, values = [], []
    for leaf in out_leaves:
        if isbox(leaf) and leaf._trace_id == trace_id:
            outputs.append((leaf._node, None))
            values.append(leaf._value)
        else:
            outputs.append((None, leaf))
            values.append(leaf)
    ends = [node for node, _ in outputs if node is not None]
    if not ends:
        raise ValueError("const_graph: the output does not depend on the input.")
    graph.update(treedef=treedef, roots=roots, order=calls_in_order(ends), outputs=outputs,
                 out_def=out_def)
    return tree_unflatten(out_def, values)


def const_graph(fun: Callable, *args, **kwargs) -> Callable:
    """``fun`` with its graph cached after the first call (autograd's ``const_graph``).

    Extra ``args``/``kwargs`` are bound first, as with ``functools.partial``; the
    returned function takes the remaining positional arguments.
    """
    bound = partial(fun, *args, **kwargs)
    cached = const_graph_unary(lambda xs: bound(*xs))

    @wraps(fun)
    def replaying(*xs):
        return cached(xs)

    return replaying


__all__ = ["const_graph", "const_graph_unary"]
