"""Derivatives that are arrays of their own, never the caller's cotangent or tangent.

A derivative rule may hand its cotangent on untouched (the identity's, ``x + y``'s) or as
a view of it (a reshape's, a transpose's, a slice's), so a pullback or a pushforward can
answer the very array the caller passed, a view of it, or one array for two arguments:
writing into one answer would change the caller's array or another answer. A NumPy
function answers a view only where it is documented to; a pullback is not such a
function, so its answers are made fresh here (autograd answers the caller's ``g`` itself
for the identity; JAX's arrays cannot be written into, so there it cannot be seen).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as anp
from .._core.pytree import tree_flatten, tree_unflatten
from .._core.tracer import getval

_IMMUTABLE = (float, int, complex, bool, np.generic, type(None))
_SIMPLE = frozenset((float, np.ndarray, np.float64))  # (leaves the common answers hold)


def _root(a: np.ndarray) -> Any:
    """The object owning an array's memory (its base's base ..., or itself)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a if a.base is None else a.base


def _leaves(tree: Any) -> tuple[list | tuple, Any]:
    """``tree_flatten``, without its cost for one leaf or a tuple of simple ones (a
    pullback's answers: a transform's call costs a few µs in all)."""
    if type(tree) in _SIMPLE:
        return (tree,), None
    if type(tree) is tuple and all(type(x) in _SIMPLE for x in tree):
        return tree, tuple
    return tree_flatten(tree)


def _owning_apart(leaves: tuple, given: Any) -> bool:
    """Whether ``leaves`` (simple ones) are floats and arrays that own their memory, none
    twice, and ``given`` is None, a float, or an array none of them is or owns."""
    if type(given) is np.ndarray:
        arrays = [id(given), id(given.base)]
    elif given is None or type(given) is float:
        arrays = []
    else:
        return False
    for leaf in leaves:
        if type(leaf) is np.ndarray:
            if leaf.base is not None or id(leaf) in arrays:
                return False
            arrays.append(id(leaf))
        elif type(leaf) is not float:
            return False
    return True


def unaliased(result: Any, given: Any = None) -> Any:
    """``result`` (a pytree of derivatives) with each leaf that is a leaf of ``given``
    (what the caller passed), shares memory with one, or with an earlier leaf of
    ``result``, replaced by its copy; ``result`` itself where none is."""
    one = result[0] if type(result) is tuple and len(result) == 1 else result
    if type(one) is np.ndarray and one.base is None and (
            given is None or type(given) is float or
            (type(given) is np.ndarray and one is not given and given.base is not one)):
        return result  # (one array of its own: the most common answer, at once)
    if type(result) is tuple:  # (the common answers: at once where apart)
        if _owning_apart(result, given):
            return result
    elif type(result) in _SIMPLE and _owning_apart((result,), given):
        return result
    leaves, treedef = _leaves(result)
    if given is None and len(leaves) == 1:
        return result
    owners: dict[int, list] = {}  # id of an owner of memory -> the arrays seen in it
    if given is not None:
        for leaf in _leaves(given)[0]:
            _seen(getval(leaf), owners)
    copied = None
    for i, leaf in enumerate(leaves):
        value = getval(leaf)  # (traced under jit or an outer transform: its value)
        if type(value) is float or isinstance(value, _IMMUTABLE):
            continue
        if owners and _aliases(value, owners):
            if copied is None:
                copied = list(leaves)
            # (a traced answer copied by the primitive: jit's program copies it too)
            copied[i] = leaf = anp.copy(leaf) if leaf is not value else leaf.copy()
            value = getval(leaf)
        _seen(value, owners)
    if copied is None:
        return result
    if treedef is None:
        return copied[0]
    return tuple(copied) if treedef is tuple else tree_unflatten(treedef, copied)


def _seen(leaf: Any, owners: dict) -> None:
    if type(leaf) is np.ndarray or isinstance(leaf, np.ndarray):
        owners.setdefault(id(leaf if leaf.base is None else _root(leaf)), []).append(leaf)
    elif not isinstance(leaf, _IMMUTABLE):
        owners.setdefault(id(leaf), []).append(leaf)


def _aliases(leaf: Any, owners: dict) -> bool:
    if not isinstance(leaf, np.ndarray):
        return any(seen is leaf for seen in owners.get(id(leaf), ()))
    seen_in = owners.get(id(leaf if leaf.base is None else _root(leaf)))
    return seen_in is not None and any(
        seen is leaf or np.may_share_memory(leaf, seen)  # (an empty one: itself)
        for seen in seen_in)
