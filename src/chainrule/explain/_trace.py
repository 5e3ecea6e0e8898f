"""Record one evaluation and replay it with the engine's own rules.

``ExplainNode`` is one more consumer of the tracing core: like ``VJPNode`` it
keeps each primitive call (function, arguments, answer, parents), plus its
creation number so the evaluation order can be shown. The three traces are then
computed node by node with the rule tables the engine uses: the forward tangent
trace with ``primitive_jvps`` (as ``JVPNode`` does), the local partials as JVPs
with a unit tangent on one parent, and the adjoints with ``primitive_vjps`` in
the order ``toposort`` gives the backward pass. No derivative is written here.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import math
import re
import string
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.heap import no_cycle_collection
from .._core.pytree import TreeDef, tree_flatten, tree_unflatten
from .._core.reverse import toposort
from .._core.rule_table import label_of, primitive_jvps, primitive_vjps
from .._core.taylor import taylor_rule
from .._core.tracer import Node, isbox, trace_leaves
from .._core.vspace import add_values, dense, vspace
from ..numpy.numpy_wrapper import NONDIFFERENTIABLE
from ..tensor._graph import strip
from . import _format as fmt
from ._source import Source, forget_lines, user_site

_creation = itertools.count()


class ExplainNode(Node):
    __slots__ = (
        "fun", "args", "kwargs", "argnums", "ans", "parents", "seq", "name", "source", "site",
    )  # fmt: skip

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        self.fun = fun
        self.args = args
        self.kwargs = kwargs
        self.argnums = argnums
        self.ans = ans
        self.parents = parents
        self.seq = next(_creation)
        self.name = ""
        # the user's line that made this call, and where on it (see _fold)
        self.source, self.site = user_site(2)

    def initialize_root(self, value, name: str) -> None:
        self.__init__(value, None, (), {}, (), ())
        self.name = name
        self.source, self.site = None, -1

    def __repr__(self) -> str:
        return f"<ExplainNode {self.name}>"


# ----------------------------------------------------------------------------- report rows


class Variable:
    """One row of the evaluation trace: an input (``op`` is None) or a primitive call.

    What is cheap is stored (name, value, op, parents, source line); what costs a rule call
    per node (the local partials, the tangent, the adjoint) is computed when first read, so
    a report of a 100,000-node program pays only for the rows it shows."""

    __slots__ = (
        "name", "value", "op", "parents", "depth", "source", "seq",
        "_describe", "_node", "_lazy", "_partials", "_partial_texts", "_partial_note",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        value: Any,
        op: str | None = None,
        describe: Callable[[Variable], tuple[str, str]] | None = None,
        parents: list[str] | None = None,
        source: Source | None = None,
        seq: int = 0,
        node: ExplainNode | None = None,
        lazy: _Lazy | None = None,
    ):
        self.name = name
        self.value = value
        self.op = op  # the primitive's name, e.g. "multiply"
        # (var) -> (expr, expr_values), replaced by its answer when first shown
        self._describe = describe
        self.parents: list[str] = parents or []  # traced arguments, in order
        self.depth = 0  # longest path from an input (for drawing)
        self.source = source  # the user's line that made it (file, line, text)
        self.seq = seq  # creation order (the order the user's code ran in)
        self._node = node
        self._lazy = lazy
        self._partials: list | None = None if op is not None else []
        self._partial_texts: list[str] = []
        self._partial_note = ""

    def __repr__(self) -> str:
        return f"<Variable {self.name}{'' if self.op is None else ' = ' + self.op}>"

    @property
    def is_input(self) -> bool:
        return self.op is None

    @property
    def expr(self) -> str:
        """The operation in the variables' names: ``"x1 * x2"`` ("" for an input)."""
        return self._texts()[0]

    @property
    def expr_values(self) -> str:
        """The operation with the values in place of the names: ``"2 * 5"``."""
        return self._texts()[1]

    def _texts(self) -> tuple[str, str]:
        if self._describe is None:
            return "", ""
        if not isinstance(self._describe, tuple):  # written when first shown
            self._describe = self._describe(self)
        return self._describe

    def _local(self) -> None:
        if self._partials is None:
            self._partials, self._partial_texts, self._partial_note = self._lazy.partials(self)

    @property
    def partials(self) -> list:
        """d self / d parent per parent: numbers for scalars, None where a Jacobian is."""
        self._local()
        return self._partials

    @property
    def partial_texts(self) -> list[str]:
        self._local()
        return self._partial_texts

    @property
    def partial_note(self) -> str:
        """Why every local partial is zero ("piecewise constant"), or ""."""
        self._local()
        return self._partial_note

    @property
    def tangent(self) -> Any:
        """Forward trace: d self / d (chosen input); None where it is not computed."""
        return None if self._lazy is None else self._lazy.tangent(self._node)

    @property
    def taylor(self) -> tuple | None:
        """explain(taylor=k): self's normalized Taylor coefficients v_1..v_k (v_j = j-th
        derivative / j!) as the chosen input moves along x(t) = x + t; None without
        taylor=k or where a primitive on the way has no rule."""
        return None if self._lazy is None else self._lazy.series(self._node)

    @property
    def adjoint(self) -> Any:
        """Reverse trace: d y / d self (None: y does not depend on it)."""
        return None if self._lazy is None else self._lazy.adjoint(self._node)

    @property
    def note(self) -> str:
        """Why a derivative is missing, if it is."""
        node = self._node
        if node is None or node.fun is None or node.fun in primitive_jvps:
            return ""
        return f"no JVP rule for {self.op}"


