"""Folding: loops found in the record itself, so that only three iterations of each are
lowered to instructions.

``_roll`` finds loops among instructions, after every node was lowered: for a long loop,
lowering the iterations that rolling then puts away was most of the first call's time.
Here, before lowering, a run of nodes is *folded* where every iteration records the same
calls (function, traced positions, number of arguments, answer type or array layout) and
every argument of an iteration reads, in the same way in every iteration:

- ``local``: a node of the same iteration;
- ``carry``: a node of the previous iteration (the first reads one from before the run);
- ``inv``: the same node from before the run;
- ``seq``: one node from before the run per iteration, all with the same key;

constants are the same objects, or plain numbers of one type (one per iteration), keyword
arguments the same, and no node is guarded. Then ``_emit._lower`` lowers iterations 0, 1
and 2 as any nodes: iteration 0 stays straight code (what it computes for every iteration,
which later ones share, and its start from values before the run); iteration 1 is the
body of the loop and iteration 2 checks it: the same instructions, each operand where the
node forms above place it, each shared or dropped node (common subexpression, ``x * 1``)
the same in both. ``fold`` then makes the ``Loop`` ``_render`` writes, and the nodes of the
later iterations get no instruction: each reads the loop's value of its iteration
(``Folded``). Where a check fails, lowering goes on node by node (and ``_roll`` may still
roll the instructions).

Why iteration 2 stands for all later ones: an instruction's code depends on its node's
key, its constants and keywords, its operands' types: the same in every iteration. Which
nodes share an instruction depends on their operands: where those are of the same
iteration, the previous one, or one node for all (no ``seq`` operand, no constant per
iteration), the sharing is the same in every iteration, and a node that shares nothing in
iteration 2 and could in a later one computes the same value again (a lost saving, never
a different value)."""

from __future__ import annotations

import bisect
import operator
from itertools import chain, repeat

import numpy as np

from .._core.repeats import Starts, next_same, run_at
from .._core.vspace import VSpace
from . import _roll
from ._roll import Loop, Stride
from ._staging import ArrayMeta, rules_of_call

_ANS = operator.attrgetter("ans")
_SEQ = operator.attrgetter("seq")
_KEY = operator.attrgetter("key")
_PARENTS = operator.attrgetter("parents")
_ARGS = operator.attrgetter("args")
_PLAIN = frozenset({float, int, complex, bool, *np.sctypeDict.values()})  # keyed by type
_IS = operator.is_


class Run:
    """``repeats`` iterations of ``period`` nodes from ``nodes[start]`` whose arguments
    read in one form each: ``forms[k][p]`` for parent p of offset k, one of
    ``("local", k')``, ``("carry", k')``, ``("inv", node)``, ``("seq", column)``
    (``positions[:, column]``: the parent of each iteration); ``constants[k, j]``: the
    values of a constant argument that differs between iterations; ``equal``: the (k, j) of
    constants that are other objects of one value in each iteration (iteration 1's stands
    for all); ``plain[k]``: whether offset k reads no ``seq`` operand and no such constant
    (then whether it shares an instruction is the same in every iteration)."""

    __slots__ = ("start", "period", "repeats", "forms", "positions", "constants", "equal",
                 "plain")

    def __init__(self, start: int, period: int, repeats: int, forms: list, positions,
                 constants: dict, equal: set = frozenset()):
        self.start, self.period, self.repeats = start, period, repeats
        self.forms, self.positions, self.constants = forms, positions, constants
        self.equal = equal
        self.plain = [
            all(f[0] != "seq" for f in forms[k])
            and not any(key[0] == k for key in chain(constants, equal))
            for k in range(period)
        ]


