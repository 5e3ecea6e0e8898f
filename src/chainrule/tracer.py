"""autograd's ``tracer`` module names, for code that imports them (compatibility only).

chainrule's tracer lives in ``chainrule._core.tracer``; this module re-exports it and
adds autograd's ``trace(start_node, fun, x)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from ._core.tracer import Box, Node, getval, isbox, new_box, notrace_primitive, primitive
from ._core.tracer import trace_leaves as _trace_leaves
from ._core.user_frames import user_stacklevel


class _GivenRoot:
    """Stands in for a node type whose ``new_root`` hands back an existing node."""

    def __init__(self, node: Node):
        self.node = node

    def new_root(self) -> Node:
        return self.node


def trace(start_node: Node, fun: Callable, x):
    """Call ``fun(x)`` with ``x`` boxed on a new trace under ``start_node``.

    Returns ``(end_value, end_node)``, or ``(output, None)`` with a warning when the
    output does not depend on ``x`` (autograd's contract).
    """
    end, trace_id, _ = _trace_leaves(_GivenRoot(start_node), [()], fun, [x], lambda bs: bs[0])
    if isbox(end) and end._trace_id == trace_id:
        return end._value, end._node
    warnings.warn("Output seems independent of input.", stacklevel=user_stacklevel())
    return end, None


__all__ = ["trace", "Node", "Box", "isbox", "getval", "new_box", "primitive",
           "notrace_primitive"]
