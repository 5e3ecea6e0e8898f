"""Containers of values (pytrees): flatten to a list of leaves and rebuild.

tuple, list, dict, namedtuple, dataclass instances and user-registered types are
containers; ``None`` is an empty container; everything else is a leaf. A front end's type
that stands for one array (chainrule.numpy's Buffer; ``tracer.FrontEnd.pytree_leaf``) is a
leaf too, flattened as the value it stands for, so every transform sees the array. A dict's
children are taken in sorted key order (as autograd's flatten and JAX do), so two dicts
with the same keys line up leaf by leaf whatever order their keys were inserted in; keys
that cannot be sorted (mixed types such as 1 and "a") keep insertion order. Rebuilding a
dict restores the order it was built in (``DictKeys``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

_registry: dict[type, tuple[Callable, Callable]] = {}
# type -> value_of(obj): types flattened as one leaf, the value an object stands for
_leaf_values: dict[type, Callable] = {}
# Types found to be plain leaves (no container of any kind, no leaf value): whether a
# value is one depends on its type alone, so the questions (a registered type? a
# namedtuple? a dataclass?) are asked once per type, not per value flattened (~0.3 µs of
# every transformed call). Forgotten when a type is registered; only types that cannot
# change (``_fixed``).
_plain_leaf_types: set[type] = set()
plain_leaf_types = _plain_leaf_types  # (read by the engine's one-leaf shortcuts: the same set)


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable) -> None:
    """Make ``cls`` a container.

    ``flatten(obj) -> (children, aux)`` with ``children`` an iterable of subtrees
    and ``aux`` hashable static data; ``unflatten(aux, children) -> obj``.

    >>> from chainrule import grad
    >>> class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))
    >>> g = grad(lambda p: p.a * p.b)(Pair(2.0, 3.0))
    >>> print(g.a, g.b)
    3.0 2.0
    """
    _registry[cls] = (flatten, unflatten)
    _plain_leaf_types.clear()


def register_leaf_value(cls: type, value_of: Callable) -> None:
    """Flatten objects of ``cls`` as one leaf, ``value_of(obj)`` (called by
    ``tracer.register_front_end`` for a front end's array type: chainrule.numpy's Buffer)."""
    _leaf_values[cls] = value_of
    _plain_leaf_types.clear()


class TreeDef(NamedTuple):
    """The shape of a container: its kind, static data and children's treedefs."""

    kind: Any  # None for a leaf, else the container class
    aux: Any
    children: tuple

    @property
    def num_leaves(self) -> int:
        if self.kind is None:
            return 1
        return sum(child.num_leaves for child in self.children)

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        return f"{self.kind.__name__}({inner})"


LEAF = TreeDef(None, None, ())


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def _children(tree: Any) -> tuple[Any, Any, tuple] | None:
    """(kind, aux, children) for a container, None for a leaf."""
    cls = type(tree)
    if cls is tuple or cls is list:
        return cls, None, tuple(tree)
    if cls is dict:
        keys = _sorted_keys(tree)
        if len(keys) > 1 and keys != tuple(tree):
            keys = DictKeys(keys, tuple(tree))
        return dict, keys, tuple(tree[key] for key in keys)
    if tree is None:
        return type(None), None, ()
    if cls in _registry:
        children, aux = _registry[cls][0](tree)
        return cls, aux, tuple(children)
    if _is_namedtuple(cls):
        return cls, None, tuple(tree)
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        names = tuple(f.name for f in dataclasses.fields(tree) if f.init)
        return cls, names, tuple(getattr(tree, name) for name in names)
    if cls not in _leaf_values and _fixed(cls):
        _plain_leaf_types.add(cls)
    return None


_IMMUTABLE_TYPE = 1 << 8  # (CPython's Py_TPFLAGS_IMMUTABLETYPE: builtins', NumPy's types)


def _fixed(cls: type) -> bool:
    """Whether a leaf type stays a leaf: one whose attributes cannot be set, or
    chainrule's own (its boxes). A user's class may become a dataclass later
    (``dataclasses.dataclass(cls)`` changes the class in place)."""
    return bool(cls.__flags__ & _IMMUTABLE_TYPE) or cls.__module__.startswith("chainrule.")


