"""chainrule.scipy.integrate: ``odeint``, ``solve_ivp`` and ``quad`` with derivatives
that never go through the solvers' internal steps.

``odeint(func, y0, t, args=())`` solves dy/dt = func(y, t, *args) with SciPy's
odeint:

- reverse mode solves the adjoint ODE backwards in time, segment by segment
  between the output times, for the state y, the adjoint a (da/dt = -a df/dy)
  and the parameter integrals (dp/dt = -a df/dargs); the cotangent of each output
  time t_i is g_i . f(y_i, t_i), and that of t_0 is -a(t_0) . f(y_0, t_0);
- forward mode integrates the forward sensitivity s (ds/dt = df/dy s +
  df/dargs dargs) from s(t_0) = dy0 - f(y_0, t_0) dt_0; the output tangent is
  s(t_i) + f(y_i, t_i) dt_i.

The adjoint and sensitivity systems are solved by ``odeint`` itself, so they are
differentiable in turn: derivatives of every order, in both modes (as autograd's
odeint, whose adjoint is built the same way).

``solve_ivp`` uses the same equations with any of SciPy's methods; for first
derivatives its adjoint reads y(t) from the forward solve's dense interpolant
(checkpoints) instead of solving y backwards, and it runs the VJP (adjoint) or JVP
(sensitivities) of the right-hand side as a program staged once per solve with
``chainrule.jit`` (``_staged``). Event times are differentiated by the implicit
function theorem on the event function. ``quad`` differentiates the limits by
Leibniz's rule and the integrand's parameters by integrating the integrand's
derivative.

The functions must be written with chainrule.numpy (chainrule differentiates them).
Traced values they close over are found and differentiated like ``args``. Gradients
are exact up to the solvers' tolerances (``rtol``, ``atol``, ``epsabs``, ``epsrel``
are passed on to every solve).
"""

from __future__ import annotations

import bisect as _bisect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as _np
import scipy.integrate as _si

from .._core import forward, reverse
from .._core.pytree import tree_flatten, tree_map, tree_unflatten
from .._core.replay import subvals
from .._core.rule_table import primitive_vjps
from .._core.rules import defjvp_argnums
from .._core.tracer import decided, derivative_free, front_ends, getval, isbox, primitive
from ..jit._staging import StagingError, StagingNode
from ..numpy import _namespace
from ..numpy import numpy_wrapper as anp
from ..numpy.rules._helpers import match_dtype
from ._closure import holds_traced, lift_closure, refuse_traced
from ._staged import Staged
from .optimize._driver import _solve as _implicit_solve
from .optimize._results import _field, _guarded_fields

_namespace.install(globals(), _si)  # SciPy's names; those defined below win

_SOLVER_KWARGS = (
    "rtol",
    "atol",
    "hmax",
    "hmin",
    "mxstep",
    "h0",
    "tcrit",
    "ixpr",
    "mxhnil",
    "mxordn",
    "mxords",
    "tfirst",
)


@primitive
def odeint_args(func, y0, t, *args, **kwargs):
    """SciPy's odeint with the extra arguments of ``func`` passed positionally (traced)."""
    return _si.odeint(func, y0, t, args=args, **kwargs)


def odeint(func: Callable, y0: Any, t: Any, args: Any = (), **kwargs: Any) -> Any:
    """``scipy.integrate.odeint``, differentiable w.r.t. y0, t and args.

    ``args`` may hold containers of arrays (a list of layers' weights, a dict...): their
    leaves are differentiated, as autograd's odeint does; so are the traced values ``func``
    closes over (closure variables, default arguments)."""
    unsupported = set(kwargs) - set(_SOLVER_KWARGS)
    if unsupported:
        raise TypeError(
            f"chainrule.scipy.integrate.odeint does not support "
            f"{', '.join(sorted(unsupported))} (Dfun, full_output...): only the "
            f"solver tolerances and step controls {', '.join(_SOLVER_KWARGS)}."
        )
    if not isinstance(args, tuple):
        args = (args,)
    # the traced leaves of args and of func's closure become odeint_args' parameters
    front = _FrontEnd()
    pure, params = _lift(func, args, front)
    pure = _array_valued(pure)
    y0, t = front.unwrap((y0, t))
    lead = (_np.asarray(getval(y0)), _np.asarray(getval(t))[0])
    _check_lifted("odeint", pure, lead[::-1] if kwargs.get("tfirst") else lead, params)
    return front.answer(odeint_args(pure, y0, t, *params, **kwargs))


def _with_params(func, args, traced):
    """``f(y, t, params)``: func with the extra arguments at ``traced`` replaced by
    ``params``."""

    def f(y, s, params):
        return func(y, s, *subvals(args, zip(traced, params)))

    return f


def _plain(func, kwargs):
    """``func`` as f(y, t, *args) whatever the caller's ``tfirst``."""
    if kwargs.get("tfirst"):
        return lambda y, t, *a: func(t, y, *a)
    return func


def _kwargs_with_tfirst(kwargs):
    kw = dict(kwargs)
    kw.pop("tfirst", None)
    return kw


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


# ----------------------------------------------------------------------------- reverse mode
def _odeint_vjp(g, argnums, ans, args, kwargs):
    """Cotangents of y0, t, args by the adjoint ODE, solved backwards segment by segment."""
    func, y0, t, *params = args
    func, kw = _plain(func, kwargs), _kwargs_with_tfirst(kwargs)
    traced = tuple(i - 3 for i in argnums if i >= 3)
    ys = anp.reshape(ans, (len(getval(t)), -1))
    g = anp.reshape(g, anp.shape(ys))
    d = anp.shape(ys)[1]
    f_params = _with_params(func, params, traced)
    n_params = sum(int(_np.size(getval(params[i]))) for i in traced)

    def adjoint(state, s, *all_params):
        y, a = state[:d], state[d : 2 * d]
        f = _with_params(func, all_params, traced)
        vjp, fy = reverse.make_vjp(
            lambda yp: f(yp[0], s, yp[1]), (y, [all_params[i] for i in traced])
        )
        ybar, pbars = vjp(-a)
        return _concat([fy, ybar, *pbars])

    augmented = _compiled(adjoint, time_first=False)

    a = g[-1]
    pbar = _np.zeros(n_params)
    tbars = []
    for i in range(len(getval(t)) - 1, 0, -1):
        tbars.append(anp.dot(g[i], anp.ravel(func(ys[i], t[i], *params))))
        state = _concat([ys[i], a, pbar])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # func may not depend on some argument
            end = odeint_args(augmented, state, anp.stack([t[i], t[i - 1]]), *params, **kw)[-1]
        a, pbar = end[d : 2 * d], end[2 * d :]
        if i > 1:
            a = a + g[i - 1]
    tbars.append(-anp.dot(a, anp.ravel(f_params(ys[0], t[0], [params[i] for i in traced]))))
    ybar = a + g[0]
    by_param = dict(zip(traced, _split(pbar, [params[i] for i in traced])))
    out = []
    for i in argnums:
        if i == 1:
            out.append(match_dtype(anp.reshape(ybar, _np.shape(getval(y0))), y0))
        elif i == 2:
            out.append(match_dtype(anp.stack(tbars[::-1]), t))
        else:
            out.append(match_dtype(by_param[i - 3], params[i - 3]))
    return tuple(out)


