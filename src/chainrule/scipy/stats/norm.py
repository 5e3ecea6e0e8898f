"""scipy.stats.norm with derivatives w.r.t. x, loc and scale."""

from .. import special as sp
from ._family import LOG_SQRT_2PI, Family

_norm = Family("norm", (),
               logpdf=lambda z: -0.5 * z * z - LOG_SQRT_2PI,
               cdf=lambda z: sp.ndtr(z), sf=lambda z: sp.ndtr(-z),
               logcdf=lambda z: sp.log_ndtr(z), logsf=lambda z: sp.log_ndtr(-z))
pdf, logpdf, cdf, logcdf, sf, logsf = _norm.methods("pdf logpdf cdf logcdf sf logsf")
