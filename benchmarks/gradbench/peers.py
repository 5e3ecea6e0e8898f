"""Peer tools run through this package's protocol loop, from a GradBench checkout.

    python -m benchmarks.gradbench.peers manual   # cwd: the checkout; GradBench's python/
    python -m benchmarks.gradbench.peers jax      # package on PYTHONPATH

``manual``: GradBench's hand-differentiated C++ programs (tools/manual/bin/EVAL), run as
GradBench runs them (``gradbench.cpp.evaluate``: the input in a file, the program's own
timings). GradBench's own adapter rebuilds the program on every ``define``; this one builds
it only where it is missing.

``jax``: GradBench's JAX functions (``gradbench.tools.jax``), timed here with
``jax.block_until_ready`` inside the timed region. GradBench's JAX tool times the call
alone, and a JAX call returns before its asynchronous computation finishes, so its timings
can leave out the work. The functions, their input preparation and output conversion are
GradBench's, read from its ``wrap`` decorators.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import subprocess
from pathlib import Path

from .protocol import Evaluator, Function, evaluator, serve


def manual_program(module: str) -> Path:
    """tools/manual/bin/MODULE, built with GradBench's Makefile if it is missing."""
    program = Path("tools/manual/bin") / module
    if not program.exists():
        build = subprocess.run(["make", "-C", "tools/manual", f"bin/{module}"],
                               capture_output=True, text=True)
        if build.returncode != 0:
            raise RuntimeError(f"could not build {program} (make -C tools/manual "
                               f"bin/{module}):\n{build.stdout}{build.stderr}")
    return program


def manual(module: str) -> Evaluator:
    from gradbench import cpp

    manual_program(module)
    return lambda function, raw_input: cpp.evaluate(
        tool="manual", module=module, function=function, input=raw_input)


def jax(module: str) -> Evaluator:
    import jax as jax_library

    functions = {}
    for name, wrapped in vars(importlib.import_module(f"gradbench.tools.jax.{module}")).items():
        if not (callable(getattr(wrapped, "wrapped", None)) and hasattr(wrapped, "function")):
            continue  # not one of the module's gradbench.wrap functions
        closure = inspect.getclosurevars(wrapped.wrapped).nonlocals

        def compute(prepared, run=wrapped.function):
            return jax_library.block_until_ready(run(prepared))

        functions[name] = Function(lambda raw, pre=closure["pre"]: (pre(raw),), compute,
                                   closure["post"])
    return evaluator(functions)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gradbench.peers",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("tool", choices=("manual", "jax"))
    args = parser.parse_args(argv)
    serve(args.tool, {"manual": manual, "jax": jax}[args.tool])


if __name__ == "__main__":
    main()
