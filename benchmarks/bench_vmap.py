"""vmap benchmark: per-example gradients of an MLP 32-64-1, batch 256.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_vmap

Rows: chainrule's vmap(grad), a Python loop of chainrule's grad, and torch.func.vmap(grad)
(when torch is installed). Every result is checked against the loop's to 1e-12 first.
"""

from __future__ import annotations

import time

import numpy as onp

import chainrule as cr
import chainrule.numpy as np

BATCH, D_IN, HIDDEN = 256, 32, 64


def loss(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    return (h @ w2 + b2 - y) ** 2


def _data(seed: int = 0):
    r = onp.random.default_rng(seed)
    params = (
        r.normal(size=(D_IN, HIDDEN)) / 6,
        r.normal(size=HIDDEN) / 6,
        r.normal(size=HIDDEN) / 8,
        0.1,
    )
    return params, r.normal(size=(BATCH, D_IN)), r.normal(size=BATCH)


def _best_of(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run() -> list[tuple[str, float]]:
    params, xs, ys = _data()
    per_example = cr.vmap(cr.grad(loss), in_axes=(None, 0, 0))
    one = cr.grad(loss)

    def loop():
        grads = [one(params, x, y) for x, y in zip(xs, ys)]
        return [onp.stack(g) for g in zip(*grads)]

    want = loop()
    got = per_example(params, xs, ys)
    for g, w in zip(got, want):
        onp.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)
    rows = [
        ("chainrule vmap(grad)", _best_of(lambda: per_example(params, xs, ys))),
        ("chainrule loop of grad", _best_of(loop)),
    ]
    try:
        import torch
        from torch.func import grad, vmap
    except ImportError:
        return rows
    tparams = tuple(torch.tensor(p, dtype=torch.float64) for p in params)

    def tloss(p, x, y):
        w1, b1, w2, b2 = p
        return (torch.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2

    tx, ty = torch.tensor(xs), torch.tensor(ys)
    tgrad = vmap(grad(tloss), in_dims=(None, 0, 0))
    for g, w in zip(tgrad(tparams, tx, ty), want):
        onp.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-15)
    rows.append(("torch.func.vmap(grad)", _best_of(lambda: tgrad(tparams, tx, ty))))
    return rows


def main() -> None:
    rows = run()
    loop_time = dict(rows)["chainrule loop of grad"]
    print(f"per-example gradients, MLP {D_IN}-{HIDDEN}-1, batch {BATCH}")
    print(f"{'method':<26}{'ms':>10}{'loop / this':>14}")
    for name, seconds in rows:
        print(f"{name:<26}{seconds * 1e3:>10.2f}{loop_time / seconds:>14.2f}")


if __name__ == "__main__":
    main()
