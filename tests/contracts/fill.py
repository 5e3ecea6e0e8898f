"""fill: programs written allocate-then-fill (issue 38) keep every transform's contract.

A program fills arrays made by chainrule.numpy's constructors (``np.zeros(n)``,
``np.empty_like(x)``, ``np.zeros_like(x)``) with traced values: by index, slice, through a
view, ``+=``, ``out=``, ``np.add.at``, ``np.copyto``. References: ``jit(f) ≡ f`` bit for bit
(one trace, then cached), ``vmap(f)`` ≡ the per-example loop, and for a scalar ``f``,
``grad`` and ``jvp`` give the same directional derivative (to 1e-10, or where grad·v's terms
cancel, to their rounding: ``dot_spread``), and the value under ``grad`` is
the untraced program's (NumPy's semantics: views see later writes, short values repeat).
"""

from __future__ import annotations

import dataclasses

import numpy as onp

import chainrule

from . import _programs as programs
from ._compare import Outcome, differences, dot_spread, overflowed, within_spread
from ._programs import Program, Template
from ._runner import Refusal

NAME = "fill"
CI_CASES = 150

# the statements of _programs that jit stages as eager runs them (no raise, random, ...)
HAZARDS = frozenset({"nonsmooth", "index", "mask", "inplace", "loop"})


def _fill(g) -> None:
    a, b = g.vec(), g.vec()
    buf = g.name("buf")
    g.emit(f"{buf} = " + g.pick(["np.zeros(n)", f"np.empty_like({a})", f"np.zeros_like({a})",
                                 "np.ones(n) * 0.0 + np.zeros(n)"]))
    if "np.empty" in g.lines[-1]:
        g.emit(f"{buf}[:] = 0.0")
    i, j = g.index(), g.index()
    viewed = None
    if g.rng.random() < 0.4:  # a view taken before the writes, read after them
        viewed = g.name("w")
        g.emit(f"{viewed} = " + g.pick([
            f"onp.flip({buf})", f"onp.reshape({buf}, (n,))", f"onp.ravel({buf})",
            f"{buf}.view()", f"onp.transpose({buf})", f"onp.expand_dims({buf}, 0)[0]",
            f"onp.broadcast_to({buf}, (2, n))[1]", f"{buf}.real", f"np.asarray({buf})",
            f"{buf}.astype(float, copy=False)", f"onp.atleast_2d({buf})[0]",
            f"onp.array_split({buf}, 1)[0]",
            f"onp.lib.stride_tricks.sliding_window_view({buf}, 1)[:, 0]"]))
    for _ in range(int(g.rng.integers(1, 4))):
        g.emit(g.pick([
            f"{buf}[{i}] = {g.scalar_expr()}",
            f"{buf}[1:] = {a}[:-1] * {g.scal()}",
            f"{buf}[::2] = np.sin({b}[::2])",
            f"{buf} += {a} * {b}",
            f"{buf}[{j}] += {g.scalar_expr()}",
            f"{buf}[::-1][0] = {g.scalar_expr()}",
            f"np.multiply({a}, {b}, out={buf})",
            f"np.add.at({buf}, [{i}, {i}, {j}], {a}[0])",
            f"np.copyto({buf}, {a} * {a}, where={b} > 0)",
            f"{buf}[{a} > 0] = {b}[{a} > 0]",
            # NumPy repeats values shorter than the positions (put, putmask, flat)
            f"np.put({buf}, [{i}, {j}, {i}], {a}[:2])",
            f"np.putmask({buf}, {b} > 0, {a}[::-1][:2])",
            f"{buf}.flat[{i}] = {g.scalar_expr()}",
            f"{buf}.flat[1:] = {a}[:2]",
            f"{buf}.sort()",
            f"np.concatenate([{a}[:1], {b}[1:]], out={buf})",
            f"onp.transpose({buf})[{i}] = {g.scalar_expr()}",
            f"onp.reshape({buf}, (1, n))[0, {j}] = {g.scalar_expr()}",
            f"np.place({buf}, {a} > 0, {b}[:2])",
            f"np.put_along_axis({buf}, onp.array([{i}, {j}]), {b}[:2], axis=0)",
            f"{buf}.flat = {a}[:2]",
            f"np.fill_diagonal(onp.reshape({buf}, (1, n)), {a}[{j}])",
        ]))
    g.vecs.append(buf)
    if viewed is not None:
        g.vecs.append(viewed)


