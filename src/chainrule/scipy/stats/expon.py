"""scipy.stats.expon with derivatives w.r.t. x, loc and scale."""

import numpy as _np

from ...numpy import numpy_wrapper as anp
from .. import special as sp
from ._family import Family, clamp, inside

_expon = Family("expon", (),
                logpdf=lambda z: inside(z >= 0, -clamp(z, 0.0), -_np.inf),
                cdf=lambda z: -sp.expm1(-clamp(z, 0.0)),
                sf=lambda z: anp.exp(-clamp(z, 0.0)),
                logsf=lambda z: -clamp(z, 0.0))
pdf, logpdf, cdf, logcdf, sf, logsf = _expon.methods("pdf logpdf cdf logcdf sf logsf")
