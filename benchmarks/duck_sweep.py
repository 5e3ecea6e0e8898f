"""The spec tables on Dask or CuPy arrays: how many derivatives stay in the library and are right.

Every spec case whose first argument is a non-empty array is differentiated (reverse mode,
and forward mode with ``--mode fwd``) with its array arguments turned into the library's
arrays, and the derivative is compared with the NumPy one (``--mode taylor``: the third-order
Taylor series along ones, ``jet``). Run by hand:

    PYTHONPATH=src python benchmarks/duck_sweep.py dask [--mode fwd|taylor]
    PYTHONPATH=src python benchmarks/duck_sweep.py cupy          # on a machine with a GPU
    PYTHONPATH=src python benchmarks/duck_sweep.py strict        # CuPy's stand-in, no GPU

"Native" means the derivative is an array of the library (a lazy Dask array, a
``cupy.ndarray`` on the device); "right but converted" means the numbers are right but came
back as NumPy arrays, so something left the library (Dask computed, or data crossed to the
host). The counts go in docs/arrays.md.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import os
import sys
import warnings

import numpy as onp

from chainrule._core.forward import make_jvp
from chainrule._core.reverse import make_vjp
from chainrule._transforms.taylor import jet

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

SPECS = ["spec_core", "spec_elementwise", "spec_reductions", "spec_shape", "spec_contraction",
         "spec_linalg", "spec_fft"]


def library(name: str):
    """(convert a NumPy argument, the library's array type, bring an array back to NumPy)."""
    if name == "dask":
        import dask.array as da

        def convert(a):
            if isinstance(a, onp.ndarray) and a.ndim >= 1 and a.size > 0:
                return da.from_array(a, chunks=max(1, a.shape[0] // 2))
            return a

        return convert, da.Array, lambda a: a.compute()
    if name == "cupy":
        import cupy as cp

        # CuPy refuses NumPy arrays in its functions, so every array argument moves.
        def convert(a):
            if isinstance(a, (list, tuple)):
                return type(a)(convert(e) for e in a)
            return cp.asarray(a) if isinstance(a, onp.ndarray) else a

        return convert, cp.ndarray, cp.asnumpy
    if name == "strict":  # the CuPy stand-in of the tests: refuses NumPy arrays and host copies
        from strict_array import Strict, to_strict

        return to_strict, Strict, lambda a: a.data
    raise SystemExit(f"unknown library {name!r}: choose dask, cupy or strict")


def ones(x):
    """Ones shaped like ``x`` (a list of arrays too): ones_like dispatches, so they are the
    library's own."""
    if isinstance(x, (list, tuple)):
        return type(x)(ones(e) for e in x)
    if isinstance(x, (int, float, complex, onp.generic)):
        return type(x)(1)  # a Python number's tangent stays a number, as a user passes it
    return onp.ones_like(x)


def applies(case, mode: str) -> bool:
    """Whether the spec ``case`` is differentiated in ``mode`` (Taylor: where forward is)."""
    return ("fwd" if mode == "taylor" else mode) in case.modes


def derivative(case, args, i, mode: str):
    def f(x):
        return case.fun(*args[:i], x, *args[i + 1:], **case.kwargs)

    if mode == "rev":
        vjp, ans = make_vjp(f, args[i])
        return vjp(ones(ans))
    if mode == "taylor":
        one = ones(args[i])
        zero = one * 0 if not isinstance(one, (list, tuple)) else type(one)(e * 0 for e in one)
        terms = jet(f, (args[i],), ([one, zero, zero],))[1]
        return terms if not isinstance(terms[0], list) else [t for leaf in terms for t in leaf]
    return make_jvp(f, args[i])(ones(args[i]))[1]


def close(got: onp.ndarray, want, scale: float) -> bool:
    """NumPy's allclose, but for single precision within its rounding at ``scale``, the
    largest magnitude among the answer's pieces: a float32 det's higher Taylor coefficients
    cancel to 0 on one library and 1e-5 on another (LAPACK and cuSOLVER round differently),
    beside a first coefficient of 30."""
    want = onp.asarray(want)
    if onp.result_type(want).char not in "fF":
        return onp.allclose(got, want, equal_nan=True)
    return onp.allclose(got, want, rtol=1e-4, atol=1e-5 * scale, equal_nan=True)


def _scale(pieces: list) -> float:
    finite = [onp.abs(p[onp.isfinite(p)]) for p in map(onp.asarray, pieces)]
    return max([1.0] + [float(f.max()) for f in finite if f.size])


def outcome(case, lib, mode: str) -> str:
    convert, array_type, to_numpy = lib
    i = case.argnums[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = derivative(case, tuple(convert(a) for a in case.args), i, mode)
        want = derivative(case, case.args, i, mode)
    if isinstance(got, (list, tuple)):  # split, meshgrid...: every piece counts
        native = all(isinstance(e, array_type) for e in got)
        got = [to_numpy(e) if isinstance(e, array_type) else e for e in got]
        scale = _scale(want)
        right = all(close(onp.asarray(a), b, scale) for a, b in zip(got, want))
    else:
        native = isinstance(got, array_type)
        got = to_numpy(got) if native else got
        right = close(onp.asarray(got), want, _scale([want]))
    return "native and right" if native and right else "right but converted" if right else "wrong"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", choices=["dask", "cupy", "strict"])
    parser.add_argument("--errors", action="store_true", help="print each error's message")
    parser.add_argument("--mode", choices=["rev", "fwd", "taylor"], default="rev")
    options = parser.parse_args()
    lib = library(options.library)
    counts: collections.Counter = collections.Counter()
    examples: dict = collections.defaultdict(set)
    for name in SPECS:
        for case in importlib.import_module("chainrule._specs." + name).CASES:
            first = case.args[0] if case.args else None
            if not case.argnums or not (isinstance(first, onp.ndarray) and first.size):
                continue
            if not applies(case, options.mode):
                continue
            try:
                result = outcome(case, lib, options.mode)
            except Exception as error:  # the library's own gaps: counted and shown
                result = f"error ({type(error).__name__})"
                if options.errors:
                    print(f"{case.id}: {type(error).__name__}: {error}"[:300])
            if result == "wrong" and options.errors:
                print(f"{case.id}: wrong")
            counts[result] += 1
            examples[result].add(case.name)
    print(f"{options.library}, {options.mode} mode: {sum(counts.values())} spec calls")
    for result, n in counts.most_common():
        names = ", ".join(sorted(examples[result])[:40])
        print(f"{result:24} {n:5}   e.g. {names}")


if __name__ == "__main__":
    main()
