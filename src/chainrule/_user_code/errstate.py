"""NumPy's floating-point error state as the user set it, and what chainrule derives from it.

NumPy 2 keeps the error state in one immutable settings object in a context variable
(per thread and context): reading it costs some 0.05 µs, where ``np.geterr()`` costs
microseconds and ``np.errstate`` makes and parses a new object on every entry (~2 µs, a
tenth of a small gradient). So a value derived from the settings (whether underflows
are heard, the settings a transform or a program runs in) is computed once per settings
object and remembered (``remembered``), and a context that runs code in derived settings
sets the object made for them once (``derived_settings``). On NumPy 1.26, which has no
such object, they are computed, and set with ``np.errstate``, each time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as _np

try:  # NumPy 2
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

    _make_extobj(all="ignore")  # (as used below: made once to see)
except (ImportError, TypeError, ValueError):  # pragma: no cover (NumPy 1.26)
    _extobj_contextvar = _make_extobj = None

T = TypeVar("T")

_MEMO_SIZE = 64  # settings objects remembered per derived value (a program's few, nested)


def _by_values() -> object:  # pragma: no cover (NumPy before 2.0)
    return tuple(sorted(_np.geterr().items())), _np.geterrcall()


# The current settings, as an object that is the same until they change (NumPy 2: the
# context variable's own ``get``, no Python frame).
current: Callable[[], object] = _by_values if _extobj_contextvar is None else \
    _extobj_contextvar.get


def remembered(derive: Callable[[dict], T]) -> Callable[[], T]:
    """A function answering ``derive(np.geterr())`` for the current settings, computed once
    per settings object. The objects are kept alive in the memo (an id is never another
    object's), at most ``_MEMO_SIZE`` of them: a transform's and a caller's alternate."""
    if _extobj_contextvar is None:  # pragma: no cover (NumPy 1.26)
        return lambda: derive(_np.geterr())
    get = _extobj_contextvar.get
    memo: dict = {}

    def value() -> T:
        settings = get()
        try:
            return memo[settings]
        except KeyError:
            pass
        found = derive(_np.geterr())
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        memo[settings] = found
        return found

    # (named as the value, where ``derive`` is defined: jit's readable programs name it)
    value.__name__ = value.__qualname__ = getattr(derive, "__name__", "value").lstrip("_")
    value.__module__, value.__doc__ = derive.__module__, derive.__doc__
    return value


def derived_settings(derive: Callable[[dict], dict[str, Any] | None]) \
        -> Callable[[], contextlib.AbstractContextManager]:
    """A context factory: ``with made():`` runs its block in the settings ``derive``
    answers for the current ones (``np.errstate``'s keywords; None: the current ones)."""
    if _extobj_contextvar is None:  # pragma: no cover (NumPy 1.26)
        return by_errstate(derive)

    def made(modes: dict) -> object:
        settings = derive(modes)
        return None if settings is None else _make_extobj(**settings)

    settings_for = remembered(made)
    var = _extobj_contextvar

    class InDerivedSettings:
        __slots__ = ("token",)

        def __enter__(self) -> None:
            ours = settings_for()
            self.token = None if ours is None else var.set(ours)

        def __exit__(self, *exc_info) -> None:
            if self.token is not None:
                var.reset(self.token)

    InDerivedSettings.__doc__ = derive.__doc__
    return InDerivedSettings


def by_errstate(derive: Callable[[dict], dict[str, Any] | None]) \
        -> Callable[[], contextlib.AbstractContextManager]:
    """``derived_settings`` on NumPy 1.26: ``np.errstate`` made anew each time."""

    def in_errstate() -> contextlib.AbstractContextManager:
        settings = derive(_np.geterr())
        return contextlib.nullcontext() if settings is None else _np.errstate(**settings)

    in_errstate.__doc__ = derive.__doc__
    return in_errstate
