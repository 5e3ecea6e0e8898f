"""python -m benchmarks.gradbench --gradbench DIR --eval gmm --tools chainrule,chainrule-jit,...

Runs GradBench evals against several tools back to back (see driver.py) and prints one
markdown report per eval: each tool's validation, derivative / objective ratios, and times
relative to the baseline tool, at steady state and under GradBench's default scoring.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .driver import TOOLS, load_run, run_evals, tables, targets_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gradbench",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--gradbench", type=Path,
                        help="a GradBench checkout (see benchmarks/gradbench/README.md)")
    parser.add_argument("--eval", required=True, help="eval names, comma-separated")
    parser.add_argument("--tools", default="chainrule,chainrule-jit",
                        help=f"comma-separated, from {', '.join(TOOLS)}")
    parser.add_argument("--eval-args", default="",
                        help="arguments for the eval, e.g. '-d 2 10 -k 5 10' for gmm")
    parser.add_argument("--min-runs", type=int, default=3,
                        help="runs per message at least (the steady state is the fastest)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds a tool may take to answer one message")
    parser.add_argument("--baseline", help="the tool others are compared with (default: the "
                        "first of --tools)")
    parser.add_argument("--out", type=Path, help="a folder for the reports and message logs")
    parser.add_argument("--from-logs", type=Path, metavar="DIR",
                        help="tabulate an earlier run's logs (its --out folder), running nothing")
    parser.add_argument("--targets", action="store_true",
                        help="with --from-logs: one table of issue 37's target ratios, the "
                        "worst per eval, instead of the per-eval reports")
    args = parser.parse_args(argv)
    tools = args.tools.split(",")
    if args.from_logs:
        runs = {name: [load_run(tool, args.from_logs / f"{name}-{tool}.jsonl")
                       for tool in tools if (args.from_logs / f"{name}-{tool}.jsonl").exists()]
                for name in args.eval.split(",")}
        print(targets_table(runs) if args.targets else "\n".join(
            tables(name, tool_runs, args.baseline or tools[0])
            for name, tool_runs in runs.items()))
        return 0
    if args.gradbench is None:
        parser.error("--gradbench DIR is needed to run evals (or --from-logs DIR)")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    report = run_evals(args.gradbench.resolve(), args.eval.split(","), tools,
                       args.eval_args, args.min_runs, args.timeout, args.out, args.baseline)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
