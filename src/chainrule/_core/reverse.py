"""Reverse mode: VJP nodes, the rule registry and one iterative backward pass.

A VJPNode keeps what its rule needs (the primitive, the arguments and answer its VJP
reads, see ``PrimitiveRules.unread_args``), its parents in argument order and its
creation number. The
backward pass visits the nodes its cotangents reach newest first (children before
parents: a heap keyed by creation number, no recursion limit), hands each node's summed
cotangent to its rule, and, when asked to, releases each node's saved values as soon as
its cotangent has been consumed. A ``Recording`` is one traced call that can be pulled
back many times, or pushed forward with a batch of tangents.
"""

from __future__ import annotations

import heapq
import itertools
import operator
import warnings
from collections import namedtuple
from collections.abc import Callable, Iterable
from functools import partial

from .extension import observers
from .forward import flattened_output
from .heap import graph_memory
from .pytree import LEAF, flatten_matching, plain_leaf_types, tree_flatten, tree_unflatten
from .rule_table import dropping, rule_table
from .tracer import Box, Node, check_not_leaked, trace_leaves
from .user_frames import user_stacklevel
from .vspace import add_values, dense, partial_types, vspace

# immutable number types whose cotangents simply add (chainrule.numpy adds NumPy's scalars)
scalar_types: set = {float, complex}

# value type -> add_into(acc, g) for cotangent buffers the backward pass owns
inplace_adders: dict[type, Callable] = {}


class FreedGraphError(RuntimeError):
    pass


# Lookups bound once: CPython compiles a method call on an imported name (rule_table.get)
# as an attribute load that makes a bound method per call; these run once per node.
_entry_of = rule_table.get
_dropping_entry = dropping.get

# A node is always made after its parents, so taking nodes by creation number, newest
# first, puts every node after all of its children: the backward pass needs no child counts.
# next() on a count is atomic, so threads may trace at once. Every node the backward pass
# visits is numbered by this count (VJPNode's constructor and roots; its subclasses call
# them): the pass keys its nodes by number.
_creation_order = itertools.count()
_creation_number = operator.attrgetter("seq")

# value types that may be kept as shape and dtype only (registered by chainrule.numpy)
droppable_types: set = set()

# Mutable value types a node must not keep by reference: the caller's constant array that
# the function writes into after using it (``e[:] = 0; e[i] = 1`` building basis vectors in
# a loop) would otherwise reach every VJP with its last contents. ``snapshot_types[t](v)``
# answers what the node keeps (chainrule.numpy: a copy of a writeable array).
snapshot_types: dict = {}
# What a node of a closed window (``WindowVJPNode``) keeps of a constant of these types
# (chainrule.numpy: a large array itself, held read-only while the window is open, see
# reach.Window); the other types' snapshots are ``snapshot_types``'.
window_snapshot_types: dict = {}
_box_types = Box.types  # (the registry's own set: later registrations count)


class ShapeOnly(namedtuple("_ShapeAndDtype", ("shape", "dtype"))):
    """What a node keeps of an array its VJP does not read: ``(shape, dtype)``, with
    ``.shape``, ``.dtype`` and ``.ndim`` as the array has them. (A tuple, because making
    one then costs no Python-level ``__init__``: nodes are made once per recorded call;
    and a named tuple's, because its ``.shape`` and ``.dtype`` are read in C, without the
    Python frame of a property: an add's VJP reads both of each operand.)

    Anything else a rule might do with the array (compute with it, index it, compare it,
    convert it) raises ``UndeclaredReadError``: a rule that reads a value its entry says it
    does not read fails loudly instead of computing with a tuple."""

    __slots__ = ()
    __new__ = tuple.__new__  # ShapeOnly((shape, dtype)), as a tuple is made
    ndim = property(lambda self: len(self.shape))

    def __repr__(self) -> str:
        return f"ShapeOnly({self.shape}, {self.dtype})"

    def _refuse(self, *args, **kwargs):
        raise UndeclaredReadError(
            f"a VJP rule read the value of an argument kept as {self!r}: its rule-table entry "
            f"declares (defvjp_direct(..., reads=...)) that the rule uses only that "
            f"argument's shape and dtype. Add the argument's position to ``reads``."
        )

    __array__ = __array_ufunc__ = __array_function__ = _refuse
    __getitem__ = __iter__ = __len__ = __bool__ = __float__ = __int__ = __index__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __neg__ = __matmul__ = _refuse
    __rmatmul__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __hash__ = tuple.__hash__


class UndeclaredReadError(RuntimeError):
    """A VJP rule read a value its rule-table entry declares unread (see ``ShapeOnly``)."""


