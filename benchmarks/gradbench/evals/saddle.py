"""saddle: min over x of max over y of f(x, y) by nested gradient descent (Pearlmutter and
Siskind's saddle benchmark).

f(x, y) = (x1^2 + x2^2) - (y1^2 + y2^2) with the eval's argument order f(x1, x2, y1, y2).
The outer descent's gradient differentiates through the inner descent (the max inside the
cost), in forward or reverse mode: the function name says which mode the outer and the inner
derivative use. The result is the argmin x and then the argmax y for that x.
"""

from __future__ import annotations

import numpy

import chainrule.numpy as np

from ..protocol import Function
from . import compiled
from ._descent import MODES, VARIANTS, argmax, argmin, max_value


def f(x1, y1, x2, y2):
    return (x1 * x1 + y1 * y1) - (x2 * x2 + y2 * y2)


def inner_cost(p, p1):
    return f(p1[0], p1[1], p[0], p[1])


class Saddle:
    """One variant: ``outer`` and ``inner`` are the modes ("f" or "r") of the two derivatives.

    ``cost(p1, start)`` is the max over the second point (the inner descent) and
    ``gradient`` its derivative in p1, through that descent; calling the object with a start
    point runs both descents.
    """

    def __init__(self, outer: str, inner: str, jit: bool):
        inner_gradient = MODES[inner](inner_cost)

        def cost(p1, start):
            return max_value(lambda p: inner_cost(p, p1), lambda p: inner_gradient(p, p1),
                             start)

        self.cost, self.gradient = compiled(cost, jit), compiled(MODES[outer](cost), jit)
        self.inner_cost = compiled(inner_cost, jit)
        self.inner_gradient = compiled(MODES[outer](inner_cost), jit)  # step 2: outer mode

    def __call__(self, start):
        r1 = argmin(lambda p1: self.cost(p1, start), lambda p1: self.gradient(p1, start),
                    start)
        r2 = argmax(lambda p: self.inner_cost(p, r1), lambda p: self.inner_gradient(p, r1),
                    start)
        return np.concatenate([r1, r2])


def prepare(raw: dict) -> tuple:
    return (numpy.array(raw["start"], dtype=float),)


def functions(jit: bool) -> dict[str, Function]:
    return {name: Function(prepare, Saddle(name[0], name[1], jit),
                           lambda r: [float(v) for v in r]) for name in VARIANTS}


def small_input(rng: numpy.random.Generator) -> dict:
    return {"start": [1.0, 1.0]}  # the eval's only input
