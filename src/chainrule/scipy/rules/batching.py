"""Batching rules (``chainrule.vmap``) for chainrule.scipy's primitives; the patterns are
those of chainrule.numpy's (``chainrule.numpy.batching_patterns``). SciPy's ufuncs need none:
every ufunc batches elementwise. SciPy's one-matrix linear algebra maps over leading axes
from SciPy 1.15 on (cholesky, eigh, sqrtm, the solves, lu, Sylvester; expm always did); a
batch of right-hand sides against one matrix is one solve of many columns with any SciPy.
solve_banded and convolve run once per example."""

from __future__ import annotations

import scipy

from ..._core.rules import defbatch
from ...numpy import numpy_wrapper as anp
from ...numpy.batched import elementwise, example_ndim
from ...numpy.batching_patterns import along_axis, as_is
from .. import linalg as sla
from .. import special as sp

for _fun in (sp.softmax, sp.log_softmax, sp.logsumexp_b):
    defbatch(_fun, along_axis(_fun, "all"))
# elementwise in the traced argument; the integer order / dimension is the same for all
for _fun in (sp.polygamma, sp.multigammaln):
    defbatch(_fun, elementwise(_fun))
defbatch(sla.expm, as_is(sla.expm, 2))


def _one_matrix(fun):
    rule = as_is(fun, 2)

    def one_matrix(values, batched, kwargs):
        if len(values) > 1 and values[1] is not None:  # eigh's generalized problem
            return NotImplemented
        return rule(values, batched, kwargs)

    return one_matrix


# SciPy 1.15 made these accept stacks of matrices
_STACKS = tuple(int(p) for p in scipy.__version__.split(".")[:2]) >= (1, 15)
if _STACKS:
    for _fun in (sla.cholesky_symmetric, sla.eigh_values, sla.eigh_vectors, sla.sqrtm,
                 sla.lu_packed):
        defbatch(_fun, _one_matrix(_fun))


def _solve(fun):
    """solve_triangular / solve_general (a, b, options): one matrix and a batch of
    right-hand sides is one solve of all their columns; a batch of matrices is SciPy's
    stacked solve (b made a stack of one-column matrices where an example's is a vector)."""

    def rule(values, batched, kwargs):
        (a, b), options = values[:2], values[2:]
        nd_a, nd_b = example_ndim(a, batched[0]), example_ndim(b, batched[1])
        if any(batched[2:]) or nd_a != 2 or nd_b not in (1, 2):
            return NotImplemented
        if not batched[0]:
            shape = anp.shape(b)  # (batch, n) or (batch, n, k): the examples' columns
            columns = anp.reshape(anp.moveaxis(b, 0, -1), (shape[1], -1))
            out = fun(a, columns, *options, **kwargs)
            return anp.moveaxis(anp.reshape(out, shape[1:] + shape[:1]), -1, 0)
        if not _STACKS:
            return NotImplemented
        if not batched[1]:
            b = anp.broadcast_to(b, anp.shape(a)[:1] + anp.shape(b))
        if nd_b == 1:
            return anp.squeeze(fun(a, anp.expand_dims(b, -1), *options, **kwargs), -1)
        return fun(a, b, *options, **kwargs)

    return rule


def _sylvester(values, batched, kwargs):
    """solve_sylvester(a, b, q): SciPy's stacked solve, those that are the same for every
    example repeated along the batch."""
    if not _STACKS or kwargs or any(example_ndim(v, f) != 2 for v, f in zip(values, batched)):
        return NotImplemented
    size = next(anp.shape(v)[0] for v, f in zip(values, batched) if f)
    return sla.solve_sylvester(*[v if f else anp.broadcast_to(v, (size,) + anp.shape(v))
                                 for v, f in zip(values, batched)])


for _fun in (sla.solve_triangular, sla.solve_general):
    defbatch(_fun, _solve(_fun))
defbatch(sla.solve_sylvester, _sylvester)
