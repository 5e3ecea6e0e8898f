"""Logistic regression fitted by scipy.optimize.minimize with a chainrule gradient.

The negative log-likelihood is ordinary NumPy code; ``jac=grad(nll)`` hands BFGS its exact
gradient. The fit is checked against scikit-learn's unregularised LogisticRegression on the
ten "mean" features of the breast-cancer data set (all 30 features separate the classes
perfectly, where the unregularised maximum-likelihood estimate does not exist).

    python examples/logistic_regression.py            # full fit, compares with scikit-learn
    python examples/logistic_regression.py --smoke    # the same (it takes about a second)
"""

from __future__ import annotations

import numpy as onp
from _common import parse_args, result, save
from scipy.optimize import minimize

import chainrule.numpy as np
from chainrule import grad


def nll(w, X, y):
    """Mean negative log-likelihood; w[0] is the intercept."""
    logits = w[0] + X @ w[1:]
    return np.mean(np.logaddexp(0.0, logits) - y * logits)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv)
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression

    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :10]
    X = (X - X.mean(0)) / X.std(0)
    y = y.astype(float)

    fit = minimize(nll, onp.zeros(X.shape[1] + 1), args=(X, y), jac=grad(nll),
                   method="BFGS", options={"gtol": 1e-10, "maxiter": 2000})
    # C=inf is penalty=None (the spelling scikit-learn >= 1.8 prefers)
    ref = LogisticRegression(C=onp.inf, tol=1e-12, max_iter=100_000).fit(X, y)
    ref_w = onp.concatenate([ref.intercept_, ref.coef_[0]])
    gap = onp.max(onp.abs(fit.x - ref_w))
    accuracy = onp.mean((fit.x[0] + X @ fit.x[1:] > 0) == y)
    print(f"BFGS: {fit.nit} iterations, {fit.njev} gradients, loss {fit.fun:.6f}")
    print("weights (chainrule)   ", onp.array2string(fit.x, precision=3, max_line_width=200))
    print("weights (scikit-learn)", onp.array2string(ref_w, precision=3, max_line_width=200))

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(ref_w, fit.x, "o")
    lim = onp.max(onp.abs(ref_w)) * 1.1
    ax.plot([-lim, lim], [-lim, lim], "k:", lw=1)
    ax.set(xlabel="scikit-learn weight", ylabel="chainrule + BFGS weight",
           title="Unregularised logistic regression, breast cancer")
    save(fig, args, "logistic_regression.png")
    if gap > 1e-3:
        raise SystemExit(f"weights differ from scikit-learn's by {gap:.2e}")
    result(args, f"train accuracy {accuracy:.4f}, max |w - w_sklearn| = {gap:.1e}")


if __name__ == "__main__":
    main()
