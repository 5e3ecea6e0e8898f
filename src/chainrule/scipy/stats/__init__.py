"""chainrule.scipy.stats: SciPy's distributions with derivatives w.r.t. x and parameters.

Each distribution is a module of functions (``norm.logpdf(x, loc, scale)``), as in
autograd, written with differentiable primitives of chainrule.numpy and
chainrule.scipy.special.
"""

from . import (
    beta,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    laplace,
    logistic,
    lognorm,
    multivariate_normal,
    norm,
    poisson,
    t,
    uniform,
)

__all__ = ["beta", "cauchy", "chi2", "dirichlet", "expon", "gamma", "laplace", "logistic",
           "lognorm", "multivariate_normal", "norm", "poisson", "t", "uniform"]
