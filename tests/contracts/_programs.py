"""Random Python + NumPy programs, full of the hazards that break transforms.

``generate(rng, hazards=...)`` writes the source of a function ``f(x, s)`` (``x`` a float
vector of length ``n``, ``s`` a scalar) as a NumPy user writes one, compiles it and returns
a ``Program``: its source (printed when a contract fails, so the failure is a reproducible
program), the function, the closure arrays it reads and writes, and ``inputs(rng, k)``,
arguments whose values take different branches.

Every statement comes from a template tagged with the hazard it exercises; a contract asks
only for the hazards its transform promises to handle (sparse patterns ask for masks and
branches, not for exceptions). The hazards:

  nonsmooth      abs, maximum, where, clip, sort, argsort indexing, floor, sign
  signed_zero    ceil/trunc/fix/round of small negatives, arctan2 of a rounded value,
                 math.copysign of a float() of the data
  convert        float(), int(), round() of traced values, indices read from the data
  branch         if/else on traced values (including on nan tests)
  loop           while and for loops whose trip count or body depends on the data
  closure        closure arrays written inside f (basis vectors; a write after a use, also
                 through a view of one made before the call, far down a list f reads)
  random         numpy.random draws (global state, chainrule.numpy.random)
  raise          calls that raise on some inputs (cholesky, an explicit raise)
  try_except     the user's try/except around a call that raises on some inputs
  tuple_answer   nonzero, one-argument where, histogram
  inplace        in-place updates of intermediates (+=, setitem, slices) and their aliases,
                 NumPy's write functions (copyto, put, putmask, place), ``v.shape = ...``
  nested         grad inside the program
  index          fancy indices, slices, concatenate
  mask           comparison masks in products (np.dot of a mask, diag of a mask), and
                 NumPy's where= into out= arrays (a ufunc's output mask, into an array,
                 its reversed view or a 0-d array; a reduction's)
  stop_gradient  stop_gradient in products
  alias_out      outputs that are an input, a closure array, one array twice, x * 1
  tree_out       dict (in the function's own key order) and tuple outputs
  edge_values    inputs holding 0, -0.0, nan, ±inf, 1e308, subnormals
  wide           an n x n matrix of the data less a constant table of WIDE_ROWS rows,
                 broadcast to n x WIDE_ROWS x n: min or max over its short last axis, sums
                 over its long middle one (the faster forms of jit's programs and eager
                 rules: a short axis's extremes, a cotangent summed over the rows, negated)
"""

from __future__ import annotations

import dataclasses
import linecache
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as onp

import chainrule
import chainrule.numpy as cnp

__all__ = ["HAZARDS", "Program", "Template", "generate"]

HAZARDS = frozenset({
    "nonsmooth", "signed_zero", "convert", "branch", "loop", "closure", "random", "raise",
    "try_except", "tuple_answer", "inplace", "nested", "index", "mask", "stop_gradient",
    "alias_out", "tree_out", "edge_values", "wide",
})

VIEW_AT = 70  # where a view list's view is (past the 64 items a plain search reads)
# the wide template's table: rows enough that n x rows x n arrays pass the faster forms'
# sizes at n = 3 (jit's negated sums over an axis from 32,768 entries)
WIDE_ROWS = 4000
_WIDE_TABLE = onp.linspace(-2.0, 2.0, WIDE_ROWS * 6).reshape(6, WIDE_ROWS).T.copy()
_WIDE_TABLE.flags.writeable = False
EDGE_VALUES = (0.0, -0.0, onp.nan, onp.inf, -onp.inf, 1e308, -1e308, 5e-324, -5e-324, 1e-308)


