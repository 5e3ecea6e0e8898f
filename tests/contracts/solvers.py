"""solvers: the derivative of a solver's answer is the central difference of re-solving.

Each case is a generated, parameterised problem written out as source text: a function
``solve(theta)`` that calls one of chainrule's SciPy solvers (``minimize`` with every
method, bounds held, free, near and weakly held; ``least_squares`` with its losses and
bounds; ``root``; the bracketing solvers, ``newton``, ``root_scalar``, ``fixed_point``;
``minimize_scalar``; ``quad``; ``solve_ivp`` with every method on stiff and non-stiff
ODEs, events included) and returns a vector built from the result (x*, the optimal
value, fields such as ``jac``, an event time...). The contract, at the case's theta:

- ``jacobian`` (reverse mode: adjoints, transposed implicit solves) and ``jacfwd``
  (forward mode: sensitivities, implicit solves) each equal the central differences of
  re-solving at theta +- h e_i: for ``minimize`` and ``least_squares``, the problem
  re-solved to rounding by ``tight_minimum`` (L-BFGS-B with exact gradients, then Newton
  steps on the coordinates no bound holds) from the case method's own solution (so in its
  basin): the derivative is the problem's, that of its exact solution, whichever method
  found it (an interior-point method's x stops inside an active bound, Nelder-Mead's on a
  bound short of an interior minimum, and their own re-solves would differentiate that);
  for the other solvers, ``solve`` itself on plain values (tight solves);
- the primal value of the traced call (``jvp``'s) is the plain call's, bit for bit
  (chainrule answers SciPy's numbers), and theta is not modified;
- where the derivative does not exist (a bound weakly active at x*: the generator places
  one exactly at the solution) chainrule raises ``DegenerateBoundError``; where SciPy's
  method fails on a problem built to be well posed, ``NotConvergedError`` (counted as a
  refusal), and where its solution is too imprecise to tell whether a bound holds it
  (derivative-free and interior-point methods), also ``DegenerateBoundError``; where a
  Huber loss's residual settles on the loss's switch, ``NotDifferentiableError``. Any
  other error, or a derivative where a refusal is due, is a difference.

Tolerance, and why. The references are solved to rounding (the optimisers' by
``tight_minimum``; MINPACK and the bracketing solvers to 1e-14; quadratures to 1e-13;
ODEs at rtol = atol = 1e-10, whose adaptive steps change with theta, so re-solves carry
noise of about 1e-9). A central difference with step h carries that noise over h plus a
truncation error of order h^2: h = 1e-5 (relative to max(1, |theta|)) for the optimisers
and roots, 1e-4 for ODEs (some grow exponentially), 1e-3 for ``minimize_scalar`` (golden
section finds x* to sqrt(eps)) and quadratures. The comparison allows
``|J - FD| <= tol (|FD| + max |FD|)`` with tol = 1e-4, one to two orders of magnitude above
that noise, plus 10 times how far the case's method stopped from the reference's
solution, relative to its size (about 1e-12 for the tight methods, up to 1e-4 where
Powell stops short with bounds: derivatives are as accurate as the solve), while a wrong
active set, a missed term (the envelope theorem's, a closure's parameter) or a badly
resolved adjoint quadrature is an O(1) to 1e-3 error. Bounds placed near a solution sit
2e-4 to 6e-4 (relative to 1 + |x|) from it: inside chainrule's ``NEAR_BOUND`` (1e-3),
far beyond the differences' step.
"""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as onp
import scipy.optimize as sopt

import chainrule
import chainrule.numpy as cnp
from chainrule.scipy import integrate as cintegrate
from chainrule.scipy import optimize as coptimize

from ._compare import Outcome, differences, snapshot, unchanged
from ._runner import Refusal

NAME = "solvers"
CI_CASES = 12  # (solves are slow: about 1 s a case on the shared machine)

RTOL = 1e-4

# SciPy methods whose answer is not reproducible bit for bit: the same call, the same
# arguments, gives different last digits from one call to the next (trust-krylov's trlib
# subproblem solver: case 2458's objective, minimized 300 times by SciPy alone with the
# same jac and hessp, gave four answers differing from the 8th digit). The traced call's
# value is compared with the plain one to that spread there.
UNREPRODUCIBLE = {"minimize trust-krylov"}
UNREPRODUCIBLE_RTOL = 1e-6


@dataclasses.dataclass
class Case:
    kind: str
    source: str
    theta: onp.ndarray
    step: float  # central differences' step, relative to max(1, |theta_i|)
    refused: str = ""  # the error class a deliberately degenerate case must raise

    def __str__(self) -> str:
        expect = f"  # must raise {self.refused}" if self.refused else ""
        return (f"# {self.kind}\n{self.source}\n# theta = {self.theta.tolist()!r}{expect}\n"
                f"# differences step {self.step:g}")


def generate(rng: onp.random.Generator) -> Case:
    kind = rng.choice(list(BUILDERS), p=WEIGHTS)
    return BUILDERS[kind](rng)


# ----------------------------------------------------------------------------- checking
def namespace() -> dict:
    return {"np": cnp, "onp": onp, "so": coptimize, "si": cintegrate,
            "tight_minimum": tight_minimum}


def compiled(case: Case, name: str = "solve"):
    ns = namespace()
    exec(compile(case.source, f"<solvers case: {case.kind}>", "exec"), ns)  # noqa: S102
    return ns.get(name)


