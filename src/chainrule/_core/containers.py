"""Boxes for containers returned by primitives (``eigh``, ``svd``, ``split`` ...).

Functions being differentiated receive ordinary tuples, lists and dicts whose leaves are
traced, so those need nothing here. A *primitive* that returns a container is recorded
once, as one node whose answer is the whole container; its box is a ``SequenceBox`` or
``DictBox``, and taking an element out (``sequence_take``) is itself a primitive, so each
element keeps its derivative.
"""

from __future__ import annotations

from .pytree import register_pytree_node
from .rules import defjvp_direct, deftaylor_linear, defvjp_direct
from .tracer import Box, batched_types, front_ends, getval, isbox, primitive
from .vspace import add_values, container_box_adders, partial_types, vspace


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
    return _with_slots(container_space.zeros(), {index: g})


def _with_slots(zeros, pieces: dict):
    """The container ``zeros`` with ``pieces`` ({index: value}) put in."""
    if isinstance(zeros, dict):
        zeros.update(pieces)
        return zeros
    items = list(zeros)
    for index, piece in pieces.items():
        items[index] = piece
    return type(zeros)(items)


class TakenPieces:
    """The cotangent of a traced container while only elements taken out of it
    (``sequence_take``) have given it cotangents: per slot, the sum of its pieces.

    The backward pass adds a take's piece into its slot (``add``) and builds the
    container's cotangent once, when the container's own node is reached (``dense``),
    instead of a container of zeros per take summed list by list (lstm unpacks 8 pieces of
    ``np.split`` per time step). ``dense`` gives what those sums gave, bit for bit: a slot
    that missed some of the container's ``count`` cotangents had zeros added to its pieces
    (which turns -0.0 into 0.0 and promotes to the slot's dtype), one that none reached is
    zeros, and the cotangent of a single take is its piece itself.
    """

    __slots__ = ("container", "sums", "hits", "count")

    def __init__(self, container, slot, piece):
        self.container = container  # the container's value: its slots' zeros, when built
        self.sums = {slot: piece}
        self.hits = {slot: 1}
        self.count = 1

    def add(self, other: TakenPieces) -> None:
        """Add ``other``'s pieces slot by slot (in place: the backward pass owns ``self``;
        the pieces themselves are never written into)."""
        sums, hits = self.sums, self.hits
        for slot, piece in other.sums.items():
            if slot in sums:
                sums[slot] = add_values(sums[slot], piece)
                hits[slot] += other.hits[slot]
            else:
                sums[slot] = piece
                hits[slot] = other.hits[slot]
        self.count += other.count

    def merge(self, other) -> bool:
        """Add another take's pieces (a partial cotangent, see ``vspace.partial_types``);
        a whole container's cotangent is not added here (False)."""
        if type(other) is not TakenPieces:
            return False
        self.add(other)
        return True

    def added_to(self, acc, owned: bool) -> None:
        return None  # (a whole container's cotangent plus this: acc + self.dense())

    def dense(self):
        """The container's cotangent, as the sums of per-take containers gave it."""
        zeros = vspace(self.container).zeros()
        count, hits = self.count, self.hits
        return _with_slots(zeros, {
            slot: piece if hits[slot] == count else add_values(piece, zeros[slot])
            for slot, piece in self.sums.items()})


def _take_vjp(g, ans, container, index):
    # A plain piece of a plain list, tuple or dict, at a slot named one way only, takes
    # the sparse path; a traced one (grad of grad, jit, vmap) is recorded as an untake.
    kind = type(container)
    if kind is dict or ((kind is list or kind is tuple) and type(index) is int):
        piece_type = type(g)
        if piece_type not in _plain_container_types and not isbox(g) and \
                piece_type not in batched_types and piece_type not in front_ends:
            if kind is not dict and index < 0:
                index += len(container)
            return TakenPieces(container, index, g)
    return sequence_untake(g, index, vspace(container))


_plain_container_types = (list, tuple, dict)
partial_types.add(TakenPieces)


@primitive
def container_add(x, y):
    """Two containers of values added leaf by leaf (``+`` would concatenate them)."""
    return add_values(x, y)


defvjp_direct(sequence_take, _take_vjp)
defjvp_direct(sequence_take, lambda g, ans, c, index: sequence_take(g, index))
deftaylor_linear(sequence_take)
defvjp_direct(sequence_untake, lambda g, ans, gi, index, space: sequence_take(g, index))
defjvp_direct(sequence_untake, lambda g, ans, gi, index, space: sequence_untake(g, index, space))
deftaylor_linear(sequence_untake)
defvjp_direct(container_add, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
defjvp_direct(container_add, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
container_box_adders[SequenceBox] = container_box_adders[DictBox] = container_add
