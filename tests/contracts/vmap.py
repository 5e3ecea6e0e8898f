"""vmap: ``vmap(f)(xs)`` is ``stack([f(x) for x in xs])``, or a clear error.

The reference is the loop itself, run from the same start as the mapped call (closure
arrays reset, numpy.random seeded, the program's Generator rewound): each example's answer,
stacked leaf by leaf (dicts in the function's key order); or the exception the loop raised
first. A mapped call must give the same pytree, dtypes, shapes and values — bit for bit,
except that programs with contractions (dot, norm, @) may round differently batched (a
batch of products is one product), to 1e-12 (float64) or 1e-5 (float32), and so may
programs with functions NumPy computes by SIMD kernels (arctan2, sin, tanh, exp, ...: one
value computed in a longer array may differ in its last bits) — or raise what
the loop raised (a loop whose answers cannot be stacked, vmap's clear ValueError). It must
also leave the arrays outside it (closures, the random state) as the loop leaves them, not
write into its inputs, and answer with fresh arrays (none shares memory with an input or
another output, as the loop's stacks do not).

An empty batch has no loop to compare with: its answer must be JAX's, arrays of no
examples shaped (and typed) as an example's answer — the dtype may be another branch's
where the program decides on its data (vmap decides on a stand-in example of zeros).

How a program is mapped varies from case to case: x along axis 0 or -1, s mapped or
shared, the answers' examples along axis 0 or -1 (out_axes); batches of 0 to 8 examples;
``vmap(grad(f))`` of scalar programs; ``jit(vmap(f))`` called on two batches, every other
mapped function called twice on its batch; nested vmaps with different in_axes (the outer
over s, the inner over x; the outer over an axis of x and the inner over the other; ``grad``
under both, its decisions differing along either).
The hazards are every one of the shared generator's and this module's own: results written
into NumPy buffers (``+=``, ``out=``, ``add.at``, ``copyto``, ``put``, setitem, ``fill``),
writes through views and aliases, draws from a Generator the program closes over, and
Python state kept between calls that the answer reads (a counter in a list, a log appended
to: the loop changes it once per example).
"""

from __future__ import annotations

import dataclasses
import math
import types

import numpy as onp

import chainrule
from chainrule._transforms.vmap import batched_runs_first

from . import _programs as programs
from ._compare import (
    Outcome,
    aliasing,
    array_leaves,
    differences,
    snapshot,
    unchanged,
    within_spread,
)
from ._programs import HAZARDS, Program, Template
from ._runner import Refusal

NAME = "vmap"
CI_CASES = 500  # (each mapped function is called twice)

MODES = ("axis 0", "axis -1", "s mapped", "grad", "jit", "nested over s", "nested over axes",
         "nested grad", "out axis -1")
_GRAD_MODES = ("grad", "nested grad")
SIZES = (0, 1, 2, 3, 5, 8)
_CONTRACTIONS = ("np.dot", "np.linalg.norm", "@")
# functions whose derivative is a contraction (np.outer's VJP: a matrix-vector product, one
# product for the batch; the wide template's, case 29,491 at e2cb78b: 4e-16 relative)
_CONTRACTING_DERIVATIVES = ("np.outer",)
# (NumPy 2's SIMD kernels round a value by the length of the array it is in: np.arctan2 of
# a (12, 3) array and of its rows differ in the last bit, seen in the long run of 3e27633)
_KERNELS = ("np.sin", "np.cos", "np.tan", "np.arctan", "np.tanh", "np.exp", "np.log",
            "np.expm1", "np.log1p", "np.power", "**", "np.linalg")


def _copysign(x: float, y: float) -> float:
    """``math.copysign`` reading a NaN as positive: which of two NaNs NumPy's multiply keeps
    (their signs) depends on the length of the arrays (its SIMD kernels: a (3, 4) product
    and its rows' products differ, seen in the long run at 44a412a, case 110,561), so a
    batch and its examples may carry NaNs of other signs; IEEE gives a NaN's sign no
    meaning but to copysign and signbit."""
    return math.copysign(x, 1.0 if math.isnan(y) else y)


