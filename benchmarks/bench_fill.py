"""Untraced cost of chainrule.numpy's constructors (issue 38): ``np.zeros`` then a fill
loop, with ``import chainrule.numpy as np`` against ``import numpy as np``, outside any
transform (where chainrule.numpy's constructors give plain ndarrays after one check).

``python -m benchmarks.bench_fill`` prints a Markdown table: best of rounds (rounds
alternate the two, so a busy machine hurts both alike) and the ratio chainrule / NumPy."""

from __future__ import annotations

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


if __name__ == "__main__":
    main()
