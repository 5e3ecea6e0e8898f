"""Batching rules (``chainrule.vmap``) for chainrule.scipy's primitives; the patterns are
those of chainrule.numpy's (``chainrule.numpy.rules.batching``). SciPy's ufuncs need none:
every ufunc batches elementwise. SciPy's one-matrix linear algebra maps over leading axes
from SciPy 1.15 on (cholesky, eigh, sqrtm; expm always did); the solves (solve_triangular,
solve, lu, banded, Sylvester) and convolve run once per example."""

from __future__ import annotations

import scipy

from ..._core.rules import defbatch
from ...numpy.batched import elementwise
from ...numpy.rules.batching import along_axis, as_is
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
if tuple(int(p) for p in scipy.__version__.split(".")[:2]) >= (1, 15):
    for _fun in (sla.cholesky_symmetric, sla.eigh_values, sla.eigh_vectors, sla.sqrtm):
        defbatch(_fun, _one_matrix(_fun))
