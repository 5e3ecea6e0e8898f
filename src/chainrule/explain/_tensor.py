"""``explain(loss)`` for a Tensor program: the report of the graph a forward pass recorded.

Tensors record their operations as they run (define-by-run), so by the time ``explain``
sees ``loss`` the program is over; what is left is its graph. The graph's calls are
replayed, in the order they ran, as a function of the leaf Tensors' values (the values
the graph used), and that replay is what explain records: every primitive call once, the
same functions on the same values, so the report's values and gradient are the Tensor
program's. Source lines are known where the forward pass ran under
``chainrule.debug_nans()``, which notes each node's line; otherwise each operation shows
only its name.
"""

from __future__ import annotations

import inspect
from typing import Any

from .._core.replay import calls_in_order, replay, values_used
from .._core.tracer import isbox
from ._source import node_sources
from ._trace import ExplainNode, Traces, record


def _names(roots: list, frame) -> list[str]:
    """Each leaf Tensor's name in the caller's code (its locals, then its globals), where
    exactly one name is bound to it; else t1, t2, ..."""
    leaves = [getattr(root, "leaf", lambda: None)() for root in roots]
    found: dict[int, list[str]] = {}
    scopes = [frame.f_locals, frame.f_globals] if frame is not None else []
    wanted = {id(t) for t in leaves if t is not None}
    for scope in scopes:
        for name, value in list(scope.items()):
            if id(value) in wanted and name.isidentifier() and not name.startswith("_"):
                found.setdefault(id(value), [])
                if name not in found[id(value)]:
                    found[id(value)].append(name)
    names, used = [], set()
    for i, t in enumerate(leaves, 1):
        candidates = found.get(id(t), []) if t is not None else []
        name = candidates[0] if candidates and candidates[0] not in used else f"t{i}"
        while name in used:
            name += "_"
        used.add(name)
        names.append(name)
    return names


def _freed(node) -> ValueError:
    return ValueError(
        f"explain(tensor): the graph through {node.name} was freed by backward(). "
        "Call explain before backward(), or use backward(retain_graph=True)."
    )


def record_tensor(tensor, frame, wrt=None, check: bool = False) -> Traces:
    """The Traces of the graph that made ``tensor`` (``frame``: the caller, for names)."""
    from ..tensor._graph import tensor_box

    box = tensor_box(tensor._value)
    if box is None:
        raise TypeError(
            "explain(tensor) needs a Tensor computed from Tensors with requires_grad=True "
            "(this one has no graph: made with requires_grad=False or under no_grad())."
        )
    end = box._node
    order = calls_in_order([end])
    values = values_used(order, _freed)
    if end.fun is None:
        values[end] = box._value
    roots = list(values)
    names = _names(roots, frame)
    sources = node_sources  # (the lines noted for graphs recorded under debug_nans)

    def noted(node, out):
        if isbox(out) and isinstance(out._node, ExplainNode):
            # the line of the forward pass (not this replay's), where it was noted; the
            # function stands for the place on the line (see _fold)
            out._node.source = sources.get(node)
            out._node.site = id(node.fun)
        return out

    def tensor_program(*leaves: Any):
        return replay(order, dict(zip(roots, leaves)), noted)[end]

    params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    tensor_program.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return record(tensor_program, tuple(values[root] for root in roots), wrt, check)
