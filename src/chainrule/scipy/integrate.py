"""chainrule.scipy.integrate: ``odeint`` with derivatives by the adjoint method.

``odeint(func, y0, t, args=())`` solves dy/dt = func(y, t, *args) with SciPy's
odeint. Its derivatives never go through the solver's internal steps:

- reverse mode solves the adjoint ODE backwards in time, segment by segment
  between the output times, for the state y, the adjoint a (da/dt = -a df/dy)
  and the parameter integrals (dp/dt = -a df/dargs); the cotangent of each output
  time t_i is g_i . f(y_i, t_i), and that of t_0 is -a(t_0) . f(y_0, t_0);
- forward mode integrates the forward sensitivity s (ds/dt = df/dy s +
  df/dargs dargs) from s(t_0) = dy0 - f(y_0, t_0) dt_0; the output tangent is
  s(t_i) + f(y_i, t_i) dt_i.

``func`` must be written with chainrule.numpy (it is differentiated by
chainrule). Gradients are exact up to the solver's tolerances (``rtol``,
``atol`` are passed on to every solve). Derivatives of order 2 and above are
not available: the adjoint and sensitivity solves are themselves SciPy calls,
and differentiating them raises an error that says so.
"""

from __future__ import annotations

import warnings

import numpy as _np
import scipy.integrate as _si

from .._core import forward, reverse
from .._core.reverse import primitive_vjps
from .._core.rules import defjvp_argnums
from .._core.tracer import primitive
from ..numpy.rules._helpers import match_dtype

for _name in dir(_si):
    if not _name.startswith("_"):
        globals()[_name] = getattr(_si, _name)

_SOLVER_KWARGS = ("rtol", "atol", "hmax", "hmin", "mxstep", "h0", "tcrit", "ixpr", "mxhnil",
                  "mxordn", "mxords", "tfirst")


@primitive
def odeint_args(func, y0, t, *args, **kwargs):
    """SciPy's odeint with the extra arguments of ``func`` passed positionally (traced)."""
    return _si.odeint(func, y0, t, args=args, **kwargs)


def odeint(func, y0, t, args=(), **kwargs):
    """``scipy.integrate.odeint``, differentiable w.r.t. y0, t and args."""
    unsupported = set(kwargs) - set(_SOLVER_KWARGS)
    if unsupported:
        raise TypeError(f"chainrule.scipy.integrate.odeint does not support "
                        f"{', '.join(sorted(unsupported))} (Dfun, full_output...): only the "
                        f"solver tolerances and step controls {', '.join(_SOLVER_KWARGS)}.")
    if not isinstance(args, tuple):
        args = (args,)
    return odeint_args(func, y0, t, *args, **kwargs)


def _flat(values):
    return _np.concatenate([_np.ravel(v) for v in values]) if values else _np.zeros(0)


def _unflat(vector, like):
    out, start = [], 0
    for v in like:
        n = _np.size(v)
        out.append(_np.reshape(vector[start:start + n], _np.shape(v)))
        start += n
    return out


def _with_params(func, args, traced):
    """``f((y, params), t)``: func with the traced extra arguments replaced by ``params``."""

    def f(y_and_params, s):
        y, ps = y_and_params
        full = list(args)
        for i, p in zip(traced, ps):
            full[i] = p
        return func(y, s, *full)

    return f


# ----------------------------------------------------------------------------- reverse mode
@primitive
def odeint_adjoint(g, func, y0, t, traced, *args, **kwargs):
    """Cotangents (y0, t, args[i] for i in traced) of odeint(func, y0, t, args) for g."""
    ys = _si.odeint(func, y0, t, args=args, **kwargs)
    g = _np.reshape(g, ys.shape)
    d = ys.shape[1]
    params = [_np.asarray(args[i], dtype=float) for i in traced]
    f_params = _with_params(func, args, traced)

    def augmented(state, s):
        y, a = state[:d], state[d:2 * d]
        vjp, fy = reverse.make_vjp(lambda yp: f_params(yp, s), (y, params))
        ybar, pbars = vjp(-a)
        return _np.concatenate([_np.ravel(fy), _np.ravel(ybar), _flat(pbars)])

    def f_value(y, s):
        return _np.ravel(func(y, s, *args))

    a = g[-1]
    pbar = _np.zeros(sum(_np.size(p) for p in params))
    tbar = _np.zeros(len(t))
    for i in range(len(t) - 1, 0, -1):
        tbar[i] = _np.dot(g[i], f_value(ys[i], t[i]))
        state = _np.concatenate([ys[i], a, pbar])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # func may not depend on some argument
            end = _si.odeint(augmented, state, [t[i], t[i - 1]], **kwargs)[-1]
        a, pbar = end[d:2 * d], end[2 * d:]
        if i > 1:
            a = a + g[i - 1]
    tbar[0] = -_np.dot(a, f_value(ys[0], t[0]))
    return (a + g[0], tbar, *_unflat(pbar, params))


