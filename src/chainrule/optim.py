"""Optimizers for Tensors, with PyTorch's signatures: ``SGD`` (momentum) and ``Adam``.

``params`` is an iterable of leaf Tensors that require grad, or of dicts
``{"params": [...], **options}`` (parameter groups with their own options).
``step()`` updates each parameter that has a ``.grad`` in place (it stays the
same leaf Tensor); ``zero_grad()`` clears the gradients. The updates are plain
NumPy arithmetic on the values: they are not recorded.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as _np

from .tensor import Tensor, no_grad

__all__ = ["Optimizer", "SGD", "Adam"]


class Optimizer:
    """Holds parameter groups and per-parameter state; subclasses define ``_update``."""

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__} got an empty list of parameters.")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = defaults
        self.param_groups: list[dict] = []
        for group in groups:
            group = {**defaults, **group, "params": list(group["params"])}
            for p in group["params"]:
                if not isinstance(p, Tensor) or not p.is_leaf or not p.requires_grad:
                    raise TypeError(
                        f"{type(self).__name__} optimizes leaf Tensors that require grad; got "
                        f"{p!r}. Make parameters with chainrule.Tensor(value)."
                    )
            self.param_groups.append(group)
        self.state: dict[Tensor, dict] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad = Tensor(_np.zeros_like(p.grad.value), requires_grad=False)

    @no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    state = self.state.setdefault(p, {})
                    # New arrays, never in-place: recorded graphs may still hold the old ones.
                    p.data = self._update(p.data, p.grad.value, state, group)

    def _update(self, value, grad, state: dict, group: dict):
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with optional (Nesterov) momentum and weight decay:
    ``buf = momentum*buf + (1-dampening)*g``, ``p -= lr*buf`` (PyTorch's formulation)."""

    def __init__(self, params: Iterable, lr: float, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("SGD: lr, momentum and weight_decay must be non-negative.")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0.")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    def _update(self, value, grad, state, group):
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * value
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            buf = grad if buf is None else momentum * buf + (1 - group["dampening"]) * grad
            state["momentum_buffer"] = buf
            grad = grad + momentum * buf if group["nesterov"] else buf
        return value - group["lr"] * grad


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction; complex parameters use |g|^2 for the
    second moment."""

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        if lr < 0 or eps < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError("Adam: lr and eps must be non-negative and betas in [0, 1).")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay))

    def _update(self, value, grad, state, group):
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * value
        beta1, beta2 = group["betas"]
        t = state["step"] = state.get("step", 0) + 1
        m = state["exp_avg"] = beta1 * state.get("exp_avg", 0.0) + (1 - beta1) * grad
        v = state["exp_avg_sq"] = (beta2 * state.get("exp_avg_sq", 0.0)
                                   + (1 - beta2) * _np.real(grad * _np.conj(grad)))
        m_hat = m / (1 - beta1**t)
        v_hat = v / (1 - beta2**t)
        return value - group["lr"] * m_hat / (_np.sqrt(v_hat) + group["eps"])
