"""What the character-level RNN and LSTM examples share: the text, batches, training, sampling.

A model is ``(init(vocab, hidden, rng) -> params, step(params, state, x) -> (state, logits),
initial_state(params, batch) -> state)``; the loss runs ``step`` over a sequence and
backpropagates through time with ``grad``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as onp
from _common import progress

import chainrule.numpy as np
from chainrule import value_and_grad
from chainrule.misc.optimizers import adam

TEXT = Path(__file__).resolve().parent / "data" / "text.txt"


def load_text() -> tuple[str, list[str]]:
    text = TEXT.read_text(encoding="utf-8")
    return text, sorted(set(text))


def log_softmax(logits):
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def sequence_loss(params, onehots, step: Callable, initial_state: Callable):
    """Mean cross-entropy (nats) of predicting onehots[t+1] from onehots[:t+1]; shape (T, B, V)."""
    state = initial_state(params, onehots.shape[1])
    total = 0.0
    for t in range(onehots.shape[0] - 1):
        state, logits = step(params, state, onehots[t])
        total = total + np.sum(log_softmax(logits) * onehots[t + 1])
    return -total / ((onehots.shape[0] - 1) * onehots.shape[1])


def train(
    model,
    *,
    hidden: int,
    iters: int,
    seq_len: int,
    batch: int,
    seed: int,
    step_size: float = 0.01,
    log_every: int = 100,
):
    """Train on random windows of the text; returns (params, vocab, losses in bits/char)."""
    init, step, initial_state = model
    text, vocab = load_text()
    index = {c: i for i, c in enumerate(vocab)}
    codes = onp.array([index[c] for c in text])
    eye = onp.eye(len(vocab))
    rng = onp.random.default_rng(seed)
    params = init(len(vocab), hidden, rng)
    loss_and_grad = value_and_grad(sequence_loss)
    losses = []
    started = time.perf_counter()

    def batch_grad(params, i):
        starts = rng.integers(0, len(codes) - seq_len, size=batch)
        windows = codes[starts[:, None] + onp.arange(seq_len)].T  # (T, B)
        loss, g = loss_and_grad(params, eye[windows], step, initial_state)
        losses.append(float(loss) / onp.log(2.0))
        bar.update()
        if log_every and (i % log_every == 0 or i == iters - 1):
            bar.write(
                f"iter {i:5d}  loss {losses[-1]:.3f} bits/char  "
                f"({time.perf_counter() - started:.0f} s)"
            )
        return g

    with progress(iters, "training") as bar:
        params = adam(batch_grad, params, num_iters=iters, step_size=step_size)
    return params, vocab, losses


def sample(
    params,
    model,
    vocab: list[str],
    prompt: str,
    length: int,
    rng: onp.random.Generator,
    temperature: float = 0.6,
) -> str:
    """Continue ``prompt`` by sampling one character at a time."""
    _, step, initial_state = model
    eye = onp.eye(len(vocab))
    index = {c: i for i, c in enumerate(vocab)}
    state = initial_state(params, 1)
    out = list(prompt)
    logits = None
    for c in prompt:
        state, logits = step(params, state, eye[[index[c]]])
    for _ in range(length):
        p = onp.exp(onp.asarray(log_softmax(logits))[0] / temperature)
        c = vocab[rng.choice(len(vocab), p=p / p.sum())]
        out.append(c)
        state, logits = step(params, state, eye[[index[c]]])
    return "".join(out)


def run(name: str, model, args, plot_name: str) -> None:
    """The shared main of both examples: train, sample, plot the loss, print the result."""
    from _common import result, save

    iters = 30 if args.smoke else args.iters
    params, vocab, losses = train(
        model,
        hidden=args.hidden,
        iters=iters,
        seq_len=32,
        batch=32,
        seed=args.seed,
        log_every=0 if args.smoke else max(iters // 10, 1),
    )
    rng = onp.random.default_rng(args.seed)
    print("sample:", repr(sample(params, model, vocab, "The ", 160, rng)))

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(losses, lw=0.6, alpha=0.5)
    window = max(len(losses) // 30, 1)
    ax.plot(onp.convolve(losses, onp.ones(window) / window, mode="valid"), lw=1.5)
    ax.set(xlabel="iteration", ylabel="bits per character", title=f"{name} on text.txt")
    save(fig, args, plot_name)
    first, last = onp.mean(losses[:5]), onp.mean(losses[-max(len(losses) // 20, 1) :])
    result(
        args, f"{name} training loss {first:.2f} -> {last:.2f} bits/char after {iters} iterations"
    )
