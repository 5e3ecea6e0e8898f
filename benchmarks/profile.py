"""Where chainrule's time goes on one workload: ``python -m benchmarks.profile NAME``.

Prints chainrule's CPU time next to the hand-written gradient's, the split into
forward (recording) and backward for gradient workloads, the number of Python
function calls per recorded primitive, and the top functions by own time
(cProfile; NumPy's C functions count in their caller's own time). Single-threaded
BLAS is set before NumPy loads, as in the runner.
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import cProfile  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402

from . import _frameworks as F  # noqa: E402
from . import _problems as P  # noqa: E402


def best_cpu_ms(fn, repeats: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times) * 1e3


def count_nodes(fn) -> int:
    """Primitives recorded by one call of ``fn`` (VJPNodes made, any trace)."""
    from chainrule._core import reverse

    made = 0
    init = reverse.VJPNode.__init__

    def counting_init(self, *args):
        nonlocal made
        made += 1
        init(self, *args)

    reverse.VJPNode.__init__ = counting_init
    try:
        fn()
    finally:
        reverse.VJPNode.__init__ = init
    return made


def main(argv: list[str]) -> None:
    name = argv[0] if argv else "scalar_chain"
    scale = argv[1] if len(argv) > 1 else "full"
    data = P.make_data(name, scale)
    run = F.builders("chainrule")[name](data)
    hand = F.builders("numpy")[name](data)
    nodes = count_nodes(run)
    print(f"{name} ({scale}): chainrule {best_cpu_ms(run):.2f} ms, hand-written "
          f"{best_cpu_ms(hand):.2f} ms (min CPU time of 7); {nodes} primitives recorded")
    profile = cProfile.Profile()
    profile.runcall(run)
    stats = pstats.Stats(profile)
    calls = stats.total_calls  # type: ignore[attr-defined]
    print(f"{calls} Python-level calls, {calls / max(nodes, 1):.1f} per recorded primitive")
    stats.sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main(sys.argv[1:])