@dataclasses.dataclass
class Program:
    source: str
    fn: Callable
    n: int
    dtype: onp.dtype
    hazards: frozenset
    output: str  # "vec", "scalar" or "tree"
    namespace: dict
    closures: dict  # name -> initial contents of the closure arrays f reads or writes
    view_lists: dict = dataclasses.field(default_factory=dict)  # see _Builder.view_list

    def reset(self) -> None:
        """Put every closure array back to its first contents, in place (the same objects:
        a transform that captured them sees the reset)."""
        for name, initial in self.closures.items():
            self.namespace[name][...] = initial

    def mutate_closures(self, rng: onp.random.Generator) -> None:
        """Change the closure arrays' contents in place, as a user does between calls."""
        for name in self.closures:
            arr = self.namespace[name]
            arr[...] = rng.standard_normal(arr.shape).astype(arr.dtype)
            self.closures[name] = arr.copy()

    def inputs(self, rng: onp.random.Generator, k: int, edges: bool | None = None) -> list:
        """``k`` argument tuples ``(x, s)``: vectors of mixed signs and scales (so branches
        go both ways), ``s`` a Python float or a NumPy scalar; with ``edges`` (default: when
        the program asks for edge values) some entries are 0, -0.0, nan, inf, huge, tiny."""
        edges = "edge_values" in self.hazards if edges is None else edges
        out = []
        for i in range(k):
            x = rng.standard_normal(self.n) * rng.choice([0.3, 1.0, 3.0])
            if i % 3 == 1:
                x = -x
            if edges and i % 2 == 1:
                for j in rng.choice(self.n, size=min(2, self.n), replace=False):
                    x[j] = rng.choice(EDGE_VALUES)
            x = x.astype(self.dtype)
            s = float(rng.standard_normal() * 1.5)
            if edges and i % 4 == 3:
                s = float(rng.choice([0.0, -0.0, onp.nan, onp.inf]))
            s = s if i % 2 == 0 else self.dtype.type(s)
            out.append((x, s))
        return out

    def __str__(self) -> str:
        consts = "".join(f"{k} = {v.tolist()!r}\n" for k, v in self.closures.items())
        consts += "".join(f"{k} = [None] * {VIEW_AT} + [{c}[:]]\n"
                          for k, c in self.view_lists.items())
        if "T[" in self.source:  # (the wide template's table)
            consts += (f"T = onp.linspace(-2.0, 2.0, {WIDE_ROWS} * 6).reshape(6, {WIDE_ROWS})"
                       f".T.copy()\n")
        head = f"# n = {self.n}, dtype {self.dtype}, hazards {sorted(self.hazards)}\n"
        return head + consts + self.source


@dataclasses.dataclass(frozen=True)
class Template:
    """One statement kind: ``write(g)`` emits lines through the builder ``g``."""

    hazard: str | None  # None: plain arithmetic, always allowed
    write: Callable[[_Builder], None]
    weight: float = 1.0


class _Builder:
    """The program being written: its lines, its vector and scalar variables."""

    def __init__(self, rng: onp.random.Generator, n: int, dtype: onp.dtype, hazards: frozenset):
        self.rng = rng
        self.hazards = hazards  # what the program may contain (templates combine some)
        self.n = n
        self.dtype = dtype
        self.lines: list[str] = []
        self.vecs = ["x"]
        self.scals = ["s"]
        self.closures: dict[str, onp.ndarray] = {}
        self.view_lists: dict[str, str] = {}  # a list's name -> the closure it views
        self.used: set[str] = set()
        self._count = 0

    def vec(self) -> str:
        # recent values more often, so programs are chains rather than fans
        k = len(self.vecs)
        i = min(k - 1, int(abs(self.rng.standard_normal()) * 1.5))
        return self.vecs[k - 1 - i]

    def scal(self) -> str:
        return str(self.rng.choice(self.scals))

    def scalar_expr(self) -> str:
        a = self.vec()
        return str(self.rng.choice([self.scal(), f"{a}[{self.index()}]", f"np.sum({a})",
                                    f"np.mean({a})"]))

    def index(self) -> int:
        return int(self.rng.integers(-self.n, self.n))

    def name(self, prefix: str = "v") -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def new_vec(self) -> str:
        v = self.name()
        self.vecs.append(v)
        return v

    def new_scal(self) -> str:
        v = self.name("t")
        self.scals.append(v)
        return v

    def closure(self) -> str:
        name = f"C{len(self.closures)}"
        self.closures[name] = self.rng.standard_normal(self.n).astype(self.dtype)
        return name

    def view_list(self, closure: str) -> str:
        """A list outside f whose item ``VIEW_AT`` is a view of ``closure`` (made with the
        program, before any call), the items before it None."""
        name = f"L{len(self.view_lists)}"
        self.view_lists[name] = closure
        return name

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    def pick(self, options: Sequence[str]) -> str:
        return str(options[int(self.rng.integers(len(options)))])


