"""Where grad should stop copying constant arrays: ``PYTHONPATH=src python
benchmarks/snapshot_threshold.py``.

The gradient of ``sum(x * c)`` (its node keeps the constant ``c``), timed with every
constant copied and with every constant held read-only for the call (reach.Window: a
search of what the function reaches instead of a copy), by the size of ``c``: the median of
the samples, the two ways interleaved, after one call each (a function's first gradient
copies). ``numpy_vspaces.SNAPSHOT_COPY_MAX`` is chosen above the crossing.
"""

from __future__ import annotations

import statistics
import time

import numpy as onp

import chainrule.numpy as np
from chainrule import grad
from chainrule.numpy import numpy_vspaces

LIMITS = {"copy": 1 << 62, "hold": 0}


def times(nbytes: int, samples: int) -> dict:
    c = onp.random.default_rng(0).standard_normal(max(nbytes // 8, 1))
    x = onp.ones(c.size)

    def copied(x):
        return np.sum(x * c)

    def held(x):
        return np.sum(x * c)

    gradients = {"copy": grad(copied), "hold": grad(held)}
    found: dict = {"copy": [], "hold": []}
    chosen = numpy_vspaces.SNAPSHOT_COPY_MAX
    try:
        for sample in range(samples + 1):
            for way, limit in LIMITS.items():
                numpy_vspaces.SNAPSHOT_COPY_MAX = limit
                start = time.perf_counter()
                gradients[way](x)
                if sample:
                    found[way].append(time.perf_counter() - start)
    finally:
        numpy_vspaces.SNAPSHOT_COPY_MAX = chosen
    return {way: statistics.median(t) for way, t in found.items()}


def main() -> None:
    print("| size of c | copied (us) | held (us) | held / copied |")
    print("|---:|---:|---:|---:|")
    for kib in (8, 64, 256, 512, 1024, 2048, 4096, 8192):
        t = times(kib * 1024, 200 if kib < 1024 else 40)
        print(f"| {kib} KiB | {t['copy'] * 1e6:.1f} | {t['hold'] * 1e6:.1f} | "
              f"{t['hold'] / t['copy']:.2f} |")


if __name__ == "__main__":
    main()