class Contribution:
    """``parent_bar += child_bar * d child / d parent``: one edge of the backward pass."""

    __slots__ = (
        "child", "parent", "argnum", "child_adjoint", "value", "previous", "total", "fan_in",
        "_var", "_j",
    )  # fmt: skip

    def __init__(self, var, j, parent, argnum, child_adjoint, value, previous, total, fan_in):
        self.child: str = var.name
        self.parent: str = parent
        self.argnum: int = argnum
        self.child_adjoint = child_adjoint
        self.value = value  # what the VJP rule returned for this parent
        self.previous = previous  # the parent's adjoint before (None for its first contribution)
        self.total = total  # the parent's adjoint after adding it (the running sum)
        self.fan_in: int = fan_in  # how many contributions the parent has received so far
        self._var, self._j = var, j

    @property
    def partial_text(self) -> str:
        return self._var.partial_texts[self._j]

    def __repr__(self) -> str:
        return f"<Contribution {self.parent} += from {self.child}>"


class Visit:
    """One step of the backward pass: a node takes its summed adjoint and sends it on.

    Its ``contributions`` are made when first read (the backward pass keeps tuples)."""

    __slots__ = ("name", "adjoint", "_var", "_raw", "_made")

    def __init__(self, name: str, adjoint: Any, var=None, raw: list | None = None):
        self.name = name
        self.adjoint = adjoint
        self._var = var
        self._raw = raw if raw is not None else []  # (j, parent, argnum, c, previous, ...)
        self._made: list[Contribution] | None = None

    @property
    def contributions(self) -> list[Contribution]:
        if self._made is None:
            var, g = self._var, self.adjoint
            self._made = [Contribution(var, *item[:3], g, *item[3:]) for item in self._raw]
        return self._made

    def __repr__(self) -> str:
        return f"Visit({self.name!r}, {len(self._raw)} contributions)"


# ----------------------------------------------------------------------------- naming


def _param_names(f: Callable, n: int) -> list[str]:
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for p in params:
        if len(names) == n:
            break
        if p.kind is p.VAR_POSITIONAL:
            names += [f"{p.name}[{i}]" for i in range(n - len(names))]
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return names + [f"x{i + 1}" for i in range(len(names), n)]


def _leaf_names(prefix: str, td: TreeDef) -> list[str]:
    if td.kind is None:
        return [prefix]
    if td.kind is dict:
        keys = [f"[{k!r}]" for k in td.aux]
    elif dataclasses.is_dataclass(td.kind) and isinstance(td.aux, tuple):
        keys = [f".{k}" for k in td.aux]
    elif hasattr(td.kind, "_fields"):
        keys = [f".{k}" for k in td.kind._fields]
    else:
        keys = [f"[{i}]" for i in range(len(td.children))]
    return [n for key, child in zip(keys, td.children) for n in _leaf_names(prefix + key, child)]


# The output is y as in the textbooks, unless an input already has that name.
OUTPUT_NAMES = ("y", "f", "g", "h", "out")
# Operations are v1, v2, ... unless an input is named like one (v1, v2 ...).
STEP_LETTERS = "vwuz"


