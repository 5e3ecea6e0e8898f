"""What a call tells, for tests that compare a transformed call with its reference (jit with
eager, a branch with main): its value's bits or its exception, its warnings, and NumPy's
error calls, under a given NumPy error state. Used by tests/test_attack15.py, 16 and 17."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as onp


def bits(a: Any) -> tuple:
    """An answer's dtype, shape and bytes (tuples and lists of answers, each)."""
    if isinstance(a, (tuple, list)):
        return tuple(bits(b) for b in a)
    a = onp.asarray(a)
    return a.dtype.str, a.shape, a.tobytes()


def assert_same_array(a: Any, b: Any) -> None:
    """``a`` is ``b`` as NumPy would give it: type, shape, dtype, strides and bytes."""
    assert type(a) is type(b)
    assert onp.shape(a) == onp.shape(b)
    assert onp.asarray(a).dtype == onp.asarray(b).dtype
    assert onp.asarray(a).strides == onp.asarray(b).strides
    assert onp.asarray(a).tobytes() == onp.asarray(b).tobytes()


def observed(fn: Callable, *args: Any, **state: str) -> tuple:
    """``fn(*args)`` under ``np.errstate(**state)``: ("ok", its bits) or ("raised", the
    exception's type and message), its warnings ("Category: message"), NumPy's calls."""
    calls: list = []
    old = onp.seterrcall(lambda kind, flag: calls.append(kind))
    try:
        with warnings.catch_warnings(record=True) as told, onp.errstate(**state):
            warnings.simplefilter("always")
            try:
                answer = ("ok", bits(fn(*args)))
            except Exception as e:  # (the exception is part of what is compared)
                answer = ("raised", type(e).__name__, str(e))
    finally:
        onp.seterrcall(old)
    return answer, [f"{m.category.__name__}: {m.message}" for m in told], calls
