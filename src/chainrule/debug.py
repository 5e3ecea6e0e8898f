"""``chainrule.debug_nans``: raise at the first primitive that makes a NaN or an infinity.

Off by default, and then it costs nothing: the tracer's hot path is untouched. Turning it
on swaps three things in the engine, and turning it off puts them back:

- ``VJPNode.__init__`` and ``JVPNode.__init__`` (every reverse- and forward-mode node is
  made by its constructor, so every traced primitive call passes there) get a version that
  checks the answer (and, forward mode, the tangent) and remembers the user's source line;
- ``reverse._entry_of``, the rule lookup of the backward pass, hands out entries whose VJP
  checks the cotangents it returns;
- ``reverse.children_first`` marks which node the backward pass is at, for the message.

Only values on a trace are checked (a primitive called on plain numbers is NumPy's own
business: ``np.seterr`` covers it).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from ._core import forward as _forward
from ._core import reverse as _reverse
from ._core.tracer import batched_types, getval
from .explain import _format as fmt
from .explain._source import Source, user_source

__all__ = ["debug_nans"]

_lock = threading.Lock()
_depth = 0  # how many debug_nans are on (nested context managers)
_saved: dict[str, Any] = {}
_sources: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # node -> Source
_current: list = [None]  # the node the backward pass is pulling back


def _plain(x):
    """``x`` without boxes, and a batched value (vmap) as the whole batch's values."""
    x = getval(x)
    while type(x) in batched_types:
        x = getval(x._value)
    return x


def _bad(x) -> bool:
    """Does ``x`` (a number, an array, or a container of them) hold a NaN or infinity?"""
    x = _plain(x)
    if isinstance(x, (tuple, list)):
        return any(_bad(v) for v in x)
    if isinstance(x, dict):
        return any(_bad(v) for v in x.values())
    try:
        arr = np.asarray(x)
    except Exception:  # an object NumPy cannot see into: not ours to judge
        return False
    return arr.dtype.kind in "fc" and not np.isfinite(arr).all()


def _name(fun) -> str:
    return getattr(fun, "__name__", None) or repr(fun)


def _operands(args) -> str:
    shown = []
    for i, a in enumerate(args):
        a = _plain(a)
        if isinstance(a, _reverse.ShapeOnly):
            shown.append(f"arg{i}: shape {a.shape}")
        elif isinstance(a, (int, float, complex, np.ndarray, np.number)):
            shown.append(f"arg{i}: {fmt.summary(a)}")
    return "; ".join(shown) or "(none)"


def _where(source: Source | None) -> str:
    return f" at {source}" if source is not None else " (source line unknown)"


def _raise_forward(fun, args, what: str, source: Source | None):
    raise FloatingPointError(
        f"debug_nans: {_name(fun)} produced {what} in the forward pass{_where(source)}. "
        f"Operands: {_operands(args)}."
    )


def _checked_vjp_init(self, ans, fun, args, kwargs, argnums, parents):
    source = user_source(2)
    if _bad(ans):
        _raise_forward(fun, args, "NaN/inf", source)
    _saved["VJPNode.__init__"](self, ans, fun, args, kwargs, argnums, parents)
    if source is not None:
        _sources[self] = source


def _checked_jvp_init(self, ans, fun, args, kwargs, argnums, parents):
    source = user_source(2)
    if _bad(ans):
        _raise_forward(fun, args, "NaN/inf", source)
    _saved["JVPNode.__init__"](self, ans, fun, args, kwargs, argnums, parents)
    if _bad(self.g):
        _raise_forward(fun, args, f"a NaN/inf tangent ({fmt.summary(_plain(self.g))})", source)


class _CheckedEntry:
    """A rule-table entry whose VJP checks the cotangents it returns."""

    __slots__ = ("_entry", "vjp", "vjp_by_argnums")

    def __init__(self, entry):
        self._entry = entry
        self.vjp = None if entry.vjp is None else self._vjp
        self.vjp_by_argnums: dict = {}  # always through vjp, where the check is

    def _vjp(self, g, argnums, ans, args, kwargs):
        grads = list(self._entry.vjp(g, argnums, ans, args, kwargs))
        for argnum, c in zip(argnums, grads):
            if c is not None and _bad(c):
                # (a graph pulled back in a given order is not marked: a node left from
                # another pass, of another primitive, is not this one's)
                node = _current[0]
                mine = node is not None and node.fun is self._entry.fun
                source = _sources.get(node) if mine else None
                raise FloatingPointError(
                    f"debug_nans: the VJP of {_name(self._entry.fun)} produced a NaN/inf "
                    f"cotangent for argument {argnum} in the backward pass{_where(source)}. "
                    f"Incoming cotangent: {fmt.summary(_plain(g))}; operands: "
                    f"{_operands(args)}; cotangent made: {fmt.summary(_plain(c))}."
                )
        return grads

    def __getattr__(self, name):
        return getattr(self._entry, name)


def _checked_entry_of(fun):
    entry = _saved["_entry_of"](fun)
    return None if entry is None else _CheckedEntry(entry)


def _marking_children_first(end_nodes):
    for node in _saved["children_first"](end_nodes):
        _current[0] = node
        yield node
    _current[0] = None


def _switch_on() -> None:
    _saved["VJPNode.__init__"] = _reverse.VJPNode.__init__
    _saved["JVPNode.__init__"] = _forward.JVPNode.__init__
    _saved["_entry_of"] = _reverse._entry_of
    _saved["children_first"] = _reverse.children_first
    _reverse.VJPNode.__init__ = _checked_vjp_init
    _forward.JVPNode.__init__ = _checked_jvp_init
    _reverse._entry_of = _checked_entry_of
    _reverse.children_first = _marking_children_first


def _switch_off() -> None:
    _reverse.VJPNode.__init__ = _saved.pop("VJPNode.__init__")
    _forward.JVPNode.__init__ = _saved.pop("JVPNode.__init__")
    _reverse._entry_of = _saved.pop("_entry_of")
    _reverse.children_first = _saved.pop("children_first")
    _current[0] = None  # a pass stopped by the error leaves its node here


def is_enabled() -> bool:
    return _depth > 0


class debug_nans:
    """Raise ``FloatingPointError`` at the first traced primitive that makes a NaN or an
    infinity, in the forward pass (its answer or tangent) or the backward pass (a
    cotangent), naming the user's source line, the primitive and its operands.

    ``debug_nans()`` turns it on globally; ``debug_nans(False)`` turns it off. As a context
    manager (``with chainrule.debug_nans(): ...``) it is on inside the block and back to
    what it was after. Off (the default) it costs nothing.
    """

    def __init__(self, enabled: bool = True):
        global _depth
        self._before = _depth
        with _lock:
            if enabled and _depth == 0:
                _switch_on()
            elif not enabled and _depth > 0:
                _switch_off()
            _depth = max(_depth, 1) if enabled else 0

    def __enter__(self) -> debug_nans:
        return self

    def __exit__(self, *exc) -> None:
        global _depth
        with _lock:
            if self._before == 0 and _depth > 0:
                _switch_off()
            elif self._before > 0 and _depth == 0:
                _switch_on()
            _depth = self._before
