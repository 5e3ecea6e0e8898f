"""``torch.nn.utils``'s gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_``.

Both change the ``.grad`` of the given parameters in place (the same Tensor objects, as
PyTorch's), between ``loss.backward()`` and ``optimizer.step()``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as _np

from ..tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _gradients(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _set(grad: Tensor, value) -> None:
    """Replace the gradient's value in place, in its dtype."""
    grad.data = _np.asarray(value).astype(grad.dtype, copy=False)


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale the gradients so that their total ``norm_type``-norm (the norm of the vector
    of every gradient entry) is at most ``max_norm``; returns the total norm before
    clipping. As PyTorch: the factor is ``max_norm / (total + 1e-6)``, capped at 1.
    ``foreach`` (a PyTorch speed option) is accepted and changes nothing."""
    grads = _gradients(parameters)
    norm_type = float(norm_type)
    if not grads:
        return Tensor(0.0, requires_grad=False)
    values = [_np.asarray(g.value) for g in grads]
    if math.isinf(norm_type):  # the largest (or, for -inf, the smallest) entry size
        extreme = _np.max if norm_type > 0 else _np.min
        total = extreme([extreme(_np.abs(v)) for v in values if v.size] or [0.0])
    else:
        norms = [_np.linalg.norm(v.ravel(), norm_type) for v in values]
        total = _np.linalg.norm(_np.array(norms), norm_type)
    total = _np.asarray(total, dtype=_np.result_type(*values))
    if error_if_nonfinite and not _np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            f"non-finite, so it cannot be clipped. To disable this error and scale the "
            f"gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    factor = _np.minimum(max_norm / (total + 1e-6), 1.0)  # nan stays nan, as torch's clamp
    for grad, value in zip(grads, values):
        _set(grad, value * factor)
    return Tensor(total, requires_grad=False)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clip every gradient entry to ``[-clip_value, clip_value]``, in place."""
    for grad in _gradients(parameters):
        _set(grad, _np.clip(grad.value, -clip_value, clip_value))
