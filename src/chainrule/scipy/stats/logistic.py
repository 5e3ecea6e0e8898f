"""scipy.stats.logistic with derivatives w.r.t. x, loc and scale."""

from .. import special as sp
from ._family import Family

_logistic = Family("logistic", (),
                   logpdf=lambda z: sp.log_expit(z) + sp.log_expit(-z),
                   cdf=lambda z: sp.expit(z), sf=lambda z: sp.expit(-z),
                   logcdf=lambda z: sp.log_expit(z), logsf=lambda z: sp.log_expit(-z))
pdf, logpdf, cdf, logcdf, sf, logsf = _logistic.methods("pdf logpdf cdf logcdf sf logsf")
