"""Shorter calls for the emitted program: each is the C function the traced primitive ends
in, for the argument types the signature fixes, so it answers the same bits (and the same
views) without NumPy's Python layers.

- a chainrule ufunc wrapper (its scalar fast path, ``numpy_wrapper._with_scalar_path``)
  called on an array is the ufunc itself;
- a function whose entry names its ``reduction`` (``numpy.sum``/``prod``/``max``/``min``)
  of an ndarray is ``ufunc.reduce`` with the same arguments (NumPy's ``_wrapreduction``);
- ``numpy.transpose``/``reshape`` of an ndarray is the ndarray method (``_wrapfunc``), and
  ``numpy.moveaxis`` the ``transpose`` with the permutation it computes from the shape;
- ``array_getitem`` of an ndarray is the subscript.

``direct_call`` answers the expression, or None to keep the primitive's own call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from .. import numpy as anp
from ..numpy.numpy_boxes import array_getitem
from ._staging import ArrayMeta

_POWER = anp.power.fun

# raw function -> (its ufunc's reduce, one bound method for every program: ``bind`` names
# it by identity; the function's parameters after ``a``)
_reducers: dict[Any, tuple[Callable, tuple[str, ...]]] = {}


def _reducer(raw: Any, ufunc: np.ufunc) -> tuple[Callable, tuple[str, ...]]:
    found = _reducers.get(raw)
    if found is None:
        params = tuple(inspect.signature(raw).parameters)[1:]
        found = _reducers[raw] = (ufunc.reduce, params)
    return found


def _bound(params: tuple, texts: list[str], kwtexts: dict[str, str]) -> dict | None:
    """Parameter name -> argument text, or None for a call these rewrites do not take."""
    if len(texts) > len(params) or any(k not in params for k in kwtexts):
        return None
    bound = dict(zip(params, texts))
    for k, v in kwtexts.items():
        if k in bound:
            return None
        bound[k] = v
    return bound


def array_power(raw: Any, vals: list) -> bool:
    """Whether a call of chainrule's ``power`` raises an array to a number: the raw
    function then calls the array's ``**`` (NumPy's fast path: square, sqrt ...), not the
    ufunc (see ``numpy_wrapper._with_scalar_path``)."""
    return raw is _POWER and len(vals) == 2 and type(vals[0]) is ArrayMeta and \
        type(vals[1]) in (int, float)


def direct_call(
    raw: Any,
    reduction: np.ufunc | None,
    vals: list,
    texts: list[str],
    kwtexts: dict[str, str],
    bind: Callable[[Any], str],
) -> str | None:
    """``vals``: the arguments' values at trace time; ``texts``/``kwtexts``: their code;
    ``reduction``: the ufunc the call reduces with (its entry's ``reduction``), or None."""
    ufunc = getattr(raw, "ufunc", None)
    if ufunc is not None:
        if not any(type(v) is ArrayMeta or type(v) is np.ndarray for v in vals):
            return None  # scalars: the scalar path decides (float mode writes it out)
        if array_power(raw, vals):
            return f"{texts[0]} ** {texts[1]}"
        args = texts + [f"{k}={v}" for k, v in kwtexts.items()]
        return f"{bind(ufunc)}({', '.join(args)})"
    if not vals or (type(vals[0]) is not ArrayMeta and type(vals[0]) is not np.ndarray):
        return None
    a = texts[0]
    if reduction is not None:
        reducer, params = _reducer(raw, reduction)
        b = _bound(params, texts[1:], kwtexts)
        if b is None or b.get("out", "None") != "None":
            return None
        head = [a, b.get("axis", "None"), b.get("dtype", "None") if "dtype" in params else
                "None", "None"]
        rest = [f"{k}={b[k]}" for k in ("keepdims", "initial", "where") if k in b]
        while not rest and len(head) > 2 and head[-1] == "None":
            head.pop()  # dtype and out at their defaults (the axis stays: reduce's is 0)
        return f"{bind(reducer)}({', '.join(head + rest)})"
    if raw is np.transpose:
        b = _bound(("axes",), texts[1:], kwtexts)
        return None if b is None else f"{a}.transpose({b.get('axes', '')})"
    if raw is np.reshape:
        b = _bound(("shape", "order"), texts[1:], kwtexts)
        if b is None or "shape" not in b:
            return None
        order = f", order={b['order']}" if "order" in b else ""
        return f"{a}.reshape({b['shape']}{order})"
    if raw is np.moveaxis and len(vals) == 3 and not kwtexts:
        ndim = vals[0].ndim
        source = normalize_axis_tuple(vals[1], ndim, "source")
        destination = normalize_axis_tuple(vals[2], ndim, "destination")
        if len(source) != len(destination):
            return None
        order = [n for n in range(ndim) if n not in source]
        for dest, src in sorted(zip(destination, source)):
            order.insert(dest, src)
        return f"{a}.transpose({tuple(order)!r})"
    if raw is array_getitem.fun and len(texts) == 2 and not kwtexts:
        return f"{a}[{texts[1]}]"
    return None
