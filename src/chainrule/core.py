"""autograd's ``core`` module names, for code that imports them (compatibility only).

Everything here is chainrule's own object from ``chainrule._core``, except
``backward_pass``, which keeps autograd's ``backward_pass(g, end_node)`` signature.
``primitive_vjps``/``primitive_jvps`` are the live registries: popping an entry
removes that primitive's rule, and using it then raises NotImplementedError.
"""

from __future__ import annotations

from ._core import reverse as _reverse
from ._core.forward import JVPNode, make_jvp
from ._core.reverse import VJPNode, make_vjp
from ._core.rule_table import primitive_jvps, primitive_vjps
from ._core.rules import (
    def_linear,
    defjvp,
    defjvp_argnum,
    defjvp_argnums,
    defvjp,
    defvjp_argnum,
    defvjp_argnums,
    defvjp_direct,
)
from ._core.tracer import Box, Node, getval, isbox, notrace_primitive
from ._core.vspace import ContainerVSpace, VSpace, add_values, vspace
from .extend import SparseObject
from .extend import primitive_with_deprecation_warnings as primitive
from .tracer import trace
from .util import func, subval


def backward_pass(g, end_node: VJPNode):
    """autograd's form: propagate ``g`` from ``end_node`` and return the root's cotangent
    (``None`` if no root was reached). chainrule's own form, taking a list of
    ``(node, cotangent)`` seeds, is ``chainrule._core.reverse.backward_pass``."""
    root_grads = _reverse.backward_pass([(end_node, g)])
    if len(root_grads) > 1:
        raise ValueError("backward_pass reached several roots; use "
                         "chainrule._core.reverse.backward_pass for graphs with many inputs.")
    return next(iter(root_grads.values()), None)


def toposort(end_nodes):
    """The ancestors of ``end_nodes`` (one node, as autograd passes it, or several), each
    after all of its children: the order of a backward pass."""
    if isinstance(end_nodes, Node):
        end_nodes = [end_nodes]
    return _reverse.toposort(list(end_nodes))


def add_outgrads(x, y):
    """Sum two cotangents (of any container structure)."""
    return add_values(x, y)


def sum_outgrads(gs):
    """Sum a non-empty sequence of cotangents."""
    gs = iter(gs)
    total = next(gs)
    for g in gs:
        total = add_values(total, g)
    return total


__all__ = [
    "make_vjp", "make_jvp", "backward_pass", "toposort", "VJPNode", "JVPNode", "Node", "Box",
    "primitive_vjps", "primitive_jvps", "defvjp", "defvjp_argnum", "defvjp_argnums",
    "defvjp_direct", "defjvp", "defjvp_argnum", "defjvp_argnums", "def_linear", "vspace",
    "VSpace", "ContainerVSpace", "SparseObject", "primitive", "notrace_primitive", "getval",
    "isbox", "add_outgrads", "sum_outgrads", "trace", "func", "subval",
]