def reference_of(case: Case, solve):
    """What the central differences re-solve: the case's ``reference(theta)`` where it has
    one (a minimisation problem re-solved to rounding by ``tight_minimum`` from the case
    method's solution, so in its basin), else ``solve`` itself."""
    return compiled(case, "reference") or solve


def tight_minimum(objective, x0, th, bounds=None):
    """x*, f(x*) and the gradient there, solved to rounding: L-BFGS-B with the exact
    gradient (no stop on the objective's change), then Newton steps on the coordinates no
    bound holds. The reference the minimisers' derivatives are compared with: the
    derivative is the problem's (of its exact solution), not a method's (an interior-point
    method's x stops inside an active bound, Nelder-Mead's on a bound short of an interior
    minimum, CG's precision varies with theta)."""
    gradient = chainrule.grad(objective)
    lo, hi = onp.full(len(x0), -onp.inf), onp.full(len(x0), onp.inf)
    for i, (a, b) in enumerate(bounds or [(None, None)] * len(x0)):
        lo[i] = -onp.inf if a is None else float(a)
        hi[i] = onp.inf if b is None else float(b)
    res = sopt.minimize(lambda x: float(objective(x, th)), onp.clip(x0, lo, hi),
                        jac=lambda x: onp.asarray(gradient(x, th), dtype=float),
                        method="L-BFGS-B", bounds=list(zip(lo, hi)),
                        options={"gtol": 1e-15, "ftol": 0.0, "maxiter": 20000})
    x = res.x
    for _ in range(8):  # (small Newton steps only: L-BFGS-B has found the basin)
        g = onp.asarray(gradient(x, th), dtype=float)
        with onp.errstate(invalid="ignore"):
            on_lo = onp.isfinite(lo) & (x - lo <= 1e-12 * (1.0 + onp.abs(lo))) & (g > 0)
            on_hi = onp.isfinite(hi) & (hi - x <= 1e-12 * (1.0 + onp.abs(hi))) & (g < 0)
        x = onp.where(on_lo, lo, onp.where(on_hi, hi, x))
        free = ~(on_lo | on_hi)
        if not free.any():
            break
        h = onp.asarray(chainrule.hessian(objective)(x, th), dtype=float)
        step = onp.linalg.lstsq(h[onp.ix_(free, free)], g[free], rcond=None)[0]
        if not onp.max(onp.abs(step), initial=0.0) <= 1e-4 * (1.0 + onp.max(onp.abs(x))):
            break
        x[free] -= step
        x = onp.clip(x, lo, hi)
    return x, float(objective(x, th)), onp.asarray(gradient(x, th), dtype=float)


def check(case: Case) -> list[str]:
    solve = compiled(case)
    theta = case.theta.copy()
    copies = snapshot([theta])
    plain = Outcome.of(lambda: onp.asarray(solve(theta), dtype=float))
    if plain.error is not None:
        return [f"the plain solve raised {type(plain.error).__name__}: {plain.error}"]
    if not onp.all(onp.isfinite(plain.value)):
        return [f"the plain solve answered {plain.value!r}"]
    reverse = Outcome.of(lambda: chainrule.jacobian(solve)(theta))
    forward = Outcome.of(lambda: chainrule.jacfwd(solve)(theta))
    direction = onp.linspace(1.0, -0.5, theta.size)
    primal = Outcome.of(lambda: chainrule.jvp(solve, (theta,), (direction,))[0])
    out = unchanged([theta], copies)
    errors = [o.error for o in (reverse, forward, primal) if o.error is not None]
    if case.refused:
        if errors and (len(errors) < 3 or any(type(e).__name__ != case.refused
                                               for e in errors)):
            out.append(f"a degenerate case (expected {case.refused}) gave: reverse "
                       f"{reverse!r}; forward {forward!r}")
        elif not errors and not _another_minimum(case, solve, theta, reverse, forward):
            out.append(f"a degenerate case (expected {case.refused}) was answered: reverse "
                       f"{reverse!r}; forward {forward!r}")
        return out
    if errors:
        # SciPy's method may fail to solve a problem built to be well posed, and chainrule
        # then refuses it; where the method's solution is too imprecise to tell whether a
        # bound holds it (the derivative-free methods and the interior-point method) it may
        # call the bound weakly active. A singular system it must not see there.
        allowed = (coptimize.NotConvergedError,)
        if any(case.kind == f"minimize {m}" for m in IMPRECISE):
            allowed += (coptimize.DegenerateBoundError,)
        if case.kind.endswith("huber"):  # (a residual may settle on the loss's switch)
            allowed += (coptimize.NotDifferentiableError,)
        clear = len(errors) == 3 and all(isinstance(e, allowed) for e in errors)
        if clear:
            out.append(Refusal(f"{type(errors[0]).__name__}: {errors[0]}"))
        else:
            out.append(f"reverse {reverse!r}; forward {forward!r}; primal {primal!r}")
        return out
    traced = onp.asarray(primal.value, dtype=float)
    if case.kind in UNREPRODUCIBLE:
        spread = UNREPRODUCIBLE_RTOL * (1.0 + onp.max(onp.abs(plain.value), initial=0.0))
        if not onp.all(onp.abs(traced - plain.value) <= spread):
            out.append(f"the traced call's value {traced!r} is not the plain one "
                       f"{plain.value!r} (to {spread:.2g}: the method's spread)")
    else:
        out += [f"the traced call's value: {d}"
                for d in differences(plain, Outcome(value=traced))]
    reference = reference_of(case, solve)
    fd = central_differences(reference, theta, case.step)
    # (a method that stops short of the solution, as Powell may with bounds, has
    # derivatives as accurate as its solve: the tolerance grows with how far it stopped)
    answer = onp.asarray(reference(theta), dtype=float)
    short = (onp.max(onp.abs(plain.value - answer), initial=0.0)
             / (1.0 + onp.max(onp.abs(answer), initial=0.0)))
    tolerance = (RTOL + 10.0 * short) * (onp.abs(fd) + onp.max(onp.abs(fd), initial=0.0))
    for name, got in (("reverse mode (jacobian)", reverse.value),
                      ("forward mode (jacfwd)", forward.value)):
        got = onp.asarray(got, dtype=float).reshape(fd.shape)
        bad = ~(onp.abs(got - fd) <= tolerance)
        if bad.any():
            i = onp.unravel_index(onp.argmax(onp.where(bad, onp.abs(got - fd), 0)), fd.shape)
            out.append(f"{name} {got[i]!r} and central differences {fd[i]!r} differ at "
                       f"{tuple(int(k) for k in i)} (of {fd.shape}; tolerance {tolerance[i]:.2g})")
    return out