def _free_output_name(taken: set[str]) -> str:
    for name in OUTPUT_NAMES:
        if name not in taken:
            return name
    return next(f"out{i}" for i in itertools.count(1) if f"out{i}" not in taken)


def _free_step_letter(taken: set[str]) -> str:
    """The first of v, w, u, z (then v_, v__, ...) that no input name uses before digits."""
    candidates = itertools.chain(STEP_LETTERS, ("v" + "_" * k for k in itertools.count(1)))
    return next(c for c in candidates if not any(re.fullmatch(rf"{c}\d+", n) for n in taken))


def _traceable(leaf) -> bool:
    """Float and complex leaves are traced; integers, strings and the like stay constants."""
    if not isinstance(leaf, (float, complex, np.ndarray, np.number)):
        return False
    return np.result_type(leaf).kind in "fc"


# ----------------------------------------------------------------------------- operations

# Why an operation's local partials are all zero, by the primitive's name: the
# non-differentiable functions chainrule.numpy lists (the CLI traces them with zero
# derivatives; chainrule.numpy itself returns them as constants). How a call is written
# is its rule-table entry's label (``rule_table.label_of``).
NOTES: dict[str, str] = {op: "piecewise constant" for op in NONDIFFERENTIABLE.split()}
PI = "\u03c0"  # how the constant pi is written in an operation, where no input is named so


def _op_label(fun) -> str:
    """The operation's name as the tables show it (``abs``, not ``absolute``)."""
    label = label_of(fun)
    name = getattr(fun, "__name__", "f")
    if isinstance(label, str) and label.endswith("({0})") and label[:-5].isidentifier():
        return label[:-5]
    return name


def _fields(label: str) -> int:
    """How many arguments a format-string label writes (``"{0} + {1}"``: 2)."""
    return len({name for _, name, _, _ in string.Formatter().parse(label) if name is not None})


class _Text(str):
    """How an argument is shown, remembering the argument: a label may ask for it in index
    notation (``"{0}[{1:index}]"``)."""

    def __new__(cls, text: str, value):
        self = super().__new__(cls, text)
        self.value = value
        return self

    def __format__(self, spec: str) -> str:
        return fmt.index_text(self.value) if spec == "index" else str.__format__(self, spec)


def _describe(fun, args, kwargs, names: dict[int, str], pi: str = "") -> str:
    """The call as an expression, written by the primitive's label (its rule-table entry);
    ``names`` maps traced argument positions to what to show, ``pi`` is how to write a
    constant equal to math.pi (empty: as a number)."""
    parts = [
        _Text(names[i] if i in names else pi if pi and _is_pi(a) else fmt.constant(a), a)
        for i, a in enumerate(args)
    ]
    label = label_of(fun)
    if not kwargs:
        if callable(label):
            return label(parts)
        if len(parts) == _fields(label):
            return label.format(*parts)
    extra = [f"{k}={fmt.constant(v)}" for k, v in kwargs.items()]
    return f"{_op_label(fun)}({', '.join(parts + extra)})"


def _is_pi(x) -> bool:
    return type(x) in (float, np.float64) and x == math.pi


def _short(x) -> str:
    return fmt.paren(fmt.number(x)) if fmt.is_scalar(x) else fmt.shape_text(x)


# ----------------------------------------------------------------------------- the traces


@dataclasses.dataclass
class Traces:
    inputs: list[Variable]
    steps: list[Variable]  # evaluation order, inputs excluded
    outputs: list[tuple[str, str | None, Any]]  # (output name, variable name or None, value)
    value: Any
    forward_wrt: str
    lazy: _Lazy  # the derivative traces, computed when first read
    output: str  # what the output is called: y, or the first free name of OUTPUT_NAMES
    check: bool = False  # explain(check=True): diagnose when first asked


def record(f: Callable, args: tuple, wrt=None, check: bool = False) -> Traces:
    forget_lines()
    with no_cycle_collection():  # collection waits until the report is built
        return _record(f, args, wrt, check)


