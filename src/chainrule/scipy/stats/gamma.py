"""scipy.stats.gamma with derivatives w.r.t. x, a, loc and scale (cdf: not w.r.t. a)."""

import numpy as _np

from .. import special as sp
from ._family import Family, clamp, inside


def _logpdf(z, a):
    zs = clamp(z, 0.0)
    return inside(z >= 0, sp.xlogy(a - 1, zs) - zs - sp.gammaln(a), -_np.inf)


_gamma = Family("gamma", ("a",), logpdf=_logpdf,
                cdf=lambda z, a: sp.gammainc(a, clamp(z, 0.0)),
                sf=lambda z, a: sp.gammaincc(a, clamp(z, 0.0)))
pdf, logpdf, cdf, logcdf, sf, logsf = _gamma.methods("pdf logpdf cdf logcdf sf logsf")
