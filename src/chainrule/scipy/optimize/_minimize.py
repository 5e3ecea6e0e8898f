"""``minimize`` and ``minimize_scalar``: F = the gradient (x - bound where a bound
holds), the optimal value by the envelope theorem."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as _np
import scipy.optimize as _so

from ..._core.tracer import (
    getval,
)
from ..._transforms.derivatives import grad, hessian, make_hvp
from ...numpy import numpy_wrapper as anp
from .._closure import lift_closure
from ._bounds import (
    _bound_activity,
    _bound_arrays,
    _bound_pairs,
    _find_bounds_later,
    _held_at_bounds,
    _pinned,
    _weak_bound,
)
from ._driver import (
    _TOL_FIX,
    _as_tuple,
    _checked,
    _found,
    _lift_closure,
    _no_traced,
    _plain,
    _require_plain,
    _succeeded,
    implicit_solution,
)

# ----------------------------------------------------------------------------- minimize
_NEEDS_GRADIENT = {
    "cg",
    "bfgs",
    "l-bfgs-b",
    "tnc",
    "newton-cg",
    "slsqp",
    "dogleg",
    "trust-ncg",
    "trust-krylov",
    "trust-exact",
    "trust-constr",
}
_NEEDS_HESSP = {"newton-cg", "trust-ncg", "trust-krylov"}
# (the others ignore bounds, with SciPy's warning)
_TAKES_BOUNDS = {"nelder-mead", "powell", "l-bfgs-b", "cobyla", "cobyqa", "slsqp", "tnc",
                 "trust-constr"}
_NEEDS_HESSIAN = {"dogleg", "trust-exact"}



def minimize(
    fun: Callable,
    x0,
    args=(),
    method: str | None = None,
    jac=None,
    hess=None,
    hessp=None,
    bounds=None,
    constraints=(),
    tol: float | None = None,
    callback=None,
    options: dict | None = None,
    *,
    implicit_solver: str = "auto",
) -> _so.OptimizeResult:
    """``scipy.optimize.minimize``, differentiable in the traced values of ``args``.

    ``res.x`` is traced; other fields are plain. The derivative of x* solves
    H dx* = -d(grad f)/dtheta dtheta with the Hessian at x*; a coordinate at an active
    bound moves with that bound only (bounds given as (min, max) pairs may be traced).
    Where SciPy's method needs a gradient (or Hessian) and none is given, chainrule's exact
    one is passed. ``implicit_solver``: "auto", "dense", "cg" or "gmres" for the linear
    solve of the derivative.

    >>> import chainrule.numpy as np
    >>> from chainrule import grad
    >>> argmin = lambda a: minimize(lambda x, a: np.sum((x - a) ** 2), np.zeros(1),
    ...                             args=(a,)).x[0]
    >>> print(round(float(grad(argmin)(3.0)), 6))
    1.0
    """
    name = "minimize"
    if constraints:
        raise NotImplementedError(
            f"{name}: constraints are not supported (the derivative of a constrained optimum "
            f"needs its KKT system); bounds= is. Call scipy.optimize.minimize for plain "
            f"values."
        )
    limits = _bound_pairs(bounds)
    if limits is None:
        _require_plain(name, "bounds", bounds)
    fun, args, (jac, hess, hessp) = _lift_closure(name, fun, args, jac, hess, hessp)
    x0 = _np.asarray(_plain(x0), dtype=float).ravel()
    method_name = (
        (method or ("L-BFGS-B" if bounds is not None else "BFGS")).lower()
        if not callable(method)
        else ""
    )
    bounded = bounds is not None and (callable(method) or method_name in _TAKES_BOUNDS)
    box = None if limits is not None else _bound_arrays(bounds, x0.size)  # (constant ones)
    state: dict[str, Any] = {}
    f = _checked(name, fun)
    value = (lambda x, *a: fun(x, *a)[0]) if jac is True else fun

    def gradient(x, a):
        return grad(lambda z: value(z, *a))(x)

    def bound_values(pairs):
        if pairs is None:
            return box
        # (traced bounds: x* moves with the ones that hold it)
        return anp.stack([lo * 1.0 for lo, _ in pairs]), anp.stack([hi * 1.0 for _, hi in pairs])

    def residual(x, params):
        a, pairs = params
        if not bounded:
            return gradient(x, a)
        return _held_at_bounds(x, gradient(x, a), state, *bound_values(pairs))

    def objective(x, params):
        a, pairs = params
        if not bounded:
            return value(x, *a)
        return value(_pinned(x, state, *bound_values(pairs)), *a)

    def solve(params):
        a, pairs = params
        # (the bounds of this solve: under chainrule.jit, those of each call)
        now = bounds if pairs is None else [(float(lo), float(hi)) for lo, hi in pairs]
        kw = {"jac": jac, "hess": hess, "hessp": hessp}
        if jac is None and method_name in _NEEDS_GRADIENT:
            kw["jac"] = lambda x, *a: _no_traced(name, grad(lambda z: value(z, *a))(x))
        if hess is None and hessp is None:
            if method_name in _NEEDS_HESSIAN:
                kw["hess"] = lambda x, *a: _no_traced(name, hessian(lambda z: value(z, *a))(x))
            elif method_name in _NEEDS_HESSP:
                kw["hessp"] = lambda x, p, *a: _no_traced(
                    name, make_hvp(lambda z: value(z, *a))(x)[0](p)
                )
        res = _so.minimize(
            f,
            x0,
            args=a,
            method=method,
            bounds=now,
            tol=tol,
            callback=callback,
            options=options,
            **kw,
        )
        limits_now = _bound_arrays(now, x0.size) if bounded else None
        _find_bounds_later(state, name, res.x, limits_now, lambda z: gradient(z, a))
        return res.x, res

    params = (args, limits)
    solution = implicit_solution(
        name,
        residual,
        solve,
        params,
        linear_solver=implicit_solver,
        symmetric=not bounded,
        converged=_succeeded,
        fix=_TOL_FIX,
        objective=objective,
        kink=lambda x, params: _weak_bound(x, state),
    )
    exact = {
        "jac": lambda x, params: gradient(x, params[0]),  # (the gradient at x*)
        "grad": lambda x, params: gradient(x, params[0]),  # (trust-constr's name for it)
        "hess": lambda x, params: hessian(lambda z: value(z, *params[0]))(x),
    }
    return solution.optimize_result(optimum="fun", exact=exact)


# ----------------------------------------------------------------------------- minimize_scalar
def minimize_scalar(
    fun: Callable,
    bracket=None,
    bounds=None,
    args=(),
    method: str | None = None,
    tol: float | None = None,
    options: dict | None = None,
) -> _so.OptimizeResult:
    """``scipy.optimize.minimize_scalar`` (brent, golden, bounded), differentiable in the
    traced values of ``args`` (F = f'(x) = 0) and, for ``bounded``, in ``bounds``: where
    the minimum is at a bound (f' there pushes outwards), x* is that bound
    (F = x - bound), so it moves with the bound and not with ``args``. The bracket only
    guides the search: x* does not move with it.

    >>> import chainrule.numpy as np
    >>> from chainrule import grad
    >>> argmin = lambda a: minimize_scalar(lambda x, a: (x - a) ** 2, args=(a,)).x
    >>> print(round(float(grad(argmin)(3.0)), 6))
    1.0
    """
    name = "minimize_scalar"
    bracket = None if bracket is None else [float(_plain(b)) for b in bracket]
    fun, args = lift_closure(fun, _as_tuple(args))
    bounds = None if bounds is None else tuple(bounds)
    checked = _checked(name, fun)
    state: dict[str, Any] = {}

    def slope(x, a):
        return grad(lambda z: fun(z, *a))(x)

    def held(x, limits):
        """x* itself, or the bound that holds it (traced where the bounds are)."""
        side = _found(x, state=state, key="side")
        return x if side is None else anp.reshape(limits[side] * 1.0, (1,))

    def residual(x, params):
        a, limits = params
        side = _found(x, state=state, key="side")
        if side is None:
            return anp.reshape(slope(x[0], a), (1,))
        return x - held(x, limits)

    def objective(x, params):
        a, limits = params
        return fun(held(x, limits)[0], *a)

    def solve(params):
        a, limits = params
        # (SciPy's positional order: fun, bracket, bounds, args, method, tol, options)
        res = _so.minimize_scalar(checked, bracket, limits, a, method, tol, options)
        state.clear()
        if limits is not None:
            state["lazy"] = lambda: _bounded_side(name, res.x, limits, a, slope, options)
        return _np.atleast_1d(res.x), res

    params = (args, bounds)
    solution = implicit_solution(
        name, residual, solve, params, converged=_succeeded, fix=_TOL_FIX, objective=objective,
        kink=lambda x, params: _weak_bound(x, state),
    )
    return solution.optimize_result(solution.x[0], optimum="fun")


def _bounded_side(name: str, x: float, limits, a, slope: Callable, options) -> dict:
    """``side``: 0 or 1 where a bound holds the minimum of ``method="bounded"``, None
    where it is interior; ``weak``: see ``_bound_activity``, whose test this is, with
    "near" what the method's tolerance (``xatol`` + sqrt(eps) |x|) lets it reach."""
    lb, ub = (_np.array([float(getval(bound))]) for bound in limits)
    xatol = (options or {}).get("xatol", 1e-5)
    eps = _np.sqrt(_np.finfo(float).eps)
    near = 10 * (xatol + eps * (1.0 + _np.maximum(_np.abs(lb), _np.abs(ub))))
    found = _bound_activity(
        name, _np.array([x]), lb, ub, lambda z: anp.reshape(slope(z[0], a), (1,)), near
    )
    side = None
    if found["held"] is not None:
        side = 0 if found["at_lb"][0] else 1
    return {"side": side, "weak": found["weak"]}


