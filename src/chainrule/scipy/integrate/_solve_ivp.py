"""``solve_ivp``: SciPy's forward solve on plain values, its result traced through
``ivp_values`` (``y``, ``t``, ``sol(t)``, event times)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as _np
import scipy.integrate as _si

from ..._core.pytree import tree_flatten, tree_map
from ..._core.rule_table import primitive_vjps
from ..._core.rules import defjvp_argnums
from ..._core.tracer import decided, derivative_free, getval, isbox
from ...jit._staging import StagingError, StagingNode
from ...numpy import numpy_wrapper as anp
from .._closure import holds_traced
from ..optimize._results import _field, _guarded_fields
from ._adjoint import _ivp_vjp
from ._events import _as_event_list, _plain_event, _terminal_time, _traced_events
from ._forward import _Forward, _ForwardSolve
from ._ivp_values import _ivp_jvp, ivp_values
from ._lifting import _array_valued, _check_lifted, _FrontEnd, _lift

# ivp_values' entry: reverse mode by the checkpointed adjoint, forward mode by the
# forward sensitivities (its two columns, one place)
primitive_vjps[ivp_values] = _ivp_vjp
defjvp_argnums(ivp_values, _ivp_jvp)

# ----------------------------------------------------------------------------- solve_ivp
# Options that only shape the forward solve (the Jacobian the implicit methods use and how
# fun is called): the adjoint and sensitivity systems are other functions.
_FORWARD_ONLY_OPTIONS = ("jac", "jac_sparsity", "lband", "uband", "first_step")


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


