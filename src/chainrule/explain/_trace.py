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

from .._core.pytree import TreeDef, tree_flatten, tree_unflatten
from .._core.reverse import toposort
from .._core.rule_table import label_of, primitive_jvps, primitive_vjps
from .._core.tracer import Node, isbox, trace_leaves
from .._core.vspace import add_values, vspace
from ..numpy.numpy_wrapper import NONDIFFERENTIABLE
from . import _format as fmt
from ._source import Source, user_source

_creation = itertools.count()


class ExplainNode(Node):
    __slots__ = ("fun", "args", "kwargs", "argnums", "ans", "parents", "seq", "name", "source")

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        self.fun = fun
        self.args = args
        self.kwargs = kwargs
        self.argnums = argnums
        self.ans = ans
        self.parents = parents
        self.seq = next(_creation)
        self.name = ""
        self.source = user_source(2)  # the user's line that made this call

    def initialize_root(self, value, name: str) -> None:
        self.__init__(value, None, (), {}, (), ())
        self.name = name
        self.source = None

    def __repr__(self) -> str:
        return f"<ExplainNode {self.name}>"


# ----------------------------------------------------------------------------- report rows


@dataclasses.dataclass
class Variable:
    """One row of the evaluation trace: an input (``op`` is None) or a primitive call."""

    name: str
    value: Any
    op: str | None = None  # the primitive's name, e.g. "multiply"
    # () -> (expr, expr_values): written when first shown, so a report of a long program
    # writes only the rows it renders
    describe: Callable[[], tuple[str, str]] | None = dataclasses.field(default=None, repr=False)
    parents: list[str] = dataclasses.field(default_factory=list)  # traced arguments, in order
    partials: list[Any] = dataclasses.field(default_factory=list)  # d self / d parent (scalars)
    partial_texts: list[str] = dataclasses.field(default_factory=list)
    tangent: Any = None  # forward trace: d self / d (chosen input)
    adjoint: Any = None  # reverse trace: d y / d self (None: y does not depend on it)
    depth: int = 0  # longest path from an input (for drawing)
    note: str = ""  # why a derivative is missing, if it is
    partial_note: str = ""  # why every local partial is zero ("piecewise constant")
    source: Source | None = None  # the user's line that made it (file, line, text)
    seq: int = 0  # creation order (the order the user's code ran in)

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
        if self.describe is None:
            return "", ""
        texts = self.describe()
        self.describe = lambda: texts
        return texts


@dataclasses.dataclass
class Contribution:
    """``parent_bar += child_bar * d child / d parent``: one edge of the backward pass."""

    child: str
    parent: str
    argnum: int
    child_adjoint: Any
    partial_text: str
    value: Any  # what the VJP rule returned for this parent
    previous: Any  # the parent's adjoint before (None for its first contribution)
    total: Any  # the parent's adjoint after adding it (the running sum)
    fan_in: int  # how many contributions the parent has received so far


@dataclasses.dataclass
class Visit:
    """One step of the backward pass: a node takes its summed adjoint and sends it on."""

    name: str
    adjoint: Any
    contributions: list[Contribution]


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
    backward: list[Visit]
    gradient: tuple
    notes: list[str]
    output: str  # what the output is called: y, or the first free name of OUTPUT_NAMES
    diagnostics: Any = None  # _check.Diagnostics where explain was asked to check


def record(f: Callable, args: tuple, wrt=None, check: bool = False) -> Traces:
    arg_names = _param_names(f, len(args))
    leaves, treedef = tree_flatten(tuple(int(a) * 1.0 if type(a) is int else a for a in args))
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
    out_leaves, out_def = tree_flatten(out)
    taken = set(names) | set(arg_names)
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
        depth[node] = 1 + max((depth[p] for p in node.parents), default=-1)
    nodes.sort(key=lambda n: (depth[n], n.seq))

    variables: dict[ExplainNode, Variable] = {}
    inputs, steps, notes = [], [], []
    for node in nodes:
        if node.fun is None:
            var = Variable(node.name, node.ans)
            inputs.append(var)
        else:
            node.name = f"{letter}{len(steps) + 1}"
            var = _step(node, variables, pi)
            steps.append(var)
        var.depth = depth[node]
        variables[node] = var

    wrt_name = _forward_input(wrt, inputs, arg_names)
    _forward(nodes, variables, wrt_name, notes)
    visits, adjoints = _backward(backward_order, ends, out_leaves, trace_id, variables, notes)

    outputs = []
    for name, leaf in zip(out_names, out_leaves):
        if isbox(leaf) and leaf._trace_id == trace_id:
            outputs.append((name, leaf._node.name, leaf._value))
        else:
            outputs.append((name, None, leaf))
    value = tree_unflatten(out_def, [v for _, _, v in outputs])

    grads = list(leaves)
    for i, root in zip(traced, roots):
        g = adjoints.get(root)
        grads[i] = vspace(leaves[i]).zeros() if g is None else vspace(leaves[i]).cast(g)
    for i in set(range(len(leaves))) - set(traced):
        grads[i] = None
    gradient = tree_unflatten(treedef, grads)
    diagnostics = None
    if check:
        from ._check import diagnose  # only explain(check=True) pays for it

        diagnostics = diagnose(nodes, variables, visits)
    return Traces(
        inputs, steps, outputs, value, wrt_name, visits, gradient, notes, output, diagnostics
    )


