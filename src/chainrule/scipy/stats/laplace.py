"""scipy.stats.laplace with derivatives w.r.t. x, loc and scale."""

import numpy as _np

from ...numpy import numpy_wrapper as anp
from ._family import Family


def _half_tail(z):
    return 0.5 * anp.exp(-anp.abs(z))  # finite on both sides, so both where branches are


_laplace = Family("laplace", (),
                  logpdf=lambda z: -anp.abs(z) - _np.log(2.0),
                  cdf=lambda z: anp.where(z < 0, _half_tail(z), 1 - _half_tail(z)),
                  sf=lambda z: anp.where(z < 0, 1 - _half_tail(z), _half_tail(z)))
pdf, logpdf, cdf, logcdf, sf, logsf = _laplace.methods("pdf logpdf cdf logcdf sf logsf")
