"""The user's line: the first frame outside chainrule (and NumPy, and Python's import
machinery), which a warning names (``user_stacklevel``) and explain and jit read
(``user_frame``, re-exported by ``chainrule._user_code.lines``). In the engine, whose
own warnings ("Output seems independent of input.") are reached from many entry points
through different numbers of chainrule's frames: a fixed ``stacklevel`` names the
user's line from some of them only."""

from __future__ import annotations

import os
import sys
from types import FrameType

import numpy as _np

# chainrule/ (this file is in chainrule/_core/) and numpy/: library code, never the user's
_LIBRARY_DIRS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
                 os.path.dirname(os.path.abspath(_np.__file__)) + os.sep)
_library_files: dict[str, bool] = {}  # filename -> is it library code (asked per frame)


def _is_library(filename: str) -> bool:
    known = _library_files.get(filename)
    if known is None:
        # frames of runpy/importlib machinery (python -m chainrule.coverage) are not the
        # user's either
        known = os.path.abspath(filename).startswith(_LIBRARY_DIRS) or \
            filename.startswith("<frozen")
        _library_files[filename] = known
    return known


def user_frame(frame: FrameType | None) -> tuple[FrameType | None, int]:
    """The first frame from ``frame`` outwards that is the user's (outside chainrule and
    NumPy), or None where every one is library code; and how many frames it passed over
    (for ``warnings.warn``'s ``stacklevel``). The one place chainrule finds the user's
    line: warnings re-issued or given here, explain's sources, jit's notices."""
    passed = 0
    while frame is not None and _is_library(frame.f_code.co_filename):
        frame, passed = frame.f_back, passed + 1
    return frame, passed


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` in the function calling this that names
    the user's line (the first frame outside chainrule and NumPy)."""
    return 1 + user_frame(sys._getframe(1))[1]


def user_place(frame: FrameType | None) -> tuple | None:
    """What ``warnings.warn`` names from the user's frame outwards of ``frame``: its file,
    line, module and the module's registry (``warnings.warn_explicit``'s arguments), or
    None where every frame is library code. (For a warning told later, at another call:
    jit's replayed warnings, a transform's deferred floating-point errors.)"""
    user = user_frame(frame)[0]
    if user is None:
        return None
    module = user.f_globals
    return (user.f_code.co_filename, user.f_lineno, module.get("__name__"),
            module.setdefault("__warningregistry__", {}))
