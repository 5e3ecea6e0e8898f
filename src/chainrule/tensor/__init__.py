"""chainrule.tensor: the define-by-run front end (``Tensor``, ``.backward()``, ``.grad``).

One engine, two front ends: a Tensor records its operations with the same tracer
and primitives as ``grad``, so every derivative rule is shared.
"""

from ._mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._tensor import Tensor

__all__ = ["Tensor", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]
