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
from .._core.pytree import tree_flatten, tree_map, tree_unflatten
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
from .._transforms.derivatives import grad, hessian, jacobian, make_hvp
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
# How close to a solution of F(x, theta) = 0 a result must be to be differentiated: the
# Newton step from x (what still separates it from the solution), relative to 1 + |x|.
# A result SciPy reports converged is held to CONVERGED_STEP_TOL (its derivative is then
# as accurate as the solve); one it reports failed, to FAILED_STEP_TOL, about sqrt(eps):
# BFGS reports precision loss at solutions it cannot refine further.
CONVERGED_STEP_TOL = 1e-3
FAILED_STEP_TOL = 1.5e-8
# Directions of dF/dx below this fraction of its largest singular value count as having
# that curvature in the Newton step (a residual there is then a large step, zero none).
FLAT_DIRECTION = 1e-10
# How near a bound (relative to 1 + |bound|) a minimum may be held by it: interior-point
# methods (trust-constr) stop inside an active bound, by 4e-4 with default options.
NEAR_BOUND = 1e-3
# How near the Huber loss's switch ((r / f_scale)^2 = 1) a residual is taken to sit on it
HUBER_SWITCH = 1e-6


class NotConvergedError(RuntimeError):
    """A derivative was asked of a solver result that is not a solution."""


class SingularSystemError(ValueError):
    """dF/dx is singular at the solution: the solution is not isolated."""


class NotDifferentiableError(ValueError):
    """The solution has no derivative at these parameters: its one-sided derivatives
    differ (a weakly active bound, a residual on the Huber loss's switch)."""


class DegenerateBoundError(NotDifferentiableError):
    """x* sits at a bound whose multiplier is zero (the bound is weakly active): the
    solution is not differentiable there, its one-sided derivatives differ."""


