"""chainrule.scipy.special: SciPy's special functions with derivatives.

The names in DIFFERENTIABLE are primitives whose rules live in
``chainrule.scipy.rules.special``; NONDIFFERENTIABLE ones accept traced values
and return plain results. Every other name is SciPy's own object.

Arguments without a closed-form derivative raise a clear error when
differentiated: the real order ``v`` of ``iv``/``ive``, the shape parameters
``a``, ``b`` of ``betainc`` and ``a`` of ``gammainc``/``gammaincc``, and ``df``
of ``stdtr``. Integer orders (``polygamma``'s n, ``jn``/``yn``'s n,
``multigammaln``'s d) are discrete: they get no gradient.
"""

from __future__ import annotations

import scipy.special as _sp

from .._core.tracer import notrace_primitive, primitive
from ..numpy import _namespace

# fmt: off
DIFFERENTIABLE = """
    gamma gammaln rgamma digamma psi polygamma multigammaln beta betaln betainc
    gammainc gammaincc erf erfc erfinv erfcinv expit logit log_expit i0 i1 iv ive
    j0 j1 jn jv y0 y1 yn ndtr ndtri log_ndtr stdtr xlogy xlog1py entr rel_entr kl_div
    log1p expm1
""".split()
NONDIFFERENTIABLE = "gammasgn".split()
# fmt: on

# ----------------------------------------------------------------------------- with axes
# Functions whose optional array arguments are keywords in SciPy take them
# positionally here, so that they are traced.

@primitive
def logsumexp_b(a, b, axis=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))`` over ``axis``; ``b=None`` means ones. A negative sum gives
    nan as in SciPy, or with ``return_sign`` the log of its magnitude."""
    if return_sign:
        return _sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)[0]
    return _sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims)


@notrace_primitive
def _logsumexp_sign(a, b, axis=None, keepdims=False):
    return _sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)[1]


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``scipy.special.logsumexp``, differentiable w.r.t. ``a`` and ``b``."""
    out = logsumexp_b(a, b, axis=axis, keepdims=keepdims, return_sign=return_sign)
    return (out, _logsumexp_sign(a, b, axis=axis, keepdims=keepdims)) if return_sign else out


@primitive
def softmax(x, axis=None):
    return _sp.softmax(x, axis=axis)


@primitive
def log_softmax(x, axis=None):
    return _sp.log_softmax(x, axis=axis)


# scipy.special.f(box) dispatches to the primitive too
_namespace.install(
    globals(), _sp, {**_namespace.primitives(_sp, DIFFERENTIABLE),
                     **_namespace.primitives(_sp, NONDIFFERENTIABLE, notrace_primitive)},
    dispatch=DIFFERENTIABLE)
