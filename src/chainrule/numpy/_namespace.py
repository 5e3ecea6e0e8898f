"""The namespace installer: a chainrule module made a wrapped copy of a NumPy/SciPy module.

``chainrule.numpy``, ``.linalg``, ``.fft``, ``.random`` and the ``chainrule.scipy``
modules each hold every name of the module they stand for: their own (wrapped)
definitions, and the library's objects for the rest. ``install`` does that in one call
in each such module, and records which library function each wrapped one replaces
(``raw_to_wrapped``), so that the library's own function called on a traced value is
sent to chainrule's. It sits below the wrappers and imports nothing of chainrule above
the core.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import ModuleType

import numpy as _np

from .._core.tracer import primitive

raw_to_wrapped: dict = {}


def ufunc_of(function):
    """The NumPy ufunc ``function`` is or calls (a chainrule primitive's raw function, or
    that function's ``ufunc``: the ufuncs with a scalar path), or None."""
    raw = getattr(function, "fun", function)
    raw = raw if isinstance(raw, _np.ufunc) else getattr(raw, "ufunc", None)
    return raw if isinstance(raw, _np.ufunc) else None
"""NumPy's (SciPy's) function -> the chainrule function that takes its place on traced values."""


def public_names(source: ModuleType) -> list[str]:
    """The names ``source`` lists (``dir``) that do not start with an underscore."""
    return [name for name in dir(source) if not name.startswith("_")]


def primitives(
    source: ModuleType, names: Iterable[str], wrap: Callable = primitive
) -> dict[str, Callable]:
    """``name -> wrap(source.name)`` for the names ``source`` has; names that alias one
    object (``psi`` and ``digamma``) share one wrapped function."""
    by_raw: dict = {}
    found = {}
    for name in names:
        raw = getattr(source, name, None)
        if raw is not None:
            if id(raw) not in by_raw:
                by_raw[id(raw)] = wrap(raw)
                by_raw[id(raw)].stands_for = raw  # (vmap batches every ufunc elementwise)
            found[name] = by_raw[id(raw)]
    return found


def install(
    target: dict,
    source: ModuleType,
    wrapped: Mapping[str, Callable] | None = None,
    *,
    names: Iterable[str] | None = None,
    dispatch: Iterable[str] = (),
) -> None:
    """Fill the module namespace ``target`` (its ``globals()``) as a copy of ``source``.

    * ``names`` of ``source`` (its public names by default) that ``target`` does not
      define itself are bound to ``source``'s objects;
    * ``wrapped`` (name -> function) is bound over them;
    * for each name in ``dispatch`` that ``source`` has, ``source``'s function is recorded
      in ``raw_to_wrapped`` as replaced by ``target``'s.
    """
    for name in public_names(source) if names is None else names:
        if name not in target:
            target[name] = getattr(source, name)
    target.update(wrapped or {})
    for name in dispatch:
        raw = getattr(source, name, None)
        if raw is not None:
            raw_to_wrapped[raw] = target[name]
