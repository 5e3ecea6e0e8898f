"""det: the determinant by expansion by minors (cmpad's det_by_minor), and its gradient.

The expansion along the first row recurses into every minor, ell! products in all; this
computes the same sums, one level of the recursion at a time for all minors at once. A
minor at depth r (rows r.. of A) is named by the columns it keeps, and the minors of depth
r + 1 are listed so that the children of minor i are rows i * width ... of the next level:
a minor's value is then sum_t (-1)^t A[r, column_t] * minors[i * width + t].
"""

from __future__ import annotations

import functools

import numpy

import chainrule

from ..protocol import Function
from . import compiled


@functools.lru_cache(maxsize=2)
def minor_columns(ell: int) -> tuple[numpy.ndarray, ...]:
    """For each depth r, the columns every minor of that depth keeps, one row per minor."""
    levels = [numpy.arange(ell, dtype=numpy.int8)[None, :]]
    for width in range(ell, 1, -1):
        # child t of a minor drops the minor's t-th column
        drop = numpy.array([numpy.delete(numpy.arange(width), t) for t in range(width)])
        levels.append(levels[-1][:, drop].reshape(-1, width - 1))
    return tuple(levels)


def det_by_minors(A):
    ell = A.shape[0]
    columns = minor_columns(ell)
    minors = A[ell - 1][columns[ell - 1][:, 0]]  # the 1 x 1 minors: entries of the last row
    for r in range(ell - 2, -1, -1):
        width = ell - r
        terms = A[r][columns[r]] * minors.reshape(-1, width)
        minors = terms @ (-1.0) ** numpy.arange(width)
    return minors[0]


def prepare(raw: dict) -> tuple:
    ell = int(raw["ell"])
    return (numpy.array(raw["A"], dtype=float).reshape(ell, ell),)


def functions(jit: bool) -> dict[str, Function]:
    gradient = chainrule.grad(det_by_minors)
    return {"primal": Function(prepare, compiled(det_by_minors, jit), float),
            "gradient": Function(prepare, compiled(gradient, jit),
                                 lambda g: g.ravel().tolist())}


def small_input(rng: numpy.random.Generator) -> dict:
    return {"A": rng.random(25).tolist(), "ell": 5}
