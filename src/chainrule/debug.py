"""``chainrule.debug_nans``: raise at the first primitive that makes a NaN or an infinity.

Off by default, and then it costs nothing but the engine's check for observers. On, it is
an observer of the engine (``_core.extension.Observer``): each node made (every traced
primitive call, reverse or forward mode) has its answer (and, forward mode, its tangent)
checked and its user source line remembered; each cotangent the backward pass makes is
checked. Nothing in the engine is swapped.

Only values on a trace are checked (a primitive called on plain numbers is NumPy's own
business: ``np.seterr`` covers it).
"""

from __future__ import annotations

import threading

import numpy as np

from ._core import forward as _forward
from ._core import reverse as _reverse
from ._core.extension import Observer, add_observer, remove_observer
from ._core.tracer import batched_types, getval
from .explain import _format as fmt
from .explain._source import Source, node_sources, user_source

__all__ = ["debug_nans"]

_lock = threading.Lock()
_depth = 0  # how many debug_nans are on (nested context managers)


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


class _NanChecker(Observer):
    """Checks each traced answer (and forward-mode tangent) and each cotangent made."""

    sees_every_run = True  # (a jitted function then runs eagerly, its calls checked)

    def node_made(self, node, ans, fun, args) -> None:
        if not isinstance(node, (_reverse.VJPNode, _forward.JVPNode)):
            return  # (a staging node's answer is jit's business, checked when it runs)
        source = user_source(1)
        if _bad(ans):
            _raise_forward(fun, args, "NaN/inf", source)
        if isinstance(node, _forward.JVPNode):
            if _bad(node.g):
                _raise_forward(
                    fun, args, f"a NaN/inf tangent ({fmt.summary(_plain(node.g))})", source
                )
        elif source is not None:
            node_sources[node] = source

    def cotangents_made(self, node, g, grads) -> None:
        for argnum, c in grads:
            if c is not None and _bad(c):
                raise FloatingPointError(
                    f"debug_nans: the VJP of {_name(node.fun)} produced a NaN/inf "
                    f"cotangent for argument {argnum} in the backward pass"
                    f"{_where(node_sources.get(node))}. Incoming cotangent: "
                    f"{fmt.summary(_plain(g))}; operands: {_operands(node.args)}; "
                    f"cotangent made: {fmt.summary(_plain(c))}."
                )


_checker = _NanChecker()


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
                add_observer(_checker)
            elif not enabled and _depth > 0:
                remove_observer(_checker)
            _depth = max(_depth, 1) if enabled else 0

    def __enter__(self) -> debug_nans:
        return self

    def __exit__(self, *exc) -> None:
        global _depth
        with _lock:
            if self._before == 0 and _depth > 0:
                remove_observer(_checker)
            elif self._before > 0 and _depth == 0:
                add_observer(_checker)
            _depth = self._before