def _odeint_vjp(g, argnums, ans, args, kwargs):
    func, y0, t, *params = args
    traced = tuple(i - 3 for i in argnums if i >= 3)
    kw = _kwargs_with_tfirst(kwargs)
    ybar, tbar, *pbars = odeint_adjoint(g, _plain(func, kwargs), y0, t, traced, *params, **kw)
    by_param = dict(zip(traced, pbars))
    out = []
    for i in argnums:
        if i == 1:
            out.append(match_dtype(_np.reshape(ybar, _np.shape(y0)) if _np.ndim(y0) != 1
                                   else ybar, y0))
        elif i == 2:
            out.append(match_dtype(tbar, t))
        else:
            out.append(match_dtype(by_param[i - 3], params[i - 3]))
    return tuple(out)


def _plain(func, kwargs):
    """``func`` as f(y, t, *args) whatever the caller's ``tfirst``."""
    if kwargs.get("tfirst"):
        return lambda y, t, *a: func(t, y, *a)
    return func


def _kwargs_with_tfirst(kwargs):
    kw = dict(kwargs)
    kw.pop("tfirst", None)
    return kw


primitive_vjps[odeint_args] = _odeint_vjp


# ----------------------------------------------------------------------------- forward mode
@primitive
def odeint_tangent(func, y0, t, *values, tangent_argnums, traced, **kwargs):
    """Tangent of odeint(func, y0, t, args) given ``values`` = tangents, then args.

    ``tangent_argnums`` says whose tangents they are: y0 (1), t (2), args[i] (3 + i).
    """
    n = len(tangent_argnums)
    tangents, args = dict(zip(tangent_argnums, values[:n])), values[n:]
    ys = _si.odeint(func, y0, t, args=args, **kwargs)
    d = ys.shape[1]
    dy0 = tangents.get(1)
    dt = tangents.get(2)
    dparams = [_np.asarray(tangents[i + 3], dtype=float) for i in traced]
    params = [_np.asarray(args[i], dtype=float) for i in traced]
    f_params = _with_params(func, args, traced)

    def augmented(state, s):
        y, sens = state[:d], state[d:]
        fy, dfy = forward.make_jvp(lambda yp: f_params(yp, s), (y, params))((sens, dparams))
        return _np.concatenate([_np.ravel(fy), _np.ravel(dfy) * _np.ones(d)])

    f0 = _np.ravel(func(ys[0], t[0], *args))
    s0 = _np.zeros(d) if dy0 is None else _np.ravel(dy0).astype(float)
    if dt is not None:
        s0 = s0 - f0 * dt[0]
    sens = _si.odeint(augmented, _np.concatenate([ys[0], s0]), t, **kwargs)[:, d:]
    if dt is not None:
        f_all = _np.stack([_np.ravel(func(y, s, *args)) for y, s in zip(ys, t)])
        sens = sens + f_all * _np.reshape(dt, (-1, 1))
    return sens


def _odeint_jvp(argnums, tangents, ans, args, kwargs):
    func, y0, t, *params = args
    traced = tuple(i - 3 for i in argnums if i >= 3)
    out = odeint_tangent(_plain(func, kwargs), y0, t, *tangents, *params,
                         tangent_argnums=tuple(argnums), traced=traced,
                         **_kwargs_with_tfirst(kwargs))
    return match_dtype(out, ans)


defjvp_argnums(odeint_args, _odeint_jvp)


# ----------------------------------------------------------------------------- no higher order
def _no_higher_order(*args, **kwargs):
    raise NotImplementedError(
        "Second and higher derivatives of chainrule.scipy.integrate.odeint are not available: "
        "its adjoint and sensitivity equations are solved by SciPy. Use first derivatives, or "
        "differentiate a solver written with chainrule.numpy."
    )


for _fun in (odeint_adjoint, odeint_tangent):
    primitive_vjps[_fun] = _no_higher_order
    forward.primitive_jvps[_fun] = _no_higher_order
