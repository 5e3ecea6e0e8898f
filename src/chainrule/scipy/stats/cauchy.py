"""scipy.stats.cauchy with derivatives w.r.t. x, loc and scale."""

import numpy as _np

from .. import special as sp
from ._family import Family

# Cauchy is Student's t with one degree of freedom: its cdf is stdtr(1, z).
_cauchy = Family("cauchy", (),
                 logpdf=lambda z: -_np.log(_np.pi) - sp.log1p(z * z),
                 cdf=lambda z: sp.stdtr(1.0, z), sf=lambda z: sp.stdtr(1.0, -z))
pdf, logpdf, cdf, logcdf, sf, logsf = _cauchy.methods("pdf logpdf cdf logcdf sf logsf")
