"""kmeans: the k-means cost and the Newton direction J H^-1 for the centroids.

cost(P, C) = sum_i min_j |C_j - P_i|^2. Its Hessian in C is diagonal, so one
Hessian-vector product with a vector of ones is the whole diagonal; ``jvp`` of the
gradient gives the gradient and that product in one forward-over-reverse pass.
"""

from __future__ import annotations

import numpy

import chainrule
import chainrule.numpy as np

from ..protocol import Function
from . import compiled, to_list


def cost(points, centroids):
    # |p - c|^2 = |p|^2 + |c|^2 - 2 p.c, an n x k matrix without an n x k x d one
    distances = (np.sum(points ** 2, axis=1)[:, None] + np.sum(centroids ** 2, axis=1)
                 - 2 * points @ centroids.T)
    return np.sum(np.min(distances, axis=1))


def newton_direction(points, centroids):
    gradient_of_cost = chainrule.grad(cost, argnum=1)
    gradient, hessian_diagonal = chainrule.jvp(
        lambda c: gradient_of_cost(points, c), (centroids,), (np.ones_like(centroids),))
    return gradient / hessian_diagonal


def prepare(raw: dict) -> tuple:
    return (numpy.array(raw["points"], dtype=float), numpy.array(raw["centroids"], dtype=float))


def functions(jit: bool) -> dict[str, Function]:
    return {"cost": Function(prepare, compiled(cost, jit), float),
            "dir": Function(prepare, compiled(newton_direction, jit), to_list)}


def small_input(rng: numpy.random.Generator) -> dict:
    points = rng.random((1000, 8)).tolist()
    return {"points": points, "centroids": points[-10:]}
