"""Bounds of a minimum: which coordinates a bound holds (strict complementarity at the
corrected point of the active set), and F and x* where they hold."""

from __future__ import annotations

from collections.abc import Callable

import numpy as _np
import scipy.optimize as _so
import scipy.sparse.linalg as _spla

from ..._core import forward
from ..._core.tracer import (
    derivative_free,
    getval,
)
from ...numpy import numpy_wrapper as anp
from ._driver import _found
from ._implicit_system import DegenerateBoundError

# How near a bound (relative to 1 + |bound|) a minimum may be held by it: interior-point
# methods (trust-constr) stop inside an active bound, by 4e-4 with default options.
NEAR_BOUND = 1e-3
def _bound_arrays(bounds, n: int):
    if bounds is None:
        return None
    if isinstance(bounds, _so.Bounds):
        lb, ub = bounds.lb, bounds.ub
    else:
        pairs = list(bounds)
        lb = [-_np.inf if p[0] is None else p[0] for p in pairs]
        ub = [_np.inf if p[1] is None else p[1] for p in pairs]
    lb = _np.broadcast_to(_np.asarray(lb, dtype=float), (n,))
    ub = _np.broadcast_to(_np.asarray(ub, dtype=float), (n,))
    return lb, ub


def _bound_activity(name: str, x, lb, ub, gradient: Callable, near=None) -> dict:
    """Which coordinates of the minimum ``x`` a bound holds, by strict complementarity.

    Candidates are the coordinates within ``near`` of a bound (default ``NEAR_BOUND``
    relative to 1 + |bound|: interior-point methods stop inside). For a guess of the ones
    held, x is corrected to the exact solution of that active set (``_polished``: the
    held ones on their bounds, Newton steps on the others), so that neither the solver's
    tolerance nor an interior-point method's distance from its bounds blurs what follows;
    there a held coordinate's multiplier is the gradient pushing it out, and a free one
    lies inside its bound. A held one whose multiplier is clearly negative is freed, a free
    one found beyond its bound is held, until the set holds. Then a multiplier zero to the
    precision of the solution (x's, about sqrt(eps) (1 + |bound|) and the last Newton
    step, times the curvature, and the free coordinates' remaining gradients), or a free
    minimum on its bound to that precision, is a weakly active bound, where x* has no
    derivative (its one-sided derivatives differ). Returns ``held`` (None if no bound
    holds x; weak ones count as held), ``at_lb``, ``weak`` (why x* is not
    differentiable, or None) and ``polished`` (the corrected x, or None where no bound is
    near), for ``_found``."""
    x = _np.asarray(x, dtype=float)
    with _np.errstate(invalid="ignore"):  # (inf - inf, where a bound is missing)
        gap_lb, gap_ub = x - lb, ub - x
        near_lb = NEAR_BOUND * (1.0 + _np.abs(lb)) if near is None else near
        near_ub = NEAR_BOUND * (1.0 + _np.abs(ub)) if near is None else near
        by_lb = _np.isfinite(lb) & (gap_lb <= near_lb)
        by_ub = _np.isfinite(ub) & (gap_ub <= near_ub)
    at_lb = by_lb & ~(by_ub & (gap_ub < gap_lb))  # (in a narrow box, the nearer bound)
    candidates = by_lb | by_ub
    if not candidates.any():
        return {"held": None, "at_lb": None, "weak": None, "polished": None}
    bound = _np.where(candidates, _np.where(at_lb, lb, ub), 0.0)
    side = _np.where(at_lb, 1.0, -1.0)  # outward gradients and inward distances, signed
    fixed = candidates & (lb == ub)
    held = candidates & (fixed | (side * _np.asarray(gradient(x), dtype=float) >= 0))
    for _ in range(2 * x.size + 1):
        z, g, step, curvature = _polished(x, held, bound, gradient, candidates)
        outward, inside = side * g, side * (z - bound)
        x_precision = (_np.sqrt(_np.finfo(float).eps) * (1.0 + _np.abs(bound))
                       + 10.0 * _np.max(_np.abs(step), initial=0.0))
        g_precision = (x_precision * _np.maximum(curvature, 0.0)
                       + 10.0 * _np.max(_np.abs(g[~held]), initial=0.0))
        freed = held & ~fixed & (outward < -g_precision)
        caught = candidates & ~held & (inside < -x_precision)
        if not (freed.any() or caught.any()):
            break
        held = (held & ~freed) | caught
    weak_held = held & ~fixed & (_np.abs(outward) <= g_precision)
    weak_free = candidates & ~held & (_np.abs(inside) <= x_precision)
    why = None
    if (weak_held | weak_free).any():
        i = int(_np.flatnonzero(weak_held | weak_free)[0])
        multiplier = outward[i] if weak_held[i] else 0.0
        why = (
            f"{name}: x[{i}] = {x[i]:.17g} is at its {'lower' if at_lb[i] else 'upper'} "
            f"bound {bound[i]:.17g} with a multiplier (the gradient pushing it out) of "
            f"{multiplier:.3g}, zero to the precision of the solution "
            f"({g_precision[i]:.3g}): the bound is weakly active, and x* has no derivative "
            f"there (moving the parameters one way keeps x[{i}] on the bound, the other way "
            f"frees it: the one-sided derivatives differ). Take the derivative where the "
            f"bound is clearly active or clearly inactive, or drop the bound if the minimum "
            f"is interior."
        )
    held = held | weak_free
    return {"held": held if held.any() else None, "at_lb": at_lb, "weak": why, "polished": z}


