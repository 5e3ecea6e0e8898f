"""particle: steer a charged particle through the origin (Pearlmutter and Siskind's
particle benchmark).

Two fixed unit charges at (10, 10 - w) and (10, 0) repel a particle that starts at (0, 8)
with velocity (0.75, 0); Euler steps of 0.1 with acceleration -grad p(x) (p the potential,
sum of inverse distances) run until the particle would cross the x axis, where its position
is interpolated linearly. Gradient descent on w minimises the square of that crossing's
x coordinate. The inner derivative (the force) and the outer one (the descent's gradient,
through the whole simulation) are forward or reverse mode as the function name says.
"""

from __future__ import annotations

import numpy

import chainrule.numpy as np

from ..protocol import Function
from . import compiled
from ._descent import MODES, VARIANTS, argmin


def crossing_error(ws, inner: str):
    """x(t_f)^2 where the trajectory for control parameter ws[0] crosses the x axis."""
    charges = [np.array([10.0, 10.0 - ws[0]]), np.array([10.0, 0.0])]

    def potential(x):
        return sum(1 / np.sqrt(np.sum((x - charge) ** 2)) for charge in charges)

    force = MODES[inner](potential)
    x, velocity, dt = np.array([0.0, 8.0]), np.array([0.75, 0.0]), 0.1
    while True:
        x_new = x + dt * velocity
        if x_new[1] <= 0:
            break
        x, velocity = x_new, velocity + dt * -force(x)
    x_final = x + (-x[1] / velocity[1]) * velocity
    return x_final[0] ** 2


class Particle:
    """One variant: ``outer`` and ``inner`` are the modes ("f" or "r") of the two derivatives.

    ``cost(ws)`` is the crossing error for ws[0] and ``gradient`` its derivative, through
    the simulation; calling the object with a starting w runs the descent.
    """

    def __init__(self, outer: str, inner: str, jit: bool):
        def cost(ws):
            return crossing_error(ws, inner)

        self.cost, self.gradient = compiled(cost, jit), compiled(MODES[outer](cost), jit)

    def __call__(self, w0):
        return argmin(self.cost, self.gradient, np.array([w0]))[0]


def prepare(raw: dict) -> tuple:
    return (float(raw["w"]),)


def functions(jit: bool) -> dict[str, Function]:
    return {name: Function(prepare, Particle(name[0], name[1], jit), float)
            for name in VARIANTS}


def small_input(rng: numpy.random.Generator) -> dict:
    return {"w": 0.0}  # the eval's only input
