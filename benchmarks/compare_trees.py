"""Compare chainrule's speed in two source trees, in one run (a refactoring's before/after).

    git worktree add /tmp/before <commit>
    python -m benchmarks.compare_trees /tmp/before .            # before, after
    python -m benchmarks.compare_trees /tmp/before . --rounds 5

Each round runs every workload once per tree, in alternating order (so that a noisy
neighbour on a shared machine slows both trees alike), each in its own process with
single-threaded BLAS; the table gives each tree's least CPU time over the rounds (each
round's figure is a median of repeats; on a shared machine noise only adds time) and the
ratio after / before. Workloads: the benchmark suite's scalar chain, MLP, RNN, Hessian
and Jacobian under `grad` (framework ``chainrule``) and under `jit` (``chainrule_jit``), and
per-example gradients with `vmap(grad)` (MLP 32-64-1, batch 256).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from .__main__ import SINGLE_THREAD_ENV

WORKLOADS = "scalar_chain,mlp,rnn,hessian,jacobian"

# Per-example gradients, the vmap benchmark's headline case, timed inside the tree's process.
VMAP_SNIPPET = r"""
import json, time
import numpy as onp
import chainrule.numpy as np
from chainrule import grad, vmap

rng = onp.random.default_rng(0)
params = (rng.normal(size=(32, 64)) / 6, onp.zeros(64), rng.normal(size=(64, 1)) / 8)
xs, ys = rng.normal(size=(256, 32)), rng.normal(size=(256, 1))

def loss(p, x, y):
    w1, b1, w2 = p
    return np.sum((np.tanh(x @ w1 + b1) @ w2 - y) ** 2)

per_example = vmap(grad(loss), in_axes=(None, 0, 0))
per_example(params, xs, ys)
times = []
for _ in range(30):
    t0 = time.process_time()
    per_example(params, xs, ys)
    times.append(time.process_time() - t0)
print(json.dumps({"vmap_grad_mlp": sorted(times)[len(times) // 2]}))
"""


def _env(tree: Path) -> dict:
    env = dict(os.environ, **SINGLE_THREAD_ENV)
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), str(tree)])
    return env


def _worker(tree: Path, framework: str) -> dict[str, float]:
    cmd = [sys.executable, "-m", "benchmarks._worker", framework, "full", WORKLOADS]
    out = subprocess.run(cmd, env=_env(tree), cwd=tree, capture_output=True, text=True,
                         check=True).stdout
    results = json.loads(out)["results"]
    return {f"{name} ({framework})": r["median_s"] for name, r in results.items()
            if "median_s" in r}


def _vmap(tree: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", VMAP_SNIPPET], env=_env(tree), cwd=tree,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def _round(tree: Path) -> dict[str, float]:
    times = _worker(tree, "chainrule")
    times.update(_worker(tree, "chainrule_jit"))
    times.update(_vmap(tree))
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    samples: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    for r in range(args.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        for which in order:
            for name, t in _round(trees[which]).items():
                samples[which].setdefault(name, []).append(t)
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    print(f"| workload | before ({trees['before'].name}) | after ({trees['after'].name}) "
          "| after / before |")
    print("|---|---|---|---|")
    for name, before in samples["before"].items():
        after = samples["after"].get(name)
        if not after:
            continue
        b, a = min(before), min(after)
        print(f"| {name} | {b * 1e3:.3f} ms | {a * 1e3:.3f} ms | {a / b:.2f} |")


if __name__ == "__main__":
    main()
