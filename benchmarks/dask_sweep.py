"""The NumPy spec tables on Dask arrays: how many gradients come back lazy and right.

Each spec case whose first argument is a non-empty array is run in reverse mode with its
array arguments as Dask arrays, and its gradient compared with the NumPy one. Run by hand
(needs dask): ``PYTHONPATH=src python benchmarks/dask_sweep.py``.
"""

from __future__ import annotations

import collections
import importlib
import os
import sys
import warnings

import dask.array as da
import numpy as onp

from chainrule._core.reverse import make_vjp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

SPECS = ["spec_core", "spec_elementwise", "spec_reductions", "spec_shape", "spec_contraction",
         "spec_linalg", "spec_fft"]


def as_dask(a):
    if isinstance(a, onp.ndarray) and a.ndim >= 1 and a.size > 0:
        return da.from_array(a, chunks=max(1, a.shape[0] // 2))
    return a


def gradient(case, args, i):
    def f(x):
        return case.fun(*args[:i], x, *args[i + 1:], **case.kwargs)

    vjp, ans = make_vjp(f, args[i])
    return vjp(onp.ones_like(ans))


def outcome(case) -> str:
    i = case.argnums[0]
    dargs = tuple(as_dask(a) for a in case.args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = gradient(case, dargs, i)
        want = gradient(case, case.args, i)
    lazy = isinstance(g, da.Array)
    right = onp.allclose(onp.asarray(g.compute() if lazy else g), want)
    return "lazy and right" if lazy and right else "right but computed" if right else "wrong"


def main() -> None:
    counts: collections.Counter = collections.Counter()
    examples: dict = collections.defaultdict(set)
    for name in SPECS:
        for case in importlib.import_module("specs." + name).CASES:
            first = case.args[0] if case.args else None
            if not case.argnums or not (isinstance(first, onp.ndarray) and first.size):
                continue
            try:
                result = outcome(case)
            except Exception as error:  # Dask's own gaps: we count and show them
                result = f"error ({type(error).__name__})"
            counts[result] += 1
            examples[result].add(case.name)
    for result, n in counts.most_common():
        names = ", ".join(sorted(examples[result])[:25])
        print(f"{result:24} {n:5}   e.g. {names}")


if __name__ == "__main__":
    main()
