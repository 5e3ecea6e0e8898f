"""Learning-rate schedules for ``chainrule.optim``, as ``torch.optim.lr_scheduler``.

A scheduler sets ``group["lr"]`` of its optimizer's parameter groups; call its ``step()``
after the optimizer's, once per epoch (or per batch, as the schedule is meant). The
rates follow PyTorch's recurrences step by step, so a run gives PyTorch's numbers:

    optimizer = optim.SGD(model.parameters(), lr=0.1)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)
    for epoch in range(100):
        train(...)            # optimizer.step() inside
        scheduler.step()

``state_dict()`` / ``load_state_dict()`` save and restore a schedule (the optimizer's
groups keep ``initial_lr``, which resuming with ``last_epoch >= 0`` needs).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ._optimizers import Optimizer

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR"]


class LRScheduler:
    """The base of the schedules: subclasses give ``get_lr()`` (the rates one step on from
    the current ones) and ``_closed_form_lr()`` (the rates at ``last_epoch``)."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not a chainrule.optim Optimizer")
        self.optimizer = optimizer
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group in groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        f"resuming a scheduler with last_epoch={last_epoch}: load the "
                        f"optimizer's state_dict first, or start with last_epoch=-1."
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._initial = True  # the step the constructor takes: the rates stay
        self.step()
        self._initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def _closed_form_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The rates the last ``step()`` set, one per parameter group."""
        return list(self._last_lr)

    def step(self, epoch: int | None = None) -> None:
        """Move the schedule one step on (or, deprecated as in PyTorch, to ``epoch``)."""
        if self._step_count == 1 and not self.optimizer._stepped:
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`: call them "
                "in the opposite order, `optimizer.step()` before `lr_scheduler.step()`, or "
                "the first value of the schedule is skipped (as in PyTorch).",
                UserWarning,
                stacklevel=2,
            )
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            rates = self.get_lr()
        else:
            warnings.warn(
                "The epoch parameter in `scheduler.step()` is deprecated (as in PyTorch): "
                "call `scheduler.step()` without it.",
                UserWarning,
                stacklevel=2,
            )
            self.last_epoch = epoch
            rates = self._closed_form_lr()
        for group, rate in zip(self.optimizer.param_groups, rates, strict=True):
            group["lr"] = rate
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Everything the scheduler holds except its optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def _rates(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def _base_lrs(self) -> list[float]:
        """The initial rates, one per parameter group (a group added to the optimizer after
        the scheduler was made has none: refused, as in PyTorch, not skipped)."""
        if len(self.base_lrs) != len(self.optimizer.param_groups):
            raise ValueError(
                f"{type(self).__name__}: the optimizer has {len(self.optimizer.param_groups)} "
                f"parameter groups, the scheduler was made for {len(self.base_lrs)}; make "
                f"the scheduler after adding the groups."
            )
        return self.base_lrs


class StepLR(LRScheduler):
    """Multiply the rates by ``gamma`` every ``step_size`` steps:
    ``lr = initial_lr * gamma ** (epoch // step_size)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._rates()
        return [rate * self.gamma for rate in self._rates()]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self._base_lrs()]


class CosineAnnealingLR(LRScheduler):
    """Anneal the rates from ``initial_lr`` to ``eta_min`` along half a cosine over
    ``T_max`` steps, ``eta_min + (initial_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2``,
    then back up (SGDR's schedule without restarts), by PyTorch's recurrence."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        epoch, period, low = self.last_epoch, self.T_max, self.eta_min
        if self._initial:
            return self._rates()
        if self._step_count == 1 and epoch > 0:  # resumed: where the curve is at epoch
            return [low + (base - low) * (1 + math.cos(epoch * math.pi / period)) / 2
                    for base in self._base_lrs()]
        if (epoch - 1 - period) % (2 * period) == 0:  # at the bottom: the first step up
            return [rate + (base - low) * (1 - math.cos(math.pi / period)) / 2
                    for base, rate in zip(self._base_lrs(), self._rates(), strict=True)]
        return [(1 + math.cos(math.pi * epoch / period))
                / (1 + math.cos(math.pi * (epoch - 1) / period)) * (rate - low) + low
                for rate in self._rates()]

    def _closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self._base_lrs()]
