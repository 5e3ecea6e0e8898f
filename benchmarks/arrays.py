"""The same gradient on NumPy, Dask and CuPy: ``PYTHONPATH=src python benchmarks/arrays.py``.

The problem is the gradient of a regularised logistic loss over a dataset of ``--rows`` rows
and ``--cols`` features, chunked into ``--chunk-rows`` rows for Dask (so it never fits in
one chunk). For each library the hand-written value and gradient (the speed limit) and chainrule's
``value_and_grad`` of the loss are timed (median of ``--repeat`` runs after one warm-up), and
``chainrule.jit`` of it (its first call, the trace, is the warm-up), and each result is compared
with the NumPy hand-written one. CuPy runs only where a GPU is usable.
The table goes in docs/arrays.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as onp

import chainrule.numpy as np
from chainrule import jit, value_and_grad


def loss(w, X, y):
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z) / X.shape[0] + 0.5e-3 * np.sum(w * w)


def value_and_gradient_by_hand(w, X, y, xp):
    z = X @ w
    value = xp.sum(xp.logaddexp(0.0, z) - y * z) / X.shape[0] + 0.5e-3 * xp.sum(w * w)
    p = 1.0 / (1.0 + xp.exp(-z))
    return value, X.T @ (p - y) / X.shape[0] + 1e-3 * w


def median_time(run, sync, repeat: int) -> float:
    sync(run())  # warm-up: imports, kernels, caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        sync(run())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def data(rows: int, cols: int):
    rng = onp.random.default_rng(0)
    X = rng.standard_normal((rows, cols))
    y = (rng.uniform(size=rows) < 1.0 / (1.0 + onp.exp(-X @ onp.linspace(-1, 1, cols)))) * 1.0
    return onp.linspace(-0.5, 0.5, cols), X, y


def libraries(w, X, y, chunk_rows: int):
    """name -> (the three inputs in that library, sync: result -> NumPy array)."""
    found = {"NumPy": ((w, X, y), onp.asarray)}
    # A recorded call keeps a copy of each writeable constant array it reads (a later write
    # must not change the gradient): read-only data are kept as they are.
    X_read_only, y_read_only = X.view(), y.view()
    X_read_only.flags.writeable = y_read_only.flags.writeable = False
    found["NumPy, X and y read-only"] = ((w, X_read_only, y_read_only), onp.asarray)
    try:
        import dask
        import dask.array as da

        dask.config.set(scheduler="threads")
        Xd = da.from_array(X, chunks=(chunk_rows, X.shape[1])).persist()
        yd = da.from_array(y, chunks=chunk_rows).persist()
        found[f"Dask ({Xd.numblocks[0]} chunks, threads)"] = ((w, Xd, yd), lambda g: g.compute())
    except ImportError:
        print("Dask not installed: skipped")
    try:
        import cupy as cp

        (cp.zeros(1) + 1).get()  # fails without a usable device

        def to_host(g):
            cp.cuda.Device().synchronize()
            return cp.asnumpy(g)

        found["CuPy (" + cp.cuda.runtime.getDeviceProperties(0)["name"].decode() + ")"] = (
            (cp.asarray(w), cp.asarray(X), cp.asarray(y)), to_host)
    except Exception as error:  # no CuPy, or no GPU
        print(f"CuPy skipped: {type(error).__name__}: {error}"[:200])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--cols", type=int, default=32)
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    w, X, y = data(options.rows, options.cols)
    reference = value_and_gradient_by_hand(w, X, y, onp)[1]
    found = libraries(w, X, y, options.chunk_rows)
    print(f"logistic-loss gradient, X {options.rows:,} x {options.cols} float64 "
          f"({X.nbytes / 2**20:,.0f} MiB); {platform.processor() or platform.machine()}, "
          f"NumPy {onp.__version__}")
    print("| arrays | hand-written (ms) | chainrule value_and_grad (ms) | chainrule / hand-written "
          "| jit (ms) | jit / hand-written | result type | max abs error |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for name, (args, sync) in found.items():
        print(table_row(name, args, sync, reference, options.repeat))


def table_row(name: str, args, sync, reference, repeat: int) -> str:
    xp = onp  # NumPy's functions dispatch Dask arrays to Dask
    if name.startswith("CuPy"):
        import cupy as xp
    by_hand = median_time(lambda: value_and_gradient_by_hand(*args, xp)[1], sync, repeat)
    g = value_and_grad(loss)(*args)[1]
    kind = type(g).__module__.split(".")[0] + "." + type(g).__name__
    staged = jit(value_and_grad(loss))
    error = max(float(onp.max(onp.abs(sync(h) - reference))) for h in (g, staged(*args)[1]))
    traced = median_time(lambda: value_and_grad(loss)(*args)[1], sync, repeat)
    program = median_time(lambda: staged(*args)[1], sync, repeat)
    return (f"| {name} | {by_hand * 1e3:,.1f} | {traced * 1e3:,.1f} | {traced / by_hand:.2f} "
            f"| {program * 1e3:,.1f} | {program / by_hand:.2f} | `{kind}` | {error:.1e} |")


if __name__ == "__main__":
    main()
