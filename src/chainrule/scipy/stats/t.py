"""scipy.stats.t with derivatives w.r.t. x, df, loc and scale (cdf: not w.r.t. df)."""

import numpy as _np

from ...numpy import numpy_wrapper as anp
from .. import special as sp
from ._family import Family


def _logpdf(z, df):
    return (sp.gammaln((df + 1) / 2) - sp.gammaln(df / 2) - 0.5 * anp.log(df * _np.pi)
            - (df + 1) / 2 * sp.log1p(z * z / df))


_t = Family("t", ("df",), logpdf=_logpdf,
            cdf=lambda z, df: sp.stdtr(df, z), sf=lambda z, df: sp.stdtr(df, -z))
pdf, logpdf, cdf, logcdf, sf, logsf = _t.methods("pdf logpdf cdf logcdf sf logsf")
