"""Calling a recorded graph again: its nodes' calls, in order, on other values.

A node of a graph that keeps its calls (``fun``, ``args``, ``kwargs``, ``argnums``,
``parents``: the Tensor trace, ``misc.const_graph``'s trace) can be run again as a
function of its roots: each call with the values of its parents put in place of the
arguments they were. Tensor's ``create_graph`` and hooks, ``explain(tensor)`` and
``const_graph`` are such replays; they differ only in what they do with each new value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .reverse import toposort
from .tracer import Node


def subvals(args: tuple, replacements: Iterable[tuple[int, Any]]) -> tuple:
    """``args`` with ``args[i]`` replaced by ``value`` for each ``(i, value)``."""
    args = list(args)
    for i, value in replacements:
        args[i] = value
    return tuple(args)


def calls_in_order(ends: Iterable[Node]) -> list:
    """The nodes that ``ends`` depend on that made a call (not roots), parents first."""
    return [node for node in toposort(ends) if node.fun is not None][::-1]


def values_used(order: list, freed: Callable[[Node], Exception]) -> dict:
    """{root: the value the graph's calls took for it}, in order of first use; raises
    ``freed(node)`` for a node whose arguments a backward pass released."""
    used: dict = {}
    for node in order:
        if node.args is None:
            raise freed(node)
        for argnum, parent in zip(node.argnums, node.parents):
            if parent.fun is None:
                used.setdefault(parent, node.args[argnum])
    return used


def replay(
    order: list, values: dict, after: Callable[[Node, Any], Any] | None = None
) -> dict:
    """Call each node of ``order`` again, its parents' values taken from ``values`` (roots
    given there, each call's result added as it is made, passed through ``after(node,
    result)`` first where given). Returns ``values``."""
    for node in order:
        args = subvals(node.args, zip(node.argnums, [values[p] for p in node.parents]))
        result = node.fun(*args, **node.kwargs)
        values[node] = result if after is None else after(node, result)
    return values