# One ShapeOnly per shape seen, shared by the nodes that keep one (it is immutable): a
# gradient of small-array code keeps tens of thousands (lstm: 45,000 in 64,000 nodes),
# each made and freed. Keyed by the shape alone and used only when its dtype is the
# array's own dtype object (a key with the dtype hashed and compared both, ~80 ns more per
# node); a shape met with another dtype replaces it. Kept small: a program whose shapes
# keep changing starts it again.
_shape_onlys: dict = {}


def _shape_only(shape: tuple, dtype) -> ShapeOnly:
    """A new ShapeOnly of ``(shape, dtype)``, kept for the nodes that follow."""
    if len(_shape_onlys) >= 256:
        _shape_onlys.clear()
    kept = _shape_onlys[shape] = ShapeOnly((shape, dtype))
    return kept


class VJPNode(Node):
    __slots__ = ("parents", "fun", "args", "kwargs", "argnums", "ans", "seq")
    keeps_everything = False  # True for graphs that are replayed or pushed forward
    windowed = False  # True for a closed window's (see WindowVJPNode)

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        self.seq = next(_creation_order)
        self.parents = parents
        self.fun = fun
        self.kwargs = kwargs
        self.argnums = argnums
        n = len(args)
        entry = _dropping_entry(fun)
        if entry is not None and not self.keeps_everything:
            found = entry.unread_by_argnums.get(argnums)  # (made once per argnums)
            unread, reads_ans = entry.unread_given(argnums) if found is None else found
            for i in unread:  # ascending
                if i >= n:
                    break
                arg = args[i]
                if type(arg) not in droppable_types:
                    if type(arg) not in _box_types or type(arg._value) not in droppable_types:
                        continue
                    arg = arg._value  # (a box of an older trace: jit's staging, whose
                    #                   record keeps no array alive either)
                shape, dtype = arg.shape, arg.dtype
                kept = _shape_onlys.get(shape)
                # (a dtype equal to the one kept but another object, one with
                # metadata, gets its own: the node keeps the array's own dtype)
                args[i] = kept if kept is not None and kept.dtype is dtype else \
                    _shape_only(shape, dtype)
            if not reads_ans and (type(ans) in droppable_types or (
                type(ans) in _box_types and type(ans._value) in droppable_types
            )):  # (jit's staged answer is kept: it holds no array, and names its line)
                ans = None
        if n != len(argnums):  # constants among the arguments
            windowed = self.windowed
            for i, arg in enumerate(args):
                if type(arg) in snapshot_types and i not in argnums:
                    keep = window_snapshot_types.get(type(arg)) if windowed else None
                    args[i] = (keep or snapshot_types[type(arg)])(arg)
        self.args = args
        self.ans = ans

    def initialize_root(self) -> None:
        self.seq = next(_creation_order)
        self.parents = ()
        self.fun = None

    def __repr__(self) -> str:
        return f"<VJPNode {_name(self.fun) if self.fun else 'root'}>"


class WindowVJPNode(VJPNode):
    """A node of a recording made and pulled back within one chainrule call, the
    function's code running nothing else in between (grad's): its large constant arrays
    may be kept themselves, read-only until the call ends (``window_snapshot_types``)."""

    __slots__ = ()
    windowed = True


class KeptVJPNode(VJPNode):
    """A VJPNode that keeps every argument and answer (for graphs swept forward)."""

    __slots__ = ()
    keeps_everything = True


def _name(fun) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", repr(fun))


def _freed(fun) -> FreedGraphError:
    return FreedGraphError(
        f"The graph through {getattr(fun, '__name__', fun)} was freed by an earlier "
        f"backward pass. Keep it with retain_graph=True on the first backward()."
    )


def _no_rule(fun) -> NotImplementedError:
    return NotImplementedError(
        f"chainrule has no VJP rule for {_name(fun)}. Define one with "
        f"chainrule.extend.defvjp({_name(fun)}, ...)."
    )


def toposort(end_nodes: Iterable[Node]):
    """Yield the ancestors of ``end_nodes``, every node after all of its children.

    For any node type with ``parents`` (explain and the misc tracers use it too)."""
    end_nodes = list(end_nodes)
    child_counts: dict = {}
    stack = list(end_nodes)
    while stack:
        node = stack.pop()
        if node in child_counts:
            child_counts[node] += 1
        else:
            child_counts[node] = 1
            stack.extend(node.parents)
    for node in end_nodes:
        child_counts[node] -= 1
    ready = [node for node in dict.fromkeys(end_nodes) if child_counts[node] == 0]
    while ready:
        node = ready.pop()
        yield node
        for parent in node.parents:
            if child_counts[parent] == 1:
                ready.append(parent)
            else:
                child_counts[parent] -= 1


