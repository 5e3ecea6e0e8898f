"""An emitted operation of a jit program (``Instr``): what ``_emit`` lowers a recorded call
to, ``_roll`` rolls into loops and ``_render`` writes as a line."""

from __future__ import annotations

from typing import Any


class Instr:
    """One emitted operation. ``code`` (``fast``: its form in a float program, or None)
    has ``{j}`` where operand j goes; an operand (``slots[j]``) is an earlier Instr or a
    constant ``(value, text, float text)``. ``key`` is what an iteration of a rolled loop
    must repeat (see ``_roll``); ``loop``/``offset``/``iteration`` place a rolled one."""

    __slots__ = ("kind", "node", "var", "code", "fast", "slots", "comment", "key", "array",
                 "fresh", "reuse", "view", "pos", "loop", "offset", "iteration")

    def __init__(self, kind: str, node, code: str | None, fast: str | None, slots: list,
                 comment: str, key: Any = None, array: bool = False, fresh: bool = False,
                 reuse: tuple = (), view: bool = False):
        self.kind = kind  # "input", "convert" (an input as a NumPy scalar), "call", "guard"
        self.node = node
        self.var = ""
        self.code = code
        self.fast = fast
        self.slots = slots
        self.comment = comment
        self.key = self if key is None else key  # (only itself: never rolled)
        self.array = array  # an ndarray answer (worth a del)
        self.fresh = fresh  # a new array of an elementwise ufunc
        self.reuse = reuse  # operands whose memory it may take as out=
        self.view = view  # its answer may share an operand's memory
        self.loop = None
        self.pos = -1  # (an input: before every instruction)

    def at(self, node, iteration: int) -> Instr:
        """This instruction of a folded loop's body as a later iteration makes it (see
        ``_fold``): a value to refer to, which no line computes (no operands)."""
        other = _new_instr(Instr)
        other.kind, other.node, other.var, other.code, other.fast = \
            self.kind, node, self.var, self.code, self.fast
        other.slots, other.comment, other.key, other.array, other.fresh = \
            (), self.comment, self.key, self.array, self.fresh
        other.reuse, other.view, other.pos, other.loop, other.offset = \
            self.reuse, self.view, self.pos, self.loop, self.offset
        other.iteration = iteration
        return other


_new_instr = object.__new__
