"""scipy.stats.uniform on [loc, loc + scale] with derivatives w.r.t. x, loc and scale."""

import numpy as _np

from ._family import Family, clamp, inside

_uniform = Family("uniform", (),
                  logpdf=lambda z: inside((z >= 0) & (z <= 1), 0.0 * z, -_np.inf),
                  cdf=lambda z: clamp(z, 0.0, 1.0), sf=lambda z: 1.0 - clamp(z, 0.0, 1.0))
pdf, logpdf, cdf, logcdf, sf, logsf = _uniform.methods("pdf logpdf cdf logcdf sf logsf")