def children_first(end_nodes: Iterable[VJPNode]) -> list:
    """``toposort`` for VJPNodes, by creation number: one pass to collect the ancestors
    and one sort in C, instead of counting children."""
    seen = set()
    stack = list(end_nodes)
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.parents)
    return sorted(seen, key=_creation_number, reverse=True)


def backward_pass(seeds: list, free: bool = False) -> dict:
    """Propagate cotangents from ``seeds`` ([(end_node, g)]) to the root nodes.

    Returns {root_node: cotangent} for the roots that were reached. With ``free=True``
    each node's saved values are released as soon as its cotangent has been pulled back.

    The nodes are visited newest first from a heap of those a cotangent has reached (minus
    their creation numbers, which ``reached`` maps to the nodes: a heap of numbers compares
    faster than one of pairs; a node is pushed when its first cotangent arrives): every
    child of a node is newer than it, so all of its cotangents have arrived when it is
    popped. No walk over the ancestors and no sort before the pass (12% of an lstm
    gradient's profile), and nodes the cotangents never reach are never visited.
    """
    outgrads: dict = {}  # node -> summed cotangent so far
    owned: set = set()  # nodes whose cotangent is a buffer made here (safe to add into)
    reached = {}  # minus creation number -> node
    for node, g in seeds:
        if g is not None:  # (no cotangent: nothing to pull back, as a rule's None)
            if node in outgrads:
                _accumulate(outgrads, owned, node, g)
            else:
                outgrads[node] = g
                reached[-node.seq] = node
    heap = list(reached)
    if len(heap) > 1:
        heapq.heapify(heap)
    push, pop = heapq.heappush, heapq.heappop
    root_grads = {}
    # (extension.Observer: debug_nans, report.code; a copy, as one may be turned off mid-pass)
    told = observers.copy() if observers else ()
    while heap:
        node = reached.pop(pop(heap))
        g = outgrads.pop(node)
        if type(g) in partial_types:  # all of the value's pieces have been pulled back
            g = g.dense()
        fun = node.fun
        if fun is None:
            root_grads[node] = g
            continue
        if told:
            for observer in told:
                observer.node_visited(node)
        # The saved values are read once, args last: releasing clears args first, so when
        # args is still there the others read before it were too (a graph freed by another
        # thread mid-pass fails clearly instead of giving wrong numbers).
        parents, argnums, ans, kwargs = node.parents, node.argnums, node.ans, node.kwargs
        args = node.args
        if args is None:
            raise _freed(fun)
        entry = _entry_of(fun)
        if entry is None or entry.vjp is None:
            raise _no_rule(fun)
        # A VJP defined per argument (rules.defvjp_direct) has its rules for these argnums
        # chosen after its first call: for one or two traced arguments they are called
        # here, and their cotangents handed on, without the VJP's closure, tuples and zip
        # (the common node of a loop over small arrays, where this loop's own Python is
        # the cost). The hand-on is written out per rule on purpose: a loop over the rules
        # (a generator, or a zip over a tuple of their answers) costs 5-10% more
        # instructions per lstm gradient (callgrind). Handing one on before the next rule
        # runs is safe: a sum is made in place only into a buffer of this pass, which no
        # rule is given.
        rules = entry.vjp_by_argnums.get(argnums)
        n_rules = 0 if rules is None or told else len(rules)
        if 0 < n_rules <= 2:
            # (one or two arguments and no keywords, the common node, by position: a call
            # with *args, **kwargs packs them again, ~0.1 µs more a rule)
            n_args = 0 if kwargs else len(args)
            if n_args == 2:
                a0, a1 = args
                grad = rules[0](g, ans, a0, a1)
            elif n_args == 1:
                grad = rules[0](g, ans, args[0])
            else:
                grad = rules[0](g, ans, *args, **kwargs)
            if grad is not None:
                parent = parents[0]
                if parent in outgrads:
                    _accumulate(outgrads, owned, parent, grad)
                else:
                    outgrads[parent] = grad
                    key = -parent.seq
                    reached[key] = parent
                    push(heap, key)
            if n_rules == 2:
                if n_args != 2:
                    grad = rules[1](g, ans, *args, **kwargs)
                elif a0 is not a1 or not entry.symmetric:
                    grad = rules[1](g, ans, a0, a1)
                # (else x * x, x + x: the second rule's cotangent is the first's, as it is)
                if grad is not None:
                    parent = parents[1]
                    if parent in outgrads:
                        _accumulate(outgrads, owned, parent, grad)
                    else:
                        outgrads[parent] = grad
                        key = -parent.seq
                        reached[key] = parent
                        push(heap, key)
        else:
            parent_grads = zip(parents, entry.vjp(g, argnums, ans, args, kwargs))
            if told:  # (observers see cotangents as the values they stand for)
                parent_grads = [(parent, dense(grad)) for parent, grad in parent_grads]
                made = [(argnum, grad) for argnum, (_, grad) in zip(argnums, parent_grads)]
                for observer in told:
                    observer.cotangents_made(node, g, made)
            for parent, grad in parent_grads:
                if grad is not None:
                    if parent in outgrads:
                        _accumulate(outgrads, owned, parent, grad)
                    else:
                        outgrads[parent] = grad
                        key = -parent.seq
                        reached[key] = parent
                        push(heap, key)
        if free:  # the saved values are released as soon as they have been used
            node.args = node.kwargs = node.ans = None
            node.parents = ()
    for observer in told:
        observer.node_visited(None)
    return root_grads


