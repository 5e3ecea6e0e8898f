"""A neural ODE: learn the vector field of a spiral from one observed trajectory.

The data come from dy/dt = A y^3 (a damped cubic spiral). The model is dy/dt = MLP(y^3), and
its trajectory is ``chainrule.scipy.integrate.odeint(func, y0, t, args=(params,))``; the
gradient of the squared error with respect to the flat parameter vector comes from odeint's
adjoint rule. Trained with misc.optimizers.adam on segments of the observed trajectory (16
at a time, solved as one ODE; 10 points long at first, growing to the whole trajectory),
then judged on the whole trajectory from y0.

    python examples/neural_ode.py            # 400 iterations
    python examples/neural_ode.py --smoke    # 3 iterations
"""

from __future__ import annotations

import numpy as onp
from _common import parse_args, progress, result, save

import chainrule.numpy as np
from chainrule import value_and_grad
from chainrule.misc.flatten import flatten
from chainrule.misc.optimizers import adam

TRUE_A = onp.array([[-0.1, 2.0], [-2.0, -0.1]])
Y0 = onp.array([2.0, 0.0])


def true_field(y, t):
    return (y**3) @ TRUE_A.T


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv, {"iters": (int, 400, "Adam iterations")})
    from chainrule.scipy.integrate import odeint

    n_times = 20 if args.smoke else 100
    t = onp.linspace(0.0, 10.0 if not args.smoke else 2.0, n_times)
    target = odeint(true_field, Y0, t, rtol=1e-8)

    rng = onp.random.default_rng(args.seed)
    hidden = 50
    params0 = {
        "W1": rng.standard_normal((2, hidden)) * 0.1,
        "b1": onp.zeros(hidden),
        "W2": rng.standard_normal((hidden, 2)) * 0.1,
        "b2": onp.zeros(2),
    }
    flat0, unflatten = flatten(params0)

    def field(states, t, flat):
        """The learned dy/dt for a batch of states, flattened into one ODE state vector."""
        p = unflatten(flat)
        y = np.reshape(states, (-1, 2))
        return np.ravel(np.tanh((y**3) @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"])

    def trajectory(flat, y0, times):
        ys = odeint(field, np.ravel(y0), times, args=(flat,), rtol=1e-6, atol=1e-6)
        return np.reshape(ys, (len(times),) + np.shape(y0))

    # train on segments that start on the observed trajectory, short at first and growing
    # to the whole of it (a long rollout from y0 alone gets stuck in a damped local minimum)
    batch = 16

    def segment_loss(flat, starts, segment):
        pred = trajectory(flat, target[starts], t[:segment])  # (segment, batch, 2)
        truth = onp.stack([target[starts + k] for k in range(segment)])
        return np.mean((pred - truth) ** 2)

    loss_and_grad = value_and_grad(segment_loss)
    iters = 3 if args.smoke else args.iters
    losses = []

    def grad_step(flat, i):
        segment = 10 + (n_times - 10) * i // iters
        starts = rng.integers(0, n_times - segment + 1, size=batch)
        value, g = loss_and_grad(flat, starts, segment)
        losses.append(float(value))
        bar.update()
        if not args.smoke and i % max(iters // 10, 1) == 0:
            bar.write(f"iter {i:4d}  segment MSE {value:.5f}")
        return g

    first = float(np.mean((trajectory(flat0, Y0, t) - target) ** 2))
    with progress(iters, "training") as bar:
        flat = adam(grad_step, flat0, num_iters=iters, step_size=0.01)
    fitted = trajectory(flat, Y0, t)
    final = float(np.mean((fitted - target) ** 2))

    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
    ax0.plot(target[:, 0], target[:, 1], "k.", label="observed")
    ax0.plot(fitted[:, 0], fitted[:, 1], label="neural ODE from y0")
    ax0.set(title="phase plane", xlabel="y1", ylabel="y2")
    ax0.legend()
    ax1.semilogy(losses)
    ax1.set(title="training", xlabel="iteration", ylabel="segment MSE")
    save(fig, args, "neural_ode.png")
    result(args, f"full-trajectory MSE from y0 {first:.4f} -> {final:.5f} after {iters} iterations")


if __name__ == "__main__":
    main()
