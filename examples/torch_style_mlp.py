"""The tensor_fit MLP written the PyTorch way: only the chainrule import line differs.

Change ``from chainrule import ...`` below to ``from torch import ...`` and the script
runs on PyTorch unchanged; tests/test_nn.py does exactly that, starts both from the
same weights and checks that they train to the same losses.

    python examples/torch_style_mlp.py            # 2000 Adam steps
    python examples/torch_style_mlp.py --smoke    # 100 steps, about a second
"""

from __future__ import annotations

import numpy as np
from _common import parse_args, result, save

from chainrule import as_tensor, nn, no_grad, optim


def make_data(n: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = np.linspace(-2.0, 2.0, n).reshape(n, 1)
    y = np.sin(2.0 * x) + 0.3 * x + 0.05 * rng.standard_normal((n, 1))
    return as_tensor(x), as_tensor(y)  # float64 arrays: float64 Tensors in both libraries


class MLP(nn.Module):
    """x -> tanh(x W1ᵀ + b1) W2ᵀ + b2, one hidden layer."""

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


def train(model: MLP, x, y, steps: int, lr: float = 0.02, log_every: int = 0) -> list[float]:
    """Adam on the mean squared error; returns the loss before each step."""
    optimizer = optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.MSELoss()
    losses = []
    for step in range(1, steps + 1):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if log_every and step % log_every == 0:
            print(f"step {step:5d}  loss {losses[-1]:.5f}")
    return losses


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv, {"steps": (int, 2000, "Adam steps")})
    np.random.seed(args.seed)  # initial weights here come from NumPy's generator
    x, y = make_data(seed=args.seed)
    model = MLP().double()  # PyTorch's parameters start float32; the data is float64
    steps = 100 if args.smoke else args.steps
    losses = train(model, x, y, steps, log_every=0 if args.smoke else steps // 10)
    model.eval()
    with no_grad():
        fit = model(x)

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(x.numpy(), y.numpy(), ".", label="data")
    ax.plot(x.numpy(), fit.numpy(), "-", label=f"MLP after {steps} steps")
    ax.legend()
    path = save(fig, args, "torch_style_mlp.png")
    print(f"plot: {path}")
    result(args, f"mean squared error {losses[0]:.4f} -> {losses[-1]:.4f} after {steps} Adam steps")


if __name__ == "__main__":
    main()
