"""Each line of chainrule-jit's compiled derivative program, timed:
``python -m benchmarks.gradbench.program_lines``.

    python -m benchmarks.gradbench.program_lines gmm --size d=10 --size k=25
    python -m benchmarks.gradbench.program_lines kmeans --top 10

For an eval's derivative (``profile.derivative``, on ``profile.CASES``' input of the eval's
form, ``--size KEY=VALUE`` changing one size), jit compiles its program (two calls), then a
copy of the program's source with a clock read after each line runs ``--runs`` times: the
table gives each line's mean time (wall clock, single-threaded BLAS) and its share, the
costliest first, with the program's own text of the line. The copy runs the program's own
calls on the same arguments, so its total is the cached call's but for the clock reads
(some 0.1 µs a line). Where NumPy spends a derivative's time, call by call: what a faster
form of a call (jit/_kernels.py, chainrule/numpy/short_axes.py) would save.
"""

from __future__ import annotations

import argparse
import re
import time

import chainrule  # noqa: E402  (after profile's environment)
from chainrule.jit._readable import readable_name  # noqa: E402

from .profile import CASES, derivative  # (sets single-threaded BLAS before NumPy loads)

_ASSIGNED = re.compile(r"^(\s*)(v\d+) = ")
_HANDLE = re.compile(r"\bf\d+\b")  # (a program's name for a function it calls)


def timed_lines(jitted, args, runs: int) -> tuple[float, list[tuple[float, str]]]:
    """The program jit compiled for ``args``, run ``runs`` times with a clock read after
    each assignment: (the mean total in seconds, [(mean seconds, line)] in program order)."""
    jitted(*args)
    jitted(*args)  # (the second call compiles the program)
    program = jitted.variants_for(*args)[0]
    leaves = [leaf for leaf in jitted._split(args, {})[0] if type(leaf) not in (int, bool)]
    lines, labels = [], []
    for line in program.source.split("\n"):
        lines.append(line)
        match = _ASSIGNED.match(line)
        if match:
            labels.append(_HANDLE.sub(lambda m: readable_name(program.namespace[m.group(0)]),
                                      line.strip().split("  #")[0]))
            lines.append(f"{match.group(1)}_clock.append(_now())")
    source = "\n".join(lines).replace("    try:\n", "    try:\n        _clock.append(_now())\n", 1)
    clock: list[float] = []
    namespace = dict(program.namespace, _clock=clock, _now=time.perf_counter)
    exec(compile(source, "<timed program>", "exec"), namespace)  # noqa: S102 (jit's own source)
    name = re.match(r"\s*def (\w+)", program.source).group(1)
    run = namespace[name]
    totals = [0.0] * len(labels)
    done = 0
    for r in range(runs + 3):  # (three warm-up runs)
        clock.clear()
        run(*[leaf.copy() if hasattr(leaf, "copy") else leaf for leaf in leaves])
        if len(clock) != len(labels) + 1:
            raise RuntimeError("the program took another path than at its trace (a guard "
                               "failed, or a call raised): its lines cannot be timed here")
        if r >= 3:
            done += 1
            for i in range(len(labels)):
                totals[i] += clock[i + 1] - clock[i]
    means = [t / done for t in totals]
    return sum(means), list(zip(means, labels))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gradbench.program_lines",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("eval", choices=sorted(CASES))
    parser.add_argument("--size", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--top", type=int, default=15)
    options = parser.parse_args(argv)
    sizes = {key: int(value) for key, value in (s.split("=") for s in options.size)}
    label, objective, argnum, args = CASES[options.eval](**sizes)
    jitted = chainrule.jit(derivative(options.eval, objective, argnum))
    total, lines = timed_lines(jitted, args, options.runs)
    print(f"{label}: chainrule-jit's derivative program, {len(lines)} lines, "
          f"{total * 1e6:.1f} µs a run (mean of {options.runs})\n")
    print("| µs | share | line |\n|---:|---:|---|")
    for seconds, line in sorted(lines, key=lambda item: -item[0])[:options.top]:
        print(f"| {seconds * 1e6:.1f} | {seconds / total:.0%} | `{line}` |")


if __name__ == "__main__":
    main()
