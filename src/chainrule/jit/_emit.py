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
from ._roll import Loop, roll
from ._staging import Guard, StagingNode, _identity

MISS = object()  # what an emitted program answers when a guard fails

LARGE_CONSTANT = 1 << 20  # bytes: a baked-in array this large is warned about

# chainrule.explain's hook (report.code): a function StagingNode -> text appended to the
# comment of the node's line (the user's source line). None, the default, adds nothing.
annotate = None


class Program:
    """One compiled variant: ``run(*leaves)`` answers the output leaves or ``MISS``."""

    def __init__(self, source: str, run, n_lines: int, n_calls: int):
        self.source = source
        self.run = run
        self.n_lines = n_lines
        self.n_calls = n_calls  # primitive calls one run makes (a rolled loop's, each time)


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


class Instr:
    """One emitted operation. ``code`` (``fast``: its form in a float program, or None)
    has ``{j}`` where operand j goes; an operand (``slots[j]``) is an earlier Instr or a
    constant ``(value, text, float text)``. ``key`` is what an iteration of a rolled loop
    must repeat (see ``_roll``); ``loop``/``offset``/``iteration`` place a rolled one."""

    __slots__ = ("kind", "node", "var", "code", "fast", "slots", "comment", "key", "array",
                 "fresh", "reuse", "view", "pos", "loop", "offset", "iteration")

    def __init__(self, kind: str, node, code: str | None, fast: str | None, slots: list,
                 comment: str):
        self.kind = kind  # "input", "convert" (an input as a NumPy scalar), "call", "guard"
        self.node = node
        self.var = ""
        self.code = code
        self.fast = fast
        self.slots = slots
        self.comment = comment
        self.array = False  # an ndarray answer (worth a del)
        self.fresh = False  # a new array of an elementwise ufunc
        self.reuse: tuple = ()  # operands whose memory it may take as out=
        self.view = False  # its answer may share an operand's memory
        self.loop = None
        self.key: Any = self  # (only itself: never rolled)
        self.pos = -1  # (an input: before every instruction)


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _lower(nodes: list[StagingNode], guards: list[Guard], const, fun_name):
    """The instructions of the needed nodes, and whether they form a float program."""
    guards_by_node: dict[int, list[Guard]] = {}
    for g in guards:
        guards_by_node.setdefault(id(g.node), []).append(g)
    instr_of: dict[int, Instr] = {}
    cse: dict[tuple, Instr] = {}
    guarded: set[tuple] = set()
    instrs: list[Instr] = []
    floats = _float_inputs(nodes, guards)
    multiply = anp.multiply.fun
    memo: dict[tuple, tuple] = {}
    for node in nodes:
        fun = node.fun
        if fun is None:
            ins = instr_of[id(node)] = Instr("input", node, None, None, [], "")
            ins.var = f"x{node.index}"
            if type(node.ans) in _AS_NUMPY:  # the trace boxed it as a NumPy scalar
                numpy_type = _AS_NUMPY[type(node.ans)]
                convert = Instr("convert", node, f"{fun_name(numpy_type)}({ins.var})", None,
                                [], f"as {numpy_type.__name__}, as traced")
                convert.var = ins.var
                instrs.append(convert)
        else:
            raw = fun.fun
            args = node.args
            argnums = node.argnums
            parents = node.parents
            if len(argnums) == len(args):  # every argument traced (the common case)
                slots = [instr_of[id(p)] for p in parents]
                vals = [p.ans for p in parents]
            else:
                slots, vals = [], []
                it = iter(parents)
                for i, a in enumerate(args):
                    if i in argnums:
                        parent = next(it)
                        slots.append(instr_of[id(parent)])
                        vals.append(parent.ans)
                    else:
                        text = repr(a) if _simple_literal(a) and type(a) is not str else const(a)
                        fast = repr(float(a)) if floats and _float_constant(a) else None
                        slots.append((a, text, fast))
                        vals.append(a)
            if node.kwargs:
                kwmap = {k: _escaped(repr(v) if _simple_literal(v) else const(v))
                         for k, v in node.kwargs.items()}
                kwtexts = [f"{k}={v}" for k, v in kwmap.items()]
            else:
                kwmap, kwtexts = {}, []
            key = (raw, *[s if type(s) is Instr else s[1] for s in slots], *kwtexts)
            alias = cse.get(key)
            if alias is None and raw is multiply and len(args) == 2 and len(argnums) == 1:
                # x * 1 is x, bit for bit, when type, shape, dtype and layout agree
                (i,) = argnums
                if _is_one(args[1 - i]) and _same_layout(node.ans, args[i]):
                    alias = slots[i]
            if alias is not None:
                instr_of[id(node)] = alias
            else:
                ans = node.ans
                # what decides the code: the function, which operands are traced, their
                # types, the constants and keywords (moveaxis reads the operand's ndim)
                sig = (fun, argnums, type(ans), *map(type, vals), *kwtexts,
                       *[s[1] for s in slots if type(s) is tuple])
                made = memo.get(sig) if raw is not _MOVEAXIS else None
                if made is None:
                    made = memo[sig] = _template(raw, fun, node, vals, len(slots), kwmap,
                                                 kwtexts, fun_name)
                code, fast, label, elementwise, view = made
                if fast is None:
                    floats = False
                note = annotate(node) if annotate is not None else ""
                ins = instr_of[id(node)] = cse[key] = Instr(
                    "call", node, code, fast if floats else None, slots, f"{label}{note}")
                ins.array = type(ans) is np.ndarray
                if elementwise:
                    ins.fresh = True
                    ins.reuse = tuple(
                        j for j, s in enumerate(slots) if type(s) is Instr and s.fresh
                        and s.node.ans.shape == ans.shape and s.node.ans.dtype == ans.dtype
                    )
                ins.view = view
                ins.key = (code, tuple(type(s) is Instr for s in slots), ins.fresh,
                           ins.reuse, view, ins.array)
                instrs.append(ins)
        for g in guards_by_node.get(id(node), ()):
            target = instr_of[id(node)]
            code, slots = _guard_code(g, target, const, fun_name)
            seen = (code, target, *[s[1] for s in slots[1:]])
            if seen in guarded:
                continue  # the same check, already made
            guarded.add(seen)
            ins = Instr("guard", node, code, code, slots, f"guard: {_what(g)}")
            ins.key = (code, tuple(type(s) is Instr for s in slots))
            instrs.append(ins)
    for pos, ins in enumerate(instrs):
        ins.pos = pos
    return instrs, instr_of, floats


