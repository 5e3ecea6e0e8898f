"""lse's VJP rules timed apart, with the engine's own arguments, in one or more trees.

    python -m benchmarks.gradbench.lse_rules --trees BEFORE . --rounds 3 [--n 2500]

One ``grad(lse)`` call records each rule's call (``rules_of(f).vjp`` of max, sum, exp,
log, subtract, add); each is then timed alone (``timeit``, least of 7 by CPU time), and
the gradient and the objective in the same process. Each round runs every tree in its own
process, in turn (a noisy neighbour slows both alike); the table is each tree's least.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SNIPPET = r"""
import json, sys, time, timeit
import numpy
import chainrule
import chainrule.numpy as np
from chainrule._core.rules import rules_of

def lse(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))

def least(call, number):
    return min(timeit.repeat(call, number=number, repeat=7, timer=time.process_time)) \
        / number * 1e6

funs = {"max": np.max, "sum": np.sum, "exp": np.exp, "log": np.log,
        "subtract": np.subtract, "add": np.add}
calls, kept = [], {}
for name, f in funs.items():
    entry = rules_of(f)
    kept[name] = entry.vjp
    def spy(*args, _rule=entry.vjp, _name=name):
        calls.append((_name, _rule, args))
        return _rule(*args)
    entry.vjp = spy
x = numpy.random.default_rng(0).random(int(sys.argv[1]))
gradient = chainrule.grad(lse)
gradient(x)
for name, f in funs.items():
    rules_of(f).vjp = kept[name]
found = {name: least(lambda: rule(*args), 2000) for name, rule, args in calls}
found["all rules"] = sum(found.values())
found["gradient"] = least(lambda: gradient(x), 500)
found["objective"] = least(lambda: lse(x), 2000)
print(json.dumps(found))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", default=["."])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=2500)
    opts = parser.parse_args()
    best: dict[str, dict[str, float]] = {tree: {} for tree in opts.trees}
    for _ in range(opts.rounds):
        for tree in opts.trees:
            env = dict(os.environ, PYTHONPATH=os.path.join(tree, "src"), OMP_NUM_THREADS="1",
                       OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
            out = subprocess.run([sys.executable, "-c", SNIPPET, str(opts.n)], env=env,
                                 check=True, capture_output=True, text=True).stdout
            for name, value in json.loads(out.splitlines()[-1]).items():
                best[tree][name] = min(value, best[tree].get(name, value))
    print(f"lse n={opts.n}, least of {opts.rounds} rounds, µs per call (CPU time)\n")
    print("| rule | " + " | ".join(opts.trees) + " | last / first |")
    print("|---|" + "---|" * (len(opts.trees) + 1))
    first, last = best[opts.trees[0]], best[opts.trees[-1]]
    for name in first:
        row = " | ".join(f"{best[tree][name]:.2f}" for tree in opts.trees)
        print(f"| {name} | {row} | {last[name] / first[name]:.2f} |")
    print("| gradient / objective | " + " | ".join(
        f"{best[t]['gradient'] / best[t]['objective']:.2f}" for t in opts.trees) + " | |")


if __name__ == "__main__":
    main()
