"""chainrule-jit's derivative and objective on gmm, lse and det against JAX jit, in one run.

    python -m benchmarks.gradbench.jit_small /work/main . --rounds 3

Each round times every case once per tree (alternating order) and once with JAX, each in
its own process with single-threaded BLAS; a case's time is the least wall time of repeated
cached calls (JAX's with ``block_until_ready`` inside the timed region), and the table gives
the least over the rounds. JAX's objectives are GradBench's (``gradbench.tools.jax``, from a
checkout's python/gradbench on ``--gradbench``), where it has the eval (gmm, lse).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CASES = [("gmm", dict(d=2, k=5, n=1000)), ("gmm", dict(d=2, k=25, n=1000)),
         ("gmm", dict(d=10, k=25, n=1000)), ("lse", dict(n=2500)), ("lse", dict(n=40000)),
         ("lse", dict(n=640000)), ("det", dict(ell=5)), ("det", dict(ell=7))]

SNIPPET = r"""
import json, sys, time
import numpy

def inputs(eval, sizes):
    rng = numpy.random.default_rng(0)
    if eval == "gmm":
        d, k, n = sizes["d"], sizes["k"], sizes["n"]
        return {"d": d, "k": k, "n": n, "m": 0, "gamma": 1.0,
                "x": rng.normal(size=(n, d)).tolist(), "alpha": rng.normal(size=k).tolist(),
                "mu": rng.uniform(size=(k, d)).tolist(), "q": rng.normal(size=(k, d)).tolist(),
                "l": rng.normal(size=(k, d * (d - 1) // 2)).tolist()}
    if eval == "lse":
        return {"x": rng.random(sizes["n"]).tolist()}
    ell = sizes["ell"]
    return {"A": rng.random(ell * ell).tolist(), "ell": ell}

def best(call, budget=0.4):
    call()
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < budget:
        t = time.perf_counter(); call(); times.append(time.perf_counter() - t)
    return min(times)

who, cases = sys.argv[1], json.loads(sys.argv[2])
names = {"gmm": ("objective", "jacobian"), "lse": ("primal", "gradient"),
         "det": ("primal", "gradient")}
out = []
for eval, sizes in cases:
    raw = inputs(eval, sizes)
    if who == "jax":
        if eval == "det":
            out.append(None); continue
        import importlib, inspect, jax
        module = importlib.import_module(f"gradbench.tools.jax.{eval}")
        row = []
        for name in names[eval]:
            wrapped = getattr(module, name)
            prepared = inspect.getclosurevars(wrapped.wrapped).nonlocals["pre"](raw)
            row.append(best(lambda: jax.block_until_ready(wrapped.function(prepared))))
        out.append(row)
    else:
        from benchmarks.gradbench.evals import module
        functions = module(eval).functions(jit=True)
        row = []
        for name in names[eval]:
            f = functions[name]
            prepared = f.prepare(raw)
            f.compute(*prepared)  # traces; the next call compiles
            row.append(best(lambda: f.compute(*prepared)))
        out.append(row)
print(json.dumps(out))
"""


def _run(who: str, gradbench: Path, cases: list) -> list:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")
    if who == "jax":
        env["PYTHONPATH"] = str(gradbench / "python" / "gradbench")
        cwd = gradbench
    else:
        tree = Path(who)
        env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), str(tree)])
        cwd = tree
    done = subprocess.run([sys.executable, "-c", SNIPPET, who, json.dumps(cases)], cwd=cwd,
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{who}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gradbench", type=Path, default=Path("/work/gradbench"))
    parser.add_argument("--only", default="", help="evals to run, comma-separated")
    options = parser.parse_args(argv)
    cases = [c for c in CASES if not options.only or c[0] in options.only.split(",")]
    who = [str(options.before.resolve()), str(options.after.resolve()), "jax"]
    best: list[list] = [[None] * len(cases) for _ in who]
    for r in range(options.rounds):
        for i in ((0, 1, 2) if r % 2 == 0 else (2, 1, 0)):
            for c, row in enumerate(_run(who[i], options.gradbench, cases)):
                if row is not None:
                    best[i][c] = row if best[i][c] is None else [
                        min(a, b) for a, b in zip(best[i][c], row)]
    print(f"least of {options.rounds} rounds, µs; d/o: derivative / objective\n")
    print("| case | before: derivative (d/o) | after: derivative (d/o) | after / before | "
          "JAX jit: derivative (d/o) | after / JAX |\n|---|---|---|---|---|---|")

    def cell(row):
        return "—" if row is None else f"{row[1] * 1e6:,.1f} ({row[1] / row[0]:.2f})"

    for c, (eval, sizes) in enumerate(cases):
        before, after, jax = best[0][c], best[1][c], best[2][c]
        label = eval + " " + " ".join(f"{k}={v}" for k, v in sizes.items())
        to_jax = "—" if jax is None else f"{after[1] / jax[1]:.2f}"
        print(f"| {label} | {cell(before)} | {cell(after)} | {after[1] / before[1]:.2f} | "
              f"{cell(jax)} | {to_jax} |")


if __name__ == "__main__":
    main()