def _template(raw, fun, node: StagingNode, vals: list, n_slots: int, kwmap: dict,
              kwtexts: list, fun_name) -> tuple:
    """What a call's instruction is, from what decides it (``_lower`` keeps the answer
    for the next call like it): its code, its float-program code (None where it has
    none), its label, whether it makes a new array elementwise, whether its answer may
    be a view of an operand."""
    holes = [f"{{{j}}}" for j in range(n_slots)]
    if _scalar_operator(raw, node):
        code = f" {_OPERATORS[raw]} ".join(holes)
    else:
        code = direct_call(raw, vals, holes, kwmap, fun_name) or (
            f"{fun_name(raw)}({', '.join(holes + kwtexts)})"
        )
    fast = _float_call(raw, holes, fun_name) if _float_node(node) else None
    label = getattr(fun, "__name__", None) or getattr(raw, "__name__", "?")
    elementwise = _elementwise_array(raw, node) and code.endswith(")")
    view = not elementwise and type(node.ans) is np.ndarray and raw not in _NEW_ARRAYS
    return code, fast, label, elementwise, view


_MOVEAXIS = np.moveaxis


def _guard_code(guard: Guard, target: Instr, const, fun_name) -> tuple[str, list]:
    """The check of a guard, ``{0}`` its value: ``if ...: return MISS``, and its slots."""
    expected = guard.expected
    if guard.convert is bool or type(expected) in (bool, np.bool_):
        return f"if {'not ' if expected else ''}{{0}}: return MISS", [target]
    if guard.convert in (int, float, complex) and _simple_literal(expected):
        return (f"if {guard.convert.__name__}({{0}}) != {{1}}: return MISS",
                [target, (expected, repr(expected), repr(expected))])
    value = (expected, const(expected), None)
    if guard.convert is _identity or guard.convert is getval:
        return "if not _same({0}, {1}): return MISS", [target, value]
    # another conversion (an integer or boolean array of the value ...): checked converted
    return f"if not _same({fun_name(guard.convert)}({{0}}), {{1}}): return MISS", [target, value]


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

    out_nodes = [o for o in out_items if isinstance(o, StagingNode)]
    nodes = _needed(out_nodes, guards)
    instrs, instr_of, floats = _lower(nodes, guards, const, fun_name)
    units = roll(instrs)
    plan = _Plan(units, const)
    outs = [plan.text(instr_of[id(o)])[0] if isinstance(o, StagingNode) else const(o)
            for o in out_items]
    out_names = {plan.text(instr_of[id(o)])[1] for o in out_nodes}
    params = ", ".join(f"x{i}" for i in range(n_inputs))
    inputs = {instr_of[id(n)].var for n in nodes if n.fun is None and type(n.ans) is np.ndarray}
    lines = plan.exact_lines(out_names, inputs)
    body = "\n".join("    " + line for line in lines)
    ret = f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})"
    source = f"def {name}({params}):\n{body + chr(10) if body else ''}{ret}\n"
    if floats and plan.n_calls:
        glob["_exact"] = _Later(source, dict(glob), name)
        source = _float_source(name, params, plan.fast_lines(), out_items, outs, fun_name)
    if large:
        sizes = ", ".join(f"{a.shape} {a.dtype}" for a in large)
        warnings.warn(
            f"chainrule.jit: {name} bakes in arrays that are not inputs ({sizes}, over 1 MB "
            f"each): values from globals, closures or numpy.random are constants of the "
            f"trace. Pass them as arguments to avoid copying them into the program.",
            stacklevel=4,
        )
    for ins in instrs:
        ins.loop = None  # (a loop and its instructions refer to each other: freed now)
    code = compile(source, f"<chainrule.jit {name}>", "exec")
    exec(code, glob)
    return Program(source, glob[name], len(lines), plan.n_calls)


