"""Whether the caller's NumPy error state acts on underflow; whether a function changed it.

A float program computes on Python floats, which never report an underflow; the default
error state ignores underflows, but ``np.seterr(all="warn")`` or ``np.errstate(all="raise")``
do not, and then a float program hands the call to NumPy's scalars. NumPy keeps its error
state in a context variable: reading it and comparing with the state seen last costs some
0.1 µs, against ``np.geterr()``'s microseconds.
"""

from __future__ import annotations

import numpy as np

from .._user_code.lines import WARN_AT_USER_LINE

try:
    from numpy._core._ufunc_config import _extobj_contextvar
except ImportError:  # pragma: no cover (NumPy before 2.0)
    _extobj_contextvar = None

_last: tuple = (object(), False)  # the error state seen last, and whether it hears underflows


def underflow_heard() -> bool:
    global _last
    if _extobj_contextvar is None:  # pragma: no cover
        return np.geterr()["under"] != "ignore"
    current = _extobj_contextvar.get()
    last = _last  # (one read of one tuple: threads each write a true pair)
    if current is last[0]:
        return last[1]
    heard = np.geterr()["under"] != "ignore"
    _last = (current, heard)
    return heard


def _context_by_values() -> object:  # pragma: no cover (NumPy before 2.0)
    return tuple(sorted(np.geterr().items()))


# The current error state, as an object that is the same until the state changes: the
# context variable's own ``get`` (read for every staged call: no Python frame).
context = _context_by_values if _extobj_contextvar is None else _extobj_contextvar.get


def modes() -> tuple:
    """What the current error state does on each error, a transform's own ``log`` mode
    (which warns at the user's line) read as ``warn``."""
    own = np.geterrcall() is WARN_AT_USER_LINE
    return tuple(sorted((k, "warn" if own and v == "log" else v)
                        for k, v in np.geterr().items()))


def acts() -> bool:
    """Whether the current error state raises or calls out on some error (``raise``,
    ``call``, ``print``, ``log``), which a program run under the caller's state would not.
    (A transform's own ``log`` mode, which warns at the user's line, only warns.)"""
    modes = set(np.geterr().values()) - {"ignore", "warn"}
    if modes <= {"log"} and np.geterrcall() is WARN_AT_USER_LINE:
        return False
    return bool(modes)


_strict_last: tuple = (object(), {})  # the error state seen last, and strict()'s modes for it


def strict() -> np.errstate:
    """A context in which a floating-point error raises where the caller's error state
    does anything with it (warns, raises, calls out), and is ignored where the state
    ignores it: for a faster form of a NumPy call (``_kernels``), whose error then makes
    the program evaluate the call eagerly, with NumPy's own warning or error."""
    global _strict_last
    if _extobj_contextvar is None:  # pragma: no cover
        return np.errstate(**{k: "ignore" if v == "ignore" else "raise"
                              for k, v in np.geterr().items()})
    current = _extobj_contextvar.get()
    last = _strict_last
    if current is not last[0]:
        last = _strict_last = (current, {k: "ignore" if v == "ignore" else "raise"
                                         for k, v in np.geterr().items()})
    return np.errstate(**last[1])
