"""Fitting an ODE's parameters to data: SciPy's minimize with a gradient from solve_ivp's adjoint.

The model is Lotka-Volterra, x' = a x - b x y, y' = c x y - d y, observed with noise at 40
times. The loss is the squared misfit of ``chainrule.scipy.integrate.solve_ivp``'s solution;
``value_and_grad`` of it runs the forward solve on plain values and the gradient by the
adjoint method (one backward ODE solve, memory independent of the number of steps). The
gradient at the starting point is checked against central differences of the re-solved
problem, then L-BFGS-B fits the four (log-)parameters.

    python examples/ode_fit.py            # full fit
    python examples/ode_fit.py --smoke    # fewer observations and iterations
"""

from __future__ import annotations

import numpy as onp
from _common import parse_args, result, save
from scipy.optimize import minimize

import chainrule.numpy as np
from chainrule import value_and_grad
from chainrule.scipy.integrate import solve_ivp

TRUE = onp.array([1.0, 0.4, 0.1, 0.4])  # a, b, c, d
Y0 = onp.array([10.0, 5.0])


def lotka_volterra(t, z, params):
    a, b, c, d = params[0], params[1], params[2], params[3]
    x, y = z[0], z[1]
    return np.stack([a * x - b * x * y, c * x * y - d * y])


def trajectory(params, times):
    sol = solve_ivp(
        lotka_volterra, (0.0, times[-1]), Y0, t_eval=times, args=(params,), rtol=1e-8, atol=1e-8
    )
    return sol.y


def loss(log_params, times, data):
    """Mean squared misfit; the parameters are fitted on a log scale (they stay positive)."""
    return np.mean((trajectory(np.exp(log_params), times) - data) ** 2)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv)
    rng = onp.random.default_rng(args.seed)
    times = onp.linspace(0.5, 15.0, 12 if args.smoke else 40)
    clean = trajectory(TRUE, times)
    data = clean + rng.normal(scale=0.3, size=clean.shape)

    start = onp.log(TRUE * onp.array([1.3, 0.8, 1.2, 0.75]))
    value, gradient = value_and_grad(loss)(start, times, data)
    step = 1e-5
    central = onp.array(
        [
            (loss(start + step * e, times, data) - loss(start - step * e, times, data)) / (2 * step)
            for e in onp.eye(4)
        ]
    )
    print(f"loss at the start {value:.4f}")
    print("adjoint gradient   ", onp.array2string(gradient, precision=6))
    print("central differences", onp.array2string(central, precision=6))
    mismatch = onp.max(onp.abs(gradient - central)) / onp.max(onp.abs(central))

    evaluations = []

    def objective(log_params):
        value, gradient = value_and_grad(loss)(log_params, times, data)
        evaluations.append(float(value))
        return float(value), onp.asarray(gradient)

    fit = minimize(
        objective,
        start,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 15 if args.smoke else 200, "gtol": 1e-9},
    )
    found = onp.exp(fit.x)
    print(
        f"L-BFGS-B: {fit.nit} iterations, {len(evaluations)} loss+gradient evaluations, "
        f"loss {fit.fun:.4f}"
    )
    print("true parameters  ", onp.array2string(TRUE, precision=4))
    print("fitted parameters", onp.array2string(found, precision=4))

    import matplotlib.pyplot as plt

    fine = onp.linspace(times[0], times[-1], 300)
    fitted = trajectory(found, fine)
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, (name, colour) in enumerate([("prey", "C0"), ("predators", "C1")]):
        ax.plot(times, data[k], "o", color=colour, ms=4, label=f"{name}, data")
        ax.plot(fine, fitted[k], "-", color=colour, label=f"{name}, fitted")
    ax.set(xlabel="t", ylabel="population", title="Lotka-Volterra fitted by adjoint gradients")
    ax.legend(fontsize=8)
    save(fig, args, "ode_fit.png")
    if mismatch > 1e-4:
        raise SystemExit(f"adjoint gradient differs from central differences by {mismatch:.1e}")
    error = onp.max(onp.abs(found - TRUE) / TRUE)
    result(
        args,
        f"gradient vs central differences {mismatch:.1e}, max relative parameter error {error:.3f}",
    )


if __name__ == "__main__":
    main()
