"""Choosing a regularisation weight by its gradient: bilevel optimisation with implicit derivatives.

Inner problem: ridge-regularised logistic regression, w*(lam) = argmin of the training loss
+ lam/2 |w|^2, solved by ``chainrule.scipy.optimize.minimize`` (SciPy's trust-exact on
plain values). Outer problem: the validation loss of w*(lam). ``grad`` of the outer loss with
respect to log(lam) goes through the inner solve by the implicit function theorem (one
linear solve with the Hessian at w*), not through the solver's iterations. The implicit
gradient is checked against central differences of the re-solved problem, then a few
gradient steps on log(lam) move towards the best validation loss.

    python examples/bilevel.py            # full run
    python examples/bilevel.py --smoke    # a smaller problem and fewer steps
"""

from __future__ import annotations

import numpy as onp
from _common import parse_args, result, save, track

import chainrule.numpy as np
from chainrule import grad
from chainrule.scipy.optimize import minimize


def make_data(rng, n: int, d: int):
    """Logistic data whose true weights are sparse: regularisation helps."""
    w_true = onp.zeros(d)
    w_true[:4] = [2.0, -1.5, 1.0, 0.5]
    X = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < 1 / (1 + onp.exp(-X @ w_true))).astype(float)
    return X, y


def logistic_loss(w, X, y):
    logits = X @ w
    return np.mean(np.logaddexp(0.0, logits) - y * logits)


def inner_solution(log_lam, X, y):
    """w*(lam): the minimiser of the regularised training loss, differentiable in log_lam."""
    objective = lambda w, lam: logistic_loss(w, X, y) + 0.5 * lam * np.sum(w**2)  # noqa: E731
    # trust-exact takes chainrule's exact Hessian: w* to machine precision in a few steps
    fit = minimize(
        objective,
        onp.zeros(X.shape[1]),
        args=(np.exp(log_lam),),
        method="trust-exact",
        options={"gtol": 1e-12},
    )
    return fit.x


def validation_loss(log_lam, train, valid):
    return logistic_loss(inner_solution(log_lam, *train), *valid)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv)
    rng = onp.random.default_rng(args.seed)
    n, d = (60, 10) if args.smoke else (200, 30)
    X, y = make_data(rng, 2 * n, d)
    train, valid = (X[:n], y[:n]), (X[n:], y[n:])

    outer_grad = grad(validation_loss)
    log_lam = onp.log(1.0)
    implicit = outer_grad(log_lam, train, valid)
    step = 1e-4
    central = (
        validation_loss(log_lam + step, train, valid)
        - validation_loss(log_lam - step, train, valid)
    ) / (2 * step)
    print(
        f"d(validation loss)/d(log lam) at lam = 1: implicit {implicit:.8f}, "
        f"central differences {central:.8f}"
    )
    mismatch = abs(implicit - central) / abs(central)

    path = [(log_lam, validation_loss(log_lam, train, valid))]
    rate = 2.0
    for _ in track(range(6 if args.smoke else 25), "outer steps"):
        log_lam = log_lam - rate * outer_grad(log_lam, train, valid)
        path.append((log_lam, validation_loss(log_lam, train, valid)))
    best_lam, best_loss = onp.exp(path[-1][0]), path[-1][1]
    print(
        f"after {len(path) - 1} outer steps: lam = {best_lam:.4g}, "
        f"validation loss {path[0][1]:.4f} -> {best_loss:.4f}"
    )

    import matplotlib.pyplot as plt

    grid = onp.linspace(
        min(p[0] for p in path) - 1.5, max(p[0] for p in path) + 1.5, 10 if args.smoke else 30
    )
    curve = [validation_loss(g, train, valid) for g in track(grid, "validation curve")]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(onp.exp(grid), curve, "-", color="0.5", label="validation loss")
    ax.plot(
        [onp.exp(p[0]) for p in path],
        [p[1] for p in path],
        "o-",
        ms=4,
        label="implicit-gradient steps",
    )
    ax.set(
        xscale="log",
        xlabel="lam",
        ylabel="validation loss",
        title="Regularisation weight chosen by implicit gradients",
    )
    ax.legend(fontsize=8)
    save(fig, args, "bilevel.png")
    if mismatch > 1e-5:
        raise SystemExit(f"implicit gradient differs from central differences by {mismatch:.1e}")
    result(
        args,
        f"implicit vs central differences {mismatch:.1e}, lam {best_lam:.3g}, "
        f"validation loss {path[0][1]:.4f} -> {best_loss:.4f}",
    )


if __name__ == "__main__":
    main()
