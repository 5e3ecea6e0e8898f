"""Shorter calls for the emitted program: each is the C function the traced primitive ends
in, for the argument types the signature fixes, so it answers the same bits (and the same
views) without NumPy's Python layers.

- a chainrule ufunc wrapper (its scalar fast path, ``numpy_wrapper._with_scalar_path``)
  called on an array is the ufunc itself;
- a function whose entry names its ``reduction`` (``numpy.sum``/``prod``/``max``/``min``)
  of an ndarray is ``ufunc.reduce`` with the same arguments (NumPy's ``_wrapreduction``);
- ``numpy.any`` of an ndarray is ``logical_or.reduce`` (``ndarray.any``'s own call);
- a function whose entry has a ``lowering`` writes its own code on an ndarray:
  ``numpy.transpose``/``reshape`` the ndarray method (``_wrapfunc``), ``numpy.moveaxis``
  the ``transpose`` with the permutation it computes from the shape, ``array_getitem`` the
  subscript, ``power`` of an array by a number the array's ``**`` (by 2, of a float
  or complex array, the ``square`` that ``**`` calls).

``direct_call`` answers the expression, or None to keep the primitive's own call.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.rule_table import PrimitiveRules
from ..numpy.rules._helpers import bound_texts
from ..numpy.rules.shape import untake
from ._kernels import (
    ARRAYS,
    WHERE,
    extreme_code,
    negated_sum,
    negated_sum_code,
    outer_code,
    scatter_code,
    sum_code,
    ufunc_code,
    where_code,
)
from ._staging import ArrayMeta

# raw function -> (its ufunc's reduce, one bound method for every program: ``bind`` names
# it by identity; the function's parameters after ``a``)
_reducers: dict[Any, tuple[Callable, tuple[str, ...]]] = {}


def _reducer(raw: Any, ufunc: np.ufunc) -> tuple[Callable, tuple[str, ...]]:
    found = _reducers.get(raw)
    if found is None:
        params = tuple(inspect.signature(raw).parameters)[1:]
        found = _reducers[raw] = (ufunc.reduce, params)
    return found


def direct_call(
    raw: Any,
    entry: PrimitiveRules,
    vals: list,
    texts: list[str],
    kwtexts: dict[str, str],
    bind: Callable[[Any], str],
    ans: Any = None,
    negated: bool = False,
    const: Callable[[Any], str] | None = None,
) -> str | None:
    """``vals``: the arguments' values at trace time; ``texts``/``kwtexts``: their code;
    ``entry``: the primitive's rules (its ``reduction`` and ``lowering``); ``ans``: the
    answer at trace time (where it is an ``ArrayMeta``, a call whose inner loop is short
    may be written as one of ``_kernels``' faster forms); ``negated``: the operand is a
    negation the program does not make (``_emit._absorbed``), which a sum then makes;
    ``const``: names a constant the code reads (one a faster form makes)."""
    if raw is untake.fun:
        return scatter_code(vals, texts, bind)
    if raw is np.outer and not kwtexts and type(ans) is ArrayMeta:
        code = outer_code(vals, ans, texts, bind, const)
        if code is not None:
            return code
    if raw is np.any and len(vals) == 1 and not kwtexts and type(vals[0]) in ARRAYS:
        # (what ``ndarray.any`` calls, without NumPy's Python layers: a guard's nan check)
        return f"{bind(np.logical_or.reduce)}({texts[0]}, None, None, None, False)"
    if raw is WHERE and not kwtexts:
        code = where_code(vals, ans, texts, bind)
        if code is not None:
            return code
    if getattr(raw, "ufunc", None) is np.power and len(vals) == 2 and not kwtexts \
            and type(vals[1]) is int and vals[1] == 2 and type(vals[0]) is ArrayMeta \
            and vals[0].dtype.kind in "fc":
        # (``x ** 2``, the array's ``**``, calls ``square`` for a float or complex array:
        # NumPy's fast path, its bits and its warnings, without ``__pow__``'s 0.4 µs)
        return f"{bind(np.square)}({texts[0]})"
    first_array = bool(vals) and (type(vals[0]) is ArrayMeta or type(vals[0]) is np.ndarray)
    # (a NumPy scalar's reshape is its method too: np.reshape's ``_wrapfunc`` calls it)
    if (first_array or raw is np.reshape and isinstance(vals[0], np.generic)) and \
            entry.lowering is not None:
        code = entry.lowering(vals, texts, kwtexts)
        if code is not None:
            return code
    ufunc = getattr(raw, "ufunc", None)
    if ufunc is not None:
        if not any(type(v) is ArrayMeta or type(v) is np.ndarray for v in vals):
            return None  # scalars: the scalar path decides (float mode writes it out)
        if not kwtexts and type(ans) is ArrayMeta:
            code = ufunc_code(ufunc, vals, ans, texts, bind)
            if code is not None:
                return code
        args = texts + [f"{k}={v}" for k, v in kwtexts.items()]
        return f"{bind(ufunc)}({', '.join(args)})"
    if not first_array or entry.reduction is None:
        return None
    reducer, params = _reducer(raw, entry.reduction)
    b = bound_texts(params, texts[1:], kwtexts)
    if b is None or b.get("out", "None") != "None":
        return None
    head = [texts[0], b.get("axis", "None"), b.get("dtype", "None") if "dtype" in params else
            "None", "None"]
    rest = [f"{k}={b[k]}" for k in ("keepdims", "initial", "where") if k in b]
    if negated:
        if not {"initial", "where"} & set(b):
            code = negated_sum_code(vals[0], _literal(head[1]), ans, texts[0], bind)
            if code is not None:
                return code
        return f"{bind(negated_sum)}({bind(reducer)}, {', '.join(head[:2] + rest)})"
    keepdims = _literal(b.get("keepdims", "False"))  # (NumPy reads any truthy value: 1)
    if (entry.reduction is np.minimum or entry.reduction is np.maximum) and \
            keepdims is False and not {"initial", "where"} & set(b):
        code = extreme_code(entry.reduction, vals[0], _literal(head[1]), ans, texts[0], bind)
        if code is not None:
            return code
    if entry.reduction is np.add and head[2] == "None" and not {"initial", "where"} & set(b) \
            and keepdims is not _UNKNOWN:
        code = sum_code(vals[0], _literal(head[1]), bool(keepdims), ans, texts[0], bind)
        if code is not None:
            return code
    while not rest and len(head) > 2 and head[-1] == "None":
        head.pop()  # dtype and out at their defaults (the axis stays: reduce's is 0)
    return f"{bind(reducer)}({', '.join(head + rest)})"


def _literal(text: str) -> Any:
    """The axis or flag a code text writes as a literal (``2``, ``(1,)``, ``None``,
    ``True``), or a marker that matches nothing (a constant's name ...). (Not
    ``ast.literal_eval``, whose closures are reference cycles at every call.)"""
    if text in _NAMED:
        return _NAMED[text]
    parts = text[1:-1].split(",") if text[:1] == "(" and text[-1:] == ")" else None
    if parts is not None and parts[-1].strip() == "":
        parts.pop()  # ((1,): one part)
    items = [text] if parts is None else parts
    if not all(_INT.fullmatch(p.strip()) for p in items):
        return _UNKNOWN
    numbers = tuple(int(p) for p in items)
    return numbers[0] if parts is None else numbers


_NAMED = {"None": None, "True": True, "False": False}
_INT = re.compile(r"-?\d+")
_UNKNOWN = object()
