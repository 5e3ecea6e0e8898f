"""Whether Tensor operations are recorded: a per-thread switch with context managers.

The switch only concerns the Tensor front end; functional transforms (grad,
jvp, ...) always trace. Each thread has its own state, so a ``no_grad`` block in
one thread never turns off recording in another.
"""

from __future__ import annotations

import threading
from contextlib import ContextDecorator


class _GradMode(threading.local):
    def __init__(self) -> None:
        self.enabled = True
        self.saved: list[bool] = []


_mode = _GradMode()


def is_grad_enabled() -> bool:
    """True unless inside ``no_grad()`` (in this thread)."""
    return _mode.enabled


class set_grad_enabled(ContextDecorator):
    """Context manager (or decorator) that turns Tensor recording on or off."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)

    def __enter__(self):
        # The previous state goes on a per-thread stack, not on self: one
        # decorator instance may be entered by several threads at once.
        _mode.saved.append(_mode.enabled)
        _mode.enabled = self.mode
        return self

    def __exit__(self, *exc) -> bool:
        _mode.enabled = _mode.saved.pop()
        return False


class no_grad(set_grad_enabled):
    """``with no_grad():`` Tensor operations inside are not recorded (no graph, no memory).

    >>> from chainrule import Tensor
    >>> x = Tensor(3.0)
    >>> with no_grad():
    ...     y = x * 2.0
    >>> y.requires_grad
    False
    """

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """``with enable_grad():`` record Tensor operations again inside a ``no_grad`` block.

    >>> from chainrule import Tensor, no_grad
    >>> x = Tensor(3.0)
    >>> with no_grad():
    ...     with enable_grad():
    ...         y = x * 2.0
    >>> y.requires_grad
    True
    """

    def __init__(self) -> None:
        super().__init__(True)
