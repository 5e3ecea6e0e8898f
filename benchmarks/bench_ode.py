"""ODE gradient benchmark, run by hand: ``PYTHONPATH=src python benchmarks/bench_ode.py``.

A small neural ODE, y' = W2 tanh(W1 y + b1) + b2 with y in R^2 and 10 hidden units (52
parameters), fitted to a spiral at 10 times in [0, 5]: the gradient of the squared error
with respect to the 52 parameters, by

- chainrule's ``solve_ivp`` adjoint (reverse mode; forward solve kept as checkpoints),
- chainrule's ``solve_ivp`` forward sensitivities (one JVP; a gradient takes 52),
- chainrule tracing a hand-written fixed-step RK4 loop (differentiating the solver's steps),
- central finite differences of the whole solve (104 solves),
- chainrule's and autograd's ``odeint`` (the same adjoint algorithm on LSODA); JAX's
  ``odeint`` when JAX is importable,
- and the adjoint with the right-hand side's VJP traced at every step instead of staged
  once per solve with ``chainrule.jit`` (how it ran before),

against the forward solve alone. Times are the best CPU time (process_time) over
``--rounds`` rounds in which the methods take turns (so that on a shared machine each sees
the same load; JAX's CPU time counts all its threads); peak memory is measured in a
separate run under tracemalloc (Python allocations, NumPy's included). The
error column is the largest difference from a reference gradient (the adjoint at
rtol=1e-12), relative to the reference's largest entry. A second table does the same for
Lotka-Volterra (4 parameters, 20 output times in [0, 10]).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import time
import tracemalloc

import numpy as onp
import scipy.integrate as si

import chainrule as cr
import chainrule.numpy as np
from chainrule.scipy import integrate
from chainrule.scipy.integrate import odeint, solve_ivp

HIDDEN, STATE = 10, 2
SIZES = [(HIDDEN, STATE), (HIDDEN,), (STATE, HIDDEN), (STATE,)]
T_END = 5.0
T_EVAL = onp.linspace(0.5, T_END, 10)
Y0 = onp.array([2.0, 0.0])
TARGET = onp.stack(
    [2 * onp.exp(-0.1 * T_EVAL) * onp.cos(T_EVAL), -2 * onp.exp(-0.1 * T_EVAL) * onp.sin(T_EVAL)]
)
TOL = dict(rtol=1e-8, atol=1e-8)


def unpack(theta, xp):
    parts, start = [], 0
    for shape in SIZES:
        size = int(onp.prod(shape))
        parts.append(xp.reshape(theta[start : start + size], shape))
        start += size
    return parts


def rhs(t, y, theta, xp=np):
    w1, b1, w2, b2 = unpack(theta, xp)
    return xp.dot(w2, xp.tanh(xp.dot(w1, y) + b1)) + b2


def plain_rhs(t, y, theta):
    return rhs(t, y, theta, onp)


def initial_theta():
    rng = onp.random.default_rng(0)
    return onp.concatenate([rng.normal(scale=0.5, size=int(onp.prod(s))) for s in SIZES])


def loss_from(ys):
    return np.sum((ys - TARGET) ** 2)


def solve_loss(theta, method="DOP853", **tol):
    sol = solve_ivp(
        rhs, (0.0, T_END), Y0, method=method, t_eval=T_EVAL, args=(theta,), **(tol or TOL)
    )
    return loss_from(sol.y)


def forward_only(theta):
    sol = si.solve_ivp(
        plain_rhs, (0.0, T_END), Y0, method="DOP853", t_eval=T_EVAL, args=(theta,), **TOL
    )
    return onp.sum((sol.y - TARGET) ** 2)


def rk4_loss(steps):
    h = T_END / steps
    every = round(0.5 / h)  # an output every 0.5 time units, as T_EVAL

    def loss(theta):
        y, outs = Y0, []
        for k in range(1, steps + 1):
            t = (k - 1) * h
            k1 = rhs(t, y, theta)
            k2 = rhs(t + h / 2, y + h / 2 * k1, theta)
            k3 = rhs(t + h / 2, y + h / 2 * k2, theta)
            k4 = rhs(t + h, y + h * k3, theta)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            if k % every == 0:
                outs.append(y)
        return loss_from(np.stack(outs, axis=1))

    return loss


def finite_differences(theta, eps=1e-6):
    grad = onp.zeros_like(theta)
    for i in range(theta.size):
        step = onp.zeros_like(theta)
        step[i] = eps
        grad[i] = (forward_only(theta + step) - forward_only(theta - step)) / (2 * eps)
    return grad


def odeint_loss(odeint_fun, xp, pack=tuple):
    """``pack`` builds the args tuple: autograd traces a tuple only as its own ``tuple``."""
    t = onp.concatenate([[0.0], T_EVAL])

    def loss(theta):
        ys = odeint_fun(lambda y, s, th: rhs(s, y, th, xp), Y0, t, pack((theta,)), **TOL)
        return xp.sum((ys[1:].T - TARGET) ** 2)

    return loss


def candidates(theta) -> list:
    """(name, callable returning the gradient or None, note)"""
    direction = onp.ones_like(theta) / onp.sqrt(theta.size)

    def forward_alone():
        forward_only(theta)

    def one_jvp():
        cr.jvp(solve_loss, (theta,), (direction,))

    rows = [
        ("forward solve alone (SciPy, DOP853)", forward_alone, ""),
        ("chainrule solve_ivp adjoint (grad)", lambda: cr.grad(solve_loss)(theta), ""),
        (
            "  the same, VJP traced at each step",
            lambda: unstaged(cr.grad(solve_loss), theta),
            "without jit staging",
        ),
        ("chainrule solve_ivp forward sens. (1 JVP)", one_jvp, "x52 for a gradient"),
        ("chainrule through RK4 steps, 100 steps", lambda: cr.grad(rk4_loss(100))(theta), ""),
        ("chainrule through RK4 steps, 1000 steps", lambda: cr.grad(rk4_loss(1000))(theta), ""),
        ("finite differences (104 solves)", lambda: finite_differences(theta), ""),
        ("chainrule odeint adjoint (grad)", lambda: cr.grad(odeint_loss(odeint, np))(theta), ""),
    ]
    if importlib.util.find_spec("autograd") is not None:
        import autograd
        import autograd.builtins
        import autograd.numpy as anp
        from autograd.scipy.integrate import odeint as ag_odeint

        ag_loss = odeint_loss(ag_odeint, anp, autograd.builtins.tuple)
        rows.append(
            (
                "autograd odeint adjoint (grad)",
                lambda: autograd.grad(ag_loss)(theta),
                "autograd 1.9",
            )
        )
    else:
        rows.append(("autograd odeint", None, "not installed"))
    if importlib.util.find_spec("jax") is not None:
        import jax
        import jax.numpy as jnp
        from jax.experimental.ode import odeint as jax_odeint

        jax.config.update("jax_enable_x64", True)

        def jax_loss(th):
            ys = jax_odeint(
                lambda y, s, th: rhs(s, y, th, jnp),
                jnp.asarray(Y0),
                jnp.concatenate([jnp.zeros(1), jnp.asarray(T_EVAL)]),
                th,
                **TOL,
            )
            return jnp.sum((ys[1:].T - TARGET) ** 2)

        jax_grad = jax.jit(jax.grad(jax_loss))
        rows.append(("JAX odeint adjoint (jit, grad)", lambda: onp.asarray(jax_grad(theta)), ""))
    else:
        rows.append(("JAX odeint", None, "not importable"))
    return rows


def interleaved_best(funs: list, rounds: int, budget: float = 0.3) -> tuple[list, list]:
    """The best CPU time (process_time) of each function, and its last answer. The
    functions take turns, round after round, so that on a shared machine each sees the
    same load; in each round a fast one runs again until it has spent ``budget`` seconds
    (one run of a 10 ms solve is mostly noise)."""
    best, outs = [float("inf")] * len(funs), [None] * len(funs)
    for _ in range(rounds):
        for i, fun in enumerate(funs):
            spent, runs = 0.0, 0
            while runs == 0 or (spent < budget and runs < 50):
                gc.collect()
                start = time.process_time()
                outs[i] = fun()
                elapsed = time.process_time() - start
                best[i], spent, runs = min(best[i], elapsed), spent + elapsed, runs + 1
    return best, outs


def peak_memory(fun) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        fun()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


# ----------------------------------------------------------------------------- Lotka-Volterra
LV_THETA, LV_Y0 = onp.array([1.1, 0.4, 0.9, 0.3]), onp.array([1.2, 0.8])
LV_T_EVAL = onp.linspace(0.5, 10.0, 20)


def lotka_volterra(t, y, theta, xp=np):
    return xp.array(
        [theta[0] * y[0] - theta[1] * y[0] * y[1], -theta[2] * y[1] + theta[3] * y[0] * y[1]]
    )


def lv_loss(theta, rtol=1e-8, atol=1e-8):
    sol = solve_ivp(
        lotka_volterra,
        (0.0, 10.0),
        LV_Y0,
        method="DOP853",
        t_eval=LV_T_EVAL,
        args=(theta,),
        rtol=rtol,
        atol=atol,
    )
    return np.sum((sol.y - 1.0) ** 2)


def lv_forward_only(theta):
    sol = si.solve_ivp(
        lambda t, y, th: lotka_volterra(t, y, th, onp),
        (0.0, 10.0),
        LV_Y0,
        method="DOP853",
        t_eval=LV_T_EVAL,
        args=(theta,),
        **TOL,
    )
    return onp.sum((sol.y - 1.0) ** 2)


def lv_candidates(theta) -> list:
    def forward_alone():
        lv_forward_only(theta)

    def finite_differences_lv(eps=1e-6):
        steps = eps * onp.eye(theta.size)
        return onp.array(
            [(lv_forward_only(theta + e) - lv_forward_only(theta - e)) / (2 * eps) for e in steps]
        )

    return [
        ("forward solve alone (SciPy, DOP853)", forward_alone, ""),
        ("chainrule solve_ivp adjoint (grad)", lambda: cr.grad(lv_loss)(theta), ""),
        (
            "  the same, VJP traced at each step",
            lambda: unstaged(cr.grad(lv_loss), theta),
            "without jit staging",
        ),
        ("chainrule solve_ivp forward sens. (jacfwd)", lambda: cr.jacfwd(lv_loss)(theta), "4 JVPs"),
        ("finite differences (8 solves)", finite_differences_lv, ""),
    ]


def unstaged(fun, *args):
    """``fun(*args)`` with the derivative dynamics traced at every step (not staged)."""
    staged = integrate.Staged
    integrate.Staged = lambda dynamics: dynamics
    try:
        return fun(*args)
    finally:
        integrate.Staged = staged


# ----------------------------------------------------------------------------- main
def table(title: str, rows: list, reference, rounds: int) -> None:
    scale = onp.max(onp.abs(reference))
    timed = [fun for _, fun, _ in rows if fun is not None]
    for fun in timed:
        fun()  # warm-up (imports, JAX's compilation)
    seconds, grads = interleaved_best(timed, rounds)
    base = seconds[0]  # the forward solve's time, the first row
    print(title)
    print(f"{'method':<44} {'time (s)':>9} {'x fwd':>7} {'peak MiB':>9} {'rel. error':>10}  note")
    k = 0
    for name, fun, note in rows:
        if fun is None:
            print(f"{name:<44} {'-':>9} {'-':>7} {'-':>9} {'-':>10}  {note}")
            continue
        time_, grad = seconds[k], grads[k]
        k += 1
        memory = peak_memory(fun)
        error = "-" if grad is None else f"{onp.max(onp.abs(grad - reference)) / scale:.1e}"
        print(f"{name:<44} {time_:>9.4f} {time_ / base:>7.1f} {memory:>9.2f} {error:>10}  {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    theta = initial_theta()
    reference = cr.grad(lambda th: solve_loss(th, rtol=1e-12, atol=1e-12))(theta)
    title = (
        f"neural ODE, {theta.size} parameters, rtol=atol=1e-8, {len(T_EVAL)} output times; "
        f"loss {forward_only(theta):.6g}"
    )
    table(title, candidates(theta), reference, options.rounds)
    reference = cr.grad(lambda th: lv_loss(th, rtol=1e-12, atol=1e-12))(LV_THETA)
    title = (
        f"\nLotka-Volterra, 4 parameters, rtol=atol=1e-8, {len(LV_T_EVAL)} output times; "
        f"loss {lv_forward_only(LV_THETA):.6g}"
    )
    table(title, lv_candidates(LV_THETA), reference, options.rounds)


if __name__ == "__main__":
    main()
