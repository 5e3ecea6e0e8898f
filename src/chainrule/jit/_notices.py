"""Where a jitted call meets its user: jit's own warnings, and the user's line.

``JitWarning`` is the class of jit's notices about speed (a function runs eagerly for a
signature, a large constant is baked in): they are never about values, which stay eager
evaluation's, so a user may filter them without losing anything the eager call says.
"""

from __future__ import annotations

import linecache
import os
import sys
from types import FrameType

from .._core.user_frames import user_stacklevel
from .._user_code.lines import user_frame

__all__ = ["JitWarning", "call_site", "user_line", "user_stacklevel"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # chainrule/


class JitWarning(UserWarning):
    """A notice of chainrule.jit about how it runs a function (never about its values)."""


_JIT_INIT = os.path.join(_PACKAGE, "jit", "__init__.py")


def user_line(frame: FrameType | None = None) -> str:
    """``file:line  source`` of the first frame outside chainrule (and NumPy) above
    ``frame``; where the jitted function's own call (jit's ``_call_with``) comes first,
    the call was made by chainrule itself (a transform's sweep)."""
    frame = sys._getframe(1) if frame is None else frame
    user = user_frame(frame)[0]
    while frame is not user:  # (the library frames passed over)
        if frame.f_code.co_name == "_call_with" and frame.f_code.co_filename == _JIT_INIT:
            return "(made by a transform)"
        frame = frame.f_back
    if frame is None:
        return "(inside chainrule)"
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(filename, lineno).strip()
    return f"{os.path.basename(filename)}:{lineno}" + (f"  {text}" if text else "")


def call_site() -> str:
    """The user's line that made the call being recorded now; in a backward pass, that of
    the forward call whose derivative it computes (the node of that call's answer, where
    it keeps its ``source``)."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "backward_pass" and code.co_filename.endswith("reverse.py"):
            ans = getattr(frame.f_locals.get("node"), "ans", None)
            while hasattr(ans, "_node"):  # (a box, of any trace)
                source = getattr(ans._node, "source", None)
                if source is not None:
                    return f"the derivative of {source}"
                ans = ans._value
            break
        frame = frame.f_back
    return user_line(sys._getframe(2))
