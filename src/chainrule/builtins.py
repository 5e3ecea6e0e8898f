"""Containers of traced values, as autograd's ``builtins`` module names them.

Functions being differentiated receive ordinary tuples, lists and dicts whose
leaves are traced, so the built-in constructors just work. The boxes of containers
*returned by primitives* (``SequenceBox``, ``DictBox``) are the engine's, in
``chainrule._core.containers``; they are re-exported here under autograd's names.
"""

from __future__ import annotations

import builtins as _builtins

from ._core.containers import (  # noqa: F401  (autograd's names for them)
    DictBox,
    SequenceBox,
    container_add,
    sequence_take,
    sequence_untake,
)
from ._core.tracer import getval

tuple = _builtins.tuple
list = _builtins.list
dict = _builtins.dict


def type(obj: object) -> _builtins.type:
    """``type(obj)`` of the traced value's own value: ``type(x) is numpy.ndarray`` holds
    for a traced array as it does for a plain one (as in autograd)."""
    return _builtins.type(getval(obj))


def isinstance(obj: object, classinfo: _builtins.type | tuple) -> bool:
    """``isinstance`` that sees through tracing: a traced array is an ``ndarray``, a
    traced tuple a ``tuple``; it is still an instance of its Box class, too."""
    return _builtins.isinstance(obj, classinfo) or _builtins.isinstance(getval(obj), classinfo)
