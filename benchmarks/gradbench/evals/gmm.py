"""gmm: the log posterior of a Gaussian mixture model with a Wishart prior, and its gradient.

With precision matrices Sigma_k^-1 = Q_k^T Q_k, where Q_k is lower triangular with
exp(q_k) on its diagonal and l_k below it (filled column by column):

    beta_ik = alpha_k + sum_j q_kj - |Q_k (x_i - mu_k)|^2 / 2
    F = sum_i logsumexp_k(beta_ik) - n (d/2 log 2 pi + logsumexp(alpha)) + log prior
    log prior = sum_k (m sum_j q_kj - gamma^2/2 |Q_k|_F^2) + k (n' d log(gamma/sqrt 2)
                - log Gamma_d(n'/2)),   n' = d + m + 1
"""

from __future__ import annotations

import functools
import math

import numpy

import chainrule
import chainrule.numpy as np

from ..protocol import Function
from . import compiled


def logsumexp(v, axis=None):
    top = np.max(v, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(v - top), axis=axis)) + np.squeeze(top, axis=axis)


@functools.lru_cache(maxsize=8)
def triangle_layout(d: int) -> numpy.ndarray:
    """Where each entry of Q comes from in [exp(q) | l | 0]: a d x d index table."""
    layout = numpy.full((d, d), d + d * (d - 1) // 2)  # the zero column
    layout[numpy.arange(d), numpy.arange(d)] = numpy.arange(d)
    rows, cols = numpy.tril_indices(d, -1)
    by_column = numpy.lexsort((rows, cols))  # l runs down each column in turn
    layout[rows[by_column], cols[by_column]] = d + numpy.arange(d * (d - 1) // 2)
    return layout


def log_multigamma(a: float, d: int) -> float:
    return 0.25 * d * (d - 1) * math.log(math.pi) + sum(
        math.lgamma(a + 0.5 * (1 - j)) for j in range(1, d + 1))


def log_posterior(alpha, mu, q, l, x, gamma, m):
    n, d = x.shape
    k = alpha.shape[0]
    entries = np.concatenate([np.exp(q), l, np.zeros((k, 1))], axis=1)
    Q = entries[:, triangle_layout(d)]  # k x d x d, lower triangular
    centered = x[None, :, :] - mu[:, None, :]  # k x n x d
    Qx = centered @ np.swapaxes(Q, 1, 2)
    sum_q = np.sum(q, axis=1)
    beta = (alpha + sum_q)[:, None] - 0.5 * np.sum(Qx * Qx, axis=2)  # k x n
    likelihood = np.sum(logsumexp(beta, axis=0)) - n * (
        0.5 * d * math.log(2 * math.pi) + logsumexp(alpha))
    dof = d + m + 1
    frobenius = np.sum(np.exp(2 * q)) + np.sum(l * l)
    prior = (m * np.sum(sum_q) - 0.5 * gamma * gamma * frobenius
             + k * (dof * d * (math.log(gamma) - 0.5 * math.log(2))
                    - log_multigamma(0.5 * dof, d)))
    return likelihood + prior


def prepare(raw: dict) -> tuple:
    def array(key):
        return numpy.array(raw[key], dtype=float)

    return (array("alpha"), array("mu"), array("q"), array("l"), array("x"),
            float(raw["gamma"]), int(raw["m"]))


def jacobian_output(gradients) -> dict:
    alpha, mu, q, l = gradients
    return {"alpha": alpha.tolist(), "mu": mu.tolist(), "q": q.tolist(), "l": l.tolist()}


def functions(jit: bool) -> dict[str, Function]:
    gradient = chainrule.grad(log_posterior, argnum=(0, 1, 2, 3))
    return {"objective": Function(prepare, compiled(log_posterior, jit), float),
            "jacobian": Function(prepare, compiled(gradient, jit), jacobian_output)}


def small_input(rng: numpy.random.Generator) -> dict:
    d, k, n = 2, 5, 1000
    return {"d": d, "k": k, "n": n, "m": 0, "gamma": 1.0,
            "x": rng.normal(size=(n, d)).tolist(), "alpha": rng.normal(size=k).tolist(),
            "mu": rng.uniform(size=(k, d)).tolist(), "q": rng.normal(size=(k, d)).tolist(),
            "l": rng.normal(size=(k, d * (d - 1) // 2)).tolist()}
