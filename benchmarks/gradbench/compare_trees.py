"""lstm's eager gradient and jit's first and cached calls in two source trees, in one run.

    python -m benchmarks.gradbench.compare_trees /work/main . --chars 1024 --rounds 3

Each round times every measure once per tree, in alternating order (a noisy neighbour
slows both alike), each in its own process with single-threaded BLAS; the table gives
each tree's least CPU time (``time.process_time``) over the rounds. The input is
``profile.lstm_case`` (l=2, b=14, ``--chars`` characters).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SNIPPET = r"""
import json, sys, time
import chainrule
from benchmarks.gradbench.profile import lstm_case

name, f, argnum, args = lstm_case(chars=int(sys.argv[1]))
g = chainrule.grad(f, argnum=argnum)
g(*args)
eager = []
for _ in range(3):
    t = time.process_time(); g(*args); eager.append(time.process_time() - t)
j = chainrule.jit(chainrule.grad(f, argnum=argnum))
t = time.process_time(); j(*args); first = time.process_time() - t
t = time.process_time(); j(*args); cached = time.process_time() - t
print(json.dumps({"eager gradient": min(eager), "jit, first call": first,
                  "jit, cached call": cached}))
"""


def _run(tree: Path, chars: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(tree / "src"), str(tree)]))
    done = subprocess.run([sys.executable, "-c", SNIPPET, str(chars)], cwd=tree, env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--chars", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args(argv)
    trees = [options.before.resolve(), options.after.resolve()]
    best: list[dict] = [{}, {}]
    for r in range(options.rounds):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            for measure, seconds in _run(trees[i], options.chars).items():
                best[i][measure] = min(seconds, best[i].get(measure, seconds))
    print(f"lstm l=2 c={options.chars} b=14, CPU ms, least of {options.rounds} rounds\n")
    print("| measure | before | after | after / before |\n|---|---|---|---|")
    for measure in best[0]:
        a, b = best[0][measure] * 1e3, best[1][measure] * 1e3
        print(f"| {measure} | {a:,.0f} | {b:,.0f} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
