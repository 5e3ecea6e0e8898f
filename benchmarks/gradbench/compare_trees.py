"""An eval's eager gradient and jit's first and cached calls in two source trees, in one run.

    python -m benchmarks.gradbench.compare_trees /work/main . --chars 1024 --rounds 3
    python -m benchmarks.gradbench.compare_trees /work/main . --case ode --size n=100000

Each round times every measure once per tree, in alternating order (a noisy neighbour
slows both alike), each in its own process with single-threaded BLAS; the table gives
each tree's least CPU time (``time.process_time``) over the rounds, and the eager
gradient's peak of traced memory (``tracemalloc``, which counts NumPy's array data; in a
call of its own, untimed) and minor page faults, and the process's resident memory (Linux's
``/proc/self/statm``) after its four eager gradients and at its peak until then (the
least over the rounds, as every measure). The input is ``profile.CASES[--case]``
(lstm: l=2, b=14, ``--chars`` characters; ode: n=10^4, s=10; gmm: d=10, k=25, n=1000;
lse: n=2500; det: ell=5, both a few µs to tens of µs, where one call's CPU time is coarse:
``benchmarks/gradbench/profile.py`` takes the least of many; ``--size KEY=VALUE`` changes
one; a tree without the case cannot be compared on it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SNIPPET = r"""
import json, resource, sys, time, tracemalloc
import chainrule
from benchmarks.gradbench.profile import CASES

name, f, argnum, args = CASES[sys.argv[1]](**json.loads(sys.argv[2]))
g = chainrule.grad(f, argnum=argnum)
g(*args)
eager, faults = [], []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = time.process_time(); g(*args); eager.append(time.process_time() - t)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
# the process's resident memory after the four gradients (what it keeps) and at its peak
with open("/proc/self/statm") as statm:
    resident = int(statm.read().split()[1]) * resource.getpagesize()
peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # (KiB on Linux)
tracemalloc.start()
g(*args)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
j = chainrule.jit(chainrule.grad(f, argnum=argnum))
t = time.process_time(); j(*args); first = time.process_time() - t
# (the second call emits and compiles the program the first one traced: not cached yet)
t = time.process_time(); j(*args); second = time.process_time() - t
cached = []
for _ in range(3):
    t = time.process_time(); j(*args); cached.append(time.process_time() - t)
print(json.dumps({"name": name, "eager gradient": min(eager), "jit, first call": first,
                  "jit, second call": second, "jit, cached call": min(cached),
                  "eager gradient, peak MB": peak / 1e6,
                  "eager gradient, page faults": min(faults),
                  "process RSS after the gradients, MB": resident / 1e6,
                  "process peak RSS, MB": peak_rss / 1e6}))
"""

# measures that are not CPU seconds: shown as they are, not in ms
UNITLESS = ("eager gradient, peak MB", "eager gradient, page faults",
            "process RSS after the gradients, MB", "process peak RSS, MB")


def _run(tree: Path, case: str, sizes: dict) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(tree / "src"), str(tree)]))
    done = subprocess.run([sys.executable, "-c", SNIPPET, case, json.dumps(sizes)], cwd=tree,
                          env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--case", choices=("lstm", "ode", "gmm", "lse", "det"), default="lstm")
    parser.add_argument("--chars", type=int, default=1024, help="lstm's sequence length")
    parser.add_argument("--size", action="append", default=[], metavar="KEY=VALUE",
                        help="a size of the case (profile.py's case functions), e.g. n=100000")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args(argv)
    sizes = {key: int(value) for key, value in (s.split("=") for s in options.size)}
    if options.case == "lstm":
        sizes.setdefault("chars", options.chars)
    trees = [options.before.resolve(), options.after.resolve()]
    best: list[dict] = [{}, {}]
    name = ""
    for r in range(options.rounds):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            measures = _run(trees[i], options.case, sizes)
            name = measures.pop("name")
            for measure, value in measures.items():
                best[i][measure] = min(value, best[i].get(measure, value))
    print(f"{name}, least of {options.rounds} rounds (CPU ms but where the measure says)\n")
    print("| measure | before | after | after / before |\n|---|---|---|---|")
    for measure in best[0]:
        scale = 1 if measure in UNITLESS else 1e3
        a, b = best[0][measure] * scale, best[1][measure] * scale
        digits = 1 if measure.endswith("MB") or (measure not in UNITLESS and a < 100) else 0
        ratio = f"{b / a:.2f}" if a else "—"
        print(f"| {measure} | {a:,.{digits}f} | {b:,.{digits}f} | {ratio} |")


if __name__ == "__main__":
    main()