def node_runs(nodes: list, seqs: list[int], guarded: list) -> list[Run]:
    """The runs of ``nodes`` (the needed nodes, in order; ``seqs``: their ``seq``) to fold,
    in order. ``guarded``: the nodes with guards."""
    min_repeats = max(_roll.MIN_REPEATS + 1, 3)  # (the first iteration stays straight)
    # (numbered at trace time; an answer's layout and a constant's value are checked where
    # a run is found)
    codes = np.fromiter(map(_KEY, nodes), np.int64, len(nodes))
    ints = codes.tolist()
    following = next_same(codes, numbers=True, array=True)
    nxt = following.tolist()
    seqs = np.array(seqs, np.int64)
    stops = np.sort(np.searchsorted(seqs, [g.seq for g in guarded])).tolist()
    # seq - seqs[0] -> place in ``nodes`` (a parent of a needed node is needed: its seq is
    # among ``seqs``, which span the trace's creations, a range about as long as the record)
    first = int(seqs[0]) if len(seqs) else 0
    places = np.full(int(seqs[-1]) - first + 1 if len(seqs) else 0, -1, np.int64)
    places[seqs - first] = np.arange(len(seqs))
    runs: list[Run] = []
    # (a run to fold has min_repeats iterations, and the later ones MIN_INSTRUCTIONS keys)
    stretch = lambda period: np.maximum((min_repeats - 1) * period, _roll.MIN_INSTRUCTIONS)  # noqa: E731
    # Places are tried one by one from the start, while few fail: a record that is mostly
    # loops (a long chain's forward and backward passes) costs a ``run_at`` per loop. After
    # ``_TRIED_ONE_BY_ONE`` failures, ``Starts`` finds the places where a run may start
    # many at once (``run_starts`` over windows of the record from the place reached: it
    # spares trying every place of long straight code). Both try the same places that can
    # start a run (a run long enough agrees with itself a period later over ``stretch``:
    # ``run_starts`` finds every such place), so they find the same runs.
    starts = None
    failed = 0
    i = 0
    n = len(ints)
    while i < n:
        if starts is None and failed >= _TRIED_ONE_BY_ONE:
            starts = Starts(codes, following, _roll.CANDIDATES, stretch)
        if starts is not None:
            i = starts.after(i)  # (not inside a run found)
            if i == n:
                break
        period, repeats = run_at(ints, i, nxt, _roll.CANDIDATES)
        if repeats < min_repeats or period * (repeats - 1) < _roll.MIN_INSTRUCTIONS:
            failed += 1
            i += 1
            continue
        run = _checked(nodes, i, period, repeats, (places, first), codes, stops)
        if run is None or run.repeats < min_repeats or \
                period * (run.repeats - 1) < _roll.MIN_INSTRUCTIONS:
            # (not tried again from each later place: that would cost the run's length
            # each time; its calls are lowered one by one and rolled, see ``_roll``)
            i += period * repeats
            continue
        runs.append(run)
        i += period * run.repeats
    return runs


_TRIED_ONE_BY_ONE = 32  # places that may fail before the record's starts are found at once


def _checked(nodes: list, start: int, period: int, repeats: int, places: tuple, codes,
             stops: list) -> Run | None:
    """The run of the first iterations whose arguments read in one form each (see the
    module's docstring), or None. Positions are checked for all iterations at once.
    ``places``: an array of the places in ``nodes`` by seq, less the first seq, and that
    seq."""
    segment = nodes[start:start + period * repeats]
    parent_seqs = np.fromiter(map(_SEQ, chain.from_iterable(map(_PARENTS, segment))), np.int64)
    flat = places[0][parent_seqs - places[1]]  # (the parents' places in ``nodes``)
    width = len(flat) // repeats  # parents per iteration
    done = repeats
    g = bisect.bisect_left(stops, start)  # a guarded node ends the run before its iteration
    if g < len(stops) and stops[g] < start + period * repeats:
        done = (stops[g] - start) // period
    if width * repeats != len(flat):
        return None
    parents = flat.reshape(repeats, width)
    rel = parents - (start + period * np.arange(repeats))[:, None]
    local = rel[0] >= 0
    carry = ~local & (rel[1] >= -period) & (rel[1] < 0)
    bad = np.where(local, rel != rel[0], np.where(carry, rel != rel[1], parents >= start))
    bad[0] &= ~carry  # (the first iteration's carried value comes from before the run)
    before = ~(local | carry)
    keyed = codes[parents]  # one node per iteration from before the run: all of one key
    bad |= before & (keyed != keyed[0])
    rows = bad.any(axis=1)
    if rows.any():
        done = min(done, int(rows.argmax()))
    if done < 3:
        return None
    metas = []  # lists of nodes whose answers' layouts must agree (per offset, per column)
    for k in range(period):
        ans = segment[k].ans
        t = type(ans)
        if segment[k].fun is None or (t not in _PLAIN and t is not ArrayMeta
                                      and not _pieces(ans)):
            return None  # (an input; a mask, whose values guards read)
        if t not in _PLAIN:
            metas.append(segment[k::period])
    column = 0
    for k in range(period):
        for parent in segment[k].parents:
            if type(parent.ans) is ArrayMeta and before[column]:
                metas.append(list(map(nodes.__getitem__, parents[:done, column].tolist())))
            column += 1
    for column_nodes in metas:
        answers = list(map(_ANS, column_nodes[:done]))
        first = answers[0]
        if all(map(_IS, answers, repeat(first))):
            continue  # (the trace keeps one ArrayMeta per layout, while it has few)
        layout = _layout(first)
        for r, ans in enumerate(answers):
            if ans is not first and _layout(ans) != layout:
                done = r
                break
    if done < 3:
        return None
    constants: dict[tuple, list] = {}
    equal: set[tuple] = set()
    for k in range(period):
        first = segment[k]
        if len(first.args) != len(first.argnums):
            for j in range(len(first.args)):
                if j not in first.argnums:
                    column = list(map(operator.itemgetter(j),
                                      map(_ARGS, segment[k:done * period:period])))
                    done, kind = _constant_column(first, column, done)
                    if kind == "varying":
                        constants[k, j] = column
                    elif kind == "equal":
                        equal.add((k, j))
        if first.kwargs:
            kwargs = first.kwargs
            for r in range(1, done):
                other = segment[r * period + k].kwargs
                if other is not kwargs and not _same_keywords(kwargs, other):
                    done = r
                    break
    if done < 3:
        return None
    forms: list[list] = []
    column = 0
    for k in range(period):
        node_forms = []
        for _ in segment[k].parents:
            if local[column]:
                node_forms.append(("local", int(rel[0, column])))
            elif carry[column]:
                node_forms.append(("carry", int(rel[1, column]) + period))
            elif (parents[:done, column] == parents[0, column]).all():
                node_forms.append(("inv", nodes[parents[0, column]]))
            else:
                node_forms.append(("seq", column))
            column += 1
        forms.append(node_forms)
    constants = {key: values[:done] for key, values in constants.items()}
    return Run(start, period, done, forms, parents[:done], constants, equal)


