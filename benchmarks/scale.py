"""Scale benchmark, run by hand: ``PYTHONPATH=src python benchmarks/scale.py [--quick]``.

Times ``grad`` of (1) a chain of n scalar nodes, n = 10^3 .. 10^6, and (2) a fan-out
of one array into n nodes summed back (fan-in), n = 10^3 .. 10^5, and prints the time
per node, which stays flat when the cost is linear in the graph size; (3) joins n traced
scalars with ``stack``, ``concatenate`` and ``array`` (one primitive with n traced
arguments), n = 10^3 .. 10^6. Then (4) measures the peak traced memory (tracemalloc) of
grad of a long chain on arrays, plain and with ``checkpoint`` on segments. The figures go
in docs/reliability.md.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

import numpy as onp

import chainrule.numpy as np
from chainrule import checkpoint, grad


def chain(n: int):
    def f(x):
        for _ in range(n):
            x = np.sin(x)  # one node per step
        return x

    return f


def fan(n: int):
    def f(x):
        branches = [x * float(k % 7) for k in range(n)]  # fan-out: n nodes read x
        total = branches[0]
        for b in branches[1:]:  # fan-in: n - 1 additions
            total = total + b
        return np.sum(total)

    return f


JOINS = {
    "stack": lambda pieces: np.stack(pieces),
    "concatenate": lambda pieces: np.concatenate([np.reshape(p, (1,)) for p in pieces]),
    "array": lambda pieces: np.array(pieces),
}


# nodes of f below: the n pieces, (concatenate: n reshapes), the join, the product, the sum
JOIN_NODES = {"stack": lambda n: n + 3, "concatenate": lambda n: 2 * n + 3,
              "array": lambda n: n + 3}


def join(name: str):
    def make(n: int):
        weights = onp.linspace(0.5, 1.5, n)

        def f(x):
            # n traced scalars made from one (pieces taken as x[i] from an array would add
            # the cost of indexing: each index's VJP is a dense array of x's size)
            pieces = [x * w for w in weights.tolist()]
            return np.sum(JOINS[name](pieces) * weights)

        return f

    return make


def best_time(fun, *args, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fun(*args)
        best = min(best, time.perf_counter() - start)
    return best


def scaling_table(title: str, make, sizes, arg, nodes_per_size) -> list[str]:
    rows = [f"{title}", "| n | graph nodes | forward only (s) | grad (s) | grad per node (µs) |",
            "|---:|---:|---:|---:|---:|"]
    for n in sizes:
        f = make(n)
        repeat = 3 if n <= 10**5 else 1
        t_fwd = best_time(f, arg, repeat=repeat)
        t_grad = best_time(grad(f), arg, repeat=repeat)
        nodes = nodes_per_size(n)
        rows.append(f"| {n:,} | {nodes:,} | {t_fwd:.3f} | {t_grad:.3f} | "
                    f"{1e6 * t_grad / nodes:.2f} |")
        print(rows[-1], flush=True)
    return rows


def peak_memory(fun, *args) -> tuple[float, float]:
    """(peak traced MiB, seconds) of ``fun(*args)``."""
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    fun(*args)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20, elapsed


def checkpoint_table(steps: int, size: int, segment: int) -> list[str]:
    def step(x):
        return np.tanh(x) * 0.9 + 0.1 * x

    def segment_fn(x):
        for _ in range(segment):
            x = step(x)
        return x

    checkpointed_segment = checkpoint(segment_fn)

    def plain(x):
        for _ in range(steps):
            x = step(x)
        return np.sum(x)

    def with_checkpoints(x):
        for _ in range(steps // segment):
            x = checkpointed_segment(x)
        return np.sum(x)

    x = onp.linspace(-1.0, 1.0, size)
    onp.testing.assert_allclose(grad(plain)(x), grad(with_checkpoints)(x), rtol=1e-12)
    mib_plain, t_plain = peak_memory(grad(plain), x)
    mib_ckpt, t_ckpt = peak_memory(grad(with_checkpoints), x)
    array_mib = size * 8 / 2**20
    rows = [f"Checkpoint: grad of {steps} steps on a float64 array of {size:,} "
            f"({array_mib:.2f} MiB), segments of {segment} steps",
            "| | peak traced memory (MiB) | time under tracemalloc (s) |", "|---|---:|---:|",
            f"| plain | {mib_plain:.1f} | {t_plain:.2f} |",
            f"| checkpoint | {mib_ckpt:.1f} | {t_ckpt:.2f} |",
            f"| ratio | {mib_plain / mib_ckpt:.1f}x less memory | "
            f"{t_ckpt / t_plain:.2f}x the time |"]
    for row in rows[3:]:
        print(row, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="stop at 10^5 chain, 10^4 fan")
    options = parser.parse_args()
    chain_sizes = [10**3, 10**4, 10**5] + ([] if options.quick else [10**6])
    fan_sizes = [10**3, 10**4] + ([] if options.quick else [10**5])
    join_sizes = [10**3, 10**4, 10**5] + ([] if options.quick else [10**6])
    tables = [
        scaling_table("Chain: y = sin(sin(...sin(x))) on a float", chain, chain_sizes, 0.5,
                      lambda n: n),
        scaling_table("Fan-out/fan-in: x (8 floats) read by n nodes, summed back", fan,
                      fan_sizes, onp.linspace(0.0, 1.0, 8), lambda n: 2 * n),
        *[scaling_table(f"Joining n traced scalars with {name} (one node with n arguments)",
                        join(name), join_sizes, 0.5, JOIN_NODES[name]) for name in JOINS],
        checkpoint_table(steps=400, size=20_000, segment=20),
    ]
    print()
    for table in tables:
        print("\n".join(table), end="\n\n")


if __name__ == "__main__":
    main()
