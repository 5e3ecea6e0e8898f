"""Sparse Jacobians and Hessians, run by hand:
``PYTHONPATH=src python -m benchmarks.bench_sparse [--quick]``.

The problems (issue 22): the residual of a 1-D diffusion-reaction equation (Bratu),
r(u) = -u'' - lam exp(u) on n interior points with Dirichlet ends, whose Jacobian is
tridiagonal; a separable objective plus a banded coupling of half-bandwidth 2 (a
pentadiagonal Hessian); and the gradient of a 2-D Poisson solve with respect to the
matrix's nonzeros. For each n: one residual evaluation, sparsity detection
(jacobian_sparsity), detection plus colouring, one coloured Jacobian at a new x (pattern
and colouring reused), the same with staged=True (the first call traces the sweeps with
chainrule.jit, later ones run the program), and where it fits the dense
chainrule.jacobian, and the coloured Jacobian after LAM is rebound (to an equal value, to
a new one); times are the best CPU time (process_time: the machine is shared) of
a few runs, memory the peak traced by tracemalloc in a separate run.
"""

from __future__ import annotations

import argparse
import itertools
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
    # separable, plus a coupling of half-bandwidth 2: a pentadiagonal Hessian
    return np.sum(u**4) + np.sum(np.sin(u[1:] * u[:-1])) + np.sum((u[2:] - u[:-2]) ** 3)


BANDWIDTH = 2  # of objective's Hessian (half-bandwidth: |i - j| <= 2)


def settle_allocator() -> None:
    """Allocate and free one 16 MB buffer, as any program that has held a large array has.
    glibc maps large arrays fresh (page faults on every touch) until a large block is
    freed, which raises its threshold; the figures then measure chainrule, not whether
    some earlier step happened to free one (measured: 2,560 page faults per Jacobian at
    n = 10^5 without it, 9-22 ms against 10 ms)."""
    buffer = onp.ones(2**21)
    del buffer


def best(fun, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fun()
        times.append(time.process_time() - start)
    return min(times)


def peak_mib(fun) -> float:
    tracemalloc.start()
    fun()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def rebound(jac, x, value: float):
    """``jac(x)`` with LAM rebound to a new float object of ``value`` (put back after)."""
    global LAM
    before, LAM = LAM, float(repr(value))
    try:
        return jac(x)
    finally:
        LAM = before


def row(n: int, dense: bool) -> dict:
    rng = onp.random.default_rng(0)
    x0, x1 = rng.random(n), rng.random(n)
    out = {"n": n}
    out["residual_s"] = best(lambda: bratu(x1), 7)
    out["pattern_s"] = best(lambda: chainrule.jacobian_sparsity(bratu, x0), 1)
    start = time.perf_counter()
    jac = chainrule.SparseJacobian(bratu, x0)
    out["pattern+colour_s"] = time.perf_counter() - start
    out["colours"] = jac.n_colours
    out["sparse_jac_s"] = best(lambda: jac(x1), 7)  # the default: fun re-run per colour
    out["ratio_to_residual"] = out["sparse_jac_s"] / out["residual_s"]
    staged = chainrule.SparseJacobian(bratu, x0, pattern=jac.pattern, staged=True)
    start = time.perf_counter()
    staged(x0)
    out["staging_s"] = time.perf_counter() - start  # the first call traces (jit)
    out["staged_jac_s"] = best(lambda: staged(x1), 7)
    out["staged_ratio"] = out["staged_jac_s"] / out["residual_s"]
    out["sparse_jac_MiB"] = peak_mib(lambda: jac(x1))
    start = time.perf_counter()
    hess = chainrule.SparseHessian(objective, x0)
    out["hess_setup_s"] = time.perf_counter() - start
    out["hess_colours"] = f"{hess.n_colours} ({hess.colouring}; bandwidth {BANDWIDTH})"
    out["sparse_hess_s"] = best(lambda: hess(x1))
    out["objective_s"] = best(lambda: objective(x1))
    # a continuation's parameter (LAM, which bratu reads) rebound before each call: to an
    # equal value (the pattern holds: kept), to a new one (bratu recorded again)
    out["J_LAM_rebound_equal_s"] = best(lambda: rebound(jac, x1, LAM), 7)
    steps = itertools.count(1)
    out["J_LAM_rebound_new_s"] = best(lambda: rebound(jac, x1, LAM + 1e-9 * next(steps)), 7)
    if dense:
        dense_jac = chainrule.jacobian(bratu)
        out["dense_jac_s"] = best(lambda: dense_jac(x1), 1)
        out["dense_jac_MiB"] = peak_mib(lambda: dense_jac(x1))
        err = abs(jac(x1).toarray() - dense_jac(x1)).max() / abs(dense_jac(x1)).max()
        out["rel_err_vs_dense"] = err
        dense_h = chainrule.hessian(objective)(x1)
        out["hess_rel_err"] = abs(hess(x1).toarray() - dense_h).max() / abs(dense_h).max()
    return out


def poisson_row(m: int) -> dict:
    """d/d(nonzeros) of sum(w * spsolve(A, b)) for the 5-point Laplacian on m x m."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    from chainrule.scipy.sparse.linalg import spsolve

    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    A = (sp.kron(sp.identity(m), T) + sp.kron(T, sp.identity(m))).tocsr()
    rng = onp.random.default_rng(0)
    b, w = rng.random(m * m), rng.random(m * m)
    out = {"poisson_n": m * m, "nnz": A.nnz}
    out["spsolve_s"] = best(lambda: spla.spsolve(A, b))
    gradient = chainrule.grad(lambda d: np.sum(w * spsolve(A, b, data=d)))
    out["grad_wrt_nonzeros_s"] = best(lambda: gradient(A.data))
    out["ratio_to_solve"] = out["grad_wrt_nonzeros_s"] / out["spsolve_s"]
    return out


def show(result: dict) -> None:
    cells = [f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()]
    print("  ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="n = 1000 and 10^4 only")
    # (without --quick: 10^5 and 10^6 too)
    args = parser.parse_args()
    settle_allocator()
    chainrule.jacobian_sparsity(bratu, onp.ones(4))  # warm-up: imports scipy.sparse
    sizes = [(1000, True), (10_000, False)]
    sizes += [] if args.quick else [(100_000, False), (1_000_000, False)]
    for n, dense in sizes:
        show(row(n, dense))
    show(poisson_row(100 if args.quick else 316))  # 10^4 or ~10^5 unknowns


if __name__ == "__main__":
    main()
