"""Whether the caller's NumPy error state acts on underflow; whether a function changed it;
the settings a program's faster calls, and a program that might both warn and raise,
run in.

A float program computes on Python floats, which never report an underflow; the default
error state ignores underflows, but ``np.seterr(all="warn")`` or ``np.errstate(all="raise")``
do not, and then a float program hands the call to NumPy's scalars. Each is remembered per
settings object (``_user_code.errstate``): a read of NumPy's context variable, some 0.1 µs,
against ``np.geterr()``'s microseconds.
"""

from __future__ import annotations

import numpy as np

from .._user_code.errstate import RECORDER, current, derived_settings, remembered
from .._user_code.lines import WARN_AT_USER_LINE


def _underflow_heard(modes: dict) -> bool:
    """Whether the current error state does anything with an underflow."""
    return modes["under"] != "ignore"


underflow_heard = remembered(_underflow_heard)

# The current error state, as an object that is the same until the state changes (read
# for every staged call).
context = current


def _told(modes: dict) -> dict:
    """NumPy's ``modes`` (``np.geterr()``) with a transform's own ``log`` mode, which only
    warns at the user's line (``WARN_AT_USER_LINE``), read as ``warn``; and a ``Deferred``
    block's modes (which record errors, told later by the transform) as ``ignore``: a
    changed state, whose program hands any floating-point error to eager evaluation."""
    callback = np.geterrcall()
    if callback is WARN_AT_USER_LINE and "log" in modes.values():
        return {k: "warn" if v == "log" else v for k, v in modes.items()}
    if callback is RECORDER:
        return {k: "ignore" if v in ("call", "log") else v for k, v in modes.items()}
    return modes


def modes() -> tuple:
    """What the current error state does on each error (``_told``)."""
    return tuple(sorted(_told(np.geterr()).items()))


def acts() -> bool:
    """Whether the current error state raises or calls out on some error (``raise``,
    ``call``, ``print``, ``log``: ``_told``), which a program run under the caller's state
    would not."""
    return bool(set(_told(np.geterr()).values()) - {"ignore", "warn"})




def _runs_strictly(modes: dict) -> bool:
    """Whether a program runs in ``strict()``, its first floating-point error making it
    answer RAISED, untold, for eager evaluation to tell of it once, as NumPy does: where
    the current error state raises on some error and tells of another (warns, calls out,
    logs, prints: a program that told of one error, then raised on another, would be
    evaluated again eagerly, which tells again), and where it calls out on some error (a
    callback, a log, a print: after a line that called it, a faster form's strict error,
    ``_kernels``, hands the call to eager evaluation, which calls it again). A
    transform's own ``log``, which only warns at the user's line, is a warning."""
    kinds = set(_told(modes).values())
    return bool(kinds & {"call", "log", "print"}) or (
        "raise" in kinds and "warn" in kinds)


runs_strictly = remembered(_runs_strictly)


def _warning_only(modes: dict) -> dict | None:
    """Every mode that calls out (``call``, ``log``, ``print``) made ``warn``."""
    return {k: "warn" for k, v in modes.items() if v in ("call", "log", "print")} or None


# ``with warning_only():`` for a program run once only to see its warnings (at a trace,
# which called the caller's callback itself): a callback it called would be called twice
warning_only = derived_settings(_warning_only)
