"""The chainrule tool for GradBench: ``python -m benchmarks.gradbench.tool [--jit]``.

It speaks GradBench's protocol on stdin/stdout (an eval's messages in, responses out), so
GradBench's own intermediary can run it as a tool command, and so can this package's
driver (``python -m benchmarks.gradbench``). ``--jit`` is the ``chainrule-jit`` variant.
"""

from __future__ import annotations

import argparse

from . import evals
from .protocol import evaluator, serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gradbench.tool",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--jit", action="store_true",
                        help="compile every function with chainrule.jit (chainrule-jit)")
    args = parser.parse_args(argv)
    name = "chainrule-jit" if args.jit else "chainrule"
    serve(name, lambda module: evaluator(evals.module(module).functions(jit=args.jit)))


if __name__ == "__main__":
    main()
