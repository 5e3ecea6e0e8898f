"""jit: a jitted call returns what the eager call returns (docs/jit.md, "The contract").

For every call, ``jit(T)(*args)`` equals ``T(*args)`` evaluated eagerly, on the arguments
with Python floats as NumPy float64: the same pytree (dict order included), types, dtypes,
shapes and bits of every leaf (signed zeros; a nan matches a nan of either sign and any
payload: ``_compare._mismatch`` says why), the same exception (class and message), the
same warnings (which ones, not how often nor in which order;
jit's own ``JitWarning`` notices left out), the same draws from ``numpy.random``, outputs that share
memory with the inputs, with each other and with earlier outputs exactly where the eager
ones do, and inputs left as eagerly. The one exception the contract states, arrays
closed over by ``f`` (read when traced), is kept out: closures are reset before each call
and an eager output that is a closure array itself is not compared for sharing.

Two kinds of case:

- **program**: a generated program ``f(x, s)`` with every hazard of ``_programs``, under a
  transform (``f`` itself, ``grad``, ``value_and_grad``, ``jvp``, ``hessian``), a wrapping
  (``functools.wraps``, a jit inside the jit, a jit of a jit, a dict argument, ``s``
  static of mixed types, given by position or by keyword, keywords, an array default
  changed in place before each call, x passed twice, the second time as itself or a view
  of it, after a write into x) and an argument layout (contiguous, strided, reversed),
  called at least four times on inputs that take other branches (the first again last: a
  cached call). Plain programs may write into x itself (x[i] = v, x += s, x.sort()).
- **spec**: a case of the rule tables (``chainrule._specs``) with some of its float
  entries set to edge values (0, -0.0, ±inf, nan, ±1e308, subnormals): the function
  jitted, its gradient and its JVP, each called on the edge values and on the case's own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import pkgutil
import warnings
from typing import Any

import numpy as onp

import chainrule
from chainrule import _specs as specs
from chainrule._core.pytree import tree_flatten, tree_unflatten
from chainrule.jit import JitWarning, _kernels

from . import _programs as programs
from ._compare import Outcome, array_leaves, differences

NAME = "jit"
CI_CASES = 300

TRANSFORMS = ("plain", "plain", "plain", "grad", "value_and_grad", "jvp", "hessian")
WRAPPINGS = ("none", "none", "wraps", "nested_jit", "jit_of_jit", "dict_arg", "static_s",
             "static_s_by_keyword", "static_name_by_position", "keywords", "array_default",
             "aliased_argument")
# the second argument the wrapping "aliased_argument" passes: x itself or a view of it
ALIASES = ("x", "x[::-1]", "x[1:]", "x[::2]", "x.reshape(1, -1)")
# and the write into x it makes before calling the program (which may write into x too)
WRITES = (lambda x: x.__imul__(0.5), lambda x: x.sort(), lambda x: x.__setitem__(0, 2.0),
          lambda x: x.__iadd__(x[::-1]), lambda x: x.__setitem__(slice(None, None, 2), 0.0),
          lambda x: None)
STATIC_WRAPPINGS = ("static_s", "static_s_by_keyword", "static_name_by_position")
LAYOUTS = ("contiguous", "contiguous", "strided", "reversed")
# jit's faster forms of calls on short axes (jit/_kernels.py) at their own sizes, or on
# arrays of every size: the programs' arrays are small, so only "always" reaches them
KERNELS = ("sized", "sized", "always")
KERNEL_SIZES = ("LANES_MIN_SIZE", "SUM_MIN_SIZE", "INDICATOR_MIN_SIZE", "NEGATED_MIN_SIZE",
                "LANE_EXTREME_MIN_SIZE",
                "SCATTER_AT_SIZE", "OUTER_LANE_ROWS")


class StaticNumber(float):
    """A number of a type jit does not know as a leaf: an argument only where it is
    declared static (then compared by == and hash, so no signed zero or nan here)."""

    def __repr__(self) -> str:
        return f"StaticNumber({float(self)!r})"


STATIC_VALUES = (0.0, -0.0, 1, True, 0, False, 2.5, float("nan"), onp.float64(-0.0),
                 StaticNumber(1.5), StaticNumber(-2.0))
EDGE_VALUES = (0.0, -0.0, onp.nan, onp.inf, -onp.inf, 1e308, -1e308, 5e-324, -5e-324,
               1e-308)


@dataclasses.dataclass
class Case:
    kind: str  # "program" or "spec"
    transform: str
    wrapping: str
    layout: str
    calls: list  # argument tuples, in call order
    program: programs.Program | None = None
    spec: Any = None
    kernels: str = "sized"

    def __str__(self) -> str:
        what = str(self.program) if self.program is not None else (
            f"spec case {self.spec.id} ({self.spec.fun!r}, kwargs {self.spec.kwargs})")
        return (f"{what}\n# jit of {self.transform}, wrapped {self.wrapping}, "
                f"{self.layout} arguments, short-axis forms {self.kernels}, called at\n" +
                "\n".join(f"#   {_show(args)}" for args in self.calls))


def _show(args) -> str:
    return repr(args).replace("\n", " ")


# ------------------------------------------------------------------------ jit's own hazards
def _text(g) -> None:
    # Python text made from a traced value: eagerly the value's text (under grad the
    # box's, so plain programs only)
    t = g.name("t")
    g.emit(f"{t} = {g.pick(['str', 'repr', 'format'])}({g.scalar_expr()})",
           f"{g.new_vec()} = {g.vec()} * (2.0 if {t}.startswith('-') else float(len({t}) % 3))")


def _python_numbers(g) -> None:
    # Python numbers made from a traced value (tolist, item): eagerly Python floats
    t = g.name("t")
    g.emit(f"{t} = {g.vec()}.{g.pick(['tolist()', 'item(0)', 'item(-1)'])}",
           f"{t} = {t}[-1] if type({t}) is list else {t}",
           f"{g.new_vec()} = {g.vec()} * (2.0 if type({t}) is float else -1.0) + {t}")


def _errstate(g) -> None:
    # an error state the function sets around a call: eager evaluation raises, keeps
    # quiet or warns as it says
    mode = g.pick(["raise", "ignore", "warn"])
    t = g.name("t")
    g.emit(f"with onp.errstate(all={mode!r}):",
           f"    {g.new_vec()} = np.exp({g.vec()} * 400.0) + np.log({g.vec()})",
           f"{t} = 0.0")


def _folded_outputs(g) -> None:
    # a loop long enough to fold, each step making the same call again (a common
    # subexpression across steps), whose last steps' values are outputs: eagerly each
    # its own array
    a, acc, p, kept = g.vec(), g.name("acc"), g.name("p"), g.name("P")
    g.emit(f"{acc} = {a} * 0.0", f"{kept} = []",
           "for i in range(12):",
           f"    {p} = np.sin({a} * 2.0)",
           f"    {acc} = np.cos({acc}) + {p} * {p} - np.tanh({acc}) * 0.5",
           f"    {kept}.append({p})")
    g.emit(f"{g.new_vec()} = {acc}", f"{g.new_vec()} = {kept}[-2]",
           f"{g.new_vec()} = {kept}[-1]")


def _rounded(g) -> None:
    # round() of a NumPy scalar with digits: np.round's scalar (1.56 for 1.555), no
    # derivative (attack7: a staged scalar had no __round__)
    t = g.name("t")
    g.emit(f"{t} = round({g.vec()}[{g.index()}] * 3.0, {g.pick(['0', '1', '2'])})",
           f"{g.new_vec()} = {g.vec()} * {t} + {t}")


def _rounded_to_int(g) -> None:
    # round() of a NumPy scalar without digits: a Python int, a decision (plain programs)
    t = g.name("t")
    g.emit(f"{t} = round({g.scalar_expr()})",
           f"{g.new_vec()} = {g.vec()} * float({t} % 3) - {t}")


def _written_buffer(g) -> None:
    # a new array without derivative made from an input (eagerly a buffer: it takes a
    # traced write), then written in place (attack7: under jit, np.fix(x) + s refused it;
    # the long run's case 3,463 of seed 0: diag(x > 0) @ floor(x) + 0.0, then v[i] = y)
    b = g.name("b")
    made = g.pick(["np.zeros(n)", f"np.fix({g.vec()} * 10.0)",
                   f"np.diag(({g.vec()} > 0) * 1.0) @ np.floor({g.vec()})"])
    g.emit(f"{b} = {made} + {g.scal()}")
    # a new array of it by NumPy's function or a method (eagerly a buffer too, but
    # NumPy's asarray: this session's probe of 24 functions found 12 that differed)
    remade = g.pick(["", "onp.fix({})", "onp.round({}, 1)", "onp.sort({})", "onp.cumsum({})",
                     "{}.cumsum()", "onp.clip({}, -1.0, 1.0)", "onp.tile({}, 1)",
                     "onp.concatenate([{}])", "onp.asarray({})", "{}.astype(onp.float32)",
                     "onp.nan_to_num({})"])
    if remade:
        g.emit(f"{b} = {remade.format(b)}")
    if g.rng.random() < 0.5:
        g.emit(f"{b} += {g.vec()}")
    else:
        g.emit(f"{b}[{g.index()}] = {g.scalar_expr()}")
    g.emit(f"{g.new_vec()} = {b} * {g.vec()}")


def _view_write(g) -> None:
    # a write through a view of a computed matrix (row = m[i]; row[:] = v): eagerly NumPy's
    # view (or a buffer's) writes into m; jit raised "writes through a view" (this session)
    m, w = g.name("m"), g.name("w")
    g.emit(f"{m} = np.outer({g.vec()}, {g.vec()}) + {g.scal()}")
    i = g.index()
    view = g.pick([f"{m}[{i}]", f"{m}[:, {i}]", f"{m}.T[{i}]", f"{m}[::-1][{i}]",
                   f"{m}.reshape(-1)[::2]", f"np.diagonal({m})", f"np.ravel({m})[:{g.n}]"])
    g.emit(f"{w} = {view}")
    write = g.pick([f"{w}[...] = {g.scalar_expr()}", f"{w} += {g.scal()}",
                    f"{w}[{int(g.rng.integers(g.n))}] = {g.scalar_expr()}", f"{w} *= {w}"])
    g.emit(write)
    g.emit(f"{g.new_vec()} = np.sum({m}, axis={int(g.rng.integers(2))}) + {w}[:{g.n}] * 0.0")


def _numpy_array(g) -> None:
    # NumPy's array of a computed value (np.asarray(v)): eagerly an array, under grad a
    # TypeError; jit raised that TypeError for f itself (this session)
    v = g.vec()
    made = g.pick([f"onp.asarray({v})", f"onp.array({v})", f"onp.asarray([{v}[0], {v}[1]])"])
    g.emit(f"{g.new_vec()} = np.sin({made}) + {v} * 0.0" if "[0]" not in made else
           f"{g.new_vec()} = {v} + np.sum({made})")


class _Buffer(onp.ndarray):
    """A user's ndarray subclass whose NumPy results are plain arrays (as a memmap's)."""

    def __array_wrap__(self, array, context=None, return_scalar=False):
        array = array.view(onp.ndarray)
        return array[()] if return_scalar else array


def _subclass_buffer(g) -> None:
    # a basis vector rebuilt between two uses in a closure buffer seen through an ndarray
    # subclass (attack10: a subclass constant was read by reference, so later calls read
    # its last contents at both uses)
    w, v = g.name("w"), g.name()
    g.emit(f"{w} = {g.closure()}.view(Buffer)", f"{w}[:] = 0.0", f"{w}[{g.index()}] = 1.0",
           f"{v} = {g.vec()} * {w}", f"{w}[:] = 0.0", f"{w}[{g.index()}] = 1.0",
           f"{v} = {v} + {g.vec()} * {w}")
    g.vecs.append(v)


def _argument_write(g) -> None:
    # a write into the argument x itself (x[i] = v, x += s, x.sort()): eagerly the caller's
    # array changes, and a second argument that is x, or a view of it, sees the change
    # (the wrapping "aliased_argument" passes one)
    g.emit(g.pick([f"x[{g.index()}] = {g.scalar_expr()}", f"x += {g.scal()}",
                   "x *= 0.5", "x.sort()", f"x[::2] = {g.vec()}[::2] * 0.25"]))


def _constant_outer(g) -> None:
    # np.outer by a short constant of the program's dtype, and a matmul by one (its
    # cotangent is an outer by it): jit's tiled form, the constant's values in its code
    v = g.vec()
    entries = ["1.0", "-1.0", "-0.0", "0.5", "0.0", "3.0"]  # (no inf: see the CHANGELOG)
    b, c = ([entries[int(i)] for i in g.rng.integers(len(entries), size=k)]
            for k in g.rng.integers(2, 5, size=2))
    dtype = f"onp.{g.dtype.name}"
    g.emit(f"{g.new_vec()} = np.sum(np.outer({v}, onp.array([{', '.join(b)}], {dtype})), 1) "
           f"+ np.outer({v}[::-1], onp.array([{', '.join(c)}], {dtype})) @ "
           f"onp.array([{', '.join(reversed(c))}], {dtype})")
    # rows of a matrix, some taken by constant indices (their cotangent: scatters, each
    # placed into a row of zeros, added: jit adds them where they lie), row 0 twice
    m, w = g.name("m"), g.vec()
    g.emit(f"{m} = np.outer({v}, onp.array([{', '.join(c)}, 2.0], {dtype})).T",
           f"{g.new_vec()} = {m}[0][onp.array([{g.index()}, 0] * (n // 2) + [0] * (n % 2))] "
           f"+ {m}[2][onp.array([n - 1] + [0] * (n - 1))] * {w} + {m}[1] - "
           f"{m}[0][::-1][onp.zeros(n, int)]")


OWN = (programs.Template("text", _text, 0.5), programs.Template("errstate", _errstate, 0.5),
       programs.Template("python_numbers", _python_numbers, 0.3),
       programs.Template("folded_outputs", _folded_outputs, 0.3),
       programs.Template("rounded", _rounded, 0.3),
       programs.Template("rounded_to_int", _rounded_to_int, 0.3),
       programs.Template("written_buffer", _written_buffer, 0.3),
       programs.Template("view_write", _view_write, 0.3),
       programs.Template("numpy_array", _numpy_array, 0.2),
       programs.Template("subclass_buffer", _subclass_buffer, 0.2),
       programs.Template("argument_write", _argument_write, 0.3),
       programs.Template("constant_outer", _constant_outer, 0.3))
OWN_UNDER_TRANSFORMS = (OWN[1], OWN[4], OWN[6], OWN[7], OWN[8], OWN[11])


# ------------------------------------------------------------------------ generate
def generate(rng: onp.random.Generator) -> Case:
    if rng.random() < 0.25:
        return _spec_case(rng)
    transform = str(rng.choice(TRANSFORMS))
    output = "any" if transform == "plain" else "scalar"
    n = 3 if transform == "hessian" else None
    own = OWN if transform == "plain" else OWN_UNDER_TRANSFORMS
    program = programs.generate(rng, programs.HAZARDS | {t.hazard for t in own},
                                output=output, n=n, extra=own, namespace={"Buffer": _Buffer})
    calls = program.inputs(rng, 3)
    calls.append(calls[0])  # (the first arguments again: a cached call)
    wrapping = str(rng.choice(WRAPPINGS))
    if wrapping in STATIC_WRAPPINGS:
        calls = [(x, STATIC_VALUES[int(rng.integers(len(STATIC_VALUES)))]) for x, _ in calls]
        calls.append(calls[-2])
    layout = str(rng.choice(LAYOUTS))
    calls = [(_laid_out(x, layout), s) for x, s in calls]
    return Case("program", transform, wrapping, layout, calls, program=program,
                kernels=str(rng.choice(KERNELS)))


def _laid_out(x: onp.ndarray, layout: str) -> onp.ndarray:
    if layout == "strided":
        return onp.repeat(x, 2)[::2]
    if layout == "reversed":
        return x[::-1].copy()[::-1]
    return x


def _spec_cases() -> list:
    """Every spec case with an argument to differentiate, and whether its function may
    meet inf and nan (LAPACK's routines may loop for ever on them: linear algebra gets
    the finite edge values only)."""
    found = []
    for info in sorted(pkgutil.iter_modules(specs.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{specs.__name__}.{info.name}")
        finite = "linalg" in info.name
        found += [(c, finite) for c in getattr(module, "CASES", []) if c.argnums]
    return found


SPEC_CASES = _spec_cases()
FINITE_EDGE_VALUES = tuple(v for v in EDGE_VALUES if onp.isfinite(v))


def _spec_case(rng: onp.random.Generator) -> Case:
    spec, finite = SPEC_CASES[int(rng.integers(len(SPEC_CASES)))]
    values = FINITE_EDGE_VALUES if finite else EDGE_VALUES
    edged = list(spec.args)
    for i in spec.argnums:
        a = onp.array(edged[i], copy=True)
        if a.dtype.kind not in "fc":
            continue
        flat = a.reshape(-1)
        for j in rng.choice(flat.size, size=min(flat.size, 2), replace=False):
            value = values[int(rng.integers(len(values)))]
            if finite:  # (1e308 is inf in float32: LAPACK's svd then never returned)
                value = onp.clip(value, -onp.finfo(a.dtype).max, onp.finfo(a.dtype).max)
            flat[j] = value
        edged[i] = a.reshape(onp.shape(edged[i]))[()] if onp.ndim(edged[i]) == 0 and \
            isinstance(edged[i], onp.generic) else a
    transform = str(rng.choice(("plain", "grad", "jvp")))
    calls = [tuple(edged), tuple(spec.args), tuple(edged)]
    return Case("spec", transform, "none", "contiguous", calls, spec=spec,
                kernels=str(rng.choice(KERNELS)))


# ------------------------------------------------------------------------ the function
def _target(case: Case):
    """The function whose jitted calls are compared with its eager ones, and how an
    argument tuple is passed to it (``call(fun, args)``)."""
    if case.kind == "spec":
        return _spec_target(case)
    f = case.program.fn
    transform = case.transform
    if transform == "plain":
        target = f
    elif transform == "grad":
        target = chainrule.grad(f)
    elif transform == "value_and_grad":
        target = chainrule.value_and_grad(f)
    elif transform == "hessian":
        target = chainrule.hessian(f)
    else:
        u = onp.linspace(-1.0, 1.0, case.program.n).astype(case.program.dtype)

        def target(x, s):
            return chainrule.jvp(lambda z: f(z, s), (x,), (u,))
    return target


def _spec_target(case: Case):
    spec = case.spec
    fun, kwargs, argnum = spec.fun, spec.kwargs, spec.argnums[0]
    if case.transform == "plain":
        return lambda *a: fun(*a, **kwargs)

    def scalar(*a):
        leaves = tree_flatten(fun(*a, **kwargs))[0]
        return sum(chainrule.numpy.sum(chainrule.numpy.real(v) * 0.5 + chainrule.numpy.imag(v))
                   for v in leaves)

    if case.transform == "grad":
        return chainrule.grad(scalar, argnum)

    def jvp_of(*a):
        t = onp.ones_like(a[argnum]) * 0.75
        return chainrule.jvp(lambda z: fun(*a[:argnum], z, *a[argnum + 1:], **kwargs),
                             (a[argnum],), (t,))
    return jvp_of


def _jitted(case: Case, target):
    """``(jitted, eager)``: the jitted function as the case wraps it, and what its calls
    must equal, both taking a case's argument tuple."""
    wrapping = case.wrapping
    if wrapping == "wraps":
        @functools.wraps(target)
        def wrapped(*args):
            return target(*args)
        j = chainrule.jit(wrapped)
        return (lambda args: j(*args)), (lambda args: target(*args))
    if wrapping == "nested_jit":
        inner = chainrule.jit(target)
        j = chainrule.jit(lambda *args: inner(*args))
        return (lambda args: j(*args)), (lambda args: target(*args))
    if wrapping == "jit_of_jit":
        j = chainrule.jit(chainrule.jit(target))
        return (lambda args: j(*args)), (lambda args: target(*args))
    if wrapping == "dict_arg":
        def on_dict(d):
            return target(d["x"], d["s"])
        j = chainrule.jit(on_dict)
        order = bool(len(case.calls) % 2)
        as_dict = (lambda a: {"s": a[1], "x": a[0]}) if order else \
            (lambda a: {"x": a[0], "s": a[1]})
        return (lambda args: j(as_dict(args))), (lambda args: on_dict(as_dict(args)))
    if wrapping == "static_s":
        j = chainrule.jit(target, static_argnums=1)
        return (lambda args: j(*args)), (lambda args: target(*args))
    if wrapping == "static_s_by_keyword":  # (static by number, given by name)
        j = chainrule.jit(target, static_argnums=1)
        return (lambda args: j(args[0], s=args[1])), (lambda args: target(*args))
    if wrapping == "static_name_by_position":  # (static by name, given by position)
        j = chainrule.jit(target, static_argnames="s")
        return (lambda args: j(*args)), (lambda args: target(*args))
    if wrapping == "array_default":  # (read at each call, eagerly and jitted)
        weights = onp.ones(case.program.n, case.program.dtype)

        def with_default(x, s, w=weights):
            return target(x * w, s)

        j = chainrule.jit(with_default)
        return (_changing(weights, lambda args: j(*args)),
                _changing(weights, lambda args: with_default(*args)))
    if wrapping == "aliased_argument":  # (x twice: writes into x reach the second)
        pick = len(case.program.source)
        write = WRITES[pick % len(WRITES)]

        def two(x, y, s):
            write(x)
            return target(x, s), y * 1.0

        alias = ALIASES[pick % len(ALIASES)]
        j = chainrule.jit(two)

        def both(args):
            return eval(alias, {"x": args[0]})  # noqa: S307 (one of ALIASES)
        return (lambda args: j(args[0], both(args), args[1])), \
            (lambda args: two(args[0], both(args), args[1]))
    if wrapping == "keywords":
        j = chainrule.jit(lambda x, s: target(x, s))
        return (lambda args: j(args[0], s=args[1])), (lambda args: target(*args))
    j = chainrule.jit(target)
    return (lambda args: j(*args)), (lambda args: target(*args))