def _accumulate(outgrads: dict, owned: set, node, g) -> None:
    # A cotangent handed to us by a rule may be shared with other nodes, so the
    # first sum makes a new buffer; only that buffer is then added into in place.
    acc = outgrads.get(node)
    if acc is None:
        outgrads[node] = g
        return
    # (partial cotangents: see vspace.partial_types)
    if type(acc) in partial_types:
        if acc.merge(g):  # (acc was made by this pass: it is added into)
            return
        acc = outgrads[node] = acc.dense()
    if type(g) in partial_types:
        merged = g.added_to(acc, node in owned)
        if merged is not None:
            outgrads[node] = merged
            return
        g = g.dense()
    if type(acc) in scalar_types and type(g) in scalar_types:
        outgrads[node] = acc + g  # numbers: nothing to own or add into
        return
    if node in owned and type(acc) is type(g):
        add_into = inplace_adders.get(type(acc))
        if add_into is not None:
            outgrads[node] = add_into(acc, g)
            return
    outgrads[node] = add_values(acc, g)
    if type(g) not in _box_types and type(acc) not in _box_types:
        owned.add(node)


_only_item = operator.itemgetter(0)  # (tree_unflatten of one leaf, without its frame)


def make_vjp(fun: Callable, x, free: bool = False):
    """Trace ``fun(x)`` in reverse mode; returns ``(vjp, ans)``.

    ``x`` and the output may be any pytree. ``vjp(g)`` maps a cotangent shaped
    like the output to one shaped like ``x``. With ``free=True`` the graph is
    released by the first call (for one-shot transforms such as ``grad``).
    """
    recording = Recording(fun, x, free)
    return recording.pull_back, recording.ans


def _tree_item(batched, k: int):
    """Item ``k`` of the batch axis of each leaf (tangents of tuple outputs are tuples)."""
    leaves, treedef = tree_flatten(batched)
    return tree_unflatten(treedef, [leaf[k] for leaf in leaves])


def _stack_trees(stack: Callable, trees: list):
    """Trees of one structure joined leaf by leaf along a new leading batch axis."""
    flat = [tree_flatten(tree) for tree in trees]
    return tree_unflatten(flat[0][1], [stack(list(leaves)) for leaves in
                                       zip(*(leaves for leaves, _ in flat))])


