"""scipy.stats.poisson with derivatives w.r.t. mu.

k is discrete: a traced k gets the derivative of the continuous extension
xlogy(k, mu) - gammaln(k + 1) - mu (as in autograd) for pmf/logpmf, and none for cdf.
"""

import numpy as _np

from ...numpy import numpy_wrapper as anp
from .. import special as sp
from ._family import Family, clamp, inside


def _logpmf(k, mu):
    ks = clamp(k, 0.0)
    return inside((k >= 0) & (anp.floor(k) == k), sp.xlogy(ks, mu) - sp.gammaln(ks + 1) - mu,
                  -_np.inf)


def _cdf(k, mu):
    return inside(k >= 0, sp.gammaincc(anp.floor(clamp(k, 0.0)) + 1, mu), 0.0)


_poisson = Family("poisson", ("mu",), logpdf=_logpmf, cdf=_cdf, loc_scale=False)
pmf, logpmf, cdf, logcdf, sf, logsf = _poisson.methods("pdf logpdf cdf logcdf sf logsf")
pmf.__name__, logpmf.__name__ = "pmf", "logpmf"
for _f in (pmf, logpmf, cdf, logcdf, sf, logsf):
    _f.__doc__ = f"``scipy.stats.poisson.{_f.__name__}(k, mu, loc=0)``, differentiable w.r.t. mu."
