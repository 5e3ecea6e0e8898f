"""Derivative dynamics compiled once per solve with ``chainrule.jit``.

An adjoint or sensitivity solve calls the same derivative of the user's function (a VJP
or a JVP of the right-hand side) hundreds of times on arrays of fixed shapes. Traced
eagerly, each call records a graph and walks it back; ``Staged`` traces it once, lets
``chainrule.jit`` emit it as straight-line NumPy and runs that program at every step.
Where staging is refused (a construct jit cannot stage, guards that keep failing,
values of an outer trace), the function runs eagerly, as before: never a different
answer, only a slower one.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as _np

from .._user_code.errstate import strict
from ..jit import MISS, StagingError, jit
from ..jit._errstate import runs_strictly

# Python decisions on traced values (``if t > 1``) make variants; past this many for one
# solve the function is taken to decide on its inputs' values and runs eagerly.
MAX_VARIANTS = 4


_SCALARS = (float, _np.float64, _np.float32)


def _signature(args: tuple) -> tuple | None:
    """Types, shapes and dtypes of float arrays and scalars; None for anything else (an
    integer would be part of jit's key by value, a duck array by its own rules)."""
    key = []
    for a in args:
        if type(a) is _np.ndarray and a.dtype.kind == "f":
            key.append((a.shape, a.dtype))
        elif type(a) in _SCALARS:
            key.append(type(a))
        else:
            return None
    return tuple(key)


class Staged:
    """``fun(*args)``, for plain array/float arguments of one fixed signature answering one
    array, run as the program ``chainrule.jit`` compiles from it; ``fun`` itself for
    traced arguments (a derivative of the solve is being taken) or once staging has been
    refused (``refused`` then says why)."""

    def __init__(self, fun: Callable):
        self.fun = fun
        self.jitted = jit(fun, max_variants=MAX_VARIANTS)
        self.programs: list = []
        self.signature: tuple | None = None  # of the arguments the programs are for
        self.refused = ""

    def __call__(self, *args: Any) -> Any:
        if not self.refused:
            key = _signature(args)  # (None for traced arguments)
            if key is not None and key == self.signature:
                # (a lighter key than jit's own, which would cost as much as the program)
                if runs_strictly():  # (see jit's: a program that told, then raised,
                    with strict():   # would be run again by jit, then eagerly: told twice)
                        out = self._run(args)
                else:
                    out = self._run(args)
                return self._trace(args) if out is MISS else out[0]
            if key is not None and self.signature is None:
                self.signature = key
                return self._trace(args)
        return self.fun(*args)

    def _run(self, args: tuple) -> Any:
        for program in self.programs:
            out = program.run(*args)
            if out is not MISS:
                return out
        return MISS

    def _trace(self, args: tuple) -> Any:
        try:
            with warnings.catch_warnings():
                # jit's own notices (too many variants, large constants) are about a
                # staging the user never asked for; the fallback below answers them
                warnings.filterwarnings("ignore", message="chainrule.jit")
                out = self.jitted(*args)
        except StagingError as error:  # a construct jit cannot stage: eagerly from now on
            self.refused = f"{type(error).__name__}: {error}"
            return self.fun(*args)
        # (any other error is the function's own, as its eager call raises it: jit's
        # contract. Running it again would warn, or call the user's code, twice.)
        programs = self.jitted.variants_for(*args)  # (jit appends the variants it adds)
        if programs is not None:
            self.programs = programs
        elif self.programs:  # (the signature had programs: jit gave up on its guards)
            self.refused = f"its guards failed in {MAX_VARIANTS} variants"
        else:
            self.refused = "it uses values traced outside the solve"
        return out
