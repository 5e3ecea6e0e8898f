"""A neural ODE: learn the vector field of a spiral from one observed trajectory.

The data come from dy/dt = A y^3 (a damped cubic spiral). The model is dy/dt = MLP(y^3), and
its trajectory is ``chainrule.scipy.integrate.odeint(func, y0, t, args=(params,))``; the
gradient of the trajectory's squared error with respect to the flat parameter vector comes
from odeint's adjoint rule. Trained with misc.optimizers.adam.

    python examples/neural_ode.py            # 300 iterations
    python examples/neural_ode.py --smoke    # 3 iterations
"""

from __future__ import annotations

import numpy as onp
from _common import parse_args, result, save

import chainrule.numpy as np
from chainrule import value_and_grad
from chainrule.misc.flatten import flatten
from chainrule.misc.optimizers import adam

TRUE_A = onp.array([[-0.1, 2.0], [-2.0, -0.1]])
Y0 = onp.array([2.0, 0.0])


def true_field(y, t):
    return (y ** 3) @ TRUE_A.T


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv, {"iters": (int, 300, "Adam iterations")})
    from chainrule.scipy.integrate import odeint

    t = onp.linspace(0.0, 10.0 if not args.smoke else 2.0, 60 if not args.smoke else 15)
    target = odeint(true_field, Y0, t, rtol=1e-8)

    rng = onp.random.default_rng(args.seed)
    hidden = 32
    params0 = {"W1": rng.standard_normal((2, hidden)) * 0.1, "b1": onp.zeros(hidden),
               "W2": rng.standard_normal((hidden, 2)) * 0.1, "b2": onp.zeros(2)}
    flat0, unflatten = flatten(params0)

    def field(y, t, flat):
        p = unflatten(flat)
        return np.tanh((y ** 3) @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]

    def loss(flat):
        return np.mean((odeint(field, Y0, t, args=(flat,), rtol=1e-6, atol=1e-6) - target) ** 2)

    loss_and_grad = value_and_grad(loss)
    iters = 3 if args.smoke else args.iters
    losses = []

    def grad_step(flat, i):
        value, g = loss_and_grad(flat)
        losses.append(float(value))
        if not args.smoke and i % max(iters // 10, 1) == 0:
            print(f"iter {i:4d}  trajectory MSE {value:.5f}")
        return g

    flat = adam(grad_step, flat0, num_iters=iters, step_size=0.01)
    final = float(loss(flat))
    fitted = odeint(field, Y0, t, args=(flat,))

    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
    ax0.plot(target[:, 0], target[:, 1], "k.", label="observed")
    ax0.plot(fitted[:, 0], fitted[:, 1], label="neural ODE")
    ax0.set(title="phase plane", xlabel="y1", ylabel="y2")
    ax0.legend()
    ax1.semilogy(losses)
    ax1.set(title="training", xlabel="iteration", ylabel="trajectory MSE")
    save(fig, args, "neural_ode.png")
    result(args, f"trajectory MSE {losses[0]:.4f} -> {final:.5f} after {iters} iterations")


if __name__ == "__main__":
    main()
