"""Newton's method for a PDE with sparse Jacobians: the 1-D Bratu problem.

-u'' = lam exp(u) on (0, 1), u(0) = u(1) = 0, discretised on n interior points:
r(u)_i = (2 u_i - u_{i-1} - u_{i+1}) / h^2 - lam exp(u_i). Newton's method solves
J(u) du = -r(u) with J from ``chainrule.jacobian(r, sparse=True)`` (a tridiagonal
pattern found from the graph: 3 colours, so 3 forward sweeps, staged by chainrule.jit)
and ``scipy.sparse.linalg.spsolve``. It is compared with two finite-difference Jacobians
(forward differences, step sqrt(machine epsilon)):

* dense, as ``scipy.optimize.approx_fprime`` (n residual evaluations; small n only),
* coloured: the same pattern and colouring as chainrule's, one residual evaluation per
  colour (what SciPy's ``approx_derivative(..., sparsity=...)`` does),

on time per Jacobian, error against the closed-form Jacobian, and Newton's iterations.
The solution is checked against the exact solution of the continuous problem,
u(x) = -2 log(cosh((x - 1/2) t / 2) / cosh(t / 4)) with t = sqrt(2 lam) cosh(t / 4)
(the discretisation error is O(h^2)).

    python examples/newton_pde.py            # n = 2000 (all three) and n = 10^5
    python examples/newton_pde.py --smoke    # n = 200 and 2000
"""

from __future__ import annotations

import time

import numpy as onp
import scipy.sparse as sp
from _common import parse_args, result, save
from scipy.optimize import approx_fprime, brentq
from scipy.sparse.linalg import spsolve

import chainrule
import chainrule.numpy as np

LAM = 1.0
STEP = float(onp.sqrt(onp.finfo(float).eps))


def residual(u):
    h2 = (len(u) + 1.0) ** 2
    padded = np.concatenate([np.zeros(1), u, np.zeros(1)])
    return (2 * u - padded[:-2] - padded[2:]) * h2 - LAM * np.exp(u)


def exact_jacobian(u):
    n = len(u)
    h2 = (n + 1.0) ** 2
    off = -h2 * onp.ones(n - 1)
    return sp.diags([off, 2 * h2 - LAM * onp.exp(u), off], [-1, 0, 1], format="csr")


def exact_solution(x):
    theta = brentq(lambda t: t - onp.sqrt(2 * LAM) * onp.cosh(t / 4), 0.1, 5.0)
    return -2 * onp.log(onp.cosh((x - 0.5) * theta / 2) / onp.cosh(theta / 4))


def dense_differences(u):
    return sp.csr_matrix(approx_fprime(u, lambda v: onp.asarray(residual(v)), STEP))


def coloured_differences(pattern, colours):
    """Forward differences along one seed per colour, read back at the pattern's
    nonzeros (the same colouring as the AD sweeps)."""
    pattern = sp.csr_matrix(pattern)
    rows = onp.repeat(onp.arange(pattern.shape[0]), onp.diff(pattern.indptr))
    seeds = onp.zeros((colours.max() + 1, colours.size))
    seeds[colours, onp.arange(colours.size)] = 1.0

    def jacobian(u):
        base = onp.asarray(residual(u))
        columns = onp.stack([(onp.asarray(residual(u + STEP * s)) - base) / STEP for s in seeds])
        values = columns[colours[pattern.indices], rows]
        return sp.csr_matrix((values, pattern.indices, pattern.indptr), shape=pattern.shape)

    return jacobian


def newton(jacobian, u0, tol: float = 1e-11, max_steps: int = 30):
    """Newton's iterations until the step is below ``tol`` (u is about 0.14; the residual
    itself stalls at rounding level, about eps / h^2), and the time spent in
    ``jacobian``."""
    u, spent = u0.copy(), 0.0
    for step in range(1, max_steps + 1):
        r = onp.asarray(residual(u))
        start = time.perf_counter()
        J = jacobian(u)
        spent += time.perf_counter() - start
        du = spsolve(J.tocsc(), r)
        u = u - du
        if onp.abs(du).max() < tol:
            return u, step, spent
    raise SystemExit(f"Newton did not converge in {max_steps} steps")


