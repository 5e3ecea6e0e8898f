"""jit's first calls on a long loop: ``python -m benchmarks.gradbench.jit_calls``.

GradBench's default scoring times a call once when it takes over a second, so jit's first
calls of a signature are what it scores on lstm (issue 37). For lstm (l=2, b=14, at each
``--chars``) this prints the CPU time of one eager gradient and then of calls 1-4 of one
``jit(grad)``: call 1 traces, call 2 emits and compiles the program and runs it, calls 3
and 4 run it.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import chainrule  # noqa: E402

from .profile import lstm_case  # noqa: E402


def cpu_ms(f, args) -> float:
    start = time.process_time()
    f(*args)
    return (time.process_time() - start) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gradbench.jit_calls",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, nargs="+", default=[1024, 4096])
    options = parser.parse_args(argv)
    print("| case | eager gradient | jit call 1 | call 2 | call 3 | call 4 |")
    print("|---|---|---|---|---|---|")
    for chars in options.chars:
        label, objective, argnum, args = lstm_case(chars=chars)
        gradient = chainrule.grad(objective, argnum=argnum)
        eager = cpu_ms(gradient, args)
        jitted = chainrule.jit(gradient)
        calls = [cpu_ms(jitted, args) for _ in range(4)]
        print(f"| {label} | {eager:.0f} ms | " + " | ".join(f"{t:.0f} ms" for t in calls) + " |")


if __name__ == "__main__":
    main()