def _changing(weights: onp.ndarray, call):
    """``call``, with ``weights`` set in place to other values before each call (the same
    values before the k-th call of each of two such)."""
    count = [0]

    def changed_first(args):
        weights[:] = 1.0 + 0.5 * count[0]
        count[0] += 1
        return call(args)
    return changed_first


def _as_traced(args: tuple, static: bool) -> tuple:
    """The arguments as jit's trace sees them: Python floats and complex numbers as NumPy
    scalars (a static argument is passed as it is)."""
    leaves, treedef = tree_flatten(args[:1] if static else args)
    leaves = [onp.float64(v) if type(v) is float else onp.complex128(v) if type(v) is complex
              else v for v in leaves]
    converted = tree_unflatten(treedef, leaves)
    return converted + args[1:] if static else converted


# ------------------------------------------------------------------------ check
@contextlib.contextmanager
def _kernel_sizes(kernels: str):
    """jit's short-axis forms at their sizes, or (``"always"``) at every size."""
    saved = {name: getattr(_kernels, name) for name in KERNEL_SIZES}
    if kernels == "always":
        for name in KERNEL_SIZES:
            setattr(_kernels, name, 1)
    try:
        yield
    finally:
        for name, size in saved.items():
            setattr(_kernels, name, size)


def check(case: Case) -> list[str]:
    with _kernel_sizes(case.kernels):
        return _checked(case)