# (the programs' math: the vmap contract compares a batch with its examples)
_MATH = types.SimpleNamespace(**{**vars(math), "copysign": _copysign})


# ------------------------------------------------------------------------ own hazards
def _buffer(g):
    """A result of the data written into a NumPy buffer the program makes."""
    a, b = g.vec(), g.vec()
    buf, v = g.name("buf"), g.name()
    kind = int(g.rng.integers(7))
    lines = {
        0: [f"{buf} = onp.zeros(n)", f"{buf} += {a}", f"{v} = {buf} * {b}"],
        1: [f"{buf} = onp.ones(n)", f"onp.multiply({buf}, {a}, out={buf})", f"{v} = {buf} - {b}"],
        2: [f"{buf} = onp.zeros(n)", f"np.sin({a}, out={buf})", f"{v} = {buf} + {b}"],
        3: [f"{buf} = onp.zeros(n)", f"onp.add.at({buf}, [0, 0, n - 1], {a}[:3])",
            f"{v} = {buf} * {b}"],
        4: [f"{buf} = onp.zeros(n)", f"onp.copyto({buf}, {a})", f"{v} = {buf} * 2.0 + {b}"],
        5: [f"{buf} = onp.zeros(n)", f"onp.put({buf}, [0, n - 1], {a}[:2])", f"{v} = {buf} + {b}"],
        6: [f"{buf} = onp.zeros(n)", f"{buf}[{g.index()}] = {a}[{g.index()}]",
            f"{buf}.fill({buf}[0]) if {buf}[0] > 0 else None", f"{v} = {buf} * {b}"],
    }[kind]
    g.emit(*lines)
    g.vecs.append(v)


def _view(g):
    """Writes through views and aliases of an array the program owns."""
    a, b = g.vec(), g.vec()
    v, w = g.name(), g.name("w")
    kind = int(g.rng.integers(4))
    lines = {
        0: [f"{v} = {a} * 1.0", f"{w} = {v}[1:]", f"{v} -= {b}", f"{v} = {w}[:1] * {v}"],
        1: [f"{v} = {a} + 0.0", f"{w} = {v}[::2]", f"{w} *= 3.0"],
        2: [f"{v} = np.outer({a}, {b})", f"{w} = {v}[0]", f"{w} += 1.0",
            f"{v} = np.sum({v}, axis=0)"],
        3: [f"{v} = {a} * 1.0", f"{w} = [{v}]", f"{v}[{v} < 0] = 0.0", f"{v} = {w}[0] + {b}"],
    }[kind]
    g.emit(*lines)
    g.vecs.append(v)


def _generator(g):
    """A draw from a Generator the program closes over (its state lives between calls)."""
    a = g.vec()
    g.emit(f"{g.new_vec()} = {a} + " + g.pick(("rng.normal(size=n)", "rng.random()",
                                              "(rng.random(n) > 0.5) * 0.5")))


def _python_state(g):
    """Python state the program keeps between calls (a counter in a list, a log appended
    to) that its answer reads: the loop changes it once per example."""
    a = g.vec()
    kind = int(g.rng.integers(3))
    if kind == 0:
        g.emit("calls[0] += 1", f"{g.new_vec()} = {a} * calls[0]")
    elif kind == 1:
        g.emit(f"log.append(stop_gradient({a}[0]))", f"{g.new_vec()} = {a} + len(log)")
    else:  # (an earlier example's kept value, read by the next)
        g.emit(f"{g.new_vec()} = {a} + (log[-1] if log else 0.0)",
               f"log.append(stop_gradient({a}[-1]))")


OWN = (Template("buffer", _buffer, 0.8), Template("view", _view, 0.8),
       Template("generator", _generator, 0.5), Template("python_state", _python_state, 0.4))
