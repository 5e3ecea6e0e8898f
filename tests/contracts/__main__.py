"""``python -m tests.contracts [--programs N] [--seed S] [--only jit,vmap] [--start I]``

Runs every contract (or the named ones) over N generated cases each and prints, per
contract, the count and the cases that differed (their programs and differences). Exits
with 1 when any case differed.
"""

from __future__ import annotations

import argparse
import sys

from . import contracts
from ._runner import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.contracts", description=__doc__)
    parser.add_argument("--programs", type=int, default=1000, help="cases per contract")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="index of the first case")
    parser.add_argument("--only", default="", help="comma-separated contract names")
    parser.add_argument("--show", type=int, default=5, help="failures printed per contract")
    parser.add_argument("--max-failures", type=int, default=None)
    args = parser.parse_args(argv)
    available = contracts()
    names = [n for n in args.only.split(",") if n] or list(available)
    unknown = [n for n in names if n not in available]
    if unknown:
        parser.error(f"no contract named {unknown}; there are {sorted(available)}")
    failed = False
    for name in names:
        report = run(available[name], args.programs, args.seed, args.start, args.max_failures)
        for failure in report.failures[: args.show]:
            print(failure, end="\n\n")
        print(report.summary(), flush=True)
        failed = failed or bool(report.failures)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