primitive_vjps[odeint_args] = _odeint_vjp


# ----------------------------------------------------------------------------- forward mode
def _odeint_jvp(argnums, tangents, ans, args, kwargs):
    """Tangent by the forward sensitivity s: ds/dt = df/dy s + df/dargs dargs."""
    func, y0, t, *params = args
    func, kw = _plain(func, kwargs), _kwargs_with_tfirst(kwargs)
    tangents = dict(zip(argnums, tangents))
    traced = tuple(i - 3 for i in argnums if i >= 3)
    ys = anp.reshape(ans, (len(getval(t)), -1))
    d = anp.shape(ys)[1]
    dparams = [tangents[i + 3] for i in traced]

    def sensitivity(state, s, *params_and_dparams):
        y, sens = state[:d], state[d:]
        all_params, dps = params_and_dparams[: len(params)], params_and_dparams[len(params) :]
        f = _with_params(func, all_params, traced)
        fy, dfy = forward.make_jvp(
            lambda yp: f(yp[0], s, yp[1]), (y, [all_params[i] for i in traced])
        )((sens, list(dps)))
        return _concat([fy, dfy * _np.ones(d)])

    augmented = _compiled(sensitivity, time_first=False)

    s0 = anp.ravel(tangents[1]) * 1.0 if 1 in tangents else _np.zeros(d)
    dt = tangents.get(2)
    if dt is not None:
        s0 = s0 - anp.ravel(func(ys[0], t[0], *params)) * dt[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # func may not depend on some argument
        sens = odeint_args(augmented, _concat([ys[0], s0]), t, *params, *dparams, **kw)[:, d:]
    if dt is not None:
        f_all = anp.stack([anp.ravel(func(ys[k], t[k], *params)) for k in range(len(getval(t)))])
        sens = sens + f_all * anp.reshape(dt, (-1, 1))
    return match_dtype(anp.reshape(sens, anp.shape(ans)), ans)


defjvp_argnums(odeint_args, _odeint_jvp)


# ----------------------------------------------------------------------------- closures
class _FrontEnd:
    """Front-end objects (chainrule.Tensor) met among a solver's inputs: each one takes
    part as the value it stands for (a traced value when it requires grad), and traced
    answers are handed back as objects of that front end."""

    def __init__(self):
        self.wrap = None

    def unwrap(self, tree):
        """``tree`` (tuples, lists, dicts) with front-end objects replaced by their values.
        (Not tree_map: a Tensor is itself a pytree, which tree_map would rebuild.)"""
        front_end = front_ends.get(type(tree))
        if front_end is not None:
            self.wrap = front_end.wrap
            return front_end.unwrap(tree)
        if type(tree) in (tuple, list):
            return type(tree)(self.unwrap(item) for item in tree)
        if type(tree) is dict:
            return {key: self.unwrap(item) for key, item in tree.items()}
        return tree

    def answer(self, value):
        return self.wrap(value) if self.wrap is not None and isbox(value) else value


def _lift(fun: Callable, args: tuple, front: _FrontEnd) -> tuple[Callable, list]:
    """``(pure, params)``: the traced values ``fun`` receives in ``args`` or closes over
    (closure cells, defaults: ``lift_closure``) made explicit, so that
    ``pure(*lead, *params) == fun(*lead, *args)`` and SciPy can call ``pure`` on plain
    values. ``_check_lifted`` verifies that nothing traced is left hidden."""
    fun, args = lift_closure(fun, front.unwrap(tuple(args)), front.unwrap)
    leaves, treedef = tree_flatten(args)
    at = [i for i, leaf in enumerate(leaves) if isbox(leaf)]

    def with_params(values) -> tuple:
        full = list(leaves)
        for i, value in zip(at, values):
            full[i] = value
        return tree_unflatten(treedef, full)

    def pure(*call):
        n_lead = len(call) - len(at)
        return fun(*call[:n_lead], *with_params(call[n_lead:]))

    def bind(values) -> Callable:
        """``lambda *lead: pure(*lead, *values)``, its arguments built once (a forward
        solve calls it at every step)."""
        bound = with_params(values)
        return lambda *lead: fun(*lead, *bound)

    pure.bind = bind
    pure.args_at = with_params  # (the arguments fun is called with, at these values)
    return pure, [leaves[i] for i in at]


def _array_valued(pure: Callable) -> Callable:
    """``pure`` answering an array where it answers a list or tuple (SciPy takes those from
    an ODE's right-hand side): the derivative rules pull back array-shaped cotangents."""

    def f(*call):
        out = pure(*call)
        return anp.array(out) if isinstance(out, (list, tuple)) else out

    return f


def _check_lifted(where: str, pure: Callable, lead: tuple, params: list):
    """``pure`` at plain values; raise if its output is still traced (a hidden input)."""
    return refuse_traced(
        f"chainrule.scipy.integrate.{where}",
        pure(*lead, *[getval(p) for p in params]),
        f"{where}(lambda t, y, k: -k * y, ..., args=(k,))",
    )


# ----------------------------------------------------------------------------- solve_ivp
# Options that only shape the forward solve (the Jacobian the implicit methods use and how
# fun is called): the adjoint and sensitivity systems are other functions.
_FORWARD_ONLY_OPTIONS = ("jac", "jac_sparsity", "lband", "uband", "first_step")


class _Forward:
    """The plain forward solve a traced call reuses: its values (the primitive's answer)
    and its dense interpolant (the checkpoints the adjoint reads y(t) from), for the
    plain ``inputs`` it was computed at. ``redo`` (a ``_ForwardSolve``) solves as the
    forward solve did at other inputs, where a program chainrule.jit emits replays the
    primitive: the values are then those of the interpolant at the times (``dense``,
    ``sol(t)``) or the solve's at them; ``found["result"]`` is the SciPy result of the
    solve that answered last (its counts and status, read by ``_guarded_fields``)."""

    def __init__(
        self, values, interpolant, failure: str | None, inputs: tuple, redo=None, dense=False,
        result=None,
    ):
        self.values, self.interpolant, self.failure = values, interpolant, failure
        self.inputs = _plain_copies(inputs)
        self.redo, self.dense, self.result = redo, dense, result
        self.found = {"result": result}

    def answer(self, times, y0, params):
        """The values at these inputs (see ``ivp_values``), or None without ``redo``."""
        if self.answers(times, y0, params):
            self.found["result"] = self.result
            return self.values
        if self.redo is None:
            return None
        times = _np.asarray(getval(times), dtype=float)
        sol = self.redo.at(times[0], y0, params, None if self.dense else times[1:])
        self.found["result"] = sol
        return sol.sol(times[1:]) if self.dense else sol.y

    def interpolant_at(self, times, y0, params, fun, method, options):
        """The forward solve's interpolant at these inputs (the adjoint's checkpoints)."""
        if self.answers(times, y0, params):
            return self.interpolant
        if self.redo is None:
            return _solve_plain(fun, times, y0, params, method, options, dense=True).sol
        return self.redo.at(_np.asarray(getval(times), dtype=float)[0], y0, params, None).sol

    def answers(self, *inputs) -> bool:
        """Whether it was computed at these inputs. (A program ``chainrule.jit`` emits
        replays the primitive with this object as a constant and new inputs: it must
        solve again then.)"""
        now = _plain_copies(inputs)
        return len(now) == len(self.inputs) and all(
            _np.array_equal(a, b) for a, b in zip(now, self.inputs)
        )


def _plain_copies(trees: tuple) -> list:
    return [_np.array(getval(leaf), dtype=float) for leaf in tree_flatten(list(trees))[0]]


def _same_copies(a: list, b: list) -> bool:
    return len(a) == len(b) and all(_np.array_equal(x, y) for x, y in zip(a, b))


class _ForwardSolve:
    """SciPy's forward solve as ``solve_ivp`` called it, redone at other values of t0, y0
    and the parameters (the end of ``t_span``, ``t_end``, is a guarded constant): what a
    program chainrule.jit emits runs where it replays ``ivp_values`` at new inputs, the
    same call as eager evaluation makes, so the same values bit for bit. The last solve
    is kept: the adjoint and ``sol(t)`` of the same call read its interpolant."""

    def __init__(self, pure, t_end, method, options, vectorized, jac_at):
        self.pure, self.t_end, self.method = pure, t_end, method
        self.options, self.vectorized, self.jac_at = options, vectorized, jac_at
        self.last = None  # (inputs, t_eval, SciPy's result)

    def at(self, t0, y0, params, t_eval):
        """SciPy's result at these inputs; ``t_eval`` None: any (for its interpolant)."""
        inputs = _plain_copies((t0, y0, params))
        last = self.last
        if last is not None and _same_copies(last[0], inputs) and (
            t_eval is None or _np.array_equal(last[1], t_eval)
        ):
            return last[2]
        plain = [getval(p) for p in params]
        options = dict(self.options)
        if self.jac_at is not None:
            options["jac"] = self.jac_at(plain)
        sol = _si.solve_ivp(
            lambda t, y: self.pure(t, y, *plain),
            (float(t0), self.t_end),
            _np.asarray(getval(y0), dtype=float),
            method=self.method,
            t_eval=t_eval,
            dense_output=True,
            vectorized=self.vectorized,
            **options,
        )
        self.last = (inputs, t_eval, sol)
        return sol


def _refuse_staging(what: str, *trees) -> None:
    """Raise where ``chainrule.jit`` is staging these inputs and the answer depends on
    them in a way a replayed program would not follow (solver-chosen times, events)."""
    for leaf in tree_flatten(list(trees))[0]:
        while isbox(leaf):
            if isinstance(leaf._node, StagingNode):
                raise StagingError(
                    f"chainrule.jit cannot stage chainrule.scipy.integrate.solve_ivp with "
                    f"{what}: which times it answers depends on the solve, which a compiled "
                    f"program would not repeat. Pass t_eval (and no events), or call "
                    f"solve_ivp outside the jitted function."
                )
            leaf = leaf._value


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


def _solve_plain(fun, times, y0, params, method, options, dense):
    times = _np.asarray(getval(times), dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "output seems independent of input" in the rhs
        return _si.solve_ivp(
            lambda t, y: fun(t, y, *params),
            (times[0], times[-1]),
            y0,
            method=method,
            t_eval=times[1:],
            dense_output=dense,
            **(options or {}),
        )


def _flat_params(params, traced) -> list:
    return [params[i] for i in traced]


def _with_traced(params, traced, values) -> list:
    full = list(params)
    for i, v in zip(traced, values):
        full[i] = v
    return full


def _refuse_failed(solved) -> None:
    if solved is not None and solved.failure is not None:
        raise RuntimeError(
            f"chainrule.scipy.integrate.solve_ivp: the forward solve failed "
            f"({solved.failure}), so its result is not a solution and has no derivative. "
            f"Check sol.success; loosen rtol/atol, or use an implicit method (Radau, BDF, "
            f"LSODA) for a stiff problem."
        )


def _adjoint_rhs(fun, traced, n, read, dynamics):
    """The backward system for [lambda, mu, z] (with y(t) = ``read(t)``, ``dynamics`` its
    right-hand side; see ``_adjoint_dynamics``) or [y, lambda, mu]:
    dlambda/dt = -lambda df/dy, dmu/dt = -lambda df/dparams."""
    if read is not None:

        def checkpointed(t, state, *all_params):
            t = _np.float64(t)
            return dynamics(t, read(t), state[:n], *all_params)

        return checkpointed

    def rhs(t, state, *all_params):
        y, lam = state[:n], state[n : 2 * n]
        vjp, fy = reverse.make_vjp(
            lambda yp: fun(t, yp[0], *_with_traced(all_params, traced, yp[1])),
            (y, _flat_params(all_params, traced)),
        )
        ybar, pbars = vjp(-lam)
        return _concat([fy, ybar, *pbars])

    return rhs


def _adjoint_dynamics(fun, traced):
    """``(t, y, lam, *params) -> [-lam df/dy, -lam df/dparams, f]`` (flat), the right-hand
    side of the checkpointed backward system for [lambda, mu, z], which ``Staged``
    compiles once per solve. z' = f(t, y(t)) integrates y again from its derivative along
    the forward solve's interpolant: a quadrature whose value is not used, whose error
    control makes the backward steps resolve y as the forward solve did (mu integrates
    -lambda df/dparams, whose variation comes from lambda and from y; see
    ``_checkpointed_options``). f is the VJP's forward value: it costs nothing."""

    def dynamics(t, y, lam, *all_params):
        vjp, f = reverse.make_vjp(
            lambda yp: fun(t, yp[0], *_with_traced(all_params, traced, yp[1])),
            (y, _flat_params(all_params, traced)),
        )
        ybar, pbars = vjp(-lam)
        return _concat([ybar, *pbars, f])

    return dynamics


_IMPLICIT_METHODS = ("Radau", "BDF", "LSODA")


def _adjoint_jac(n, read, dynamics):
    """The Jacobian of the checkpointed backward system, exact since it is linear in
    [lambda, mu] and z' does not depend on the state: column i of [[-df/dy^T, 0, 0],
    [-df/dparams^T, 0, 0], [0, 0, 0]] is the system at lambda = e_i without its z part
    (for the implicit methods, which would otherwise take it by finite differences, one
    column per parameter)."""

    def jac(t, state, *all_params):
        t = _np.float64(t)
        y = read(t)
        out = _np.zeros((len(state), len(state)))
        for i, e in enumerate(_np.eye(n)):
            out[: len(state) - n, i] = dynamics(t, y, e, *all_params)[: len(state) - n]
        return out

    return jac


def _reader(solution) -> Callable:
    """``solution(t)`` for a scalar float64 t, as SciPy's OdeSolution answers it, without its
    per-call array conversions and search (the backward pass reads y(t) at every step)."""
    ts = solution.ts_sorted.tolist()
    pick = _bisect.bisect_left if solution.side == "left" else _bisect.bisect_right
    pieces = solution.interpolants if solution.ascending else solution.interpolants[::-1]
    pieces = [_polynomial(piece) for piece in pieces]
    last = len(pieces) - 1

    def read(t):
        return pieces[min(max(pick(ts, t) - 1, 0), last)](t)

    return read


def _polynomial(piece) -> Callable:
    """One step's interpolant as a function of a scalar t. The explicit Runge-Kutta
    methods' (RK23, RK45, DOP853) are evaluated as one dot product of their coefficients
    with weights computed on Python floats: a third of the time of SciPy's array
    arithmetic on (1,)-shaped x, which the adjoint pays at every step. Others, or any
    SciPy whose pieces look different, answer through the piece's own ``__call__``."""
    kind = type(piece).__name__
    try:
        if kind == "Dop853DenseOutput":  # y_old + x (F0 + (1 - x) (F1 + x (F2 + ...)))
            t_old, h, y_old, coefficients = piece.t_old, piece.h, piece.y_old, piece.F
            flips = [k % 2 == (len(coefficients) - 1) % 2 for k in range(len(coefficients))]

            def dop853(t):
                x = float((t - t_old) / h)
                weights, weight = [], 1.0
                for flip in flips:
                    weight *= x if flip else 1.0 - x
                    weights.append(weight)
                return y_old + _np.dot(weights, coefficients)

            return dop853
        if kind == "RkDenseOutput":  # y_old + h Q [x, x^2, ...]
            t_old, h, y_old, scaled = piece.t_old, piece.h, piece.y_old, piece.h * piece.Q.T

            def rk(t):
                x = float((t - t_old) / h)
                powers, power = [], 1.0
                for _ in range(len(scaled)):
                    power *= x
                    powers.append(power)
                return y_old + _np.dot(powers, scaled)

            return rk
    except AttributeError:
        pass
    return piece


def _checkpointed_options(options, n, n_params) -> dict:
    """The backward solve's options for [lambda, mu, z]: the forward solve's, with error
    control on lambda and on z (the forward solve's y, integrated again from f(t, y(t));
    ``_adjoint_dynamics``), not on mu. mu integrates -lambda df/dparams along the steps
    chosen for lambda and y: both factors are resolved, so its quadrature is too.
    (Controlling lambda alone let the steps stride over a fast transient of y, where a stiff
    problem's mu changes most: BDF's gradient was wrong in the third digit at
    rtol = atol = 1e-10. Controlling mu itself, with an absolute tolerance made for y,
    stopped BDF and LSODA on Robertson's problem: "required step size is less than
    spacing between numbers".)"""
    options = dict(options or {})
    atol = _np.broadcast_to(_np.asarray(options.get("atol", 1e-6), dtype=float), (n,))
    options["atol"] = _np.concatenate([atol, _np.full(n_params, _np.inf), atol])
    return options


def _ivp_vjp(g, argnums, ans, args, kwargs):
    """Cotangents by the adjoint ODE, solved backwards segment by segment between the
    output times, adding each output's cotangent at its time."""
    fun, times, y0, *params = args
    method, options, solved = kwargs["method"], kwargs["options"], kwargs.get("solved")
    _refuse_failed(solved)
    traced = [i - 3 for i in argnums if i >= 3]
    n = int(_np.size(getval(y0)))
    g = anp.reshape(g, anp.shape(ans))
    n_out = len(getval(times)) - 1
    tbars = [None] * (n_out + 1)
    if 1 in argnums:
        for i in range(n_out, 0, -1):
            tbars[i] = anp.dot(g[:, i - 1], anp.ravel(fun(times[i], ans[:, i - 1], *params)))
    # Nested (a derivative of this derivative is being taken): y is solved again with the
    # adjoint by this same primitive, so the pass is differentiable. Otherwise y(t) comes
    # from the forward solve's interpolant (checkpoints): stable and cheaper. (Values
    # chainrule.jit stages are no derivative: a primitive records that pass for it.)
    if _differentiated(g, ans, times, y0, params):
        lam, mu = _nested_adjoint(g, ans, fun, times, params, traced, method, options)
    else:
        end = checkpointed_adjoint(
            g, times, y0, *params, fun=fun, traced=tuple(traced), method=method,
            options=options, solved=solved,
        )
        lam, mu = end[:n], end[n:]
    if 1 in argnums:
        tbars[0] = -anp.dot(lam, anp.ravel(fun(times[0], y0, *params)))
    by_param = dict(zip(traced, _split(mu, _flat_params(params, traced))))
    out = []
    for i in argnums:
        if i == 1:
            out.append(match_dtype(anp.stack(tbars), times))
        elif i == 2:
            out.append(match_dtype(anp.reshape(lam, _np.shape(getval(y0))), y0))
        else:
            out.append(match_dtype(by_param[i - 3], params[i - 3]))
    return tuple(out)


def _differentiated(*trees) -> bool:
    """Whether a leaf holds a box of a derivative trace (not only chainrule.jit's)."""
    return any(derivative_free(leaf) is not leaf for leaf in tree_flatten(list(trees))[0])


def _nested_adjoint(g, ans, fun, times, params, traced, method, options):
    """[lambda, mu] at times[0], y solved backwards with them (differentiable)."""
    n = anp.shape(ans)[0]
    n_params = sum(int(_np.size(getval(params[i]))) for i in traced)
    rhs = _adjoint_rhs(fun, traced, n, None, None)
    lam, mu = _last_cotangent(g, n), _np.zeros(n_params)
    for i in range(len(getval(times)) - 1, 0, -1):
        # (under chainrule.jit, a guarded decision: the times may be inputs of the program)
        if derivative_free(times[i]) != derivative_free(times[i - 1]):
            state = _concat([ans[:, i - 1], lam, mu])
            end = ivp_values(
                rhs,
                anp.stack([times[i], times[i - 1]]),
                state,
                *params,
                method=method,
                options=options,
            )[:, -1]
            lam, mu = end[n : 2 * n], end[2 * n :]
        if i > 1:
            lam = lam + g[:, i - 2]
    return lam, mu


def _last_cotangent(g, n: int):
    """lambda at the last output time: its cotangent (zero where no time is output)."""
    return g[:, -1] if anp.shape(g)[1] else _np.zeros(n)


@primitive
def checkpointed_adjoint(g, times, y0, *params, fun, traced, method, options, solved):
    """[lambda, mu] at times[0] by the backward system on plain values, y(t) read from the
    forward solve's interpolant. Called where no derivative of it is taken; a primitive
    so that chainrule.jit records it, and replays it at each call's values (the
    interpolant of that call's forward solve, ``_Forward.interpolant_at``)."""
    n = int(_np.size(y0))
    n_params = sum(int(_np.size(params[i])) for i in traced)
    if solved is not None:
        interpolant = solved.interpolant_at(times, y0, params, fun, method, options)
    else:
        interpolant = _solve_plain(fun, times, y0, params, method, options, dense=True).sol
    read, dynamics = _reader(interpolant), Staged(_adjoint_dynamics(fun, traced))
    rhs = _adjoint_rhs(fun, traced, n, read, dynamics)
    options = _checkpointed_options(options, n, n_params)
    if method in _IMPLICIT_METHODS:
        options["jac"] = _adjoint_jac(n, read, dynamics)
    lam, mu = _last_cotangent(g, n), _np.zeros(n_params)
    for i in range(len(times) - 1, 0, -1):
        if times[i] != times[i - 1]:
            end = _backward_segment(
                rhs, times[i], times[i - 1], _concat([lam, mu, read(times[i])]), params,
                method, options, interpolant,
            )
            lam, mu = end[:n], end[n : n + n_params]
        if i > 1:
            lam = lam + g[:, i - 2]
    return _concat([lam, mu])


def _backward_segment(rhs, t_from, t_to, state, params, method, options, interpolant):
    # Start with the forward solve's step at t_from, evened out to end on t_to: a restart
    # per segment otherwise spends evaluations finding a step size the forward solve
    # already found (and a last step cut short to land on t_to).
    ts, length = interpolant.ts, abs(t_from - t_to)
    first = length
    if len(ts) > 1:
        nearest = int(_np.argmin(_np.abs(ts[1:] - t_from)))
        step = abs(ts[nearest + 1] - ts[nearest])
        first = length / max(_np.ceil(length / step * (1 - 1e-9)), 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # f may not depend on some parameter
        sol = _si.solve_ivp(
            rhs,
            (t_from, t_to),
            state,
            method=method,
            args=tuple(params),
            first_step=first,
            **(options or {}),
        )
    if not sol.success:
        raise RuntimeError(
            f"chainrule.scipy.integrate.solve_ivp: the adjoint solve failed "
            f"({sol.message}); loosen rtol/atol or use an implicit method."
        )
    return sol.y[:, -1]


primitive_vjps[ivp_values] = _ivp_vjp


def _ivp_jvp(argnums, tangents, ans, args, kwargs):
    """Tangent by the forward sensitivity s (ds/dt = df/dy s + df/dparams dparams),
    solved together with y by this same primitive (so it is differentiable in turn)."""
    fun, times, y0, *params = args
    _refuse_failed(kwargs.get("solved"))
    tangents = dict(zip(argnums, tangents))
    traced = [i - 3 for i in argnums if i >= 3]
    n = int(_np.size(getval(y0)))
    dparams = [tangents[i + 3] for i in traced]

    def sensitivity(t, state, *params_and_dparams):
        y, sens = state[:n], state[n:]
        all_params, dps = params_and_dparams[: len(params)], params_and_dparams[len(params) :]
        fy, dfy = forward.make_jvp(
            lambda yp: fun(t, yp[0], *_with_traced(all_params, traced, yp[1])),
            (y, _flat_params(all_params, traced)),
        )((sens, list(dps)))
        return _concat([fy, dfy * _np.ones(n)])

    augmented = _compiled(sensitivity, time_first=True)
    s0 = anp.ravel(tangents[2]) * 1.0 if 2 in tangents else _np.zeros(n)
    dt = tangents.get(1)
    if dt is not None:
        s0 = s0 - anp.ravel(fun(times[0], y0, *params)) * dt[0]
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


defjvp_argnums(ivp_values, _ivp_jvp)


class _DenseSolution:
    """``sol(t)`` of a traced ``solve_ivp``: values from the forward solve's interpolant,
    derivatives by the same adjoint / sensitivity rules as ``y`` (each call records one
    ``ivp_values`` whose output times are ``t``)."""

    def __init__(self, pure, t0, y0, params, method, options, solution, failure):
        self._call = (pure, t0, y0, params, method, options)
        self._interpolant, self._failure = solution, failure
        self.t_min, self.t_max, self.ts = solution.t_min, solution.t_max, solution.ts
        self.front = _FrontEnd()
        self.redo = None  # (a _ForwardSolve: sol(t) at another call's inputs)

    def __call__(self, t):
        pure, t0, y0, params, method, options = self._call
        t = self.front.unwrap(t)
        scalar = _np.ndim(getval(t)) == 0
        t = anp.reshape(t, (-1,))
        direction = _np.sign(self._interpolant.ts[-1] - self._interpolant.ts[0]) or 1.0
        # (under chainrule.jit, the order of each call's times: a guarded answer)
        order = anp.argsort(direction * derivative_free(t), kind="stable")
        times = anp.concatenate([anp.reshape(t0, (1,)), t[order]])
        values = self._interpolant(getval(times)[1:])
        y = ivp_values(
            pure,
            times,
            y0,
            *params,
            method=method,
            options=options,
            solved=_Forward(values, self._interpolant, self._failure, (times, y0, params),
                            self.redo, dense=True),
        )
        y = y[:, _np.argsort(order)]
        return self.front.answer(y[:, 0] if scalar else y)


def solve_ivp(
    fun: Callable,
    t_span: Any,
    y0: Any,
    method: Any = "RK45",
    t_eval: Any = None,
    dense_output: bool = False,
    events: Any = None,
    vectorized: bool = False,
    args: Any = None,
    **options: Any,
) -> Any:
    """``scipy.integrate.solve_ivp``, differentiable w.r.t. ``y0``, ``t_span``, ``t_eval``
    and the traced values ``fun`` receives in ``args`` or closes over.

    The forward solve is SciPy's, on plain values (every method); the result's ``y`` (and
    ``t`` when ``t_span``/``t_eval`` are traced, and ``sol(t)`` with ``dense_output``) are
    traced. Reverse mode solves the adjoint ODE backwards, reading y(t) from the forward
    solve's dense interpolant; forward mode solves the sensitivity equations with y. Both
    use ``method``, ``rtol`` and ``atol``: derivatives are as accurate as the solves.
    With ``events``, ``t_events`` and ``y_events`` are traced too: each event time t* by
    the implicit function theorem on g(t*, y(t*), args) = 0, and a terminal event's t*
    is the last of ``t`` (the event functions take ``args`` and may close over traced
    values, as ``fun``)."""
    plain_args = () if args is None else tuple(args)
    front = _FrontEnd()
    pure, params = _lift(fun, plain_args, front)
    bind, args_at, pure = pure.bind, pure.args_at, _array_valued(pure)
    t_span, y0, t_eval = front.unwrap((t_span, y0, t_eval))
    event_list = _as_event_list(events)
    lifted_events = [_lift(event, plain_args, front) for event in event_list]
    events_traced = any(event_params for _, event_params in lifted_events)
    if (
        not params
        and not events_traced
        and not holds_traced(t_span, y0, t_eval)
        and front.wrap is None
    ):
        try:
            return _si.solve_ivp(
                fun,
                t_span,
                y0,
                method=method,
                t_eval=t_eval,
                dense_output=dense_output,
                events=events,
                vectorized=vectorized,
                args=args,
                **options,
            )
        except TypeError:
            _check_lifted("solve_ivp", pure, (t_span[0], _np.asarray(y0)), params)
            raise
    t0, t1 = t_span
    y0 = anp.array(y0) if isinstance(y0, (list, tuple)) else y0
    if _np.ndim(getval(y0)) != 1:
        raise ValueError("`y0` must be 1-dimensional.")
    if _np.iscomplexobj(getval(y0)):
        raise NotImplementedError(
            "chainrule.scipy.integrate.solve_ivp: complex y0 cannot be "
            "differentiated; split it into real and imaginary parts."
        )
    y0 = y0 * 1.0  # integers become floats
    if t_eval is None or events is not None:
        _refuse_staging("t_eval=None" if t_eval is None else "events", t_span, y0, params)
    plain_params = [getval(p) for p in params]
    y0_value = getval(y0)
    _check_lifted("solve_ivp", pure, (getval(t0), y0_value), params)
    forward_options = dict(options)
    jac = options.get("jac")
    if callable(jac):  # (the Newton iterations' Jacobian: not differentiated)
        forward_options["jac"] = lambda t, y: getval(jac(t, y, *tree_map(getval, plain_args)))
    t_eval_value = None if t_eval is None else _np.asarray(tree_map(getval, t_eval), float)
    for event_pure, event_params in lifted_events:
        _check_lifted("solve_ivp", event_pure, (getval(t0), y0_value), event_params)
    sol = _si.solve_ivp(
        _array_valued(bind(plain_params)),
        (getval(t0), getval(t1)),
        y0_value,
        method=method,
        t_eval=t_eval_value,
        dense_output=True,
        events=[_plain_event(e, *lifted) for e, lifted in zip(event_list, lifted_events)] or None,
        vectorized=vectorized,
        **forward_options,
    )
    failure = None if sol.success else sol.message
    jac_at = None
    if callable(jac):
        def jac_at(values):
            user_args = tree_map(getval, tuple(args_at(values))[: len(plain_args)])
            return lambda t, y: getval(jac(t, y, *user_args))

    # (where the solve stops decides its last steps: under chainrule.jit a guarded value)
    t_end = float(decided(t1, getval)) if t_eval is not None else float(getval(t1))
    redo = _ForwardSolve(
        pure, t_end, method, {k: v for k, v in forward_options.items() if k != "jac"},
        vectorized, jac_at,
    )
    adjoint_options = {k: v for k, v in options.items() if k not in _FORWARD_ONLY_OPTIONS}
    system = (pure, t0, y0, params, method, adjoint_options)
    t_events = y_events = None
    if events is not None:
        t_events, y_events = _traced_events(system, lifted_events, sol, failure)
    start = anp.reshape(t0, (1,))
    if t_eval is None:  # the solver's own times: the first and the last follow t_span
        last = sol.t[-1:]  # (where the solve failed)
        if sol.status == 0:
            last = anp.reshape(t1, (1,))
        elif sol.status == 1:  # a terminal event: the last time is that event's
            last = anp.reshape(_terminal_time(event_list, sol, t_events), (1,))
        out_times = anp.concatenate([start, sol.t[1:-1], last]) if len(sol.t) > 1 else start
    else:  # (up to the terminal event, if one stopped the solve)
        out_times = anp.reshape(anp.array(t_eval) * 1.0, (-1,))[: len(sol.t)]
    times = anp.concatenate([start, out_times])
    # (SciPy answers y = [] where t_span is empty and t_eval is [t0])
    values = _np.reshape(_np.asarray(sol.y, dtype=float), (_np.size(y0_value), len(sol.t)))
    solved = _Forward(values, sol.sol, failure, (times, y0, params), redo, result=sol)
    y = ivp_values(
        pure, times, y0, *params, method=method, options=adjoint_options, solved=solved
    )
    free = derivative_free(y)
    if isbox(free):  # (chainrule.jit: whether the solve ended where asked, a guarded
        # decision, since the number of output times depends on it)
        _field(free, found=solved.found, key="status", at=None)
    dense = None
    if dense_output:
        dense = _DenseSolution(pure, t0, y0, params, method, adjoint_options, sol.sol, failure)
        dense.front, dense.redo = front, redo
    t_out, y = front.answer(times[1:]), front.answer(y)
    out = {**sol, "t": t_out, "y": y, "sol": dense}
    if events is not None:
        out["t_events"] = [front.answer(t) for t in t_events]
        out["y_events"] = [front.answer(y) for y in y_events]
    # (under chainrule.jit, its counts, status and message are each call's where read)
    return _guarded_fields(type(sol)(**out), free, solved.found)


# ----------------------------------------------------------------------------- events
def _as_event_list(events) -> list:
    if events is None:
        return []
    return list(events) if isinstance(events, (list, tuple)) else [events]


def _plain_event(event: Callable, pure: Callable, params: list) -> Callable:
    """The event as SciPy calls it (on plain values), with its ``terminal`` and
    ``direction``."""
    plain_params = [getval(p) for p in params]

    def plain(t, y):
        return getval(pure(t, y, *plain_params))

    for attribute in ("terminal", "direction"):
        if hasattr(event, attribute):
            setattr(plain, attribute, getattr(event, attribute))
    return plain


def _traced_events(system, lifted_events, sol, failure) -> tuple[list, list]:
    """``t_events`` and ``y_events`` as traced values: each event time t* is the implicit
    solution of g(t*, y(t*; theta), theta) = 0, so
    dt*/dtheta = -(dg/dtheta + dg/dy dy(t*)/dtheta) / (dg/dt + dg/dy f(t*, y*)), and
    y(t*) is the solution at that (traced) time."""
    pure, t0, y0, params, method, options = system
    t_events, y_events = [], []
    for (event, event_params), times, states in zip(lifted_events, sol.t_events, sol.y_events):
        ts, ys = [], []
        for t_star, y_star in zip(times, states):
            inputs = (_np.array([getval(t0), t_star]), y0, params)
            solved = _Forward(_np.reshape(y_star, (-1, 1)), sol.sol, failure, inputs)
            t = _event_time(system, event, event_params, t_star, solved)
            ts.append(t)
            ys.append(
                ivp_values(
                    pure,
                    anp.stack([t0, t]),
                    y0,
                    *params,
                    method=method,
                    options=options,
                    solved=solved,
                )[:, 0]
            )
        t_events.append(anp.stack(ts) if ts else _np.asarray(times))
        y_events.append(anp.stack(ys) if ys else _np.asarray(states))
    return t_events, y_events


def _event_time(system, event: Callable, event_params: list, t_star: float, solved: _Forward):
    pure, t0, y0, params, method, options = system

    def residual(x, p):
        start, y_start, ivp_params, g_params = p
        # (at t* itself, where the derivative rules evaluate it, y is the forward solve's)
        y = ivp_values(
            pure,
            anp.stack([start, x[0]]),
            y_start,
            *ivp_params,
            method=method,
            options=options,
            solved=solved,
        )[:, 0]
        return anp.reshape(event(x[0], y, *g_params), (1,))

    def solve(p):
        return _np.array([t_star]), None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the event may not depend on every parameter
        t, _, _, _ = _implicit_solve(
            "chainrule.scipy.integrate.solve_ivp (an event time)",
            residual,
            solve,
            (t0, y0, list(params), list(event_params)),
        )
    return t[0]


def _terminal_time(event_list: list, sol, t_events: list):
    """The traced time of the terminal event that stopped the solve at ``sol.t[-1]``."""
    for event, plain_times, traced in zip(event_list, sol.t_events, t_events):
        if getattr(event, "terminal", False) and len(plain_times) and plain_times[-1] == sol.t[-1]:
            return traced[-1]
    return sol.t[-1]


# ----------------------------------------------------------------------------- quad
_QUAD_OPTIONS = ("epsabs", "epsrel", "limit", "points")


@primitive
def quad_value(func, a, b, *params, options=None, vector=False, solved=None):
    """The integral of func(x, *params) over [a, b] (``quad``; ``quad_vec`` for a
    vector-valued func, as the integrands of the derivative rules are)."""
    if solved is not None and solved.answers(a, b, params):
        solved.last_abserr = solved.abserr
        return solved.values
    options = options or {}
    if vector:
        return _si.quad_vec(lambda x: func(x, *params), a, b, **options)[0]
    value, abserr = _si.quad(func, a, b, args=tuple(params), **options)[:2]
    if solved is not None:  # (a program chainrule.jit emits solves again: see _abserr)
        solved.last_abserr = abserr
    return value


@primitive
def _abserr(value, *, solved: _Forward) -> float:
    """quad's error estimate for the solve that answered ``value``: a function of it, so
    that under chainrule.jit each call's is read (no derivative: ``value`` is
    derivative-free)."""
    return solved.last_abserr


def _finite_limit(limit):
    if not anp.isfinite(derivative_free(limit)):  # (under chainrule.jit, a guarded answer)
        raise ValueError(
            "chainrule.scipy.integrate.quad: an infinite limit cannot be "
            "differentiated (the integrand's value there is not defined); "
            "pass it as a plain float."
        )
    return limit


def _quad_vjp(g, argnums, ans, args, kwargs):
    """d/da = -f(a), d/db = f(b) (Leibniz); d/dparams = the integral of df/dparams."""
    func, a, b, *params = args
    traced = [i - 3 for i in argnums if i >= 3]
    by_param = {}
    if traced:

        def integrand(x, *params_and_g):  # g is passed on: it may be traced (2nd order)
            all_params, cotangent = params_and_g[:-1], params_and_g[-1]
            vjp, _ = reverse.make_vjp(
                lambda ps: func(x, *_with_traced(all_params, traced, ps)),
                _flat_params(all_params, traced),
            )
            return _concat(vjp(cotangent))

        total = quad_value(integrand, a, b, *params, g, options=kwargs.get("options"), vector=True)
        by_param = dict(zip(traced, _split(total, _flat_params(params, traced))))
    out = []
    for i in argnums:
        if i == 1:
            out.append(match_dtype(-anp.sum(g * func(_finite_limit(a), *params)), a))
        elif i == 2:
            out.append(match_dtype(anp.sum(g * func(_finite_limit(b), *params)), b))
        else:
            out.append(match_dtype(by_param[i - 3], params[i - 3]))
    return tuple(out)


def _quad_jvp(argnums, tangents, ans, args, kwargs):
    func, a, b, *params = args
    tangents = dict(zip(argnums, tangents))
    traced = [i - 3 for i in argnums if i >= 3]
    out = 0.0
    if traced:

        def integrand(x, *params_and_dparams):
            all_params, dps = (params_and_dparams[: len(params)], params_and_dparams[len(params) :])
            return forward.make_jvp(
                lambda ps: func(x, *_with_traced(all_params, traced, ps)),
                _flat_params(all_params, traced),
            )(list(dps))[1]

        out = quad_value(
            integrand,
            a,
            b,
            *params,
            *[tangents[i + 3] for i in traced],
            options=kwargs.get("options"),
            vector=kwargs.get("vector", False),
        )
    if 1 in tangents:
        out = out - func(_finite_limit(a), *params) * tangents[1]
    if 2 in tangents:
        out = out + func(_finite_limit(b), *params) * tangents[2]
    return match_dtype(out, ans)


primitive_vjps[quad_value] = _quad_vjp
defjvp_argnums(quad_value, _quad_jvp)


def _quad_options(kwargs: dict) -> dict:
    """``quad``'s options as SciPy takes them. The tolerances, ``limit`` and ``points``
    (where the integrand is hard) only guide the quadrature, the integral does not move
    with them: a traced one is read as its value (under chainrule.jit, a guarded one).
    Any other (a weight's ``wvar``...) changes the integral and has no derivative rule:
    a traced one is refused, naming it."""
    out = {}
    for key, value in kwargs.items():
        if key in _QUAD_OPTIONS:
            value = tree_map(lambda leaf: decided(leaf, getval), value)
        elif holds_traced(value):
            raise TypeError(
                f"chainrule.scipy.integrate.quad: {key}= is traced, but the integral "
                f"depends on it and chainrule has no derivative rule for it. Pass a plain "
                f"value, or write its effect into func (e.g. weight='cos', wvar=w as "
                f"lambda x: f(x) * np.cos(w * x)), where it is differentiated."
            )
        out[key] = value
    return out


def quad(func: Callable, a: Any, b: Any, args: Any = (), **kwargs: Any) -> Any:
    """``scipy.integrate.quad``, differentiable w.r.t. the limits (Leibniz rule) and the
    traced values ``func`` receives in ``args`` or closes over (the integral of the
    integrand's derivative, by another ``quad``). Returns ``(value, abserr)`` with a
    traced value; with something traced, only ``epsabs``, ``epsrel``, ``limit`` and
    ``points`` are accepted (weights and ``full_output`` have no derivative rule)."""
    args = args if isinstance(args, tuple) else (args,)
    front = _FrontEnd()
    pure, params = _lift(func, args, front)
    a, b = front.unwrap((a, b))
    kwargs = _quad_options(front.unwrap(kwargs))
    if not params and not holds_traced(a, b) and front.wrap is None:
        try:
            return _si.quad(func, a, b, args=args, **kwargs)
        except TypeError:
            _check_lifted("quad", pure, (0.5 * (a + b) if _np.isfinite(a + b) else 0.0,), params)
            raise
    unsupported = set(kwargs) - set(_QUAD_OPTIONS)
    if unsupported:
        raise TypeError(
            f"chainrule.scipy.integrate.quad: {', '.join(sorted(unsupported))} "
            f"cannot be used with traced inputs; only {', '.join(_QUAD_OPTIONS)}."
        )
    plain_params = [getval(p) for p in params]
    a_value, b_value = getval(a), getval(b)
    _check_lifted("quad", pure, (a_value if _np.isfinite(a_value) else 0.0,), params)
    value, abserr = _si.quad(pure, a_value, b_value, args=tuple(plain_params), **kwargs)
    solved = _Forward(value, None, None, (a_value, b_value, plain_params))
    solved.abserr = solved.last_abserr = abserr
    value = quad_value(pure, a, b, *params, options=kwargs, solved=solved)
    return front.answer(value), _abserr(derivative_free(value), solved=solved)