def _record(f: Callable, args: tuple, wrt=None, check: bool = False) -> Traces:
    arg_names = _param_names(f, len(args))
    leaves, treedef = tree_flatten(tuple(int(a) * 1.0 if type(a) is int else a for a in args))
    # A Tensor that requires grad holds its value boxed on the Tensor trace: explain
    # differentiates by the value, as grad(f)(tensor) does
    leaves = [strip(leaf) for leaf in leaves]
    names = [n for name, td in zip(arg_names, treedef.children) for n in _leaf_names(name, td)]
    traced = [i for i, leaf in enumerate(leaves) if _traceable(leaf)]
    if not traced:
        raise TypeError(
            "explain needs at least one float argument to differentiate; got "
            f"{', '.join(type(leaf).__name__ for leaf in leaves) or 'no arguments'}."
        )

    def rebuild(boxes):
        merged = list(leaves)
        for i, box in zip(traced, boxes):
            merged[i] = box
        return tree_unflatten(treedef, merged)

    out, trace_id, roots = trace_leaves(
        ExplainNode,
        [(leaves[i], names[i]) for i in traced],
        lambda a: f(*a),
        [leaves[i] for i in traced],
        rebuild,
    )

    def gradient(adjoints: dict):
        grads = list(leaves)
        for i, root in zip(traced, roots):
            g = adjoints.get(root)
            grads[i] = vspace(leaves[i]).zeros() if g is None else vspace(leaves[i]).cast(g)
        for i in set(range(len(leaves))) - set(traced):
            grads[i] = None
        return tree_unflatten(treedef, grads)

    return build(out, trace_id, roots, set(names) | set(arg_names), gradient, wrt, arg_names, check)


def build(out, trace_id, roots, taken: set, gradient, wrt, arg_names, check=False) -> Traces:
    """The Traces of a finished recording: ``out`` (boxes of trace ``trace_id``), the input
    nodes ``roots`` (named already), ``gradient(adjoints)`` shaping the inputs' adjoints."""
    out_leaves, out_def = tree_flatten(out)
    output = _free_output_name(taken)
    out_names = _leaf_names(output, out_def)
    letter = _free_step_letter(taken)
    pi = "" if {PI, "pi"} & taken else PI
    ends = [leaf._node for leaf in out_leaves if isbox(leaf) and leaf._trace_id == trace_id]
    backward_order = list(toposort(ends)) if ends else []
    nodes = sorted(set(backward_order) | set(roots), key=lambda n: n.seq)

    # Number the operations level by level (Baydin's convention: every v_i's inputs
    # come before it, and independent operations share a level), so the seed example
    # reads v1 = log x1, v2 = x1 x2, v3 = sin x2, v4 = v1 + v2, v5 = v4 - v3.
    depth: dict = {}
    for node in nodes:
        parents = node.parents
        depth[node] = 1 + max([depth[p] for p in parents]) if parents else 0
    nodes.sort(key=lambda n: (depth[n], n.seq))

    lazy = _Lazy(nodes, backward_order, out_leaves, trace_id, gradient, pi)
    variables = lazy.variables
    inputs, steps = [], []
    for node in nodes:
        if node.fun is None:
            var = Variable(node.name, node.ans, node=node, lazy=lazy)
            inputs.append(var)
        else:
            node.name = f"{letter}{len(steps) + 1}"
            var = _step(node, variables, lazy)
            steps.append(var)
        var.depth = depth[node]
        variables[node] = var
    lazy.wrt = _forward_input(wrt, inputs, arg_names)

    outputs = []
    for name, leaf in zip(out_names, out_leaves):
        if isbox(leaf) and leaf._trace_id == trace_id:
            outputs.append((name, leaf._node.name, leaf._value))
        else:
            outputs.append((name, None, leaf))
    value = tree_unflatten(out_def, [v for _, _, v in outputs])
    return Traces(inputs, steps, outputs, value, lazy.wrt, lazy, output, check)


def _step(node: ExplainNode, variables: dict, lazy: _Lazy) -> Variable:
    return Variable(
        node.name,
        node.ans,
        getattr(node.fun, "__name__", "f"),
        lazy.describe,
        [variables[p].name for p in node.parents],
        node.source,
        node.seq,
        node,
        lazy,
    )