def _complex_parts(g) -> None:
    """A complex buffer written through its parts, a part view taken before the writes."""
    a, b = g.vec(), g.vec()
    c, part, v = g.name("c"), g.name("w"), g.name()
    i = g.index()
    g.emit(f"{c} = np.zeros(n, dtype=complex)",
           f"{part} = " + g.pick([f"{c}.real", f"onp.real({c})", f"{c}.imag", f"onp.imag({c})"]),
           g.pick([f"{c}.real[:] = {a}", f"{c}[:] = {a} + 1j * {b}",
                   f"onp.real({c})[{i}] = {g.scalar_expr()}"]),
           g.pick([f"{c}.imag[{i}] = {g.scalar_expr()}", f"np.add.at({c}.imag, [{i}, {i}], {b}[0])",
                   f"{c} *= 1.0 + 0.5j", f"{c}.real[::2] += {b}[::2]"]),
           f"{v} = np.abs({c}) ** 2 + {part}")
    g.vecs.append(v)


OWN = (Template("fill", _fill, 3.0), Template("fill", _complex_parts, 0.7))


def _refuses_plain_write(error) -> bool:
    return isinstance(error, TypeError) and "into a plain NumPy array" in str(error)


@dataclasses.dataclass
class Case:
    program: Program
    calls: list

    def __str__(self) -> str:
        return f"{self.program}\n# called at {self.calls!r}"


def generate(rng: onp.random.Generator) -> Case:
    program = programs.generate(rng, HAZARDS | {"fill"}, output="scalar", dtype="float64",
                                extra=OWN)
    calls = program.inputs(rng, 3, edges=False)
    return Case(program, calls)


def check(case: Case) -> list[str]:
    p = case.program
    out: list[str] = []
    jitted = chainrule.jit(p.fn)
    for x, s in case.calls:
        p.reset()
        eager = Outcome.of(lambda: p.fn(x, s))  # noqa: B023 - called at once
        if eager.error is not None:
            return [Refusal(f"the program raises eagerly: {eager.error!r}")]
        p.reset()
        staged = Outcome.of(lambda: jitted(x, s))  # noqa: B023
        out += [f"jit: {d}" for d in differences(eager, staged)]
        p.reset()
        rev = Outcome.of(lambda: chainrule.value_and_grad(p.fn)(x, s))  # noqa: B023
        if rev.error is None:
            # the value under a transform is NumPy's (the untraced program's), so buffers
            # and their views follow NumPy's semantics, not only each other's
            value, rev = Outcome.of(lambda: rev.value[0]), Outcome.of(lambda: rev.value[1])  # noqa: B023
            out += [f"value: {d}" for d in differences(eager, value, exact=False, rtol=1e-13,
                                                        atol=1e-300)]
        direction = onp.linspace(-1.0, 1.0, x.size)
        p.reset()
        fwd = Outcome.of(lambda: chainrule.jvp(p.fn, (x, s), (direction, 0.0))[1])  # noqa: B023
        if all(_refuses_plain_write(e) for e in (rev.error, fwd.error)):
            # np.floor(x) of a traced x is a plain array (no derivative): v = np.floor(x)
            # * 1.0; v += x refuses the write into it, clearly (documented, not a buffer)
            out.append(Refusal(f"modes: a traced write into a plain array: {rev.error!r}"))
        elif rev.error or fwd.error:
            out.append(f"modes: grad {rev.error!r}, jvp {fwd.error!r}")
        elif not within_spread(fwd.value, onp.dot(rev.value, direction),
                               dot_spread(rev.value, direction), rtol=1e-10, atol=1e-10) \
                and not (value.error is None and overflowed(
                    value.value, float(onp.dot(rev.value, direction)), float(fwd.value))):
            # (grad·v cancelling terms far larger than itself is compared to its rounding)
            out.append(f"modes: grad·v {onp.dot(rev.value, direction)!r} != jvp {fwd.value!r}")
    info = jitted.cache_info()
    if info.eager and not any(isinstance(d, Refusal) for d in out):  # (jit hands those back)
        out.append(f"jit: ran eagerly: {info}")
    xs = onp.stack([x for x, _ in case.calls])
    s = case.calls[0][1]
    p.reset()
    loop = Outcome.of(lambda: onp.stack([p.fn(x, s) for x in xs]))
    p.reset()
    batched = Outcome.of(lambda: chainrule.vmap(p.fn, in_axes=(0, None))(xs, s))
    out += [f"vmap: {d}" for d in differences(loop, batched, exact=False, rtol=1e-12,
                                               atol=1e-300)]
    return out
