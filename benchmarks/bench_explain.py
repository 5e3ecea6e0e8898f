"""explain at scale: the report of the RNN benchmark's gradient at 100,000 operations.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_explain            # 20,000 steps
    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_explain --steps 2000

The loss is the benchmark's ``rnn_loss`` (a vanilla tanh RNN, squared error of a readout of
the last state), with small arrays (batch 4, inputs 8, hidden 16) and many steps: five
operations a step, so 20,000 steps are 100,006 operations. Rows (CPU seconds, from
``process_time``: waiting for a core on a shared machine does not count; best of
``--repeats``): ``chainrule.grad`` of the same loss (the reference: one recording and one
backward pass), ``explain(...)`` (the report built: the recording, names and source lines;
derivatives are computed when read), then rendering its first page as text, as HTML, the
DOT graph (the loop folded into one iteration), and the same report with ``check=True``
rendered as text (the finite-difference check of every operation). The gradient in the
report is checked against ``grad``'s first.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as onp

import chainrule as cr
import chainrule.numpy as np
from benchmarks import _problems as P
from benchmarks._problems import rnn_loss

BATCH, N_IN, HIDDEN = 4, 8, 16


def _data(steps: int):
    """The RNN workload's inputs (``_problems.make_data``) at ``steps`` steps, small arrays."""
    scale = f"explain-{steps}"
    P.SIZES.setdefault(scale, {"rnn": (steps, BATCH, N_IN, HIDDEN)})
    data = P.make_data("rnn", scale)
    return data["params"], data["xs"], data["target"]


def _best(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        out = None
        gc.collect()
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return best, out


def run(steps: int = 20_000, repeats: int = 3, check: bool = True) -> list[tuple[str, float]]:
    params, xs, target = _data(steps)

    def loss(params):
        return rnn_loss(params, xs, target, np)

    rows = []
    seconds, want = _best(lambda: cr.grad(loss)(params), repeats)
    rows.append(("chainrule.grad (reference)", seconds))
    seconds, report = _best(lambda: cr.explain(loss, params), repeats)
    rows.append((f"explain: build ({len(report.steps):,} operations)", seconds))
    for got, ref in zip(report.gradient[0], want):
        onp.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-14)
    report = cr.explain(loss, params)
    start = time.process_time()
    report.text()
    rows.append(("explain: first text page (runs the backward pass)", time.process_time() - start))
    for name, render in (("HTML page", report.html), ("DOT graph", report.dot)):
        seconds, _ = _best(render, repeats)
        rows.append((f"explain: {name}", seconds))
    if check:
        start = time.process_time()
        checked = cr.explain(loss, params, check=True)
        checked.text()
        rows.append(("explain(check=True): build and text", time.process_time() - start))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-check", action="store_true", help="skip the check=True row")
    args = parser.parse_args(argv)
    rows = run(args.steps, args.repeats, not args.no_check)
    reference = rows[0][1]
    print(f"explain of the RNN benchmark's loss, {args.steps:,} steps, batch {BATCH}, "
          f"inputs {N_IN}, hidden {HIDDEN}")  # fmt: skip
    print(f"{'(CPU seconds)':<52}{'s':>8}{'/ grad':>9}")
    for name, seconds in rows:
        print(f"{name:<52}{seconds:>8.2f}{seconds / reference:>9.2f}")


if __name__ == "__main__":
    main()
