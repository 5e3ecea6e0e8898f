"""Boxes for containers returned by primitives (``eigh``, ``svd``, ``split`` ...).

Functions being differentiated receive ordinary tuples, lists and dicts whose leaves are
traced, so those need nothing here. A *primitive* that returns a container is recorded
once, as one node whose answer is the whole container; its box is a ``SequenceBox`` or
``DictBox``, and taking an element out (``sequence_take``) is itself a primitive, so each
element keeps its derivative.
"""

from __future__ import annotations

from .pytree import register_pytree_node
from .rules import defjvp_direct, defvjp_direct
from .tracer import Box, getval, primitive
from .vspace import add_values, container_box_adders, vspace


class SequenceBox(Box):
    """A traced tuple or list returned by a primitive."""

    __slots__ = ()

    def __getitem__(self, index):
        return sequence_take(self, index)

    def __len__(self):
        return len(self._value)

    def __iter__(self):
        return (sequence_take(self, i) for i in range(len(self._value)))

    def __add__(self, other):
        return tuple(self) + tuple(other)

    def __radd__(self, other):
        return tuple(other) + tuple(self)


class DictBox(Box):
    """A traced dict returned by a primitive."""

    __slots__ = ()

    def __getitem__(self, key):
        return sequence_take(self, key)

    def __len__(self):
        return len(self._value)

    def __iter__(self):
        return iter(self._value)

    def keys(self):
        return self._value.keys()

    def values(self):
        return [self[k] for k in self._value]

    def items(self):
        return [(k, self[k]) for k in self._value]


SequenceBox.register(tuple)
SequenceBox.register(list)
DictBox.register(dict)

# A traced container flattens to its traced elements, like the container it stands
# for, so transforms see its leaves (e.g. the outputs of split, or nested tangents). It is
# rebuilt as the plain container: under nested traces its value is itself a SequenceBox.
register_pytree_node(SequenceBox, lambda box: (list(box), type(getval(box))),
                     lambda kind, children: kind(children))


@primitive
def sequence_take(container, index):
    return container[index]


@primitive
def sequence_untake(g, index, container_space):
    """Zeros shaped like the container, with ``g`` at ``index``."""
    zeros = container_space.zeros()
    if isinstance(zeros, dict):
        zeros[index] = g
        return zeros
    items = list(zeros)
    items[index] = g
    return type(zeros)(items)


@primitive
def container_add(x, y):
    """Two containers of values added leaf by leaf (``+`` would concatenate them)."""
    return add_values(x, y)


defvjp_direct(sequence_take, lambda g, ans, c, index: sequence_untake(g, index, vspace(c)))
defjvp_direct(sequence_take, lambda g, ans, c, index: sequence_take(g, index))
defvjp_direct(sequence_untake, lambda g, ans, gi, index, space: sequence_take(g, index))
defjvp_direct(sequence_untake, lambda g, ans, gi, index, space: sequence_untake(g, index, space))
defvjp_direct(container_add, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
defjvp_direct(container_add, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
container_box_adders[SequenceBox] = container_box_adders[DictBox] = container_add
