"""``report.code``: the straight-line program ``chainrule.jit`` emits for the value and
gradient of the explained call, each line marked with the user's source line it comes from.

While the program is traced, three constructors and one generator of the engine are
swapped (and put back after, under a lock), as ``chainrule.debug_nans`` does:

- ``VJPNode.__init__`` notes each forward node's user line;
- ``reverse.children_first`` marks the node the backward pass is pulling back;
- ``StagingNode.__init__`` notes, for each staged call, the user line of the forward pass
  or, in the backward pass, the line of the node being pulled back;

and jit's emitter appends that line to the call's comment (its ``annotate`` hook):
``v7 = f3(v5, x0)  # multiply @ model.py:12 (adjoint)``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import numpy as np

from .._core import reverse as _reverse
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
    from .. import jit, value_and_grad
    from ..jit import _emit, _staging

    argnum = tuple(i for i, a in enumerate(args) if _has_float(a))
    if not argnum:
        raise TypeError("report.code needs at least one float argument.")
    program = jit(value_and_grad(f, argnum=argnum if len(argnum) > 1 else argnum[0]))

    forward: dict = {}  # VJPNode -> Source
    staged: dict = {}  # StagingNode -> (Source, in the backward pass)
    current: list = [None]
    vjp_init = _reverse.VJPNode.__init__
    stage_init = _staging.StagingNode.__init__
    children_first = _reverse.children_first

    def noting_vjp_init(self, *a, **k):
        vjp_init(self, *a, **k)
        forward[self] = user_source(1)

    def noting_stage_init(self, *a, **k):
        stage_init(self, *a, **k)
        node = current[0]
        staged[self] = (forward.get(node), True) if node is not None else (user_source(1), False)

    def marking_children_first(end_nodes):
        for node in children_first(end_nodes):
            current[0] = node
            yield node
        current[0] = None

    def annotate(node) -> str:
        source, backward = staged.get(node, (None, False))
        if source is None:
            return ""
        return f" @ {os.path.basename(source.file)}:{source.line}" + (
            " (adjoint)" if backward else ""
        )

    with _lock:
        _reverse.VJPNode.__init__ = noting_vjp_init
        _staging.StagingNode.__init__ = noting_stage_init
        _reverse.children_first = marking_children_first
        _emit.annotate = annotate
        try:
            return program.lower(*args).source
        finally:
            _reverse.VJPNode.__init__ = vjp_init
            _staging.StagingNode.__init__ = stage_init
            _reverse.children_first = children_first
            _emit.annotate = None
