"""The differential harness: every transform against its reference semantics.

A transform is defined by what it must equal, on every call (DESIGN.md, "Principles"):

  jit      ``jit(f)(*args)`` is ``f(*args)`` bit for bit: values, pytree and dict order,
           fresh outputs, exceptions, numpy.random draws
  vmap     ``vmap(f)(xs)`` is ``stack([f(x) for x in xs])``, or a clear error
  sparse   ``jacobian(f, sparse=True)(x)`` is the dense ``jacobian(f)(x)`` at every x
  solvers  the derivative of a solver's answer is the central difference of re-solving
  modes    reverse mode, forward mode and finite differences agree; a transform's primal
           value is the untraced value

Each contract is a module of this package with ``NAME``, ``generate(rng)`` (one random
case, printable) and ``check(case)`` (its differences, in words). The programs come from
``_programs.generate``, which writes Python + NumPy source full of hazards (mutation,
aliasing, signed zeros, nan, branches, exceptions, random draws, dict order).

``python -m tests.contracts --programs 100000`` runs the long version;
``tests/contracts/test_contracts.py`` runs a fixed-seed slice of each in CI.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["contracts"]


def contracts() -> dict[str, ModuleType]:
    """Every contract module of this package, by name (modules with a ``NAME``)."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith(("_", "test_")):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "check"):
            found[module.NAME] = module
    return found
