"""Vector spaces: how to make zeros, add, scale and pair the values being differentiated.

Each value type registers a VSpace class; containers (pytrees) get a
ContainerVSpace made of their leaves' spaces. Transforms use vector spaces to
seed and collect derivatives, never the values' own types.
"""

from __future__ import annotations

import numbers
from typing import Any

from .pytree import tree_flatten, tree_unflatten
from .tracer import Box

_box_types = Box.types  # (the registry's own set: later registrations count)


class VSpace:
    """The vector space a value lives in.

    autograd's protocol: the public ``add``, ``mut_add``, ``scalar_mul``, ``inner_prod``
    and ``covector`` call the underscored methods, which a subclass overrides. A user
    type whose ``__add__`` calls ``vs.add`` (autograd's examples do) then works, where a
    default ``add`` written as ``x + y`` would call ``__add__`` again, forever.
    """

    __slots__ = ()
    mappings: dict[type, type[VSpace]] = {}
    iscomplex = False
    size: int
    shape: tuple

    def zeros(self) -> Any:
        raise NotImplementedError

    def ones(self) -> Any:
        raise NotImplementedError

    def standard_basis(self):
        raise NotImplementedError

    def randn(self, rng=None) -> Any:
        raise NotImplementedError

    def add(self, x, y) -> Any:
        return self._add(x, y)

    def mut_add(self, x, y) -> Any:
        """Add ``y`` into ``x``, in place where that is possible; returns the sum."""
        return self._mut_add(x, y)

    def scalar_mul(self, x, a) -> Any:
        return self._scalar_mul(x, a)

    def inner_prod(self, x, y) -> Any:
        return self._inner_prod(x, y)

    def covector(self, x) -> Any:
        return self._covector(x)

    def _add(self, x, y) -> Any:
        return x + y

    def _mut_add(self, x, y) -> Any:
        return self._add(x, y)

    def _scalar_mul(self, x, a) -> Any:
        return x * a

    def _inner_prod(self, x, y) -> Any:
        raise NotImplementedError

    def _covector(self, x) -> Any:
        return x

    def cast(self, g) -> Any:
        """A cotangent collected by the backward pass, as a value of this space."""
        return g

    def flatten(self, x):
        """The value as a 1-D float/complex array (for optimizers and checks)."""
        raise NotImplementedError

    def unflatten(self, flat):
        raise NotImplementedError

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self), self._key()))

    def _key(self):
        return ()

    @classmethod
    def register(cls, value_type: type, factory=None) -> None:
        VSpace.mappings[value_type] = factory or cls


class ContainerVSpace(VSpace):
    """The product space of a container's leaves."""

    __slots__ = ("treedef", "spaces")

    def __init__(self, treedef, spaces: list[VSpace]):
        self.treedef = treedef
        self.spaces = spaces

    @property
    def size(self) -> int:
        return sum(s.size for s in self.spaces)

    @property
    def shape(self):
        return tuple(s.shape for s in self.spaces)

    @property
    def iscomplex(self) -> bool:
        return any(s.iscomplex for s in self.spaces)

    def _key(self):
        return (self.treedef, tuple(self.spaces))

    def _build(self, leaves):
        return tree_unflatten(self.treedef, leaves)

    def _pairs(self, *values):
        flats = [tree_flatten(v)[0] for v in values]
        return zip(self.spaces, *flats)

    def zeros(self):
        return self._build([s.zeros() for s in self.spaces])

    def ones(self):
        return self._build([s.ones() for s in self.spaces])

    def standard_basis(self):
        zeros = [s.zeros() for s in self.spaces]
        for i, space in enumerate(self.spaces):
            for b in space.standard_basis():
                yield self._build(zeros[:i] + [b] + zeros[i + 1 :])

    def randn(self, rng=None):
        return self._build([s.randn(rng) for s in self.spaces])

    def _add(self, x, y):
        return self._build([s.add(a, b) for s, a, b in self._pairs(x, y)])

    def _mut_add(self, x, y):
        return self._build([s.mut_add(a, b) for s, a, b in self._pairs(x, y)])

    def _scalar_mul(self, x, a):
        return self._build([s.scalar_mul(v, a) for s, v in self._pairs(x)])

    def _inner_prod(self, x, y):
        return sum(s.inner_prod(a, b) for s, a, b in self._pairs(x, y))

    def _covector(self, x):
        return self._build([s.covector(v) for s, v in self._pairs(x)])

    def cast(self, g):
        return self._build([s.cast(v) for s, v in self._pairs(g)])

    def flatten(self, x):
        import numpy as _np

        parts = [s.flatten(v) for s, v in self._pairs(x)]
        return _np.concatenate(parts) if parts else _np.zeros(0)

    def unflatten(self, flat):
        leaves, start = [], 0
        for s in self.spaces:
            leaves.append(s.unflatten(flat[start : start + s.size]))
            start += s.size
        return self._build(leaves)

    def __repr__(self) -> str:
        return f"ContainerVSpace({self.treedef!r})"


