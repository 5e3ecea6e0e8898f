"""chainrule.tensor: the define-by-run front end (``Tensor``, ``.backward()``, ``.grad``).

    x = Tensor(3.0); y = Tensor(10.0)
    z = x * x + x * y
    z.backward()            # x.grad == 16, y.grad == 3

One engine, two front ends: a Tensor records its operations with the same tracer
and primitives as ``grad``, so every derivative rule is shared. ``no_grad()`` and
``enable_grad()`` switch recording off and on for the current thread.
"""

from .._core.reverse import FreedGraphError
from . import _methods  # noqa: F401,E402  (PyTorch's methods, attached to Tensor)
from ._methods import Size
from ._mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._tensor import Tensor, as_tensor

__all__ = [
    "Tensor",
    "as_tensor",
    "Size",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "FreedGraphError",
]
