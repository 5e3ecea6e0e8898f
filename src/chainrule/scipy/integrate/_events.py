"""``solve_ivp``'s events: each event time t* an implicit solution of
g(t*, y(t*), args) = 0, differentiated by the implicit function theorem."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as _np

from ..._core.tracer import getval
from ...numpy import numpy_wrapper as anp
from ..optimize._driver import implicit_solution
from ._forward import _Forward
from ._ivp_values import ivp_values


# ----------------------------------------------------------------------------- events
def _as_event_list(events) -> list:
    if events is None:
        return []
    return list(events) if isinstance(events, (list, tuple)) else [events]


def _plain_event(event: Callable, pure: Callable, params: list) -> Callable:
    """The event as SciPy calls it (on plain values), with its ``terminal`` and
    ``direction``."""
    plain_params = [getval(p) for p in params]

    def plain(t, y):
        return getval(pure(t, y, *plain_params))

    for attribute in ("terminal", "direction"):
        if hasattr(event, attribute):
            setattr(plain, attribute, getattr(event, attribute))
    return plain


def _traced_events(system, lifted_events, sol, failure) -> tuple[list, list]:
    """``t_events`` and ``y_events`` as traced values: each event time t* is the implicit
    solution of g(t*, y(t*; theta), theta) = 0, so
    dt*/dtheta = -(dg/dtheta + dg/dy dy(t*)/dtheta) / (dg/dt + dg/dy f(t*, y*)), and
    y(t*) is the solution at that (traced) time."""
    pure, t0, y0, params, method, options = system
    t_events, y_events = [], []
    for (event, event_params), times, states in zip(lifted_events, sol.t_events, sol.y_events):
        ts, ys = [], []
        for t_star, y_star in zip(times, states):
            inputs = (_np.array([getval(t0), t_star]), y0, params)
            solved = _Forward(_np.reshape(y_star, (-1, 1)), sol.sol, failure, inputs)
            t = _event_time(system, event, event_params, t_star, solved)
            ts.append(t)
            ys.append(
                ivp_values(
                    pure,
                    anp.stack([t0, t]),
                    y0,
                    *params,
                    method=method,
                    options=options,
                    solved=solved,
                )[:, 0]
            )
        t_events.append(anp.stack(ts) if ts else _np.asarray(times))
        y_events.append(anp.stack(ys) if ys else _np.asarray(states))
    return t_events, y_events


def _event_time(system, event: Callable, event_params: list, t_star: float, solved: _Forward):
    pure, t0, y0, params, method, options = system

    def residual(x, p):
        start, y_start, ivp_params, g_params = p
        # (at t* itself, where the derivative rules evaluate it, y is the forward solve's)
        y = ivp_values(
            pure,
            anp.stack([start, x[0]]),
            y_start,
            *ivp_params,
            method=method,
            options=options,
            solved=solved,
        )[:, 0]
        return anp.reshape(event(x[0], y, *g_params), (1,))

    def solve(p):
        return _np.array([t_star]), None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the event may not depend on every parameter
        t = implicit_solution(
            "chainrule.scipy.integrate.solve_ivp (an event time)",
            residual,
            solve,
            (t0, y0, list(params), list(event_params)),
        ).x
    return t[0]


def _terminal_time(event_list: list, sol, t_events: list):
    """The traced time of the terminal event that stopped the solve at ``sol.t[-1]``."""
    for event, plain_times, traced in zip(event_list, sol.t_events, t_events):
        if getattr(event, "terminal", False) and len(plain_times) and plain_times[-1] == sol.t[-1]:
            return traced[-1]
    return sol.t[-1]