def best_time(fun, u, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fun(u)
        times.append(time.perf_counter() - start)
    return min(times)


def compare(n: int, with_dense: bool, rng) -> list[tuple]:
    x = onp.linspace(0, 1, n + 2)[1:-1]
    u0 = onp.zeros(n)
    probe = 0.1 * rng.random(n)  # where the Jacobians are timed and compared
    truth = exact_jacobian(probe)
    scale = abs(truth).max()
    ad = chainrule.jacobian(residual, sparse=True)
    ad(probe)  # finds the pattern and colouring, stages the sweeps
    evaluator = next(iter(ad.cache.values()))
    # (name, Jacobian, the sweeps or residual evaluations one Jacobian takes)
    colours = evaluator.n_colours
    methods = [("chainrule sparse AD", ad, f"{colours} JVPs")]
    coloured = coloured_differences(evaluator.pattern, evaluator.colours)
    methods.append(("coloured differences", coloured, f"{colours + 1} r(u)"))
    if with_dense:
        methods.append(("dense differences (approx_fprime)", dense_differences, f"{n + 1} r(u)"))
    rows = []
    for name, jacobian, sweeps in methods:
        per_call = best_time(jacobian, probe, 1 if "dense" in name else 3)
        error = abs(jacobian(probe) - truth).max() / scale
        u, steps, spent = newton(jacobian, u0)
        solution_error = onp.abs(u - exact_solution(x)).max()
        rows.append((n, name, sweeps, per_call, error, steps, spent, solution_error, u))
    return rows


def plot(rows: list[tuple], args) -> None:
    """Time per Jacobian of each method at each n (log scale), and the solution."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    labels = [f"{name}\nn = {n}" for n, name, *_ in rows]
    left.barh(labels, [r[3] * 1e3 for r in rows], color="0.5")
    left.set(xscale="log", xlabel="time per Jacobian (ms)")
    left.tick_params(axis="y", labelsize=7)
    n, u = rows[-1][0], rows[-1][-1]
    every = max(1, n // 50)
    grid = onp.linspace(0, 1, n + 2)[1:-1]
    right.plot(grid, exact_solution(grid), label="exact")
    right.plot(grid[::every], u[::every], "o", ms=3, label=f"Newton, n = {n}")
    right.set(xlabel="x", ylabel="u", title=f"Bratu, lam = {LAM}")
    right.legend(fontsize=8)
    fig.tight_layout()
    save(fig, args, "newton_pde.png")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv)
    rng = onp.random.default_rng(args.seed)
    sizes = [(200, True), (2000, False)] if args.smoke else [(2000, True), (100_000, False)]
    rows = [row for n, dense in sizes for row in compare(n, dense, rng)]
    header = (
        f"{'n':>7}  {'Jacobian':<34} {'work/J':>10} {'time/J':>10} {'rel. error':>10} "
        f"{'Newton':>6} {'J time':>9} {'|u - exact|':>11}"
    )
    print(header)
    for n, name, sweeps, per_call, error, steps, spent, solution_error, _ in rows:
        print(
            f"{n:>7}  {name:<34} {sweeps:>10} {per_call * 1e3:>8.2f}ms {error:>10.1e} "
            f"{steps:>6} {spent * 1e3:>7.1f}ms {solution_error:>11.2e}"
        )
    plot(rows, args)
    ad_rows = [r for r in rows if r[1] == "chainrule sparse AD"]
    worst_ad = max(r[4] for r in ad_rows)
    if worst_ad > 1e-12:
        raise SystemExit(f"the sparse AD Jacobian differs from the closed form by {worst_ad:.1e}")
    largest = ad_rows[-1]
    if largest[7] > 10 / largest[0] ** 2:
        raise SystemExit(f"the solution is off the exact one by {largest[7]:.1e}")
    fd = [r for r in rows if r[0] == largest[0] and r[1] == "coloured differences"][0]
    result(
        args,
        f"n = {largest[0]}: sparse AD Jacobian error {largest[4]:.1e} "
        f"(coloured differences {fd[4]:.1e}), {largest[5]} Newton steps, "
        f"|u - exact| {largest[7]:.1e}",
    )


if __name__ == "__main__":
    main()
