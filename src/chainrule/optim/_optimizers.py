"""The optimizers of ``chainrule.optim`` (see its docstring)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import numpy as _np

from ..tensor import Tensor, no_grad


class Optimizer:
    """Holds parameter groups and per-parameter state; subclasses define ``_update``."""

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError(
                f"{type(self).__name__} takes an iterable of Tensors (e.g. "
                f"model.parameters() or [w, b]), not a Tensor."
            )
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__} got an empty list of parameters.")
        self.defaults = defaults
        self.param_groups: list[dict] = []
        self.state: dict[Tensor, dict] = {}
        self._stepped = False  # lr_scheduler warns when it steps before the optimizer
        for group in params if isinstance(params[0], dict) else [{"params": params}]:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own options (the others from the defaults)."""
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor) or not p.is_leaf or not p.requires_grad:
                raise TypeError(
                    f"{type(self).__name__} optimizes leaf Tensors that require grad; got "
                    f"{p!r}. Make parameters with chainrule.Tensor(value)."
                )
        taken = {id(p) for group in self.param_groups for p in group["params"]}
        if len({id(p) for p in params}) < len(params) or taken & {id(p) for p in params}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append({**self.defaults, **param_group, "params": params})

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad = Tensor(_np.zeros_like(p.grad.value), requires_grad=False)

    @no_grad()
    def step(self) -> None:
        self._stepped = True
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    state = self.state.setdefault(p, {})
                    # New arrays, never in-place: recorded graphs may still hold the old ones.
                    p.data = self._update(p.data, p.grad.value, state, group)

    def _update(self, value, grad, state: dict, group: dict):
        raise NotImplementedError

    # ------------------------------------------------------------------ saving and resuming
    def state_dict(self) -> dict:
        """``{"state": {index: {name: value}}, "param_groups": [{**options, "params":
        [indices]}]}``: parameters numbered across the groups in order, as PyTorch's; arrays
        of the state as Tensors (copies: later steps do not change them)."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            numbers = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append({**copy.deepcopy({k: v for k, v in group.items() if k != "params"}),
                           "params": numbers})
        state = {
            index[id(p)]: {key: _saved(value) for key, value in values.items()}
            for p, values in self.state.items()
            if id(p) in index
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what ``state_dict()`` gave (from this optimizer or one made the same way):
        the groups' options and each parameter's state, cast to the parameter's dtype."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"])
               for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        by_index = {
            i: p
            for saved, group in zip(saved_groups, self.param_groups)
            for i, p in zip(saved["params"], group["params"])
        }
        groups = []
        for saved, group in zip(saved_groups, self.param_groups):
            options = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            self._check_options(options)
            groups.append({**self.defaults, **options, "params": group["params"]})
        state = {}
        for i, values in state_dict["state"].items():
            p = by_index.get(int(i))
            if p is None:
                continue  # as PyTorch: state of a parameter no group holds is dropped
            state[p] = {key: _restored(key, value, p) for key, value in values.items()}
        self.param_groups, self.state = groups, state

    def _check_options(self, options: dict) -> None:
        """Refuse a loaded option this optimizer does not implement, where it is set: a
        PyTorch state dict may carry ``amsgrad=True``, which would be silently ignored."""
        for key, value in options.items():
            if key not in self.defaults and key != "initial_lr" and value:
                raise ValueError(
                    f"load_state_dict: the loaded parameter group sets {key}={value!r}, an "
                    f"option chainrule.optim.{type(self).__name__} does not have (its options: "
                    f"{', '.join(self.defaults)})."
                )

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join([*lines, ")"])


def _saved(value):
    return Tensor(value, requires_grad=False) if isinstance(value, (_np.ndarray, _np.generic)) \
        else value


def _restored(key: str, value, param: Tensor):
    """A state value as the optimizer keeps it, from a Tensor (chainrule's or torch's), an
    array or a number: ``step`` a count (torch keeps a float Tensor), the others arrays,
    floating ones in a floating parameter's dtype (as PyTorch casts them)."""
    if key == "step":
        return int(float(value))
    array = _np.array(value.numpy() if hasattr(value, "numpy") else value)  # a torch Tensor too
    if array.dtype.kind == "f" and param.dtype.kind == "f":
        return array.astype(param.dtype)
    return array


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