ALL = HAZARDS | {t.hazard for t in OWN}
# jit's own refusals are its contract's business: what it stages is compared here (writes
# through views are in: jit writes a staged view into its base since the ninth session,
# where it refused them before, 90 of the first 10,000 cases)
JIT_HAZARDS = ALL - {"random", "generator", "raise", "try_except", "closure", "buffer",
                     "convert", "tuple_answer", "python_state"}
# hazards with which an empty batch's answer may take another branch's dtype (no example
# decides; vmap decides on a stand-in example of zeros)
DECIDING = {"branch", "loop", "convert", "signed_zero", "try_except", "raise"}


# ------------------------------------------------------------------------ cases
@dataclasses.dataclass
class Case:
    program: Program
    mode: str
    xs: onp.ndarray  # the batch of x (for "axis -1", examples along the last axis)
    s: object  # one s for every example, or their batch ("s mapped", nested modes)
    more: tuple = ()  # jit's second batch (xs, s)

    def __str__(self) -> str:
        return (f"{self.program}\n# mapped: {self.mode}, xs {self.xs.dtype} "
                f"{self.xs.shape} = {self.xs.tolist()!r},\n# s = {self.s!r}"
                + (f"\n# then {self.more!r}" if self.more else ""))


def generate(rng: onp.random.Generator) -> Case:
    mode = MODES[int(rng.integers(len(MODES)))]
    hazards = JIT_HAZARDS if mode == "jit" else ALL
    output = "scalar" if mode in _GRAD_MODES else "any"
    p = programs.generate(rng, hazards, output=output, extra=OWN,
                          namespace={"rng": onp.random.default_rng(int(rng.integers(1 << 30))),
                                     "calls": [0], "log": [], "math": _MATH})
    size = int(rng.choice(SIZES))
    if mode.startswith("nested"):
        size = int(rng.integers(1, 4))
    xs, s = _batch(p, rng, size, mode)
    more = _batch(p, rng, size, mode) if mode == "jit" else ()
    return Case(p, mode, xs, s, more)


def _batch(p: Program, rng: onp.random.Generator, size: int, mode: str):
    pairs = p.inputs(rng, max(size, 1))[:size] if size else []
    xs = onp.stack([x for x, _ in pairs]) if pairs else onp.zeros((0, p.n), p.dtype)
    s_one = pairs[0][1] if pairs else 0.5
    if mode == "axis -1":
        xs = onp.ascontiguousarray(xs.T)
    if mode in ("s mapped", "nested over s", "nested grad"):
        s = onp.array([s for _, s in pairs] if pairs else [], onp.result_type(s_one))
        if mode != "s mapped":  # (outer over s, inner over the rows of xs)
            s = onp.concatenate([s, s[::-1] * 0.5 + 0.25])[: size + 1]
        return xs, s
    if mode == "nested over axes":  # xs (size, size + 1, n): inner axis 0, outer axis 1
        xs = onp.stack([xs * (1.0 + 0.5 * j) - 0.25 * j for j in range(size + 1)], axis=1)
        return xs.astype(p.dtype), s_one
    return xs, s_one


# ------------------------------------------------------------------------ the two sides
def _mapped(case: Case):
    """The mapped function, and how to call it on (xs, s)."""
    f = case.program.fn
    if case.mode == "axis -1":
        return chainrule.vmap(f, in_axes=(-1, None))
    if case.mode == "s mapped":
        return chainrule.vmap(f, in_axes=(0, 0))
    if case.mode == "out axis -1":
        return chainrule.vmap(f, in_axes=(0, None), out_axes=-1)
    if case.mode == "grad":
        return chainrule.vmap(chainrule.grad(f), in_axes=(0, None))
    if case.mode == "jit":
        return chainrule.jit(chainrule.vmap(f, in_axes=(0, None)))
    if case.mode == "nested over s":
        return chainrule.vmap(chainrule.vmap(f, in_axes=(0, None)), in_axes=(None, 0))
    if case.mode == "nested over axes":
        return chainrule.vmap(chainrule.vmap(f, in_axes=(0, None)), in_axes=(1, None))
    if case.mode == "nested grad":
        return chainrule.vmap(chainrule.vmap(chainrule.grad(f), in_axes=(0, None)),
                              in_axes=(None, 0))
    return chainrule.vmap(f, in_axes=(0, None))