# ----------------------------------------------------------------------------- the core
class _Problem:
    """F(x, leaves) = 0 with its plain-value solver; x is a flat float vector.

    ``residual(x, leaves)`` is written with chainrule operations (it is differentiated);
    ``solve(leaves)`` runs on plain values and returns x* (it keeps SciPy's result in
    ``found["result"]``). What the derivative rules check before differentiating:
    ``converged(result)``, whether SciPy reports success (None: a solution by
    construction); ``fix``, advice where it did not; ``kink(x, leaves)``, the
    ``NotDifferentiableError`` that x* raises (a weakly active bound), or None.
    ``objective(x, leaves)``, for minimisers, is the value whose optimum the result's
    ``fun`` (or ``cost``) reports.
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
        self.found: dict = {}
        self.converged: Callable | None = None
        self.fix = ""
        self.kink: Callable = lambda x, leaves: None
        self.objective: Callable | None = None
        self.checked = True  # (False for the matrix-free linear systems: exact by construction)

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
    """(dF/dx)^{-1} b, or (dF/dx)^{-T} b, at (x, leaves), by chainrule operations, once x is
    verified to be a solution (``_verify``)."""
    n = int(_np.size(getval(x)))
    method = problem.method(n)
    if method == "dense":
        a = jacobian(lambda z: problem.residual(z, leaves))(x)
        # (of a's value: under chainrule.jit the program's, the decision a guard)
        s = _verify(problem, x, leaves, derivative_free(a).astype(float))
        if s[-1] <= n * _np.finfo(float).eps * s[0]:
            raise _singular_error(
                problem.name,
                f"smallest singular value {getval(s[-1]):.3g}, largest {getval(s[0]):.3g}",
            )
        return _alinalg.solve(anp.transpose(a) if transpose else a, b)
    _verify(problem, x, leaves)
    return _implicit(_LinearProblem(problem, transpose, method), x, b, *leaves)


def _verify(problem: _Problem, x, leaves, a=None):
    """Refuse to differentiate at ``x`` unless it solves F(x, leaves) = 0: the Newton step
    from x, relative to 1 + |x|, must be within ``CONVERGED_STEP_TOL`` where SciPy reports
    success and ``FAILED_STEP_TOL`` where it does not. (SciPy's success alone is not
    enough: L-BFGS-B reports it far out on an objective unbounded below, an interior-point
    method inside an active bound.) Then refuse a solution that is not differentiable
    (``problem.kink``). ``a``: dF/dx at x, where the caller formed it; returns its
    singular values then. Values and decisions are derivative-free: under chainrule.jit,
    values of the program and guarded decisions."""
    x, leaves = derivative_free(x), [derivative_free(leaf) for leaf in leaves]
    if not problem.checked:
        return None if a is None else _alinalg.svd(a, compute_uv=False)
    residual = anp.ravel(problem.residual(x, leaves))
    singular_values = None
    n = int(_np.size(getval(x)))
    if a is None and problem.method(n) == "dense":
        a = derivative_free(jacobian(lambda z: problem.residual(z, leaves))(x)).astype(float)
    if a is None:  # (matrix-free: the step by the same iterative solve as the derivative)
        step = _implicit(_LinearProblem(problem, False, problem.method(n)), x, residual, *leaves)
    else:
        step, singular_values = _newton_step(a, residual)
    size = anp.max(anp.abs(step) / (1.0 + anp.abs(x)))
    converged = problem.converged is None or _converged(x, problem=problem)
    limit = CONVERGED_STEP_TOL if converged else FAILED_STEP_TOL
    if not size <= limit:  # (nan included)
        raise NotConvergedError(_not_converged(problem, converged, residual, size, limit))
    kink = problem.kink(x, leaves)
    if kink is not None:
        raise kink
    return singular_values


def _newton_step(a, residual):
    """``a^+ residual`` by the SVD of ``a``, with singular values below ``FLAT_DIRECTION``
    of the largest raised to that floor, and the singular values."""
    u, s, vh = _alinalg.svd(a, full_matrices=False)
    along = anp.dot(anp.transpose(u), residual)
    floor = anp.maximum(s, s[0] * FLAT_DIRECTION)
    # (0 / 0: no residual along a direction of no curvature is no step; anything else
    # over 0 is an infinite step, a refusal)
    safe = anp.where(floor > 0, floor, 1.0)
    scaled = anp.where(floor > 0, along / safe, anp.where(along == 0, 0.0, _np.inf))
    return anp.dot(anp.transpose(vh), scaled), s


_PRECISION_LOSS = (
    "precision loss",  # BFGS, CG, Newton-CG
    "abnormal",  # L-BFGS-B
    "linear search failed",  # TNC
    "positive directional derivative",  # SLSQP
    "bad approximation",  # the trust-region methods
    "unable to progress",  # TNC
)


def _not_converged(problem: _Problem, converged: bool, residual, size, limit) -> str:
    """The message of a ``NotConvergedError``, with advice for its cause."""
    message = _scipy_message(problem.found.get("result"))
    head = (
        f"{problem.name}: x is not a solution (max |F(x)| = "
        f"{float(getval(anp.max(anp.abs(residual)))):.3g}; a Newton step from x moves it by "
        f"{float(getval(size)):.3g} relative to 1 + |x|, more than the {limit:g} accepted), "
        f"so the implicit derivative would be wrong."
    )
    if converged:
        return (
            f"{head} SciPy reported success ({message}) at a point that is not a solution: "
            f"the problem may have none there (an objective unbounded below, or decreasing "
            f"towards an asymptote as x grows), SciPy may have stopped on a small change of "
            f"the objective rather than of its gradient, or a jac/hess passed to SciPy may "
            f"be wrong. Check the problem; then: {problem.fix}"
        )
    if any(cause in message.lower() for cause in _PRECISION_LOSS):
        return (
            f"{head} SciPy stopped because it could not make progress at the precision the "
            f"function is computed to ({message}): tightening tol or raising maxiter will "
            f"not help. If x is close enough, loosen the tolerance to what was reached "
            f"(|F(x)| about {float(getval(anp.max(anp.abs(residual)))):.1g}: gtol, for "
            f"minimize's gradient methods) so that SciPy reports success; otherwise scale "
            f"the problem (variables of order 1, no large constant added to the "
            f"objective), check a jac passed to SciPy, or use a method with exact second "
            f"derivatives (trust-exact, trust-krylov, Newton-CG)."
        )
    return f"{head} SciPy did not converge ({message}). {problem.fix}"


def _scipy_message(result) -> str:
    """What SciPy said about a run: its ``message`` or ``flag``."""
    if isinstance(result, tuple):  # (newton and the bracketing solvers: (x, RootResults))
        result = result[1] if len(result) > 1 else None
    for key in ("message", "flag"):
        text = getattr(result, key, None) if not isinstance(result, dict) else result.get(key)
        if isinstance(text, str):
            return text
    return "no message"


class _LinearProblem(_Problem):
    """A w = b (or A^T w = b) with A = dF/dx of ``base`` at x, solved matrix-free.

    As an implicit problem of its own (residual A w - b in (x, b, leaves)), its derivatives
    come from the same rules, which is what makes the matrix-free path differentiable."""

    def __init__(self, base: _Problem, transpose: bool, method: str):
        super().__init__(base.name, self._residual, self._solve, method, base.symmetric)
        self.base = base
        self.transpose = transpose
        self.checked = False

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


def _solve(
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
):
    """Run ``solve(plain params) -> (x*, result)`` as an implicit solution of
    ``residual(x, params) = 0``; returns (traced x*, SciPy's result, differentiated?,
    the problem). ``converged(result)``, ``fix`` and ``objective(x, params)``: see
    ``_Problem``. A solve at the same values as the last one answers its x* again (a
    derivative of a derivative asks for x* at the same parameters)."""
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
    x = _implicit(problem, *leaves)
    # (a derivative is taken where a leaf holds a box other than chainrule.jit's staging
    # box, which only records: a jitted solve without one answers what eager does)
    problem.derived = any(derivative_free(leaf) is not leaf for leaf in leaves)
    return x, kept["result"], problem.derived, problem


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


@notrace_primitive
def _converged(x, *, problem: _Problem) -> bool:
    """Whether the solve that answered ``x`` converged by SciPy's account (a function of
    ``x``, as ``_found``: under chainrule.jit each call's, guarded)."""
    return bool(problem.converged(problem.found["result"]))


