"""hello: ``square`` is x * x and ``double`` its derivative, 2x (GradBench's first eval)."""

from __future__ import annotations

import numpy

import chainrule

from ..protocol import Function
from . import compiled


def square(x):
    return x * x


def functions(jit: bool) -> dict[str, Function]:
    def prepare(raw):
        return (float(raw),)

    return {"square": Function(prepare, compiled(square, jit), float),
            "double": Function(prepare, compiled(chainrule.grad(square), jit), float)}


def small_input(rng: numpy.random.Generator) -> float:
    return float(rng.normal())
