"""Solver results under a derivative: SciPy's result with a traced ``x``, its fields
differentiable (the optimum by the envelope theorem, exact fields through chainrule) or
refused (``RefusedField``), and plain fields read per call under chainrule.jit."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as _np
import scipy.optimize as _so

from ..._core import forward, reverse
from ..._core.pytree import tree_flatten
from ..._core.rules import defjvp_argnums, defvjp_argnums
from ..._core.tracer import (
    derivative_free,
    front_ends,
    getval,
    isbox,
    notrace_primitive,
    primitive,
)
from ...numpy import numpy_wrapper as anp
from ...numpy.rules._helpers import match_dtype
from ...tensor import Tensor
from ...tensor._graph import TRACE_ID as _TENSOR_TRACE
from ._implicit_system import _implicit, _Problem, _replace, _verify


def _front(x):
    """A solution traced on the Tensor front end's trace (Tensor parameters) comes back as
    a Tensor, so that ``.backward()`` works on what is computed from it."""
    if isbox(x) and x._trace_id == _TENSOR_TRACE:
        return front_ends[Tensor].wrap(x)
    return x


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

