"""Gaussian-process regression with kernel hyperparameters fitted by gradient.

The log marginal likelihood of an RBF-kernel GP is written with chainrule.numpy (Cholesky
factor, triangular solves via ``solve``, log-determinant from the factor's diagonal);
``value_and_grad`` gives L-BFGS its exact gradient in log-parameter space. The fitted
hyperparameters are compared with scikit-learn's GaussianProcessRegressor.

    python examples/gaussian_process.py            # 40 points, compares with scikit-learn
    python examples/gaussian_process.py --smoke    # 15 points
"""

from __future__ import annotations

import numpy as onp
from _common import parse_args, result, save
from scipy.optimize import minimize

import chainrule.numpy as np
from chainrule import value_and_grad


def rbf(xa, xb, log_amp, log_scale):
    sq = (xa[:, None] - xb[None, :]) ** 2
    return np.exp(2.0 * log_amp) * np.exp(-0.5 * sq / np.exp(2.0 * log_scale))


def neg_log_marginal(theta, x, y):
    """-log p(y | x, theta) for theta = (log amplitude, log length scale, log noise std)."""
    log_amp, log_scale, log_noise = theta[0], theta[1], theta[2]
    K = rbf(x, x, log_amp, log_scale) + np.exp(2.0 * log_noise) * np.eye(len(x))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L, y)
    return (0.5 * np.sum(alpha ** 2) + np.sum(np.log(np.diag(L)))
            + 0.5 * len(x) * np.log(2.0 * np.pi))


def posterior(theta, x, y, xs):
    K = rbf(x, x, theta[0], theta[1]) + onp.exp(2.0 * theta[2]) * onp.eye(len(x))
    Ks = rbf(xs, x, theta[0], theta[1])
    mean = Ks @ onp.linalg.solve(K, y)
    var = onp.exp(2.0 * theta[0]) - onp.sum(Ks * onp.linalg.solve(K, Ks.T).T, axis=1)
    return mean, onp.sqrt(onp.maximum(var, 0.0))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv)
    rng = onp.random.default_rng(args.seed)
    n = 15 if args.smoke else 40
    x = onp.sort(rng.uniform(-3.0, 3.0, n))
    y = onp.sin(2.0 * x) + 0.3 * x + 0.15 * rng.standard_normal(n)

    fit = minimize(value_and_grad(neg_log_marginal), onp.zeros(3), args=(x, y), jac=True,
                   method="L-BFGS-B")
    amp, scale, noise = onp.exp(fit.x)
    print(f"L-BFGS: {fit.nit} iterations, -log marginal likelihood {fit.fun:.4f}")
    print(f"chainrule:    amplitude {amp:.4f}  length scale {scale:.4f}  noise {noise:.4f}")

    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    kernel = ConstantKernel(1.0, (1e-3, 1e3)) * RBF(1.0, (1e-3, 1e3)) + WhiteKernel(1.0)
    ref = GaussianProcessRegressor(kernel, n_restarts_optimizer=3, random_state=0).fit(
        x[:, None], y)
    k = ref.kernel_
    ref_params = onp.array([onp.sqrt(k.k1.k1.constant_value), k.k1.k2.length_scale,
                            onp.sqrt(k.k2.noise_level)])
    print("scikit-learn: amplitude {:.4f}  length scale {:.4f}  noise {:.4f}".format(
        *ref_params))
    rel = onp.max(onp.abs(onp.array([amp, scale, noise]) / ref_params - 1.0))

    import matplotlib.pyplot as plt

    xs = onp.linspace(-3.5, 3.5, 200)
    mean, std = posterior(fit.x, x, y, xs)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.fill_between(xs, mean - 2 * std, mean + 2 * std, alpha=0.25, label="mean ± 2 sd")
    ax.plot(xs, mean, label="posterior mean")
    ax.plot(x, y, "k.", label="data")
    ax.set(title=f"GP, fitted: amplitude {amp:.2f}, length scale {scale:.2f}, "
                 f"noise {noise:.2f}", xlabel="x", ylabel="y")
    ax.legend()
    save(fig, args, "gaussian_process.png")
    if rel > 1e-2:
        raise SystemExit(f"hyperparameters differ from scikit-learn's by {rel:.1%}")
    result(args, f"amplitude {amp:.3f}, length scale {scale:.3f}, noise {noise:.3f} "
                 f"(scikit-learn within {rel:.1e} relative)")


if __name__ == "__main__":
    main()
