"""chainrule.jit against eager chainrule, hand-written NumPy and JAX jit (issue 20).

    python -m benchmarks.bench_jit            # full sizes, Markdown tables on stdout
    python -m benchmarks.bench_jit --quick    # smaller sizes, seconds

One process, single-threaded BLAS/XLA, every figure from the same run. Per workload of
``benchmarks._problems``: one eager gradient, the first jitted call (the trace, a fresh
``jit`` each time: it answers from its trace, and the program is emitted and compiled
when it first runs, at the second call, timed too; a garbage collection before each
eager and first-call sample, so that neither pays for the other's garbage), a cached
jitted call,
and the Python-level calls per primitive of a cached call (cProfile, divided by the
primitive calls one run of the emitted program makes). Then the overhead of a cached call
that does no work, and an autograd-style optimizer loop (``misc.optimizers.adam``, 1000
steps of logistic regression), eager against jitted. Last, JAX jit's cached call (when JAX
is installed; otherwise the column says so), by the wall clock (see ``jax_pairs``).
Every jitted result is checked against the eager one (bit for bit) before it is timed.
Each ratio comes from its own pair of interleaved samples (ABBA order): eager with first
calls, jit with hand-written NumPy, jit with JAX jit (the "jit, cached" column is the
first pair's).
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import cProfile  # noqa: E402
import gc  # noqa: E402
import pstats  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as onp  # noqa: E402

from . import _frameworks as F  # noqa: E402
from . import _problems as P  # noqa: E402

WORKLOADS = ("scalar_chain", "mlp", "rnn", "hessian", "jacobian")


def cpu_time(fn, repeats: int, inner: int = 1) -> float:
    """Median CPU seconds of one call of ``fn`` (``inner`` calls per sample)."""
    return interleaved_times([fn], repeats, inner)[0]


def interleaved_times(fns: list, repeats: int, inner: int = 1,
                      clock=time.process_time) -> list[float]:
    """Median seconds (CPU seconds by default) of one call of each of ``fns``, their
    samples interleaved (the machine is shared: a burst of load then falls on all of them
    alike)."""
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    for _ in range(repeats):
        for k in order:
            t0 = clock()
            for _ in range(inner):
                fns[k]()
            samples[k].append((clock() - t0) / inner)
        order.reverse()  # ABBA: neither always runs after the other's cache traffic
    return [statistics.median(times) for times in samples]


def _leaves(tree) -> list:
    if isinstance(tree, (list, tuple)):
        return [x for t in tree for x in _leaves(t)]
    return [onp.asarray(tree)]


def _same_bits(a, b) -> bool:
    la, lb = _leaves(a), _leaves(b)
    return len(la) == len(lb) and all(
        x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
        for x, y in zip(la, lb))


def python_calls(fn) -> int:
    """Python-level calls (functions and C functions) made by one call of ``fn``, less
    the profiler's own (``fn`` itself and the profiler's disable)."""

    def count(f) -> int:
        profile = cProfile.Profile()
        profile.runcall(f)
        return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]

    return count(fn) - count(lambda: None)


def program_primitives(build, data) -> int:
    """Primitive calls one run of the program a fresh jitted ``build(data)`` emits makes
    (dead code, common subexpressions and dropped products by one excluded; the calls of
    a rolled loop counted once per iteration)."""
    emit_module = sys.modules["chainrule.jit._emit"]
    emit, programs = emit_module.emit, []

    def recording_emit(*args, **kwargs):
        programs.append(emit(*args, **kwargs))
        return programs[-1]

    emit_module.emit = recording_emit
    try:
        run = build(data)
        run()
        run()  # (a program is emitted when it first runs: at the second call)
    finally:
        emit_module.emit = emit
    return sum(p.n_calls for p in programs)


def _jax_builders() -> dict | None:
    try:
        return F.builders("jax_jit")
    except ImportError:
        return None


def workload_rows(scale: str, repeats: int) -> list[dict]:
    eager_b, jit_b, hand_b = (F.builders(f) for f in ("chainrule", "chainrule_jit", "numpy"))
    rows = []
    for name in WORKLOADS:
        data = P.make_data(name, scale)
        eager = eager_b[name](data)
        want = eager()
        jitted = jit_b[name](data)
        got = jitted()  # traces
        if not _same_bits(jitted(), want) or not _same_bits(got, want):
            raise AssertionError(f"{name}: chainrule.jit differs from eager chainrule")
        eagers, firsts, seconds = [], [], []
        for _ in range(repeats):  # one eager gradient, then a fresh jit's first two calls
            gc.collect()  # (neither pays for collecting the other's garbage)
            t0 = time.process_time()
            eager()
            eagers.append(time.process_time() - t0)
            fresh = jit_b[name](data)
            gc.collect()
            t0 = time.process_time()
            fresh()
            firsts.append(time.process_time() - t0)
            t0 = time.process_time()
            fresh()  # (emits the program and compiles it)
            seconds.append(time.process_time() - t0)
        t_eager, t_first = statistics.median(eagers), statistics.median(firsts)
        t_jit, t_hand = interleaved_times([jitted, hand_b[name](data)], 3 * repeats, _inner(name))
        prims = program_primitives(jit_b[name], data)
        calls = python_calls(jitted)
        rows.append(dict(name=name, eager=t_eager, first=t_first,
                         second=statistics.median(seconds), jit=t_jit, hand=t_hand,
                         jax=None, jit_by_jax=None, prims=prims, calls=calls,
                         jitted=jitted, want=want, data=data))
    return rows


def _inner(name: str) -> int:
    return 20 if name == "jacobian" or name == "hessian" else 1


def jax_pairs(rows: list[dict], repeats: int) -> None:
    """JAX jit's cached call against chainrule.jit's, each row's pair interleaved, by the
    wall clock and after every other measurement: JAX computes on worker threads that spin
    on after a call, and the process's CPU time charged that to the samples that followed
    (chainrule's, which it doubled on the Hessian)."""
    jax_b = _jax_builders()
    if jax_b is None:
        return
    for r in rows:
        run_jax = jax_b[r["name"]](r["data"])
        onp.testing.assert_allclose(onp.concatenate([x.ravel() for x in _leaves(run_jax())]),
                                    onp.concatenate([x.ravel() for x in _leaves(r["want"])]),
                                    rtol=1e-9, atol=1e-12)
        r["jit_by_jax"], r["jax"] = interleaved_times([r["jitted"], run_jax], 3 * repeats,
                                                      _inner(r["name"]), clock=time.perf_counter)


def no_work_overhead(repeats: int) -> list[tuple[str, float, float]]:
    """Seconds per call of a jitted identity and of the plain function, per argument kind."""
    import chainrule as cr

    cases = [
        ("one float64 array", (onp.ones(3),)),
        ("one Python float", (0.5,)),
        ("a tuple of 4 arrays and an int", ((onp.ones(3), onp.ones((2, 2)), onp.ones(4),
                                             onp.ones(1)), 3)),
    ]
    rows = []
    for label, args in cases:
        plain = lambda *a: a[0]
        jitted = cr.jit(plain)
        jitted(*args)
        t_plain = cpu_time(lambda f=plain, a=args: f(*a), repeats, 2000)
        t_jit = cpu_time(lambda f=jitted, a=args: f(*a), repeats, 2000)
        rows.append((label, t_jit, t_plain))
    return rows


def adam_loop(n_iters: int, repeats: int) -> tuple[float, float]:
    """Seconds for ``n_iters`` steps of adam on a small logistic regression, eager gradient
    and jitted gradient (the iteration number is not passed to the jitted function: a
    Python int is part of jit's signature, so it would retrace on every step)."""
    import chainrule as cr
    import chainrule.numpy as anp
    from chainrule.misc.optimizers import adam

    rng = onp.random.default_rng(0)
    inputs = rng.standard_normal((100, 5))
    targets = (inputs @ onp.array([1.0, -2.0, 0.5, 0.0, 3.0]) > 0).astype(float)

    def loss(w, x, t):
        p = 0.5 * (anp.tanh(anp.dot(x, w) / 2) + 1)  # sigmoid
        return -anp.sum(anp.log(p * t + (1 - p) * (1 - t)))

    g_eager = cr.grad(loss)
    g_jit = cr.jit(cr.grad(loss))
    w0 = onp.zeros(5)

    def eager():
        return adam(lambda w, i: g_eager(w, inputs, targets), w0, num_iters=n_iters,
                    step_size=0.1)

    def jitted():
        return adam(lambda w, i: g_jit(w, inputs, targets), w0, num_iters=n_iters,
                    step_size=0.1)

    if not _same_bits(eager(), jitted()):
        raise AssertionError("adam: the jitted loop differs from the eager loop")
    # (interleaved, as the other pairs: the speed-up is a same-run ratio, and a burst of
    # the shared machine's load then falls on both loops alike)
    t_eager, t_jit = interleaved_times([eager, jitted], repeats)
    return t_eager, t_jit


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} µs"


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    scale, repeats, steps = ("quick", 5, 200) if quick else ("full", 15, 1000)
    rows = workload_rows(scale, repeats)
    overhead = no_work_overhead(repeats)
    t_eager_loop, t_jit_loop = adam_loop(steps, max(3, repeats // 3))
    jax_pairs(rows, repeats)  # (last: see jax_pairs)
    jax_note = "" if _jax_builders() is not None else " (JAX not installed: n/a)"
    chain_iters = P.SIZES[scale]["chain_iters"]

    print(f"chainrule.jit, scale {scale}, CPU time (the JAX pairs: wall-clock time), "
          f"median of {repeats}{jax_note}\n")
    print("| workload | eager chainrule | jit, first call | first / eager | jit, second call "
          "| jit, cached | hand-written NumPy | JAX jit | jit / JAX jit | Python calls per "
          "primitive, cached |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        per = ""
        if r["name"] == "scalar_chain":
            per = f" ({r['jit'] / (chain_iters * P.PRIMITIVES_PER_ITER) * 1e6:.2f} µs/prim)"
        vs_jax = f"{r['jit_by_jax'] / r['jax']:.2f}" if r["jax"] else "n/a"
        print(f"| {r['name']} | {_fmt(r['eager'])} | {_fmt(r['first'])} | "
              f"{r['first'] / r['eager']:.1f} | {_fmt(r['second'])} | {_fmt(r['jit'])}{per} | "
              f"{_fmt(r['hand'])} | "
              f"{_fmt(r['jax'])} | {vs_jax} | {r['calls'] / r['prims']:.2f} "
              f"({r['calls']} / {r['prims']}) |")
    print("\n| cached call of a function with no work | jit | plain call | added |")
    print("|---|---|---|---|")
    for label, t_jit, t_plain in overhead:
        print(f"| {label} | {_fmt(t_jit)} | {_fmt(t_plain)} | {_fmt(t_jit - t_plain)} |")
    print(f"\nadam, {steps} steps of logistic regression (100 x 5): eager gradient "
          f"{_fmt(t_eager_loop)}, jitted gradient {_fmt(t_jit_loop)}, "
          f"speed-up {t_eager_loop / t_jit_loop:.1f}x")
    by = {r["name"]: r for r in rows}
    print("\n| target (issue 20) | measured | met |\n|---|---|---|")
    us = by["scalar_chain"]["jit"] / (chain_iters * P.PRIMITIVES_PER_ITER) * 1e6
    print(f"| scalar chain <= 0.5 µs/primitive, cached | {us:.2f} | {_met(us <= 0.5)} |")
    for name in ("mlp", "rnn"):
        ratio = by[name]["jit"] / by[name]["hand"]
        print(f"| {name} jit / hand-written <= 1.03 | {ratio:.2f} | {_met(ratio <= 1.03)} |")
    for name in ("jacobian", "hessian"):
        if by[name]["jax"]:
            ratio = by[name]["jit_by_jax"] / by[name]["jax"]
            print(f"| {name} jit / JAX jit <= 1 | {ratio:.2f} | {_met(ratio <= 1)} |")
    for r in rows:
        ratio = r["first"] / r["eager"]
        print(f"| {r['name']} first call / eager <= 3 | {ratio:.1f} | {_met(ratio <= 3)} |")
    worst = max(t_jit - t_plain for _, t_jit, t_plain in overhead)
    print(f"| no-work cached call adds <= 10 µs (worst case above) | {worst * 1e6:.1f} µs | "
          f"{_met(worst <= 10e-6)} |")
    worst_calls = max(r["calls"] / r["prims"] for r in rows)
    print(f"| Python calls per primitive, cached, <= 1.2 (worst workload) | {worst_calls:.2f} "
          f"| {_met(worst_calls <= 1.2)} |")
    speedup = t_eager_loop / t_jit_loop
    print(f"| adam loop jitted / eager speed >= 5 | {speedup:.1f} | {_met(speedup >= 5)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
