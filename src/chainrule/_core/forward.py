"""Forward mode: JVP nodes carry tangents alongside values.

A JVPNode computes its tangent from its parents' tangents the moment it is
made, so forward mode keeps no graph: memory stays flat however long the
computation runs. Tangent rules use the same primitives as everything else, so
forward-over-reverse (and any other nesting) works.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from .pytree import flatten_matching, tree_flatten, tree_unflatten
from .rule_table import rule_table
from .tracer import Node, check_not_leaked, front_ends, isbox, trace_leaves
from .user_frames import user_stacklevel
from .vspace import vspace

# Lookups bound once: CPython compiles a method call on an imported name (rule_table.get)
# as an attribute load that makes a bound method per call; these run once per node.
_entry_of = rule_table.get
_front_end_of = front_ends.get


class JVPNode(Node):
    __slots__ = ("g",)

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        entry = _entry_of(fun)
        rule = None if entry is None else entry.jvp
        if rule is None:
            name = getattr(fun, "__qualname__", getattr(fun, "__name__", repr(fun)))
            raise NotImplementedError(
                f"chainrule has no JVP rule for {name}. Define one with "
                f"chainrule.extend.defjvp({name}, ...)."
            )
        # (one or two parents, the common node, without a generator's frame)
        n = len(parents)
        tangents = (parents[0].g,) if n == 1 else (parents[0].g, parents[1].g) if n == 2 \
            else tuple([p.g for p in parents])
        g = rule(tangents, argnums, ans, args, kwargs)
        # a rule that computed with a front-end object (a Tensor constant, see
        # tracer.FrontEnd) gives the tangent as one: the tangent is the value it holds
        front_end = _front_end_of(type(g))
        self.g = g if front_end is None else front_end.value_of(g)

    def initialize_root(self, g) -> None:
        self.g = g


def flattened_output(fun: Callable) -> Callable:
    """``fun`` returning ``tree_flatten`` of its output, for ``trace_leaves``: a traced
    container (the list split returns) is taken apart while its trace is live; its items
    are primitives' outputs, and past the trace a nested one would be refused."""
    return lambda arg: tree_flatten(fun(arg))


def make_jvp(fun: Callable, x):
    """Return ``jvp(v) -> (fun(x), tangent of fun(x) along v)``; x, v and the output are pytrees."""
    leaves, treedef = tree_flatten(x)
    for leaf in leaves:
        vspace(leaf)  # rejects integers with a clear message

    def jvp(v):
        v_leaves = flatten_matching(v, treedef, "tangent", "input")
        (out_leaves, out_def), trace_id, _ = trace_leaves(
            JVPNode, [(t,) for t in v_leaves], flattened_output(fun), leaves,
            lambda bs: tree_unflatten(treedef, bs)
        )
        values, tangents, found = [], [], False
        for leaf in out_leaves:
            if isbox(leaf) and leaf._trace_id == trace_id:
                values.append(leaf._value)
                tangents.append(leaf._node.g)
                found = True
            else:
                check_not_leaked(leaf)
                values.append(leaf)
                tangents.append(vspace(leaf).zeros())
        if not found:
            warnings.warn("Output seems independent of input.", stacklevel=user_stacklevel())
        return tree_unflatten(out_def, values), tree_unflatten(out_def, tangents)

    return jvp
