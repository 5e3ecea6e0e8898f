"""Accuracy of solve_ivp's derivatives, run by hand:
``PYTHONPATH=src python benchmarks/bench_ode_accuracy.py``.

For each method at rtol = atol = 1e-10, the largest error of the gradient of a loss with
respect to the ODE's parameters, relative to the reference's largest entry, in reverse mode
(the adjoint, ``grad``) and forward mode (the sensitivities, ``jacfwd``), against:

- a stiff linear system, y' = (S0 + theta S1) y with eigenvalues -1 and -1000 (issue 34's):
  the closed form, the Frechet derivative of the matrix exponential (``expm_frechet``);
- Robertson's chemical kinetics (rates 0.04, 1e4, 3e7; three output times): central
  differences of SciPy's Radau solve at rtol = 1e-13 (itself accurate to about 1e-8);
- Lotka-Volterra (non-stiff, 20 output times): central differences of SciPy's DOP853 solve
  at rtol = atol = 1e-13 (accurate to about 1e-8).

The explicit methods are not run on Robertson's problem (it is stiff).
"""

from __future__ import annotations

import warnings

import numpy as onp
import scipy.integrate as si
from scipy.linalg import expm_frechet

import chainrule as cr
import chainrule.numpy as np
from chainrule.scipy.integrate import solve_ivp

METHODS = ["RK45", "DOP853", "Radau", "BDF", "LSODA"]
TOL = dict(rtol=1e-10, atol=1e-10)

S0 = onp.array([[-1.0, 0.0], [1.0, -1000.0]])
S1 = onp.array([[0.0, 1.0], [0.0, 0.0]])


def stiff(method):
    def loss(theta):
        sol = solve_ivp(lambda t, y, th: np.dot(S0 + th[0] * S1, y), (0.0, 1.0),
                        onp.ones(2), method=method, t_eval=[1.0], args=(theta,), **TOL)
        return np.sum(sol.y[:, -1])

    exact = onp.ones(2) @ expm_frechet(S0 + 0.5 * S1, S1, compute_expm=False) @ onp.ones(2)
    return loss, onp.array([0.5]), onp.array([exact])


def robertson_rhs(t, y, k):
    return np.stack([-k[0] * y[0] + k[1] * y[1] * y[2],
                     k[0] * y[0] - k[1] * y[1] * y[2] - k[2] * y[1] ** 2,
                     k[2] * y[1] ** 2])


ROBERTSON_T = [0.4, 4.0, 40.0]


def robertson_loss(ys):
    return ys[0, -1] + 1e4 * ys[1, -1] + ys[2, -1] + ys[1].sum()


def robertson(method):
    def loss(k):
        sol = solve_ivp(robertson_rhs, (0.0, 40.0), onp.array([1.0, 0.0, 0.0]), method=method,
                        t_eval=ROBERTSON_T, args=(k,), rtol=1e-10, atol=1e-14)
        return robertson_loss(sol.y)

    def plain(k):
        sol = si.solve_ivp(lambda t, y: onp.asarray(robertson_rhs(t, y, k)), (0.0, 40.0),
                           [1.0, 0.0, 0.0], method="Radau", t_eval=ROBERTSON_T, rtol=1e-13,
                           atol=1e-17)
        return robertson_loss(sol.y)

    k = onp.array([0.04, 1e4, 3e7])
    return loss, k, differences(plain, k)


LV_T = onp.linspace(0.5, 10.0, 20)


def lv_rhs(t, y, th):
    return np.stack([th[0] * y[0] - th[1] * y[0] * y[1], -th[2] * y[1] + th[3] * y[0] * y[1]])


def lotka_volterra(method):
    def loss(th):
        sol = solve_ivp(lv_rhs, (0.0, 10.0), onp.array([1.2, 0.8]), method=method, t_eval=LV_T,
                        args=(th,), **TOL)
        return np.sum(sol.y**2)

    def plain(th):
        sol = si.solve_ivp(lambda t, y: onp.asarray(lv_rhs(t, y, th)), (0.0, 10.0), [1.2, 0.8],
                           method="DOP853", t_eval=LV_T, rtol=1e-13, atol=1e-13)
        return onp.sum(sol.y**2)

    th = onp.array([1.1, 0.4, 0.9, 0.3])
    return loss, th, differences(plain, th)


def differences(f, x, step=1e-5):
    out = onp.zeros(x.size)
    for i in range(x.size):
        h = step * max(abs(x[i]), 1.0)
        e = onp.zeros(x.size)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def error(got, reference) -> str:
    return f"{onp.max(onp.abs(onp.asarray(got) - reference)) / onp.max(onp.abs(reference)):.0e}"


def main() -> None:
    warnings.simplefilter("ignore")
    problems = {"stiff linear": stiff, "Robertson": robertson, "Lotka-Volterra": lotka_volterra}
    print(f"{'method':<8}" + "".join(f"{name:>26}" for name in problems))
    print(f"{'':<8}" + f"{'reverse':>16}{'forward':>10}" * len(problems))
    for method in METHODS:
        row = f"{method:<8}"
        for name, problem in problems.items():
            if name == "Robertson" and method in ("RK45", "DOP853"):
                row += f"{'-':>16}{'-':>10}"
                continue
            loss, x, reference = problem(method)
            row += f"{error(cr.grad(loss)(x), reference):>16}"
            row += f"{error(cr.jacfwd(loss)(x), reference):>10}"
        print(row)


if __name__ == "__main__":
    main()
