"""vmap benchmark: per-example gradients, data-dependent control flow, batching rules.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_vmap [--skip-large] [--only ...]

Sections (``--only gradients,control,rules,programs,contract``; ``--verbose`` prints the
programs and cases over 1.5 times the loop):

- gradients: per-example gradients at batch 256 of an MLP 32-64-1 (squared error), where a
  Python loop's overhead dominates, and of an MLP 784-256-256-10 (``--skip-large`` leaves
  it out), where the per-example gradients themselves (~550 MB) and memory bandwidth rule.
  Rows: chainrule's vmap(grad), a Python loop of chainrule's grad, a hand-written
  vectorised NumPy per-example gradient (large model), torch.func.vmap(grad) (one torch
  thread) and JAX's vmap(grad), eager and jitted (each when installed). Every result is
  checked against the loop's (small model) or the hand-written one's (large model) to
  1e-12 before it is timed.
- control: Python decisions on the data. Each program's vmap against the loop
  ``numpy.stack([f(x) for x in xs])``: the first call of a new mapped function (where the
  examples disagree it splits, within the budget, then runs the rest one by one) and later
  calls (a function whose calls cost more than the loop runs as the loop).
- rules: primitives that ran once per example before their batching rules (kron, cov,
  bincount, SciPy's solve_triangular).
- programs: the vmap contract's generated programs with decisions (tests/contracts/vmap.py),
  batch 128: the distribution of vmap's time over the loop's (median, largest, how many
  over 1.5x), first calls and later calls.
- contract: the vmap contract's own first 200 cases at seed 0 (its modes, nested vmaps and
  grad included, and its batches of 1 to 8 examples), less jit(vmap), empty batches and
  cases whose loop raises: the same distribution.

Times are the least CPU time (``time.process_time``: the machine is shared; JAX's by the
wall clock, its worker threads spin on after a call) of several runs, vmap and the loop
taking turns (``--median``: the middle one, for control, programs and contract); every
answer is checked against the loop's first (the contract section's by the contract itself,
``python -m tests.contracts --only vmap``).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as onp

import chainrule as cr
import chainrule.numpy as np

from ._timing import best_of as _best_of

BATCH = 256


def _check(got, want) -> None:
    for g, w in zip(got, want):
        onp.testing.assert_allclose(onp.asarray(g), w, rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------- the models
def small_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    return (h @ w2 + b2 - y) ** 2


def large_loss(params, x, y):
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    return np.sum((h2 @ w3 + b3 - y) ** 2)


def _small_data(r):
    params = (r.normal(size=(32, 64)) / 6, r.normal(size=64) / 6, r.normal(size=64) / 8, 0.1)
    return params, r.normal(size=(BATCH, 32)), r.normal(size=BATCH)


def _large_data(r):
    sizes = [(784, 256), (256, 256), (256, 10)]
    params = []
    for n_in, n_out in sizes:
        params += [r.normal(size=(n_in, n_out)) / onp.sqrt(n_in), r.normal(size=n_out) / 10]
    labels = onp.eye(10)[r.integers(0, 10, BATCH)]
    return tuple(params), r.normal(size=(BATCH, 784)), labels


def hand_written_large(params, xs, ys):
    """Per-example gradients of large_loss, vectorised over the batch by hand."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = onp.tanh(xs @ w1 + b1)
    h2 = onp.tanh(h1 @ w2 + b2)
    d3 = 2.0 * (h2 @ w3 + b3 - ys)
    d2 = (d3 @ w3.T) * (1.0 - h2 ** 2)
    d1 = (d2 @ w2.T) * (1.0 - h1 ** 2)
    outer = lambda a, d: a[:, :, None] * d[:, None, :]  # noqa: E731
    return [outer(xs, d1), d1, outer(h1, d2), d2, outer(h2, d3), d3]


