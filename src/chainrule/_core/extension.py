"""The engine's extension point: what a transform or a tool plugs into the engine, and how.

The engine never has a function or a constructor swapped at run time. Everything above it
(chainrule.numpy, jit, vmap, Tensor, explain, debug_nans) plugs in at one of these places,
each one explicit, each one looked up by the engine at the one spot where it calls out:

1. **Node types** (the good pattern, preferred): a transform that records calls defines a
   ``tracer.Node`` subclass and the engine calls its methods. ``on_decision`` (a Python
   decision on a traced value: ``if x:``, ``int(x)``, an index), ``on_notrace`` (a call of
   a primitive without a rule, e.g. ``np.shape`` or a comparison), ``on_error`` (a traced
   call raised), ``on_plain_value`` (eager code hands the plain value to Python),
   ``on_untraceable_answer`` (a recorded call answered a value no box holds, a NumPy
   bool), ``on_traced_keywords`` (traced values given by keywords that cannot be passed
   positionally) and ``on_buffer_answer``/``holds_buffer`` (where eager code would hold a
   front end's buffer, which takes traced writes). jit's ``StagingNode`` and sparsity
   detection's ``DetectionNode`` use these. A method costs nothing to the node types that
   leave it ``None``.
2. **Observers** (this module): a tool that must *see* every node made, or every node the
   backward pass visits, without changing what is computed (debug_nans checks values,
   explain's ``report.code`` notes source lines). Subclass ``Observer``, override what it
   needs, and turn it on for a block: ``with observing(my_observer): ...``. Observers are
   process-wide while on (as a swap was before, and under the same lock discipline):
   they see every thread's traces. Off, they cost one truth test of an empty list per
   recorded call and one per backward pass.
3. **Value types** met by primitives, registered once at import of the module that
   defines them, each with what the engine asks of its values:
   - box and vector-space types (``Box.register``, ``VSpace.register``,
     ``tracer.box_fallbacks``, ``vspace.vspace_fallbacks``); a box type's front end may
     set ``on_refused_sequences`` (a call refused for lists holding its boxes:
     chainrule.numpy redoes it with arrays) and ``on_untraceable_answer`` (chainrule.numpy
     lets a foreign container such as xarray's DataArray apply a ufunc itself);
   - front-end types (``tracer.register_front_end(type, FrontEnd(...))``: Tensor, and
     chainrule.numpy's Buffer);
   - batched types (``tracer.register_batched_type(type, call)``: vmap's BatchedArray,
     whose ``call`` answers a primitive's call on a batch by its batching rule);
   - view makers (``tracer.register_view_maker(type, make)``): a primitive declared to
     answer a view of its first argument (``primitive(f, answers_view=True)``: NumPy's
     transpose, reshape, split ...) called with a value of that type first is answered by
     ``make(f_wrapped, args, kwargs)`` (chainrule.numpy's buffers and traced arrays: a view
     that sees later writes into the argument); the primitive keeps its identity, and only
     view primitives ask;
   - a box type's ``on_notrace_answer``: a notrace call's answer on its boxes made what
     the front end makes of new memory (chainrule.numpy: ``np.floor(x)``, a buffer).
4. **Rules**: ``rule_table`` entries, filled through ``rules`` (``defvjp``, ``defjvp``...).

The engine's rare paths (a batched value, a list of boxes refused, a notrace call, an answer
no box holds, a traced keyword) ask the node types and value types they meet, so each handler
belongs to the thing it handles: no module global of the engine is set by another layer.

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

    # True: the observer must see the eager calls of every run (debug_nans checks each
    # answer): while it is on, a ``chainrule.jit`` function evaluates eagerly instead of
    # running its compiled program, whose calls make no nodes. False: jit traces and runs
    # programs as ever (an observer may watch its staging nodes).
    sees_every_run: bool = False

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