def _checked(case: Case) -> list[str]:
    target = _target(case)
    jitted, eager = _jitted(case, target)
    static = case.wrapping in STATIC_WRAPPINGS
    closures = set() if case.program is None else \
        {id(case.program.namespace[k]) for k in case.program.closures}
    out: list[str] = []
    earlier_want: list = []
    earlier_got: list = []
    for k, args in enumerate(case.calls):
        want, want_inputs = _run(case, k, lambda a: eager(_as_traced(a, static)), args)
        # (what eager's outputs share is found now, and their values copied: a closure
        # array returned is reset before the next run)
        want_sharing = _sharing(want, want_inputs, earlier_want, closures)
        want = _copied(want)
        got, got_inputs = _run(case, k, jitted, args)
        got_sharing = _sharing(got, got_inputs, earlier_got, closures)
        found = differences(_distinct(want), _distinct(got), check_warnings=True,
                            ignore_warning=lambda c, m: issubclass(c, JitWarning))
        if not found:
            found = _sharing_differences(want_sharing, got_sharing, closures)
        out += [f"call {k}: {d}" for d in found]
        if out:
            break
        earlier_want.append(want_sharing["arrays"])
        earlier_got.append(got_sharing["arrays"])
    return out


def _run(case: Case, k: int, call, args: tuple) -> tuple[Outcome, tuple]:
    """One call from the same state: closures reset, NumPy's global generator seeded, the
    arguments fresh copies (in their layout); answers the outcome and the arguments."""
    if case.program is not None:
        case.program.reset()
    args = tuple(_fresh(a) for a in args)
    onp.random.seed(1000 + k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitWarning)
        return Outcome.of(lambda: call(args)), args


