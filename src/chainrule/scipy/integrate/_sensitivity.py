"""What odeint's and solve_ivp's derivative rules share: the augmented systems' flat
state (concatenated and split), the compiled right-hand sides, the traced parameters, and
the forward-sensitivity system both forward-mode rules solve."""

from __future__ import annotations

from collections.abc import Callable

import numpy as _np

from ..._core import forward
from ..._core.tracer import getval, isbox
from ...numpy import numpy_wrapper as anp
from .._staged import Staged


def _concat(parts):
    return anp.concatenate([anp.ravel(p) for p in parts]) if parts else _np.zeros(0)


def _split(vector, like):
    out, start = [], 0
    for v in like:
        n = int(_np.size(getval(v)))
        out.append(anp.reshape(vector[start : start + n], _np.shape(getval(v))))
        start += n
    return out


def _compiled(rhs: Callable, time_first: bool) -> Callable:
    """``rhs`` (an augmented system of a derivative rule) run through ``Staged``: SciPy
    calls it on plain values, so it runs compiled; a derivative of that rule traces
    through it (Staged runs it eagerly on traced arguments). The time is made float64
    (SciPy passes floats of either kind)."""
    staged = Staged(rhs)
    if time_first:
        return lambda t, state, *rest: staged(t if isbox(t) else _np.float64(t), state, *rest)
    return lambda state, t, *rest: staged(state, t if isbox(t) else _np.float64(t), *rest)


def _flat_params(params, traced) -> list:
    return [params[i] for i in traced]


def _with_traced(params, traced, values) -> list:
    full = list(params)
    for i, v in zip(traced, values):
        full[i] = v
    return full




def sensitivity_system(rhs, t0, y0, params, traced, dy0, dt0, *, time_first: bool):
    """The forward sensitivity s of dy/dt = rhs(t, y, *params) solved with y:
    ds/dt = df/dy s + df/dparams dparams. Returns the compiled right-hand side of [y, s],
    called with the time and the state in the solver's order (``time_first``), then
    ``params``, then the tangents of ``params[traced]``; and s(t0) = dy0 - f(t0, y0) dt0
    (the start moves with t0; ``dy0``, ``dt0``: None where not traced)."""
    n, n_params = int(_np.size(getval(y0))), len(params)

    def sensitivity(t, state, *params_and_dparams):
        y, sens = state[:n], state[n:]
        all_params, dps = params_and_dparams[:n_params], params_and_dparams[n_params:]
        fy, dfy = forward.make_jvp(
            lambda yp: rhs(t, yp[0], *_with_traced(all_params, traced, yp[1])),
            (y, _flat_params(all_params, traced)),
        )((sens, list(dps)))
        return _concat([fy, dfy * _np.ones(n)])

    if time_first:
        augmented = _compiled(sensitivity, time_first=True)
    else:
        augmented = _compiled(lambda state, t, *rest: sensitivity(t, state, *rest), False)
    s0 = anp.ravel(dy0) * 1.0 if dy0 is not None else _np.zeros(n)
    if dt0 is not None:
        s0 = s0 - anp.ravel(rhs(t0, y0, *params)) * dt0[0]
    return augmented, s0
