"""From a staging record to a compiled Python function of plain calls.

The nodes the outputs and guards need (dead code is never reached from them) are emitted
in creation order, one line per primitive, ``v12 = f3(v4, c0, axis=1)``, where ``f3`` is
the primitive's raw function and ``c0`` a constant, both in the function's globals.
Common subexpressions (same raw function, same arguments, equal keywords) are emitted
once, and a multiplication by a constant one whose answer is provably the other operand
(same type, shape, dtype and layout) is dropped.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import numpy as anp
from .._core.tracer import getval
from ._direct import direct_call
from ._staging import Guard, StagingNode, _identity

MISS = object()  # what an emitted program answers when a guard fails

LARGE_CONSTANT = 1 << 20  # bytes: a baked-in array this large is warned about

# chainrule.explain's hook (report.code): a function StagingNode -> text appended to the
# comment of the node's line (the user's source line). None, the default, adds nothing.
annotate = None


class Program:
    """One compiled variant: ``run(*leaves)`` answers the output leaves or ``MISS``."""

    def __init__(self, source: str, run, n_lines: int):
        self.source = source
        self.run = run
        self.n_lines = n_lines


def _simple_literal(v: Any) -> bool:
    if v is None or type(v) in (bool, int, str):
        return True
    if type(v) is float:
        return v == v and v not in (float("inf"), float("-inf"))
    if type(v) is tuple:
        return all(_simple_literal(x) for x in v)
    return False


def _is_one(c: Any) -> bool:
    if not isinstance(c, (np.ndarray, np.generic, int, float, complex)):
        return False  # (a Dask constant would be computed to find out)
    try:
        return bool(np.all(np.asarray(c) == 1)) and np.isrealobj(c)
    except Exception:
        return False


def _same_layout(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is np.ndarray:
        return a.shape == b.shape and a.dtype == b.dtype and a.strides == b.strides
    return getattr(a, "dtype", None) == getattr(b, "dtype", None)


_AS_NUMPY = {float: np.float64, complex: np.complex128}

# IEEE addition, subtraction, multiplication and division are correctly rounded, so NumPy's
# scalar operators give the ufunc's bits, its result type and its warnings, faster
_OPERATORS = {
    f.fun: sym
    for f, sym in [
        (anp.add, "+"),
        (anp.subtract, "-"),
        (anp.multiply, "*"),
        (anp.true_divide, "/"),
        (anp.divide, "/"),
    ]
}


def _scalar_operator(raw, node: StagingNode) -> bool:
    args = node.args
    if len(args) != 2 or raw not in _OPERATORS or node.kwargs or type(node.ans) is not _F64:
        return False
    # operands are float64 scalars or Python floats, and traced ones float64 scalars (a
    # Python float would divide by 0 with an error)
    traced = node.argnums
    for i in (0, 1):
        t = type(args[i])
        if t is not _F64 and (t is not float or i in traced):
            return False
    return True


_F64 = np.float64


def _needed(outputs: list, guards: list[Guard]) -> list[StagingNode]:
    seen: dict[int, StagingNode] = {}
    stack = [n for n in outputs if isinstance(n, StagingNode)] + [g.node for g in guards]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(node.parents)
    return sorted(seen.values(), key=lambda n: n.seq)


def _guard_line(name: str, guard: Guard, const) -> str:
    if guard.convert is bool or type(guard.expected) in (bool, np.bool_):
        return f"if {'not ' if guard.expected else ''}{name}: return MISS"
    if guard.convert in (int, float, complex) and _simple_literal(guard.expected):
        return f"if {guard.convert.__name__}({name}) != {guard.expected!r}: return MISS"
    if guard.convert is _identity or guard.convert is getval:
        return f"if not _same({name}, {const(guard.expected)}): return MISS"
    # another conversion (an integer or boolean array of the value ...): checked converted
    return f"if not _same({const(guard.convert)}({name}), {const(guard.expected)}): return MISS"


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (np.ndarray, np.generic)):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except Exception:
        return False


_SCALAR_INPUTS = (float, np.float64)
_EXACT_INT = 1 << 53  # Python ints up to this are floats exactly, as NumPy casts them


def _float_constant(v: Any) -> bool:
    if type(v) in _SCALAR_INPUTS:
        return math.isfinite(v)
    return type(v) is int and -_EXACT_INT <= v <= _EXACT_INT


def _float_inputs(nodes: list[StagingNode], guards: list[Guard]) -> bool:
    """Whether the inputs are float64 scalars and every guard a ``bool()``: the first
    condition of a float program (the second is ``_float_node`` of each emitted call)."""
    return all(
        type(n.ans) in _SCALAR_INPUTS for n in nodes if n.fun is None
    ) and all(g.convert is bool for g in guards)


def _float_node(node: StagingNode) -> bool:
    """Whether an emitted call is one of chainrule's scalar-path functions
    (``numpy_wrapper._with_scalar_path``: + - * /, negative, sin, cos, exp, log, sqrt) on
    float64 scalars and finite constants. A program of such calls (a *float program*)
    runs on Python floats (see ``_float_source``)."""
    if node.fun.fun not in _scalar_paths() or node.kwargs or type(node.ans) is not _F64:
        return False
    args, traced = node.args, node.argnums
    return len(traced) == len(args) or all(
        i in traced or _float_constant(a) for i, a in enumerate(args)
    )


def _scalar_paths() -> frozenset:
    """The raw functions with a float path (their ``scalar`` attribute), found once."""
    global _SCALAR_PATHS
    if _SCALAR_PATHS is None:
        funs = (getattr(anp, name, None) for name in dir(anp))
        _SCALAR_PATHS = frozenset(
            f.fun for f in funs if getattr(getattr(f, "fun", None), "scalar", None) is not None
        )
    return _SCALAR_PATHS


_SCALAR_PATHS: frozenset | None = None


def _float_call(raw, texts: list[str], fun_name) -> str:
    if raw in _OPERATORS:
        return f" {_OPERATORS[raw]} ".join(texts)
    if raw is _NEGATIVE:
        return f"-{texts[0]}"
    return f"{fun_name(raw.scalar)}({texts[0]})"


_NEGATIVE = anp.negative.fun


class _Later:
    """The exact program of a float program, compiled when first needed."""

    def __init__(self, source: str, glob: dict, name: str):
        self.source, self.glob, self.name, self.fn = source, glob, name, None

    def __call__(self, *args):
        if self.fn is None:
            exec(compile(self.source, f"<chainrule.jit {self.name}, exact>", "exec"), self.glob)
            self.fn = self.glob[self.name]
        return self.fn(*args)


def emit(n_inputs: int, out_items: list, guards: list[Guard], name: str) -> Program:
    """``out_items``: per output leaf, a StagingNode (a staged value) or a constant."""
    glob: dict[str, Any] = {"MISS": MISS, "_same": _same}
    consts: dict[int, str] = {}
    large = []

    def const(v: Any) -> str:
        key = id(v)
        if key not in consts:
            consts[key] = f"c{len(consts)}"
            glob[consts[key]] = v
            if isinstance(v, np.ndarray) and v.nbytes > LARGE_CONSTANT:
                large.append(v)
        return consts[key]

    funs: dict[int, str] = {}

    def fun_name(f) -> str:
        if id(f) not in funs:
            funs[id(f)] = f"f{len(funs)}"
            glob[funs[id(f)]] = f
        return funs[id(f)]

    names: dict[int, str] = {}  # id(node) -> variable
    cse: dict[tuple, str] = {}
    lines: list[str] = []
    reads: list[tuple] = []  # per line, the variables it reads (for the dels)
    out_nodes = [o for o in out_items if isinstance(o, StagingNode)]
    nodes = _needed(out_nodes, guards)
    guards_by_node: dict[int, list[Guard]] = {}
    for g in guards:
        guards_by_node.setdefault(id(g.node), []).append(g)
    count = 0
    guarded: set[str] = set()
    floats = _float_inputs(nodes, guards)
    fast_lines = []  # the float program's lines, where ``floats``
    multiply = anp.multiply.fun
    fresh: set[str] = set()  # variables holding a new array of an elementwise ufunc
    reusable: dict[int, list[str]] = {}  # line -> its operands whose memory it may reuse
    viewing: set[int] = set()  # lines whose answer may share its operands' memory
    for node in nodes:
        fun = node.fun
        if fun is None:
            var = names[id(node)] = f"x{node.index}"
            if type(node.ans) in _AS_NUMPY:  # the trace boxed it as a NumPy scalar
                numpy_type = _AS_NUMPY[type(node.ans)]
                lines.append(f"{var} = {fun_name(numpy_type)}({var})  # as "
                             f"{numpy_type.__name__}, as traced")
                reads.append((var,))
        else:
            raw = fun.fun
            args = node.args
            argnums = node.argnums
            parents = node.parents
            if len(argnums) == len(args):  # every argument traced (the common case)
                argtexts = [names[id(p)] for p in parents]
                vals = [p.ans for p in parents]
                traced_texts = argtexts
            else:
                argtexts, vals, traced_texts = [], [], []
                it = iter(parents)
                for i, a in enumerate(args):
                    if i in argnums:
                        parent = next(it)
                        text = names[id(parent)]
                        traced_texts.append(text)
                        vals.append(parent.ans)
                    else:
                        text = repr(a) if _simple_literal(a) and type(a) is not str else const(a)
                        vals.append(a)
                    argtexts.append(text)
            if node.kwargs:
                kwmap = {k: repr(v) if _simple_literal(v) else const(v)
                         for k, v in node.kwargs.items()}
                kwtexts = [f"{k}={v}" for k, v in kwmap.items()]
            else:
                kwmap, kwtexts = {}, []
            key = (raw, *argtexts, *kwtexts)
            alias = cse.get(key)
            if alias is None and raw is multiply and len(args) == 2 and len(argnums) == 1:
                # x * 1 is x, bit for bit, when type, shape, dtype and layout agree
                (i,) = argnums
                if _is_one(args[1 - i]) and _same_layout(node.ans, args[i]):
                    alias = argtexts[i]
            if alias is not None:
                names[id(node)] = alias
            else:
                var = f"v{count}"
                count += 1
                names[id(node)] = cse[key] = var
                if _scalar_operator(raw, node):
                    call = f" {_OPERATORS[raw]} ".join(argtexts)
                else:
                    call = direct_call(raw, vals, argtexts, kwmap, fun_name) or (
                        f"{fun_name(raw)}({', '.join(argtexts + kwtexts)})"
                    )
                label = getattr(fun, "__name__", None) or getattr(raw, "__name__", "?")
                if _elementwise_array(raw, node) and call.endswith(")"):
                    fresh.add(var)
                    same = [t for t, p in zip(traced_texts, parents) if t in fresh
                            and p.ans.shape == node.ans.shape and p.ans.dtype == node.ans.dtype]
                    if same:
                        reusable[len(lines)] = same
                elif type(node.ans) is np.ndarray and raw not in _NEW_ARRAYS:
                    viewing.add(len(lines))  # (transpose, reshape, indexing ...)
                note = annotate(node) if annotate is not None else ""
                lines.append(f"{var} = {call}  # {label}{note}")
                reads.append(traced_texts)
                if floats and _float_node(node):
                    texts = [t if i in argnums else repr(float(a))
                             for i, (t, a) in enumerate(zip(argtexts, args))]
                    fast_lines.append(f"{var} = {_float_call(raw, texts, fun_name)}  # {label}")
                else:
                    floats = False
        for g in guards_by_node.get(id(node), ()):
            line = _guard_line(names[id(node)], g, const)
            if line in guarded:
                continue  # the same check, already made
            guarded.add(line)
            lines.append(f"{line}  # guard: {_what(g)}")
            reads.append((names[id(node)],))
            fast_lines.append(lines[-1])
    outs = [names[id(o)] if isinstance(o, StagingNode) else const(o) for o in out_items]
    # only arrays are worth a del: a scalar's memory is not reused by NumPy's allocator
    arrays = {names[id(n)] for n in nodes if type(n.ans) is np.ndarray}.difference(outs)
    if arrays:
        viewed = {name for i in viewing for name in reads[i]}
        lines = _free_after_last_use(lines, reads, arrays, {
            i: [n for n in names if n not in viewed] for i, names in reusable.items()
        })
    params = ", ".join(f"x{i}" for i in range(n_inputs))
    body = "\n".join("    " + line for line in lines)
    ret = f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})"
    source = f"def {name}({params}):\n{body + chr(10) if body else ''}{ret}\n"
    if floats and fast_lines:
        glob["_exact"] = _Later(source, dict(glob), name)
        source = _float_source(name, params, fast_lines, out_items, outs, fun_name)
    if large:
        sizes = ", ".join(f"{a.shape} {a.dtype}" for a in large)
        warnings.warn(
            f"chainrule.jit: {name} bakes in arrays that are not inputs ({sizes}, over 1 MB "
            f"each): values from globals, closures or numpy.random are constants of the "
            f"trace. Pass them as arguments to avoid copying them into the program.",
            stacklevel=4,
        )
    code = compile(source, f"<chainrule.jit {name}>", "exec")
    exec(code, glob)
    return Program(source, glob[name], len(lines))


def _float_source(name: str, params: str, lines: list[str], out_items: list,
                  outs: list[str], fun_name) -> str:
    """The float program: the same operations on Python floats (IEEE-exact as NumPy's
    float64 scalars; the same math functions as chainrule's scalar path). Where Python
    raises instead of answering inf or nan (x / 0, math's domain and overflow errors), or
    an output is not finite, the exact program (NumPy scalars) answers instead, with
    NumPy's values and warnings."""
    f64 = fun_name(np.float64)
    finite = fun_name(math.isfinite)
    staged = [o for o, item in zip(outs, out_items) if isinstance(item, StagingNode)]
    ret = [f"{f64}({o})" if isinstance(item, StagingNode) else o
           for o, item in zip(outs, out_items)]
    body = ["try:"] + ["    " + line for line in lines]
    body.append("except (ArithmeticError, ValueError):  # NumPy answers inf or nan, and warns")
    body.append(f"    return _exact({params})")
    if staged:
        checks = " and ".join(f"{finite}({o})" for o in staged)
        body.append(f"if not ({checks}):  # NumPy's nan and inf, with its warnings")
        body.append(f"    return _exact({params})")
    body.append(f"return ({', '.join(ret)}{',' if len(ret) == 1 else ''})")
    text = "\n".join("    " + line for line in body)
    return f"def {name}({params}):\n{text}\n"


def _free_after_last_use(
    lines: list[str], reads: list, freed: set[str], reusable: dict[int, list[str]]
) -> list[str]:
    """``del`` each of ``freed`` after its last use (``reads[i]``: the variables line i
    reads), as the eager backward pass releases intermediates: NumPy then reuses the
    memory it just freed instead of touching new pages. An elementwise ufunc whose operand
    dies on its line (``reusable``: new arrays of its shape and dtype, of which no view was
    taken) writes its answer into it, ``out=``, as a hand-written ``a += b`` does: the
    same values, one allocation fewer."""
    last: dict[str, int] = {}
    for i, names in enumerate(reads):
        for name in names:
            last[name] = i
    dead: dict[int, list[str]] = {}
    for name, i in last.items():
        if name in freed:
            dead.setdefault(i, []).append(name)
    out = []
    for i, line in enumerate(lines):
        into = [n for n in reusable.get(i, ()) if n in freed and last[n] == i]
        if into:
            code, comment = line.split("  # ", 1)
            line = f"{code[:-1]}, out={into[0]})  # {comment}"
        out.append(line)
        if i in dead:
            out.append(f"del {', '.join(sorted(dead[i]))}")
    return out


# functions whose ndarray answers are new arrays, never views of their operands
_NEW_ARRAYS = frozenset([np.matmul, np.dot, np.sum, np.prod, np.max, np.min])


def _elementwise_array(raw, node: StagingNode) -> bool:
    """Whether the call is an elementwise ufunc (no ``out=`` yet) answering a new ndarray."""
    ufunc = raw if isinstance(raw, np.ufunc) else getattr(raw, "ufunc", None)
    return (
        ufunc is not None
        and ufunc.signature is None
        and ufunc.nout == 1
        and type(node.ans) is np.ndarray
        and "out" not in node.kwargs
        and all(type(a) is np.ndarray or np.isscalar(a) for a in node.args)
    )


def _what(g: Guard) -> str:
    conv = getattr(g.convert, "__name__", "value")
    if conv in ("_identity", "getval"):
        return "the value decided at trace time"
    shown = repr(g.expected)
    if "\n" in shown or len(shown) > 60:  # (a comment is one line)
        return f"{conv}() of the value decided at trace time"
    return f"{conv}() was {shown}"
