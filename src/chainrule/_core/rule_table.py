"""The rule table: one entry per primitive, holding everything chainrule knows about it.

An entry (``PrimitiveRules``) is the single source of truth for its primitive: its VJP,
its JVP, its batched JVP, which of its values the VJP reads (the tape keeps only those),
and how ``explain`` writes a call of it. The engine reads the entry of a node's primitive
once per node; rule tables and user code write entries through ``rules.py``.

``primitive_vjps`` and ``primitive_jvps`` (autograd's names for its two registries) are
live views of one column of the table, for code that reads, sets or pops them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, MutableMapping


class PrimitiveRules:
    """Everything registered for one primitive.

    - ``vjp(g, argnums, ans, args, kwargs)``: one cotangent per traced argument (None for
      zero); ``vjp_by_argnums`` maps an ``argnums`` tuple to its per-argument rules
      ``rule(g, ans, *args, **kwargs)`` once chosen, so the backward pass can call them
      directly (filled by VJPs defined per argument; empty for other forms).
    - ``jvp(tangents, argnums, ans, args, kwargs)``: the tangent of the answer.
    - ``batched_jvp``: the same with a leading batch axis on every tangent, or None where
      it cannot batch a call (the caller then loops).
    - ``unread_args`` / ``reads_ans``: the argument positions (ascending, among the first
      four) whose values the VJP never reads, only their shape and dtype, and whether it
      reads the answer. A node keeps the unread ones as ``ShapeOnly`` and the answer as
      None when unread. ``None`` (the default) keeps everything.
    - ``reads_by_argnum``: where each argument's rule declares its own reads (argnum ->
      the positions and ``"ans"`` that rule reads), a node keeps what the rules of its
      traced arguments read (``unread_given``): ``x * y`` with only ``y`` traced keeps
      ``x`` alone. ``unread_args`` / ``reads_ans`` then say what no rule reads.
    - ``sparsity(argnum, ans, args, kwargs)``: the structural pattern of d ans / d
      args[argnum] as a boolean ``scipy.sparse`` matrix (ans.size x arg.size), or None
      (unknown: every output may depend on every input). ``args`` are plain values; a
      traced argument's value is not part of the structure (see ``chainrule._sparsity.patterns``).
    - ``batch(values, batched, kwargs)``: the answer for a whole batch (``chainrule.vmap``):
      ``values`` are the arguments, those marked in ``batched`` holding the batch as their
      leading axis; every output of the answer holds it as its leading axis. None: the
      primitive runs once per example (see ``chainrule._transforms.vmap``).
    - ``taylor(series_in, argnums, ans, args, kwargs, order)``: the answer's normalized
      Taylor coefficients (a tuple of ``order`` values) from each traced argument's
      (``series_in``, one tuple per argument); see ``taylor``. None: Taylor mode nests the
      JVP (exact, slower). A rule may carry ``kind`` (``"recurrence"``, ``"linear"`` ...),
      which the coverage table shows.
    - ``label``: how ``explain`` writes a call; a format string over the arguments' texts
      (``"{0} + {1}"``) or a function ``label(texts, args) -> str``. None: ``name(args)``.
    - ``layout_by_value``: whether the type, dtype or shape of the answer depends on the
      arguments' values, not only on theirs (``real_if_close``, ``eigvals``); ``chainrule.jit``
      then guards the answer's layout, as the code after the call was traced for it.

    What ``chainrule.jit`` may rely on when it writes a call as NumPy code (its emission
    hints; each False or None by default, which is always right, never the fastest):

    - ``operator``: the label is Python's operator (``"{0} + {1}"``), which on NumPy
      scalars gives the ufunc's bits, result type and warnings: jit writes scalar calls so.
    - ``new_array``: an array answer is always a new array, never a view of an argument
      (``sum``, ``matmul``): jit need not keep the arguments apart from the caller's values.
    - ``neutral``: the constant operand under which a call answers its other operand:
      ``"ones"`` (``x * 1`` is ``x``, bit for bit, in the same layout) or ``"eye"`` (``I @ m``
      is ``m`` where m's entries are finite and nonzero); jit drops or copies such a call.
    - ``lowered_by_value``: jit's code for a call reads its constant arguments' values, not
      only their types (``moveaxis``: the permutation it computes).
    - ``finite_from_inf``: the argument positions where an infinite argument may give a
      finite answer (``x / inf`` is 0, ``exp(-inf)`` is 0): jit's float programs check those
      values, as NumPy's overflow warning would otherwise be lost.
    - ``reduction``: the ufunc whose ``reduce`` a call on an ndarray is, with the same
      arguments (NumPy's ``sum``, ``prod``, ``max``, ``min``): jit calls it directly.
    - ``lowering(vals, texts, kwtexts) -> str | None``: the Python expression jit writes for
      a call whose first argument is an array, from the arguments' values at trace time and
      their code (``a.transpose(axes)``, ``a[i]``, ``a ** 2``), or None for the call itself.
    - ``silent``: when a call can neither raise nor warn on arguments of the types and
      shapes it was traced with, so jit leaves it out where nothing reads it: ``"always"``
      (views, reshapes, negation), ``"fixed index"`` (while only its first argument is
      traced: a traced index may be out of range), ``"one number"`` (while only its first
      argument is traced and holds one number: a sum of one number).
    - ``takes_masks``: the answer's shape does not depend on the values of a boolean array
      argument, so jit stages masks through the call rather than specialising on them; a
      number: only for calls with that many arguments (``where(c, x, y)``, not ``where(c)``).
    - ``takes_index_arrays``: an integer array argument, as an index, gives an answer of
      the index's shape (``x[i]``, ``take``): jit stages such indices through the call.

    And one hint for the backward pass:

    - ``symmetric``: the two arguments are interchangeable (``add``, ``multiply``), so with
      one value as both (``x * x``) their VJP rules answer the same cotangent: the
      backward pass computes it once and hands it to both.
    """

    __slots__ = ("fun", "vjp", "vjp_by_argnums", "jvp", "batched_jvp", "unread_args",
                 "reads_ans", "reads_by_argnum", "unread_by_argnums", "label",
                 "jvp_replaced", "sparsity", "batch", "taylor", "layout_by_value",
                 "operator", "new_array", "neutral", "lowered_by_value", "finite_from_inf",
                 "reduction", "lowering", "silent", "takes_masks", "takes_index_arrays",
                 "symmetric")

    def __init__(self, fun: Callable):
        self.fun = fun
        self.vjp: Callable | None = None
        self.vjp_by_argnums: dict[tuple, tuple] = {}
        self.jvp: Callable | None = None
        self.batched_jvp: Callable | None = None
        self.unread_args: tuple[int, ...] | None = None
        self.reads_ans = True
        self.reads_by_argnum: dict[int, tuple] | None = None
        self.unread_by_argnums: dict[tuple, tuple[tuple[int, ...], bool]] = {}
        self.label: str | Callable | None = None
        self.sparsity: Callable | None = None
        self.batch: Callable | None = None
        self.taylor: Callable | None = None
        self.layout_by_value = False
        self.operator = False
        self.new_array = False
        self.neutral: str | None = None
        self.lowered_by_value = False
        self.finite_from_inf: tuple[int, ...] = ()
        self.reduction = None  # (a numpy.ufunc)
        self.lowering: Callable | None = None
        self.silent: str | None = None
        self.takes_masks: bool | int = False
        self.takes_index_arrays = False
        self.symmetric = False
        # the JVP was replaced after one existed and the VJP has not been since (rules.py
        # warns when such a VJP is replaced alone: the two modes would disagree)
        self.jvp_replaced = False

    def declare_reads(self, reads: tuple | dict | None) -> None:
        """What the VJP reads (see ``rules.defvjp_direct``): a tuple of positions and
        ``"ans"`` for every rule at once, a dict argnum -> such a tuple per argument's rule
        (an argnum it does not name reads everything), or None: everything."""
        self.reads_by_argnum, self.unread_by_argnums = None, {}
        if isinstance(reads, dict):
            self.reads_by_argnum = dict(reads)
            reads = set().union(*reads.values())
        if reads is None:
            self.unread_args, self.reads_ans = None, True
            dropping.pop(self.fun, None)
        else:
            self.unread_args = tuple(i for i in range(4) if i not in reads)
            self.reads_ans = "ans" in reads
            dropping[self.fun] = self

    def unread_given(self, argnums: tuple) -> tuple[tuple[int, ...], bool]:
        """(unread positions, whether the answer is read) for a call that traces
        ``argnums``, from the per-argument declarations or the one for every argnums;
        made once per argnums (``unread_by_argnums``, which ``VJPNode`` reads first)."""
        found = self.unread_by_argnums.get(argnums)
        if found is None and self.reads_by_argnum is None:  # one declaration for all
            found = self.unread_by_argnums[argnums] = (self.unread_args, self.reads_ans)
        elif found is None:
            everything = ("ans", 0, 1, 2, 3)
            read = set().union(*(self.reads_by_argnum.get(i, everything) for i in argnums))
            found = self.unread_by_argnums[argnums] = (
                tuple(i for i in range(4) if i not in read), "ans" in read)
        return found

    def __repr__(self) -> str:
        kinds = [k for k in ("vjp", "jvp", "batched_jvp") if getattr(self, k) is not None]
        return f"<rules of {getattr(self.fun, '__name__', self.fun)}: {', '.join(kinds)}>"


# primitive -> its entry. Entries are made on first registration and never removed.
rule_table: dict[Callable, PrimitiveRules] = {}

# The entries that declare unread values, by primitive: the tape looks a primitive up here
# once per recorded call, and most primitives keep everything (a smaller dict, a cheaper miss).
dropping: dict[Callable, PrimitiveRules] = {}


# primitive -> column -> the files that set that column, in order (see ``note_registration``).
# A record for tests and readers (tests/test_rule_columns.py), never read by the engine.
registered_in: dict[Callable, dict[str, list[str]]] = {}


def note_registration(fun: Callable, column: str) -> None:
    """Record which file set ``fun``'s ``column``: the module whose top-level code made the
    call (a rule file, or the user's module), found by walking up to the first frame that
    runs a module body; at import time, a few frames."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    files = registered_in.setdefault(fun, {}).setdefault(column, [])
    if not files or files[-1] != frame.f_code.co_filename:
        files.append(frame.f_code.co_filename)


def rules_of(fun: Callable) -> PrimitiveRules:
    """``fun``'s entry, made empty if it has none yet."""
    entry = rule_table.get(fun)
    if entry is None:
        entry = rule_table[fun] = PrimitiveRules(fun)
    return entry


def label_of(fun: Callable) -> str | Callable:
    """How explain writes a call of ``fun``: its entry's label, or else its name (written
    as a call, ``name(a, b)``)."""
    entry = rule_table.get(fun)
    if entry is not None and entry.label is not None:
        return entry.label
    return getattr(fun, "__name__", "f")


class RuleColumn(MutableMapping):
    """One column of the rule table as a dict of primitive -> rule (autograd's
    ``primitive_vjps``/``primitive_jvps``). Deleting an entry clears that rule only."""

    def __init__(self, column: str):
        self.column = column

    def __getitem__(self, fun: Callable) -> Callable:
        entry = rule_table.get(fun)
        rule = None if entry is None else getattr(entry, self.column)
        if rule is None:
            raise KeyError(fun)
        return rule

    def __setitem__(self, fun: Callable, rule: Callable) -> None:
        entry = rules_of(fun)
        setattr(entry, self.column, rule)
        note_registration(fun, self.column)
        if self.column == "vjp":  # a VJP set here reads everything, and is not symmetric
            entry.vjp_by_argnums = {}
            entry.declare_reads(None)
            entry.symmetric = False

    def __delitem__(self, fun: Callable) -> None:
        self[fun]  # KeyError when absent
        self[fun] = None

    def __contains__(self, fun) -> bool:
        entry = rule_table.get(fun)
        return entry is not None and getattr(entry, self.column) is not None

    def __iter__(self) -> Iterator[Callable]:
        return (fun for fun, entry in list(rule_table.items())
                if getattr(entry, self.column) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"<{len(self)} {self.column} rules>"


primitive_vjps = RuleColumn("vjp")
primitive_jvps = RuleColumn("jvp")
batched_jvps = RuleColumn("batched_jvp")
