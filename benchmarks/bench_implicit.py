"""Implicit differentiation of an argmin, run by hand:
``PYTHONPATH=src python -m benchmarks.bench_implicit [--quick]``.

The problem (issue 23): w*(lam) = argmin of a ridge-regularised logistic loss with d = 100
weights on 400 examples; the derivative of a validation loss V(w*(lam)) with respect to the
regularisation weight lam. Its closed form: dw*/dlam = -H^{-1} w* (H the training loss's
Hessian at w*), so dV/dlam = -grad V . H^{-1} w*, computed here with NumPy.

Compared, each with its time (best CPU time of a few runs), peak traced memory
(tracemalloc), primitives recorded on the tape, and error against the closed form:
- the solve alone (scipy.optimize.minimize, BFGS, no derivative);
- chainrule.scipy.optimize.minimize's implicit gradient, at a loose and a tight tolerance
  (few and many iterations: memory and recorded nodes do not grow with them);
- chainrule through a hand-written gradient-descent loop unrolled for 10, 100, 1000 steps;
- central finite differences (two more solves).
JAX peers (jaxopt, optimistix) are added when importable.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the benchmark runner (before numpy)

import tracemalloc  # noqa: E402

import numpy as onp  # noqa: E402
import scipy.optimize as sopt  # noqa: E402

import chainrule.numpy as np  # noqa: E402
from chainrule import grad  # noqa: E402
from chainrule.scipy import optimize as so  # noqa: E402

from .profile import best_cpu_ms, count_nodes  # noqa: E402

D, M, LAM = 100, 400, 0.05


def make_data(seed: int = 0):
    rng = onp.random.default_rng(seed)
    X = rng.normal(size=(M, D)) / onp.sqrt(D)
    w_true = rng.normal(size=D)
    y = (rng.uniform(size=M) < 1 / (1 + onp.exp(-X @ w_true))).astype(float)
    Xv = rng.normal(size=(M, D)) / onp.sqrt(D)
    yv = (rng.uniform(size=M) < 1 / (1 + onp.exp(-Xv @ w_true))).astype(float)
    return X, y, Xv, yv


X, Y, XV, YV = make_data()


def train_loss(w, lam):
    z = np.dot(X, w)
    return np.mean(np.logaddexp(0.0, z) - Y * z) + 0.5 * lam * np.dot(w, w)


def val_loss(w):
    z = np.dot(XV, w)
    return np.mean(np.logaddexp(0.0, z) - YV * z)


def train_grad(w, lam):
    """By hand, in NumPy: the solver's iterations record nothing in any row."""
    p = 1 / (1 + onp.exp(-X @ w))
    return X.T @ (p - Y) / M + lam * w


def solve_plain(lam: float, gtol: float = 1e-10):
    return sopt.minimize(
        train_loss, onp.zeros(D), args=(lam,), jac=train_grad, method="BFGS", options={"gtol": gtol}
    )


def closed_form(lam: float) -> float:
    w = solve_plain(lam, 1e-12).x
    p = 1 / (1 + onp.exp(-X @ w))
    hess = X.T @ (X * (p * (1 - p))[:, None]) / M + lam * onp.eye(D)
    pv = 1 / (1 + onp.exp(-XV @ w))
    grad_v = XV.T @ (pv - YV) / M
    return float(-grad_v @ onp.linalg.solve(hess, w))


STEP = 4.0  # below 2 / L: the loss's curvature is at most ~ 0.25 |X|^2 / M + lam


def gradient_descent(fun, x0, args=(), jac=None, gtol=1e-10, step=STEP, maxiter=5000, **_):
    """A custom SciPy method (minimize(method=callable)): fixed-step descent, many steps."""
    x, it = onp.array(x0), 0
    g = jac(x, *args)
    while onp.max(onp.abs(g)) > gtol and it < maxiter:
        x = x - step * g
        g = jac(x, *args)
        it += 1
    return sopt.OptimizeResult(
        x=x,
        nit=it,
        success=bool(onp.max(onp.abs(g)) <= gtol),
        fun=fun(x, *args),
        message="gradient descent",
    )


def implicit(gtol: float, method="BFGS", **options):
    def outer(lam):
        res = so.minimize(
            train_loss,
            onp.zeros(D),
            args=(lam,),
            jac=train_grad,
            method=method,
            options={"gtol": gtol, **options},
        )
        return val_loss(res.x)

    return lambda: grad(outer)(LAM)


