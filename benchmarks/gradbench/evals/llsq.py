"""llsq: the linear least-squares objective of cmpad's llsq_obj, and its gradient.

y(x) = 1/2 sum_i (s_i - sum_j x_j t_i^j)^2 with t_i = -1 + 2i/(n-1), s_i = sign(t_i).
"""

from __future__ import annotations

import numpy

import chainrule
import chainrule.numpy as np

from ..protocol import Function
from . import compiled, to_list


def llsq(x, n):
    t = -1 + np.arange(n) * 2 / (n - 1)
    powers = t[:, None] ** np.arange(x.shape[0])  # t_i^j, an n x m matrix
    residual = np.sign(t) - powers @ x
    return np.sum(residual * residual) / 2


def prepare(raw: dict) -> tuple:
    return numpy.array(raw["x"], dtype=float), int(raw["n"])


def functions(jit: bool) -> dict[str, Function]:
    return {"primal": Function(prepare, compiled(llsq, jit), float),
            "gradient": Function(prepare, compiled(chainrule.grad(llsq), jit), to_list)}


def small_input(rng: numpy.random.Generator) -> dict:
    return {"x": rng.random(128).tolist(), "n": 16}
