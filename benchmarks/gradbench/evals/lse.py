"""lse: log-sum-exp of a vector by the max trick, and its gradient."""

from __future__ import annotations

import numpy

import chainrule
import chainrule.numpy as np

from ..protocol import Function
from . import compiled, to_list


def logsumexp(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def prepare(raw: dict) -> tuple:
    return (numpy.array(raw["x"], dtype=float),)


def functions(jit: bool) -> dict[str, Function]:
    return {"primal": Function(prepare, compiled(logsumexp, jit), float),
            "gradient": Function(prepare, compiled(chainrule.grad(logsumexp), jit), to_list)}


def small_input(rng: numpy.random.Generator) -> dict:
    return {"x": rng.random(2500).tolist()}