def _polished(x, held, bound, gradient: Callable, measured):
    """x corrected to the solution with the ``held`` coordinates on their bounds: two
    Newton steps on the others (Hessian-vector products, MINRES). Returns the point, the
    gradient there, the last step and the Hessian's diagonal at the ``measured``
    coordinates (their curvature)."""
    z = _np.where(held, bound, x)
    free = ~held
    step = _np.zeros(x.size)
    for _ in range(2):
        g = _np.asarray(gradient(z), dtype=float)
        if not free.any():
            break
        push = forward.make_jvp(gradient, z)

        def product(v, push=push):
            full = _np.zeros(x.size)
            full[free] = v
            return _np.asarray(push(full)[1], dtype=float)[free]

        k = int(free.sum())
        hessian_ff = _spla.LinearOperator((k, k), matvec=product, dtype=float)
        solved, _ = _spla.minres(hessian_ff, -g[free], rtol=1e-14, maxiter=10 * k)
        step = _np.zeros(x.size)
        step[free] = solved
        z = z + step
    g = _np.asarray(gradient(z), dtype=float)
    push = forward.make_jvp(gradient, z)
    curvature = _np.zeros(x.size)
    for i in _np.flatnonzero(measured):
        curvature[i] = float(_np.asarray(push(_np.eye(x.size)[i])[1], dtype=float)[i])
    return z, g, step, curvature


def _find_bounds_later(state: dict, name: str, x, limits, gradient: Callable) -> None:
    """What a new solve found: nothing yet; where it had ``limits`` (lb, ub), which of
    them hold ``x``, found when a derivative first asks (``_found``)."""
    state.clear()
    if limits is not None:
        state["lazy"] = lambda: _bound_activity(name, x, *limits, gradient)


def _weak_bound(x, state: dict) -> DegenerateBoundError | None:
    why = _found(x, state=state, key="weak")
    return None if why is None else DegenerateBoundError(why)


def _held_at_bounds(x, g, state: dict, lb, ub):
    """F of a bounded minimum: the gradient ``g``, and x - bound at the coordinates a
    bound holds (they move with that bound only)."""
    held = _found(x, state=state, key="held")
    if held is None:
        return g
    at_lb = _found(x, state=state, key="at_lb")
    return anp.where(held, x - anp.where(at_lb, lb, ub), g)


def _pinned(x, state: dict, lb, ub):
    """``x`` with the coordinates a bound holds at that bound (where the optimal value
    follows the bound: the envelope theorem's x*) and the others moved to the corrected
    solution of that active set (``_polished``): the envelope theorem holds at x*, and a
    method that stops short (Powell, Nelder-Mead) leaves x far enough from it to blur the
    derivative. The move is a constant shift, so derivatives still flow through ``x``."""
    polished = _found(x, state=state, key="polished")
    if polished is None:
        return x
    moved = x + (polished - _np.asarray(getval(derivative_free(x))))
    held = _found(x, state=state, key="held")
    if held is None:
        return moved
    return anp.where(held, anp.where(_found(x, state=state, key="at_lb"), lb, ub), moved)


def _bound_pairs(bounds):
    """``bounds`` given as (min, max) pairs, None made infinite: the values the bounds'
    derivatives follow (they may be traced); None for no bounds or a ``Bounds`` object."""
    if bounds is None or isinstance(bounds, _so.Bounds):
        return None
    return [(-_np.inf if lo is None else lo, _np.inf if hi is None else hi) for lo, hi in bounds]