class _Plan:
    """The operand texts of every unit (straight instruction or loop), names assigned in
    order. Planning first lets a later reader ask an earlier loop to keep a value in a
    list; the lines come after (``exact_lines``, ``fast_lines``)."""

    def __init__(self, units: list, const):
        self.units = units
        self.const = const
        self.counts = {"v": 0, "s": 0, "t": 0, "p": 0}
        self.n_calls = 0  # primitive calls one run of the program makes
        self.texts: dict[int, tuple] = {}  # id(unit or (loop, offset)) -> slot texts
        self.before: dict[int, list] = {}  # id(loop) -> [(name, exact, fast, reads)]
        self.copies: dict[int, list] = {}  # id(loop) -> [(copy name, offset)]
        self.store_inits: dict[tuple, tuple] = {}  # (id(loop), offset) -> (text, name read)
        for unit in units:
            if type(unit) is Loop:
                self._plan_loop(unit)
            else:
                if unit.kind == "call":
                    unit.var = self._name("v")
                    self.n_calls += 1
                self.texts[id(unit)] = [self._operand(s) for s in unit.slots]

    def _name(self, prefix: str) -> str:
        n = self.counts[prefix]
        self.counts[prefix] = n + 1
        return f"{prefix}{n}"

    def text(self, q: Instr) -> tuple[str, str]:
        """A reference to ``q`` from after it (outside its loop): (text, the name read)."""
        loop = q.loop
        if loop is None:
            return q.var, q.var
        if q.iteration == loop.repeats - 1:  # the loop's variable holds it after the loop
            loop.exported.add(q.offset)
            name = loop.body[q.offset].var
            return name, name
        store = self._stored(loop, q.offset)
        return f"{store}[{self._index(q)}]", store

    def _stored(self, loop: Loop, offset: int) -> str:
        """The list in which ``loop`` keeps the values of ``offset``; where the offset is
        carried, its value before the first iteration comes first (item 0), so that a
        backward pass reading the values each iteration started from reads one list."""
        if offset not in loop.stored:
            loop.stored[offset] = self._name("s")
            if offset in loop.inits:
                self.store_inits[id(loop), offset] = self.text(loop.inits[offset])
        return loop.stored[offset]

    @staticmethod
    def _index(q: Instr) -> int:
        return q.iteration + (q.offset in q.loop.inits)

    def _operand(self, slot) -> tuple[str, str | None, str | None]:
        """(exact text, float text, the name read) of a straight instruction's operand."""
        if type(slot) is tuple:
            return slot[1], slot[2], None
        text, read = self.text(slot)
        return text, text, read

    def _plan_loop(self, loop: Loop) -> None:
        before: list = []
        copies: list = []
        carried_names: dict[int, str] = {}
        inited: set[int] = set()
        for ins in loop.body:
            if ins.kind == "call":
                ins.var = self._name("v")
        for k, ins in enumerate(loop.body):
            texts = []
            for form in loop.operands[k]:
                kind = form[0]
                if kind == "local":
                    name = loop.body[form[1]].var
                    texts.append((name, name, name))
                elif kind == "carry":
                    kk, init = form[1], form[2]
                    name = loop.body[kk].var
                    if kk < k:  # overwritten by now in this iteration: read a copy
                        if kk not in carried_names:
                            carried_names[kk] = self._name("p")
                            copies.append((carried_names[kk], kk))
                            self._before(before, carried_names[kk], init)
                        name = carried_names[kk]
                    elif kk not in inited:
                        inited.add(kk)
                        self._before(before, name, init)
                    texts.append((name, name, name))
                elif kind == "inv":
                    text, read = self.text(form[1])
                    texts.append((text, text, read))
                elif kind == "seq":
                    texts.append(self._sequence(form[1], before))
                elif kind == "const":
                    texts.append((form[1][1], form[1][2], None))
                else:  # cseq: a tuple of the constants, indexed by the iteration
                    values = [c[0] for c in form[1]]
                    exact = f"{self.const(tuple(values))}[i]"
                    fast = None
                    if all(c[2] is not None for c in form[1]):
                        fast = f"{self.const(tuple(float(v) for v in values))}[i]"
                    texts.append((exact, fast, None))
            self.texts[id(ins)] = texts
        self.before[id(loop)] = before
        self.copies[id(loop)] = copies
        self.n_calls += loop.repeats * sum(ins.kind == "call" for ins in loop.body)

    def _before(self, before: list, name: str, init: Instr) -> None:
        text, read = self.text(init)
        before.append((name, text, text, (read,)))

    def _sequence(self, items: list, before: list) -> tuple[str, str, str]:
        """A per-iteration operand made before the loop: read from the list an earlier
        loop keeps (when they are one offset of it, or the value it started from, at
        items ``a + b*i``), else from a tuple built before the loop."""
        index = self._affine(items)
        if index is not None:
            loop, offset, a, step = index
            store = self._stored(loop, offset)
            term = "i" if step == 1 else f"{step} * i"
            if a:
                term = f"{a} - i" if step == -1 else f"{a} + {term}"
            text = f"{store}[{term}]"
            return text, text, store
        name = self._name("t")
        parts = [self.text(q) for q in items]
        tuple_text = f"({', '.join(t for t, _ in parts)},)"
        before.append((name, tuple_text, tuple_text, tuple(r for _, r in parts)))
        return f"{name}[i]", f"{name}[i]", name

    @staticmethod
    def _affine(items: list):
        """``(loop, offset, a, b)`` where item r is the value of ``offset`` that ``loop``
        keeps at list index ``a + b*r`` (see ``_stored``), else None."""
        inside = next((q for q in items if q.loop is not None), None)
        if inside is None:
            return None
        loop, offset = inside.loop, inside.offset
        init = loop.inits.get(offset)
        shift = init is not None
        indices = []
        for q in items:
            if q.loop is loop and q.offset == offset:
                indices.append(q.iteration + shift)
            elif q is init:
                indices.append(0)
            else:
                return None
        a, step = indices[0], indices[1] - indices[0]
        if step == 0 or any(n != a + step * r for r, n in enumerate(indices)):
            return None
        return loop, offset, a, step

    # ---------------------------------------------------------------- lines
    def _line(self, ins: Instr, texts: list, fast: bool) -> str | None:
        if fast:
            if ins.kind == "convert":
                return None
            code = ins.fast.format(*[t[1] for t in texts])
            comment = ins.comment.split(" @ ")[0] if ins.kind == "call" else ins.comment
        else:
            code = ins.code.format(*[t[0] for t in texts])
            comment = ins.comment
        if ins.kind == "guard":
            return f"{code}  # {comment}"
        return f"{ins.var} = {code}  # {comment}"

    def fast_lines(self) -> list[str]:
        lines: list[str] = []
        for unit in self.units:
            if type(unit) is Loop:
                lines += self._loop_lines(unit, True)[0]
            else:
                line = self._line(unit, self.texts[id(unit)], True)
                if line is not None:
                    lines.append(line)
        return lines

    def _loop_lines(self, loop: Loop, fast: bool, outputs: set | None = None,
                    inplace: frozenset = frozenset()) -> tuple[list[str], list[str], dict]:
        """The loop's lines, the names it reads from before it (once per read), and the
        accumulators it could update in place (offset -> the name its first value comes
        from; ``inplace``: those the caller found free to be written into). ``outputs``:
        None for the float program, else the exact program's (which gets dels and
        ``out=``)."""
        lines: list[str] = []
        outside: list[str] = []
        for offset, store in sorted(loop.stored.items(), key=lambda kv: kv[1]):
            var = loop.body[offset].var
            init = self.store_inits.get((id(loop), offset))
            if init is None:
                lines.append(f"{store} = [None] * {loop.repeats}  # {var} of each iteration")
            else:
                lines.append(f"{store} = [None] * {loop.repeats + 1}  # {var} before the "
                             f"loop and after each iteration")
                lines.append(f"{store}[0] = {init[0]}")
                outside.append(init[1])
        starts = {}  # carried variable -> the name its first value comes from
        for name, exact, fast_text, reads in self.before[id(loop)]:
            outside += reads
            lines.append(f"{name} = {fast_text if fast else exact}")
            if exact == reads[0]:
                starts[name] = exact
        body: list[str] = []
        reads: list[tuple] = []
        reusable: dict[int, list[str]] = {}
        viewed: set[str] = set()
        local = {ins.var for ins in loop.body if ins.var}
        copied = {offset for _, offset in self.copies[id(loop)]}
        accumulators: dict[int, str] = {}
        for ins in loop.body:
            texts = self.texts[id(ins)]
            line = self._line(ins, texts, fast)
            if line is None:
                continue
            names = tuple(t[2] for t in texts if t[2] is not None)
            outside += [n for n in names if n not in local]
            if ins.reuse and outputs is not None:
                k = ins.offset
                # ``a = a + b`` carried from the previous iteration: its old value dies here
                if any(loop.operands[k][j][:2] == ("carry", k) for j in ins.reuse) and \
                        k not in loop.stored and k not in copied and ins.var in starts and \
                        loop.inits[k].fresh:
                    accumulators[k] = starts[ins.var]
                if k in inplace:
                    line = _with_out(line, ins.var)
                else:
                    reusable[len(body)] = _plain_names(texts, ins.reuse)
            if ins.view:
                viewed.update(names)
            body.append(line)
            reads.append(names)
            if ins.offset in loop.stored:
                shift = " + 1" if ins.offset in loop.inits else ""
                body.append(f"{loop.stored[ins.offset]}[i{shift}] = {ins.var}")
                reads.append((ins.var,))
        for copy, offset in self.copies[id(loop)]:
            body.append(f"{copy} = {loop.body[offset].var}")
            reads.append((loop.body[offset].var,))
        if outputs is not None:  # the exact program: dels and out= inside the body
            kept = {loop.body[k].var for k in loop.exported} | set(loop.stored.values())
            kept |= {loop.body[k].var for k in loop.stored}
            kept |= {name for name, *_ in self.before[id(loop)]}
            kept |= {copy for copy, _ in self.copies[id(loop)]}
            dying = {ins.var for ins in loop.body if ins.array} - kept - outputs
            body = _free_after_last_use(body, reads, dying, {
                i: [n for n in names if n not in viewed] for i, names in reusable.items()
            })
            self.viewed_outside |= viewed - local
            accumulators = {k: name for k, name in accumulators.items()
                            if loop.body[k].var not in viewed}
        lines.append(f"for i in range({loop.repeats}):  # {len(loop.body)} operations, "
                     f"{loop.repeats} times (a loop of the traced code, rolled)")
        lines += ["    " + line for line in body]
        return lines, outside, accumulators

    def exact_lines(self, out_names: set[str], inputs: set[str]) -> list[str]:
        """The exact program's lines, with ``del`` after each array's last use (the
        ``inputs`` that are arrays too) and ``out=`` where an elementwise ufunc may write
        into an operand that dies (in a loop, an accumulator whose first value is an
        array nothing else reads)."""
        entries: list[str] = []
        reads: list[tuple] = []
        reusable: dict[int, list[str]] = {}
        viewing: set[int] = set()
        arrays: set[str] = set(inputs)
        self.viewed_outside: set[str] = set()
        loops: dict[int, tuple] = {}  # entry -> (loop, its reads, its accumulators)
        for unit in self.units:
            if type(unit) is Loop:
                text, outside, accumulators = self._loop_lines(unit, False, out_names)
                loops[len(entries)] = (unit, outside, accumulators)
                entries.append("\n".join(text))
                reads.append(tuple(outside))
                arrays.update(ins.var for ins in unit.body if ins.array)
                arrays.update(unit.stored.values())
                # a variable whose value a list also holds is not rewritten in place
                self.viewed_outside.update(unit.body[k].var for k in unit.stored)
            else:
                texts = self.texts[id(unit)]
                names = tuple(t[2] for t in texts if t[2] is not None)
                if unit.kind == "convert":
                    names = (unit.var,)
                if unit.reuse:
                    reusable[len(entries)] = _plain_names(texts, unit.reuse)
                if unit.view:
                    viewing.add(len(entries))
                if unit.array:
                    arrays.add(unit.var)
                entries.append(self._line(unit, texts, False))
                reads.append(names)
        arrays -= out_names
        if not arrays:
            return "\n".join(entries).split("\n") if entries else []
        viewed = {name for i in viewing for name in reads[i]} | self.viewed_outside
        last: dict[str, int] = {}
        for i, names in enumerate(reads):
            for name in names:
                last[name] = i
        for i, (loop, outside, accumulators) in loops.items():
            # an accumulator is updated in place when the array it starts from dies at
            # the loop, read by nothing else in it
            free = frozenset(k for k, start in accumulators.items() if start in arrays
                             and start not in viewed and last.get(start) == i
                             and outside.count(start) == 1)
            if free:
                entries[i] = "\n".join(self._loop_lines(loop, False, out_names, free)[0])
        lines = _free_after_last_use(entries, reads, arrays, {
            i: [n for n in names if n not in viewed] for i, names in reusable.items()
        })
        return "\n".join(lines).split("\n")


def _with_out(line: str, name: str) -> str:
    """A call's line with ``out=name`` (the call ends its code, before the comment)."""
    code, comment = line.split("  # ", 1)
    return f"{code[:-1]}, out={name})  # {comment}"


def _plain_names(texts: list, slots: tuple) -> list[str]:
    """The operands among ``slots`` read as a plain variable (not ``s3[i]``, an item of
    a list a loop keeps: its memory is not the variable's to reuse)."""
    return [texts[j][0] for j in slots if texts[j][0] == texts[j][2]]



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
            line = _with_out(line, into[0])
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
