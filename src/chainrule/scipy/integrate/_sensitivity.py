"""What odeint's and solve_ivp's derivative rules share: the augmented systems' flat
state (concatenated and split), the compiled right-hand sides, the traced parameters."""

from __future__ import annotations

from collections.abc import Callable

import numpy as _np

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


# The derivative passes below are written with chainrule operations, odeint_args itself
# included (its augmented systems are differentiated by chainrule inside SciPy's calls),
# so derivatives of every order, in both modes, come from the same two rules.


def _flat_params(params, traced) -> list:
    return [params[i] for i in traced]


def _with_traced(params, traced, values) -> list:
    full = list(params)
    for i, v in zip(traced, values):
        full[i] = v
    return full