# ----------------------------------------------------------------------------- peers
def _torch_rows(loss_src: str, params, xs, ys, want) -> list[tuple[str, float]]:
    try:
        import torch
        from torch.func import grad, vmap
    except ImportError:
        return []
    torch.set_num_threads(1)  # (as OPENBLAS_NUM_THREADS=1 for NumPy)
    tparams = tuple(torch.tensor(onp.asarray(p), dtype=torch.float64) for p in params)
    namespace = {"torch": torch}
    exec(loss_src.replace("np.", "torch."), namespace)  # the same loss, written for torch
    tgrad = vmap(grad(namespace["loss"]), in_dims=(None, 0, 0))
    tx, ty = torch.tensor(xs), torch.tensor(ys)
    _check([g.numpy() for g in tgrad(tparams, tx, ty)], want)
    return [("torch.func.vmap(grad)", _best_of(lambda: tgrad(tparams, tx, ty)))]


def _jax_rows(loss_src: str, params, xs, ys, want) -> list[tuple[str, float]]:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return []
    jax.config.update("jax_enable_x64", True)
    namespace = {"jnp": jnp}
    exec(loss_src.replace("np.", "jnp."), namespace)
    jgrad = jax.vmap(jax.grad(namespace["loss"]), in_axes=(None, 0, 0))
    jparams = tuple(jnp.asarray(p, dtype=jnp.float64) for p in params)
    jx, jy = jnp.asarray(xs), jnp.asarray(ys)
    _check(jgrad(jparams, jx, jy), want)
    jitted = jax.jit(jgrad)
    _check(jitted(jparams, jx, jy), want)
    block = lambda out: [o.block_until_ready() for o in out]  # noqa: E731
    wall = time.perf_counter
    return [("JAX vmap(grad)", _best_of(lambda: block(jgrad(jparams, jx, jy)), clock=wall)),
            ("JAX jit(vmap(grad))", _best_of(lambda: block(jitted(jparams, jx, jy)),
                                             clock=wall))]


_SMALL_SRC = """
def loss(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    return (h @ w2 + b2 - y) ** 2
"""

_LARGE_SRC = """
def loss(params, x, y):
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    return np.sum((h2 @ w3 + b3 - y) ** 2)
"""


# ----------------------------------------------------------------------------- runs
def run_small() -> list[tuple[str, float]]:
    params, xs, ys = _small_data(onp.random.default_rng(0))
    per_example = cr.vmap(cr.grad(small_loss), in_axes=(None, 0, 0))
    one = cr.grad(small_loss)

    def loop():
        grads = [one(params, x, y) for x, y in zip(xs, ys)]
        return [onp.stack(g) for g in zip(*grads)]

    want = loop()
    _check(per_example(params, xs, ys), want)
    rows = [("chainrule vmap(grad)", _best_of(lambda: per_example(params, xs, ys))),
            ("chainrule loop of grad", _best_of(loop))]
    return rows + _torch_rows(_SMALL_SRC, params, xs, ys, want) + _jax_rows(
        _SMALL_SRC, params, xs, ys, want)


def run_large() -> list[tuple[str, float]]:
    params, xs, ys = _large_data(onp.random.default_rng(1))
    per_example = cr.vmap(cr.grad(large_loss), in_axes=(None, 0, 0))
    want = hand_written_large(params, xs, ys)
    _check(per_example(params, xs, ys), want)
    one = cr.grad(large_loss)
    _check([g[:4] for g in zip(*[one(params, x, y) for x, y in zip(xs[:4], ys[:4])])],
           [w[:4] for w in want])
    rows = [("hand-written NumPy", _best_of(lambda: hand_written_large(params, xs, ys))),
            ("chainrule vmap(grad)", _best_of(lambda: per_example(params, xs, ys))),
            ("chainrule loop of grad", _best_of(lambda: [one(params, x, y)
                                                         for x, y in zip(xs, ys)], 1))]
    return rows + _torch_rows(_LARGE_SRC, params, xs, ys, want) + _jax_rows(
        _LARGE_SRC, params, xs, ys, want)


# ----------------------------------------------------------------------------- control flow
def twelve_decisions(x):
    """12 decisions in a row on an example's entries (2^12 ways through)."""
    for i in range(12):
        if x[i] > 0:
            x = x * 1.01
        else:
            x = x - 0.01
    return x


def decide(x, y):
    return x * y if x > y else x - y