# ------------------------------------------------------------------------ templates
_UNARY = ("np.sin({a})", "np.cos({a})", "np.tanh({a})", "np.exp(-{a} * {a})", "{a} * {a}",
          "np.sqrt({a} * {a} + 1.0)", "np.log1p({a} * {a})", "np.arctan({a})",
          "{a} / (1.0 + {a} * {a})", "{a}[::-1]", "np.roll({a}, 1)", "np.cumsum({a}) / n",
          "-{a}", "2.0 * {a} - 1.0")
_BINARY = ("{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / (2.0 + {b} * {b})",
           "np.arctan2({a}, 1.5 + {b} * {b})", "{a} * {s}", "{a} + {s}", "np.sin({a}) * {b}")
_REDUCE = ("np.sum({a})", "np.mean({a})", "np.dot({a}, {b})", "np.sum({a} * {a})",
           "np.prod(np.tanh({a}))", "np.linalg.norm({a} + 1.0)")
_NONSMOOTH = ("np.abs({a})", "np.maximum({a}, 0.0)", "np.minimum({a}, {b})",
              "np.where({a} > 0, {b}, -{b})", "np.clip({a}, -0.5, 0.5)", "np.sort({a})",
              "{a}[np.argsort({b})]", "np.floor({a})", "np.sign({a}) * {b}",
              "np.max({a}) * {b}")
_SIGNED_ZERO = ("np.ceil({a} * 0.1)", "np.trunc({a} * 0.1)", "np.fix({a} * 0.1)",
                "np.round({a} * 0.1)", "np.floor_divide({a}, 7.0)",
                "np.arctan2(np.round({a} * 0.1), -1.0)", "{a} * -0.0 + {b} * 0.0")
_INDEX = ("{a}[[{i}, 0] * (n // 2) + [0] * (n % 2)]", "np.concatenate([{a}[1:], {a}[:1]])",
          "np.concatenate([{a}[:1] * 2.0, {a}[1:]])", "np.flip({a})",
          "np.repeat({a}[:1], n) + {b}")
_MASK = ("({a} > 0) * {b}", "np.where({a} > 0, {a}, 0.0)",
         "np.dot(np.where({a} > 0, 1.0, 0.0), {b}) * {c}", "np.diag(({a} > 0) * 1.0) @ {b}",
         "np.diag(({a} > 0) * 1.0) @ ({b} * {b})")


def _fmt(g: _Builder, expr: str) -> str:
    return expr.format(a=g.vec(), b=g.vec(), c=g.vec(), s=g.scal(), i=g.index())


def _assign(g: _Builder, expr: str, scalar: bool = False) -> None:
    """``name = expr`` for a new variable (named after ``expr`` has picked its operands)."""
    g.emit(f"{g.new_scal() if scalar else g.new_vec()} = {expr}")


def _unary(g):
    _assign(g, _fmt(g, g.pick(_UNARY)))


def _binary(g):
    _assign(g, _fmt(g, g.pick(_BINARY)))


def _reduce(g):
    _assign(g, _fmt(g, g.pick(_REDUCE)), scalar=True)


def _constant(g):
    _assign(g, f"{g.vec()} * {g.closure()}")  # read, never written


def _table(hazard_list):
    def write(g):
        _assign(g, _fmt(g, g.pick(hazard_list)))
    return write


