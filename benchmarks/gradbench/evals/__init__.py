"""chainrule's implementation of every GradBench eval, one module per eval.

Each module writes the eval's objective as a NumPy programmer would (``import
chainrule.numpy as np``), takes its derivative with chainrule's transforms, and exports
``functions(jit: bool) -> dict[str, Function]``: the functions the eval calls by name, eager
or compiled with ``chainrule.jit``. Each module also has ``small_input(rng)``, an input of the
eval's form small enough for the unit test (tests/test_gradbench_tool.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import chainrule

EVALS = ("hello", "gmm", "ba", "ht", "lstm", "ode", "det", "kmeans", "llsq", "lse",
         "particle", "saddle")


def module(name: str) -> ModuleType:
    """The implementation of eval ``name``; a clear error for an eval chainrule lacks."""
    if name not in EVALS:
        raise LookupError(f"chainrule has no implementation of the GradBench eval {name!r} "
                          f"(it has {', '.join(EVALS)})")
    return importlib.import_module(f"{__name__}.{name}")


def compiled(fun: Callable[..., Any], jit: bool, **options: Any) -> Callable[..., Any]:
    """``chainrule.jit(fun, **options)`` for the jit variant, ``fun`` itself for eager."""
    return chainrule.jit(fun, **options) if jit else fun


def to_list(value: Any) -> Any:
    """An array's JSON form (nested lists of floats)."""
    return value.tolist()