def newton_sqrt(a):
    """A while loop whose trip count differs per example."""
    x = a
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def branchy_layer(x, w):
    """One decision (two groups) in front of a layer of real work."""
    h = np.tanh(x @ w)
    if np.sum(x) > 0:
        return np.tanh(h @ w.T) * h @ w
    return np.sin(h @ w.T) @ w


def rolls_then_decision(x):
    """A decision late in the function, after primitives run per example inside the batch
    (roll without an axis has no batching rule), that gives each example a group of its own:
    the batched run costs about the loop before vmap learns that it splits."""
    for _ in range(6):
        x = np.roll(x, 1) * 0.9
    return x * float(np.max(x))


def _seconds(fn, prepare=None) -> float:
    """The CPU time of one call (this process's: the 2-core machine is shared), after
    ``prepare()`` (untimed)."""
    if prepare is not None:
        prepare()
    start = time.process_time()
    fn()
    return time.process_time() - start


def _first_and_later(make, args, loop, repeats: int = 15) -> tuple[float, float, float]:
    """The least (``--median``: middle) time of the first call of a new mapped function, of
    a later call, and of the loop, in seconds (the three taking turns)."""
    want = loop()
    mapped = make()
    onp.testing.assert_allclose(mapped(*args), want, rtol=1e-12, atol=1e-14)
    for _ in range(3):
        mapped(*args)
    first, later, looped = [], [], []
    for _ in range(repeats):
        fresh = make()
        first.append(_seconds(lambda fresh=fresh: fresh(*args)))
        later.append(_seconds(lambda: mapped(*args)))
        looped.append(_seconds(loop))
    return _STATISTIC(first), _STATISTIC(later), _STATISTIC(looped)


# the statistic of the runs (``--median``: their middle value, which counts calls that take
# a slower way: a trial, a restart; the least is what a call costs on a quiet machine)
_STATISTIC = min


def run_control(repeats: int = 15) -> list[tuple[str, float, float, float]]:
    r = onp.random.default_rng(2)
    xs = r.normal(size=(256, 12))
    agree = onp.abs(xs)
    a, b = r.normal(size=40), r.normal(size=40)
    scales = onp.exp(r.uniform(-8, 8, size=256))
    layer_x, layer_w = r.normal(size=(256, 64)), r.normal(size=(64, 64)) / 8
    rolled = r.normal(size=(128, 16))
    cases = [
        ("12 decisions, batch 256, examples disagree", lambda: cr.vmap(twelve_decisions),
         (xs,), lambda: onp.stack([twelve_decisions(x) for x in xs])),
        ("12 decisions, batch 256, examples agree", lambda: cr.vmap(twelve_decisions),
         (agree,), lambda: onp.stack([twelve_decisions(x) for x in agree])),
        ("vmap(vmap(decision)), 40 x 40",
         lambda: cr.vmap(cr.vmap(decide, in_axes=(None, 0)), in_axes=(0, None)), (a, b),
         lambda: onp.array([[decide(x, y) for y in b] for x in a])),
        ("Newton's sqrt, trip counts differ, batch 256", lambda: cr.vmap(newton_sqrt),
         (scales,), lambda: onp.stack([newton_sqrt(s) for s in scales])),
        ("one decision (two groups) before a 64x64 layer, batch 256",
         lambda: cr.vmap(branchy_layer, in_axes=(0, None)), (layer_x, layer_w),
         lambda: onp.stack([branchy_layer(x, layer_w) for x in layer_x])),
        ("a decision after 6 rolls run per example, batch 128",
         lambda: cr.vmap(rolls_then_decision), (rolled,),
         lambda: onp.stack([rolls_then_decision(x) for x in rolled])),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the split notes)
        return [(name, *_first_and_later(make, args, loop, repeats))
                for name, make, args, loop in cases]


