"""``odeint``: the primitive ``odeint_args``, its adjoint (reverse) and forward
sensitivity rules, both solved by ``odeint_args`` itself."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as _np
import scipy.integrate as _si

from ..._core import reverse
from ..._core.replay import subvals
from ..._core.rule_table import primitive_vjps
from ..._core.rules import defjvp_argnums
from ..._core.tracer import getval, primitive
from ...numpy import numpy_wrapper as anp
from ...numpy.rules._helpers import match_dtype
from ._lifting import _array_valued, _check_lifted, _FrontEnd, _lift
from ._sensitivity import _compiled, _concat, _split, sensitivity_system

_SOLVER_KWARGS = (
    "rtol",
    "atol",
    "hmax",
    "hmin",
    "mxstep",
    "h0",
    "tcrit",
    "ixpr",
    "mxhnil",
    "mxordn",
    "mxords",
    "tfirst",
)


# LSODA's own answers for a solve that finished (istate 2 and 1); the others are failures,
# for which SciPy warns and returns what it reached
_FINISHED = ("Integration successful.", "Nothing was done; the integration time was 0.")


class Solve:
    """What ``odeint_args`` learns of a solve: ``failure``, LSODA's message where it failed
    (else None). The user's solve keeps SciPy's answer (a warning and the values reached)
    and its derivatives refuse it; a derivative's own solve, ``of`` the solve it
    differentiates, raises where either failed (a jit program replays that solve first)."""

    def __init__(self, of: Solve | None = None):
        self.failure: str | None = None
        self.of = of

    def refuse_failed(self) -> None:
        failed = self.failure if self.of is None else self.of.failure
        if failed is not None:
            raise RuntimeError(
                f"chainrule.scipy.integrate.odeint: the forward solve failed ({failed}), so "
                f"its result is not a solution and has no derivative. Loosen rtol/atol, "
                f"raise mxstep, or end t before the solution blows up.")
        if self.failure is not None:
            raise RuntimeError(
                f"chainrule.scipy.integrate.odeint: an adjoint or sensitivity solve failed "
                f"({self.failure}); loosen rtol/atol or raise mxstep.")


@primitive
def odeint_args(func, y0, t, *args, solve: Solve | None = None, **kwargs):
    """SciPy's odeint with the extra arguments of ``func`` passed positionally (traced);
    ``solve`` learns whether it failed (see ``Solve``)."""
    ys, info = _si.odeint(func, y0, t, args=args, full_output=True, **kwargs)
    if solve is not None:
        solve.failure = None if info["message"] in _FINISHED else info["message"]
        if solve.of is not None:
            solve.refuse_failed()
    return ys


def odeint(func: Callable, y0: Any, t: Any, args: Any = (), **kwargs: Any) -> Any:
    """``scipy.integrate.odeint``, differentiable w.r.t. y0, t and args.

    ``args`` may hold containers of arrays (a list of layers' weights, a dict...): their
    leaves are differentiated, as autograd's odeint does; so are the traced values ``func``
    closes over (closure variables, default arguments)."""
    unsupported = set(kwargs) - set(_SOLVER_KWARGS)
    if unsupported:
        raise TypeError(
            f"chainrule.scipy.integrate.odeint does not support "
            f"{', '.join(sorted(unsupported))} (Dfun, full_output...): only the "
            f"solver tolerances and step controls {', '.join(_SOLVER_KWARGS)}."
        )
    if not isinstance(args, tuple):
        args = (args,)
    # the traced leaves of args and of func's closure become odeint_args' parameters
    front = _FrontEnd()
    pure, params = _lift(func, args, front)
    pure = _array_valued(pure)
    y0, t = front.unwrap((y0, t))
    lead = (_np.asarray(getval(y0)), _np.asarray(getval(t))[0])
    _check_lifted("odeint", pure, lead[::-1] if kwargs.get("tfirst") else lead, params)
    return front.answer(odeint_args(pure, y0, t, *params, solve=Solve(), **kwargs))


def _with_params(func, args, traced):
    """``f(y, t, params)``: func with the extra arguments at ``traced`` replaced by
    ``params``."""

    def f(y, s, params):
        return func(y, s, *subvals(args, zip(traced, params)))

    return f


def _plain(func, kwargs):
    """``func`` as f(y, t, *args) whatever the caller's ``tfirst``."""
    if kwargs.get("tfirst"):
        return lambda y, t, *a: func(t, y, *a)
    return func


def _kwargs_with_tfirst(kwargs):
    """The keywords of a derivative's own solve: without tfirst (its systems take y first),
    refusing a failure of its own or of the solve it differentiates."""
    kw = dict(kwargs)
    kw.pop("tfirst", None)
    solved = kw.get("solve")
    if solved is not None:
        solved.refuse_failed()
    kw["solve"] = Solve(of=solved)
    return kw


# The derivative passes below are written with chainrule operations, odeint_args itself
# included (its augmented systems are differentiated by chainrule inside SciPy's calls),
# so derivatives of every order, in both modes, come from the same two rules.


# ----------------------------------------------------------------------------- reverse mode
def _odeint_vjp(g, argnums, ans, args, kwargs):
    """Cotangents of y0, t, args by the adjoint ODE, solved backwards segment by segment."""
    func, y0, t, *params = args
    func, kw = _plain(func, kwargs), _kwargs_with_tfirst(kwargs)
    traced = tuple(i - 3 for i in argnums if i >= 3)
    ys = anp.reshape(ans, (len(getval(t)), -1))
    g = anp.reshape(g, anp.shape(ys))
    d = anp.shape(ys)[1]
    f_params = _with_params(func, params, traced)
    n_params = sum(int(_np.size(getval(params[i]))) for i in traced)

    def adjoint(state, s, *all_params):
        y, a = state[:d], state[d : 2 * d]
        f = _with_params(func, all_params, traced)
        vjp, fy = reverse.make_vjp(
            lambda yp: f(yp[0], s, yp[1]), (y, [all_params[i] for i in traced])
        )
        ybar, pbars = vjp(-a)
        return _concat([fy, ybar, *pbars])

    augmented = _compiled(adjoint, time_first=False)

    a = g[-1]
    pbar = _np.zeros(n_params)
    tbars = []
    for i in range(len(getval(t)) - 1, 0, -1):
        tbars.append(anp.dot(g[i], anp.ravel(func(ys[i], t[i], *params))))
        state = _concat([ys[i], a, pbar])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # func may not depend on some argument
            end = odeint_args(augmented, state, anp.stack([t[i], t[i - 1]]), *params, **kw)[-1]
        a, pbar = end[d : 2 * d], end[2 * d :]
        if i > 1:
            a = a + g[i - 1]
    tbars.append(-anp.dot(a, anp.ravel(f_params(ys[0], t[0], [params[i] for i in traced]))))
    ybar = a + g[0]
    by_param = dict(zip(traced, _split(pbar, [params[i] for i in traced])))
    out = []
    for i in argnums:
        if i == 1:
            out.append(match_dtype(anp.reshape(ybar, _np.shape(getval(y0))), y0))
        elif i == 2:
            out.append(match_dtype(anp.stack(tbars[::-1]), t))
        else:
            out.append(match_dtype(by_param[i - 3], params[i - 3]))
    return tuple(out)


primitive_vjps[odeint_args] = _odeint_vjp


# ----------------------------------------------------------------------------- forward mode
def _odeint_jvp(argnums, tangents, ans, args, kwargs):
    """Tangent by the forward sensitivity s: ds/dt = df/dy s + df/dargs dargs."""
    func, y0, t, *params = args
    func, kw = _plain(func, kwargs), _kwargs_with_tfirst(kwargs)
    tangents = dict(zip(argnums, tangents))
    traced = tuple(i - 3 for i in argnums if i >= 3)
    ys = anp.reshape(ans, (len(getval(t)), -1))
    d = anp.shape(ys)[1]
    dparams = [tangents[i + 3] for i in traced]
    dt = tangents.get(2)
    augmented, s0 = sensitivity_system(
        lambda s, y, *p: func(y, s, *p), t[0], ys[0], params, traced, tangents.get(1), dt,
        time_first=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # func may not depend on some argument
        sens = odeint_args(augmented, _concat([ys[0], s0]), t, *params, *dparams, **kw)[:, d:]
    if dt is not None:
        f_all = anp.stack([anp.ravel(func(ys[k], t[k], *params)) for k in range(len(getval(t)))])
        sens = sens + f_all * anp.reshape(dt, (-1, 1))
    return match_dtype(anp.reshape(sens, anp.shape(ans)), ans)


defjvp_argnums(odeint_args, _odeint_jvp)


