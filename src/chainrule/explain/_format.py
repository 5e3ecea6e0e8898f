"""How values are written in the tables: short numbers, array summaries, names."""

from __future__ import annotations

import numpy as _np

SMALL_ARRAY = 6  # arrays with at most this many elements are written out in full


def number(x, digits: int = 3) -> str:
    """A scalar as the textbooks print it: 3 decimals, trailing zeros dropped (10, 5.5, 0.693)."""
    if type(x) is not float and _np.iscomplexobj(x):
        x = complex(x)
        if x.imag == 0:
            return number(x.real, digits)
        sign = "-" if x.imag < 0 else "+"
        return f"{number(x.real, digits)}{sign}{number(abs(x.imag), digits)}j"
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    if x != 0 and (abs(x) >= 1e6 or abs(x) < 10.0**-digits):
        return f"{x:.{digits + 1}g}"
    text = f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def paren(text: str) -> str:
    """A negative number inside an expression: 10.693 - (-0.959)."""
    return f"({text})" if text.startswith("-") else text


def is_scalar(x) -> bool:
    return type(x) not in (list, tuple) and _np.ndim(x) == 0


def _bracketed(x, texts) -> str:
    """A list's or tuple's item texts, in its brackets or parentheses."""
    items = ", ".join(texts)
    return f"[{items}]" if type(x) is list else f"({items})"


def shape_text(x) -> str:
    """``f64[3,4]``: dtype kind and size, then the shape; a list or tuple of values
    (``np.split``'s pieces) as its items', in brackets or parentheses."""
    if type(x) in (list, tuple):
        return _bracketed(x, map(shape_text, x))
    dtype = _np.result_type(x)
    return f"{dtype.kind}{dtype.itemsize * 8}[{','.join(map(str, _np.shape(x)))}]"


def value(x, digits: int = 3) -> str:
    """A scalar in full; a small array element by element; a large one as a summary; a
    list or tuple of values (``np.split``'s pieces) item by item."""
    if type(x) in (list, tuple):
        return _bracketed(x, (value(v, digits) for v in x))
    if is_scalar(x):
        return number(x, digits)
    arr = _np.asarray(x)
    if arr.size <= SMALL_ARRAY and arr.ndim == 1:
        return "[" + ", ".join(number(v, digits) for v in arr) + "]"
    if arr.size == 0:
        return f"{shape_text(arr)} (empty)"
    if _np.iscomplexobj(arr):
        return f"{shape_text(arr)} |x| max={number(_np.abs(arr).max(), digits)}"
    if not _np.isfinite(arr).all():  # min/max/mean of what is finite, and count the rest
        return summary(arr, digits)
    return (
        f"{shape_text(arr)} min={number(arr.min(), digits)} "
        f"mean={number(arr.mean(), digits)} max={number(arr.max(), digits)}"
    )


def brief(x, digits: int = 3) -> str:
    """A value for a title: a scalar or small array in full, else just its shape."""
    if type(x) in (list, tuple):
        return shape_text(x)
    return value(x, digits) if _np.size(x) <= SMALL_ARRAY and _np.ndim(x) <= 1 else shape_text(x)


def constant(x, digits: int = 3) -> str:
    """An untraced argument of a primitive, as it appears inside an operation."""
    if isinstance(x, (bool, int, str)) or x is None:
        return repr(x)
    if isinstance(x, (float, complex, _np.number)) or isinstance(x, _np.ndarray):
        return value(x, digits)
    if isinstance(x, (tuple, list)):
        inner = ", ".join(constant(v, digits) for v in x)
        return f"({inner}{',' if len(x) == 1 else ''})" if isinstance(x, tuple) else f"[{inner}]"
    if isinstance(x, slice):
        parts = ["" if v is None else str(v) for v in (x.start, x.stop, x.step)]
        return ":".join(parts[:2] if x.step is None else parts)
    if x is Ellipsis:
        return "..."
    return getattr(x, "__name__", None) or type(x).__name__


def index_text(index) -> str:
    parts = index if isinstance(index, tuple) else (index,)
    return ", ".join(constant(p) for p in parts)


def summary(x, digits: int = 3) -> str:
    """An operand for a diagnostic: a scalar in full; an array as its dtype and shape,
    min/max/mean of the finite entries and how many are NaN or infinite."""
    if is_scalar(x):
        return number(x, digits)
    arr = _np.asarray(x)
    if arr.size == 0 or arr.dtype.kind not in "fc":
        return f"{shape_text(arr)}"
    finite = _np.isfinite(arr)
    parts = [shape_text(arr)]
    if finite.any():
        ok = _np.abs(arr[finite]) if arr.dtype.kind == "c" else arr[finite]
        parts += [
            f"min={number(ok.min(), digits)}",
            f"max={number(ok.max(), digits)}",
            f"mean={number(ok.mean(), digits)}",
        ]
    nans, infs = int(_np.isnan(arr).sum()), int(_np.isinf(arr).sum())
    if nans:
        parts.append(f"{nans} NaN")
    if infs:
        parts.append(f"{infs} inf")
    return " ".join(parts)
