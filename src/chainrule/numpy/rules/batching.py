"""Batching rules (``chainrule.vmap``) for chainrule.numpy, .linalg and .fft.

A rule ``rule(values, batched, kwargs)`` computes a primitive for a whole batch: the
arguments flagged in ``batched`` hold the batch as their leading axis, and so does every
output. Most primitives follow one of a few patterns, so the rules are made by pattern:

- elementwise (every ufunc, found by ``batched.batching_rule``; and the functions below that
  broadcast like one): operands' example axes padded to one rank, then one call;
- along an axis (reductions, scans, sorts, flips, the FFTs): the axis moves past the batch;
  ``axis=None`` means all of an example's axes, or its flattened values for scans and sorts;
- over the last axes (linalg): NumPy already maps these over leading axes;
- index maps (reshape, transpose, indexing, concatenate, stack...), contractions (matmul,
  dot, outer, einsum): one call each, written out below.

A rule answers ``NotImplemented`` for a call its pattern does not cover (a batched
argument where the pattern expects a constant, say); that call runs once per example.
"""

from __future__ import annotations

import numpy as _np

from ..._core.rules import defbatch
from .. import linalg as alinalg
from .. import numpy_wrapper as anp
from ..batched import example_ndim, flat_examples
from ..batching_patterns import as_is, only_first, shifted_axis


def _norm(fun):
    """linalg.norm / vector_norm: ``axis=None`` is all of an example's axes (flattened for
    the 2-norm; a vector or matrix norm by the example's rank for other orders)."""

    def rule(values, batched, kwargs):
        if not only_first(batched) or len(values) > 1:
            return NotImplemented
        kwargs = dict(kwargs)
        x, ndim = values[0], example_ndim(values[0], True)
        if kwargs.get("axis") is None:
            if kwargs.get("keepdims"):
                return NotImplemented
            if kwargs.get("ord") is None or fun is not alinalg.norm:
                x, kwargs["axis"] = flat_examples(x), 1
            elif ndim in (1, 2):
                kwargs["axis"] = 1 if ndim == 1 else (1, 2)
            else:
                return NotImplemented
        else:
            kwargs["axis"] = shifted_axis(kwargs["axis"], ndim)
        return fun(x, **kwargs)

    return rule


for _fun in (alinalg.norm, alinalg.vector_norm):
    defbatch(_fun, _norm(_fun))


defbatch(alinalg.matrix_transpose, as_is(alinalg.matrix_transpose, 2))
defbatch(alinalg.matrix_norm, as_is(alinalg.matrix_norm, 2))


# ----------------------------------------------------------------------------- linalg
for _fun in (alinalg.inv, alinalg.det, alinalg.slogdet_tuple, alinalg.cholesky,
             alinalg.eigh_tuple, alinalg.eigvalsh, alinalg.eig_tuple, alinalg.eigvals,
             alinalg.svd_tuple, alinalg.svd_values, alinalg.pinv, alinalg.matrix_power,
             alinalg.qr_tuple, alinalg.qr_r):
    defbatch(_fun, as_is(_fun, 2))


def _solve(values, batched, kwargs):
    """solve(a, b): b of one example a vector, or a stack of matrices like a's (NumPy 2
    reads only a 1-D b as a vector, so a batch of vectors is made one of one-column
    matrices); the batched operands' stacking axes are padded to a common rank."""
    (a, b), (batched_a, batched_b) = values, batched
    nd_a, nd_b = example_ndim(a, batched_a), example_ndim(b, batched_b)
    if kwargs or nd_a < 2:
        return NotImplemented
    if not batched_a and nd_a == 2 and nd_b <= 2:
        # one matrix for the whole batch: one factorization, the examples as its columns
        shape = _np.shape(b)
        columns = anp.reshape(anp.moveaxis(b, 0, 1), (shape[1], shape[0] * int(_np.prod(shape[2:]))))
        out = anp.reshape(alinalg.solve(a, columns), (shape[1], shape[0]) + shape[2:])
        return anp.moveaxis(out, 1, 0)
    vector = nd_b == 1
    if vector:
        b, nd_b = anp.expand_dims(b, -1), 2
    lead = max(nd_a, nd_b) - 2
    if batched_a and nd_a - 2 < lead:
        a = anp.expand_dims(a, tuple(range(1, 1 + lead - (nd_a - 2))))
    if batched_b and nd_b - 2 < lead:
        b = anp.expand_dims(b, tuple(range(1, 1 + lead - (nd_b - 2))))
    out = alinalg.solve(a, b)
    return anp.squeeze(out, -1) if vector else out


defbatch(alinalg.solve, _solve)
