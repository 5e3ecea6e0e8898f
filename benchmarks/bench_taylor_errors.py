"""What laplacian's deferred floating-point errors cost (fix16), in one process.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_taylor_errors [--rounds 3]

The collapsed pass runs in ``_user_code.errstate.Deferred`` (its errors told only with its
answer); here it is swapped, call by call, for a block that does nothing (the engine
before fix16), interleaved, for the Laplacian of a tanh MLP 100-64-64-1 and of an
8-element chain of sin/cos/exp/log1p, eager and jitted (a jitted Laplacian's program runs
in ``_effects.Quiet``: any floating-point error hands the call to eager evaluation). Best
of 200 (eager) / 300 (jitted) calls; the ratio is deferred / none over two pairs.
"""

from __future__ import annotations

import argparse
import time

import numpy as onp

import chainrule as cr
import chainrule._transforms.taylor as taylor
import chainrule.numpy as np


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        pass

    def tell(self):
        pass


def _best(fn, x, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn(x)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    rng = onp.random.default_rng(0)
    w1, w2 = rng.normal(size=(64, 100)) / 10, rng.normal(size=(64, 64)) / 8
    w3 = rng.normal(size=(1, 64)) / 8

    def mlp(x):
        return np.sum(w3 @ np.tanh(w2 @ np.tanh(w1 @ x)))

    def chain(x):
        return np.sum(np.log1p(np.exp(np.cos(np.sin(x)))) * np.sin(np.cos(x)))

    deferred = taylor.Deferred
    cases = [("mlp", mlp, rng.normal(size=100)), ("chain", chain, rng.normal(size=8))]
    for _ in range(rounds):
        for name, f, x in cases:
            for mode in ("eager", "jit"):
                times = {}
                for label, block in (("none", _Nothing), ("deferred", deferred),
                                     ("none2", _Nothing), ("deferred2", deferred)):
                    taylor.Deferred = block
                    fn = cr.laplacian(f)
                    if mode == "jit":
                        fn = cr.jit(fn)
                        fn(x)
                        fn(x)
                    taylor.Deferred = deferred
                    if mode == "eager":
                        taylor.Deferred = block
                    times[label] = _best(fn, x, 200 if mode == "eager" else 300)
                    taylor.Deferred = deferred
                ratio = (times["deferred"] + times["deferred2"]) / (times["none"] + times["none2"])
                shown = " ".join(f"{k} {v * 1e6:.1f}" for k, v in times.items())
                print(f"{name:6s} {mode:5s} {shown} µs  ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