# (matches(value), factory) for value types no module registered ahead (duck arrays)
vspace_fallbacks: list = []

# box type -> add(x, y) for traced containers, whose own ``+`` concatenates
container_box_adders: dict = {}

# Partial cotangents: what a VJP may answer for a value of which its argument is a piece
# (an element of a container, a slice of an array), so that the backward pass adds the
# pieces of one value without a full value of zeros per piece. A type here has
#   ``dense()``: the value it stands for (a new value, once per partial);
#   ``merge(g) -> bool``: whether it added ``g`` (another cotangent of the same value,
#     partial or not) into itself, in place (it is then the backward pass's own);
#   ``added_to(acc, owned)``: ``acc`` (a plain cotangent of the same value, which the
#     backward pass may write into when ``owned``) plus itself, as a partial, or None
#     (then ``acc + g.dense()``).
# Both give what adding the dense values in the same order gives, bit for bit.
# (containers.TakenPieces; chainrule.numpy's TakenSlices)
partial_types: set = set()


def dense(g):
    """``g``, or the value it stands for where it is a partial cotangent."""
    return g.dense() if type(g) in partial_types else g


def add_values(x, y):
    """``x + y`` for values and containers of values (tuples add leaf by leaf)."""
    cls = type(x)
    if cls is tuple or cls is list:
        return cls(map(add_values, x, y))
    if cls is dict:
        return {k: add_values(v, y[k]) for k, v in x.items()}
    adder = container_box_adders.get(cls) or container_box_adders.get(type(y))
    if adder is not None:
        return adder(x, y)
    return x + y


def vspace(value: Any) -> VSpace:
    """The vector space of ``value`` (boxes are looked through)."""
    while type(value) in _box_types:  # (getval's loop, without its call: twice a grad)
        value = value._value
    factory = VSpace.mappings.get(type(value))
    if factory is not None:
        return factory(value)
    leaves, treedef = tree_flatten(value)
    if treedef.kind is not None:
        return ContainerVSpace(treedef, [vspace(leaf) for leaf in leaves])
    for cls in type(value).__mro__[1:]:
        if cls in VSpace.mappings:
            return VSpace.mappings[cls](value)
    for matches, factory in vspace_fallbacks:
        if matches(value):
            VSpace.register(type(value), factory)
            return factory(value)
    if isinstance(value, numbers.Integral):
        raise TypeError(
            f"Can't differentiate with respect to {value!r} of type {type(value).__name__}: "
            f"integers and booleans have no gradient. Pass a float instead (e.g. "
            f"{float(value)!r})."
        )
    raise TypeError(
        f"Can't find a vector space for a value of type {type(value).__name__}: chainrule "
        f"differentiates floats, complex numbers, float/complex NumPy arrays and containers "
        f"of them (tuple, list, dict, namedtuple, dataclass, registered pytrees)."
    )