def _signed_zero_float(g):
    a, b = g.vec(), g.vec()
    if "convert" not in g.hazards:  # float() of a traced value
        _assign(g, _fmt(g, g.pick(_SIGNED_ZERO)))
        return
    inner = f"{a}[{g.index()}] * 0.0 - 0.0" if g.rng.random() < 0.3 else \
        f"np.round({a}[{g.index()}] * 0.1)"
    _assign(g, f"{b} * math.copysign(1.0, float({inner}))")


def _convert(g):
    a, b, c = g.vec(), g.vec(), g.vec()
    kind = int(g.rng.integers(4))
    if kind == 0:
        t = g.name("t")
        g.emit(f"{t} = float({g.scalar_expr()})",
               f"{g.new_vec()} = {a} * ({t} if {t} > 0 else 2.0)")
    elif kind == 1:
        k = g.name("k")
        g.emit(f"{k} = int(np.argmax({a}))", f"{g.new_vec()} = {b} * {c}[{k}]")
    elif kind == 2:
        k = g.name("k")
        g.emit(f"{k} = int(round(float(np.tanh(np.sum({a})) * 3.0))) % n",
               f"{g.new_vec()} = np.roll({b}, {k})")
    else:
        g.emit(f"{g.new_vec()} = {a} * round(float(np.mean({b})), 1)")


def _branch(g):
    cond = g.pick((f"{g.scalar_expr()} > {g.rng.normal(0, 0.5):.2f}",
                   f"np.all({g.vec()} > -1.0)", f"np.any(np.isnan({g.vec()}))",
                   f"{g.vec()}[0] <= {g.vec()}[-1]", f"not {g.scalar_expr()} < 0.0"))
    v = g.name()
    g.emit(f"if {cond}:", f"    {v} = {_fmt(g, g.pick(_UNARY))}", "else:",
           f"    {v} = {_fmt(g, g.pick(_BINARY))}")
    g.vecs.append(v)


def _loop(g):
    v, a = g.name(), g.vec()
    if g.rng.random() < 0.5:
        k = g.name("k")
        g.emit(f"{v} = {a} * 1.0", f"{k} = 0",
               f"while {k} < 4 and {v}[{k} % n] > 0.0:",
               f"    {v} = {v} * 0.5 - 0.1", f"    {k} += 1")
    else:
        b = g.vec()
        g.emit(f"{v} = {a} + 0.0", "for i in range(min(n, 4)):",
               f"    if {b}[i] > 0:", f"        {v} = {v} * np.cos({b})",
               "    else:", f"        {v} = {v} - 0.5 * {b}")
    g.vecs.append(v)


def _closure(g):
    c = g.closure()
    a, b = g.vec(), g.vec()
    kind = int(g.rng.choice([0, 1, 2, 3] if "convert" in g.hazards else [0, 1, 3]))
    if kind == 0:  # a basis vector rebuilt in the buffer, as people build them
        g.emit(f"{c}[:] = 0.0", f"{c}[{g.index()}] = 1.0", f"{g.new_vec()} = {a} * {c}")
    elif kind == 1:  # a write after a use: the use must see the old contents
        v = g.name()
        g.emit(f"{v} = {a} * {c}", f"{c}[0] = 5.0", f"{v} = {v} + {b} * {c}")
        g.vecs.append(v)
    elif kind == 2:  # a value of the data written into a plain buffer
        g.emit(f"{c}[{g.index()}] = float({g.scalar_expr()})", f"{g.new_vec()} = {b} * {c}")
    else:  # a write after a use through a view of the buffer made before the call, found
        # only past a list's 64th item (grad's held arrays: a search reading 64 missed it)
        v, views = g.name(), g.view_list(c)
        g.emit(f"{v} = {a} * {c}", f"{views}[{VIEW_AT}][0] = 5.0", f"{v} = {v} + {b} * {c}")
        g.vecs.append(v)


def _random(g):
    a = g.vec()
    _assign(g, g.pick((f"{a} + 0.1 * onp.random.standard_normal(n)",
                       f"{a} * (np.random.rand(n) > 0.5)", f"{a} + onp.random.uniform()")))