# ----------------------------------------------------------------------------- rules
def run_rules(repeats: int = 15) -> list[tuple[str, float, float, float]]:
    import chainrule.scipy.linalg as sla

    r = onp.random.default_rng(3)
    x, y = r.normal(size=(256, 8)), r.normal(size=(256, 6, 5))
    counts = r.integers(0, 16, size=(256, 40))
    counts[:, 0] = 15
    triangles = onp.tril(r.normal(size=(256, 8, 8))) + 4 * onp.eye(8)
    cases = [
        ("kron(x, x)", lambda x: np.kron(x, x), (x,)),
        ("cov(y)", lambda y: np.cov(y), (y,)),
        ("bincount(i)", lambda i: np.bincount(i), (counts,)),
        ("solve_triangular(a, x)",
         lambda a, b: sla.solve_triangular(a, b, lower=True), (triangles, x)),
    ]
    rows = []
    for name, fn, args in cases:
        def loop(fn=fn, args=args):
            return onp.stack([fn(*example) for example in zip(*args)])
        first, later, looped = _first_and_later(lambda fn=fn: cr.vmap(fn), args, loop,
                                                repeats)
        rows.append((name, first, later, looped))
    return rows


# ----------------------------------------------------------------------------- programs
def run_programs(count: int = 200, batch: int = 128, verbose: bool = False):
    """The contract's generated programs that decide on their data, at batch ``batch``:
    the distribution of vmap's time over the loop's (first calls, later calls)."""
    from tests.contracts import _programs

    hazards = {"branch", "loop", "convert", "nonsmooth", "index", "inplace"}
    firsts, laters, skipped = [], [], 0
    rng = onp.random.default_rng(4)
    while len(firsts) < count:
        p = _programs.generate(rng, hazards, output="vec", dtype="float64")
        if not p.hazards & {"branch", "loop", "convert"}:
            continue
        pairs = p.inputs(rng, batch)
        xs, s = onp.stack([x for x, _ in pairs]), 0.7

        def loop(p=p, xs=xs, s=s):
            return onp.stack([p.fn(x.copy(), s) for x in xs])

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                first, later, looped = _first_and_later(
                    lambda p=p: cr.vmap(p.fn, in_axes=(0, None)), (xs, s), loop, repeats=7)
            except (FloatingPointError, ValueError, ArithmeticError):
                skipped += 1
                continue
        firsts.append(first / looped)
        laters.append(later / looped)
        if verbose and max(first, later) > 1.5 * looped:
            print(f"program {len(firsts) - 1}: loop {looped * 1e3:.2f} ms, first "
                  f"{first / looped:.2f}x, later {later / looped:.2f}x\n{p.source}")
    return _distribution(firsts, laters, skipped)


# ----------------------------------------------------------------------------- contract
def _contract_case_rows(case, repeats: int):
    """(first call, later call, loop) least (``--median``: middle) CPU seconds of one
    contract case, or None where the loop raises or its answers cannot be stacked (nothing
    to compare with)."""
    from tests.contracts import vmap as contract

    p = case.program

    def start():  # (closure arrays and random generators as the contract starts them)
        contract._start(p)

    def loop():  # (the loop's answer: its stacks, moved where out_axes puts the batch)
        return contract._out_axis(case, contract._stack_tree(contract._loop(case, case.xs,
                                                                              case.s)))

    def mapped_call(mapped):
        return mapped(case.xs, case.s)

    try:
        start()
        loop()
    except Exception:  # noqa: BLE001  (the loop raises: vmap raises its error too)
        return None
    later_fn = contract._mapped(case)
    start()
    mapped_call(later_fn)
    first, later, looped = [], [], []
    for _ in range(repeats):
        fresh = contract._mapped(case)
        first.append(_seconds(lambda fresh=fresh: mapped_call(fresh), start))
        later.append(_seconds(lambda: mapped_call(later_fn), start))
        looped.append(_seconds(loop, start))
    return _STATISTIC(first), _STATISTIC(later), _STATISTIC(looped)