def _loop(case: Case, xs, s):
    """The reference: the answers of the loop over the examples, or its exception."""
    f = chainrule.grad(case.program.fn) if case.mode in _GRAD_MODES else case.program.fn
    if case.mode == "axis -1":
        return [f(xs[:, i].copy(), s) for i in range(xs.shape[-1])]
    if case.mode == "s mapped":
        return [f(xs[i].copy(), s[i]) for i in range(len(xs))]
    # (nested: the inner loop's answers are stacked as it ends, as vmap(f) stacks them)
    if case.mode in ("nested over s", "nested grad"):
        return [_stack_tree([f(x.copy(), s_j) for x in xs]) for s_j in s]
    if case.mode == "nested over axes":
        return [_stack_tree([f(xs[i, j].copy(), s) for i in range(xs.shape[0])])
                for j in range(xs.shape[1])]
    return [f(x.copy(), s) for x in xs]


def _stack_tree(answers: list):
    """Answers stacked leaf by leaf, dicts in the first answer's key order."""
    first = answers[0]
    if isinstance(first, dict):
        if any(not isinstance(a, dict) or list(a) != list(first) for a in answers):
            raise _Unstackable("dicts of different keys")
        return {k: _stack_tree([a[k] for a in answers]) for k in first}
    if isinstance(first, (list, tuple)):
        if any(type(a) is not type(first) or len(a) != len(first) for a in answers):
            raise _Unstackable("different structures")
        return type(first)(_stack_tree([a[i] for a in answers]) for i in range(len(first)))
    try:
        return onp.stack(answers)
    except ValueError as error:
        raise _Unstackable(str(error)) from None


class _Unstackable(Exception):
    """The loop's answers cannot be stacked into one answer."""


def _empty_answer(case: Case):
    """For an empty batch: arrays of no examples, shaped as one example's answer (JAX's
    answer; the loop has none). None where no example's answer is to be had."""
    p = case.program
    x = p.inputs(onp.random.default_rng(1), 1)[0][0]
    s = case.s.dtype.type(0.5) if isinstance(case.s, onp.ndarray) else case.s
    p.reset()
    one = Outcome.of(lambda: (chainrule.grad(p.fn) if case.mode in _GRAD_MODES else p.fn)(x, s))
    if one.error is not None:
        return None
    return _stack_tree([one.value, one.value])  # (then emptied below)


# ------------------------------------------------------------------------ the check
def check(case: Case) -> list[str]:
    if case.mode == "jit":
        own = _jit_alone(case)
        if own:  # jit's own contract (jit ≡ eager), checked by its module, not vmap's
            return [Refusal(f"jit(f) is not f on an example: {own[0]}")]
    mapped = _mapped(case)  # (one function, called twice: a later call knows what an
    out = _check_call(case, mapped, case.xs, case.s)  # example cost, and may back off)
    if not out:
        again = case.more if case.mode == "jit" else (case.xs, case.s)
        out = [f"second call: {d}" for d in _check_call(case, mapped, *again)]
    if not out:  # (a call chooses the loop where batching costs more: the rules, batched)
        with batched_runs_first():
            out = [f"batched first: {d}" for d in _check_call(case, _mapped(case), case.xs,
                                                               case.s)]
    return out


