"""chainrule.jit's performance cliffs of issue 32, item 12: one measurement each.

    python -m benchmarks.bench_jit_cliffs            # the issue's sizes
    python -m benchmarks.bench_jit_cliffs --quick    # smaller sizes, seconds

- **A long trace without repeats.** ``jit(grad(f))`` of a function of 30,000 calls drawn
  at random from a dozen (no loop to roll): its first call (the trace; the program is
  emitted when it first runs) against one eager gradient, in CPU time, and the peak
  memory each allocates (tracemalloc, a separate run); the second call (emit, the table,
  its first run) too. Targets: first call <= 3x eager, memory <= 2x.
- **An 80 MB index argument.** A cached call of ``jit(lambda x, i: np.sum(x[i]))`` with
  ``i`` an int64 array of 10 million entries, against the same NumPy expression: the
  difference is jit's overhead. Target: <= 1 ms.
- **Preallocate and fill.** ``out = np.zeros(n); out[k] = ...`` in a loop, called on new
  values each time: how many calls the jitted function traces (it used to trace each one,
  guarded on the values written, up to ``max_variants``), runs eagerly or answers from a
  program, and its call against eager evaluation. (A program for this pattern needs
  arrays that take traced writes, issue 38; until then the function is traced once and
  runs eagerly.)

One process, single-threaded BLAS; every jitted result is checked against eager
evaluation (bit for bit) before it is timed.
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import gc  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as onp  # noqa: E402

from ._timing import peak_bytes as _peak_bytes  # noqa: E402
from .bench_jit import _same_bits, cpu_time, interleaved_times  # noqa: E402

SIZES = {
    "full": dict(ops=30_000, index_entries=10_000_000, fill=200, fill_calls=50),
    "quick": dict(ops=3_000, index_entries=1_000_000, fill=50, fill_calls=20),
}


def random_program(n_ops: int, seed: int = 0):
    """A function of ``n_ops`` steps ``x = x + c * g(x)`` on an array of 8 numbers, each
    ``g`` drawn at random from a dozen (unary functions, products and sums with random
    constants, a sum), so that no run of calls repeats: nothing to roll into a loop. (The
    steps stay near the identity: the gradient neither vanishes nor overflows.)"""
    import chainrule.numpy as np

    rng = onp.random.default_rng(seed)
    steps = [np.sin, np.cos, np.tanh, np.arctan, lambda v: v * v / (1.0 + v * v),
             lambda v: np.sqrt(v * v + 1.0), lambda v: np.log(v * v + 1.0), np.exp,
             lambda v: v * c_of(v), lambda v: v + c_of(v), lambda v: np.sum(v) * v,
             lambda v: v / (1.0 + np.abs(v))]
    kinds = rng.integers(0, len(steps), n_ops).tolist()
    consts = rng.uniform(-0.05, 0.05, (n_ops, 8))
    scales = rng.uniform(-0.01, 0.01, n_ops).tolist()
    current = [0]

    def c_of(v):
        return consts[current[0]]

    def f(x):
        for k, (kind, scale) in enumerate(zip(kinds, scales)):
            current[0] = k
            x = x + scale * steps[kind](x)
        return np.sum(x)

    return f


def long_trace(n_ops: int, repeats: int) -> dict:
    import chainrule as cr

    f = random_program(n_ops)
    x = onp.linspace(0.1, 0.8, 8)
    eager = cr.grad(f)
    want = eager(x)
    jitted = cr.jit(cr.grad(f))
    if not _same_bits(jitted(x), want) or not _same_bits(jitted(x), want):
        raise AssertionError("long trace: chainrule.jit differs from eager chainrule")
    eagers, firsts, seconds = [], [], []
    for _ in range(repeats):
        gc.collect()
        t0 = time.process_time()
        eager(x)
        eagers.append(time.process_time() - t0)
        fresh = cr.jit(cr.grad(f))
        gc.collect()
        t0 = time.process_time()
        fresh(x)
        firsts.append(time.process_time() - t0)
        t0 = time.process_time()
        fresh(x)  # (emits the program: a table, made at this run too)
        seconds.append(time.process_time() - t0)
    mem_eager = _peak_bytes(lambda: eager(x))
    mem_first, mem_second = _two_calls_peaks(cr.jit(cr.grad(f)), x)
    return dict(eager=min(eagers), first=min(firsts), second=min(seconds),
                mem_eager=mem_eager, mem_first=mem_first, mem_second=mem_second,
                cached=cpu_time(lambda: jitted(x), repeats))


def _two_calls_peaks(fresh, x) -> tuple[int, int]:
    """Peak bytes allocated (tracemalloc) during the first call of ``fresh``, and during
    its second call counting what the first left (the record, until the program is
    emitted)."""
    gc.collect()
    tracemalloc.start()
    try:
        fresh(x)
        first = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        fresh(x)
        return first, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def index_argument(entries: int, repeats: int) -> dict:
    import chainrule as cr
    import chainrule.numpy as np

    rng = onp.random.default_rng(0)
    x = rng.standard_normal(1000)
    index = rng.integers(0, 1000, entries)

    def f(x, i):
        return np.sum(x[i])

    jitted = cr.jit(f)
    if not _same_bits(jitted(x, index), f(x, index)) or \
            not _same_bits(jitted(x, index), onp.sum(x[index])):
        raise AssertionError("index argument: chainrule.jit differs from eager chainrule")
    t_jit, t_numpy = interleaved_times([lambda: jitted(x, index), lambda: onp.sum(x[index])],
                                       repeats)
    return dict(jit=t_jit, numpy=t_numpy, nbytes=index.nbytes,
                misses=jitted.cache_info().misses)


def preallocate_and_fill(n: int, calls: int, repeats: int) -> dict:
    import chainrule as cr
    import chainrule.numpy as np

    def f(x):
        out = np.zeros(n)
        for k in range(n):
            out[k] = np.sin(x[k]) * x[(k + 1) % n]
        return out

    jitted = cr.jit(f)
    rng = onp.random.default_rng(0)
    xs = [rng.standard_normal(n) for _ in range(calls)]
    for x in xs:
        if not _same_bits(jitted(x), f(x)):
            raise AssertionError("preallocate and fill: chainrule.jit differs from eager")
    info = jitted.cache_info()
    t_jit, t_eager = interleaved_times([lambda: jitted(xs[0]), lambda: f(xs[0])], repeats)
    return dict(calls=calls, misses=info.misses, eager_calls=info.eager, hits=info.hits,
                jit=t_jit, eager=t_eager)


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def main(argv: list[str]) -> None:
    scale = "quick" if "--quick" in argv else "full"
    s = SIZES[scale]
    repeats = 3 if scale == "full" else 2
    print(f"chainrule.jit's cliffs (issue 32, item 12), scale {scale}, CPU time\n")
    long = long_trace(s["ops"], repeats)
    ratio, mem_ratio = long["first"] / long["eager"], long["mem_first"] / long["mem_eager"]
    print(f"| long trace without repeats ({s['ops']} calls, jit(grad(f))) | eager gradient | "
          f"jit, first call | first / eager | jit, second call | jit, cached |")
    print("|---|---|---|---|---|---|")
    print(f"| CPU time | {_fmt(long['eager'])} | {_fmt(long['first'])} | {ratio:.2f} | "
          f"{_fmt(long['second'])} | {_fmt(long['cached'])} |")
    print(f"| peak memory (tracemalloc) | {long['mem_eager'] / 2**20:.1f} MB | "
          f"{long['mem_first'] / 2**20:.1f} MB | {mem_ratio:.2f} | "
          f"{long['mem_second'] / 2**20:.1f} MB | |\n")
    index = index_argument(s["index_entries"], 5 * repeats)
    overhead = index["jit"] - index["numpy"]
    print(f"| cached call with a {index['nbytes'] / 1e6:.0f} MB int64 index argument | jit | "
          f"NumPy | jit's overhead |")
    print("|---|---|---|---|")
    print(f"| np.sum(x[i]) | {_fmt(index['jit'])} | {_fmt(index['numpy'])} | "
          f"{_fmt(overhead)} |\n")
    fill = preallocate_and_fill(s["fill"], s["fill_calls"], 5 * repeats)
    print(f"| preallocate and fill, {s['fill']} entries, {fill['calls']} calls on new values "
          f"| traces | eager calls | cached calls | jit, cached | eager |")
    print("|---|---|---|---|---|---|")
    print(f"| out[k] = sin(x[k]) * x[k+1] | {fill['misses']} | {fill['eager_calls']} | "
          f"{fill['hits']} | {_fmt(fill['jit'])} | {_fmt(fill['eager'])} |\n")
    print("| target (issue 32, item 12) | measured | met |")
    print("|---|---|---|")
    print(f"| long trace: first call / eager <= 3 | {ratio:.2f} | "
          f"{'yes' if ratio <= 3 else '**no**'} |")
    print(f"| long trace: peak memory / eager <= 2 | {mem_ratio:.2f} | "
          f"{'yes' if mem_ratio <= 2 else '**no**'} |")
    print(f"| 80 MB index argument: overhead <= 1 ms | {_fmt(overhead)} | "
          f"{'yes' if overhead <= 1e-3 else '**no**'} |")
    print(f"| preallocate and fill: traced once, not once per call | {fill['misses']} "
          f"traces in {fill['calls']} calls | {'yes' if fill['misses'] == 1 else '**no**'} |")


if __name__ == "__main__":
    main(sys.argv[1:])
