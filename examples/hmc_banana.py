"""Hamiltonian Monte Carlo on a 2-D banana-shaped density, with the gradient from ``grad``.

log p(x, y) = -x^2 / 8 - (y - x^2 / 4)^2 / 2  (a Gaussian in x with sd 2, and y | x ~ N(x^2/4, 1)),
so E[x] = 0, E[y] = 1, Var[x] = 4 exactly. Leapfrog steps use ``grad(log_density)``; a
Metropolis test keeps the chain exact. Reports acceptance and the sample moments.

    python examples/hmc_banana.py            # 5000 samples
    python examples/hmc_banana.py --smoke    # 200 samples
"""

from __future__ import annotations

import numpy as onp
from _common import parse_args, result, save, track

from chainrule import grad


def log_density(q):
    x, y = q[0], q[1]
    return -(x**2) / 8.0 - (y - x**2 / 4.0) ** 2 / 2.0


grad_log_density = grad(log_density)


def hmc_step(q, rng: onp.random.Generator, step: float, n_leapfrog: int):
    """One HMC transition: momentum refresh, leapfrog trajectory, Metropolis accept."""
    p = rng.standard_normal(2)
    q_new, p_new = q.copy(), p + 0.5 * step * grad_log_density(q)
    for i in range(n_leapfrog):
        q_new = q_new + step * p_new
        if i < n_leapfrog - 1:
            p_new = p_new + step * grad_log_density(q_new)
    p_new = p_new + 0.5 * step * grad_log_density(q_new)
    log_accept = (log_density(q_new) - 0.5 * p_new @ p_new) - (log_density(q) - 0.5 * p @ p)
    if onp.log(rng.uniform()) < log_accept:
        return q_new, True
    return q, False


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv, {"samples": (int, 5000, "HMC transitions")})
    rng = onp.random.default_rng(args.seed)
    n = 200 if args.smoke else args.samples
    q = onp.zeros(2)
    samples, accepted = [], 0
    for _ in track(range(n), "sampling"):
        q, ok = hmc_step(q, rng, step=0.25, n_leapfrog=12)
        samples.append(q)
        accepted += ok
    samples = onp.array(samples)
    mean, var_x = samples.mean(0), samples[:, 0].var()
    print(
        f"mean (x, y) = ({mean[0]:.3f}, {mean[1]:.3f})  [exact (0, 1)];  "
        f"var x = {var_x:.3f}  [exact 4]"
    )

    import matplotlib.pyplot as plt

    xs, ys = onp.meshgrid(onp.linspace(-6, 6, 200), onp.linspace(-3, 10, 200))
    dens = onp.exp(-(xs**2) / 8.0 - (ys - xs**2 / 4.0) ** 2 / 2.0)
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.contour(xs, ys, dens, levels=8, colors="k", linewidths=0.7)
    ax.plot(samples[:, 0], samples[:, 1], ".", ms=2, alpha=0.4)
    ax.set(xlabel="x", ylabel="y", title=f"HMC on the banana, {n} samples")
    save(fig, args, "hmc_banana.png")
    result(
        args,
        f"acceptance {accepted / n:.2f}, mean ({mean[0]:.2f}, {mean[1]:.2f}), "
        f"var x {var_x:.2f} from {n} samples",
    )


if __name__ == "__main__":
    main()
