"""Run one framework's workloads in this process and report JSON on stdout.

Started by the runner as ``python -m benchmarks._worker FRAMEWORK SCALE W1,W2,...``
with single-threaded BLAS already set in the environment.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
import tracemalloc

from . import _frameworks as F
from . import _problems as P

# Repeats after warm-up, and the time after which we stop repeating (whichever first;
# at least MIN_REPEATS are always taken).
REPEATS = {"full": 15, "quick": 3, "tiny": 1}
TIME_BUDGET_S = {"full": 4.0, "quick": 0.5, "tiny": 0.0}
MIN_REPEATS = 3
TOLERANCE = 1e-6


def time_it(run, scale: str) -> tuple[list[float], list[float]]:
    """(CPU times, wall times) of repeated runs after two warm-up runs.

    CPU time (all threads of this process) is the headline: the machine may be
    shared, and time spent waiting for a core is not the framework's cost.
    """
    run()  # warm-up (for jax_jit, this compiles)
    run()
    cpu: list[float] = []
    wall: list[float] = []
    start = time.perf_counter()
    repeats = REPEATS[scale]
    while len(cpu) < repeats and (
        len(cpu) < min(MIN_REPEATS, repeats) or time.perf_counter() - start < TIME_BUDGET_S[scale]
    ):
        c0, w0 = time.process_time(), time.perf_counter()
        run()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return cpu, wall


def peak_memory(run) -> int:
    """Peak bytes NumPy allocates during ``run()`` above what was alive before it."""
    run()  # warm-up: caches, lazily built tables
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def run_workload(framework: str, name: str, scale: str, builders=None) -> dict:
    """One workload on one framework: timing or memory, and the check against the reference."""
    builders = F.builders(framework) if builders is None else builders
    if name not in builders:
        return {"status": "n/a"}
    data = P.make_data(name, scale)
    run = builders[name](data)
    result = run()
    error = P.max_rel_error(result, P.REFERENCE[name](data))
    out = {"status": "ok" if error <= TOLERANCE else "MISMATCH", "max_rel_error": error}
    if framework in F.NUMPY_BASED:
        out["peak_bytes"] = peak_memory(run)
    if name in F.MEMORY_WORKLOADS:
        return out
    cpu, wall = time_it(run, scale)
    out["median_s"] = statistics.median(cpu)
    out["times_s"] = cpu
    out["wall_median_s"] = statistics.median(wall)
    if name == "scalar_chain":
        out["us_per_primitive"] = out["median_s"] / (data["iters"] * P.PRIMITIVES_PER_ITER) * 1e6
    return out


def main(argv: list[str]) -> None:
    framework, scale, names = argv[0], argv[1], argv[2].split(",")
    builders = F.builders(framework)
    report = {"framework": framework, "version": F.version(framework), "results": {}}
    for name in names:
        try:
            report["results"][name] = run_workload(framework, name, scale, builders)
        except Exception as exc:  # one failing workload must not hide the others
            report["results"][name] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