def _result(
    res, x, problem: _Problem, solution, params, optimum: str = "", exact: dict | None = None
) -> _so.OptimizeResult:
    """SciPy's result with the traced ``solution`` as ``x``, its numbers and arrays (fun,
    jac ...) read from the solve that answered ``x`` (under chainrule.jit, each call's:
    values of the program, or, for counts, flags and messages, guarded where read).

    Where a derivative is taken, every field keeps SciPy's value and is differentiable or
    refused: ``optimum`` (``fun``, ``cost``) by the envelope theorem (``_optimum``); each
    field of ``exact`` (key -> f(x, params), the same quantity computed by chainrule) with
    the derivative of f at the traced x (``_valued``); counts, flags, messages and
    diagnostics of the run (``_plain_field``) as they are; anything else (an approximation
    such as BFGS's ``hess_inv``, SciPy's internals) replaced by a ``RefusedField``, which
    says why when it is used, rather than a value whose derivative would be silently 0."""
    out = copy.copy(res)
    free = derivative_free(x)
    exact = exact or {}
    for key, value in res.items():
        if key == "x":
            continue
        number = type(value) in _FLOATS or (
            type(value) is _np.ndarray and value.dtype.kind in "biufc"
        )
        if number:
            out[key] = _reported(free, found=problem.found, key=key)
        if not problem.derived or _plain_field(key, value):
            continue
        if key == optimum:
            out[key] = _front(
                _optimum(free, *tree_flatten(params)[0], problem=problem, key=key))
        elif key in exact and number:
            out[key] = _exact_field(problem.name, key, out[key], value, exact[key](x, params))
        else:
            out[key] = RefusedField(problem.name, key)
    out.x = _front(solution)
    return _guarded_fields(out, free, problem.found)


def _exact_field(solver: str, key: str, reported, value, exact_value):
    """SciPy's ``reported`` value of a field with the derivative of ``exact_value``, or a
    ``RefusedField`` where SciPy's is of another size (then not the same quantity)."""
    if _np.size(getval(exact_value)) != _np.size(value):
        return RefusedField(solver, key)
    at = match_dtype(anp.reshape(exact_value, _np.shape(value)), value)
    return _front(_valued(reported, at))


# Numbers a run reports about itself (how far it got), not functions of the parameters
_DIAGNOSTICS = frozenset(
    {"optimality", "maxcv", "constr_violation", "execution_time", "tr_radius",
     "constr_penalty", "barrier_parameter", "barrier_tolerance"}
)


