"""Fit a small neural network to noisy data with chainrule Tensors and Adam.

The define-by-run style: parameters are Tensors, the loss is computed with ordinary
operators and chainrule.numpy functions, ``loss.backward()`` fills ``.grad``, and
``optimizer.step()`` updates the parameters.

    python examples/tensor_fit.py            # 3000 steps, prints the fit
    python examples/tensor_fit.py --smoke    # a few steps, finishes in about a second
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import limit_blas_threads, progress

import chainrule.numpy as cnp
from chainrule import Tensor, no_grad, optim


def make_data(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(-2.0, 2.0, n).reshape(n, 1)
    y = np.sin(2.0 * x) + 0.3 * x + 0.05 * rng.standard_normal((n, 1))
    return x, y


class MLP:
    """x -> tanh(x W1 + b1) W2 + b2, with one hidden layer."""

    def __init__(self, hidden: int, rng: np.random.Generator) -> None:
        self.w1 = Tensor(rng.standard_normal((1, hidden)))
        self.b1 = Tensor(np.zeros(hidden))
        self.w2 = Tensor(rng.standard_normal((hidden, 1)) / np.sqrt(hidden))
        self.b2 = Tensor(np.zeros(1))

    def parameters(self) -> list[Tensor]:
        return [self.w1, self.b1, self.w2, self.b2]

    def __call__(self, x):
        return cnp.tanh(x @ self.w1 + self.b1) @ self.w2 + self.b2


def fit(
    steps: int, n: int = 64, hidden: int = 16, lr: float = 0.02, seed: int = 0, log_every: int = 0
) -> tuple[float, float]:
    """Train; returns (initial loss, final loss), the mean squared error on the data."""
    rng = np.random.default_rng(seed)
    x, y = make_data(n, rng)
    model = MLP(hidden, rng)
    optimizer = optim.Adam(model.parameters(), lr=lr)
    with no_grad():
        first = ((model(x) - y) ** 2).mean().item()
    with progress(steps, "training") as bar:
        for step in range(1, steps + 1):
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
            bar.update()
            if log_every and step % log_every == 0:
                bar.write(f"step {step:5d}  loss {loss.item():.5f}")
    with no_grad():
        last = ((model(x) - y) ** 2).mean().item()
    return first, last


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few steps only (for tests)")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--blas-threads", type=int, default=None, help="default 1")
    args = parser.parse_args(argv)
    limit_blas_threads(args.blas_threads)
    steps = 100 if args.smoke else args.steps
    first, last = fit(steps, log_every=0 if args.smoke else max(steps // 10, 1))
    print(f"mean squared error: {first:.4f} -> {last:.4f} after {steps} Adam steps")


if __name__ == "__main__":
    main()
