"""scipy.stats.chi2 with derivatives w.r.t. x, df, loc and scale (cdf: not w.r.t. df)."""

import numpy as _np

from .. import special as sp
from ._family import Family, clamp
from .gamma import _logpdf as _gamma_logpdf

_chi2 = Family("chi2", ("df",),
               logpdf=lambda z, df: _gamma_logpdf(z / 2, df / 2) - _np.log(2.0),
               cdf=lambda z, df: sp.gammainc(df / 2, clamp(z, 0.0) / 2),
               sf=lambda z, df: sp.gammaincc(df / 2, clamp(z, 0.0) / 2))
pdf, logpdf, cdf, logcdf, sf, logsf = _chi2.methods("pdf logpdf cdf logcdf sf logsf")
