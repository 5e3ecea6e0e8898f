"""Closures and front ends: the traced values a solver's function receives or closes
over made explicit parameters, and Tensors met among its inputs unwrapped and answered."""

from __future__ import annotations

from collections.abc import Callable

from ..._core.pytree import tree_flatten, tree_unflatten
from ..._core.tracer import front_ends, getval, isbox
from ...numpy import numpy_wrapper as anp
from .._closure import lift_closure, refuse_traced


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


