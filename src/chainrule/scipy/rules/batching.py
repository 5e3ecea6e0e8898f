"""Batching rules (``chainrule.vmap``) for chainrule.scipy's primitives; the patterns are
those of chainrule.numpy's (``chainrule.numpy.rules.batching``). SciPy's ufuncs need none:
every ufunc batches elementwise. SciPy's linear algebra beyond ``expm`` (solve_triangular,
cholesky, eigh, lu, sqrtm, convolve) runs once per example."""

from __future__ import annotations

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
