"""A program as a reader wants it: ``np.cos(x0)`` where the program runs ``f1(x0)``.

The compiled program calls its functions by short names bound in its namespace (``f0``,
``f1`` ...: one global lookup each); ``readable`` writes each as the name a reader knows
(``np.cos``, ``np.add.reduce``, ``math.sin``, ``cr.numpy.rules.shape.untake``) and
lists the constants (``c0`` ...) under the ``def`` line. Each line's comment names the
primitive and, for ``lower()``, the user's line that made it.
"""

from __future__ import annotations

import builtins
import math
import re
from typing import Any

import numpy as np

_MODULES = [(np, "np"), (np.linalg, "np.linalg"), (np.fft, "np.fft"), (math, "math"),
            (builtins, "")]
_NAMES: dict[int, str] = {}  # id(function) -> its readable name (functions live on)


def readable_name(f: Any) -> str:
    """The name a reader knows ``f`` by."""
    known = _NAMES.get(id(f))
    if known is not None:
        return known
    name = _name(f)
    _NAMES[id(f)] = name
    return name


def _name(f: Any) -> str:
    owner = getattr(f, "__self__", None)
    if isinstance(owner, np.ufunc):  # (a ufunc's method: np.add.reduce)
        return f"{_name(owner)}.{f.__name__}"
    ufunc = getattr(f, "ufunc", None)  # (chainrule's wrapper of a ufunc, with a scalar path)
    if isinstance(ufunc, np.ufunc):
        return _name(ufunc)
    name = getattr(f, "__name__", None)
    if name is not None:
        for module, alias in _MODULES:
            if getattr(module, name, None) is f:
                return f"{alias}.{name}" if alias else name
        module = getattr(f, "__module__", None) or ""
        if isinstance(f, np.ufunc) and not module:
            module = "scipy.special"  # (NumPy's ufuncs are found above)
        qualname = getattr(f, "__qualname__", name)
        if module.startswith("chainrule"):
            module = "cr" + module[len("chainrule"):]
        return f"{module}.{qualname}" if module else qualname
    return repr(f)


_HANDLE = re.compile(r"\bf(\d+)\b(?=\()")


def readable(source: str, namespace: dict, note: str = "") -> str:
    """``source`` (a compiled program's) with its functions named as ``readable_name``
    does and, under the ``def`` line, ``note`` and its constants."""
    text = _OUT_BY_POSITION.sub(lambda m: _out_by_keyword(m, namespace), source)
    text = _HANDLE.sub(lambda m: readable_name(namespace[f"f{m.group(1)}"]), text)
    constants = sorted((k for k in namespace if re.fullmatch(r"c\d+", k)
                        and re.search(rf"\b{k}\b", text)), key=lambda k: int(k[1:]))
    head, _, rest = text.partition("\n")
    listed = "".join(f"    # {k} = {_brief(namespace[k])}\n" for k in constants)
    return f"{head}\n{'    # ' + note + chr(10) if note else ''}{listed}{rest}"


_OUT_BY_POSITION = re.compile(r"\b(f\d+)\(([^()=]*)\)(?=  # )")


def _out_by_keyword(m: re.Match, namespace: dict) -> str:
    """A plain ufunc call whose ``out`` the program passes by position (``_render``'s
    ``POSITIONAL_OUT``) as a reader knows it: ``out=``."""
    f, args = namespace.get(m.group(1)), m.group(2).split(", ")
    if not isinstance(f, np.ufunc) or len(args) != f.nin + 1:
        return m.group(0)
    return f"{m.group(1)}({', '.join(args[:-1])}, out={args[-1]})"


def _brief(value: Any) -> str:
    if isinstance(value, np.ndarray):
        shown = np.array2string(value, threshold=6, edgeitems=2, max_line_width=60)
        shown = " ".join(shown.split())
        return f"{value.dtype} array {value.shape}: {shown}"
    text = repr(value)
    return text if len(text) <= 70 else text[:67] + "..."