def _raise(g):
    a, b = g.vec(), g.vec()
    if g.rng.random() < 0.5:
        g.emit(f"L = np.linalg.cholesky(np.diag({a}[:2] + 0.5))",
               f"{g.new_vec()} = {b} * np.sum(L)")
    else:
        g.emit(f"if {a}[0] > 1.5:", f"    raise ValueError('too large: ' + str({a}[0] > 1.5))")


def _try_except(g):
    a, b = g.vec(), g.vec()
    v = g.name()
    if g.rng.random() < 0.5:
        g.emit("try:", f"    L = np.linalg.cholesky(np.diag({a}[:2] + 0.5))",
               f"    {v} = {b} * np.sum(L)", "except np.linalg.LinAlgError:", f"    {v} = -{b}")
    else:
        k = g.name("k")
        g.emit("try:", f"    {k} = int(float(np.sum({a})) / float(np.min(np.abs({a}))))",
               "except (OverflowError, ValueError, ZeroDivisionError):", f"    {k} = -1",
               f"{v} = {b} + ({k} % 3)")
    g.vecs.append(v)


def _tuple_answer(g):
    a, b = g.vec(), g.vec()
    kind = int(g.rng.integers(3))
    if kind == 0:
        g.emit(f"idx = np.nonzero({a} > 0)[0]", f"{g.new_vec()} = {b} + np.sum({a}[idx])")
    elif kind == 1:
        g.emit(f"idx = np.where({a} > 0)[0]", f"{g.new_vec()} = {b} * len(idx)")
    else:
        g.emit(f"h = np.histogram({a}, bins=3, range=(-2.0, 2.0))[0]",
               f"{g.new_vec()} = {b} * h[0]")


def _inplace(g):
    a, b = g.vec(), g.vec()
    v = g.name()
    kind = int(g.rng.integers(6))
    if kind == 0:
        g.emit(f"{v} = {a} * 1.0", f"{v} += {b}")
    elif kind == 1:
        g.emit(f"{v} = {a} + 0.0", f"{v}[{g.index()}] = {g.scalar_expr()}")
    elif kind == 2:
        g.emit(f"{v} = {a} * 1.0", f"{v}[1:] *= 2.0")
    elif kind == 3:  # an alias must see the update
        w = g.name("w")
        g.emit(f"{v} = {a} * 1.0", f"{w} = {v}", f"{v} += 1.0", f"{v} = {w} * {b}")
    elif kind == 4:  # NumPy's own functions that write into their first argument
        # (a mask read from the data where the program may have masks: a mask that flips
        # along a curve is not smooth; else one of the positions)
        data_mask = "mask" in g.hazards and g.rng.random() < 0.7
        if data_mask:
            g.used.add("mask")
        mask = (lambda on: f"{on} > 0") if data_mask else (lambda on: "onp.arange(n) % 2 == 0")
        write = g.pick([f"onp.copyto({v}, {b} * {b}, where={mask(b)})",
                        f"onp.put({v}, [0, n - 1], {b}[:2])",
                        f"onp.putmask({v}, {mask(a)}, np.exp(-{b} * {b}))",
                        f"onp.place({v}, {mask(v)}, np.tanh({b}))"])
        g.emit(f"{v} = {a} * 1.0", write)
    else:  # NumPy's in-place reshape of an array's shape attribute
        g.emit(f"{v} = {a} * 1.0", f"{v}.shape = (n, 1)", f"{v} = np.sum({v} * {b}, axis=0)")
    g.vecs.append(v)


def _nested(g):
    a, b = g.vec(), g.vec()
    if g.rng.random() < 0.6:
        g.emit(f"{g.new_vec()} = grad(lambda z: np.sum(np.sin(z) * {a}))({b})")
    else:
        _assign(g, f"grad(lambda t: t * np.sum({a}) + t ** 2)({g.scal()})", scalar=True)


