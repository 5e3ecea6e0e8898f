"""``ivp_values``, the differentiable core of ``solve_ivp`` (y at given times), and its
forward-mode rule (sensitivities solved with y)."""

from __future__ import annotations

import numpy as _np

from ..._core.tracer import getval, primitive
from ...numpy import numpy_wrapper as anp
from ...numpy.rules._helpers import match_dtype
from .._closure import holds_traced
from ._forward import _solve_plain
from ._sensitivity import _concat, sensitivity_system


@primitive
def ivp_values(fun, times, y0, *params, method="RK45", options=None, solved=None):
    """y at ``times[1:]`` (shape (n, len(times) - 1)) for dy/dt = fun(t, y, *params),
    y(times[0]) = y0: the differentiable core of ``solve_ivp``."""
    if solved is not None:
        values = solved.answer(times, y0, params)
        if values is not None:
            return values
    plain_times = _np.asarray(getval(times), dtype=float)
    if _np.all(plain_times[1:] == plain_times[0]):  # (no interval: SciPy answers nothing)
        return _np.repeat(_np.reshape(y0, (-1, 1)), len(plain_times) - 1, axis=1) * 1.0
    sol = _solve_plain(fun, times, y0, params, method, options, dense=False)
    if not sol.success:
        raise RuntimeError(
            f"chainrule.scipy.integrate.solve_ivp: an adjoint or sensitivity "
            f"solve failed ({sol.message}); loosen rtol/atol or pick a method "
            f"fit for the problem's stiffness."
        )
    return sol.y


def _refuse_failed(solved) -> None:
    if solved is not None and solved.failure is not None:
        raise RuntimeError(
            f"chainrule.scipy.integrate.solve_ivp: the forward solve failed "
            f"({solved.failure}), so its result is not a solution and has no derivative. "
            f"Check sol.success; loosen rtol/atol, or use an implicit method (Radau, BDF, "
            f"LSODA) for a stiff problem."
        )



def _ivp_jvp(argnums, tangents, ans, args, kwargs):
    """Tangent by the forward sensitivity s (ds/dt = df/dy s + df/dparams dparams),
    solved together with y by this same primitive (so it is differentiable in turn)."""
    fun, times, y0, *params = args
    _refuse_failed(kwargs.get("solved"))
    tangents = dict(zip(argnums, tangents))
    traced = [i - 3 for i in argnums if i >= 3]
    n = int(_np.size(getval(y0)))
    dparams = [tangents[i + 3] for i in traced]
    dt = tangents.get(1)
    augmented, s0 = sensitivity_system(
        fun, times[0], y0, params, traced, tangents.get(2), dt, time_first=True
    )
    if traced or holds_traced(s0) or _np.any(getval(s0) != 0):
        sens = ivp_values(
            augmented,
            times,
            _concat([y0, s0]),
            *params,
            *dparams,
            method=kwargs["method"],
            options=kwargs.get("options"),
        )[n:]
    else:  # only the output times move (an event time's dG/dt): no sensitivity to solve
        sens = _np.zeros(_np.shape(getval(ans)))
    if dt is not None:
        f_out = anp.stack(
            [anp.ravel(fun(times[k + 1], ans[:, k], *params)) for k in range(anp.shape(ans)[1])],
            axis=1,
        )
        sens = sens + f_out * dt[1:]
    return match_dtype(sens, ans)