class DictKeys(tuple):
    """A dict's keys in the order of its children (sorted: what two dicts of one structure
    share, so equality and hashing are the tuple's), and ``order``: the order the dict was
    built in, which ``tree_unflatten`` gives back (a function sees its dict arguments, and
    a caller its dict results, in their own order)."""

    def __new__(cls, keys: tuple, order: tuple = ()):  # (order: pickle sets it after)
        self = super().__new__(cls, keys)
        self.order = order
        return self


def _sorted_keys(tree: dict) -> tuple:
    try:
        return tuple(sorted(tree))
    except TypeError:
        return tuple(tree)


def tree_flatten(tree: Any) -> tuple[list, TreeDef]:
    if type(tree) in _plain_leaf_types:  # (a transform's argument and answer, most often)
        return [tree], LEAF
    leaves: list = []
    return leaves, _flatten_into(tree, leaves, {})


# The recursion is a module-level function, not a closure: a closure that calls
# itself is a reference cycle, which would keep the leaves (and through boxes, a
# whole recorded graph) alive until the garbage collector happens to run.
def _flatten_into(tree: Any, leaves: list, values: dict) -> TreeDef:
    """``values``: id -> value of the objects flattened to a leaf value so far: an object
    met twice (a buffer answered under two keys) gives its one value twice, as the
    same array answered twice is one array."""
    if type(tree) in _plain_leaf_types:
        leaves.append(tree)
        return LEAF
    parts = _children(tree)
    if parts is None:
        value_of = _leaf_values.get(type(tree))
        if value_of is None:
            leaves.append(tree)
        else:
            value = values.get(id(tree))
            if value is None:
                value = values[id(tree)] = value_of(tree)
            leaves.append(value)
        return LEAF
    kind, aux, children = parts
    return TreeDef(kind, aux, tuple(_flatten_into(child, leaves, values)
                                    for child in children))


def flatten_matching(tree: Any, treedef: TreeDef, what: str, of: str) -> list:
    """``tree``'s leaves, which must be one per leaf of ``treedef`` (a tangent or
    cotangent shaped like the input or output it belongs to)."""
    leaves, tree_def = tree_flatten(tree)
    if tree_def is not treedef and len(leaves) != treedef.num_leaves:
        raise ValueError(f"The {what} has structure {tree_def!r} but the {of} has "
                         f"{treedef!r}: pass one {what} per {of} leaf.")
    return leaves


def tree_unflatten(treedef: TreeDef, leaves) -> Any:
    if treedef.kind is None:  # (one leaf: a transform's argument and answer, most often)
        return next(iter(leaves))
    return _build(treedef, iter(leaves))


def _build(treedef: TreeDef, leaves) -> Any:
    if treedef.kind is None:
        return next(leaves)
    children = [_build(child, leaves) for child in treedef.children]
    return _rebuild(treedef.kind, treedef.aux, children)


def _rebuild(kind: type, aux: Any, children: list) -> Any:
    if kind is tuple:
        return tuple(children)
    if kind is list:
        return children
    if kind is dict:
        if type(aux) is DictKeys:
            by_key = dict(zip(aux, children))
            return {key: by_key[key] for key in aux.order}
        return dict(zip(aux, children))
    if kind is type(None):
        return None
    if kind in _registry:
        return _registry[kind][1](aux, children)
    if _is_namedtuple(kind):
        return kind(*children)
    return kind(**dict(zip(aux, children)))


def tree_map(f: Callable, tree: Any, *rest: Any) -> Any:
    """``f`` applied leaf by leaf (to the matching leaves of ``rest`` too), same structure.

    >>> tree_map(lambda x, y: x + y, {"a": 1, "b": (2, 3)}, {"a": 10, "b": (20, 30)})
    {'a': 11, 'b': (22, 33)}
    """
    leaves, treedef = tree_flatten(tree)
    others = [tree_flatten(r)[0] for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def tree_leaves(tree: Any) -> list:
    return tree_flatten(tree)[0]