def _masked_out(g):
    """NumPy's where= into an out= array made by chainrule.numpy: a ufunc computes and
    writes only where the mask holds (no derivative from elsewhere: safe division), a
    reduction reads only those elements."""
    a, b, c = g.vec(), g.vec(), g.vec()
    v = g.name("o")
    kind = int(g.rng.integers(4))
    # (mean of an empty selection into a 0-d out warns "invalid value in scalar divide"
    # under jit where NumPy says "in divide": mean is left out)
    if kind == 0:  # (the safe division: the divisor is 0 where the mask says)
        d = g.name("d")
        g.emit(f"{d} = (1.0 + {b} * {b}) * ({c} > 0)", f"{v} = np.zeros(n)",
               f"np.divide({a}, {d}, out={v}, where={d} != 0)")
    elif kind == 1:  # (into the whole array, into it backwards, or into a 0-d one)
        into, fun = g.pick(["", "[::-1]", "0-d"]), g.pick(['sin', 'exp', 'sqrt', 'log', 'tanh'])
        if into == "0-d":
            t = g.name("t")
            g.emit(f"{t} = np.full((), {g.scal()})",
                   f"np.{fun}({a}[-1], out={t}, where={a}[-1] > 0.1)", f"{v} = {b} * {t}")
        else:
            g.emit(f"{v} = np.full(n, {g.scal()})",
                   f"np.{fun}({a}, out={v}{into}, where={a} > 0.1)")
    elif kind == 2:
        t = g.name("t")
        g.emit(f"{t} = np.zeros(())",
               f"np.{g.pick(['sum', 'max'])}({a}, out={t}, where={b} > 0"
               f"{', initial=-1.0' if g.rng.random() < 0.5 else ''})",
               f"{v} = {c} * {t}")
    else:
        m = g.name("m")
        g.emit(f"{m} = np.zeros(2)",
               f"np.sum(np.reshape(np.concatenate([{a}, {b}]), (2, n)), axis=1, out={m}, "
               f"where={c} > 0)", f"{v} = {a} * {m}[0] + {b} * {m}[1]")
    g.vecs.append(v)


def _wide(g):
    a, b = g.vec(), g.vec()
    d, v = g.name("D"), g.name()
    extreme, axis = g.pick(["min", "max"]), g.pick(["2", "-1"])
    # (the rows' sum kept 2-d or not; the table scaled by the program's scalar or not: a
    # Python float or a NumPy scalar, whose type decides the arrays' dtype)
    rows = g.pick([f"np.sum({d}, axis=1)", f"np.sum({d}, axis=1, keepdims=True)[:, 0, :]"])
    table = g.pick(["T", f"(T * {g.scal()})"])
    g.emit(f"{d} = np.outer({a}, {b})[:, None, :] - {table}[None, :, :n]",
           f"{v} = np.sum(np.{extreme}({d} * {d}, axis={axis}), axis=1) / {WIDE_ROWS} + "
           f"np.sum({rows} * {b}, axis=1) / {WIDE_ROWS}")
    g.vecs.append(v)


def _stop_gradient(g):
    _assign(g, _fmt(g, "stop_gradient({a}) * {b}"))


TEMPLATES: tuple[Template, ...] = (
    Template(None, _unary, 3.0),
    Template(None, _binary, 3.0),
    Template(None, _reduce, 1.0),
    Template(None, _constant, 0.5),
    Template("nonsmooth", _table(_NONSMOOTH)),
    Template("signed_zero", _table(_SIGNED_ZERO)),
    Template("signed_zero", _signed_zero_float, 0.5),
    Template("convert", _convert),
    Template("branch", _branch, 1.5),
    Template("loop", _loop),
    Template("closure", _closure),
    Template("random", _random, 0.7),
    Template("raise", _raise, 0.5),
    Template("try_except", _try_except, 0.7),
    Template("tuple_answer", _tuple_answer, 0.7),
    Template("inplace", _inplace),
    Template("nested", _nested, 0.6),
    Template("index", _table(_INDEX)),
    Template("mask", _table(_MASK)),
    Template("mask", _masked_out, 0.4),
    Template("stop_gradient", _stop_gradient, 0.5),
    Template("wide", _wide, 0.4),
)


