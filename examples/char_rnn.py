"""A character-level recurrent network (Elman RNN) trained on examples/data/text.txt.

h_t = tanh(x_t Wx + h_{t-1} Wh + b), logits_t = h_t Wy + c. Backpropagation through time is
just ``grad`` of the loss written as a Python loop over the sequence.

    python examples/char_rnn.py            # 1500 iterations, prints samples
    python examples/char_rnn.py --smoke    # 30 iterations
"""

from __future__ import annotations

import numpy as onp
from _charmodel import run
from _common import parse_args

import chainrule.numpy as np


def init(vocab: int, hidden: int, rng: onp.random.Generator) -> dict:
    return {"Wx": rng.standard_normal((vocab, hidden)) * 0.1,
            "Wh": rng.standard_normal((hidden, hidden)) / onp.sqrt(hidden),
            "b": onp.zeros(hidden),
            "Wy": rng.standard_normal((hidden, vocab)) * 0.1,
            "c": onp.zeros(vocab)}


def step(params, h, x):
    h = np.tanh(x @ params["Wx"] + h @ params["Wh"] + params["b"])
    return h, h @ params["Wy"] + params["c"]


def initial_state(params, batch: int):
    return onp.zeros((batch, params["Wh"].shape[0]))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv, {"iters": (int, 1500, "training iterations"),
                                      "hidden": (int, 96, "hidden units")})
    run("RNN", (init, step, initial_state), args, "char_rnn.png")


if __name__ == "__main__":
    main()