def _partial(node: ExplainNode, j: int, parent_value) -> tuple[Any, str]:
    """d node / d parent j: the JVP of the node as if parent j alone were traced, with a
    unit tangent. (Zero tangents on the other parents would not do: a zero tangent times
    an infinite partial is nan, and ``log(0) * x2`` would show d/d log(0) = nan, not x2.)

    Arrays have a Jacobian, written as its shape, except for the operations whose label
    notes a zero derivative: theirs is written 0 when the JVP along ones is zero."""
    scalar = fmt.is_scalar(parent_value) and fmt.is_scalar(node.ans)
    jacobian = f"J {fmt.shape_text(node.ans)}<-{fmt.shape_text(parent_value)}"
    if not scalar and getattr(node.fun, "__name__", "") not in NOTES:
        return None, jacobian
    unit = (vspace(parent_value).ones(),)
    try:
        d = primitive_jvps[node.fun](unit, (node.argnums[j],), node.ans, node.args, node.kwargs)
    except (KeyError, NotImplementedError):
        return None, "?" if scalar else jacobian
    if not scalar:
        return (np.zeros_like(node.ans), "0") if np.all(d == 0) else (None, jacobian)
    return d, fmt.number(d)


def _forward_input(wrt, inputs: list[Variable], arg_names: list[str]) -> str:
    names = [v.name for v in inputs]
    if wrt is None:
        return names[0]
    if isinstance(wrt, int) and not isinstance(wrt, bool):
        if not 0 <= wrt < len(arg_names):
            raise ValueError(
                f"wrt={wrt} is out of range: the function has {len(arg_names)} arguments."
            )
        wrt = arg_names[wrt]
    matches = [n for n in names if n == wrt or n.startswith(f"{wrt}[") or n.startswith(f"{wrt}.")]
    if not matches:
        raise ValueError(f"wrt={wrt!r} names no float input; the inputs are {', '.join(names)}.")
    return matches[0]


