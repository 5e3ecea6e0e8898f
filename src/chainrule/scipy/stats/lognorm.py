"""scipy.stats.lognorm with derivatives w.r.t. x, s, loc and scale."""

import numpy as _np

from ...numpy import numpy_wrapper as anp
from .. import special as sp
from ._family import LOG_SQRT_2PI, Family, clamp, inside


def _log_z(z):
    return anp.log(clamp(z, 1e-300))


def _logpdf(z, s):
    log_z = _log_z(z)
    value = -log_z - anp.log(s) - LOG_SQRT_2PI - log_z * log_z / (2 * s * s)
    return inside(z > 0, value, -_np.inf)


_lognorm = Family("lognorm", ("s",), logpdf=_logpdf,
                  cdf=lambda z, s: inside(z > 0, sp.ndtr(_log_z(z) / s), 0.0),
                  sf=lambda z, s: inside(z > 0, sp.ndtr(-_log_z(z) / s), 1.0))
pdf, logpdf, cdf, logcdf, sf, logsf = _lognorm.methods("pdf logpdf cdf logcdf sf logsf")
