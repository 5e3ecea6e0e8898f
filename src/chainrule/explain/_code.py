"""``report.code``: the straight-line program ``chainrule.jit`` emits for the value and
gradient of the explained call, each line marked with the user's source line it comes from.

While the program is traced, an observer of the engine (``_core.extension.Observer``)
notes each forward node's user line and gives each staged call (a ``SourcedNode``, whose
line jit's emitter writes in the call's comment) the user line of the forward pass or, in
the backward pass, the line of the node being pulled back:
``v7 = f3(v5, x0)  # multiply @ model.py:12 (adjoint)``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import numpy as np

from .._core import reverse as _reverse
from .._core.extension import Observer, observing
from .._core.pytree import tree_flatten
from ._source import user_source

_lock = threading.Lock()


def _has_float(x) -> bool:
    leaves, _ = tree_flatten(x)
    return any(
        isinstance(leaf, (float, np.ndarray, np.floating, complex))
        and np.result_type(leaf).kind in "fc"
        for leaf in leaves
    )


def adjoint_program(f: Callable, args: tuple) -> str:
    """The source jit emits for ``value_and_grad(f)`` at ``args`` (every float argument),
    its lines marked with the user's lines."""
    from .._transforms.derivatives import value_and_grad
    from ..jit import _staging, jit

    argnum = tuple(i for i, a in enumerate(args) if _has_float(a))
    if not argnum:
        raise TypeError("report.code needs at least one float argument.")
    program = jit(value_and_grad(f, argnum=argnum if len(argnum) > 1 else argnum[0]))

    forward: dict = {}  # VJPNode -> Source

    class NotingLines(Observer):
        current = None  # the VJPNode the backward pass is pulling back

        def node_made(self, node, ans, fun, args) -> None:
            if isinstance(node, _reverse.VJPNode):
                forward[node] = user_source(1)
            elif isinstance(node, _staging.SourcedNode):
                at = self.current
                source = forward.get(at) if at is not None else user_source(1)
                node.source = None if source is None else (
                    f"{os.path.basename(source.file)}:{source.line}"
                    + (" (adjoint)" if at is not None else ""))

        def node_visited(self, node) -> None:
            self.current = node

    with _lock, observing(NotingLines()):
        return program.lower(*args).source