def _plain_field(key: str, value) -> bool:
    """Whether a result's field stays as SciPy gives it under a derivative: counts, flags,
    messages (ints, bools, strings, integer arrays and lists of them) and diagnostics."""
    if key in _DIAGNOSTICS or value is None or isinstance(value, (str, bool, int, _np.integer,
                                                                  _np.bool_)):
        return True
    if isinstance(value, _np.ndarray):
        return value.dtype.kind in "biu"
    if isinstance(value, (list, tuple)):
        return all(_plain_field(key, item) for item in value)
    return False


class RefusedField:
    """A field of a solver's result that has no derivative chainrule can give (SciPy's
    approximations and internals), in a result whose ``x`` is being differentiated. It
    prints what it is; any use raises a ``TypeError`` saying why."""

    __array_ufunc__ = None  # (NumPy defers arithmetic to the methods below)

    def __init__(self, solver: str, field: str):
        self._solver, self._field = solver, field

    def _refuse(self, *args, **kwargs):
        raise TypeError(
            f"{self._solver}: the result's {self._field!r} is not available while a "
            f"derivative of the result is taken: it is SciPy's internal or approximate "
            f"quantity, with no derivative chainrule can give, and a plain value would be "
            f"differentiated as a constant. Use res.x, res.fun and the fields that are "
            f"traced, compute it from them with chainrule (e.g. hessian(f)(res.x) for the "
            f"exact Hessian), or read it from a call on plain values."
        )

    def __repr__(self) -> str:
        return f"<{self._field}: refused while {self._solver}'s result is differentiated>"

    def __getattr__(self, name: str):
        if name.startswith("_"):  # (protocols probed with getattr's default: _repr_html_...)
            raise AttributeError(name)
        self._refuse()

    __array__ = __array_function__ = __float__ = __int__ = __index__ = __complex__ = _refuse
    __bool__ = __len__ = __iter__ = __getitem__ = __neg__ = __pos__ = __abs__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __rpow__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = _refuse


@primitive
def _optimum(x, *leaves, problem: _Problem, key: str):
    """SciPy's ``key`` (the optimal value: ``fun``, ``cost``) of the solve that answered
    ``x``. Its derivative is the envelope theorem's: d f(x*(p), p)/dp is df/dp at x*
    with x* held (a coordinate held by an active bound moves with the bound, through
    ``problem.objective``): no linear solve, and a non-isolated x* (a flat valley) is
    no obstacle. (``x`` is derivative-free: it orders the call after the solve.)"""
    return _kept(problem.found, None)[key]


def _solution_at(problem: _Problem, x, leaves):
    """x* as the derivative of a derivative sees it: ``x`` where no leaf is traced, else
    x* again as a function of the leaves (the solve answers it from its cache)."""
    if any(derivative_free(leaf) is not leaf for leaf in leaves):
        return _implicit(problem, *leaves)
    return x


def _optimum_vjp(argnums, ans, args, kwargs):
    x, *leaves = args
    problem = kwargs["problem"]
    idx = [i - 1 for i in argnums]

    def vjp(g):
        at = _solution_at(problem, x, leaves)
        _verify(problem, at, leaves)
        pull_back, _ = reverse.make_vjp(
            lambda ps: problem.objective(at, _replace(leaves, idx, ps)), [leaves[i] for i in idx]
        )
        return tuple(match_dtype(c, leaves[i]) for c, i in zip(pull_back(g), idx))

    return vjp


def _optimum_jvp(argnums, tangents, ans, args, kwargs):
    x, *leaves = args
    problem = kwargs["problem"]
    idx = [i - 1 for i in argnums]
    at = _solution_at(problem, x, leaves)
    _verify(problem, at, leaves)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # f may not depend on every traced leaf
        _, out = forward.make_jvp(
            lambda ps: problem.objective(at, _replace(leaves, idx, ps)), [leaves[i] for i in idx]
        )(list(tangents))
    return match_dtype(out, ans)


defvjp_argnums(_optimum, _optimum_vjp)
defjvp_argnums(_optimum, _optimum_jvp)


@primitive
def _valued(reported, exact):
    """``reported`` (SciPy's value of a result's field) with the derivative of ``exact``,
    the same quantity computed by chainrule at the traced solution."""
    return reported


def _valued_vjp(argnums, ans, args, kwargs):
    reported, _ = args
    return lambda g: tuple(g if i == 1 else anp.zeros_like(reported) for i in argnums)


def _valued_jvp(argnums, tangents, ans, args, kwargs):
    return dict(zip(argnums, tangents)).get(1, anp.zeros_like(ans))


