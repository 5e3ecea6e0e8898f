"""Where in the user's code a primitive was called: the innermost frame outside chainrule.

Used by explain (every ExplainNode) and by ``chainrule.debug_nans`` while it is on; plain
``grad`` never calls it, so it costs nothing there.
"""

from __future__ import annotations

import linecache
import os
import sys
import weakref
from typing import NamedTuple

from .._user_code.lines import user_frame

# node -> Source: the user's line of each reverse-mode node recorded while debug_nans is
# on (it notes them; explain(tensor) shows them for a Tensor graph recorded then).
node_sources: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Source(NamedTuple):
    file: str
    line: int
    text: str  # the source line, stripped ("" where the file cannot be read)

    def __str__(self) -> str:
        where = f"{os.path.basename(self.file)}:{self.line}"
        return f"{where}: {self.text}" if self.text else where


_known: dict = {}  # (file, line) -> Source: one lookup per line, not per operation
_KNOWN_MAX = 100_000


def forget_lines() -> None:
    """Read the lines again from now on (a recording starts with this: files may change)."""
    _known.clear()


def user_source(skip: int = 1) -> Source | None:
    """The innermost calling frame outside chainrule and NumPy, or None (all library)."""
    return user_site(skip + 1)[0]


def user_site(skip: int = 1) -> tuple[Source | None, int]:
    """``user_source`` and the offset of the bytecode instruction running in that frame: two
    calls on one line differ in it, one call made again by a loop does not."""
    frame = user_frame(sys._getframe(skip))[0]
    if frame is None:
        return None, -1
    key = (frame.f_code.co_filename, frame.f_lineno)
    source = _known.get(key)
    if source is None:
        if len(_known) > _KNOWN_MAX:
            _known.clear()
        text = linecache.getline(key[0], key[1]).strip()
        source = _known[key] = Source(key[0], key[1], text)
    return source, frame.f_lasti