# ------------------------------------------------------------------------ outputs
def _output(g: _Builder, output: str, hazards: frozenset) -> tuple[str, str]:
    last_vec, last_scal = g.vecs[-1], g.scals[-1]
    if output == "any":
        output = g.pick(["vec", "scalar", "tree"] if "tree_out" in hazards else ["vec", "scalar"])
    if output == "scalar":
        return f"return np.sum({last_vec}) + {last_scal}", output
    if output == "tree":
        keys = ["b", "a", "c"]
        g.rng.shuffle(keys)
        vals = [last_vec, last_scal, g.vec()]
        items = ", ".join(f"{k!r}: {v}" for k, v in zip(keys, vals))
        g.used.add("tree_out")
        return g.pick((f"return {{{items}}}", f"return ({last_vec}, {{{items}}})",
                       f"return [{last_scal}, ({last_vec}, {g.vec()})]")), output
    if "alias_out" in hazards and g.rng.random() < 0.4:
        g.used.add("alias_out")
        return g.pick(("return x", "return x * 1", "return x + 0.0", "return x * 1.0",
                       f"return {last_vec}, {last_vec}", f"return {next(iter(g.closures), 'x')}",
                       f"return ({last_vec}, x)")), "tree"
    return f"return {last_vec}", output


# ------------------------------------------------------------------------ generate
_counter = [0]


def generate(
    rng: onp.random.Generator,
    hazards: frozenset | set = HAZARDS,
    *,
    output: str = "any",
    n: int | None = None,
    dtype: Any = None,
    statements: tuple[int, int] = (3, 9),
    extra: Sequence[Template] = (),
    namespace: dict | None = None,
) -> Program:
    """A random program ``f(x, s)`` using only the given hazards (and plain arithmetic).

    ``output``: "vec" (shape (n,)), "scalar", "tree" or "any". ``extra``: templates of
    the caller's own (a contract's hazards). ``namespace``: names the templates may use
    besides np (chainrule.numpy), onp (numpy), math, grad, stop_gradient and n."""
    hazards = frozenset(hazards)
    unknown = hazards - HAZARDS - {t.hazard for t in extra}
    if unknown:
        raise ValueError(f"unknown hazards {sorted(unknown)}")
    n = int(n if n is not None else rng.integers(3, 7))
    dtype = onp.dtype(dtype if dtype is not None else rng.choice(["float64"] * 4 + ["float32"]))
    g = _Builder(rng, n, dtype, hazards)
    pool = [t for t in (*TEMPLATES, *extra) if t.hazard is None or t.hazard in hazards]
    weights = onp.array([t.weight for t in pool])
    for _ in range(int(rng.integers(statements[0], statements[1] + 1))):
        template = pool[rng.choice(len(pool), p=weights / weights.sum())]
        template.write(g)
        if template.hazard:
            g.used.add(template.hazard)
    ret, kind = _output(g, output, hazards)
    body = "\n".join("    " + line for line in (*g.lines, ret))
    source = f"def f(x, s):\n{body}\n"
    _counter[0] += 1
    filename = f"<contract program {_counter[0]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns = {"np": cnp, "onp": onp, "math": math, "grad": chainrule.grad,
          "stop_gradient": chainrule.stop_gradient, "n": n, "T": _WIDE_TABLE,
          **(namespace or {})}
    ns.update({name: arr.copy() for name, arr in g.closures.items()})
    ns.update({name: [None] * VIEW_AT + [ns[c][:]] for name, c in g.view_lists.items()})
    exec(compile(source, filename, "exec"), ns)  # noqa: S102 (source written just above)
    used = set(g.used)
    if "edge_values" in hazards:
        used.add("edge_values")
    return Program(source, ns["f"], n, dtype, frozenset(used), kind, ns,
                   {name: arr.copy() for name, arr in g.closures.items()}, dict(g.view_lists))
