"""Floating-point warnings at the user's line.

NumPy attributes a floating-point warning (divide by zero in log, invalid value in sqrt)
to the Python line that called it, which inside a transform is chainrule's own code (a
primitive wrapper, a derivative rule). While a transform runs, NumPy's "warn" mode is
switched to "log" (per thread and context), and the warning is issued again at the first
line outside chainrule and NumPy: the user's function, or the line calling the transform.
That line also tells whether NumPy is storing a traced value into a plain array.
"""

from __future__ import annotations

import contextlib
import dis
import sys
import warnings
from collections.abc import Callable
from functools import wraps

from .._core.user_frames import user_frame
from .errstate import by_errstate, derived_settings


class _WarnAtUserLine:
    warns_at_user_line = True  # (errstate.Deferred warns at the line it recorded instead)

    def write(self, message: str) -> None:  # NumPy's log mode: "Warning: ... in log\n"
        passed = user_frame(sys._getframe(1))[1]
        stacklevel = 2 + passed
        text = message.strip()
        warnings.warn(text.removeprefix("Warning: "), RuntimeWarning, stacklevel=stacklevel)


WARN_AT_USER_LINE = _WarnAtUserLine()


def _settings_for(modes: dict) -> dict | None:
    """The settings to run a transform with, given NumPy's ``modes`` (``np.geterr()``):
    "warn" made "log" with WARN_AT_USER_LINE to log to, or None to run as is: inside
    another transform (modes already "log"), where the user routes errors to their own
    callback ("call", "log") or where nothing warns."""
    if "log" in modes.values() or "call" in modes.values():
        return None
    log = {kind: "log" for kind, mode in modes.items() if mode == "warn"}
    return {"call": WARN_AT_USER_LINE, **log} if log else None


# ``with user_line_warnings():`` the context a transform runs in (see ``_settings_for``);
# ``_errstate_at_user_line`` is NumPy 1.26's way of making it (np.errstate each call).
user_line_warnings: Callable[[], contextlib.AbstractContextManager] = \
    derived_settings(_settings_for)
_errstate_at_user_line = by_errstate(_settings_for)


def warnings_at_user_line(fn: Callable) -> Callable:
    """``fn`` run in ``user_line_warnings()``."""

    @wraps(fn)
    def at_user_line(*args, **kwargs):
        with user_line_warnings():
            return fn(*args, **kwargs)

    return at_user_line


_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]


def storing_an_item() -> bool:
    """Whether the user's line (the first frame outside chainrule and NumPy) is storing an
    item (``a[i] = v``) right now: a conversion asked for then is NumPy writing a traced
    value into a plain array (jit runs such a call eagerly; sparsity detection refuses it
    as grad does)."""
    frame = user_frame(sys._getframe(1))[0]
    return frame is not None and frame.f_code.co_code[frame.f_lasti] == _STORE_SUBSCR
