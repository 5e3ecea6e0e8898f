"""Benchmark chainrule against autograd, PyTorch, JAX and hand-written NumPy.

    python -m benchmarks                      # full run, table on stdout
    python -m benchmarks --quick              # smoke run (seconds)
    python -m benchmarks --only mlp,rnn       # some workloads
    python -m benchmarks --json out.json      # raw results
    python -m benchmarks --report docs/benchmarks   # docs/benchmarks.md + PNG plots

Each framework runs in its own process with single-threaded BLAS; a framework
that is not installed gets a column that says so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from . import _report
from ._frameworks import FRAMEWORKS
from ._problems import WORKLOADS

REPO = Path(__file__).resolve().parent.parent

SINGLE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "JAX_PLATFORMS": "cpu",
}

_MODULE = {"jax_jit": "jax", "chainrule_jit": "chainrule"}


def installed(framework: str) -> bool:
    if framework == "chainrule":
        return True  # always from this checkout's src/
    return importlib.util.find_spec(_MODULE.get(framework, framework)) is not None


def run_framework(framework: str, scale: str, names: list[str], timeout: float) -> dict:
    env = dict(os.environ, **SINGLE_THREAD_ENV)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "src"), str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    cmd = [sys.executable, "-m", "benchmarks._worker", framework, scale, ",".join(names)]
    try:
        proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return _failed(framework, names, f"timed out after {timeout:.0f} s")
    if proc.returncode != 0:
        return _failed(framework, names, proc.stderr.strip().splitlines()[-1:] or ["crashed"])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _median_round(reports: list[dict]) -> dict:
    """One report per workload: the round whose median time is the median of the rounds."""
    merged = dict(reports[0], results={})
    for name in reports[0]["results"]:
        results = [rep["results"][name] for rep in reports]
        timed = [res for res in results if "median_s" in res]
        if len(timed) == len(results):
            results = sorted(timed, key=lambda res: res["median_s"])
        merged["results"][name] = dict(results[len(results) // 2],
                                       rounds_median_s=[res.get("median_s") for res in results])
    return merged


def _failed(framework, names, why) -> dict:
    why = why if isinstance(why, str) else why[0]
    return {"framework": framework, "version": "?",
            "results": {name: {"status": "error", "error": why} for name in names}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="few repeats, smaller chains")
    parser.add_argument("--only", help=f"comma-separated workloads ({', '.join(WORKLOADS)})")
    parser.add_argument("--frameworks", help=f"comma-separated ({', '.join(FRAMEWORKS)})")
    parser.add_argument("--json", help="write the raw results to this file")
    parser.add_argument("--report", help="write DIR.md and DIR/*.png (e.g. docs/benchmarks)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="run every framework this many times, interleaved, and keep "
                             "the median round (default: 3, or 1 with --quick)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per framework")
    args = parser.parse_args(argv)

    names = args.only.split(",") if args.only else list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(WORKLOADS)}")
    frameworks = args.frameworks.split(",") if args.frameworks else list(FRAMEWORKS)
    scale = "quick" if args.quick else "full"

    rounds = args.rounds or (1 if args.quick else 3)
    runs = {"scale": scale, "rounds": rounds, "machine": _report.machine_info(),
            "frameworks": {}}
    per_round: dict[str, list[dict]] = {fw: [] for fw in frameworks if installed(fw)}
    # Rounds interleave the frameworks, so a burst of load on a shared machine
    # hits all of them rather than one.
    for r in range(rounds):
        for fw in per_round:
            print(f"round {r + 1}/{rounds}: {fw} ...", file=sys.stderr, flush=True)
            per_round[fw].append(run_framework(fw, scale, names, args.timeout))
    for fw in frameworks:
        if fw in per_round:
            runs["frameworks"][fw] = _median_round(per_round[fw])
        else:
            runs["frameworks"][fw] = {"framework": fw, "version": "not installed", "results": {
                name: {"status": "not installed"} for name in names}}

    print(_report.markdown(runs))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(runs, indent=1))
    if args.report:
        _report.write(runs, Path(args.report))
    mismatch = False
    for fw, report in runs["frameworks"].items():
        for name, result in report["results"].items():
            if result.get("status") in ("MISMATCH", "error"):
                mismatch |= result["status"] == "MISMATCH"
                print(f"WARNING: {fw} / {name}: {result}", file=sys.stderr)
    return 1 if mismatch else 0


if __name__ == "__main__":
    sys.exit(main())
