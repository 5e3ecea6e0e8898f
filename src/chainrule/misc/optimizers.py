"""Gradient-based optimizers with autograd's interface.

``opt(grad, x0, callback=None, num_iters=..., step_size=..., ...)`` where
``grad(x, i)`` is the gradient at ``x`` on iteration ``i`` and ``callback(x, i, g)``
is called before each step. ``x0`` may be any container of float arrays: the
optimizers update its flattened vector and hand ``grad`` and ``callback`` values
of ``x0``'s structure. Each optimizer is its update rule; ``_run`` is the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as _np

from .._core.vspace import vspace

GradFun = Callable[[Any, int], Any]
Callback = Callable[[Any, int, Any], Any]


def _run(grad: GradFun, x0: Any, callback: Callback | None, num_iters: int,
         step: Callable[[_np.ndarray, _np.ndarray, int], _np.ndarray]) -> Any:
    """Iterate ``x <- step(x, g, i)`` on x0's flat vector; returns x in x0's structure."""
    space = vspace(x0)
    x = _np.asarray(space.flatten(x0), dtype=float)
    for i in range(num_iters):
        x_tree = space.unflatten(x)
        g_tree = grad(x_tree, i)
        if callback is not None:
            callback(x_tree, i, g_tree)
        x = step(x, _np.asarray(space.flatten(g_tree), dtype=float), i)
    return space.unflatten(x)


def sgd(grad: GradFun, x0: Any, callback: Callback | None = None, num_iters: int = 200,
        step_size: float = 0.1, mass: float = 0.9) -> Any:
    """Gradient descent with momentum: v <- mass v - (1 - mass) g, x <- x + step_size v."""
    velocity = 0.0

    def step(x, g, i):
        nonlocal velocity
        velocity = mass * velocity - (1.0 - mass) * g
        return x + step_size * velocity

    return _run(grad, x0, callback, num_iters, step)


def rmsprop(grad: GradFun, x0: Any, callback: Callback | None = None, num_iters: int = 100,
            step_size: float = 0.1, gamma: float = 0.9, eps: float = 1e-8) -> Any:
    """RMSProp: each coordinate's step is divided by a running RMS of its gradient."""
    avg_sq_grad = 1.0

    def step(x, g, i):
        nonlocal avg_sq_grad
        avg_sq_grad = gamma * avg_sq_grad + (1.0 - gamma) * g**2
        return x - step_size * g / (_np.sqrt(avg_sq_grad) + eps)

    return _run(grad, x0, callback, num_iters, step)


def adam(grad: GradFun, x0: Any, callback: Callback | None = None, num_iters: int = 100,
         step_size: float = 0.001, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8) -> Any:
    """Adam (Kingma and Ba, 2015): steps by bias-corrected running means of g and g**2.

    >>> import numpy as onp
    >>> from chainrule import grad
    >>> loss = lambda w, i: (w["a"] - 3.0) ** 2 + (w["b"] + 1.0) ** 2
    >>> w = adam(grad(loss), {"a": 0.0, "b": 0.0}, num_iters=500, step_size=0.1)
    >>> print(onp.round(w["a"], 3), onp.round(w["b"], 3))
    3.0 -1.0
    """
    m = v = 0.0

    def step(x, g, i):
        nonlocal m, v
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * g**2
        m_hat = m / (1.0 - b1 ** (i + 1))
        v_hat = v / (1.0 - b2 ** (i + 1))
        return x - step_size * m_hat / (_np.sqrt(v_hat) + eps)

    return _run(grad, x0, callback, num_iters, step)


__all__ = ["sgd", "rmsprop", "adam"]
