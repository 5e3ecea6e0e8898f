"""A gradient's fixed cost and small-array per-primitive cost.

    python -m benchmarks.gradbench.small_calls [--torch]
    python -m benchmarks.gradbench.small_calls --trees BEFORE AFTER --rounds 5 [--torch]

µs per call, the least over repeats of CPU time: ``grad`` of one ``np.sum`` at n = 10 (the
fixed cost of a call, issue 37), GradBench's lse at n = 10 and 2,500 and det at ell = 5
(their smallest inputs), with their objectives, and 50 chained ``tanh`` at n = 10 (the
per-primitive cost); ``--torch``: PyTorch's eager lse gradient beside (one thread, as
GradBench's tool). ``--trees``: this file's cases run on each tree's chainrule, one process
per tree and round, alternating (a shared machine's noise moves both alike); each tree's
least over the rounds, and their ratio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import timeit

import numpy

import chainrule
import chainrule.numpy as np
from benchmarks.gradbench.evals.det import det_by_minors


def logsumexp(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def one_sum(x):
    return np.sum(x)


def chain(x):
    for _ in range(50):
        x = np.tanh(x)
    return np.sum(x)


def cases(torch: bool) -> dict:
    rng = numpy.random.default_rng(0)
    x10, x2500, A = rng.random(10), rng.random(2500), rng.random((5, 5))
    found = {"grad sum n=10": (chainrule.grad(one_sum), x10),
             "lse grad n=10": (chainrule.grad(logsumexp), x10),
             "lse grad n=2500": (chainrule.grad(logsumexp), x2500),
             "lse objective n=2500": (logsumexp, x2500),
             "det grad ell=5": (chainrule.grad(det_by_minors), A),
             "det objective ell=5": (det_by_minors, A),
             "50 tanh grad n=10": (chainrule.grad(chain), x10)}
    if torch:
        found.update(_torch_lse(x10, x2500))
    return found


def _torch_lse(x10, x2500) -> dict:
    import torch

    torch.set_num_threads(1)

    def lse(x):
        a = torch.max(x)
        return a + torch.log(torch.sum(torch.exp(x - a)))

    def gradient(x0):
        x = x0.detach().requires_grad_(True)
        return torch.autograd.grad(lse(x), x)[0]

    return {"torch lse grad n=10": (gradient, torch.tensor(x10)),
            "torch lse grad n=2500": (gradient, torch.tensor(x2500))}


def compare(before: str, after: str, rounds: int, extra: list[str]) -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    best: dict = {before: {}, after: {}}
    for round_ in range(rounds):
        for tree in (before, after) if round_ % 2 == 0 else (after, before):
            env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                       PYTHONPATH=os.pathsep.join([os.path.join(tree, "src"), root]))
            done = subprocess.run([sys.executable, "-m", "benchmarks.gradbench.small_calls",
                                   "--json", *extra], cwd=root, env=env, capture_output=True,
                                  text=True, check=True)
            for name, t in json.loads(done.stdout.splitlines()[-1]).items():
                best[tree][name] = min(t, best[tree].get(name, float("inf")))
    print(f"least of {rounds} rounds, µs per call (CPU time)\n")
    print("| case | before | after | after / before |\n|---|---|---|---|")
    for name, b in best[before].items():
        a = best[after][name]
        print(f"| {name} | {b:.1f} | {a:.1f} | {a / b:.2f} |")


def main(argv: list[str]) -> None:
    if "--trees" in argv:
        at = argv.index("--trees")
        rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
        compare(argv[at + 1], argv[at + 2], rounds, [a for a in argv if a == "--torch"])
        return
    times = {}
    for name, (f, x) in cases("--torch" in argv).items():
        f(x)
        times[name] = min(timeit.repeat(lambda f=f, x=x: f(x), number=200, repeat=7,
                                        timer=time.process_time)) / 200 * 1e6
    if "--json" in argv:
        print(json.dumps(times))
        return
    for name, t in times.items():
        print(f"{name:24s} {t:8.1f} µs")


if __name__ == "__main__":
    main(sys.argv[1:])
