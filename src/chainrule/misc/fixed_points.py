"""Differentiable fixed points: x* = f(a)(x*), found by iteration.

The derivative does not unroll the iterations. By the implicit function theorem,
differentiating x* = F(a, x*) with F(a, x) = f(a)(x) gives dx* = F_a da + F_x dx*:
- reverse mode: w = g + F_x^T w (solved by the same iteration), then a-bar = F_a^T w;
- forward mode: t = F_a da + F_x t (likewise).
Both iterate linear maps that contract whenever the forward iteration does.
The rules are made of traced calls, so higher derivatives work too (they differentiate
through the linear iterations).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.forward import make_jvp
from .._core.pytree import tree_flatten
from .._core.reverse import make_vjp
from .._core.rules import defjvp, defvjp_direct
from .._core.tracer import primitive
from .._core.vspace import vspace
from .flatten import flatten

Distance = Callable[[Any, Any], Any]


def _iterate(step: Callable, x0, distance: Distance, tol: float, max_iter: int | None):
    x_prev, x = x0, step(x0)
    iterations = 1
    while distance(x, x_prev) > tol:
        if max_iter is not None and iterations >= max_iter:
            raise RuntimeError(f"fixed_point did not converge to tol={tol} in {max_iter} "
                               f"iterations (last distance {distance(x, x_prev)!r}).")
        x_prev, x = x, step(x)
        iterations += 1
    return x


def fixed_point(f: Callable, a, x0, distance: Distance, tol: float,
                max_iter: int | None = None):
    """The fixed point of ``f(a)``: iterate ``x <- f(a)(x)`` from ``x0`` until
    ``distance(x, x_prev) <= tol`` (at most ``max_iter`` steps if given).

    Differentiable with respect to ``a`` in both modes, without unrolling the loop.
    ``a`` may be a container of arrays (it is flattened into one traced vector).

    >>> from chainrule import grad
    >>> sqrt = lambda a: fixed_point(lambda a: lambda x: 0.5 * (x + a / x), a, 1.0,
    ...                              lambda x, y: abs(x - y), 1e-12)
    >>> print(round(float(sqrt(4.0)), 12), round(float(grad(sqrt)(4.0)), 6))
    2.0 0.25
    """
    if _is_leaf(a):
        return _fixed_point(f, a, x0, distance, tol, max_iter)
    flat_a, unflatten = flatten(a)
    return _fixed_point(lambda v: f(unflatten(v)), flat_a, x0, distance, tol, max_iter)


def _is_leaf(value) -> bool:
    return tree_flatten(value)[1].kind is None


@primitive
def _fixed_point(f: Callable, a, x0, distance: Distance, tol: float,
                 max_iter: int | None = None):
    return _iterate(f(a), x0, distance, tol, max_iter)


def _fixed_point_vjp(g, ans, f, a, x0, distance, tol, max_iter=None):
    vjp_x, _ = make_vjp(f(a), ans)
    space = vspace(ans)
    w = _iterate(lambda w: space.add(g, vjp_x(w)), g, distance, tol, max_iter)
    vjp_a, _ = make_vjp(lambda a: f(a)(ans), a)
    return vjp_a(w)


def _fixed_point_jvp(t_a, ans, f, a, x0, distance, tol, max_iter=None):
    _, driving = make_jvp(lambda a: f(a)(ans), a)(t_a)
    jvp_x = make_jvp(f(a), ans)
    space = vspace(ans)
    return _iterate(lambda t: space.add(driving, jvp_x(t)[1]), driving, distance, tol, max_iter)


defvjp_direct(_fixed_point, None, _fixed_point_vjp, None, None, None, None)
defjvp(_fixed_point, None, _fixed_point_jvp, None, None, None, None)

__all__ = ["fixed_point"]
