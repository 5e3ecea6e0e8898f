"""Timing and memory helpers shared by the hand-run benchmark scripts."""

from __future__ import annotations

import gc
import time
import tracemalloc


def best_of(fn, repeats: int = 5, clock=time.process_time) -> float:
    """The least time of ``repeats`` calls after a warm one, by ``clock``: CPU time of this
    process (the machine is shared), or the wall clock for JAX, whose worker threads spin
    on after a call and would charge the next sample."""
    fn()  # warm (jit compilation, caches)
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def peak_bytes(fn) -> int:
    """Peak bytes NumPy allocates during ``fn()`` (tracemalloc; garbage collected first)."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
