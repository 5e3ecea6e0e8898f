"""The driver every solver calls: closures lifted, SciPy's calls checked for traced
values, and the solve run as an implicit solution of its residual."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as _np

from ..._core.pytree import tree_flatten, tree_map, tree_unflatten
from ..._core.tracer import (
    decided,
    derivative_free,
    getval,
    isbox,
    notrace_primitive,
)
from .._closure import ClosedOverTracedValueError, lift_closure, refuse_traced
from ._implicit_system import _implicit, _Problem
from ._results import _guarded_fields, _reported, _result


# ----------------------------------------------------------------------------- plumbing
def _no_traced(name: str, value):
    """``value`` unchanged; raises if it holds a traced value (a closed-over parameter)."""
    return refuse_traced(name, value, f"{name}(lambda x, p: f(x, p), x0, args=(p,))")


def _checked(name: str, fun: Callable) -> Callable:
    return lambda *a, **k: _no_traced(name, fun(*a, **k))


def _as_tuple(args) -> tuple:
    return args if isinstance(args, tuple) else (args,)


def _succeeded(res) -> bool:
    return bool(res.success)


def _root_converged(out) -> bool:
    return bool(out[1].converged)


def _plain(x):
    """The plain value of a solver's start or bracket, which picks the solution found
    but does not move it: under chainrule.jit a guarded value of the program (another
    start retraces) rather than the first call's."""
    return decided(x, getval)


@notrace_primitive
def _found(x, *, state: dict, key: str):
    """``state[key]``, what the solve that answered ``x`` found besides x (the bounds
    holding it). A function of ``x``, so that chainrule.jit reads it after every solve
    (and guards it) instead of keeping the first call's. ``state["lazy"]``, where a solve
    left it, computes the rest on first use: only derivatives need it."""
    if "lazy" in state:
        state.update(state.pop("lazy")())
    return state.get(key)


def _lift_closure(name: str, fun: Callable, args, *callables):
    """``fun``'s closed-over traced values made explicit: ``(fun', args', callables')``
    (see ``_closure.lift_closure``). Traced values reached another way stay where they are
    and are refused by ``_no_traced`` when SciPy calls ``fun``. The user's ``callables``
    (jac, hess, hessp, fprime...), which SciPy calls with ``args`` too, are given the
    original ``args`` back, and their answers are read as plain values (``_guide``)."""
    lifted, args = lift_closure(fun, _as_tuple(args))
    drop = 0 if lifted is fun else 1
    return lifted, args, tuple(_guide(name, c, drop) for c in callables)


def _guide(name: str, user: Any, drop: int) -> Any:
    """A user's jac, hess, hessp or fprime as SciPy's iterations call it (without the
    ``drop`` lifted arguments). It only guides the search, the derivative of the solution
    comes from ``fun``: so a traced value it answers (``jac=grad(f)`` where ``f`` closes over
    a parameter, as SciPy users write it) is read as its value. One that chainrule.jit
    stages is refused: its value would be the first call's in every later call."""
    if not callable(user):
        return user

    def plain(out):
        for leaf in tree_flatten(out)[0]:
            if isbox(derivative_free(leaf)):
                raise ClosedOverTracedValueError(
                    f"{name}: a function passed to guide the solver (jac, hess, hessp, "
                    f"fprime) reaches a value chainrule.jit is staging, which would keep "
                    f"the first call's value in later calls. Pass the parameter through "
                    f"args= (the function then receives it), or leave the argument out: "
                    f"chainrule passes the exact derivative where the method needs one."
                )
        return tree_map(getval, out)

    return lambda x, *a, **kw: plain(user(x, *a[: len(a) - drop], **kw))