def unrolled(steps: int):
    def outer(lam):
        w = onp.zeros(D)
        for _ in range(steps):
            w = w - STEP * grad(train_loss)(w, lam)
        return val_loss(w)

    return lambda: grad(outer)(LAM)


def finite_differences(eps: float = 1e-5):
    def fd():
        plus = float(val_loss(solve_plain(LAM + eps).x))
        minus = float(val_loss(solve_plain(LAM - eps).x))
        return (plus - minus) / (2 * eps)

    return fd


def peak_kib(fn) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1024


def jax_peers() -> dict:
    """jaxopt's / optimistix's implicit gradient of the same problem, when installed."""
    peers = {}
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return peers
    jax.config.update("jax_enable_x64", True)
    Xj, Yj, XVj, YVj = map(jnp.asarray, (X, Y, XV, YV))

    def loss_j(w, lam):
        z = Xj @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - Yj * z) + 0.5 * lam * w @ w

    def val_j(w):
        z = XVj @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - YVj * z)

    try:
        import jaxopt

        solver = jaxopt.LBFGS(fun=loss_j, tol=1e-10, maxiter=1000)
        g = jax.jit(jax.grad(lambda lam: val_j(solver.run(jnp.zeros(D), lam).params)))
        g(LAM).block_until_ready()
        peers["jaxopt LBFGS (jit)"] = lambda: g(LAM).block_until_ready()
    except ImportError:
        pass
    try:
        import optimistix as optx

        def argmin(lam):
            sol = optx.minimise(
                lambda w, lam: loss_j(w, lam),
                optx.BFGS(rtol=1e-10, atol=1e-10),
                jnp.zeros(D),
                args=lam,
                max_steps=1000,
            )
            return sol.value

        g = jax.jit(jax.grad(lambda lam: val_j(argmin(lam))))
        g(LAM).block_until_ready()
        peers["optimistix BFGS (jit)"] = lambda: g(LAM).block_until_ready()
    except ImportError:
        pass
    return peers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no 1000 steps")
    opts = parser.parse_args()
    repeats = 1 if opts.quick else 3
    exact = closed_form(LAM)
    iters = {gtol: solve_plain(LAM, gtol).nit for gtol in (1e-4, 1e-10)}
    rows = [
        (
            "solve alone (SciPy BFGS, gtol 1e-10)",
            f"{iters[1e-10]} it",
            lambda: solve_plain(LAM),
            False,
        )
    ]
    for gtol in (1e-4, 1e-10):
        rows.append(
            (
                f"implicit: chainrule minimize (gtol {gtol:g})",
                f"{iters[gtol]} it",
                implicit(gtol),
                True,
            )
        )
    for step in (STEP, STEP / 12):  # the smaller step takes about 1000 iterations
        its = gradient_descent(train_loss, onp.zeros(D), (LAM,), train_grad, step=step).nit
        rows.append(
            (
                f"implicit: descent method (callable), step {step:.2g}",
                f"{its} it",
                implicit(1e-10, gradient_descent, step=step),
                True,
            )
        )
    for steps in (10, 100) if opts.quick else (10, 100, 1000):
        rows.append(
            ("unrolled gradient descent, chainrule", f"{steps} steps", unrolled(steps), True)
        )
    rows.append(
        ("finite differences (2 more solves)", f"2x{iters[1e-10]} it", finite_differences(), False)
    )
    for name, fn in jax_peers().items():
        rows.append((name, "", fn, True))

    print(
        f"d/dlam of the validation loss at argmin (d = {D}, m = {M}, lam = {LAM}); "
        f"closed form {exact:.12g}"
    )
    print(
        f"{'method':<50} {'iterations':>11} {'time ms':>9} {'x solve':>8} "
        f"{'peak KiB':>9} {'nodes':>7} {'|error|':>9}"
    )
    solve_ms = None
    for name, its, fn, traced in rows:
        ms = best_cpu_ms(fn, repeats)
        solve_ms = solve_ms or ms
        value = fn()
        err = (
            ""
            if not isinstance(value, float | onp.floating)
            else f"{abs(float(value) - exact):9.1e}"
        )
        nodes = count_nodes(fn) if traced else 0
        print(
            f"{name:<50} {its:>11} {ms:9.1f} {ms / solve_ms:8.2f} {peak_kib(fn):9.0f} "
            f"{nodes:>7} {err:>9}"
        )


if __name__ == "__main__":
    main()