def _jit_alone(case: Case) -> list[str]:
    """How ``jit(f)`` differs from ``f`` on the examples of both batches."""
    p, jitted = case.program, chainrule.jit(case.program.fn)
    sample = [(x, s) for x, s in p.inputs(onp.random.default_rng(2), 1)]
    for xs, s in ((case.xs, case.s), case.more, ([x for x, _ in sample], sample[0][1])):
        for x in xs:
            _start(p)
            eager = Outcome.of(lambda x=x, s=s: p.fn(x.copy(), s))
            for _ in range(2):  # (the first call traces; the second runs what jit emitted)
                _start(p)
                staged = Outcome.of(lambda x=x, s=s: jitted(x.copy(), s))
                found = differences(eager, staged)
                if staged.error is None and not _outputs_alias(eager.value):
                    found += _outputs_alias(staged.value)
                if found:
                    return found
    return []


def _start(p: Program) -> None:
    p.reset()
    p.namespace["calls"][:] = [0]
    p.namespace["log"].clear()
    onp.random.seed(7)
    p.namespace["rng"].bit_generator.state = onp.random.default_rng(11).bit_generator.state


def _state(p: Program) -> list:
    return ([p.namespace[name].copy() for name in p.closures]
            + [p.namespace["calls"][0], onp.array(p.namespace["log"], float)]
            + [onp.random.get_state()[1].copy(), onp.random.get_state()[2],
               repr(p.namespace["rng"].bit_generator.state)])


def _check_call(case: Case, mapped, xs, s) -> list[str]:
    p = case.program
    _start(p)
    reference = Outcome.of(lambda: _loop(case, xs, s))
    loop_state = _state(p)
    inputs = [xs, s]
    copies = snapshot(inputs)
    _start(p)
    actual = Outcome.of(lambda: mapped(xs, s))
    out = unchanged(inputs, copies)
    if not _size(case, xs):  # (the loop of no examples changes nothing outside)
        out += [f"after the call: {d}" for d in _states_differ(loop_state, _state(p))]
        return out + _check_empty(case, actual)
    if reference.error is None:
        try:
            reference = Outcome(value=_out_axis(case, _stack_tree(reference.value)))
        except _Unstackable:
            if isinstance(actual.error, ValueError) and "cannot be stacked" in str(actual.error):
                return out + [Refusal(f"the loop's answers cannot be stacked: {actual.error}")]
            return out + [f"the loop's answers cannot be stacked, but vmap gave {actual!r}"]
    exact = not any(op in p.source for op in _CONTRACTIONS + _KERNELS) and not (
        case.mode in _GRAD_MODES and any(op in p.source for op in _CONTRACTING_DERIVATIVES))
    single = p.dtype == onp.float32
    rtol, atol = (1e-5, 1e-6) if single else (1e-12, 1e-14)
    state = _state(p)  # (before the nudged loop below runs)
    found = differences(reference, actual, exact=exact, rtol=rtol, atol=atol, types=False)
    if found and not exact and reference.error is None and actual.error is None and \
            _within_conditioning(case, xs, s, reference.value, actual.value, rtol, atol):
        found = []
    out += found
    if not exact and reference.error is None and actual.error is None:
        out += _signed_zeros(reference.value, actual.value)
    if actual.error is None:
        out += aliasing(actual.value, inputs)
        out += _outputs_alias(actual.value)
        out += [f"after the call: {d}" for d in _states_differ(loop_state, state, exact,
                                                                rtol, atol)]
    return out


def _within_conditioning(case: Case, xs, s, expected, actual, rtol: float, atol: float) -> bool:
    """Whether ``actual`` is as near the loop's ``expected`` as the loop's own answers move
    when x moves by one unit in the last place: a program whose values a rounding of its
    contractions changes by more than rtol (cos of a large product) is compared to its
    conditioning. (Not where the nudge changes a branch: the answers then move far.)"""
    p = case.program
    eps = onp.finfo(onp.asarray(xs).dtype).eps
    _start(p)
    try:
        nudged = _out_axis(case, _stack_tree(_loop(case, onp.asarray(xs) * (1 + eps), s)))
    except Exception:
        return False
    leaves = [array_leaves(t) for t in (expected, actual, nudged)]
    if len({len(ls) for ls in leaves}) != 1:
        return False
    for e, a, n in zip(*leaves):
        e, a, n = (onp.asarray(v, dtype=complex) for v in (e, a, n))
        if e.shape != a.shape or e.shape != n.shape:
            return False
        finite = onp.isfinite(e) & onp.isfinite(n)
        spread = onp.where(finite, abs(n - e), 0.0)
        if onp.any(spread > 1e-6 * abs(e) + atol):  # (a branch the nudge took otherwise)
            return False
        if not within_spread(e, a, spread, rtol, atol):
            return False
    return True


