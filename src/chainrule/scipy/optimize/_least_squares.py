"""``least_squares``: F = the gradient of the cost (J^T r with the robust loss)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as _np
import scipy.optimize as _so

from ..._core.tracer import (
    getval,
)
from ..._transforms.derivatives import grad, jacobian
from ...numpy import numpy_wrapper as anp
from ._bounds import _find_bounds_later, _held_at_bounds, _pinned, _weak_bound
from ._driver import (
    _as_tuple,
    _checked,
    _lift_closure,
    _no_traced,
    _plain,
    _require_plain,
    implicit_solution,
)
from ._implicit_system import NotDifferentiableError

# How near the Huber loss's switch ((r / f_scale)^2 = 1) a residual is taken to sit on it
HUBER_SWITCH = 1e-6

# ----------------------------------------------------------------------------- least squares
def _rho(loss, z):
    """SciPy's robust losses rho(z), z = (r / f_scale)^2, in chainrule operations."""
    if callable(loss):
        return loss(z)[0]
    if loss == "linear":
        return z
    if loss == "soft_l1":
        return 2.0 * (anp.sqrt(1.0 + z) - 1.0)
    if loss == "huber":
        return anp.where(z <= 1.0, z, 2.0 * anp.sqrt(anp.maximum(z, 1.0)) - 1.0)
    if loss == "cauchy":
        return anp.log1p(z)
    if loss == "arctan":
        return anp.arctan(z)
    raise ValueError(f"least_squares: unknown loss {loss!r}.")


def least_squares(
    fun: Callable,
    x0,
    jac=None,
    bounds=(-_np.inf, _np.inf),
    method: str = "trf",
    ftol=1e-08,
    xtol=1e-08,
    gtol=1e-08,
    x_scale=1.0,
    loss="linear",
    f_scale: float = 1.0,
    diff_step=None,
    tr_solver=None,
    tr_options=None,
    jac_sparsity=None,
    max_nfev=None,
    verbose: int = 0,
    args=(),
    kwargs=None,
    *,
    implicit_solver: str = "auto",
) -> _so.OptimizeResult:
    """``scipy.optimize.least_squares``, differentiable in the traced values of ``args``
    and ``kwargs``. x* solves J^T r = 0 (the gradient of the cost, with ``loss``); active
    bounds (``active_mask``) have zero derivative. ``jac=None`` passes chainrule's exact
    Jacobian (SciPy's default is '2-point' finite differences; pass it to get those)."""
    name = "least_squares"
    fun, args, (jac,) = _lift_closure(name, fun, args, jac)
    _require_plain(name, "bounds", bounds)
    kwargs = {} if kwargs is None else kwargs
    x0 = _np.atleast_1d(_np.asarray(_plain(x0), dtype=float))
    f = _checked(name, fun)
    state: dict[str, Any] = {}

    def cost(x, a, kw):
        r = fun(x, *a, **kw)
        return 0.5 * f_scale**2 * anp.sum(_rho(loss, (r / f_scale) ** 2))

    if isinstance(bounds, _so.Bounds):
        lb, ub = bounds.lb, bounds.ub
    else:
        lb, ub = bounds
    lb = _np.broadcast_to(_np.asarray(lb, dtype=float), x0.shape)
    ub = _np.broadcast_to(_np.asarray(ub, dtype=float), x0.shape)
    bounded = bool(_np.isfinite(lb).any() or _np.isfinite(ub).any())

    def gradient(x, a, kw):
        return grad(lambda z: cost(z, a, kw))(x)

    def residual(x, params):
        a, kw = params
        return _held_at_bounds(x, gradient(x, a, kw), state, lb, ub)

    def objective(x, params):
        a, kw = params
        return cost(_pinned(x, state, lb, ub), a, kw)

    def solve(params):
        a, kw = params
        j = jac
        if jac is None:
            j = lambda x, *a, **kw: _no_traced(name, jacobian(lambda z: fun(z, *a, **kw))(x))
        options = {"tr_options": tr_options or {}}
        if tr_solver is not None:
            options["tr_solver"] = tr_solver
        res = _so.least_squares(
            f,
            x0,
            jac=j,
            bounds=bounds,
            method=method,
            ftol=ftol,
            xtol=xtol,
            gtol=gtol,
            x_scale=x_scale,
            loss=loss,
            f_scale=f_scale,
            diff_step=diff_step,
            jac_sparsity=jac_sparsity,
            max_nfev=max_nfev,
            verbose=verbose,
            args=a,
            kwargs=kw,
            **options,
        )
        limits_now = (lb, ub) if bounded else None
        _find_bounds_later(state, name, res.x, limits_now, lambda z: gradient(z, a, kw))
        return res.x, res

    params = (_as_tuple(args), kwargs)

    def kink(x, params):
        a, kw = params
        if loss == "huber":
            # (rho'' jumps where |r| = f_scale: a residual there, to the solution's
            # precision, makes x* non-differentiable; under chainrule.jit, a guard)
            z = (anp.ravel(fun(x, *a, **kw)) / f_scale) ** 2
            at = anp.abs(z - 1.0) <= HUBER_SWITCH
            if anp.any(at):
                i = int(_np.flatnonzero(getval(at))[0])
                return NotDifferentiableError(
                    f"{name}: residual {i} sits where the Huber loss switches from "
                    f"quadratic to linear (|r| = f_scale = {f_scale:g}, to 1e-6): the "
                    f"cost's curvature jumps there, and x* has no derivative (its "
                    f"one-sided derivatives differ). Take the derivative at other "
                    f"parameters, change f_scale, or use a smooth loss (soft_l1)."
                )
        return _weak_bound(x, state)

    solution = implicit_solution(
        name, residual, solve, params, linear_solver=implicit_solver, symmetric=not bounded,
        converged=lambda res: res.status > 0, fix="Raise max_nfev or tighten ftol/xtol/gtol.",
        objective=objective, kink=kink,
    )
    exact = {
        "fun": lambda x, params: fun(x, *params[0], **params[1]),  # (the residuals at x*)
        "grad": lambda x, params: gradient(x, *params),
    }
    if loss == "linear":  # (for another loss, SciPy's jac is J scaled by the loss)
        exact["jac"] = lambda x, params: jacobian(lambda z: fun(z, *params[0], **params[1]))(x)
    return solution.optimize_result(optimum="cost", exact=exact)


# SciPy's other names (result types, linear programming, ...), undifferentiated