def _fresh(a: Any) -> Any:
    if isinstance(a, onp.ndarray):
        if a.flags.c_contiguous or a.ndim == 0:
            return a.copy()
        return _laid_out(onp.ascontiguousarray(a), "strided" if a.strides[0] > 0 else
                         "reversed") if a.ndim == 1 else onp.asfortranarray(a)
    return a


def _distinct(outcome: Outcome) -> Outcome:
    """The outcome with each warning once, in one order (the contract compares which
    warnings a call gives: a program may make one call where eager evaluation made two
    alike, and gives the warnings of its trace that it does not make itself, such as a
    transform's notice, after its own)."""
    key = lambda w: (w[0].__module__, w[0].__qualname__, w[1])  # noqa: E731
    return dataclasses.replace(outcome, warnings=sorted(set(outcome.warnings), key=key))


def _copied(outcome: Outcome) -> Outcome:
    if outcome.error is not None:
        return outcome
    arrays = {id(a): a.copy() for a in array_leaves(outcome.value)}
    return dataclasses.replace(outcome, value=_replace(outcome.value, arrays))


def _replace(tree, arrays: dict):
    if isinstance(tree, onp.ndarray):
        return arrays[id(tree)]
    if isinstance(tree, dict):
        return {k: _replace(v, arrays) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        return type(tree)(_replace(v, arrays) for v in tree)
    return tree


_RELATION = {(True, True): "the same array", (False, True): "share memory",
             (False, False): "apart", (True, False): "the same array"}


def _sharing(outcome: Outcome, inputs: tuple, earlier: list, closures: set) -> dict:
    """Which output arrays are the same object as, or share memory with, an input, an
    earlier output or another output: ``{"output array i and an input (j)": (same,
    shared)}``, and the output arrays under ``"arrays"``."""
    out = array_leaves(outcome.value) if outcome.error is None else []
    found: dict = {"arrays": out}
    ins = array_leaves(list(inputs))
    old = [x for arrays in earlier for x in arrays]
    for i, x in enumerate(out):
        for what, others in (("an input", ins), ("an earlier output", old),
                             ("another output", out[:i])):
            for j, u in enumerate(others):
                if x.size and u.size:
                    found[f"output array {i} and {what} ({j})"] = (
                        x is u, bool(onp.shares_memory(x, u)))
    return found


def _sharing_differences(want: dict, got: dict, closures: set) -> list[str]:
    """The pairs ``_sharing`` found related otherwise jitted than eagerly (those of an
    eager output that is a closure array left out: the contract's stated exception)."""
    arrays = want["arrays"]
    found = []
    for key in sorted(set(want) | set(got)):
        if key == "arrays":
            continue
        i = int(key.split()[2])
        if i < len(arrays) and id(arrays[i]) in closures:
            continue
        a, b = want.get(key, (False, False)), got.get(key, (False, False))
        if a != b:
            found.append(f"{key}: eagerly {_RELATION[a]}, jitted {_RELATION[b]}")
    return found
