"""ode: cmpad's an_ode, s steps of fourth-order Runge-Kutta on y0' = x0, yi' = xi y(i-1).

``primal`` is the final state y(2); ``gradient`` the gradient of its last element with
respect to x.
"""

from __future__ import annotations

import numpy

import chainrule
import chainrule.numpy as np

from ..protocol import Function
from . import compiled, to_list


def ode_fun(x, y):
    return np.concatenate([x[:1], x[1:] * y[:-1]])


def primal(x, s):
    h = 2.0 / s
    y = np.zeros_like(x)
    for _ in range(s):
        k1 = ode_fun(x, y)
        k2 = ode_fun(x, y + h * k1 / 2)
        k3 = ode_fun(x, y + h * k2 / 2)
        k4 = ode_fun(x, y + h * k3)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return y


def last(x, s):
    return primal(x, s)[-1]


def prepare(raw: dict) -> tuple:
    return numpy.array(raw["x"], dtype=float), int(raw["s"])


def functions(jit: bool) -> dict[str, Function]:
    return {"primal": Function(prepare, compiled(primal, jit), to_list),
            "gradient": Function(prepare, compiled(chainrule.grad(last), jit), to_list)}


def small_input(rng: numpy.random.Generator) -> dict:
    return {"x": rng.random(1000).tolist(), "s": 1}
