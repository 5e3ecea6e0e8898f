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
import contextvars
import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as _np

from .._core.user_frames import user_place, user_stacklevel

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


# NumPy's names of its floating-point errors (in its call and log modes) -> np.geterr()'s keys
_KEYS = {"divide by zero": "divide", "overflow": "over", "underflow": "under",
         "invalid value": "invalid"}

# the errors of the innermost Deferred block (per thread and context)
_deferred: contextvars.ContextVar[list] = contextvars.ContextVar("deferred_errors")


class _Recorder:
    """NumPy's callback in a ``Deferred`` block: each error into the block's list, with the
    user's line NumPy met it on (where a warning told later names it)."""

    def __call__(self, name: str, flag: int) -> None:  # NumPy's "call" mode
        _deferred.get().append((name, flag, None, None))

    def write(self, message: str) -> None:  # "log": "Warning: overflow encountered in exp\n"
        name = message.removeprefix("Warning: ").split(" encountered")[0]
        _deferred.get().append((name, 0, message, user_place(sys._getframe(1))))


RECORDER = _Recorder()


def _deferring(modes: dict) -> dict | None:
    """Each mode that does something with an error made ``call`` (where it is) or ``log``
    (elsewhere), calling out to ``RECORDER``."""
    settings = {k: "call" if m == "call" else "log" for k, m in modes.items() if m != "ignore"}
    return {"call": RECORDER, **settings} if settings else None


_in_deferring = derived_settings(_deferring)


class Deferred:
    """``with Deferred() as errors:`` runs its block with NumPy's floating-point errors
    recorded instead of told (each that the current state does something with), and
    ``errors.tell()`` tells them afterwards, in order, as the current state does (a warning
    at the user's line, an error, a call, a log line): for a computation whose
    intermediates' errors matter only if its answer is kept (laplacian's collapsed pass,
    run again where its answer overflowed). The block's settings call out to ``RECORDER``:
    jit reads them as ignoring (``jit._errstate``), so a program staged through one hands
    any floating-point error to eager evaluation."""

    __slots__ = ("errors", "_token", "_settings")
    _in_settings = staticmethod(_in_deferring)
    _tells_on_error = True

    def __enter__(self) -> Deferred:
        self.errors: list = []
        self._token = _deferred.set(self.errors)
        self._settings = self._in_settings()
        self._settings.__enter__()
        return self

    def __exit__(self, kind, *rest) -> None:
        self._settings.__exit__(kind, *rest)
        _deferred.reset(self._token)
        if kind is not None and self._tells_on_error:
            self.tell()  # (what the block met before it raised, told as it would be)

    def tell(self) -> None:
        errors, self.errors = self.errors, []
        if not errors:
            return
        modes, callback = _np.geterr(), _np.geterrcall()
        for name, flag, message, place in errors:
            mode = modes[_KEYS[name]]
            text = None if message is None else message.removeprefix("Warning: ").strip()
            # (a warning names the line NumPy met the error on, as it would have then; a
            # transform's own log, which warns at the user's line, likewise)
            warns_there = place is not None and (
                mode == "warn" or mode == "log" and getattr(callback, "warns_at_user_line",
                                                            False))
            if mode == "raise":
                raise FloatingPointError(text)
            if warns_there:
                warnings.warn_explicit(text, RuntimeWarning, *place)
            elif mode == "call":
                callback(name, flag)
            elif mode == "log":
                callback.write(message)
            elif mode == "print":
                print(message, end="", file=sys.stderr)
            elif mode == "warn":
                warnings.warn(text, RuntimeWarning, stacklevel=user_stacklevel())


class EveryError(Deferred):
    """``with EveryError() as met:`` the block's floating-point errors, every one (its
    settings "call" on all), in ``met.errors``, and none told: for a jitted program that
    hands a call that met one to eager evaluation (``jit._effects.Quiet``)."""

    __slots__ = ()
    _in_settings = staticmethod(derived_settings(lambda modes: {"all": "call",
                                                                "call": RECORDER}))
    _tells_on_error = False


def _strict(modes: dict) -> dict:
    """A floating-point error raises where the caller's error state does anything with it
    (warns, raises, calls out), and is ignored where the state ignores it."""
    return {k: "ignore" if v == "ignore" else "raise" for k, v in modes.items()}


# ``with strict():`` runs its block in ``_strict``'s settings: for a faster form of a NumPy
# call (chainrule.numpy.short_axes, chainrule.jit's kernels), whose error then has NumPy's
# own call (or eager evaluation) tell of it with NumPy's warning or error; and for a jit
# program where the caller's state both raises on one error and tells of another, or calls
# out (jit._errstate.runs_strictly).
strict = derived_settings(_strict)
