"""Containers of traced values, as autograd's ``builtins`` module names them.

Functions being differentiated receive ordinary tuples, lists and dicts whose
leaves are traced, so the built-in constructors just work. The boxes here carry
containers *returned by primitives* (``eigh``, ``svd``, ``split`` ...): indexing
them is itself a primitive, so each element keeps its derivative.
"""

from __future__ import annotations

import builtins as _builtins

from ._core.pytree import register_pytree_node
from ._core.rules import defjvp_direct as defjvp
from ._core.rules import defvjp_direct
from ._core.tracer import Box, getval, primitive
from ._core.vspace import add_values, container_box_adders, vspace

tuple = _builtins.tuple
list = _builtins.list
dict = _builtins.dict


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
        return _builtins.tuple(self) + _builtins.tuple(other)

    def __radd__(self, other):
        return _builtins.tuple(other) + _builtins.tuple(self)


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


SequenceBox.register(_builtins.tuple)
SequenceBox.register(_builtins.list)
DictBox.register(_builtins.dict)

# A traced container flattens to its traced elements, like the container it stands
# for, so transforms see its leaves (e.g. the outputs of split, or nested tangents). It is
# rebuilt as the plain container: under nested traces its value is itself a SequenceBox.
register_pytree_node(SequenceBox, lambda box: (_builtins.list(box), _builtins.type(getval(box))),
                     lambda kind, children: kind(children))


@primitive
def sequence_take(container, index):
    return container[index]


@primitive
def sequence_untake(g, index, container_space):
    """Zeros shaped like the container, with ``g`` at ``index``."""
    zeros = container_space.zeros()
    if _builtins.isinstance(zeros, _builtins.dict):
        zeros[index] = g
        return zeros
    items = _builtins.list(zeros)
    items[index] = g
    return _builtins.type(zeros)(items)


@primitive
def container_add(x, y):
    """Two containers of values added leaf by leaf (``+`` would concatenate them)."""
    return add_values(x, y)


defvjp_direct(sequence_take, lambda g, ans, c, index: sequence_untake(g, index, vspace(c)))
defjvp(sequence_take, lambda g, ans, c, index: sequence_take(g, index))
defvjp_direct(sequence_untake, lambda g, ans, gi, index, space: sequence_take(g, index))
defjvp(sequence_untake, lambda g, ans, gi, index, space: sequence_untake(g, index, space))
defvjp_direct(container_add, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
defjvp(container_add, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
container_box_adders[SequenceBox] = container_box_adders[DictBox] = container_add

def type(obj):
    """``type(obj)`` of the traced value's own value: ``type(x) is numpy.ndarray`` holds
    for a traced array as it does for a plain one (as in autograd)."""
    return _builtins.type(getval(obj))


def isinstance(obj, classinfo) -> bool:
    """``isinstance`` that sees through tracing: a traced array is an ``ndarray``, a
    traced tuple a ``tuple``; it is still an instance of its Box class, too."""
    return _builtins.isinstance(obj, classinfo) or _builtins.isinstance(getval(obj), classinfo)
