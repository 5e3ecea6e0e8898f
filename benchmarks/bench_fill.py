"""Untraced cost of chainrule.numpy's constructors (issue 38): ``np.zeros`` then a fill
loop, with ``import chainrule.numpy as np`` against ``import numpy as np``, outside any
transform (where chainrule.numpy's constructors give plain ndarrays after one check).

``python -m benchmarks.bench_fill`` prints a Markdown table: best of rounds (rounds
alternate the two, so a busy machine hurts both alike) and the ratio chainrule / NumPy.
``--instructions`` counts instructions instead, under valgrind's callgrind (which the
machine's load does not change): each workload run N and 0 times in fresh interpreters,
the difference per run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import timeit

import numpy

import chainrule.numpy


def robertson_like(np, y):
    """An ODE right-hand side written allocate-then-fill (Robertson's kinetics)."""
    dydt = np.zeros_like(y)
    dydt[0] = -0.04 * y[0] + 1e4 * y[1] * y[2]
    dydt[1] = 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2
    dydt[2] = 3e7 * y[1] ** 2
    return dydt


def fill_loop(np, n):
    """``np.zeros(n)`` filled element by element."""
    a = np.zeros(n)
    for i in range(n):
        a[i] = i * 0.5
    return a


WORKLOADS = {
    "zeros(100) + 100 writes": lambda np: fill_loop(np, 100),
    "zeros(10) + 10 writes": lambda np: fill_loop(np, 10),
    "ODE right-hand side (zeros_like + 3 writes)":
        lambda np: robertson_like(np, numpy.array([1.0, 2e-5, 0.3])),
}


def main(rounds: int = 15, number: int = 2000) -> None:
    print("| workload | NumPy (µs) | chainrule.numpy (µs) | ratio |")
    print("|---|---|---|---|")
    for name, work in WORKLOADS.items():
        best = {numpy: float("inf"), chainrule.numpy: float("inf")}
        for _ in range(rounds):
            for module in best:
                seconds = timeit.timeit(lambda: work(module), number=number)  # noqa: B023
                best[module] = min(best[module], seconds / number)
        ratio = best[chainrule.numpy] / best[numpy]
        print(f"| {name} | {best[numpy] * 1e6:.2f} | {best[chainrule.numpy] * 1e6:.2f} | "
              f"{ratio:.3f} |")


def _instructions(module: str, workload: str, repeats: int) -> int:
    """Instructions callgrind counts for a fresh interpreter running ``workload``
    ``repeats`` times with ``module`` as np (hash seed fixed, address randomisation off)."""
    script = (f"import gc, {module} as np, benchmarks.bench_fill as b; gc.disable()\n"
              f"work = b.WORKLOADS[{workload!r}]\n"
              f"for _ in range({repeats}): work(np)")
    command = ["setarch", "-R", "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               sys.executable, "-c", script]
    run = subprocess.run(command, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    return int(re.search(r"Collected : (\d+)", run.stderr).group(1))


def main_instructions(repeats: int = 100_000) -> None:
    print("| workload | NumPy (instructions) | chainrule.numpy (instructions) | ratio |")
    print("|---|---|---|---|")
    for name in WORKLOADS:
        per_run = {module: (_instructions(module, name, repeats)
                            - _instructions(module, name, 0)) / repeats
                   for module in ("numpy", "chainrule.numpy")}
        print(f"| {name} | {per_run['numpy']:,.0f} | {per_run['chainrule.numpy']:,.0f} | "
              f"{per_run['chainrule.numpy'] / per_run['numpy']:.3f} |")


if __name__ == "__main__":
    main_instructions() if "--instructions" in sys.argv[1:] else main()