class Recording:
    """``fun(x)`` traced once; its graph can be pulled back and pushed forward many times.

    ``pull_back(g)`` is the VJP. With ``keep_everything=True`` (nodes keep every argument,
    see ``PrimitiveRules.unread_args``), ``push_forward_batched`` pushes a batch of
    tangents through the recorded graph. A Jacobian takes one pull-back per row, or one
    batched push for all its columns.
    """

    def __init__(self, fun: Callable, x, free: bool = False, keep_everything: bool = False,
                 node_type: type[VJPNode] | None = None, root_args: tuple = (),
                 memory: graph_memory | None = None):
        """``node_type``: a subclass of ``KeptVJPNode`` to record with (sparsity detection
        records its own), its roots made with ``root_args``. ``memory``: the caller's
        ``graph_memory`` block, which holds this recording and its pull-backs (grad's one
        block for both, where each would open its own)."""
        if type(x) in plain_leaf_types:  # (one array or number: tree_flatten's answer)
            leaves, treedef, rebuild = [x], LEAF, _only_item
        else:
            leaves, treedef = tree_flatten(x)
            rebuild = partial(tree_unflatten, treedef)
        self.treedef = treedef
        self.spaces = list(map(vspace, leaves))
        if node_type is None:
            node_type = KeptVJPNode if keep_everything else VJPNode
        self.keeps_everything = node_type.keeps_everything
        self.memory = memory
        # (the graph's memory stays in the heap for the next gradient: heap.py; the two
        # branches spelled out: a ``with`` of a null context costs grad ~2% on a small call)
        if memory is None:
            with graph_memory():
                (out_leaves, self.out_def), trace_id, self.roots = trace_leaves(
                    node_type, [root_args] * len(leaves), flattened_output(fun), leaves,
                    rebuild)
        else:
            (out_leaves, self.out_def), trace_id, self.roots = trace_leaves(
                node_type, [root_args] * len(leaves), flattened_output(fun), leaves, rebuild)
            memory.keep_growth()  # (the graph's growth, before a pull-back frees it)
        self.ends = ends = []  # (index of the output leaf, its node)
        values = []
        for i, leaf in enumerate(out_leaves):
            if type(leaf) in _box_types and leaf._trace_id == trace_id:
                ends.append((i, leaf._node))
                leaf = leaf._value
            else:
                check_not_leaked(leaf)
            values.append(leaf)
        self.out_values = values
        self.ans = values[0] if self.out_def is LEAF else tree_unflatten(self.out_def, values)
        if not self.ends:
            warnings.warn("Output seems independent of input.", stacklevel=user_stacklevel())
        self.free = free
        self._order: list = []  # children before parents, found on first use

    def order(self) -> list:
        if not self._order:
            self._order.extend(children_first([node for _, node in self.ends]))
        return self._order

    def pull_back(self, g):
        if self.out_def is LEAF and type(g) in plain_leaf_types:  # (flatten_matching's)
            seeds = [(node, g) for _, node in self.ends]
        else:
            g_leaves = flatten_matching(g, self.out_def, "cotangent", "output")
            seeds = [(node, g_leaves[i]) for i, node in self.ends]
        if self.memory is None:
            with graph_memory():
                root_grads = backward_pass(seeds, free=self.free)
        else:  # (the caller's block, still open, keeps the pass's growth at its end)
            root_grads = backward_pass(seeds, free=self.free)
        grads = []
        for root, space in zip(self.roots, self.spaces):
            grad = root_grads.get(root)
            grads.append(space.zeros() if grad is None else space.cast(grad))
        return grads[0] if self.treedef is LEAF else tree_unflatten(self.treedef, grads)

    def can_push_forward(self) -> bool:
        """Whether every recorded primitive has a JVP rule (and the graph is kept whole)."""
        return self.keeps_everything and not self.free and all(
            node.fun is None or getattr(rule_table.get(node.fun), "jvp", None) is not None
            for node in self.order())

    def push_forward_batched(self, tangent_leaves: list, size: int, stack: Callable,
                             over_batch: Callable | None = None) -> list:
        """The JVP of the recorded graph for ``size`` tangents at once (a linearization:
        each node's JVP rule is applied to its saved arguments, so ``fun`` is not run
        again). Each leaf of ``tangent_leaves`` has a leading axis of length ``size``, and
        so has each traced output leaf's tangent in the result (``None`` for an output
        that does not depend on ``x``).

        Primitives with a batched JVP rule take the whole batch in one call; for the others
        ``over_batch(jvp, tangents, argnums, ans, args, kwargs, size)``, where given,
        applies the JVP rule to the whole batch (vmap's batching rules inside it: the
        caller's, from a layer above the engine) or answers None; what remains takes one
        tangent at a time, joined by ``stack``.
        """
        tangents = dict(zip(self.roots, tangent_leaves))
        for node in reversed(self.order()):
            if node.fun is None:
                continue
            args = node.args
            if args is None:
                raise _freed(node.fun)
            parent_tangents = tuple([tangents[p] for p in node.parents])
            entry = rule_table[node.fun]
            batched = entry.batched_jvp
            t = None if batched is None else batched(
                parent_tangents, node.argnums, node.ans, args, node.kwargs)
            if t is None and over_batch is not None:
                t = over_batch(entry.jvp, parent_tangents, node.argnums, node.ans, args,
                               node.kwargs, size)
            if t is None:
                jvp = entry.jvp
                t = _stack_trees(stack, [
                    jvp(tuple([_tree_item(pt, k) for pt in parent_tangents]), node.argnums,
                        node.ans, args, node.kwargs) for k in range(size)])
            tangents[node] = t
        out = [None] * len(self.out_values)
        for i, node in self.ends:
            out[i] = tangents[node]
        return out
