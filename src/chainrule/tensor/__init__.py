"""chainrule.tensor: the define-by-run front end (``Tensor``, ``.backward()``, ``.grad``).

    x = Tensor(3.0); y = Tensor(10.0)
    z = x * x + x * y
    z.backward()            # x.grad == 16, y.grad == 3

One engine, two front ends: a Tensor records its operations with the same tracer
and primitives as ``grad``, so every derivative rule is shared. ``no_grad()`` and
``enable_grad()`` switch recording off and on for the current thread.
"""

from collections.abc import Callable as _Callable
from typing import Any as _Any

import numpy as _np

from .._core.reverse import FreedGraphError
from .._transforms.vmap import vmap as _vmap
from . import _methods  # noqa: F401,E402  (PyTorch's methods, attached to Tensor)
from ._methods import Size
from ._mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._tensor import Tensor, as_tensor


def manual_seed(seed: int) -> None:
    """Seed the random numbers chainrule draws, as ``torch.manual_seed`` seeds PyTorch's:
    NumPy's global generator, which ``nn.Linear``'s initial weights, ``nn.Dropout``'s
    masks, ``nn.init`` and ``chainrule.numpy.random`` draw from (``numpy.random.seed``).
    A run is then repeatable; its numbers are not PyTorch's (PyTorch has its own
    generator)."""
    _np.random.seed(seed)


def vmap(func: _Callable, in_dims: _Any = 0, out_dims: _Any = 0,
         randomness: str = "different") -> _Callable:
    """``torch.func.vmap`` for functions of Tensors: ``func`` mapped over dimension
    ``in_dims`` of its arguments (an int, None, or a pytree of them), the answers stacked
    along ``out_dims``. It is ``chainrule.vmap`` under PyTorch's parameter names, so it
    composes with ``chainrule.grad`` (per-sample gradients:
    ``vmap(chainrule.grad(loss), in_dims=(None, 0, 0))``) and with ``.backward()``; its
    answers are the loop's; Python decisions on the data are allowed; and ``randomness``
    is torch.func's, with chainrule's default, "different" (see docs/vmap.md)."""
    return _vmap(func, in_axes=in_dims, out_axes=out_dims, randomness=randomness)


__all__ = [
    "vmap",
    "manual_seed",
    "Tensor",
    "as_tensor",
    "Size",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "FreedGraphError",
]
