"""The implicit-differentiation engine: F(x, theta) = 0 solved on plain values,
differentiated by the implicit function theorem (dense or matrix-free linear solves), and
the check that x is a solution before any derivative is taken."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as _np
import scipy.sparse.linalg as _spla

from ..._core import forward, reverse
from ..._core.rules import defjvp_argnums, defvjp_argnums
from ..._core.tracer import (
    derivative_free,
    getval,
    notrace_primitive,
    primitive,
)
from ..._transforms.derivatives import jacobian
from ...numpy import linalg as _alinalg
from ...numpy import numpy_wrapper as anp
from ...numpy.rules._helpers import match_dtype

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
    if n == 0:
        return b  # (no unknowns: the empty system's solution, nothing to verify)
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
    n = int(_np.size(getval(x)))
    if n == 0:  # (no unknowns: the empty x solves the empty system)
        return None if a is None else _np.zeros(0)
    residual = anp.ravel(problem.residual(x, leaves))
    singular_values = None
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


@notrace_primitive
def _converged(x, *, problem: _Problem) -> bool:
    """Whether the solve that answered ``x`` converged by SciPy's account (a function of
    ``x``, as ``_found``: under chainrule.jit each call's, guarded)."""
    return bool(problem.converged(problem.found["result"]))