def _size(case: Case, xs) -> int:
    return xs.shape[-1] if case.mode == "axis -1" else xs.shape[0]


def _check_empty(case: Case, actual: Outcome) -> list[str]:
    if actual.error is not None:
        if isinstance(actual.error, ValueError) and "empty" in str(actual.error):
            return [Refusal(f"empty batch: {actual.error}")]
        return [f"an empty batch raised {type(actual.error).__name__}: {actual.error}"]
    want = _empty_answer(case)
    if want is None:
        return []
    want_leaves = array_leaves(_out_axis(case, _emptied(want)))
    got_leaves = array_leaves(actual.value)
    out = []
    if len(want_leaves) != len(got_leaves):
        out.append(f"an empty batch answered {len(got_leaves)} arrays, not {len(want_leaves)}")
    dtypes_may_differ = bool(case.program.hazards & DECIDING)
    for w, g in zip(want_leaves, got_leaves):
        if w.shape != g.shape or w.dtype != g.dtype and not dtypes_may_differ:
            out.append(f"an empty batch answered {g.dtype} {g.shape}, not {w.dtype} {w.shape}")
    return out


def _out_axis(case: Case, stacked):
    """The loop's stacked answer with the examples' axis where out_axes puts it."""
    if case.mode != "out axis -1":
        return stacked
    if isinstance(stacked, dict):
        return {k: _out_axis(case, v) for k, v in stacked.items()}
    if isinstance(stacked, (list, tuple)):
        return type(stacked)(_out_axis(case, v) for v in stacked)
    return onp.moveaxis(stacked, 0, -1)


def _emptied(stacked):
    if isinstance(stacked, dict):
        return {k: _emptied(v) for k, v in stacked.items()}
    if isinstance(stacked, (list, tuple)):
        return type(stacked)(_emptied(v) for v in stacked)
    return onp.asarray(stacked)[:0]


def _signed_zeros(expected, actual) -> list[str]:
    """Where both answers are zero, the same zero (rounding cannot change a zero's sign)."""
    out = []
    for e, a in zip(array_leaves(expected), array_leaves(actual)):
        if e.dtype.kind == "f" and e.shape == a.shape:
            both = (e == 0) & (a == 0)
            if (onp.signbit(e[both]) != onp.signbit(a[both])).any():
                out.append("a zero's sign differs from the loop's")
    return out


def _outputs_alias(value) -> list[str]:
    leaves = [x for x in array_leaves(value) if x.size]
    for i, a in enumerate(leaves):
        for b in leaves[i + 1:]:
            if onp.shares_memory(a, b):
                return [f"two output arrays share memory ({a.shape}, {b.shape}); the loop's "
                        f"stacks never do"]
    return []


def _states_differ(loop_state: list, state: list, exact: bool = True, rtol: float = 0.0,
                   atol: float = 0.0) -> list[str]:
    """How the state outside differs from the loop's: compared as the answers are (a log
    of values computed by contractions rounds as they do)."""
    out = []
    for i, (e, a) in enumerate(zip(loop_state, state)):
        if not isinstance(e, onp.ndarray):
            same = e == a
        elif exact or e.dtype.kind not in "fc" or e.shape != a.shape:
            same = onp.array_equal(e, a, equal_nan=True)
        else:
            same = bool(onp.all(onp.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)))
        if not same:
            out.append(f"outside state {i} (a closure array, or the random state) is not the "
                       f"loop's: {a!r} instead of {e!r}")
    return out