class _Lazy:
    """The derivative traces of one recording, each computed when first read: the tangents
    node by node in evaluation order up to the one asked for, the backward pass whole (the
    gradient needs all of it), a node's local partials when its row is shown."""

    def __init__(self, nodes: list, backward_order: list, out_leaves, trace_id, gradient, pi):
        self.nodes = nodes  # evaluation order
        self.pi = pi  # how a constant equal to math.pi is written
        self.order = backward_order
        self.out_leaves = out_leaves
        self.trace_id = trace_id
        self._gradient = gradient
        self.variables: dict[ExplainNode, Variable] = {}
        self.wrt = ""
        self._tangents: dict = {}
        self._next = 0  # the first node of ``nodes`` whose tangent is not computed yet
        self.taylor_order = 0  # explain(taylor=k): the order of the Taylor series shown
        self._series: dict = {}
        self._next_series = 0  # the same for the Taylor series
        self._visits: list[Visit] | None = None
        self._adjoints: dict = {}
        self.backward_notes: list[str] = []

    # ---------------------------------------------------------------- how a row reads
    def describe(self, var: Variable) -> tuple[str, str]:
        """The operation with its arguments' names, and with their values."""
        node, variables = var._node, self.variables
        names = {i: variables[p].name for i, p in zip(node.argnums, node.parents)}
        values = {i: _short(p.ans) for i, p in zip(node.argnums, node.parents)}
        return (
            _describe(node.fun, node.args, node.kwargs, names, self.pi),
            _describe(node.fun, node.args, node.kwargs, values),
        )

    # ---------------------------------------------------------------- local partials
    def partials(self, var: Variable) -> tuple[list, list[str], str]:
        with np.errstate(all="ignore"):  # a NaN partial is shown as nan, not warned about
            return self._partials(var)

    def _partials(self, var: Variable) -> tuple[list, list[str], str]:
        node = var._node
        partials, texts = [], []
        for parent in node.parents:
            partial, text = _partial(node, len(partials), parent.ans)
            partials.append(partial)
            texts.append(text)
        note = NOTES.get(var.op, "")
        if not (note and all(p is not None and np.all(p == 0) for p in partials)):
            note = ""
        return partials, texts, note

    # ---------------------------------------------------------------- forward trace
    def tangent(self, node) -> Any:
        """The tangent of ``node``, seeded with ones on the chosen input, zeros elsewhere."""
        if node in self._tangents:
            return self._tangents[node]
        with np.errstate(all="ignore"):  # the tables show NaN and inf; check=True finds them
            return self._tangent(node)

    def _tangent(self, node) -> Any:
        tangents = self._tangents
        nodes = self.nodes
        while node not in tangents and self._next < len(nodes):
            n = nodes[self._next]
            self._next += 1
            if n.fun is None:
                space = vspace(n.ans)
                tangents[n] = space.ones() if n.name == self.wrt else space.zeros()
            elif n.fun not in primitive_jvps or any(tangents[p] is None for p in n.parents):
                tangents[n] = None
            else:
                parent_tangents = tuple(tangents[p] for p in n.parents)
                tangents[n] = primitive_jvps[n.fun](
                    parent_tangents, n.argnums, n.ans, n.args, n.kwargs
                )
        return tangents.get(node)

    # ---------------------------------------------------------------- Taylor series
    def series(self, node) -> tuple | None:
        """The Taylor coefficients 1..taylor_order of ``node`` along x(t) = x + t on the
        chosen input (the others fixed), by each primitive's Taylor rule (as ``jet``)."""
        if not self.taylor_order:
            return None
        if node not in self._series:
            with np.errstate(all="ignore"):  # the tables show NaN and inf
                self._run_series(node)
        return self._series.get(node)

    def _run_series(self, node) -> None:
        series, nodes, order = self._series, self.nodes, self.taylor_order
        while node not in series and self._next_series < len(nodes):
            n = nodes[self._next_series]
            self._next_series += 1
            if n.fun is None:
                space = vspace(n.ans)
                first = space.ones() if n.name == self.wrt else space.zeros()
                series[n] = (first,) + (space.zeros(),) * (order - 1)
                continue
            series_in = tuple(series[p] for p in n.parents)
            try:
                rule = None if any(s is None for s in series_in) else taylor_rule(n.fun)
            except NotImplementedError:  # no JVP either: the notes name the primitive
                rule = None
            series[n] = None if rule is None else tuple(
                rule(series_in, n.argnums, n.ans, n.args, n.kwargs, order))

    def forward_notes(self) -> list[str]:
        missing = {n.fun for n in self.nodes if n.fun is not None}
        missing = {fun for fun in missing if fun not in primitive_jvps}
        return [
            f"{self.variables[n].name}: {self.variables[n].note}; its tangent is not shown."
            for n in self.nodes
            if n.fun in missing
        ]

    # ---------------------------------------------------------------- backward trace
    def adjoint(self, node) -> Any:
        self.backward()
        return self._adjoints.get(node)

    def gradient(self):
        self.backward()
        return self._gradient(self._adjoints)

    def backward(self) -> list[Visit]:
        """Replay the backward pass in ``toposort``'s order, recording every contribution."""
        if self._visits is None:
            with np.errstate(all="ignore"):  # the tables show NaN and inf; check=True finds them
                self._visits = self._backward()
        return self._visits

    def _backward(self) -> list[Visit]:
        adjoints: dict = {}
        counts: dict = {}
        variables = self.variables
        for leaf in self.out_leaves:
            if isbox(leaf) and leaf._trace_id == self.trace_id:
                node = leaf._node
                seed = vspace(node.ans).ones()
                adjoints[node] = seed if node not in adjoints else add_values(adjoints[node], seed)
        visits = []
        rules: dict = {}  # fun -> its VJP rule (None: it has none), looked up once
        for node in self.order:
            g = adjoints.get(node)
            if g is None:
                continue
            var = variables[node]
            raw: list = []
            visits.append(Visit(var.name, g, var, raw))
            fun = node.fun
            if fun is None:
                continue
            rule = rules.get(fun, False)
            if rule is False:
                rule = rules[fun] = primitive_vjps.get(fun)
            if rule is None:
                self.backward_notes.append(
                    f"{var.name}: no VJP rule for {var.op}; the backward pass stops there."
                )
                continue
            grads = rule(g, node.argnums, node.ans, node.args, node.kwargs)
            for j, (parent, argnum, c) in enumerate(zip(node.parents, node.argnums, grads)):
                if c is None:
                    continue
                c = dense(c)  # (a piece's cotangent, as the value it stands for)
                previous = adjoints.get(parent)
                total = c if previous is None else add_values(previous, c)
                adjoints[parent] = total
                count = counts[parent] = counts.get(parent, 0) + 1
                raw.append((j, variables[parent].name, argnum, c, previous, total, count))
        self._adjoints = adjoints
        return visits
