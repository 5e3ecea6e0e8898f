"""scipy.stats.dirichlet with derivatives w.r.t. x and alpha.

As in SciPy, the components run along the first axis of ``x``: shape (K,) or (K, n).
"""

from scipy.stats import dirichlet as _dirichlet

from ...numpy import numpy_wrapper as anp
from .. import special as sp
from ._family import as_array


def logpdf(x, alpha):
    """``scipy.stats.dirichlet.logpdf``."""
    x, alpha = as_array(x), as_array(alpha)
    k = anp.shape(alpha)[0]
    a = anp.reshape(alpha, (k,) + (1,) * (anp.ndim(x) - 1))
    log_norm = anp.sum(sp.gammaln(alpha)) - sp.gammaln(anp.sum(alpha))
    return anp.sum(sp.xlogy(a - 1, x), axis=0) - log_norm


def pdf(x, alpha):
    """``scipy.stats.dirichlet.pdf``."""
    return anp.exp(logpdf(x, alpha))


# sampling has no derivative: SciPy's own sampler (a traced alpha is refused by it)
rvs = _dirichlet.rvs
