"""vmap benchmark: per-example gradients, batch 256, two models.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_vmap [--skip-large]

- small: an MLP 32-64-1 (squared error), where a Python loop's overhead dominates;
- large: an MLP 784-256-256-10 (squared error against one-hot labels), where the
  per-example gradients themselves (~550 MB) and memory bandwidth rule.

Rows: chainrule's vmap(grad), a Python loop of chainrule's grad, a hand-written vectorised
NumPy per-example gradient (large model), torch.func.vmap(grad) and JAX's vmap(grad), eager
and jitted (each when installed). Every result is checked against the loop's (the small
model) or the hand-written one's (the large model) to 1e-12 before it is timed.
"""

from __future__ import annotations

import argparse
import time

import numpy as onp

import chainrule as cr
import chainrule.numpy as np

BATCH = 256


def _best_of(fn, repeats: int = 3) -> float:
    fn()  # warm (jit compilation, caches)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _check(got, want) -> None:
    for g, w in zip(got, want):
        onp.testing.assert_allclose(onp.asarray(g), w, rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------- the models
def small_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    return (h @ w2 + b2 - y) ** 2


def large_loss(params, x, y):
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    return np.sum((h2 @ w3 + b3 - y) ** 2)


def _small_data(r):
    params = (r.normal(size=(32, 64)) / 6, r.normal(size=64) / 6, r.normal(size=64) / 8, 0.1)
    return params, r.normal(size=(BATCH, 32)), r.normal(size=BATCH)


def _large_data(r):
    sizes = [(784, 256), (256, 256), (256, 10)]
    params = []
    for n_in, n_out in sizes:
        params += [r.normal(size=(n_in, n_out)) / onp.sqrt(n_in), r.normal(size=n_out) / 10]
    labels = onp.eye(10)[r.integers(0, 10, BATCH)]
    return tuple(params), r.normal(size=(BATCH, 784)), labels


def hand_written_large(params, xs, ys):
    """Per-example gradients of large_loss, vectorised over the batch by hand."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = onp.tanh(xs @ w1 + b1)
    h2 = onp.tanh(h1 @ w2 + b2)
    d3 = 2.0 * (h2 @ w3 + b3 - ys)
    d2 = (d3 @ w3.T) * (1.0 - h2 ** 2)
    d1 = (d2 @ w2.T) * (1.0 - h1 ** 2)
    outer = lambda a, d: a[:, :, None] * d[:, None, :]  # noqa: E731
    return [outer(xs, d1), d1, outer(h1, d2), d2, outer(h2, d3), d3]


# ----------------------------------------------------------------------------- peers
def _torch_rows(loss_src: str, params, xs, ys, want) -> list[tuple[str, float]]:
    try:
        import torch
        from torch.func import grad, vmap
    except ImportError:
        return []
    tparams = tuple(torch.tensor(onp.asarray(p), dtype=torch.float64) for p in params)
    namespace = {"torch": torch}
    exec(loss_src.replace("np.", "torch."), namespace)  # the same loss, written for torch
    tgrad = vmap(grad(namespace["loss"]), in_dims=(None, 0, 0))
    tx, ty = torch.tensor(xs), torch.tensor(ys)
    _check([g.numpy() for g in tgrad(tparams, tx, ty)], want)
    return [("torch.func.vmap(grad)", _best_of(lambda: tgrad(tparams, tx, ty)))]


def _jax_rows(loss_src: str, params, xs, ys, want) -> list[tuple[str, float]]:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return []
    jax.config.update("jax_enable_x64", True)
    namespace = {"jnp": jnp}
    exec(loss_src.replace("np.", "jnp."), namespace)
    jgrad = jax.vmap(jax.grad(namespace["loss"]), in_axes=(None, 0, 0))
    jparams = tuple(jnp.asarray(p, dtype=jnp.float64) for p in params)
    jx, jy = jnp.asarray(xs), jnp.asarray(ys)
    _check(jgrad(jparams, jx, jy), want)
    jitted = jax.jit(jgrad)
    _check(jitted(jparams, jx, jy), want)
    block = lambda out: [o.block_until_ready() for o in out]  # noqa: E731
    return [("JAX vmap(grad)", _best_of(lambda: block(jgrad(jparams, jx, jy)))),
            ("JAX jit(vmap(grad))", _best_of(lambda: block(jitted(jparams, jx, jy))))]


_SMALL_SRC = """
def loss(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    return (h @ w2 + b2 - y) ** 2
"""

_LARGE_SRC = """
def loss(params, x, y):
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    return np.sum((h2 @ w3 + b3 - y) ** 2)
"""


# ----------------------------------------------------------------------------- runs
def run_small() -> list[tuple[str, float]]:
    params, xs, ys = _small_data(onp.random.default_rng(0))
    per_example = cr.vmap(cr.grad(small_loss), in_axes=(None, 0, 0))
    one = cr.grad(small_loss)

    def loop():
        grads = [one(params, x, y) for x, y in zip(xs, ys)]
        return [onp.stack(g) for g in zip(*grads)]

    want = loop()
    _check(per_example(params, xs, ys), want)
    rows = [("chainrule vmap(grad)", _best_of(lambda: per_example(params, xs, ys))),
            ("chainrule loop of grad", _best_of(loop))]
    return rows + _torch_rows(_SMALL_SRC, params, xs, ys, want) + _jax_rows(
        _SMALL_SRC, params, xs, ys, want)


def run_large() -> list[tuple[str, float]]:
    params, xs, ys = _large_data(onp.random.default_rng(1))
    per_example = cr.vmap(cr.grad(large_loss), in_axes=(None, 0, 0))
    want = hand_written_large(params, xs, ys)
    _check(per_example(params, xs, ys), want)
    one = cr.grad(large_loss)
    _check([g[:4] for g in zip(*[one(params, x, y) for x, y in zip(xs[:4], ys[:4])])],
           [w[:4] for w in want])
    rows = [("hand-written NumPy", _best_of(lambda: hand_written_large(params, xs, ys))),
            ("chainrule vmap(grad)", _best_of(lambda: per_example(params, xs, ys))),
            ("chainrule loop of grad", _best_of(lambda: [one(params, x, y)
                                                         for x, y in zip(xs, ys)], 1))]
    return rows + _torch_rows(_LARGE_SRC, params, xs, ys, want) + _jax_rows(
        _LARGE_SRC, params, xs, ys, want)


def _print(title: str, rows, reference: str) -> None:
    base = dict(rows)[reference]
    print(title)
    print(f"{'method':<28}{'ms':>10}{'time / ' + reference:>34}")
    for name, seconds in rows:
        print(f"{name:<28}{seconds * 1e3:>10.2f}{seconds / base:>34.2f}")
    print()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args(argv)
    _print(f"per-example gradients, MLP 32-64-1, batch {BATCH}", run_small(),
           "chainrule vmap(grad)")
    if not args.skip_large:
        _print(f"per-example gradients, MLP 784-256-256-10, batch {BATCH}", run_large(),
               "hand-written NumPy")


if __name__ == "__main__":
    main()