def _step(node: ExplainNode, variables: dict, pi: str) -> Variable:
    traced = {i: variables[p].name for i, p in zip(node.argnums, node.parents)}

    def describe():
        values = {i: variables[p].value for i, p in zip(node.argnums, node.parents)}
        return (
            _describe(node.fun, node.args, node.kwargs, traced, pi),
            _describe(node.fun, node.args, node.kwargs, {i: _short(v) for i, v in values.items()}),
        )

    var = Variable(
        node.name,
        node.ans,
        op=getattr(node.fun, "__name__", "f"),
        describe=describe,
        parents=list(traced.values()),
        source=node.source,
        seq=node.seq,
    )
    for j, parent in enumerate(node.parents):
        partial, text = _partial(node, j, variables[parent].value)
        var.partials.append(partial)
        var.partial_texts.append(text)
    note = NOTES.get(var.op, "")
    if note and all(p is not None and np.all(p == 0) for p in var.partials):
        var.partial_note = note
    return var


def _partial(node: ExplainNode, j: int, parent_value) -> tuple[Any, str]:
    """d node / d parent j, as the JVP of the node with a unit tangent on that parent only.

    Arrays have a Jacobian, written as its shape, except for the operations whose label
    notes a zero derivative: theirs is written 0 when the JVP along ones is zero."""
    scalar = fmt.is_scalar(parent_value) and fmt.is_scalar(node.ans)
    jacobian = f"J {fmt.shape_text(node.ans)}<-{fmt.shape_text(parent_value)}"
    if not scalar and getattr(node.fun, "__name__", "") not in NOTES:
        return None, jacobian
    tangents = tuple(
        vspace(p.ans).ones() if k == j else vspace(p.ans).zeros()
        for k, p in enumerate(node.parents)
    )
    try:
        d = primitive_jvps[node.fun](tangents, node.argnums, node.ans, node.args, node.kwargs)
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


def _forward(nodes, variables: dict, wrt_name: str, notes: list) -> None:
    """The forward tangent trace, seeded with ones on the chosen input and zeros elsewhere."""
    tangents: dict = {}
    for node in nodes:
        var = variables[node]
        space = vspace(node.ans)
        if node.fun is None:
            tangents[node] = space.ones() if var.name == wrt_name else space.zeros()
        elif any(tangents.get(p) is None for p in node.parents):
            tangents[node] = None
        else:
            try:
                rule = primitive_jvps[node.fun]
            except KeyError:
                var.note = f"no JVP rule for {var.op}"
                notes.append(f"{var.name}: {var.note}; its tangent is not shown.")
                tangents[node] = None
                continue
            parent_tangents = tuple(tangents[p] for p in node.parents)
            tangents[node] = rule(parent_tangents, node.argnums, node.ans, node.args, node.kwargs)
        var.tangent = tangents[node]


def _backward(order, ends, out_leaves, trace_id, variables: dict, notes: list):
    """Replay the backward pass in ``toposort``'s order, recording every contribution."""
    adjoints: dict = {}
    counts: dict = {}
    for leaf in out_leaves:
        if isbox(leaf) and leaf._trace_id == trace_id:
            node = leaf._node
            seed = vspace(node.ans).ones()
            adjoints[node] = seed if node not in adjoints else add_values(adjoints[node], seed)
    visits = []
    for node in order:
        g = adjoints.get(node)
        if g is None:
            continue
        var = variables[node]
        var.adjoint = g
        visit = Visit(var.name, g, [])
        visits.append(visit)
        if node.fun is None:
            continue
        try:
            rule = primitive_vjps[node.fun]
        except KeyError:
            notes.append(f"{var.name}: no VJP rule for {var.op}; the backward pass stops there.")
            continue
        grads = rule(g, node.argnums, node.ans, node.args, node.kwargs)
        for j, (parent, argnum, c) in enumerate(zip(node.parents, node.argnums, grads)):
            if c is None:
                continue
            previous = adjoints.get(parent)
            total = c if previous is None else add_values(previous, c)
            adjoints[parent] = total
            counts[parent] = counts.get(parent, 0) + 1
            visit.contributions.append(
                Contribution(
                    var.name,
                    variables[parent].name,
                    argnum,
                    g,
                    var.partial_texts[j],
                    c,
                    previous,
                    total,
                    counts[parent],
                )
            )
    return visits, adjoints