def run_contract(count: int = 200, seed: int = 0, repeats: int = 9, verbose: bool = False):
    """The vmap contract's first ``count`` cases at ``seed`` (its programs, modes and batch
    sizes: 1 to 8 examples, nested 1-3 by 2-4), less jit(vmap) (its first call traces),
    empty batches (no loop) and cases whose loop raises: vmap's time over the loop's."""
    from tests.contracts import vmap as contract

    rng = onp.random.default_rng(seed)
    firsts, laters, skipped = [], [], 0
    for index in range(count):
        with warnings.catch_warnings(), onp.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # (edge values overflow as the contract makes them)
            case = contract.generate(rng)
            if case.mode == "jit" or not contract._size(case, case.xs):
                skipped += 1
                continue
            times = _contract_case_rows(case, repeats)
        if times is None:
            skipped += 1
            continue
        first, later, looped = times
        firsts.append(first / looped)
        laters.append(later / looped)
        if verbose and max(first, later) > 1.5 * looped:
            print(f"case {index} ({case.mode}, {len(case.xs)} examples): loop "
                  f"{looped * 1e6:.0f} us, first {first / looped:.2f}x, later "
                  f"{later / looped:.2f}x")
    return _distribution(firsts, laters, skipped)


def _distribution(firsts: list, laters: list, skipped: int):
    rows = []
    for name, ratios in (("first call", firsts), ("later calls", laters)):
        ratios = onp.array(ratios)
        rows.append((name, len(ratios), float(onp.median(ratios)), float(ratios.max()),
                     int((ratios > 1.5).sum())))
    return rows, skipped


def _print(title: str, rows, reference: str) -> None:
    base = dict(rows)[reference]
    print(title)
    print(f"{'method':<28}{'ms':>10}{'time / ' + reference:>34}")
    for name, seconds in rows:
        print(f"{name:<28}{seconds * 1e3:>10.2f}{seconds / base:>34.2f}")
    print()


def _print_versus_loop(title: str, rows, ratios_only: bool = False) -> None:
    print(title)
    if ratios_only:
        print(f"{'':<58}{'first call':>12}{'later calls':>13}")
        for name, first, later, _ in rows:
            print(f"{name:<58}{first:>11.2f}x{later:>12.2f}x")
    else:
        print(f"{'':<58}{'loop ms':>9}{'first call':>12}{'later calls':>13}")
        for name, first, later, looped in rows:
            print(f"{name:<58}{looped * 1e3:>9.2f}{first / looped:>11.2f}x"
                  f"{later / looped:>12.2f}x")
    print()


def _print_distribution(title: str, rows, skipped: int) -> None:
    print(f"{title}: vmap's time / the loop's ({skipped} left out)")
    print(f"{'':<14}{'programs':>10}{'median':>10}{'largest':>10}{'over 1.5x':>11}")
    for name, count, median, largest, over in rows:
        print(f"{name:<14}{count:>10}{median:>9.2f}x{largest:>9.2f}x{over:>11}")
    print()


SECTIONS = ("gradients", "control", "rules", "programs", "contract")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--verbose", action="store_true",
                        help="print the programs and cases over 1.5x the loop")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections of {', '.join(SECTIONS)}")
    parser.add_argument("--median", action="store_true",
                        help="the middle value of the runs of control, programs and contract "
                             "(by default their least)")
    parser.add_argument("--cases", type=int, default=200,
                        help="contract: how many of the vmap contract's cases (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="contract: the cases' seed")
    args = parser.parse_args(argv)
    if args.median:
        global _STATISTIC
        _STATISTIC = statistics.median
    only = set(args.only.split(","))
    if "gradients" in only:
        _print(f"per-example gradients, MLP 32-64-1, batch {BATCH}", run_small(),
               "chainrule vmap(grad)")
        if not args.skip_large:
            _print(f"per-example gradients, MLP 784-256-256-10, batch {BATCH}", run_large(),
                   "hand-written NumPy")
    if "control" in only:
        _print_versus_loop("decisions on the data: vmap's time / the loop's", run_control())
    if "rules" in only:
        _print_versus_loop("new batching rules, batch 256: vmap's time / the loop's",
                           run_rules())
    if "programs" in only:
        _print_distribution("generated programs with decisions, batch 128",
                            *run_programs(verbose=args.verbose))
    if "contract" in only:
        _print_distribution(f"the vmap contract's first {args.cases} cases at seed "
                            f"{args.seed} (batches of 1-8)",
                            *run_contract(args.cases, args.seed, verbose=args.verbose))


if __name__ == "__main__":
    main()
