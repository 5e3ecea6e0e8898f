"""``quad``: the limits by Leibniz's rule, the integrand's parameters by integrating the
integrand's derivative."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as _np
import scipy.integrate as _si

from ..._core import forward, reverse
from ..._core.pytree import tree_map
from ..._core.rule_table import primitive_vjps
from ..._core.rules import defjvp_argnums
from ..._core.tracer import decided, derivative_free, getval, primitive
from ...numpy import numpy_wrapper as anp
from ...numpy.rules._helpers import match_dtype
from .._closure import holds_traced
from ._forward import _Forward
from ._lifting import _check_lifted, _FrontEnd, _lift
from ._sensitivity import _concat, _flat_params, _split, _with_traced

# ----------------------------------------------------------------------------- quad
_QUAD_OPTIONS = ("epsabs", "epsrel", "limit", "points")


@primitive
def quad_value(func, a, b, *params, options=None, vector=False, solved=None):
    """The integral of func(x, *params) over [a, b] (``quad``; ``quad_vec`` for a
    vector-valued func, as the integrands of the derivative rules are)."""
    if solved is not None and solved.answers(a, b, params):
        solved.last_abserr = solved.abserr
        return solved.values
    options = options or {}
    if vector:
        return _si.quad_vec(lambda x: func(x, *params), a, b, **options)[0]
    value, abserr = _si.quad(func, a, b, args=tuple(params), **options)[:2]
    if solved is not None:  # (a program chainrule.jit emits solves again: see _abserr)
        solved.last_abserr = abserr
    return value


@primitive
def _abserr(value, *, solved: _Forward) -> float:
    """quad's error estimate for the solve that answered ``value``: a function of it, so
    that under chainrule.jit each call's is read (no derivative: ``value`` is
    derivative-free)."""
    return solved.last_abserr


def _finite_limit(limit):
    if not anp.isfinite(derivative_free(limit)):  # (under chainrule.jit, a guarded answer)
        raise ValueError(
            "chainrule.scipy.integrate.quad: an infinite limit cannot be "
            "differentiated (the integrand's value there is not defined); "
            "pass it as a plain float."
        )
    return limit


def _quad_vjp(g, argnums, ans, args, kwargs):
    """d/da = -f(a), d/db = f(b) (Leibniz); d/dparams = the integral of df/dparams."""
    func, a, b, *params = args
    traced = [i - 3 for i in argnums if i >= 3]
    by_param = {}
    if traced:

        def integrand(x, *params_and_g):  # g is passed on: it may be traced (2nd order)
            all_params, cotangent = params_and_g[:-1], params_and_g[-1]
            vjp, _ = reverse.make_vjp(
                lambda ps: func(x, *_with_traced(all_params, traced, ps)),
                _flat_params(all_params, traced),
            )
            return _concat(vjp(cotangent))

        total = quad_value(integrand, a, b, *params, g, options=kwargs.get("options"), vector=True)
        by_param = dict(zip(traced, _split(total, _flat_params(params, traced))))
    out = []
    for i in argnums:
        if i == 1:
            out.append(match_dtype(-anp.sum(g * func(_finite_limit(a), *params)), a))
        elif i == 2:
            out.append(match_dtype(anp.sum(g * func(_finite_limit(b), *params)), b))
        else:
            out.append(match_dtype(by_param[i - 3], params[i - 3]))
    return tuple(out)


def _quad_jvp(argnums, tangents, ans, args, kwargs):
    func, a, b, *params = args
    tangents = dict(zip(argnums, tangents))
    traced = [i - 3 for i in argnums if i >= 3]
    out = 0.0
    if traced:

        def integrand(x, *params_and_dparams):
            all_params, dps = (params_and_dparams[: len(params)], params_and_dparams[len(params) :])
            return forward.make_jvp(
                lambda ps: func(x, *_with_traced(all_params, traced, ps)),
                _flat_params(all_params, traced),
            )(list(dps))[1]

        out = quad_value(
            integrand,
            a,
            b,
            *params,
            *[tangents[i + 3] for i in traced],
            options=kwargs.get("options"),
            vector=kwargs.get("vector", False),
        )
    if 1 in tangents:
        out = out - func(_finite_limit(a), *params) * tangents[1]
    if 2 in tangents:
        out = out + func(_finite_limit(b), *params) * tangents[2]
    return match_dtype(out, ans)


primitive_vjps[quad_value] = _quad_vjp
defjvp_argnums(quad_value, _quad_jvp)


def _quad_options(kwargs: dict) -> dict:
    """``quad``'s options as SciPy takes them. The tolerances, ``limit`` and ``points``
    (where the integrand is hard) only guide the quadrature, the integral does not move
    with them: a traced one is read as its value (under chainrule.jit, a guarded one).
    Any other (a weight's ``wvar``...) changes the integral and has no derivative rule:
    a traced one is refused, naming it."""
    out = {}
    for key, value in kwargs.items():
        if key in _QUAD_OPTIONS:
            value = tree_map(lambda leaf: decided(leaf, getval), value)
        elif holds_traced(value):
            raise TypeError(
                f"chainrule.scipy.integrate.quad: {key}= is traced, but the integral "
                f"depends on it and chainrule has no derivative rule for it. Pass a plain "
                f"value, or write its effect into func (e.g. weight='cos', wvar=w as "
                f"lambda x: f(x) * np.cos(w * x)), where it is differentiated."
            )
        out[key] = value
    return out


def quad(func: Callable, a: Any, b: Any, args: Any = (), **kwargs: Any) -> Any:
    """``scipy.integrate.quad``, differentiable w.r.t. the limits (Leibniz rule) and the
    traced values ``func`` receives in ``args`` or closes over (the integral of the
    integrand's derivative, by another ``quad``). Returns ``(value, abserr)`` with a
    traced value; with something traced, only ``epsabs``, ``epsrel``, ``limit`` and
    ``points`` are accepted (weights and ``full_output`` have no derivative rule)."""
    args = args if isinstance(args, tuple) else (args,)
    front = _FrontEnd()
    pure, params = _lift(func, args, front)
    a, b = front.unwrap((a, b))
    kwargs = _quad_options(front.unwrap(kwargs))
    if not params and not holds_traced(a, b) and front.wrap is None:
        try:
            return _si.quad(func, a, b, args=args, **kwargs)
        except TypeError:
            _check_lifted("quad", pure, (0.5 * (a + b) if _np.isfinite(a + b) else 0.0,), params)
            raise
    unsupported = set(kwargs) - set(_QUAD_OPTIONS)
    if unsupported:
        raise TypeError(
            f"chainrule.scipy.integrate.quad: {', '.join(sorted(unsupported))} "
            f"cannot be used with traced inputs; only {', '.join(_QUAD_OPTIONS)}."
        )
    plain_params = [getval(p) for p in params]
    a_value, b_value = getval(a), getval(b)
    _check_lifted("quad", pure, (a_value if _np.isfinite(a_value) else 0.0,), params)
    value, abserr = _si.quad(pure, a_value, b_value, args=tuple(plain_params), **kwargs)
    solved = _Forward(value, None, None, (a_value, b_value, plain_params))
    solved.abserr = solved.last_abserr = abserr
    value = quad_value(pure, a, b, *params, options=kwargs, solved=solved)
    return front.answer(value), _abserr(derivative_free(value), solved=solved)