def implicit_solution(
    name: str,
    residual: Callable,
    solve: Callable,
    params,
    *,
    linear_solver: str = "auto",
    symmetric: bool = False,
    converged: Callable | None = None,
    fix: str = "",
    objective: Callable | None = None,
    kink: Callable | None = None,
) -> Solution:
    """The driver every solver calls: ``solve(plain params) -> (x*, SciPy's result)`` run
    as the implicit solution of ``residual(x, params) = 0``, x* traced in ``params``.

    What a solver supplies is what differs: ``residual`` (its optimality condition,
    written with chainrule operations), ``solve`` (its plain SciPy call), and, for the
    checks before a derivative, ``converged(result)`` (whether SciPy reports success;
    None: a solution by construction), ``fix`` (advice where it did not), ``kink(x,
    params)`` (the ``NotDifferentiableError`` x* raises, or None) and, for minimisers,
    ``objective(x, params)`` (the value SciPy's ``fun`` or ``cost`` reports). A solve at
    the same values as the last one answers its x* again (a derivative of a derivative
    asks for x* at the same parameters)."""
    leaves, treedef = tree_flatten(params)
    kept: dict = {}
    last: list = []  # [the plain leaves of the last solve, its x*]

    def solve_leaves(plain):
        key = [_leaf_copy(leaf) for leaf in plain]
        if last and _same_leaves(last[0], key):
            return last[1].copy()
        x, kept["result"] = solve(tree_unflatten(treedef, list(plain)))
        x = _np.array(x, dtype=float).ravel()
        last[:] = [key, x]
        return x.copy()

    def unflat(f):
        return lambda x, ls: f(x, tree_unflatten(treedef, list(ls)))

    problem = _Problem(name, unflat(residual), solve_leaves, linear_solver, symmetric)
    problem.found = kept
    problem.converged, problem.fix = converged, fix
    problem.objective = None if objective is None else unflat(objective)
    if kink is not None:
        problem.kink = unflat(kink)
    x = _implicit(problem, *leaves)
    # (a derivative is taken where a leaf holds a box other than chainrule.jit's staging
    # box, which only records: a jitted solve without one answers what eager does)
    problem.derived = any(derivative_free(leaf) is not leaf for leaf in leaves)
    return Solution(x, kept["result"], problem, params)


class Solution:
    """The driver's answer: ``x`` (x*, a flat traced vector), ``result`` (what SciPy's
    call answered) and ``problem``; SciPy's result is handed back through it."""

    def __init__(self, x, result, problem: _Problem, params):
        self.x, self.result, self.problem, self.params = x, result, problem, params

    def optimize_result(self, solution=None, *, optimum: str = "", exact: dict | None = None):
        """SciPy's ``OptimizeResult`` with ``solution`` (x* by default, or x* shaped as
        the solver answers it) as ``x``, its fields differentiable or refused
        (``_results._result``: ``optimum``, the optimal value's key; ``exact``, fields
        chainrule computes)."""
        at = self.x if solution is None else solution
        return _result(self.result, self.x, self.problem, at, self.params, optimum, exact)

    def guarded(self, res, at: Any = None, of: Any = None):
        """``res`` (SciPy's result at index ``at`` of what the solve answered) with its
        plain fields read per call under chainrule.jit (``_results._guarded_fields``),
        after ``of`` (x* by default)."""
        free = derivative_free(self.x if of is None else of)
        return _guarded_fields(res, free, self.problem.found, at=at)

    def reported(self, key: Any):
        """Item ``key`` of what the solve answered, as a value of the program under
        chainrule.jit (``_results._reported``)."""
        return _reported(derivative_free(self.x), found=self.problem.found, key=key)


def _leaf_copy(leaf):
    if isinstance(leaf, (_np.ndarray, _np.generic, float, int, complex)):
        return _np.array(leaf)
    return leaf


def _same_leaves(a: list, b: list) -> bool:
    def same(u, v):
        if type(u) is _np.ndarray and type(v) is _np.ndarray:
            return u.dtype == v.dtype and u.shape == v.shape and u.tobytes() == v.tobytes()
        return u is v

    return len(a) == len(b) and all(same(u, v) for u, v in zip(a, b))


def _require_plain(name: str, what: str, value) -> None:
    leaves, _ = tree_flatten(value)
    if any(isbox(leaf) for leaf in leaves):
        raise TypeError(
            f"{name}: {what} cannot be traced (derivatives with respect to it "
            f"are not supported); pass plain values."
        )


_TOL_FIX = "Tighten tol or raise maxiter (options={'maxiter': ...}), or start closer."


