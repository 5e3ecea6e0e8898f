"""From a staging record to a compiled Python function of plain calls, in three steps.

Lowering (``_lower``): the nodes the outputs and guards need (dead code is never reached
from them), in creation order, become instructions, one per primitive call, such as
``f3({0}, {1}, axis=1)``, where ``f3`` is the primitive's raw function (in the function's
globals) and ``{j}`` operand j: an earlier instruction or a constant. Common
subexpressions (same raw function, same operands, equal keywords) are one instruction,
and a multiplication by a constant one whose answer is provably the other operand (same
type, shape, dtype and layout) is dropped.

Rolling (``_roll``): runs of instructions that repeat become loops.

Rendering (``_render``): the lines, ``v12 = f3(v4, c0, axis=1)``, compiled once.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import keyword
import math
import operator
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as _np

from .. import numpy as anp
from .._core.tracer import getval
from ..numpy._namespace import ufunc_of
from ..numpy.rules.shape import untake
from . import _kernels, _roll
from ._direct import direct_call
from ._errstate import underflow_heard
from ._fold import Folded, fold, node_runs
from ._instr import Instr
from ._interpret import interpret
from ._kernels import as_index, layout_key
from ._notices import JitWarning, user_stacklevel
from ._program import MISS, RAISED, AtFirstRun, Program, copied_together, needed, same
from ._render import POSITIONAL_OUT, Plan
from ._roll import roll
from ._staging import (
    LARGE_CONSTANT,
    ArrayMeta,
    Guard,
    StagingNode,
    _identity,
    held_bytes,
    rules_of_call,
)

# calls: a program longer than this once its loops are folded runs as a table (see
# ``_interpret``): compiling it would cost more than tracing it. A float program compiles
# up to LONG_FLOAT_PROGRAM: its lines compile in some 5 µs (its record took ~10 µs a
# call to trace) and run 20-50 times faster than a table's rows (a jet's recurrences)
LONG_PROGRAM = 4096
LONG_FLOAT_PROGRAM = 1 << 16


def _simple_literal(v: Any) -> bool:
    if v is None or type(v) in (bool, int, str):
        return True
    if type(v) is float:
        return v == v and v not in (float("inf"), float("-inf"))
    if type(v) is tuple:
        return all(_simple_literal(x) for x in v)
    return False


def _is_one(c: Any) -> bool:
    if not isinstance(c, (_np.ndarray, _np.generic, int, float, complex)):
        return False  # (a Dask constant would be computed to find out)
    try:
        return bool(_np.all(_np.asarray(c) == 1)) and _np.isrealobj(c)
    except Exception:
        return False


def _same_layout(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is ArrayMeta:
        return a.shape == b.shape and a.dtype == b.dtype and a.strides == b.strides
    return getattr(a, "dtype", None) == getattr(b, "dtype", None)


_AS_NUMPY = {float: _np.float64, complex: _np.complex128}

def _scalar_operator(operator: bool, node: StagingNode, vals: list) -> bool:
    """Whether the call is NumPy's scalar arithmetic, written as the operator its label
    is (``operator``: the entry's ``operator`` column; IEEE addition, subtraction,
    multiplication and division are correctly rounded, so NumPy's scalar operators give
    the ufunc's bits, its result type and its warnings, faster): where chainrule's raw
    function calls the operator itself (see ``numpy_wrapper._with_scalar_path``)."""
    if len(vals) != 2 or not operator or node.kwargs:
        return False
    t0, t1 = type(vals[0]), type(vals[1])
    if (t0 in _COMPLEX_SCALARS and t1 in _SCALAR_OPERANDS) or \
            (t1 in _COMPLEX_SCALARS and t0 in _SCALAR_OPERANDS):
        return True
    if type(node.ans) is not _F64:
        return False
    # operands are float64 scalars or Python floats, and traced ones float64 scalars (a
    # Python float would divide by 0 with an error)
    traced = node.argnums
    for i, t in enumerate((t0, t1)):
        if t is not _F64 and (t is not float or i in traced):
            return False
    return True


_COMPLEX_SCALARS = frozenset([_np.complex128, _np.complex64])
_SCALAR_OPERANDS = frozenset([float, complex, int, _np.float64, _np.float32, _np.complex128,
                              _np.complex64])
_F64 = _np.float64


_SEQ = operator.attrgetter("seq")
_ANS = operator.attrgetter("ans")


_SCALAR_INPUTS = (float, _np.float64)
_EXACT_INT = 1 << 53  # Python ints up to this are floats exactly, as NumPy casts them


def _float_constant(v: Any) -> bool:
    if type(v) in _SCALAR_INPUTS:
        return math.isfinite(v)
    if type(v) is _np.ndarray:  # (a zero coefficient of a jet's series: a float64 0-d array)
        return v.shape == () and v.dtype == _F64 and math.isfinite(v)
    return type(v) is int and -_EXACT_INT <= v <= _EXACT_INT


def _inputs(nodes: list[StagingNode]) -> list[StagingNode]:
    """The needed inputs: the first nodes (the trace boxes its inputs before any call)."""
    return list(itertools.takewhile(_is_input, nodes))


def _is_input(node: StagingNode) -> bool:
    return node.fun is None


def _float_inputs(inputs: list[StagingNode], guards: list[Guard]) -> bool:
    """Whether the inputs are float64 scalars and every guard a ``bool()`` (or a float
    predicate): the first condition of a float program (the second is ``_float_node`` of
    each emitted call)."""
    return all(type(n.ans) in _SCALAR_INPUTS for n in inputs) and \
        all(g.convert is bool or _float_predicate(g.convert) for g in guards)


def _float_predicate(convert) -> bool:
    """Whether a guard's conversion is a predicate exact on a Python float, answering a
    bool (a Taylor rule's ``all_finite``): a float program checks it as it is."""
    return getattr(convert, "float_predicate", False) is True


def _float_node(node: StagingNode) -> bool:
    """Whether an emitted call is one of chainrule's scalar-path functions
    (``numpy_wrapper._with_scalar_path``: + - * /, negative, sin, cos, exp, log, sqrt), or
    another NumPy ufunc (``tanh``, ``arcsinh``, ``x ** 3``: see ``_float_call``), on
    float64 scalars and finite constants, answering a float64 scalar. A program of such
    calls (a *float program*) runs on Python floats (see ``_float_source``)."""
    raw = node.fun.fun
    if node.kwargs or type(node.ans) is not _F64:
        return False
    args, traced = node.args, node.argnums
    if raw not in _scalar_paths():
        ufunc = _ufunc_of(raw)
        # (its float64 loop: the one float64 scalars and Python numbers resolve to, as
        # the program's float constants do; ldexp has none, its exponent is an integer)
        if ufunc is None or ufunc.nin != len(args) or \
                "d" * ufunc.nin + "->d" not in ufunc.types:
            return False
    return len(traced) == len(args) or all(
        i in traced or _float_constant(a) for i, a in enumerate(args)
    )


def _ufunc_of(raw) -> _np.ufunc | None:
    """The NumPy ufunc of one output that ``raw`` is (or wraps: its scalar path), or None."""
    ufunc = ufunc_of(raw)
    return ufunc if ufunc is not None and ufunc.nout == 1 else None


def _float_record(nodes: list[StagingNode], guards: list[Guard], tails: frozenset) -> bool:
    """Whether the needed ``nodes`` make a float program (see ``_lower``)."""
    return _float_inputs(_inputs(nodes), guards) and all(
        n in tails or _float_node(n) for n in nodes if n.fun is not None)


def _float_tails(nodes: list[StagingNode], guards: list[Guard],
                 out_nodes: list[StagingNode]) -> frozenset:
    """The calls a float program makes after its floats are checked, on float64 scalars as
    the trace made them (``taylor_derivatives``' stack of the coefficients): calls on
    float64 scalars that answer something else, which only outputs read. Empty where the
    program cannot be one of floats."""
    candidates = [
        n for n in set(out_nodes)
        if n.fun is not None and type(n.ans) is not _F64  # (so not a ``_float_node``)
        and all(type(p.ans) in _SCALAR_INPUTS for p in n.parents)]  # (an input: a float)
    if not candidates or not _float_inputs(_inputs(nodes), guards):
        return frozenset()  # (the common case: no walk over the record)
    read = {p for n in nodes for p in n.parents} | {g.node for g in guards}
    return frozenset(n for n in candidates if n not in read)


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


def _tail_code(code: str, slots: list, fun_name) -> str:
    """A tail call's code in a float program (see ``_float_tails``): the exact program's,
    its traced operands made float64 again and its constants written as there."""
    f64 = fun_name(_F64)
    return code.format(*[f"{f64}({{{j}}})" if type(slot) is Instr else _escaped(slot[1])
                         for j, slot in enumerate(slots)])


def _float_call(raw, entry, texts: list[str], traced: tuple, fun_name) -> str:
    """A float-program call. Where ``raw`` has no float path of its own, it is called as
    the trace called it, on float64 scalars (its traced operands made float64 again), and
    its answer read as a float: the same bits (``math``'s ``tanh`` differs from NumPy's in
    the last bit), its warnings silenced (``_float_source``) and its non-finite answers
    left to the exact program (``_watched``)."""
    if raw in _scalar_paths():
        if entry.operator:  # (+ - * / and unary -: the operator its label writes)
            return entry.label.format(*texts)
        return f"{fun_name(raw.scalar)}({texts[0]})"
    f64 = fun_name(_F64)
    operands = [f"{f64}({t})" if j in traced else t for j, t in enumerate(texts)]
    return f"{fun_name(float)}({fun_name(raw)}({', '.join(operands)}))"


def _walk(nodes: list[StagingNode], runs: list, instrs: list, fold_run):
    """The nodes to lower, in order: of each run to fold (see ``_fold``), iterations 0, 1
    and 2, then none of the others where ``fold_run(run, first, second)`` folds it
    (``instrs[first:second]``: iteration 1's instructions, ``instrs[second:]`` 2's)."""
    i = 0
    for run in runs:
        start, period = run.start, run.period
        yield from nodes[i:start + period]
        first = len(instrs)
        yield from nodes[start + period:start + 2 * period]
        second = len(instrs)
        yield from nodes[start + 2 * period:start + 3 * period]
        i = start + 3 * period
        if fold_run(run, first, second):
            i = start + period * run.repeats
    yield from nodes[i:]


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _lower(nodes: list[StagingNode], guards: list[Guard], const, fun_name,
           escaping: set[StagingNode], runs: list, seqs: list[int] | None = None,
           tails: frozenset = frozenset()):
    """The instructions of the needed nodes, and whether they form a float program.
    ``escaping``: the nodes whose arrays the caller gets (see ``_escaping``), which are
    never shared with another node's instruction (a common subexpression, ``x * 1``).
    ``runs``: the runs of nodes to fold (``_fold.node_runs``); ``seqs``: the nodes'
    ``seq``, where the caller has them; ``tails``: calls of a float program made after
    its floats (``_float_tails``)."""
    guards_by_node: dict[StagingNode, list[Guard]] = {}
    for g in guards:
        guards_by_node.setdefault(g.node, []).append(g)
    instr_of = Folded(nodes, seqs)
    cse: dict[tuple, Instr] = {}
    guarded: set[tuple] = set()
    instrs: list[Instr] = []
    floats = _float_inputs(_inputs(nodes), guards)
    memo: dict[tuple, tuple] = {}
    identities: dict[int, bool] = {}  # id(constant matrix) -> whether it is an identity

    def constant(a: Any) -> tuple:
        """A constant operand's slot: (value, text, float-program text or None)."""
        text = repr(a) if _simple_literal(a) and type(a) is not str else const(a)
        return a, text, repr(float(a)) if floats and _float_constant(a) else None

    walk = _walk(nodes, runs, instrs, lambda run, first, second: fold(
        run, nodes, instrs, first, second, instr_of, constant, escaping))
    absorbed = _absorbed(nodes, escaping, guards_by_node, runs)
    indexes: dict[int, Any] = {}  # id(index constant) -> it as intp (``_kernels.as_index``)
    for node in walk:
        fun = node.fun
        if absorbed and node in absorbed:
            # its operand stands for it: no line of its own (see ``_absorbed``)
            instr_of[node] = instr_of[node.parents[0]]
        elif fun is None:
            ins = instr_of[node] = Instr("input", node, None, None, [], "")
            ins.var = f"x{node.index}"
            if type(node.ans) in _AS_NUMPY:  # the trace boxed it as a NumPy scalar
                numpy_type = _AS_NUMPY[type(node.ans)]
                convert = Instr("convert", node, f"{fun_name(numpy_type)}({ins.var})", None,
                                [], f"as {numpy_type.__name__}, as traced")
                convert.var = ins.var
                instrs.append(convert)
                node.ans = numpy_type(node.ans)  # (its consumers' operand, as the box held it)
        else:
            raw = fun.fun
            args = node.args
            argnums = node.argnums
            parents = node.parents
            if len(argnums) == len(args):  # every argument traced (the common case)
                # (map of C functions: a comprehension costs a frame per node in 3.11)
                slots = list(map(instr_of.__getitem__, parents))
                vals = list(map(_ANS, parents))
                consts = ()
            else:
                slots, vals = [], []
                it = iter(parents)
                for i, a in enumerate(args):
                    if i in argnums:
                        parent = next(it)
                        slots.append(instr_of[parent])
                        vals.append(parent.ans)
                    else:
                        a = indexes.get(id(a), a) if indexes else a
                        index = as_index(raw, i, a)
                        if index is not a:  # (one copy per constant: CSE finds it again)
                            index = indexes[id(a)] = indexes.setdefault(id(index), index)
                        slots.append(constant(index))
                        vals.append(index)
                consts = [s for s in slots if type(s) is tuple]
            if node.kwargs:
                kwmap = {k: _escaped(repr(v) if _simple_literal(v) else const(v))
                         for k, v in node.kwargs.items()}
                kwtexts = [f"{k}={v}" for k, v in kwmap.items()]
            else:
                kwmap, kwtexts = {}, []
            if consts or kwtexts:
                key = (raw, *[s if type(s) is Instr else s[1] for s in slots], *kwtexts)
            else:
                key = (raw, *slots)
            # (a sum of an absorbed negation reads the negation's operand: not its sum)
            negated = bool(absorbed) and bool(parents) and parents[0] in absorbed and \
                absorbed[parents[0]] == "negated"
            if negated:
                key += (_np.negative,)
            alias = None if node in escaping else cse.get(key)
            # one constant operand of two: a product by the neutral one may be dropped
            by_constant = len(args) == 2 and len(argnums) == 1
            entry = rules_of_call(node)
            if alias is None and by_constant and entry.neutral == "ones" \
                    and node not in escaping:
                # x * 1 is x, bit for bit, when type, shape, dtype and layout agree
                (i,) = argnums
                if _is_one(args[1 - i]) and _same_layout(node.ans, vals[i]):
                    alias = slots[i]
            if alias is not None:
                instr_of[node] = alias
            else:
                ans = node.ans
                # what decides the code: the function, which operands are traced, their
                # types, the keywords, whether constants are finite floats (the float
                # program's condition); not the constants' values (but where the entry
                # says the code reads them, ``lowered_by_value``: moveaxis writes the
                # permutation its axes and the operand's ndim make)
                sig = (fun, argnums, type(ans), *map(type, vals), negated,
                       *layout_key(raw, entry, vals, ans))
                if consts or kwtexts:
                    sig += (*kwtexts, *[c[2] is None for c in consts])
                by_eye = by_ones = False
                if entry.lowered_by_value:
                    sig += (tuple(map(_np.ndim, vals)), repr([c[0] for c in consts]))
                elif by_constant and entry.neutral == "eye":
                    by_eye = _identity_side(args, argnums[0], ans, identities)
                    sig += (by_eye,)
                elif by_constant and entry.neutral == "ones" and not kwtexts:
                    # (a mask times ones: the mask as floats, ``_kernels.ones_mask``)
                    by_ones = _kernels.ones_mask(args[1 - argnums[0]], vals[argnums[0]], ans)
                    sig += (by_ones,)
                made = memo.get(sig)
                if made is None:
                    made = memo[sig] = _template(raw, fun, entry, node, vals, slots, kwmap,
                                                 kwtexts, fun_name, negated, const)
                    if by_eye:
                        made = memo[sig] = _by_identity(made, argnums[0], fun_name)
                    elif by_ones:
                        made = memo[sig] = _as_float(made, argnums[0], ans.dtype, fun_name)
                code, fast, label, elementwise, view, code_key = made
                if consts and type(ans) is ArrayMeta and \
                        getattr(raw, "ufunc", raw) in _INT_AS_FLOAT:
                    slots = _ints_as_floats(slots, vals, ans)
                if tails and node in tails:
                    fast = _tail_code(code, slots, fun_name)
                if fast is None:
                    floats = False
                reuse = ()
                if elementwise:  # operands of its layout it may write into (the layout
                    # NumPy gave its answer: a reduction over it adds in that order)
                    reuse = tuple(
                        j for j, s in enumerate(slots) if type(s) is Instr and s.fresh
                        and s.node.ans.shape == ans.shape and s.node.ans.dtype == ans.dtype
                        and s.node.ans.strides == ans.strides
                    )
                ins = instr_of[node] = cse[key] = Instr(
                    "call", node, code, fast if floats else None, slots,
                    _comment(label, node),
                    (code_key, reuse) if reuse else code_key, type(ans) is ArrayMeta,
                    elementwise, reuse, view)
                instrs.append(ins)
        for g in guards_by_node.get(node, ()) if guards_by_node else ():
            target = instr_of[node]
            code, slots = _guard_code(g, target, const, fun_name)
            seen = (code, target, *[s[1] for s in slots[1:]])
            if seen in guarded:
                continue  # the same check, already made
            guarded.add(seen)
            instrs.append(Instr("guard", node, code, code, slots, f"guard: {_what(g)}",
                                (code, tuple(type(s) is Instr for s in slots))))
    if not runs:  # (in straight code only: a folded loop's body repeats its instructions)
        instrs = _placed_adds(instrs, instr_of, escaping, fun_name)
    for pos, ins in enumerate(instrs):
        ins.pos = pos
    return instrs, instr_of, floats


def _placed_adds(instrs: list[Instr], instr_of, escaping: set[StagingNode],
                 fun_name) -> list[Instr]:
    """``instrs`` with each float64 sum of a value that is a sum from 0.0 and a row
    placed into zeros (``_kernels.placed``, read by nothing else) made one
    ``_kernels.placed_added``: the row added where it lies, no zeros made, no pass over
    the rest (det's cotangent of its matrix, one row per level: 0.6 -> 0.4 µs each).
    Exact only where the rest holds no -0.0 (-0.0 + 0.0 is 0.0), so only for sums from
    0.0, which this tracks: a scatter's (``bincount`` and ``add.at`` into zeros add to
    0.0), a placed row of one, a sum with one (a sum is -0.0 only where both terms are)."""
    untakes = [ins for ins in instrs if ins.kind == "call" and ins.node.fun.fun is untake.fun]
    if len(untakes) < 2:
        return instrs
    placed_code = f"{fun_name(_kernels.placed)}({{0}}, {{1}}, {{2}})"
    fused = f"{fun_name(_kernels.placed_added)}("
    scatter_code = f"{fun_name(_kernels.scatter_sum)}({{0}}, {{1}}, {{2}})"
    readers: dict[int, int] = {}
    for ins in instrs:
        for s in ins.slots:
            if type(s) is Instr:
                readers[id(s)] = readers.get(id(s), 0) + 1
    scattered = f"{fun_name(_kernels.scatter_added)}("
    kept = {id(instr_of[n]) for n in escaping}  # (outputs, and what they view)
    from_zero: set[int] = set()
    zero_rows: dict[int, frozenset] = {}  # placed rows' zeros, and what is added to them
    dropped: set[int] = set()
    for ins in instrs:
        if ins.kind != "call":
            continue
        if ins.code == scatter_code:
            from_zero.add(id(ins))
        elif ins.code == placed_code:
            if id(ins.slots[0]) in from_zero:
                from_zero.add(id(ins))
            rows, index = ins.node.ans.shape[:1], ins.slots[1][0]
            if len(rows) == 1 and type(index) is int and -rows[0] <= index < rows[0]:
                zero_rows[id(ins)] = frozenset(range(rows[0])) - {index % rows[0]}
        elif _adds_floats(ins) and any(id(s) in from_zero for s in ins.slots):
            from_zero.add(id(ins))
            a, p = ins.slots
            first = p.code != placed_code or id(a) not in from_zero
            if first:
                a, p = p, a
            if p.code != placed_code or readers[id(p)] != 1 or id(p) in kept or \
                    id(a) not in from_zero or not _adds_row(a, p, ins.node.ans):
                continue
            dropped.add(id(p))
            g, index = p.slots[0], p.slots[1]
            row = index[0] % ins.node.ans.shape[0] if type(index[0]) is int else None
            zeros = zero_rows.get(id(a), frozenset())
            if row in zeros and g.code == scatter_code and readers[id(g)] == 1 and \
                    id(g) not in kept:  # (0.0 plus the scatter's sum: it, in either order)
                dropped.add(id(g))
                ins.code = f"{scattered}{{0}}, {{1}}, {{2}}, {{3}})"
                ins.slots = [a, g.slots[0], g.slots[1], index]
            else:
                ins.code = f"{fused}{{0}}, {{1}}, {{2}}, {first})"
                ins.slots = [a, g, index]
            zero_rows[id(ins)] = zeros - {row}
            ins.comment = f"untake, {ins.comment}"
            ins.fresh = True  # (a new array, or ``a``'s where it dies here: out=)
            ins.reuse = (0,) if a.fresh or a.code == placed_code or \
                a.code.startswith((fused, scattered)) else ()
            code_key = (ins.code, tuple(type(s) is tuple for s in ins.slots), True, False, True)
            ins.key = (code_key, ins.reuse) if ins.reuse else code_key
    return [ins for ins in instrs if id(ins) not in dropped] if dropped else instrs


def _adds_floats(ins: Instr) -> bool:
    """Whether ``ins`` is ``np.add`` of two arrays into a new C-ordered float64 array."""
    node = ins.node
    ans = node.ans
    return getattr(node.fun.fun, "ufunc", node.fun.fun) is _np.add and not node.kwargs \
        and len(ins.slots) == 2 and all(type(s) is Instr for s in ins.slots) \
        and type(ans) is ArrayMeta and ans.dtype == _np.float64 and _kernels.c_ordered(ans)


def _adds_row(a: Instr, p: Instr, ans: ArrayMeta) -> bool:
    """Whether ``a`` (laid out as the answer) plus ``p``, ``placed(g, index, shape)`` of
    the answer's shape, may add ``g`` into ``a[index]``: a view of ``g``'s shape."""
    av, g, index = a.node.ans, p.slots[0], p.slots[1]
    if type(av) is not ArrayMeta or av.shape != ans.shape or av.strides != ans.strides \
            or av.dtype != ans.dtype or p.node.ans.shape != ans.shape \
            or type(g) is not Instr or type(index) is not tuple:
        return False
    row = _np.broadcast_to(_np.float64(0.0), ans.shape)[index[0]]
    return type(row) is _np.ndarray and row.shape == g.node.ans.shape


def _absorbed(nodes: list[StagingNode], escaping: set[StagingNode], guarded: dict,
              runs: list) -> dict[StagingNode, str]:
    """The calls whose operand stands for them in the program (``_lower`` writes no line
    for them), with why:

    - ``"view"``: ``np.broadcast_to(x, shape)`` (a sum's derivative spreading its
      cotangent) read only by elementwise ufuncs that broadcast ``x`` to the same answer
      themselves: the same values, into an answer the same layout (NumPy's iterator sees
      a broadcast axis as stride 0 either way), without the Python of ``broadcast_to``.
    - ``"negated"``: ``np.negative(x)`` of floats read only by a sum over all its axes,
      which then sums ``x`` and negates the total (``_kernels.negated_sum``: the same bits
      where the total is neither zero nor nan, one pass over ``x`` fewer).

    Never an output (or what one views) or a guarded value. In a run of nodes to fold
    into a loop, a view is absorbed where every iteration's is (lstm's cotangent of a
    sum spread over a 14-vector, 2 µs an iteration: the loop's body is one code for
    all, and a later iteration's node is read as its operand's), a negation never."""
    candidates: dict[StagingNode, list] = {}
    for node in nodes:
        fun = node.fun
        if fun is None or node.kwargs or node.argnums != (0,) or \
                type(node.ans) is not ArrayMeta:
            continue
        raw = fun.fun
        if (raw is _np.broadcast_to and len(node.args) == 2) or (
                getattr(raw, "ufunc", None) is _np.negative and len(node.args) == 1
                and node.ans.dtype.kind == "f"):
            candidates[node] = []
    if not candidates:
        return {}
    for node in nodes:
        for parent in node.parents:
            readers = candidates.get(parent)
            if readers is not None:
                readers.append(node)
    found = {}
    for node, readers in candidates.items():
        if not readers or node in escaping or node in guarded:
            continue
        if type(node.parents[0].ans) is not ArrayMeta:
            continue
        elif node.fun.fun is _np.broadcast_to:
            if all(_broadcasts_itself(reader, node) for reader in readers):
                found[node] = "view"
        elif len(readers) == 1 and _sums_negation(readers[0], node) and \
                _np.prod(node.ans.shape) >= _kernels.NEGATED_MIN_SIZE:
            found[node] = "negated"
    if found and runs:
        for run in runs:  # (an offset of a run: absorbed in every iteration, or in none)
            start, period = run.start, run.period
            for k in range(period):
                column = nodes[start + k:start + period * run.repeats:period]
                if any(n in found for n in column) and not all(
                        found.get(n) == "view" for n in column):
                    for n in column:
                        found.pop(n, None)
    return found


def _broadcasts_itself(reader: StagingNode, view: StagingNode) -> bool:
    """Whether ``reader`` is an elementwise ufunc whose answer is as large with ``view``'s
    operand in its place (and it is one of those: ``_lower`` runs them on arrays)."""
    raw = reader.fun.fun
    if reader.kwargs or len(reader.argnums) != len(reader.args) or \
            type(reader.ans) is not ArrayMeta or reader.ans.shape != view.ans.shape or \
            not _elementwise_array(raw, reader, [p.ans for p in reader.parents]):
        return False
    # (an operand may be a Python number, a staged scalar: shape ())
    shapes = [getattr((view.parents[0] if p is view else p).ans, "shape", ())
              for p in reader.parents]
    try:
        return _np.broadcast_shapes(*shapes) == reader.ans.shape
    except ValueError:
        return False


def _sums_negation(reader: StagingNode, negated: StagingNode) -> bool:
    """Whether ``reader`` is a sum of ``negated`` (its one traced operand) over all axes,
    answering one float, or over one axis followed by 3 to 64 entries, given by keyword
    (``_kernels.negated_rows_sum``; where a sum over an axis may take another faster form:
    ``_kernels``)."""
    ans = reader.ans
    if rules_of_call(reader).reduction is not _np.add or reader.argnums != (0,) or \
            len(reader.parents) != 1 or reader.parents[0] is not negated or \
            getattr(ans, "dtype", None) != negated.ans.dtype or \
            {"dtype", "out", "initial", "where"} & set(reader.kwargs):
        return False
    if type(ans) is not ArrayMeta or _np.prod(ans.shape) == 1:
        return True
    return len(reader.args) == 1 and _kernels.negated_form(
        negated.parents[0].ans, reader.kwargs.get("axis"), ans) is not None


def _comment(label: str, node: StagingNode) -> str:
    """A call's comment: its primitive, and the user's line where the record knows it
    (``SourcedNode``, whose line explain's ``report.code`` may give)."""
    source = getattr(node, "source", None)
    return label if source is None else f"{label} @ {source}"


def _template(raw, fun, entry, node: StagingNode, vals: list, slots: list, kwmap: dict,
              kwtexts: list, fun_name, negated: bool = False, const=None) -> tuple:
    """What a call's instruction is, from what decides it (``_lower`` keeps the answer
    for the next call like it): its code, its float-program code (None where it has
    none), its label, whether it makes a new array elementwise, whether its answer may
    be a view of an operand, and the key of an instruction with this code (see ``_roll``:
    the code and which operands are constants; calls on other types that write the same
    code are the same instruction)."""
    holes = [f"{{{j}}}" for j in range(len(slots))]
    if _scalar_operator(entry.operator, node, vals):
        code = entry.label.format(*holes)
    else:
        code = direct_call(raw, entry, vals, holes, kwmap, fun_name, node.ans, negated,
                           const) or (
            f"{fun_name(raw)}({', '.join(holes + kwtexts)})"
        )
    fast = _float_call(raw, entry, holes, node.argnums, fun_name) if _float_node(node) else None
    label = getattr(fun, "__name__", None) or getattr(raw, "__name__", "?")
    array = type(node.ans) is ArrayMeta
    elementwise = _elementwise_array(raw, node, vals) and code.endswith(")")
    if elementwise:  # (a plain call of the ufunc takes its ``out`` by position: cheaper)
        ufunc = raw if isinstance(raw, _np.ufunc) else raw.ufunc
        if len(holes) == ufunc.nin and _takes_positional_out(ufunc) and \
                code == f"{fun_name(ufunc)}({', '.join(holes)})":
            elementwise = POSITIONAL_OUT
    view = not elementwise and array and not entry.new_array
    key = (code, tuple(type(s) is tuple for s in slots), elementwise, view, array)
    return code, fast, label, elementwise, view, key


_ALL = _np.logical_and.reduce  # (one C call; ndarray.all goes through Python)


def _identity_side(args: list, traced: int, ans, identities: dict) -> bool:
    """Whether ``args[0] @ args[1]`` multiplies the traced 2-D operand by a constant
    identity matrix of the answer's dtype (the basis of a Jacobian or Hessian sweep).
    ``identities`` keeps the answer per constant (a loop multiplies by the same one)."""
    eye = args[1 - traced]
    if not (type(eye) is _np.ndarray and eye.ndim == 2 and eye.shape[0] == eye.shape[1]
            and type(ans) is ArrayMeta and ans.ndim == 2 and eye.dtype == ans.dtype
            and eye.dtype.kind == "f"):
        return False
    found = identities.get(id(eye))
    if found is None:  # (n nonzeros, all ones on the diagonal: no n x n identity made)
        found = identities[id(eye)] = bool(
            _np.count_nonzero(eye) == len(eye) and (_np.diagonal(eye) == 1).all())
    return found


def _by_identity(made: tuple, traced: int, fun_name) -> tuple:
    """The template of a product by the identity: a copy of the other operand (``+m`` in
    the product's layout) where that is the same bits, the product where it is not. I @ M
    adds products by zero to each entry of M, which change it only where some entry is inf
    or nan (0 * inf is nan) or a zero (whose sign the sum may change: -0.0 + 0.0 is 0.0):
    ufuncs and one reduction find out (no Python per call), cheaper than the product."""
    code, fast, label, elementwise, view, key = made
    m = f"{{{traced}}}"
    plain = f"{fun_name(_ALL)}({fun_name(_np.isfinite)}({m}) & ({m} != 0), None)"
    code = f"{fun_name(_np.positive)}({m}, order='C') if {plain} else {code}"
    return code, fast, f"{label} (by the identity: a copy where exact)", elementwise, view, \
        (code, *key[1:])


@functools.cache
def _takes_positional_out(ufunc: _np.ufunc) -> bool:
    """Whether this NumPy takes ``ufunc``'s ``out`` by position without a warning (NumPy
    2.4 deprecates it for ``maximum`` and ``minimum``, whose third operand it warns of),
    asked once per ufunc on arrays of one float."""
    operands = [_np.zeros(1) for _ in range(ufunc.nin + ufunc.nout)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            ufunc(*operands)
        except Exception:  # (a DeprecationWarning, or a ufunc not for floats: by keyword)
            return False
    return True


# ufuncs whose Python int operand may be written as a float where the others are floats
_INT_AS_FLOAT = frozenset([_np.add, _np.subtract, _np.multiply, _np.divide])


def _ints_as_floats(slots: list, vals: list, ans: ArrayMeta) -> list:
    """The constant operands of an arithmetic ufunc written as floats where they are
    Python ints and every array operand is of the answer's float dtype: NumPy converts
    such an int to that dtype for the same loop (``1 + x`` is ``1.0 + x``), in some
    100 ns more than a float (lstm's ``1 / (1 + exp(-x))``). (Small ints only: exact in
    float32 too.)"""
    if ans.dtype.kind != "f" or any(
            (type(v) is ArrayMeta or type(v) is _np.ndarray) and v.dtype != ans.dtype
            or isinstance(v, _np.generic) for v in vals):
        return slots
    return [(float(s[0]), repr(float(s[0])), s[2]) if type(s) is tuple and type(s[0]) is int
            and -(1 << 24) <= s[0] <= 1 << 24 else s for s in slots]


def _as_float(made: tuple, traced: int, dtype, fun_name) -> tuple:
    """The template of a product of a boolean mask by a constant of ones: the mask cast
    (``_kernels.ones_mask``), a new array, not a ufunc's (no ``out=``)."""
    code, fast, label, _, view, key = made
    code = f"{{{traced}}}.astype({fun_name(dtype)})"
    return code, fast, f"{label} (a mask by ones: the mask as floats)", False, view, \
        (code, *key[1:2], False, *key[3:])


def _guard_code(guard: Guard, target: Instr, const, fun_name) -> tuple[str, list]:
    """The check of a guard, ``{0}`` its value: ``if ...: return MISS``, and its slots."""
    expected = guard.expected
    plain = guard.convert is _identity or guard.convert is getval
    if guard.convert is bool or (plain and type(expected) in (bool, _np.bool_)):
        return f"if {'not ' if expected else ''}{{0}}: return MISS", [target]
    if _float_predicate(guard.convert):
        return (f"if {'not ' if expected else ''}{fun_name(guard.convert)}({{0}}): "
                f"return MISS"), [target]
    if guard.convert in (int, float, complex) and _equal_is_same(expected):
        return (f"if {guard.convert.__name__}({{0}}) != {{1}}: return MISS",
                [target, (expected, repr(expected), repr(expected))])
    if plain and isinstance(expected, _np.integer):
        # a NumPy integer (a count of maxima): its type and value are its bits, checked
        # without ``_same``'s call
        return (f"if type({{0}}) is not {fun_name(type(expected))} or {{0}} != "
                f"{int(expected)!r}: return MISS"), [target]
    value = (expected, const(expected), None)
    if plain:
        return "if not _same({0}, {1}): return MISS", [target, value]
    # another conversion (an integer or boolean array of the value ...): checked converted
    return f"if not _same({fun_name(guard.convert)}({{0}}), {{1}}): return MISS", [target, value]


def _equal_is_same(v: Any) -> bool:
    """Whether ``x == v`` (a literal in the program) means ``x`` is ``v`` bit for bit: an
    int, or a float whose parts are finite and nonzero (0.0 == -0.0, nan != nan)."""
    if type(v) is int:
        return True
    if type(v) is float:
        return v != 0 and math.isfinite(v)
    if type(v) is complex:
        return _equal_is_same(v.real) and _equal_is_same(v.imag)
    return False


def _compiled(source: str, glob: dict, name: str, filename: str) -> Callable:
    """The function ``name`` that ``source`` defines, compiled into ``glob`` (compiling is
    a tenth to a third of a small program's emit: done at its first run, ``AtFirstRun``).
    Taken out of ``glob`` (which it never calls by name): a function in its own globals
    is a cycle, which would keep the program and its constants until the cycle
    collector ran, after its jitted function was dropped."""
    exec(compile(source, filename, "exec"), glob)
    return glob.pop(name)


class _Namespace:
    """The globals of a program: the functions it calls (``f0``, ``f1`` ...) and the
    constants it reads (``c0``, ``c1`` ...), each bound once."""

    def __init__(self):
        self.glob: dict[str, Any] = {"MISS": MISS, "RAISED": RAISED, "_same": same,
                                     "_copied_together": copied_together}
        self.consts: dict[int, str] = {}
        self.funs: dict[int, str] = {}
        self.large: list = []

    def const(self, v: Any) -> str:
        key = id(v)
        if key not in self.consts:
            self.consts[key] = f"c{len(self.consts)}"
            self.glob[self.consts[key]] = v
            if isinstance(v, _np.ndarray) and held_bytes(v) > LARGE_CONSTANT:
                self.large.append(v)
        return self.consts[key]

    def fun_name(self, f) -> str:
        if id(f) not in self.funs:
            self.funs[id(f)] = f"f{len(self.funs)}"
            self.glob[self.funs[id(f)]] = f
        return self.funs[id(f)]


def emit(n_inputs: int, record: list[StagingNode], out_items: list, guards: list[Guard],
         name: str, warn_large: bool = True) -> Program:
    """``record``: the nodes of the trace, in the order they were made; ``out_items``: per
    output leaf, a StagingNode (a staged value) or a constant. ``warn_large``: warn of the
    large constants the program keeps (``_warn_large``; else the caller did)."""
    space = _Namespace()
    glob, const, fun_name = space.glob, space.const, space.fun_name
    out_nodes = [o for o in out_items if isinstance(o, StagingNode)]
    nodes, unread = needed(record, out_nodes, guards)
    runs = []
    seqs = list(map(_SEQ, nodes))  # (read once: folding and ``Folded`` place nodes by them)
    if len(nodes) >= _roll.MIN_INSTRUCTIONS:
        runs = node_runs(nodes, seqs, [g.node for g in guards])
    length = len(nodes) - sum(r.period * (r.repeats - 3) for r in runs)
    tails = _float_tails(nodes, guards, out_nodes)
    if length > LONG_PROGRAM and not (length <= LONG_FLOAT_PROGRAM
                                      and _float_record(nodes, guards, tails)):
        if warn_large:
            _warn_large(name, [a for node in nodes if node.args is not node.argnums
                               for a in node.args if isinstance(a, _np.ndarray)] +
                        list(out_items))
        return interpret(n_inputs, nodes, out_items, guards, name)
    instrs, instr_of, floats = _lower(nodes, guards, const, fun_name,
                                      _escaping(nodes, out_nodes), runs, seqs, tails)
    units = roll(instrs)
    plan = Plan(units, const)
    outs = _output_texts(out_items, lambda node: plan.text(instr_of[node])[0], const)
    out_names = {plan.text(instr_of[o])[1] for o in out_nodes}
    params = ", ".join(f"x{i}" for i in range(n_inputs))
    # (a tail call is straight code: none is rolled into a loop)
    float_program = floats and plan.n_calls and all(instr_of[n].loop is None for n in tails)
    if float_program:  # (its names are taken before the program's own is chosen)
        glob["_exact"] = None
        for f in (_np.float64, math.isfinite, underflow_heard):
            fun_name(f)
        plan.watched = _watched(nodes, unread, guards, instr_of)
        plan.tails = {id(instr_of[n]) for n in tails}
    name = _free_name(name, glob)
    inputs = {instr_of[n].var for n in _inputs(nodes) if type(n.ans) is ArrayMeta}
    lines = plan.exact_lines(out_names, inputs)
    source = _exact_source(name, params, lines, outs)
    if float_program:
        glob["_exact"] = AtFirstRun(functools.partial(
            _compiled, source, dict(glob), name, f"<chainrule.jit {name}, exact>"))
        read = [instr_of[n].var for n in _inputs(nodes)]
        quiet = any(n.fun is not None and n.fun.fun not in _scalar_paths()
                    and n not in tails for n in nodes)
        lines, tail_lines = plan.fast_lines(out_names)
        source = _float_source(name, params, read, lines, tail_lines, out_items, outs, tails,
                               fun_name, fun_name(_np.errstate) if quiet else None)
    if warn_large:
        _warn_large(name, space.large)
    for ins in instrs:
        # (a loop and its instructions refer to each other, an unrolled one to itself as
        # its key: freed now)
        ins.loop = ins.key = None
    instr_of.release()
    call = AtFirstRun(functools.partial(_compiled, source, glob, name,
                                        f"<chainrule.jit {name}>"))
    return Program(source, call, source.count("\n"), plan.n_calls, glob)


def emit_at_first_run(n_inputs: int, record: list[StagingNode], out_items: list,
                      guards: list[Guard], name: str) -> Program:
    """``emit``'s program, emitted when it first runs: the call that traces answers from
    its trace, so a signature called once is never emitted (on a long record, emitting
    costs as much as the eager call). Until then the program keeps the record (``record``
    a list of its own: the session empties its own), and its source and sizes are empty.
    The caller warns of the large constants at the trace (``warn_large``); the array
    constants among the outputs must be copies of their own (``copied_together``): the
    caller was handed the arrays themselves."""
    program = Program("", None, 0, 0)
    program.call = AtFirstRun(functools.partial(
        _emitted, weakref.ref(program), n_inputs, record, out_items, guards, name))
    program.call.program = weakref.ref(program)
    return program


def _emitted(program, n_inputs: int, record: list[StagingNode], out_items: list,
             guards: list[Guard], name: str) -> Callable:
    """The function of ``emit_at_first_run``'s program, emitted now; its source and sizes
    filled in (``program``: a weak reference to it)."""
    emitted = emit(n_inputs, record, out_items, guards, name, warn_large=False)
    kept = program()
    if kept is not None:
        kept.source, kept.n_lines, kept.n_calls, kept.namespace = (
            emitted.source, emitted.n_lines, emitted.n_calls, emitted.namespace)
    call = emitted.call
    return call.made() if type(call) is AtFirstRun else call


def warn_large(name: str, record, guards: list[Guard], out_items: list) -> None:
    """At the trace, warn of the large arrays a program emitted later may keep: the
    constants the calls read (``Record.large``), the values guards compare with, the
    outputs that are constants."""
    _warn_large(name, [*record.large, *(g.expected for g in guards), *out_items])


def _warn_large(name: str, constants: list) -> None:
    """Warn of the constant arrays over ``LARGE_CONSTANT`` bytes a program keeps."""
    large = list({id(a): a for a in constants
                  if isinstance(a, _np.ndarray) and held_bytes(a) > LARGE_CONSTANT}.values())
    if large:
        sizes = ", ".join(f"{a.shape} {a.dtype}" for a in large)
        warnings.warn(
            f"chainrule.jit: {name} bakes in arrays that are not inputs ({sizes}, over 1 MB "
            f"each): values from globals, closures or numpy.random are constants of the "
            f"trace. Pass them as arguments to avoid copying them into the program.",
            JitWarning, stacklevel=user_stacklevel(),
        )


def emit_straight(n_inputs: int, record: list[StagingNode], out_items: list,
                  guards: list[Guard], name: str) -> tuple[Callable, str, dict, dict]:
    """The program of ``emit`` as straight code, one line per instruction (no loops, no
    float program, no ``del``, no ``out=``), which answers its local variables: for
    ``jit(check=True)``, which compares each value with eager evaluation's, and for
    reading a program that runs as a table. Answers the function, its source,
    ``node -> (variable, line number)`` for the calls, and its namespace."""
    space = _Namespace()
    out_nodes = [o for o in out_items if isinstance(o, StagingNode)]
    nodes, _ = needed(record, out_nodes, guards)
    instrs, instr_of, _ = _lower(nodes, guards, space.const, space.fun_name,
                                 _escaping(nodes, out_nodes), [])
    plan = Plan(instrs, space.const)
    name = _free_name(name, space.glob)
    lines = [plan.line(ins) for ins in instrs]
    params = ", ".join(f"x{i}" for i in range(n_inputs))
    body = "\n".join("    " + line for line in lines)
    source = f"def {name}({params}):\n{body + chr(10) if body else ''}    return locals()\n"
    exec(compile(source, f"<chainrule.jit {name}, checked>", "exec"), space.glob)
    where = {id(ins): k + 2 for k, ins in enumerate(instrs)}  # (line 1 is the def)
    placed = {node: (instr_of[node].var, where[id(instr_of[node])]) for node in nodes
              if node.fun is not None and id(instr_of[node]) in where}
    return space.glob[name], source, placed, space.glob


def _escaping(nodes: list[StagingNode], outputs: list[StagingNode]) -> set[StagingNode]:
    """The nodes whose memory the caller gets: the outputs, and what an output (or a node
    that escapes) may be a view of. Each is its own array, as in eager evaluation: two
    outputs never share memory, nor an output with an input, unless they did eagerly."""
    escaping = set(outputs)
    if not any(type(node.ans) is ArrayMeta for node in outputs):
        return escaping  # (only an array answer may be a view: a float program's are not)
    for node in reversed(nodes):
        if node in escaping and node.fun is not None and _may_view(node):
            escaping.update(node.parents)
    return escaping


def _may_view(node: StagingNode) -> bool:
    """Whether a call's answer may share memory with an operand (indexing, reshape,
    transpose ...): an array answer of anything but an elementwise ufunc or a function
    that makes new arrays (its entry's ``new_array``)."""
    if type(node.ans) is not ArrayMeta:
        return False
    raw = node.fun.fun
    ufunc = raw if isinstance(raw, _np.ufunc) else getattr(raw, "ufunc", None)
    if ufunc is not None and "out" not in node.kwargs:
        return False
    return not rules_of_call(node).new_array


def _output_texts(out_items: list, staged_text, const) -> list[str]:
    """The texts of the program's outputs: ``staged_text(node)`` for a staged value; an
    array that does not depend on the inputs is copied at the trace and again on every
    call, once for all its places, with the memory such arrays share kept
    (``copied_together``: the first call handed the caller the arrays themselves); other
    values are returned as they are."""
    arrays = list({id(o): o for o in out_items if isinstance(o, _np.ndarray)}.values())
    place = {id(a): k for k, a in enumerate(arrays)}
    group = arrays and \
        f"({_OUTPUT_COPIES} := _copied_together({const(copied_together(tuple(arrays)))}))"
    texts = []
    for o in out_items:
        if isinstance(o, StagingNode):
            texts.append(staged_text(o))
        elif isinstance(o, _np.ndarray):
            texts.append(f"{group}[{place[id(o)]}]")
            group = _OUTPUT_COPIES
        else:
            texts.append(const(o))
    return texts


_OUTPUT_COPIES = "o0"


def _free_name(name: str, glob: dict) -> str:
    """The function's name, made distinct from every name its program reads (``f0``,
    ``c3``, ``MISS``, ``range`` ...: a user function may be named so), and from Python's
    keywords."""
    while name in glob or name in _BUILTINS or keyword.iskeyword(name):
        name += "_"
    return name


_BUILTINS = frozenset(dir(builtins))


def _exact_source(name: str, params: str, lines: list[str], outs: list[str]) -> str:
    """The program of NumPy calls: where one raises (a failed factorisation, a warning
    the caller's filters make an error ...), or a guard's conversion does, it answers
    ``RAISED`` and the call is evaluated eagerly."""
    ret = f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})"
    if not lines:
        return f"def {name}({params}):\n    {ret}\n"
    body = ["try:", *("    " + line for line in lines), "    " + ret,
            "except Exception:  # eager evaluation raises it, or the function catches it",
            "    return RAISED"]
    text = "\n".join("    " + line for line in body)
    return f"def {name}({params}):\n{text}\n"


def _float_source(name: str, params: str, read: list[str], lines: list[str],
                  tail_lines: list[str], out_items: list, outs: list[str], tails: frozenset,
                  fun_name, errstate: str | None) -> str:
    """The float program: the same operations on Python floats (IEEE-exact as NumPy's
    float64 scalars; the same math functions as chainrule's scalar path). Wherever NumPy
    would warn, the exact program (NumPy scalars) answers instead, with NumPy's values
    and warnings: where an input is not finite, where the caller's error state hears of
    underflows (Python's floats never report one), where Python raises instead of
    answering inf or nan (x / 0, math's domain and overflow errors), and where an
    overflow made an inf or nan that reached an output or a value the program checks
    (``_watched``). ``read``: the inputs it reads (the float scalars; an input it does not
    read may be anything, such as an empty array whose answer is a constant).
    ``errstate``: NumPy's ``errstate``, where the program calls NumPy's functions (see
    ``_float_call``): they run with their warnings off, which the exact program gives
    where an answer is not finite (a warning of the float program would be a second).
    ``tail_lines``: the calls of ``tails`` (``_float_tails``), made once the floats are
    checked, as the exact program would make them: their answers are outputs."""
    f64 = fun_name(_np.float64)
    finite = fun_name(math.isfinite)
    floats = [isinstance(item, StagingNode) and item not in tails for item in out_items]
    staged = [o for o, is_float in zip(outs, floats) if is_float]
    ret = [f"{f64}({o})" if is_float else o for o, is_float in zip(outs, floats)]
    entry = [f"{finite}({x})" for x in read]
    body = []
    checks = " and ".join(entry)
    heard = f"{fun_name(underflow_heard)}()"
    body.append(f"if {f'not ({checks}) or ' if checks else ''}{heard}:"
                f"  # NumPy warns on inf and nan, and on underflows if told to")
    body.append(f"    return _exact({params})")
    body.append("_watch = 0.0")
    lines = lines or ["pass  # (every call is a tail call)"]
    if errstate is None:
        body += ["try:"] + ["    " + line for line in lines]
    else:
        body += ["try:", f"    with {errstate}(all='ignore'):  # (the exact program warns)"]
        body += ["        " + line for line in lines]
    body.append("except (ArithmeticError, ValueError):  # NumPy answers inf or nan, and warns")
    body.append(f"    return _exact({params})")
    body.append("except Exception:  # eager evaluation raises it, or the function catches it")
    body.append("    return RAISED")
    checks = " and ".join(["_watch == _watch", *(f"{finite}({o})" for o in staged)])
    body.append(f"if not ({checks}):  # NumPy's nan and inf, with its warnings")
    body.append(f"    return _exact({params})")
    if tail_lines:
        body += ["try:", *("    " + line for line in tail_lines),
                 "except Exception:  # eager evaluation raises it, or the function catches it",
                 "    return RAISED"]
    body.append(f"return ({', '.join(ret)}{',' if len(ret) == 1 else ''})")
    text = "\n".join("    " + line for line in body)
    return f"def {name}({params}):\n{text}\n"


def _watched(nodes: list[StagingNode], unread: list[StagingNode], guards: list[Guard],
             instr_of) -> set[int]:
    """The values a float program checks are finite, besides its outputs: where an
    overflow made an inf (Python's floats do not warn, NumPy's do), the inf or the nan
    it makes goes on through + - * and math's functions (or makes them raise) to an
    output or to one of these: a value nothing reads (``unread``: see ``needed``), a
    divisor (x / inf is 0), the operand of exp (exp(-inf) is 0), a value a guard reads.
    The entry's ``finite_from_inf`` names the divisor's and exp's positions; a call of
    NumPy's own function (``_float_call``) has every traced operand checked.
    Answers ids of the instructions (a loop's body instruction for all its iterations)."""
    watched = {g.node for g in guards}
    positions: dict = {None: ()}  # fun -> its finite_from_inf (one rule look-up per function)
    for node in nodes:
        fun = node.fun
        try:
            at = positions[fun]
        except KeyError:
            # (NumPy's own functions, as tanh(inf) = 1: every traced operand)
            at = positions[fun] = rules_of_call(node).finite_from_inf \
                if fun.fun in _scalar_paths() else _EVERY
        if not at or not node.parents:
            continue
        if at is _EVERY:
            watched.update(node.parents)
            continue
        argnums = node.argnums
        for i in at:
            if i in argnums:
                watched.add(node.parents[argnums.index(i)])
    watched.update(unread)
    ids = set()
    for node in watched:
        ins = instr_of[node]
        if ins.kind == "call":
            ids.add(id(ins if ins.loop is None else ins.loop.body[ins.offset]))
    return ids


_EVERY = "every operand"


def _elementwise_array(raw, node: StagingNode, vals: list) -> bool:
    """Whether the call is an elementwise ufunc (no ``out=`` yet) answering a new ndarray."""
    ufunc = raw if isinstance(raw, _np.ufunc) else getattr(raw, "ufunc", None)
    return (
        ufunc is not None
        and ufunc.signature is None
        and ufunc.nout == 1
        and type(node.ans) is ArrayMeta
        and "out" not in node.kwargs
        and all(type(a) is ArrayMeta or type(a) is _np.ndarray or _np.isscalar(a) for a in vals)
    )


def _what(g: Guard) -> str:
    conv = getattr(g.convert, "__name__", "value")
    if conv in ("_identity", "getval"):
        return "the value decided at trace time"
    shown = repr(g.expected)
    if "\n" in shown or len(shown) > 60:  # (a comment is one line)
        return f"{conv}() of the value decided at trace time"
    return f"{conv}() was {shown}"
