"""scipy.stats.beta with derivatives w.r.t. x, a, b, loc and scale (cdf: not w.r.t. a, b)."""

import numpy as _np

from .. import special as sp
from ._family import Family, clamp, inside


def _logpdf(z, a, b):
    zs = clamp(z, 0.0, 1.0)
    value = sp.xlogy(a - 1, zs) + sp.xlog1py(b - 1, -zs) - sp.betaln(a, b)
    return inside((z >= 0) & (z <= 1), value, -_np.inf)


_beta = Family("beta", ("a", "b"), logpdf=_logpdf,
               cdf=lambda z, a, b: sp.betainc(a, b, clamp(z, 0.0, 1.0)))
pdf, logpdf, cdf, logcdf, sf, logsf = _beta.methods("pdf logpdf cdf logcdf sf logsf")
