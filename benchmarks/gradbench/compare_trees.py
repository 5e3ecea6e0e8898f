"""An eval's eager gradient and jit's first and cached calls in two source trees, in one run.

    python -m benchmarks.gradbench.compare_trees /work/main . --chars 1024 --rounds 3
    python -m benchmarks.gradbench.compare_trees /work/main . --case ode --size n=100000
    python -m benchmarks.gradbench.compare_trees /work/main . --case kmeans --size k=10 \
        --pytorch GRADBENCH

Each round times every measure once per tree, in alternating order (a noisy neighbour
slows both alike), each in its own process with single-threaded BLAS; the table gives
each tree's least CPU time (``time.process_time``) over the rounds (a call taken at least
3 times a round, and until 0.3 s of them, at most 200: short calls get more samples), and
the eager gradient's peak of traced memory (``tracemalloc``, which counts NumPy's array
data; in a call of its own, untimed) and minor page faults, and the process's resident
memory (Linux's ``/proc/self/statm``) after its eager gradients and at its peak until then
(the least over the rounds, as every measure). The input is ``profile.CASES[--case]``
(lstm: l=2, b=14, ``--chars`` characters; ode: n=10^4, s=10; gmm: d=10, k=25, n=1000;
kmeans: k=10, n=1000, d=8; lse: n=2500; det: ell=5; ``--size KEY=VALUE`` changes one; a
tree without the case cannot be compared on it). The "gradient" is the eval's
derivative (``profile.derivative``: kmeans' is its Newton direction, jvp of grad).
``--pytorch GRADBENCH`` (kmeans): GradBench's PyTorch tool's function for the same
derivative and input, timed in the same rounds in a process of its own, so the two trees'
times can be read as ratios to PyTorch's.
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
from benchmarks.gradbench.profile import CASES, derivative

name, f, argnum, args = CASES[sys.argv[1]](**json.loads(sys.argv[2]))
g = derivative(sys.argv[1], f, argnum)
g(*args)
eager, faults = [], []
while len(eager) < 3 or sum(eager) < 0.3 and len(eager) < 200:  # (short calls: more samples)
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
j = chainrule.jit(g)
t = time.process_time(); j(*args); first = time.process_time() - t
# (the second call emits and compiles the program the first one traced: not cached yet)
t = time.process_time(); j(*args); second = time.process_time() - t
cached = []
while len(cached) < 3 or sum(cached) < 0.3 and len(cached) < 200:
    t = time.process_time(); j(*args); cached.append(time.process_time() - t)
print(json.dumps({"name": name, "eager gradient": min(eager), "jit, first call": first,
                  "jit, second call": second, "jit, cached call": min(cached),
                  "eager gradient, peak MB": peak / 1e6,
                  "eager gradient, page faults": min(faults),
                  "process RSS after the gradients, MB": resident / 1e6,
                  "process peak RSS, MB": peak_rss / 1e6}))
"""

# GradBench's PyTorch function for the case's derivative (its ``wrap`` decorator's own
# function and input preparation), timed as the eager gradient is
PYTORCH_SNIPPET = r"""
import importlib, inspect, json, sys, time
import torch
from benchmarks.gradbench.profile import CASES, PYTORCH_MESSAGES

torch.set_num_threads(1)
args = CASES[sys.argv[1]](**json.loads(sys.argv[2]))[3]
module, function, raw = PYTORCH_MESSAGES[sys.argv[1]](args)
wrapped = getattr(importlib.import_module(f"gradbench.tools.pytorch.{module}"), function)
prepared = inspect.getclosurevars(wrapped.wrapped).nonlocals["pre"](raw)
wrapped.function(prepared)
times = []
while len(times) < 3 or sum(times) < 0.3 and len(times) < 200:  # (as the eager gradient's)
    t = time.process_time(); wrapped.function(prepared); times.append(time.process_time() - t)
print(json.dumps({"eager gradient": min(times)}))
"""

# measures that are not CPU seconds: shown as they are, not in ms
PYTORCH_CASES = ("kmeans", "gmm")  # (profile.PYTORCH_MESSAGES)
UNITLESS = ("eager gradient, peak MB", "eager gradient, page faults",
            "process RSS after the gradients, MB", "process peak RSS, MB")


def _run(tree: Path, case: str, sizes: dict, snippet: str = SNIPPET,
         path: tuple = ()) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(tree / "src"), str(tree), *map(str, path)]))
    done = subprocess.run([sys.executable, "-c", snippet, case, json.dumps(sizes)], cwd=tree,
                          env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--case", choices=("lstm", "ode", "gmm", "kmeans", "lse", "det"),
                        default="lstm")
    parser.add_argument("--chars", type=int, default=1024, help="lstm's sequence length")
    parser.add_argument("--size", action="append", default=[], metavar="KEY=VALUE",
                        help="a size of the case (profile.py's case functions), e.g. n=100000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pytorch", type=Path, metavar="GRADBENCH",
                        help="a GradBench checkout: time its PyTorch tool too (kmeans, gmm)")
    options = parser.parse_args(argv)
    if options.pytorch is not None and options.case not in PYTORCH_CASES:
        parser.error(f"--pytorch: GradBench's PyTorch function is known for "
                     f"{', '.join(PYTORCH_CASES)} only")
    sizes = {key: int(value) for key, value in (s.split("=") for s in options.size)}
    if options.case == "lstm":
        sizes.setdefault("chars", options.chars)
    trees = [options.before.resolve(), options.after.resolve()]
    best: list[dict] = [{}, {}]
    pytorch: float | None = None
    name = ""
    for r in range(options.rounds):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            measures = _run(trees[i], options.case, sizes)
            name = measures.pop("name")
            for measure, value in measures.items():
                best[i][measure] = min(value, best[i].get(measure, value))
        if options.pytorch is not None:  # (the after tree's case, GradBench's python/)
            t = _run(trees[1], options.case, sizes, PYTORCH_SNIPPET,
                     (options.pytorch.resolve() / "python" / "gradbench",))["eager gradient"]
            pytorch = t if pytorch is None else min(pytorch, t)
    print(f"{name}, least of {options.rounds} rounds (CPU ms but where the measure says)\n")
    print("| measure | before | after | after / before |\n|---|---|---|---|")
    for measure in best[0]:
        scale = 1 if measure in UNITLESS else 1e3
        a, b = best[0][measure] * scale, best[1][measure] * scale
        digits = 1 if measure.endswith("MB") or (measure not in UNITLESS and a < 100) else 0
        if measure not in UNITLESS and a < 10:  # (kmeans: 0.3 ms)
            digits = 3 if a < 1 else 2
        ratio = f"{b / a:.2f}" if a else "—"
        print(f"| {measure} | {a:,.{digits}f} | {b:,.{digits}f} | {ratio} |")
    if pytorch is not None:
        before, after = best[0]["eager gradient"], best[1]["eager gradient"]
        print(f"\nGradBench's PyTorch tool, the same derivative, same rounds: "
              f"{pytorch * 1e3:,.2f} ms; eager gradient / PyTorch: before "
              f"{before / pytorch:.2f}, after {after / pytorch:.2f}")


if __name__ == "__main__":
    main()
