"""The reverse-mode rule of ``ivp_values``: the adjoint ODE solved backwards, reading
y(t) from the forward solve's interpolant (checkpoints), or solving it again where a
derivative of the derivative is taken."""

from __future__ import annotations

import bisect as _bisect
import warnings
from collections.abc import Callable

import numpy as _np
import scipy.integrate as _si

from ..._core import reverse
from ..._core.pytree import tree_flatten
from ..._core.tracer import derivative_free, getval, primitive
from ...numpy import numpy_wrapper as anp
from ...numpy.rules._helpers import match_dtype
from .._staged import Staged
from ._forward import _solve_plain
from ._ivp_values import _refuse_failed, ivp_values
from ._sensitivity import _concat, _flat_params, _split, _with_traced


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



