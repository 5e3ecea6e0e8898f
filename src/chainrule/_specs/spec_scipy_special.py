"""Specs for chainrule.scipy.special: primal equals SciPy's, derivatives in both modes."""


from . import Case, binary, make, unary

try:
    import scipy.special as ssp

    import chainrule.scipy.special as sp
except ImportError:  # SciPy is optional: no cases without it
    ssp = None

ONE = [(3,)]


def _fixed(name, fun, ref, x, order=2):
    """A function of x with its other arguments (orders, shape parameters) fixed."""
    return Case(name, fun, (x,), ref=ref, order=order, label="fixed")


def _cases():
    x = make((3,), low=0.3, high=2.5)
    unit = make((3,), low=0.1, high=0.9)
    return [
        # gamma and beta
        *unary("gamma", sp.gamma, ssp.gamma, low=0.3, high=3.0),
        *unary("gammaln", sp.gammaln, ssp.gammaln, low=0.3, high=3.0),
        *unary("rgamma", sp.rgamma, ssp.rgamma, low=0.3, high=3.0, shapes=ONE),
        *unary("digamma", sp.digamma, ssp.digamma, low=0.3, high=3.0, shapes=ONE),
        *unary("psi", sp.psi, ssp.psi, low=0.3, high=3.0, shapes=[()]),
        _fixed("polygamma", lambda x: sp.polygamma(2, x), lambda x: ssp.polygamma(2, x), x),
        _fixed("multigammaln", lambda a: sp.multigammaln(a, 3), lambda a: ssp.multigammaln(a, 3),
               make((), low=2.0, high=3.0)),
        *binary("beta", sp.beta, ssp.beta, low=0.5, high=2.5),
        *binary("betaln", sp.betaln, ssp.betaln, low=0.5, high=2.5),
        _fixed("betainc", lambda x: sp.betainc(1.5, 2.5, x), lambda x: ssp.betainc(1.5, 2.5, x),
               unit),
        _fixed("gammainc", lambda x: sp.gammainc(1.7, x), lambda x: ssp.gammainc(1.7, x), x),
        _fixed("gammaincc", lambda x: sp.gammaincc(1.7, x), lambda x: ssp.gammaincc(1.7, x), x),
        Case("gammasgn", sp.gammasgn, (make((3,), low=-2.5, high=2.5),), ref=ssp.gammasgn,
             argnums=()),
        # error function and the normal distribution
        *unary("erf", sp.erf, ssp.erf),
        *unary("erfc", sp.erfc, ssp.erfc, shapes=ONE),
        *unary("erfinv", sp.erfinv, ssp.erfinv, low=-0.8, high=0.8),
        *unary("erfcinv", sp.erfcinv, ssp.erfcinv, low=0.2, high=1.8, shapes=ONE),
        *unary("ndtr", sp.ndtr, ssp.ndtr, shapes=ONE),
        *unary("log_ndtr", sp.log_ndtr, ssp.log_ndtr, low=-6.0, high=3.0, shapes=ONE),
        *unary("ndtri", sp.ndtri, ssp.ndtri, low=0.1, high=0.9, shapes=ONE),
        _fixed("stdtr", lambda t: sp.stdtr(3.5, t), lambda t: ssp.stdtr(3.5, t), make((3,))),
        # logistic and logarithms
        *unary("expit", sp.expit, ssp.expit),
        *unary("logit", sp.logit, ssp.logit, low=0.1, high=0.9),
        *unary("log_expit", sp.log_expit, ssp.log_expit, shapes=ONE),
        *unary("log1p", sp.log1p, ssp.log1p, low=-0.5, high=2.0, shapes=ONE),
        *unary("expm1", sp.expm1, ssp.expm1, shapes=ONE),
        *unary("entr", sp.entr, ssp.entr, low=0.2, high=2.0, shapes=ONE),
        *binary("xlogy", sp.xlogy, ssp.xlogy, low=0.3, high=2.0),
        *binary("xlog1py", sp.xlog1py, ssp.xlog1py, low=0.3, high=2.0, pairs=[((3,), (3,))]),
        *binary("rel_entr", sp.rel_entr, ssp.rel_entr, low=0.3, high=2.0, pairs=[((2, 3), (3,))]),
        *binary("kl_div", sp.kl_div, ssp.kl_div, low=0.3, high=2.0, pairs=[((2, 3), (3,))]),
        # Bessel functions
        *unary("i0", sp.i0, ssp.i0, shapes=ONE),
        *unary("i1", sp.i1, ssp.i1, shapes=ONE),
        _fixed("iv", lambda x: sp.iv(1.5, x), lambda x: ssp.iv(1.5, x), x),
        _fixed("ive", lambda x: sp.ive(1.5, x), lambda x: ssp.ive(1.5, x), make((3,), low=-2.0)),
        *unary("j0", sp.j0, ssp.j0, shapes=ONE),
        *unary("j1", sp.j1, ssp.j1, shapes=ONE),
        _fixed("jn", lambda x: sp.jn(2, x), lambda x: ssp.jn(2, x), x),
        _fixed("jv", lambda x: sp.jv(0.5, x), lambda x: ssp.jv(0.5, x), x),
        *unary("y0", sp.y0, ssp.y0, low=0.5, high=3.0, shapes=ONE),
        *unary("y1", sp.y1, ssp.y1, low=0.5, high=3.0, shapes=ONE),
        _fixed("yn", lambda x: sp.yn(2, x), lambda x: ssp.yn(2, x), x + 0.5),
        # reductions over axes
        *[Case("logsumexp", sp.logsumexp, (make((2, 3)),), dict(axis=ax, keepdims=kd),
               ref=ssp.logsumexp) for ax in (None, 0, -1) for kd in (False, True)],
        Case("logsumexp", lambda a, b: sp.logsumexp(a, axis=1, b=b), (make((2, 3)), make((3,))),
             argnums=(0, 1), ref=lambda a, b: ssp.logsumexp(a, axis=1, b=b), label="b"),
        Case("logsumexp", lambda a, b: sp.logsumexp(a, b=b, return_sign=True)[0],
             (make((2, 3)), make((2, 3), low=-1.0, high=0.5)), argnums=(0, 1),
             ref=lambda a, b: ssp.logsumexp(a, b=b, return_sign=True)[0], label="sign"),
        *[Case("softmax", sp.softmax, (make((2, 3)),), dict(axis=ax), ref=ssp.softmax)
          for ax in (None, 0, 1)],
        *[Case("log_softmax", sp.log_softmax, (make((2, 3)),), dict(axis=ax),
               ref=ssp.log_softmax) for ax in (None, -1)],
    ]


CASES = [] if ssp is None else _cases()
