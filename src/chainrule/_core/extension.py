"""The engine's extension point: what a transform or a tool plugs into the engine, and how.

The engine never has a function or a constructor swapped at run time. Everything above it
(chainrule.numpy, jit, vmap, Tensor, explain, debug_nans) plugs in at one of these places,
each one explicit, each one looked up by the engine at the one spot where it calls out:

1. **Node types** (the good pattern, preferred): a transform that records calls defines a
   ``tracer.Node`` subclass and the engine calls its methods. ``on_decision`` (a Python
   decision on a traced value: ``if x:``, ``int(x)``, an index), ``on_notrace`` (a call of
   a primitive without a rule, e.g. ``np.shape``), ``on_error`` (a traced call raised).
   jit's ``StagingNode`` and sparsity detection's node use these. A method costs nothing
   to the node types that leave it ``None``.
2. **Observers** (this module): a tool that must *see* every node made, or every node the
   backward pass visits, without changing what is computed (debug_nans checks values,
   explain's ``report.code`` notes source lines). Subclass ``Observer``, override what it
   needs, and turn it on for a block: ``with observing(my_observer): ...``. Observers are
   process-wide while on (as a swap was before, and under the same lock discipline):
   they see every thread's traces. Off, they cost one truth test of an empty list per
   recorded call and one per backward pass.
3. **Value types** met by primitives, registered once at import of the module that
   defines them: box and vector-space types (``Box.register``, ``VSpace.register``,
   ``tracer.box_fallbacks``, ``vspace.vspace_fallbacks``), front-end types
   (``tracer.register_front_end``: Tensor) and batched types
   (``tracer.register_batched_type``: vmap's BatchedArray).
4. **Call handlers** the engine asks on its rare paths, each set once at import by the
   one layer that owns it: ``tracer.batch_hook`` (a call with a batched value: vmap's
   batching rules), ``tracer.sequence_hook`` (a call refused for a list of traced values:
   chainrule.numpy retries with an array), ``tracer.notrace_hook`` (a notrace call under
   jit), ``tracer.untraceable_answer_handlers`` and ``tracer.traced_keyword_handlers``.
5. **Rules**: ``rule_table`` entries, filled through ``rules`` (``defvjp``, ``defjvp``...).

A new capability picks the first of these that fits: a node type if it makes its own
trace, an observer if it only watches, a registration if it brings a new kind of value.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Observer", "add_observer", "observers", "observing", "remove_observer"]


class Observer:
    """Sees the engine at work; every method is told, none may change what is computed
    (raising is allowed: debug_nans stops the program at the first NaN; raise an error of
    your own class, not ``TypeError``, which the recording call reads as a refused list
    argument and retries)."""

    def node_made(self, node: Any, ans: Any, fun: Any, args: tuple) -> None:
        """A traced primitive call was recorded: ``node`` (any node type, forward, reverse
        or staging) was made for ``fun`` called on ``args`` (as the caller passed them,
        boxed), answering ``ans``."""

    def node_visited(self, node: Any) -> None:
        """The backward pass is about to pull back through ``node`` (a VJP node); ``None``
        when the pass has ended."""

    def cotangents_made(self, node: Any, g: Any, grads: list) -> None:
        """The backward pass pulled ``g`` back through ``node``: ``grads`` is
        ``[(argnum, cotangent or None)]`` for the node's traced arguments."""


# The observers on now, in the order they were turned on. One list object for the life of
# the process (the engine holds it; it is changed in place, under the lock).
observers: list[Observer] = []
_lock = threading.Lock()


def add_observer(observer: Observer) -> None:
    """Turn ``observer`` on until ``remove_observer`` (for a switch, like
    ``debug_nans()``; prefer ``observing`` for a block)."""
    with _lock:
        observers.append(observer)


def remove_observer(observer: Observer) -> None:
    """Turn off the newest turning-on of ``observer`` (nested ones stay)."""
    with _lock:
        for i in range(len(observers) - 1, -1, -1):
            if observers[i] is observer:
                del observers[i]
                return


@contextmanager
def observing(observer: Observer) -> Iterator[Observer]:
    """Turn ``observer`` on for the block (nested or repeated ones too); off after it."""
    add_observer(observer)
    try:
        yield observer
    finally:
        remove_observer(observer)