def _another_minimum(case: Case, solve, theta, reverse, forward) -> bool:
    """Whether a case placed to be degenerate was answered rightly: on a nonconvex cost the
    case's method may find another minimum than the one the weak bound was placed at
    (there the bound is clearly held or free), and then the solution has a derivative:
    its one-sided differences of re-solving agree, and both modes answer it."""
    reference = reference_of(case, solve)
    at = onp.asarray(reference(theta), dtype=float)
    right, left = [], []
    for i in range(theta.size):
        e = onp.zeros(theta.size)
        e[i] = case.step * max(1.0, abs(theta[i]))
        right.append((onp.asarray(reference(theta + e), dtype=float) - at) / e[i])
        left.append((at - onp.asarray(reference(theta - e), dtype=float)) / e[i])
    right, left = onp.stack(right, axis=-1), onp.stack(left, axis=-1)
    scale = onp.abs(right) + onp.abs(left) + onp.max(onp.abs(right), initial=0.0)
    tolerance = 10 * RTOL * scale + 1e-9
    if not onp.all(onp.abs(right - left) <= tolerance):
        return False  # (the one-sided derivatives differ: degenerate, and answered)
    central = (right + left) / 2
    return all(onp.all(onp.abs(onp.asarray(o.value, dtype=float).reshape(central.shape)
                                - central) <= tolerance) for o in (reverse, forward))


def central_differences(solve, theta: onp.ndarray, step: float) -> onp.ndarray:
    columns = []
    for i in range(theta.size):
        h = step * max(1.0, abs(theta[i]))
        e = onp.zeros(theta.size)
        e[i] = h
        plus = onp.asarray(solve(theta + e), dtype=float)
        minus = onp.asarray(solve(theta - e), dtype=float)
        columns.append((plus - minus) / (2 * h))
    return onp.stack(columns, axis=-1)


# ----------------------------------------------------------------------------- helpers
def _lit(value) -> str:
    """A literal for the source: floats exactly (repr), arrays as nested lists."""
    if isinstance(value, onp.ndarray):
        if value.size == 0:  # (a nested list would lose the shape)
            return f"onp.zeros({value.shape!r})"
        return f"onp.array({value.tolist()!r})"
    return repr(float(value)) if isinstance(value, (float, onp.floating)) else repr(value)


def _spd(rng, n: int, scale: float = 1.0) -> onp.ndarray:
    m = rng.standard_normal((n, n))
    return scale * (m @ m.T / n + onp.eye(n))


def _case(kind: str, source: str, theta, step: float, refused: str = "") -> Case:
    return Case(kind, textwrap.dedent(source).strip() + "\n", onp.asarray(theta, dtype=float),
                step, refused)