def _pieces(ans) -> bool:
    """Whether ``ans`` is a list or tuple of arrays (``np.split``'s pieces, their
    cotangents in a backward pass): an iteration may answer one, of one layout per item."""
    return type(ans) in (list, tuple) and all(type(a) in _ARRAYS for a in ans)


_ARRAYS = (ArrayMeta, np.ndarray)


def _layout(ans) -> tuple:
    if type(ans) in _ARRAYS:
        return ans.shape, ans.dtype, ans.strides
    return type(ans), tuple(_layout(a) for a in ans)  # (``_pieces``)


def _constant_column(node, column: list, done: int) -> tuple[int, str | None]:
    """How far a constant argument's values allow the run (``done``), and how they read:
    None (one object, or equal plain numbers, whose texts are one), ``"equal"`` (other
    objects of one value), ``"varying"`` (plain numbers of one type, one per iteration)."""
    first = column[0]
    if all(map(_IS, column, repeat(first))):
        return done, None
    equal = _equality(first)
    if equal is not None:
        done = min(done, _equal_prefix(column, first, equal))
        return done, "equal"
    kind = type(first)
    if kind not in (int, float, bool) or not _plain_number(first):
        return _identical_prefix(column, first), None
    for r, v in enumerate(column):
        if type(v) is not kind or not _plain_number(v):
            return r, None
    text = repr(first)
    if all(repr(v) == text for v in column):  # (0.0 and -0.0 are two constants)
        return done, None
    if _code_by_value(node):
        return _identical_prefix(column, first), None
    return done, "varying"


def _code_by_value(node) -> bool:
    """Whether a call's instruction depends on its constants' values, so that they are
    never one per iteration: where its entry says jit drops or copies a product by a
    neutral constant (``_emit._lower``: ``x * 1`` is x, ``I @ m`` a copy), or writes its
    code from them (``lowered_by_value``: moveaxis's permutation)."""
    entry = rules_of_call(node)
    return entry.neutral is not None or entry.lowered_by_value


def _equality(first):
    """How constants made again in each iteration, equal to ``first``, are told to be one
    value (the record keeps each call's constants as they were read, so equal ones give
    the same program), or None. jit(grad(f))'s backward pass computes from its constant
    seed a vector space, a shape, a small array per iteration."""
    if isinstance(first, VSpace):
        return operator.eq
    if type(first) is tuple and _literal(first):
        return _same_literal
    if type(first) is np.ndarray and first.nbytes <= _SMALL_ARRAY:
        return _same_array
    return None


