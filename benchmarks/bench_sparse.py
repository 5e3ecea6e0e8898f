"""Sparse Jacobians and Hessians, run by hand:
``PYTHONPATH=src python -m benchmarks.bench_sparse [--quick]``.

The problem (issue 22): the residual of a 1-D diffusion-reaction equation (Bratu),
r(u) = -u'' - lam exp(u) on n interior points with Dirichlet ends, whose Jacobian is
tridiagonal, and the objective sum(u^4) + sum(sin(u[1:] u[:-1])) whose Hessian is too.
For each n: one residual evaluation, sparsity detection (jacobian_sparsity), colouring,
one coloured Jacobian at a new x (pattern and colouring reused), and where it fits the
dense chainrule.jacobian; times are the best wall time of a few runs, memory the peak
traced by tracemalloc in a separate run.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the benchmark runner (before numpy)

import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as onp  # noqa: E402

import chainrule  # noqa: E402
import chainrule.numpy as np  # noqa: E402

LAM = 1.0


def bratu(u):
    h2 = (len(u) + 1.0) ** 2
    padded = np.concatenate([np.zeros(1), u, np.zeros(1)])
    return (2 * u - padded[:-2] - padded[2:]) * h2 - LAM * np.exp(u)


def objective(u):
    return np.sum(u**4) + np.sum(np.sin(u[1:] * u[:-1]))


def best(fun, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fun()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_mib(fun) -> float:
    tracemalloc.start()
    fun()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def row(n: int, dense: bool) -> dict:
    rng = onp.random.default_rng(0)
    x0, x1 = rng.random(n), rng.random(n)
    out = {"n": n}
    out["residual_s"] = best(lambda: bratu(x1))
    out["pattern_s"] = best(lambda: chainrule.jacobian_sparsity(bratu, x0), 1)
    start = time.perf_counter()
    jac = chainrule.SparseJacobian(bratu, x0)
    out["pattern+colour_s"] = time.perf_counter() - start
    out["colours"] = jac.n_colours
    out["sparse_jac_s"] = best(lambda: jac(x1))
    out["ratio_to_residual"] = out["sparse_jac_s"] / out["residual_s"]
    out["sparse_jac_MiB"] = peak_mib(lambda: jac(x1))
    hess = chainrule.SparseHessian(objective, x0)
    out["hess_colours"] = hess.n_colours
    out["sparse_hess_s"] = best(lambda: hess(x1))
    if dense:
        dense_jac = chainrule.jacobian(bratu)
        out["dense_jac_s"] = best(lambda: dense_jac(x1), 1)
        out["dense_jac_MiB"] = peak_mib(lambda: dense_jac(x1))
        err = abs(jac(x1).toarray() - dense_jac(x1)).max() / abs(dense_jac(x1)).max()
        out["rel_err_vs_dense"] = err
        dense_h = chainrule.hessian(objective)(x1)
        out["hess_rel_err"] = abs(hess(x1).toarray() - dense_h).max() / abs(dense_h).max()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="n = 2000 and 10^4 only")
    # (without --quick: 10^5 and 10^6 too)
    args = parser.parse_args()
    chainrule.jacobian_sparsity(bratu, onp.ones(4))  # warm-up: imports scipy.sparse
    sizes = [(2000, True), (10_000, False)]
    sizes += [] if args.quick else [(100_000, False), (1_000_000, False)]
    for n, dense in sizes:
        result = row(n, dense)
        print(
            "  ".join(
                f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
