"""The plain forward solve a traced ``solve_ivp`` or ``quad`` call reuses (values,
interpolant, SciPy's result), and its redoing at other inputs under chainrule.jit."""

from __future__ import annotations

import warnings

import numpy as _np
import scipy.integrate as _si

from ..._core.pytree import tree_flatten
from ..._core.tracer import getval


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