def _equal_prefix(column: list, first, equal) -> int:
    for r, v in enumerate(column):
        if type(v) is not type(first) or not equal(v, first):
            return r
    return len(column)


_SMALL_ARRAY = 1 << 12  # bytes: compared by value, once per iteration


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bit for bit, in the same layout (-0.0 and 0.0, two nans' payloads differ)."""
    return (a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
            and a.flags.writeable == b.flags.writeable and a.tobytes() == b.tobytes())


def _identical_prefix(column: list, first) -> int:
    for r, v in enumerate(column):
        if v is not first:
            return r
    return len(column)


def _plain_number(v) -> bool:
    """A number whose code is the same as every other of its type's: finite floats, and
    integers that are floats exactly (see ``_emit._float_constant``)."""
    if type(v) is float:
        return v == v and v not in (float("inf"), float("-inf"))
    return type(v) is not int or -_EXACT_INT <= v <= _EXACT_INT


_EXACT_INT = 1 << 53


def _literal(v) -> bool:
    if v is None or type(v) in (bool, int, str):
        return True
    if type(v) is float:
        return _plain_number(v)
    return type(v) is tuple and all(map(_literal, v))


def _same_literal(v, w) -> bool:
    return _literal(v) and repr(v) == repr(w)


def _same_keywords(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k, v in a.items():
        w = b[k]
        if v is not w and not (type(v) is type(w) and _literal(v) and _literal(w)
                               and repr(v) == repr(w)):
            return False
    return True


class Folded(dict):
    """``node -> Instr`` (``_lower``'s map), where a node of a folded loop's later
    iterations gets its instruction when first asked for: the loop's value of that
    iteration (see ``_Fold.instr``)."""

    def __init__(self, nodes: list, seqs: list[int] | None = None):
        super().__init__()
        self.nodes = nodes
        self.seqs = list(map(_SEQ, nodes)) if seqs is None else seqs  # (the nodes' seq)
        self.folds: list[_Fold] = []  # in order
        self.starts: list[int] = []  # their runs' starts

    def place(self, node) -> int:
        return bisect.bisect_left(self.seqs, node.seq)

    def _fold_at(self, p: int):
        f = bisect.bisect_right(self.starts, p) - 1
        if f >= 0:
            run = self.folds[f].run
            if p < run.start + run.period * run.repeats:
                return self.folds[f]
        return None

    def __missing__(self, node):
        p = self.place(node)
        if p >= len(self.nodes) or self.nodes[p] is not node:
            raise KeyError(node)
        return self.column([p])[0]

    def column(self, places: list[int]) -> list:
        """The instructions of the nodes at ``places`` (``self[node]`` of each): a node
        of a folded loop's later iterations gets its own when first asked for (a long
        loop's backward pass reads a column of its forward values: the places of one
        fold follow each other, found once)."""
        nodes, get = self.nodes, dict.get
        out = []
        f = None
        for p in places:
            node = nodes[p]
            ins = get(self, node)
            if ins is None:
                if f is None or not f.later <= p < f.end:
                    # (the folds' later iterations only: the others are lowered)
                    f = self._fold_at(p)
                    if f is None or not f.later <= p < f.end:
                        raise KeyError(node)
                ins = self[node] = f.instr(p)
            out.append(ins)
        return out

    def stride(self, column: np.ndarray) -> Stride | None:
        """Where the nodes at places ``column`` are the values one folded loop keeps for
        one body offset (its carried start included), at list indices ``a + b*i``: that
        ``Stride`` (no instruction made per node); or where they are but for the first or
        last node or both, at steps of 1 or -1 (a loop's backward pass reads its forward
        values reversed, and the last is the first iteration's, straight code): that
        ``Stride`` with the others' instructions as its ``head`` and ``tail``; else None."""
        found = self._stride(column)
        if found is not None or len(column) < 4:
            return found
        n = len(column)
        for h, t in ((0, 1), (1, 0), (1, 1)):
            found = self._stride(column[h:n - t])
            if found is not None and found.step in (1, -1):
                places = column.tolist()
                return found._replace(count=n - h - t, head=tuple(self.column(places[:h])),
                                      tail=tuple(self.column(places[n - t:])))
        return None

    def _stride(self, column: np.ndarray) -> Stride | None:
        f = self._fold_at(int(column[0])) or self._fold_at(int(column[-1]))
        if f is None or len(column) < 2:
            return None
        run, loop = f.run, f.loop
        r, k = np.divmod(column - run.start, run.period)
        if (r < 0).any() or (r >= run.repeats).any() or (k != k[0]).any():
            return None
        target = f.targets[int(k[0])]
        if target[0] == "inv":
            return None
        offset = target[1]
        t = r - (1 if target[0] == "local" else 2)  # the loop's iteration (it starts at 1)
        index = t + (offset in loop.inits)
        if (index < 0).any():
            return None
        for p in column[t < 0].tolist():  # before the loop: only its carried start
            if self[self.nodes[p]] is not loop.inits[offset]:
                return None
        step = int(index[1] - index[0])
        if (index != index[0] + step * np.arange(len(index))).any():
            return None
        return Stride(loop, offset, int(index[0]), step)

    def release(self) -> None:
        """Drop the loops' references to their instructions, and a folded loop's and an
        instruction's to itself (a ``key`` that is only itself, the ``Stride`` operands
        that name their loop): cycles, which would keep the instructions, their nodes and
        every node those read until the cycle collector runs (it then scans them all: the
        scalar chain's first call spent 0.7 ms of 25 there)."""
        for f in self.folds:
            for ins in chain(f.loop.body, f.second, f.made.values()):
                ins.loop = None
            f.loop.key = f.loop.operands = None
        for ins in self.values():
            ins.key = None


class _Fold:
    """A folded run's loop and, per node offset, what its node reads as (``targets[k]``:
    ``("local", o)``: the body's instruction o of its own iteration; ``("carry", o, _)``:
    of the previous one; ``("inv", instr)``: one instruction for all)."""

    def __init__(self, loop: Loop, run: Run, targets: list, second: list, nodes: list,
                 offsets: list[int]):
        self.loop, self.run, self.targets, self.second = loop, run, targets, second
        self.nodes = nodes
        self.offsets = offsets  # body instruction -> the node offset that made it
        self.made: dict[tuple, object] = {}  # (iteration, offset) -> its Instr
        # the places of the nodes of iterations 3 and later (those ``instr`` answers)
        self.later, self.end = run.start + 3 * run.period, run.start + run.period * run.repeats

    def instr(self, p: int):
        run = self.run
        r, k = divmod(p - run.start, run.period)
        target = self.targets[k]
        if target[0] == "inv":
            return target[1]
        t = r - 1 if target[0] == "local" else r - 2  # (the loop starts at iteration 1)
        return self.at(t, target[1])

    def at(self, t: int, o: int):
        if t == 0:
            return self.loop.body[o]
        if t == 1:
            return self.second[o]
        ins = self.made.get((t, o))
        if ins is None:
            run = self.run
            node = self.nodes[run.start + (t + 1) * run.period + self.offsets[o]]
            ins = self.made[t, o] = self.loop.body[o].at(node, t)
        return ins


def fold(run: Run, nodes: list, instrs: list, first: int, second: int, instr_of: Folded,
         constant, escaping: set) -> bool:
    """Make ``run``'s loop from its lowered iterations 1 (``instrs[first:second]``) and 2
    (``instrs[second:]``), which it replaces in ``instrs``; False (nothing changed) where
    they are not one body in the forms the run's nodes read (see the module's docstring).
    ``constant(value)``: a constant operand's slot, as ``_lower`` makes them.
    ``escaping``: the nodes whose memory the caller gets (``_emit._escaping``), which
    lowering never lets share an instruction: a node of a later iteration that escapes
    where iteration 2's does not could share one (two outputs one array, an output the
    caller's input), so such a run is not folded."""
    period, start = run.period, run.start
    one, two = instrs[first:second], instrs[second:]
    if not one or len(one) != len(two):
        return False
    for a, b in zip(one, two):
        if a.kind != "call" or a.key != b.key or a.key is a:
            return False
    at_one = {id(q): o for o, q in enumerate(one)}
    at_two = {id(q): o for o, q in enumerate(two)}
    targets = []
    base = start + period
    for k in range(period):
        n1, n2 = nodes[base + k], nodes[base + period + k]
        q1, q2 = instr_of[n1], instr_of[n2]
        o = at_one.get(id(q1))
        if o is not None:
            if at_two.get(id(q2)) != o:
                return False
            target = ("local", o)
        elif id(q2) in at_two:
            return False
        elif q1 is q2:
            target = ("inv", q1)
        elif id(q2) in at_one:
            target = ("carry", at_one[id(q2)], q1)
        else:
            return False
        if q1.node is not n1 and not run.plain[k] and not (
                target[0] == "carry" and _repeats_previous(
                    run, nodes, k, instr_of.place(one[target[1]].node) - base, q1.node)):
            return False  # shared by a coincidence of the first iterations, maybe
        if q2.node is not n2 and escaping and any(
                nodes[start + r * period + k] in escaping for r in range(3, run.repeats)):
            return False  # (a later iteration's would share it too: see above)
        targets.append(target)
    offsets = [instr_of.place(q.node) - base for q in one]
    operands: list[list] = []
    inits: dict[int, object] = {}
    for o, q in enumerate(one):
        k = offsets[o]
        node_forms = iter(run.forms[k])
        forms = []
        for j, slot in enumerate(q.slots):
            later = two[o].slots[j]
            if type(slot) is tuple:
                values = run.constants.get((k, j))
                if values is None:
                    form = ("const", slot)
                    ok = type(later) is tuple and (later[1] == slot[1] or (k, j) in run.equal)
                else:
                    items = [constant(v) for v in values[1:]]
                    form = ("cseq", items)
                    ok = items[0][1] == slot[1] and items[1][1] == later[1]
            else:
                form = _operand(next(node_forms), targets, run, nodes, instr_of)
                if form is None:
                    return False
                kind = form[0]
                if kind == "local":
                    ok = slot is one[form[1]] and later is two[form[1]]
                elif kind == "carry":
                    ok = slot is form[2] and later is one[form[1]]
                    if inits.setdefault(form[1], form[2]) is not form[2]:
                        return False  # two operands carry one value from different starts
                elif kind == "inv":
                    ok = slot is form[1] and later is form[1]
                else:  # (the first two of the column)
                    column = run.positions[1:3, form[2]].tolist()
                    ok = slot is instr_of[nodes[column[0]]] and later is instr_of[nodes[column[1]]]
                    form = form[:2]
            if not ok:
                return False
            forms.append(form)
        operands.append(forms)
    loop = Loop(one, run.repeats - 1, operands, inits)
    loop.key = loop  # (never part of a run ``_roll`` finds)
    for o, q in enumerate(one):
        q.loop, q.offset, q.iteration, q.pos = loop, o, 0, first
    for o, q in enumerate(two):
        q.loop, q.offset, q.iteration, q.pos = loop, o, 1, first
    del instrs[first:]
    instrs.append(loop)
    instr_of.folds.append(_Fold(loop, run, targets, two, nodes, offsets))
    instr_of.starts.append(start)
    return True


def _repeats_previous(run: Run, nodes: list, k: int, k2: int, shared) -> bool:
    """Whether offset ``k``'s node makes, in every iteration, the call of offset ``k2``'s
    in the iteration before (the same function, parents, constants and keywords), so that
    it shares that instruction in every iteration, not by a coincidence of the first ones
    (lstm's ``sequence[t]`` is the previous step's ``sequence[t + 1]``)."""
    start, period = run.start, run.period
    if shared is not nodes[start + k2]:
        return False
    for r in range(1, run.repeats):
        a, b = nodes[start + r * period + k], nodes[start + (r - 1) * period + k2]
        if a.fun is not b.fun or a.argnums != b.argnums or len(a.args) != len(b.args) \
                or len(a.parents) != len(b.parents) \
                or not all(map(_IS, a.parents, b.parents)) \
                or not _same_keywords(a.kwargs or {}, b.kwargs or {}):
            return False
        for j, (v, w) in enumerate(zip(a.args, b.args)):
            if j not in a.argnums and v is not w and not (
                    type(v) is type(w) and _literal(v) and repr(v) == repr(w)):
                return False
    return True


def _operand(node_form: tuple, targets: list, run: Run, nodes: list, instr_of: Folded):
    """The loop operand form (``_roll``'s) of a node's argument, or None."""
    kind = node_form[0]
    if kind == "inv":
        return ("inv", instr_of[node_form[1]])
    if kind == "seq":  # (with its column, for ``fold``'s check)
        column = run.positions[1:, node_form[1]]
        items = instr_of.stride(column)
        if items is None:
            items = instr_of.column(column.tolist())
        return ("seq", items, node_form[1])
    target = targets[node_form[1]]
    if target[0] == "inv":
        return target
    if kind == "local":
        return target
    if target[0] == "carry":
        return None  # (the value of two iterations back)
    return ("carry", target[1], instr_of[nodes[run.start + node_form[1]]])
