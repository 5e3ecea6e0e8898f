"""chainrule.scipy.optimize: SciPy's solvers, differentiable by the implicit function theorem.

Each solver runs SciPy itself on plain values (no tape through its iterations, so memory
does not grow with the iteration count). The solution x* is then tied to the traced
parameters by a system F(x*, theta) = 0 that holds there:

- ``minimize``: F = the gradient of the objective (with active bounds, F_i = x_i - bound_i);
- ``root``, ``root_scalar``, ``brentq``, ``newton``...: F = the residual;
- ``least_squares``: F = J^T r, the gradient of the cost (normal equations);
- ``fixed_point``: F = x - func(x).

Differentiating F(x*(theta), theta) = 0 gives dx* = -(dF/dx)^{-1} dF/dtheta dtheta:
reverse mode solves once with (dF/dx)^T and pulls the result back through F in theta;
forward mode pushes the tangent through F in theta and solves once. The solve is dense for
small systems and matrix-free above ``DENSE_LIMIT`` unknowns (Jacobian- or Hessian-vector
products with SciPy's ``cg`` or ``gmres``). Both rules are written with chainrule's own
operations, the matrix-free solve being itself an implicit solution of a linear system, so
derivatives of every order work in both modes.

Traced parameters reach the solve as explicit inputs: those passed in ``args``, and those
held in the objective's own closure cells and default arguments (``lambda x: f(x, theta)``
inside the function being differentiated), which are moved into the arguments
(``_closure.lift_closure``, shared with ``chainrule.scipy.integrate``). A traced value
reached any other way (a global, an object's attribute, the closure of another function the
objective calls) cannot be followed through a solver that calls the objective on plain
values: it is refused with an error naming the fix (pass it in ``args``), never given a
silently zero derivative.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as _np
import scipy.optimize as _so
import scipy.sparse.linalg as _spla

from .._core import forward, reverse
from .._core.pytree import tree_flatten, tree_unflatten
from .._core.rules import defjvp_argnums, defvjp_argnums
from .._core.tracer import (
    decided,
    derivative_free,
    front_ends,
    getval,
    isbox,
    notrace_primitive,
    primitive,
)
from .._transforms import grad, hessian, jacobian, make_hvp
from ..numpy import _namespace
from ..numpy import linalg as _alinalg
from ..numpy import numpy_wrapper as anp
from ..numpy.rules._helpers import match_dtype
from ..tensor import Tensor
from ..tensor._graph import TRACE_ID as _TENSOR_TRACE
from ._closure import ClosedOverTracedValueError, lift_closure, refuse_traced

DENSE_LIMIT = 200  # unknowns above which the implicit solve is matrix-free by default
LINEAR_SOLVERS = ("auto", "dense", "cg", "gmres")
ITERATIVE_RTOL = 1e-10  # relative residual of the matrix-free solve (cg, gmres)
RESIDUAL_TOL = 1.5e-8  # max |F(x*)| accepted when SciPy reports no success (sqrt(eps))


class NotConvergedError(RuntimeError):
    """A derivative was asked of a solver result that is not a solution."""


class SingularSystemError(ValueError):
    """dF/dx is singular at the solution: the solution is not isolated."""


# ----------------------------------------------------------------------------- the core
class _Problem:
    """F(x, leaves) = 0 with its plain-value solver; x is a flat float vector.

    ``residual(x, leaves)`` is written with chainrule operations (it is differentiated);
    ``solve(leaves)`` runs on plain values and returns x* (it may keep SciPy's result).
    """

    def __init__(
        self,
        name: str,
        residual: Callable,
        solve: Callable,
        linear_solver: str = "auto",
        symmetric: bool = False,
    ):
        if linear_solver not in LINEAR_SOLVERS:
            raise ValueError(
                f"{name}: implicit_solver must be one of {LINEAR_SOLVERS}, got {linear_solver!r}."
            )
        self.name = name
        self.residual = residual
        self.solve = solve
        self.linear_solver = linear_solver
        self.symmetric = symmetric

    def method(self, n: int) -> str:
        if self.linear_solver != "auto":
            return self.linear_solver
        if n <= DENSE_LIMIT:
            return "dense"
        return "cg" if self.symmetric else "gmres"


@primitive
def _implicit(problem: _Problem, *leaves):
    """x* with F(x*, leaves) = 0, found by ``problem.solve`` on plain values."""
    return problem.solve(leaves)


def _replace(leaves, idx, values) -> list:
    out = list(leaves)
    for i, v in zip(idx, values):
        out[i] = v
    return out


def _singular_error(name: str, detail: str) -> SingularSystemError:
    return SingularSystemError(
        f"{name}: the implicit system dF/dx is singular at the solution ({detail}), so the "
        f"solution is not an isolated function of the parameters (a flat direction or a "
        f"non-isolated minimum) and has no derivative. Regularise the problem (e.g. add a "
        f"small ridge term) or fix the free directions."
    )


def _linear_solve(problem: _Problem, x, leaves, b, transpose: bool):
    """(dF/dx)^{-1} b, or (dF/dx)^{-T} b, at (x, leaves), by chainrule operations."""
    n = int(_np.size(getval(x)))
    method = problem.method(n)
    if method == "dense":
        a = jacobian(lambda z: problem.residual(z, leaves))(x)
        # (of a's value: under chainrule.jit the program's, the decision a guard)
        s = _alinalg.svd(derivative_free(a).astype(float), compute_uv=False)
        if s[-1] <= n * _np.finfo(float).eps * s[0]:
            raise _singular_error(
                problem.name,
                f"smallest singular value {getval(s[-1]):.3g}, largest {getval(s[0]):.3g}",
            )
        return _alinalg.solve(anp.transpose(a) if transpose else a, b)
    return _implicit(_LinearProblem(problem, transpose, method), x, b, *leaves)


class _LinearProblem(_Problem):
    """A w = b (or A^T w = b) with A = dF/dx of ``base`` at x, solved matrix-free.

    As an implicit problem of its own (residual A w - b in (x, b, leaves)), its derivatives
    come from the same rules, which is what makes the matrix-free path differentiable."""

    def __init__(self, base: _Problem, transpose: bool, method: str):
        super().__init__(base.name, self._residual, self._solve, method, base.symmetric)
        self.base = base
        self.transpose = transpose

    def _operator(self, x, leaves) -> Callable:
        f = lambda z: self.base.residual(z, leaves)
        if self.transpose:
            pull_back, _ = reverse.make_vjp(f, x)
            return pull_back
        push = forward.make_jvp(f, x)
        return lambda v: push(v)[1]

    def _residual(self, w, params):
        x, b, *leaves = params
        return self._operator(x, leaves)(w) - b

    def _solve(self, params):
        x, b, *leaves = params
        n = int(_np.size(x))
        apply = self._operator(x, leaves)
        op = _spla.LinearOperator(
            (n, n), matvec=lambda v: _np.asarray(apply(v.ravel())), dtype=float
        )
        b = _np.asarray(b, dtype=float)
        if self.linear_solver == "cg":
            w, info = _spla.cg(op, b, rtol=ITERATIVE_RTOL, atol=0.0, maxiter=10 * n)
        else:
            w, info = _spla.gmres(
                op, b, rtol=ITERATIVE_RTOL, atol=0.0, restart=min(n, 50), maxiter=10 * n
            )
        if info != 0:
            raise _singular_error(
                self.name,
                f"{self.linear_solver} did not reach rtol {ITERATIVE_RTOL:g} in {10 * n} "
                f"iterations; if the system is only ill-conditioned, implicit_solver='dense' "
                f"solves it directly",
            )
        return w


def _implicit_vjp(argnums, ans, args, kwargs):
    problem, *leaves = args
    idx = [i - 1 for i in argnums]

    def vjp(g):
        w = _linear_solve(problem, ans, leaves, g, transpose=True)
        pull_back, _ = reverse.make_vjp(
            lambda ps: problem.residual(ans, _replace(leaves, idx, ps)), [leaves[i] for i in idx]
        )
        return tuple(match_dtype(-c, leaves[i]) for c, i in zip(pull_back(w), idx))

    return vjp


def _implicit_jvp(argnums, tangents, ans, args, kwargs):
    problem, *leaves = args
    idx = [i - 1 for i in argnums]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # F may not depend on every traced leaf
        _, u = forward.make_jvp(
            lambda ps: problem.residual(ans, _replace(leaves, idx, ps)), [leaves[i] for i in idx]
        )(list(tangents))
    return -_linear_solve(problem, ans, leaves, u, transpose=False)


defvjp_argnums(_implicit, _implicit_vjp)
defjvp_argnums(_implicit, _implicit_jvp)


# ----------------------------------------------------------------------------- plumbing
def _no_traced(name: str, value):
    """``value`` unchanged; raises if it holds a traced value (a closed-over parameter)."""
    return refuse_traced(name, value, f"{name}(lambda x, p: f(x, p), x0, args=(p,))")


def _checked(name: str, fun: Callable) -> Callable:
    return lambda *a, **k: _no_traced(name, fun(*a, **k))


def _front(x):
    """A solution traced on the Tensor front end's trace (Tensor parameters) comes back as
    a Tensor, so that ``.backward()`` works on what is computed from it."""
    if isbox(x) and x._trace_id == _TENSOR_TRACE:
        return front_ends[Tensor].wrap(x)
    return x


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
    active there). A function of ``x``, so that chainrule.jit reads it after every solve
    (and guards it) instead of keeping the first call's."""
    return state.get(key)


def _lift_closure(fun: Callable, args, *callables):
    """``fun``'s closed-over traced values made explicit: ``(fun', args', callables')``
    (see ``_closure.lift_closure``). The user's ``callables`` (jac, hess, fprime...), which
    SciPy calls with ``args`` too, are given the original ``args`` back. Traced values
    reached another way stay where they are and are refused by ``_no_traced`` when SciPy
    calls ``fun``."""
    lifted, args = lift_closure(fun, _as_tuple(args))
    if lifted is fun:
        return fun, args, callables

    def dropping_last(c):
        if not callable(c):
            return c
        return lambda x, *a, **kw: c(x, *a[:-1], **kw)

    return lifted, args, tuple(dropping_last(c) for c in callables)


def _solve(
    name: str,
    residual: Callable,
    solve: Callable,
    params,
    *,
    linear_solver: str = "auto",
    symmetric: bool = False,
):
    """Run ``solve(plain params) -> (x*, result)`` as an implicit solution of
    ``residual(x, params) = 0``; returns (traced x*, SciPy's result, differentiated?)."""
    leaves, treedef = tree_flatten(params)
    kept = {}

    def solve_leaves(plain):
        x, kept["result"] = solve(tree_unflatten(treedef, list(plain)))
        return _np.asarray(x, dtype=float).ravel()

    problem = _Problem(
        name,
        lambda x, ls: residual(x, tree_unflatten(treedef, list(ls))),
        solve_leaves,
        linear_solver,
        symmetric,
    )
    problem.found = kept  # (what each solve found, for _require_solution)
    x = _implicit(problem, *leaves)
    # (a derivative is taken where a leaf holds a box other than chainrule.jit's staging
    # box, which only records: a jitted solve without one answers what eager does)
    derived = any(derivative_free(leaf) is not leaf for leaf in leaves)
    return x, kept["result"], derived, problem


def _require_solution(
    problem: _Problem, x, plain_leaves: list, ok: Callable, message: str, fix: str
) -> None:
    """Refuse to differentiate a result SciPy does not report as converged (``ok`` of
    what the solve found), unless the residual there is negligible (BFGS reports
    precision loss at solutions it cannot refine further). Both are read from ``x`` and
    its values: under chainrule.jit they are the guarded decisions of each call."""
    if _converged(x, problem=problem, ok=ok):
        return
    size = anp.max(anp.abs(problem.residual(derivative_free(x), plain_leaves)))
    if size <= RESIDUAL_TOL:
        return
    raise NotConvergedError(
        f"{problem.name}: the solver did not converge ({message}; max |F(x)| = "
        f"{getval(size):.3g}), so x is not a solution and the implicit derivative would be "
        f"wrong. {fix}"
    )


@notrace_primitive
def _converged(x, *, problem: _Problem, ok: Callable) -> bool:
    """Whether the solve that answered ``x`` converged (see ``_found``)."""
    return bool(ok(problem.found["result"]))


def _result(res, x, problem: _Problem, solution) -> _so.OptimizeResult:
    """SciPy's result with the traced ``solution`` as ``x``, its numbers and arrays (fun,
    jac ...) read from the solve that answered ``x`` (under chainrule.jit, each call's:
    values of the program, or, for counts, flags and messages, guarded where read)."""
    out = copy.copy(res)
    free = derivative_free(x)
    for key, value in res.items():
        if key != "x" and (type(value) in _FLOATS or (
                type(value) is _np.ndarray and value.dtype.kind in "biufc")):
            out[key] = _reported(free, found=problem.found, key=key)
    out.x = _front(solution)
    return _guarded_fields(out, free, problem.found)


def _guarded_fields(res, free, found: dict, at: Any = None):
    """``res``, or under chainrule.jit (``free`` is staged) ``res`` whose plain fields
    (counts, flags, messages: ``nit``, ``success``, ``flag``...), which no value of the
    program holds, are read when read from the solve that answered ``free``, each a
    guarded decision (``_field``): a later call where one differs retraces instead of
    answering the first call's. Fields never read cost nothing. (``at``: where ``res``
    sits in what the solve kept.)"""
    if not isbox(free) or not isinstance(res, dict):
        return res
    guarded = _GUARDED_TYPES.get(type(res))
    if guarded is None:
        guarded = _GUARDED_TYPES[type(res)] = type(
            type(res).__name__, (_GuardedFields, type(res)), {"__module__": type(res).__module__}
        )
    out = dict.__new__(guarded)  # (RootResults' __init__ takes its fields by name)
    dict.update(out, res)
    out.__dict__.update(getattr(res, "__dict__", {}))
    out._read = (free, found, at)
    for key, value in res.items():
        if type(value) in _FLOATS:  # (a number SciPy's result holds plain: root)
            dict.__setitem__(out, key, _reported(free, found=found, key=key, at=at))
    return out


class _GuardedFields(dict):
    """The mixin of ``_guarded_fields`` (SciPy's results are dicts read as attributes)."""

    _read: tuple

    def __getitem__(self, key):
        value = dict.__getitem__(self, key)
        if type(value) in _PLAIN_FIELDS:
            free, found, at = self._read
            return _field(free, found=found, key=key, at=at)
        return value

    def __setattr__(self, key, value):
        if key == "_read":
            object.__setattr__(self, key, value)
        else:
            self[key] = value

    def __iter__(self):  # (so that dict(res) and {**res} read through __getitem__)
        return dict.__iter__(self)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def items(self):
        return [(key, self[key]) for key in self]

    def values(self):
        return [self[key] for key in self]


_GUARDED_TYPES: dict[type, type] = {}
_PLAIN_FIELDS = (int, bool, str, _np.bool_, _np.int64, _np.int32)


@notrace_primitive
def _field(free, *, found: dict, key: str, at: Any):
    """``key`` of SciPy's result for the solve that answered ``free``: under chainrule.jit
    a notrace answer, recorded after each solve and guarded (see ``_found``)."""
    return dict.__getitem__(_kept(found, at), key)


def _kept(found: dict, at) -> Any:
    """What the last solve kept (``found["result"]``), or the part of it at index ``at``
    (an int, or a tuple of ints into nested tuples)."""
    kept = found["result"]
    for i in (() if at is None else (at,) if type(at) is int else at):
        kept = kept[i]
    return kept


_FLOATS = (float, _np.float64, _np.float32)


@primitive
def _reported(x, *, found: dict, key: Any, at: Any = None):
    """``key`` of SciPy's result for the solve that answered ``x`` (no derivative: ``x``
    is derivative-free); a value of the program under chainrule.jit."""
    return _kept(found, at)[key]


def _plain_tree(tree) -> list:
    """The values of ``tree``'s leaves without derivative tracing (what
    ``_Problem.residual`` takes; under chainrule.jit, those of the program)."""
    return [derivative_free(leaf) for leaf in tree_flatten(tree)[0]]


def _require_plain(name: str, what: str, value) -> None:
    leaves, _ = tree_flatten(value)
    if any(isbox(leaf) for leaf in leaves):
        raise TypeError(
            f"{name}: {what} cannot be traced (derivatives with respect to it "
            f"are not supported); pass plain values."
        )


_TOL_FIX = "Tighten tol or raise maxiter (options={'maxiter': ...}), or start closer."


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
_NEEDS_HESSIAN = {"dogleg", "trust-exact"}


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


def _active_bounds(x, g, lb, ub):
    """Coordinates held at a bound at the solution (they move with that bound only), and
    which of them at the lower one: near it (interior-point methods stop just inside)
    with the gradient pushing out."""
    with _np.errstate(invalid="ignore"):  # (inf - inf, where a bound is missing)
        at_lb = _np.isfinite(lb) & (x - lb <= 1e-6 * (1.0 + _np.abs(lb))) & (g >= 0)
        at_ub = _np.isfinite(ub) & (ub - x <= 1e-6 * (1.0 + _np.abs(ub))) & (g <= 0)
    return at_lb | at_ub, at_lb


def _bound_pairs(bounds):
    """``bounds`` given as (min, max) pairs, None made infinite: the values the bounds'
    derivatives follow (they may be traced); None for no bounds or a ``Bounds`` object."""
    if bounds is None or isinstance(bounds, _so.Bounds):
        return None
    return [(-_np.inf if lo is None else lo, _np.inf if hi is None else hi) for lo, hi in bounds]


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
    fun, args, (jac, hess, hessp) = _lift_closure(fun, args, jac, hess, hessp)
    x0 = _np.asarray(_plain(x0), dtype=float).ravel()
    method_name = (
        (method or ("L-BFGS-B" if bounds is not None else "BFGS")).lower()
        if not callable(method)
        else ""
    )
    box = None if limits is not None else _bound_arrays(bounds, x0.size)  # (constant ones)
    state: dict[str, Any] = {}
    f = _checked(name, fun)
    value = (lambda x, *a: fun(x, *a)[0]) if jac is True else fun

    def gradient(x, a):
        return grad(lambda z: value(z, *a))(x)

    def residual(x, params):
        a, pairs = params
        g = gradient(x, a)
        active = _found(x, state=state, key="active")
        if active is None:
            return g
        if pairs is None:
            lb, ub = box
        else:  # (traced bounds: x* moves with the active ones)
            lb = anp.stack([lo * 1.0 for lo, _ in pairs])
            ub = anp.stack([hi * 1.0 for _, hi in pairs])
        at_lb = _found(x, state=state, key="at_lb")
        return anp.where(active, x - anp.where(at_lb, lb, ub), g)

    def solve(params):
        a, pairs = params
        # (the bounds of this solve: under chainrule.jit, those of each call)
        now = bounds if pairs is None else [(float(lo), float(hi)) for lo, hi in pairs]
        state.clear()
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
        if now is not None:
            g = _np.asarray(grad(lambda z: value(z, *a))(res.x), dtype=float)
            active, at_lb = _active_bounds(res.x, g, *_bound_arrays(now, x0.size))
            if active.any():
                state["active"], state["at_lb"] = active, at_lb
        return res.x, res

    params = (args, limits)
    x, res, traced, problem = _solve(
        name, residual, solve, params, linear_solver=implicit_solver, symmetric=bounds is None
    )
    problem.symmetric = state.get("active") is None
    if traced:
        _require_solution(problem, x, _plain_tree(params), _succeeded, res.message, _TOL_FIX)
    return _result(res, x, problem, x)


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

    def residual(x, params):
        a, limits = params
        side = _found(x, state=state, key="active")
        if side is None:
            return anp.reshape(slope(x[0], a), (1,))
        return x - limits[side]

    def solve(params):
        a, limits = params
        # (SciPy's positional order: fun, bracket, bounds, args, method, tol, options)
        res = _so.minimize_scalar(checked, bracket, limits, a, method, tol, options)
        if limits is not None:
            state["active"] = _active_side(res.x, limits, lambda z: float(slope(z, a)), options)
        return _np.atleast_1d(res.x), res

    params = (args, bounds)
    x, res, traced, problem = _solve(name, residual, solve, params)
    if traced:
        _require_solution(problem, x, _plain_tree(params), _succeeded, res.message, _TOL_FIX)
    return _result(res, x, problem, x[0])


def _active_side(x: float, limits, slope: Callable, options) -> int | None:
    """0 or 1 where the bounded minimum is at that bound: x* near it (within what the
    method's tolerance, ``xatol`` + sqrt(eps) |x|, lets it reach) and f' at the bound
    itself pushing outwards (an interior minimum just inside would have f' at the bound
    pointing back in)."""
    xatol = (options or {}).get("xatol", 1e-5)
    for side, sign in ((0, 1.0), (1, -1.0)):
        bound = float(getval(limits[side]))
        near = 10 * (xatol + _np.sqrt(_np.finfo(float).eps) * (1.0 + abs(bound)))
        if abs(x - bound) <= near and sign * slope(bound) > 0:
            return side
    return None


# ----------------------------------------------------------------------------- roots
def _shaped(x, shape):
    return anp.reshape(x, shape)


def root(
    fun: Callable,
    x0,
    args=(),
    method: str = "hybr",
    jac=None,
    tol=None,
    callback=None,
    options: dict | None = None,
    *,
    implicit_solver: str = "auto",
) -> _so.OptimizeResult:
    """``scipy.optimize.root``: x with fun(x, *args) = 0, differentiable in ``args``.

    ``res.x`` is traced and shaped as SciPy shapes it (MINPACK's hybr and lm flatten ``x0``
    and call ``fun`` with flat vectors; the other methods keep ``x0``'s shape). Where the
    method uses a Jacobian (hybr, lm) and none is given, chainrule's exact one is passed.

    >>> import chainrule.numpy as np
    >>> from chainrule import grad
    >>> cube_root = lambda t: root(lambda x, t: x ** 3 - t, np.ones(1), args=(t,)).x[0]
    >>> print(round(float(grad(cube_root)(8.0)), 6))
    0.083333
    """
    name = "root"
    fun, args, (jac,) = _lift_closure(fun, args, jac)
    x0 = _np.asarray(_plain(x0), dtype=float)
    shape = (x0.size,) if method in ("hybr", "lm") else x0.shape
    f = _checked(name, fun)
    value = (lambda x, *a: fun(x, *a)[0]) if jac is True else fun

    def residual(x, a):
        return anp.ravel(value(_shaped(x, shape), *a))

    def solve(a):
        j = jac
        if jac is None and method in ("hybr", "lm"):
            j = lambda x, *a: _np.reshape(
                _no_traced(name, jacobian(lambda z: anp.ravel(value(_shaped(z, shape), *a)))(x)),
                (x0.size, x0.size),
            )
        res = _so.root(
            f, x0, args=a, method=method, jac=j, tol=tol, callback=callback, options=options
        )
        return res.x, res

    x, res, traced, problem = _solve(name, residual, solve, args, linear_solver=implicit_solver)
    if traced:
        _require_solution(
            problem,
            x,
            _plain_tree(args),
            _succeeded,
            res.message,
            "Tighten tol, raise the iteration limit in options, or start closer to the root.",
        )
    return _result(res, x, problem, _shaped(x, shape))


def _scalar_problem(name: str, f: Callable, solve_scalar: Callable, args):
    """A scalar root as an implicit solution: (traced root, SciPy's output, traced?)."""
    checked = _checked(name, f)

    def residual(x, a):
        return anp.reshape(f(x[0], *a), (1,))

    def solve(a):
        out = solve_scalar(checked, a)
        return _np.atleast_1d(out[0]), out

    args = _as_tuple(args)
    x, out, traced, problem = _solve(name, residual, solve, args)
    return x[0], out, traced, problem, _plain_tree(args)


def _bracketing(scipy_solver: Callable) -> Callable:
    name = scipy_solver.__name__

    def solver(
        f: Callable,
        a,
        b,
        args=(),
        xtol: float = 2e-12,
        rtol: float = 4 * _np.finfo(float).eps,
        maxiter: int = 100,
        full_output: bool = False,
        disp: bool = True,
    ):
        a, b = float(_plain(a)), float(_plain(b))  # the root does not move with them
        f, args, _ = _lift_closure(f, args)

        def solve_scalar(checked, plain_args):
            return scipy_solver(
                checked,
                a,
                b,
                args=plain_args,
                xtol=xtol,
                rtol=rtol,
                maxiter=maxiter,
                full_output=True,
                disp=disp,
            )

        x, (_, r), traced, problem, plain = _scalar_problem(name, f, solve_scalar, args)
        if traced:
            _require_solution(
                problem,
                anp.reshape(x, (1,)),
                plain,
                _root_converged,
                r.flag,
                "Raise maxiter or narrow the bracket.",
            )
        free = derivative_free(x)
        x = _front(x)
        if full_output:
            r = copy.copy(r)
            r.root = x
            return x, _guarded_fields(r, free, problem.found, at=1)
        return x

    solver.__name__ = solver.__qualname__ = name
    solver.__doc__ = (
        f"``scipy.optimize.{name}``, differentiable in the traced values of "
        f"``args`` (the root moves with them; the bracket does not)."
    )
    return solver


brentq = _bracketing(_so.brentq)
brenth = _bracketing(_so.brenth)
bisect = _bracketing(_so.bisect)
ridder = _bracketing(_so.ridder)
toms748 = _bracketing(_so.toms748)


def newton(
    func: Callable,
    x0,
    fprime=None,
    args=(),
    tol: float = 1.48e-08,
    maxiter: int = 50,
    fprime2=None,
    x1=None,
    rtol: float = 0.0,
    full_output: bool = False,
    disp: bool = True,
):
    """``scipy.optimize.newton`` (Newton, secant or Halley), differentiable in ``args``.

    An array ``x0`` solves the elementwise problems at once, as SciPy does."""
    name = "newton"
    func, args, (fprime, fprime2) = _lift_closure(func, args, fprime, fprime2)
    x0 = _plain(x0)
    shape = _np.shape(x0)
    f = _checked(name, func)

    def residual(x, a):
        return anp.ravel(func(_shaped(x, shape), *a))

    def solve(a):
        out = _so.newton(
            f,
            x0,
            fprime=fprime,
            args=a,
            tol=tol,
            maxiter=maxiter,
            fprime2=fprime2,
            x1=x1,
            rtol=rtol,
            full_output=True,
            disp=disp,
        )
        if shape:  # arrays: (root, converged, zero_der)
            return out[0], out
        return _np.atleast_1d(out[0]), out

    args = _as_tuple(args)
    x, out, traced, problem = _solve(name, residual, solve, args)
    if traced:
        _require_solution(
            problem,
            x,
            _plain_tree(args),
            (lambda out: bool(_np.all(out[1]))) if shape else _root_converged,
            "some elements did not converge" if shape else out[1].flag,
            "Raise maxiter, or pass fprime for Newton's method.",
        )
    free = derivative_free(x)
    x = _front(_shaped(x, shape) if shape else x[0])
    if full_output:
        if shape:  # (converged, zero_der): arrays of each call, values of the program
            return (x, *[_reported(free, found=problem.found, key=i) for i in (1, 2)])
        return x, _guarded_fields(out[1], free, problem.found, at=1)
    return x


def root_scalar(
    f: Callable,
    args=(),
    method: str | None = None,
    bracket=None,
    fprime=None,
    fprime2=None,
    x0=None,
    x1=None,
    xtol=None,
    rtol=None,
    maxiter=None,
    options: dict | None = None,
):
    """``scipy.optimize.root_scalar``: a ``RootResults`` whose ``root`` is traced."""
    f, args, (fprime, fprime2) = _lift_closure(f, args, fprime, fprime2)
    bracket = None if bracket is None else [float(_plain(b)) for b in bracket]
    x0 = None if x0 is None else float(_plain(x0))
    x1 = None if x1 is None else float(_plain(x1))

    def solve_scalar(checked, plain_args):
        r = _so.root_scalar(
            checked,
            args=plain_args,
            method=method,
            bracket=bracket,
            fprime=fprime,
            fprime2=fprime2,
            x0=x0,
            x1=x1,
            xtol=xtol,
            rtol=rtol,
            maxiter=maxiter,
            options=options,
        )
        return r.root, r

    x, (_, r), traced, problem, plain = _scalar_problem("root_scalar", f, solve_scalar, args)
    if traced:
        _require_solution(
            problem,
            anp.reshape(x, (1,)),
            plain,
            _root_converged,
            r.flag,
            "Raise maxiter, tighten xtol/rtol, or give a bracket.",
        )
    r = copy.copy(r)
    r.root = _front(x)
    return _guarded_fields(r, derivative_free(x), problem.found, at=1)


def fixed_point(
    func: Callable, x0, args=(), xtol: float = 1e-08, maxiter: int = 500, method: str = "del2"
):
    """``scipy.optimize.fixed_point``: x with func(x, *args) = x, differentiable in
    ``args`` (F = x - func(x)). SciPy raises if the iteration does not converge."""
    name = "fixed_point"
    func, args, _ = _lift_closure(func, args)
    x0 = _plain(x0)
    shape = _np.shape(x0)
    f = _checked(name, func)

    def residual(x, a):
        return x - anp.ravel(func(_shaped(x, shape), *a))

    def solve(a):
        x = _so.fixed_point(f, x0, args=a, xtol=xtol, maxiter=maxiter, method=method)
        return x, None

    x, _, _, _ = _solve(name, residual, solve, _as_tuple(args))
    return _front(_shaped(x, shape) if shape else x[0])


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
    fun, args, (jac,) = _lift_closure(fun, args, jac)
    _require_plain(name, "bounds", bounds)
    kwargs = {} if kwargs is None else kwargs
    x0 = _np.atleast_1d(_np.asarray(_plain(x0), dtype=float))
    f = _checked(name, fun)
    state: dict[str, Any] = {}

    def cost(x, a, kw):
        r = fun(x, *a, **kw)
        return 0.5 * f_scale**2 * anp.sum(_rho(loss, (r / f_scale) ** 2))

    def residual(x, params):
        a, kw = params
        g = grad(lambda z: cost(z, a, kw))(x)
        active = _found(x, state=state, key="active")
        if active is None:
            return g
        # x - x* at the active coordinates: zero there, and x* does not move
        return anp.where(active, x - derivative_free(x), g)

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
        active = _np.asarray(res.active_mask) != 0
        state["active"] = active if active.any() else None
        return res.x, res

    params = (_as_tuple(args), kwargs)
    x, res, traced, problem = _solve(name, residual, solve, params, linear_solver=implicit_solver)
    problem.symmetric = state.get("active") is None
    if traced:
        _require_solution(
            problem,
            x,
            _plain_tree(params),
            lambda res: res.status > 0,
            res.message,
            "Raise max_nfev or tighten ftol/xtol/gtol.",
        )
    return _result(res, x, problem, x)


# SciPy's other names (result types, linear programming, ...), undifferentiated
_namespace.install(globals(), _so)

__all__ = [
    "minimize",
    "minimize_scalar",
    "root",
    "root_scalar",
    "brentq",
    "brenth",
    "bisect",
    "ridder",
    "toms748",
    "newton",
    "least_squares",
    "fixed_point",
    "ClosedOverTracedValueError",
    "NotConvergedError",
    "SingularSystemError",
    "DENSE_LIMIT",
]