defvjp_argnums(_valued, _valued_vjp)
defjvp_argnums(_valued, _valued_jvp)


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
# (the others ignore bounds, with SciPy's warning)
_TAKES_BOUNDS = {"nelder-mead", "powell", "l-bfgs-b", "cobyla", "cobyqa", "slsqp", "tnc",
                 "trust-constr"}
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
    x, res, _, problem = _solve(
        name,
        residual,
        solve,
        params,
        linear_solver=implicit_solver,
        symmetric=not bounded,
        converged=_succeeded,
        fix=_TOL_FIX,
        objective=objective,
    )
    problem.kink = lambda x, leaves: _weak_bound(x, state)
    exact = {
        "jac": lambda x, params: gradient(x, params[0]),  # (the gradient at x*)
        "grad": lambda x, params: gradient(x, params[0]),  # (trust-constr's name for it)
        "hess": lambda x, params: hessian(lambda z: value(z, *params[0]))(x),
    }
    return _result(res, x, problem, x, params, optimum="fun", exact=exact)


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
    x, res, _, problem = _solve(
        name, residual, solve, params, converged=_succeeded, fix=_TOL_FIX, objective=objective
    )
    problem.kink = lambda x, leaves: _weak_bound(x, state)
    return _result(res, x, problem, x[0], params, optimum="fun")


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
    fun, args, (jac,) = _lift_closure(name, fun, args, jac)
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

    x, res, _, problem = _solve(
        name,
        residual,
        solve,
        args,
        linear_solver=implicit_solver,
        converged=_succeeded,
        fix="Tighten tol, raise the iteration limit in options, or start closer to the root.",
    )
    exact = {"fun": lambda x, a: value(_shaped(x, shape), *a)}  # (the residual at x*)
    return _result(res, x, problem, _shaped(x, shape), args, exact=exact)


def _scalar_problem(name: str, f: Callable, solve_scalar: Callable, args, fix: str):
    """A scalar root as an implicit solution: (traced root, SciPy's output, problem)."""
    checked = _checked(name, f)

    def residual(x, a):
        return anp.reshape(f(x[0], *a), (1,))

    def solve(a):
        out = solve_scalar(checked, a)
        return _np.atleast_1d(out[0]), out

    x, out, _, problem = _solve(
        name, residual, solve, _as_tuple(args), converged=_root_converged, fix=fix
    )
    return x[0], out, problem


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
        f, args, _ = _lift_closure(name, f, args)

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

        x, (_, r), problem = _scalar_problem(
            name, f, solve_scalar, args, "Raise maxiter or narrow the bracket."
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
    func, args, (fprime, fprime2) = _lift_closure(name, func, args, fprime, fprime2)
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

    x, out, _, problem = _solve(
        name,
        residual,
        solve,
        _as_tuple(args),
        converged=(lambda out: bool(_np.all(out[1]))) if shape else _root_converged,
        fix=("Some elements did not converge: r" if shape else "R")
        + "aise maxiter, or pass fprime for Newton's method.",
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
    f, args, (fprime, fprime2) = _lift_closure("root_scalar", f, args, fprime, fprime2)
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

    x, (_, r), problem = _scalar_problem(
        "root_scalar", f, solve_scalar, args, "Raise maxiter, tighten xtol/rtol, or give a bracket."
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
    func, args, _ = _lift_closure(name, func, args)
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
    x, res, _, problem = _solve(
        name, residual, solve, params, linear_solver=implicit_solver, symmetric=not bounded,
        converged=lambda res: res.status > 0, fix="Raise max_nfev or tighten ftol/xtol/gtol.",
        objective=objective,
    )

    def kink(x, leaves):
        a, kw = tree_unflatten(tree_flatten(params)[1], list(leaves))
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

    problem.kink = kink
    exact = {
        "fun": lambda x, params: fun(x, *params[0], **params[1]),  # (the residuals at x*)
        "grad": lambda x, params: gradient(x, *params),
    }
    if loss == "linear":  # (for another loss, SciPy's jac is J scaled by the loss)
        exact["jac"] = lambda x, params: jacobian(lambda z: fun(z, *params[0], **params[1]))(x)
    return _result(res, x, problem, x, params, optimum="cost", exact=exact)


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
    "DegenerateBoundError",
    "NotDifferentiableError",
    "RefusedField",
    "DENSE_LIMIT",
]