# ----------------------------------------------------------------------------- minimize
# method -> options that solve tightly; derivative-free ones get quadratic objectives
MINIMIZE_TIGHT = {
    "BFGS": {"gtol": 1e-11},
    "CG": {"gtol": 1e-11},
    "L-BFGS-B": {"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000},
    "TNC": {"gtol": 1e-12, "xtol": 1e-14, "maxfun": 5000},
    "SLSQP": {"ftol": 1e-15, "maxiter": 1000},
    "trust-constr": {"gtol": 1e-12, "xtol": 1e-14, "barrier_tol": 1e-12, "maxiter": 5000},
    "Newton-CG": {"xtol": 1e-13},
    "trust-ncg": {"gtol": 1e-11},
    "trust-krylov": {"gtol": 1e-11},
    "trust-exact": {"gtol": 1e-11},
    "dogleg": {"gtol": 1e-11},
    "Powell": {"xtol": 1e-13, "ftol": 1e-15, "maxiter": 20000},
    "Nelder-Mead": {"xatol": 1e-12, "fatol": 1e-15, "maxiter": 40000, "maxfev": 40000},
    "COBYQA": {"initial_tr_radius": 0.5, "final_tr_radius": 1e-11, "maxfev": 20000},
}
DERIVATIVE_FREE = {"Powell", "Nelder-Mead", "COBYQA"}
IMPRECISE = DERIVATIVE_FREE | {"trust-constr"}  # (near bounds, at least)
BOUNDED = {"L-BFGS-B", "TNC", "SLSQP", "trust-constr", "Powell", "Nelder-Mead", "COBYQA"}
NEEDS_CONVEX = {"dogleg", "trust-exact", "trust-ncg", "trust-krylov", "Newton-CG"}

# how each bounded coordinate's bound is placed, from the solution it would have without it
PLACEMENTS = ("none", "far", "held", "near inside", "near outside", "weak")


def _minimize_problem(rng, n: int, p: int, quadratic: bool):
    """(objective source, theta): 1/2 (x - c)^T A (x - c) with c = c0 + B theta, plus convex
    non-quadratic terms coupled to theta."""
    a, c0, b = _spd(rng, n), rng.standard_normal(n), rng.standard_normal((n, p))
    theta = rng.standard_normal(p)
    body = f"0.5 * np.dot(x - c, np.dot({_lit(a)}, x - c))"
    if not quadratic:
        q, r = float(rng.uniform(0.05, 0.3)), float(rng.uniform(0.1, 0.5))
        body += f" + {q!r} * np.sum(x ** 4) + {r!r} * th[0] * np.sum(np.cosh(0.3 * x))"
        theta[0] = abs(theta[0]) + 0.2  # (so that the cosh term stays convex)
    source = f"""
    def objective(x, th):
        c = {_lit(c0)} + np.dot({_lit(b)}, th)
        return {body}
    """
    return textwrap.dedent(source), theta


def build_minimize(rng) -> Case:
    method = str(rng.choice(sorted(MINIMIZE_TIGHT)))
    free = method in DERIVATIVE_FREE
    n, p = int(rng.integers(1, 4 if not free else 3)), int(rng.integers(1, 3))
    objective_source, theta = _minimize_problem(rng, n, p, quadratic=free)
    ns = namespace()
    exec(objective_source, ns)  # noqa: S102
    objective = ns["objective"]
    bounds = None
    refused = ""
    if method in BOUNDED and rng.random() < 0.8:
        bounds, refused = _place_bounds(rng, objective, theta, n)
    bounds_text = "None"
    if bounds is not None:
        pairs = [(_traced_bound(rng, lo, theta), _traced_bound(rng, hi, theta))
                 for lo, hi in bounds]
        bounds_text = "[" + ", ".join(f"({lo}, {hi})" for lo, hi in pairs) + "]"
    start = _start(rng, n, bounds)
    parts = ["res.x"]
    reference = ["x"]
    if rng.random() < 0.5:
        parts.append("np.reshape(res.fun, (1,))")
        reference.append("[fun]")
    if method in ("BFGS", "L-BFGS-B", "TNC", "SLSQP", "trust-exact") and rng.random() < 0.3:
        parts.append("res.jac")
        reference.append("jac")
    fit = (f"so.minimize(objective, {_lit(start)}, args=(th,), method={method!r},\n"
           f"                           bounds={bounds_text}, "
           f"options={MINIMIZE_TIGHT[method]!r})")
    source = objective_source + _fit_solve_reference(fit, "objective", bounds_text, parts,
                                                     reference)
    return _case(f"minimize {method}", source, theta, 1e-5, refused)


def _fit_solve_reference(fit: str, objective: str, bounds_text: str, parts: list,
                         reference: list) -> str:
    """A minimiser's ``fit(th)`` (the call), ``solve(th)`` (the output from its result
    ``res``: ``parts``) and ``reference(th)`` (the same from ``tight_minimum``'s x, fun and
    jac: ``reference``), as source."""
    return textwrap.dedent(f"""
    def fit(th):
        return {fit}

    def solve(th):
        res = fit(th)
        return np.concatenate([{', '.join(parts)}])

    def reference(th):
        x, fun, jac = tight_minimum({objective}, fit(th).x, th, {bounds_text})
        return onp.concatenate([{', '.join(reference)}])
    """)


def _traced_bound(rng, value, theta) -> str:
    """A bound's source: None, its value, or (a third of the time) a function of theta
    with that value at theta (x* moves with a bound that holds it)."""
    if value is None:
        return "None"
    if rng.random() < 0.3:
        k, slope = int(rng.integers(theta.size)), float(rng.uniform(-1.0, 1.0))
        return f"{_lit(value)} + {slope!r} * (th[{k}] - {_lit(theta[k])})"
    return _lit(value)


def _place_bounds(rng, objective, theta, n):
    """Bounds for each coordinate around the solution: none, far, holding it, near it inside
    or outside (within chainrule's NEAR_BOUND, well beyond the solve's noise and the
    differences' step), or exactly at it (weakly active: to be refused)."""
    kinds = [str(rng.choice(PLACEMENTS, p=[0.15, 0.2, 0.25, 0.15, 0.15, 0.1])) for _ in range(n)]
    # first the bounds that change the solution (held, far), then the ones placed at it
    bounds = [(None, None)] * n
    x_free = tight_minimum(objective, onp.zeros(n), theta)[0]
    for i, kind in enumerate(kinds):
        side = int(rng.integers(2))
        if kind == "far":
            width = float(rng.uniform(1.0, 3.0))
            bounds[i] = (x_free[i] - width, x_free[i] + width)
        elif kind == "held":
            shift = float(rng.uniform(0.2, 1.0))
            bounds[i] = ((x_free[i] + shift, None) if side else (None, x_free[i] - shift))
    bounds, x_held = _clearly_held(objective, theta, bounds)
    weak = False
    for i, kind in enumerate(kinds):
        side = int(rng.integers(2))
        if kind in ("near inside", "near outside"):
            gap = 2e-4 * (1.0 + abs(x_held[i])) * float(rng.uniform(1.0, 3.0))
            gap = gap if kind == "near inside" else -gap
            bounds[i] = (x_held[i] - gap, None) if side else (None, x_held[i] + gap)
        elif kind == "weak":
            weak = True
            bounds[i] = (x_held[i], None) if side else (None, x_held[i])
    near_outside = any(k == "near outside" for k in kinds)
    # (a weak bound is exactly weak only where no near-outside bound moves the solution)
    refused = "DegenerateBoundError" if weak and not near_outside else ""
    if weak and near_outside:
        bounds = [b if k != "weak" else (None, None) for b, k in zip(bounds, kinds)]
    if all(b == (None, None) for b in bounds):
        bounds[0] = (x_held[0] - 5.0, None)
    return bounds, refused


def _clearly_held(objective, theta, bounds):
    """``bounds`` without those that hold the solution with a multiplier under 1e-3 (a
    held placement must be well posed: on a flat cost, such as Huber's linear part, it
    can end up weakly active), and the solution they give."""
    while True:
        x, _, g = tight_minimum(objective, onp.zeros(len(bounds)), theta, bounds)
        weak = [i for i, (lo, hi) in enumerate(bounds)
                if (lo is not None and x[i] <= lo and g[i] < 1e-3)
                or (hi is not None and x[i] >= hi and -g[i] < 1e-3)]
        if not weak:
            return bounds, x
        bounds = [(None, None) if i in weak else b for i, b in enumerate(bounds)]


def _start(rng, n, bounds) -> onp.ndarray:
    """A start strictly inside the bounds."""
    x0 = rng.standard_normal(n) * 0.5
    if bounds is not None:
        for i, (lo, hi) in enumerate(bounds):
            lo_ = -onp.inf if lo is None else float(lo)
            hi_ = onp.inf if hi is None else float(hi)
            if onp.isfinite(lo_) and onp.isfinite(hi_):
                x0[i] = lo_ + (hi_ - lo_) * float(rng.uniform(0.3, 0.7))
            elif onp.isfinite(lo_):
                x0[i] = lo_ + float(rng.uniform(0.5, 1.5))
            elif onp.isfinite(hi_):
                x0[i] = hi_ - float(rng.uniform(0.5, 1.5))
    return x0


# ----------------------------------------------------------------------------- least squares
# SciPy's losses rho(z), z = (r / f_scale)^2, written out for the reference
LOSSES = {
    "linear": "z",
    "soft_l1": "2.0 * (np.sqrt(1.0 + z) - 1.0)",
    "cauchy": "np.log1p(z)",
    "arctan": "np.arctan(z)",
    "huber": "np.where(z <= 1.0, z, 2.0 * np.sqrt(np.maximum(z, 1.0)) - 1.0)",
}


def build_least_squares(rng) -> Case:
    method = str(rng.choice(["trf", "dogbox", "lm"]))
    loss = "linear" if method == "lm" else str(rng.choice(sorted(LOSSES)))
    m, n, p = int(rng.integers(4, 8)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
    t = onp.linspace(0.0, 1.0, m)
    x_design = onp.stack([t**k for k in range(n)], axis=1)
    y0, dy = rng.standard_normal(m), rng.standard_normal((m, p)) * 0.5
    theta = rng.standard_normal(p) * 0.5
    source = textwrap.dedent(f"""
    def residuals(w, th):
        y = {_lit(y0)} + np.dot({_lit(dy)}, th)
        return np.dot({_lit(x_design)}, w) + 0.2 * np.tanh(w[0] * {_lit(t)}) - y

    def cost(w, th):  # (what least_squares minimises, for the reference)
        z = (residuals(w, th) / 0.7) ** 2
        return 0.5 * 0.7 ** 2 * np.sum({LOSSES[loss]})
    """)
    bounds, start, refused = None, onp.zeros(n), ""
    if method != "lm" and rng.random() < 0.6:
        ns = namespace()
        exec(source, ns)  # noqa: S102
        bounds, refused = _place_bounds(rng, ns["cost"], theta, n)
        start = _start(rng, n, bounds)
    bounds_text = "None"
    lsq_bounds = ""
    if bounds is not None:
        bounds_text = "[" + ", ".join(f"({_lit(lo) if lo is not None else None}, "
                                      f"{_lit(hi) if hi is not None else None})"
                                      for lo, hi in bounds) + "]"
        lb = onp.array([-onp.inf if lo is None else lo for lo, _ in bounds])
        ub = onp.array([onp.inf if hi is None else hi for _, hi in bounds])
        lsq_bounds = f", bounds=({_lit(lb)}, {_lit(ub)})".replace("inf", "onp.inf")
    parts, reference = ["res.x"], ["x"]
    if rng.random() < 0.5:
        parts.append("np.reshape(res.cost, (1,))")
        reference.append("[fun]")
    if rng.random() < 0.3:
        parts.append("res.fun")
        reference.append("residuals(x, th)")
    fit = (f"so.least_squares(residuals, {_lit(start)}, args=(th,), method={method!r},\n"
           f"                                loss={loss!r}, f_scale=0.7, xtol=1e-15, "
           f"ftol=1e-15,\n                                gtol=1e-15{lsq_bounds})")
    source += _fit_solve_reference(fit, "cost", bounds_text, parts, reference)
    return _case(f"least_squares {method} {loss}", source, theta, 1e-5, refused)


# ----------------------------------------------------------------------------- roots
ROOT_METHODS = {
    "hybr": "tol=1e-14",
    "lm": "tol=1e-14",
    "krylov": "options={'fatol': 1e-13, 'xatol': 1e-14}",
    "df-sane": "options={'fatol': 1e-14, 'maxfev': 5000}",
}


def build_root(rng) -> Case:
    method = str(rng.choice(sorted(ROOT_METHODS)))
    n, p = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    if method != "krylov" and rng.random() < 0.05:
        n = 0  # an empty system: SciPy answers x = [] (krylov's own norm fails on it)
    a = _spd(rng, n) + 0.3 * rng.standard_normal((n, n))
    c, b = rng.standard_normal(n), rng.standard_normal((n, p))
    theta = rng.standard_normal(p)
    closed = rng.random() < 0.5  # theta closed over instead of passed in args
    call = "lambda x: residual(x, th)" if closed else "residual"
    args = "" if closed else ", args=(th,)"
    source = f"""
    def residual(x, th):
        return np.dot({_lit(a)}, x) + 0.2 * np.tanh(x) + {_lit(c)} - np.dot({_lit(b)}, th)

    def solve(th):
        res = so.root({call}, onp.zeros({n}){args}, method={method!r}, {ROOT_METHODS[method]})
        return np.concatenate([res.x, res.fun])
    """
    return _case(f"root {method}", source, theta, 1e-5)


SCALAR_SOLVERS = ("brentq", "brenth", "ridder", "bisect", "toms748", "newton", "newton fprime",
                  "secant", "root_scalar", "fixed_point")


def build_scalar_root(rng) -> Case:
    solver = str(rng.choice(SCALAR_SOLVERS))
    a, c = float(rng.uniform(0.5, 2.0)), float(rng.uniform(-1.0, 1.0))
    theta = onp.array([float(rng.uniform(-2.0, 2.0)), float(rng.uniform(0.5, 1.5))])
    f = f"np.sinh(x) + {a!r} * th[1] * x - (th[0] + {c!r})"
    call = {
        "brentq": "so.brentq(f, -10.0, 10.0, args=(th,), xtol=1e-14)",
        "brenth": "so.brenth(f, -10.0, 10.0, args=(th,), xtol=1e-14)",
        "ridder": "so.ridder(f, -10.0, 10.0, args=(th,), xtol=1e-14)",
        "bisect": "so.bisect(f, -10.0, 10.0, args=(th,), xtol=1e-14)",
        "toms748": "so.toms748(f, -10.0, 10.0, args=(th,), xtol=1e-14)",
        "newton": "so.newton(f, 0.1, args=(th,), tol=1e-14, maxiter=200)",
        # (fprime closing over th, as users write it)
        "newton fprime": (f"so.newton(lambda x: f(x, th), 0.1, tol=1e-14, "
                          f"fprime=lambda x: np.cosh(x) + {a!r} * th[1])"),
        "secant": "so.newton(f, 0.1, x1=0.3, args=(th,), tol=1e-14, maxiter=200)",
        "root_scalar": "so.root_scalar(f, args=(th,), bracket=[-10.0, 10.0], xtol=1e-14).root",
        "fixed_point": ("so.fixed_point(lambda x, th: 0.5 * np.cos(x) * th[1] + th[0], 0.3, "
                        "args=(th,), xtol=1e-14)"),
    }[solver]
    source = f"""
    def f(x, th):
        return {f}

    def solve(th):
        return np.reshape({call}, (1,))
    """
    return _case(f"scalar root {solver}", source, theta, 1e-5)


def build_minimize_scalar(rng) -> Case:
    method = str(rng.choice(["brent", "golden", "bounded"]))
    shift = float(rng.uniform(-1.0, 1.0))
    theta = onp.array([float(rng.uniform(-1.0, 1.0)), float(rng.uniform(0.5, 1.5))])
    f = f"th[1] * np.cosh(x - th[0]) + 0.3 * (x - {shift!r}) ** 2"
    refused = ""
    if method == "bounded":
        # (f is convex; its minimum, Newton-polished to rounding so that a weak bound is
        # weak to rounding)
        x_plain = sopt.minimize_scalar(
            lambda x: theta[1] * onp.cosh(x - theta[0]) + 0.3 * (x - shift) ** 2,
            bracket=(-3.0, 0.0, 3.0), tol=1e-12).x
        for _ in range(4):
            x_plain -= ((theta[1] * onp.sinh(x_plain - theta[0]) + 0.6 * (x_plain - shift))
                        / (theta[1] * onp.cosh(x_plain - theta[0]) + 0.6))
        kind = str(rng.choice(["far", "held", "near inside", "weak"]))
        offset = {"far": 2.0, "held": -0.5, "near inside": 2e-2, "weak": 0.0}[kind]
        refused = "DegenerateBoundError" if kind == "weak" else ""
        if rng.random() < 0.5:
            bounds = (x_plain - offset, x_plain + 3.0)
        else:
            bounds = (x_plain - 3.0, x_plain + offset)
        call = (f"so.minimize_scalar(f, bounds=({_lit(bounds[0])}, {_lit(bounds[1])}), "
                f"args=(th,), method='bounded', options={{'xatol': 1e-12}})")
    else:
        call = (f"so.minimize_scalar(f, bracket=(-3.0, 3.0), args=(th,), method={method!r}, "
                f"tol=1e-12)")
    source = f"""
    def f(x, th):
        return {f}

    def solve(th):
        res = {call}
        return np.stack([res.x, res.fun])
    """
    # (golden section locates x* to sqrt(eps): a wide step)
    return _case(f"minimize_scalar {method}", source, theta, 1e-3, refused)


# ----------------------------------------------------------------------------- quad
def build_quad(rng) -> Case:
    theta = onp.array([float(rng.uniform(0.5, 2.0)), float(rng.uniform(-2.0, 2.0)),
                       float(rng.uniform(-1.0, 0.0)), float(rng.uniform(1.0, 3.0))])
    infinite = rng.random() < 0.3
    upper = "onp.inf" if infinite else "th[3]"
    points = ", points=[0.5 * (th[2] + th[3])]" if not infinite and rng.random() < 0.5 else ""
    source = f"""
    def integrand(x, th):
        return np.exp(-th[0] * x * x) * np.cos(th[1] * x) + 0.1 * th[1] * x * np.exp(-x * x)

    def solve(th):
        value, _ = si.quad(integrand, th[2], {upper}, args=(th,), epsabs=1e-14,
                           epsrel=1e-13{points})
        return np.reshape(value, (1,))
    """
    return _case("quad", source, theta, 1e-4)


# ----------------------------------------------------------------------------- solve_ivp
IVP_METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")
STIFF_METHODS = ("Radau", "BDF", "LSODA")


def build_solve_ivp(rng) -> Case:
    system = str(rng.choice(["stiff linear", "lotka-volterra", "van der pol", "decay",
                             "blow-up"], p=[0.23, 0.23, 0.23, 0.23, 0.08]))
    methods = STIFF_METHODS if system == "stiff linear" else IVP_METHODS
    if system == "blow-up":  # (SciPy's LSODA in solve_ivp steps on past the blow-up for ever)
        methods = tuple(m for m in IVP_METHODS if m != "LSODA")
    method = str(rng.choice(methods))
    tol = "rtol=1e-10, atol=1e-10" if method != "RK23" else "rtol=1e-8, atol=1e-10"
    t1 = float(rng.uniform(1.0, 3.0))
    n_out = int(rng.integers(1, 5))
    t_eval = onp.sort(rng.uniform(0.05, t1, n_out))
    if system == "stiff linear":
        stiffness = float(rng.choice([50.0, 300.0, 1000.0]))
        angle, stretch = float(rng.uniform(0.0, onp.pi)), float(rng.uniform(0.5, 2.0))
        mix = onp.array([[onp.cos(angle), -onp.sin(angle)],
                         [onp.sin(angle), onp.cos(angle)]]) @ onp.diag([1.0, stretch])
        s0 = mix @ onp.diag([-1.0, -stiffness]) @ onp.linalg.inv(mix)
        s1 = 0.5 * rng.standard_normal((2, 2))
        rhs = f"np.dot({_lit(s0)} + th[0] * {_lit(s1)}, y)"
        theta, y0 = onp.array([float(rng.uniform(-0.3, 0.3)), 0.0]), "onp.array([1.0, 1.0])"
    elif system == "lotka-volterra":
        rhs = "np.stack([th[0] * y[0] - 0.4 * y[0] * y[1], -0.9 * y[1] + th[1] * y[0] * y[1]])"
        theta, y0 = onp.array([float(rng.uniform(0.8, 1.2)), float(rng.uniform(0.2, 0.4))]), \
            "onp.array([1.2, 0.8])"
    elif system == "van der pol":
        rhs = "np.stack([y[1], th[0] * (1.0 - y[0] ** 2) * y[1] - y[0]])"
        theta, y0 = onp.array([float(rng.uniform(0.5, 2.0)), 0.0]), "onp.array([2.0, 0.0])"
    elif system == "blow-up":  # (see _ODEINT_SYSTEMS: the solve fails before t1 >= 2)
        rhs = "th[0] * y ** 2"
        theta, y0 = onp.array([float(rng.uniform(0.8, 1.5)), 0.0]), "onp.array([1.0, 0.8])"
        t1 = float(rng.uniform(2.0, 3.0))
        t_eval = onp.sort(rng.uniform(0.05, t1, n_out))
    else:
        rhs = "-th[0] * y * (1.0 + 0.5 * np.sin(t))"
        theta, y0 = onp.array([float(rng.uniform(0.5, 1.5)), 0.0]), "onp.array([1.5, -0.5])"
    theta[1] = theta[1] if system == "lotka-volterra" else float(rng.uniform(-0.2, 0.2))
    # theta[1] also shifts y0 unless the system uses it: the derivative w.r.t. y0
    start = y0 if system == "lotka-volterra" else f"{y0} + th[1] * onp.array([1.0, 0.5])"
    closed = rng.random() < 0.4
    fun = "lambda t, y: rhs(t, y, th)" if closed else "rhs"
    args = "" if closed else ", args=(th,)"
    event = system in ("decay", "lotka-volterra") and rng.random() < 0.3
    if event:  # (crossed well before t1 whatever theta: 1.5 exp(-0.3 * 3) = 0.6)
        level = 0.9 if system == "decay" else 1.0
        t1 = float(rng.uniform(4.0, 6.0))
        t_eval = onp.sort(rng.uniform(0.05, t1, n_out))
        source = f"""
        def rhs(t, y, th):
            return {rhs}

        def solve(th):
            def crossing(t, y, *args):  # (closing over th, as fun may)
                return y[0] - {level!r} * (1.0 + 0.1 * th[0])

            crossing.terminal = {bool(rng.random() < 0.5)!r}
            sol = si.solve_ivp({fun}, (0.0, {t1!r}), {start}, method={method!r},
                               events=crossing{args}, t_eval={_lit(t_eval)}, {tol})
            last = np.reshape(sol.y, (2, -1))[:, -1:]  # (none after an early terminal event)
            return np.concatenate([sol.t_events[0][:1], np.ravel(sol.y_events[0][:1]),
                                   np.ravel(last)])
        """
    else:
        dense_traced_end = rng.random() < 0.3
        t_span_end = f"{t1!r} + 0.0 * th[0]" if dense_traced_end else repr(t1)
        source = f"""
        def rhs(t, y, th):
            return {rhs}

        def solve(th):
            sol = si.solve_ivp({fun}, (0.0, {t_span_end}), {start}, method={method!r},
                               t_eval={_lit(t_eval)}{args}, {tol})
            return np.reshape(sol.y, (-1,))
        """
    return _case(f"solve_ivp {system} {method}" + (" event" if event else ""), source, theta,
                 1e-4, "RuntimeError" if system == "blow-up" else "")


# ----------------------------------------------------------------------------- odeint
_ODEINT_SYSTEMS = {  # the right-hand sides of build_solve_ivp's systems, and a start
    "lotka-volterra": ("np.stack([th[0] * y[0] - 0.4 * y[0] * y[1], "
                       "-0.9 * y[1] + th[1] * y[0] * y[1]])", "onp.array([1.2, 0.8])"),
    "van der pol": ("np.stack([y[1], th[0] * (1.0 - y[0] ** 2) * y[1] - y[0]])",
                    "onp.array([2.0, 0.0]) + th[1] * onp.array([1.0, 0.5])"),
    "decay": ("-th[0] * y * (1.0 + 0.5 * np.sin(t))",
              "onp.array([1.5, -0.5]) + th[1] * onp.array([1.0, 0.5])"),
    # y' = th0 y^2 blows up at t = 1 / (th0 y0) < 2: LSODA fails ("excess work") and SciPy
    # answers what it reached, with a warning; its derivative must raise, not answer
    "blow-up": ("th[0] * y ** 2", "onp.array([1.0, 0.8]) + th[1] * onp.array([0.1, 0.0])"),
}


def build_odeint(rng) -> Case:
    system = str(rng.choice(list(_ODEINT_SYSTEMS)))
    rhs, start = _ODEINT_SYSTEMS[system]
    theta = {"lotka-volterra": [rng.uniform(0.8, 1.2), rng.uniform(0.2, 0.4)],
             "van der pol": [rng.uniform(0.5, 2.0), rng.uniform(-0.2, 0.2)],
             "decay": [rng.uniform(0.5, 1.5), rng.uniform(-0.2, 0.2)],
             "blow-up": [rng.uniform(0.8, 1.5), rng.uniform(-0.2, 0.2)]}[system]
    end = 2.0 if system == "blow-up" else float(rng.uniform(1.0, 3.0))
    times = onp.concatenate([[0.0], onp.sort(rng.uniform(0.05, end, int(rng.integers(1, 4)))),
                             [end]])
    tfirst = rng.random() < 0.3
    head = "t, y, th" if tfirst else "y, t, th"
    closed = rng.random() < 0.4
    fun = f"lambda {head[:4]}: rhs({head[:4]}, th)" if closed else "rhs"
    args = "" if closed else ", args=(th,)"
    source = f"""
    def rhs({head}):
        return {rhs}

    def solve(th):
        ys = si.odeint({fun}, {start}, {_lit(times)}{args}, rtol=1e-10, atol=1e-10,
                       tfirst={tfirst!r})
        return np.reshape(ys[1:], (-1,))
    """
    return _case(f"odeint {system}", source, onp.asarray(theta, dtype=float), 1e-4,
                 "RuntimeError" if system == "blow-up" else "")


BUILDERS = {
    "minimize": build_minimize,
    "least_squares": build_least_squares,
    "root": build_root,
    "scalar root": build_scalar_root,
    "minimize_scalar": build_minimize_scalar,
    "quad": build_quad,
    "solve_ivp": build_solve_ivp,
    "odeint": build_odeint,
}
WEIGHTS = onp.array([0.35, 0.12, 0.1, 0.1, 0.08, 0.05, 0.2, 0.08])
WEIGHTS = WEIGHTS / WEIGHTS.sum()
