"""Flatten a container of arrays into one vector, differentiably.

``flatten(value)`` returns ``(vector, unflatten)``; both directions are made of
chainrule primitives (ravel, concatenate, slicing, reshape), so gradients flow
through them, e.g. ``grad(lambda v: loss(unflatten(v)))``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as _np

from .. import numpy as anp
from .._core.pytree import tree_flatten, tree_unflatten
from .._core.tracer import getval


def flatten(value: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Return ``(flat, unflatten)``: ``flat`` is a 1-D array of every leaf of ``value``
    (a float, an array, or a tuple/list/dict/namedtuple/dataclass of them) raveled in
    order; ``unflatten(flat)`` rebuilds a value of the same structure.

    >>> import numpy as onp
    >>> flat, unflatten = flatten((onp.ones((2, 2)), onp.zeros(2)))
    >>> print(flat)
    [1. 1. 1. 1. 0. 0.]
    >>> unflatten(flat)[0].shape
    (2, 2)
    """
    leaves, treedef = tree_flatten(value)
    shapes = [_np.shape(getval(leaf)) for leaf in leaves]
    sizes = [int(_np.prod(shape)) for shape in shapes]
    scalar = [_np.ndim(getval(leaf)) == 0 and not isinstance(getval(leaf), _np.ndarray)
              for leaf in leaves]
    if leaves:
        flat = anp.concatenate([anp.ravel(leaf) for leaf in leaves])
    else:
        flat = _np.zeros(0)

    def unflatten(vector):
        if _np.shape(vector) != (sum(sizes),):
            raise ValueError(f"unflatten expects a vector of shape ({sum(sizes)},), "
                             f"got shape {_np.shape(vector)}.")
        parts, start = [], 0
        for shape, size, is_scalar in zip(shapes, sizes, scalar):
            # scalars come back as scalars, not 0-d arrays
            part = vector[start] if is_scalar else anp.reshape(vector[start:start + size], shape)
            parts.append(part)
            start += size
        return tree_unflatten(treedef, parts)

    return flat, unflatten


def flatten_func(func: Callable, example: Any) -> tuple[Callable, Callable, Any]:
    """For ``func(value, *args)`` taking a container, return ``(flat_func, unflatten,
    flat_example)`` where ``flat_func(vector, *args) = func(unflatten(vector), *args)``."""
    flat_example, unflatten = flatten(example)

    def flat_func(vector, *args, **kwargs):
        return func(unflatten(vector), *args, **kwargs)

    return flat_func, unflatten, flat_example
