"""Specs for chainrule.scipy.stats: every method against SciPy's, derivatives w.r.t. x and
every parameter (loc, scale, shapes) in both modes, with SciPy's broadcasting."""

import numpy as onp

from . import Case, make

try:
    import scipy.stats as sst

    import chainrule.scipy.stats as st
except ImportError:  # SciPy is optional: no cases without it
    sst = None

METHODS = "pdf logpdf cdf logcdf sf logsf".split()


def _method_cases(dist, methods, x, shapes, no_shape_grad=()):
    """Cases for ``dist.method(x, *shapes, loc, scale)`` with x (2, 3) and parameters (3,)."""
    ours, theirs = getattr(st, dist), getattr(sst, dist)
    loc = make((3,), low=-0.3, high=0.0, seed=3)
    scale = make((3,), low=0.8, high=1.6, seed=4)
    args = (x, *shapes, loc, scale)
    cases = []
    for method in methods:
        n_shapes = 0 if method in no_shape_grad else len(shapes)
        argnums = (0, *range(1, 1 + n_shapes), len(args) - 2, len(args) - 1)
        cases.append(Case(f"stats.{dist}.{method}", getattr(ours, method), args,
                          argnums=argnums, ref=getattr(theirs, method)))
    return cases


def _cases():
    x = make((2, 3), low=0.2, high=2.0)
    unit = make((2, 3), low=0.35, high=0.75)
    shape = make((3,), low=1.5, high=3.0, seed=5)
    cdfs = ("cdf", "logcdf", "sf", "logsf")  # no closed-form derivative w.r.t. shapes
    cov_factor = make((3, 3), seed=6)
    xs = make((4, 3), seed=7)
    mean = make((3,), seed=8)
    alpha = make((3,), low=1.2, high=3.0, seed=9)
    simplex = onp.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]]).T
    mvn = st.multivariate_normal

    def cov(a):
        return a @ a.T + onp.eye(3)

    return [
        *_method_cases("norm", METHODS, x, ()),
        *_method_cases("t", METHODS, x, (shape,), no_shape_grad=cdfs),
        *_method_cases("gamma", METHODS, x + 0.5, (shape,), no_shape_grad=cdfs),
        *_method_cases("chi2", ["pdf", "logpdf", "cdf"], x + 0.5, (shape,), no_shape_grad=cdfs),
        *_method_cases("beta", ["pdf", "logpdf", "cdf"], unit * 0.7, (shape, shape[::-1]),
                       no_shape_grad=cdfs),
        *_method_cases("logistic", METHODS, x, ()),
        *_method_cases("laplace", METHODS, x - 1.1, ()),
        *_method_cases("expon", METHODS, x + 0.5, ()),
        *_method_cases("uniform", ["pdf", "logpdf", "cdf", "sf"], unit * 0.7, ()),
        *_method_cases("cauchy", METHODS, x - 1.0, ()),
        *_method_cases("lognorm", ["pdf", "logpdf", "cdf", "sf"], x + 0.5, (shape * 0.4,)),
        *[Case(f"stats.poisson.{m}", getattr(st.poisson, m), (onp.array([0.0, 2.0, 5.0]), shape),
               argnums=(1,), ref=getattr(sst.poisson, m)) for m in ("pmf", "logpmf", "cdf")],
        Case("stats.dirichlet.logpdf", st.dirichlet.logpdf, (simplex, alpha), argnums=(0, 1),
             ref=sst.dirichlet.logpdf),
        Case("stats.dirichlet.pdf", st.dirichlet.pdf, (simplex[:, 0], alpha), argnums=(0, 1),
             ref=sst.dirichlet.pdf),
        Case("stats.multivariate_normal.logpdf",
             lambda x, m, a: mvn.logpdf(x, m, cov(a)), (xs, mean, cov_factor), argnums=(0, 1, 2),
             ref=lambda x, m, a: sst.multivariate_normal.logpdf(x, m, cov(a))),
        Case("stats.multivariate_normal.pdf",
             lambda x, m, a: mvn.pdf(x, m, cov(a)), (xs[0], mean, cov_factor), argnums=(0, 1, 2),
             ref=lambda x, m, a: sst.multivariate_normal.pdf(x, m, cov(a))),
        Case("stats.multivariate_normal.logpdf", mvn.logpdf, (xs, mean, alpha), argnums=(0, 1, 2),
             ref=sst.multivariate_normal.logpdf, label="diagonal"),
        Case("stats.multivariate_normal.entropy", lambda m, a: mvn.entropy(m, cov(a)),
             (mean, cov_factor), argnums=(1,),
             ref=lambda m, a: sst.multivariate_normal.entropy(m, cov(a))),
    ]


CASES = [] if sst is None else _cases()
