"""chainrule.tensor: the define-by-run front end (``Tensor``, ``.backward()``, ``.grad``).

    x = Tensor(3.0); y = Tensor(10.0)
    z = x * x + x * y
    z.backward()            # x.grad == 16, y.grad == 3

One engine, two front ends: a Tensor records its operations with the same tracer
and primitives as ``grad``, so every derivative rule is shared. ``no_grad()`` and
``enable_grad()`` switch recording off and on for the current thread.
"""

import functools as _functools
from collections.abc import Callable as _Callable
from typing import Any as _Any

import numpy as _np

from .._core.pytree import _children as _tree_children
from .._core.reverse import FreedGraphError
from .._core.tracer import getval as _getval
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
    # vmap hands each run new Tensors around its arguments' values (the batch's, or one
    # example's), so an in-place change of one would be lost: torch.func.vmap writes it
    # into the batch, and the loop over batch[i] refuses it (a view's in-place change).
    @_functools.wraps(func)
    def keeping_its_arguments(*args: _Any, **kwargs: _Any) -> _Any:
        held = [(tensor, _getval(tensor._value)) for tensor in _tensors_in((args, kwargs))]
        out = func(*args, **kwargs)
        for tensor, value in held:
            if _getval(tensor._value) is not value:
                raise RuntimeError(
                    "chainrule.tensor.vmap: the function changed an argument in place (an "
                    "in-place method such as mul_, `+=`, or an assignment t[i] = v). "
                    "torch.func.vmap would write into the caller's Tensor; chainrule's "
                    "vmap gives each run its own Tensors, so the change would be lost "
                    "silently (and on a row of a batch, batch[i], chainrule refuses it as "
                    "a view's in-place change). Use the out-of-place form (x = x * 2), "
                    "or .clone() the argument first.")
        return out

    return _vmap(keeping_its_arguments, in_axes=in_dims, out_axes=out_dims,
                 randomness=randomness)


def _tensors_in(tree: _Any) -> list:
    """The Tensors among the nodes of a pytree (a Tensor is a node around its value)."""
    if isinstance(tree, Tensor):
        return [tree]
    parts = _tree_children(tree)
    return [] if parts is None else [t for child in parts[2] for t in _tensors_in(child)]


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
