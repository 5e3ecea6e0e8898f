"""A character-level LSTM trained on examples/data/text.txt.

The four gates come from one matrix product on [x_t, h_{t-1}]; the state (h, c) is a tuple,
a pytree like the parameter dict. Backpropagation through time is ``grad`` of the loop.

    python examples/char_lstm.py            # 1500 iterations, prints samples
    python examples/char_lstm.py --smoke    # 30 iterations
"""

from __future__ import annotations

import numpy as onp
from _charmodel import run
from _common import parse_args

import chainrule.numpy as np


def init(vocab: int, hidden: int, rng: onp.random.Generator) -> dict:
    W = rng.standard_normal((vocab + hidden, 4 * hidden)) / onp.sqrt(vocab + hidden)
    b = onp.zeros(4 * hidden)
    b[hidden:2 * hidden] = 1.0          # forget gate starts open
    return {"W": W, "b": b, "Wy": rng.standard_normal((hidden, vocab)) * 0.1,
            "c": onp.zeros(vocab)}


def sigmoid(z):
    return 0.5 * (np.tanh(0.5 * z) + 1.0)


def step(params, state, x):
    h, c = state
    n = h.shape[1]
    gates = np.concatenate([x, h], axis=1) @ params["W"] + params["b"]
    i, f, o = sigmoid(gates[:, :n]), sigmoid(gates[:, n:2 * n]), sigmoid(gates[:, 2 * n:3 * n])
    c = f * c + i * np.tanh(gates[:, 3 * n:])
    h = o * np.tanh(c)
    return (h, c), h @ params["Wy"] + params["c"]


def initial_state(params, batch: int):
    n = params["Wy"].shape[0]
    return onp.zeros((batch, n)), onp.zeros((batch, n))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv, {"iters": (int, 1500, "training iterations"),
                                      "hidden": (int, 96, "hidden units")})
    run("LSTM", (init, step, initial_state), args, "char_lstm.png")


if __name__ == "__main__":
    main()
