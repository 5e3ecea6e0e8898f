"""Rendering: the lines of a program from its units (straight instructions and rolled
loops, see ``_roll``).

``Plan`` first names every value and finds each operand's text: a straight value is its
variable; a value a loop made is the loop's variable after the loop (its last iteration)
or an item of a list the loop keeps; in a loop, an operand reads a variable of the same
iteration, the previous iteration's (copied first where the iteration remakes it before
reading it), a value from before the loop, or an item per iteration (``s0[99 - i]``,
``c3[i]``). Then the lines: the exact program's with ``del`` after each array's last use
and ``out=`` where an elementwise ufunc may write into an operand that dies, and the float
program's (no memory to manage).
"""

from __future__ import annotations

from ._instr import Instr
from ._roll import Loop, Stride

# instructions written as one expression of a float program at most (a chain of sums
# nests its parentheses: Python's parser refuses 200 levels)
_MOST_INLINED = 32


class Plan:
    """The operand texts of every unit (straight instruction or loop), names assigned in
    order. Planning first lets a later reader ask an earlier loop to keep a value in a
    list; the lines come after (``exact_lines``, ``fast_lines``)."""

    def __init__(self, units: list, const):
        self.units = units
        self.const = const
        # id(instruction) of the values a float program checks are finite (see
        # ``_emit._watched``): after each, ``_watch += v * 0.0`` (a nan where v is not)
        self.watched: set[int] = set()
        # id(instruction) of a float program's calls made after its floats are checked
        # (see ``_emit._float_tails``)
        self.tails: set[int] = set()
        self.counts = {"v": 0, "s": 0, "t": 0, "p": 0}
        self.n_calls = 0  # primitive calls one run of the program makes
        self.texts: dict[int, list] = {}  # id(instruction) -> (exact, float, read) per slot
        self.before: dict[int, list] = {}  # id(loop) -> [(name, exact, fast, reads)]
        self.copies: dict[int, list] = {}  # id(loop) -> [(copy name, offset)]
        self.store_inits: dict[tuple, tuple] = {}  # (id(loop), offset) -> (text, name read)
        for unit in units:
            if type(unit) is Loop:
                self._plan_loop(unit)
            else:
                if unit.kind == "call":
                    unit.var = self._name("v")
                    self.n_calls += 1
                self.texts[id(unit)] = [self._operand(s) for s in unit.slots]

    def _name(self, prefix: str) -> str:
        n = self.counts[prefix]
        self.counts[prefix] = n + 1
        return f"{prefix}{n}"

    def text(self, q: Instr) -> tuple[str, str]:
        """A reference to ``q`` from after it (outside its loop): (text, the name read)."""
        loop = q.loop
        if loop is None:
            return q.var, q.var
        if q.iteration == loop.repeats - 1:  # the loop's variable holds it after the loop
            loop.exported.add(q.offset)
            name = loop.body[q.offset].var
            return name, name
        store = self._stored(loop, q.offset)
        return f"{store}[{self._index(q)}]", store

    def _stored(self, loop: Loop, offset: int) -> str:
        """The list in which ``loop`` keeps the values of ``offset``; where the offset is
        carried, its value before the first iteration comes first (item 0), so that a
        backward pass reading the values each iteration started from reads one list."""
        if offset not in loop.stored:
            loop.stored[offset] = self._name("s")
            if offset in loop.inits:
                self.store_inits[id(loop), offset] = self.text(loop.inits[offset])
        return loop.stored[offset]

    @staticmethod
    def _index(q: Instr) -> int:
        return q.iteration + (q.offset in q.loop.inits)

    def _operand(self, slot) -> tuple[str, str | None, str | None]:
        """(exact text, float text, the name read) of a straight instruction's operand."""
        if type(slot) is tuple:
            return slot[1], slot[2], None
        text, read = self.text(slot)
        return text, text, read

    def _plan_loop(self, loop: Loop) -> None:
        before: list = []
        copies: list = []
        carried_names: dict[int, str] = {}
        inited: set[int] = set()
        for ins in loop.body:
            if ins.kind == "call":
                ins.var = self._name("v")
        for k, ins in enumerate(loop.body):
            texts = []
            for form in loop.operands[k]:
                kind = form[0]
                if kind == "local":
                    name = loop.body[form[1]].var
                    texts.append((name, name, name))
                elif kind == "carry":
                    kk, init = form[1], form[2]
                    name = loop.body[kk].var
                    if kk < k:  # overwritten by now in this iteration: read a copy
                        if kk not in carried_names:
                            carried_names[kk] = self._name("p")
                            copies.append((carried_names[kk], kk))
                            self._before(before, carried_names[kk], init)
                        name = carried_names[kk]
                    elif kk not in inited:
                        inited.add(kk)
                        self._before(before, name, init)
                    texts.append((name, name, name))
                elif kind == "inv":
                    text, read = self.text(form[1])
                    texts.append((text, text, read))
                elif kind == "seq":
                    texts.append(self._sequence(form[1], before))
                elif kind == "const":
                    texts.append((form[1][1], form[1][2], None))
                else:  # cseq: a tuple of the constants, indexed by the iteration
                    values = [c[0] for c in form[1]]
                    exact = f"{self.const(tuple(values))}[i]"
                    fast = None
                    if all(c[2] is not None for c in form[1]):
                        fast = f"{self.const(tuple(float(v) for v in values))}[i]"
                    texts.append((exact, fast, None))
            self.texts[id(ins)] = texts
        self.before[id(loop)] = before
        self.copies[id(loop)] = copies
        self.n_calls += loop.repeats * sum(ins.kind == "call" for ins in loop.body)

    def _before(self, before: list, name: str, init: Instr) -> None:
        text, read = self.text(init)
        before.append((name, text, text, (read,)))

    def _sequence(self, items: list, before: list) -> tuple[str, str, str]:
        """A per-iteration operand made before the loop: read from the list an earlier
        loop keeps (when they are one offset of it, or the value it started from, at
        items ``a + b*i``), else from a tuple built before the loop, of slices of such
        lists where it can (``(v4, *s0[26::-1], v1)``: a line, not one text per item)."""
        if type(items) is Stride and items.count:  # (straight items around a stride)
            return self._around_stride(items, before)
        index = items[:4] if type(items) is Stride else _affine(places := _places(items))
        if index is not None:
            loop, offset, a, step = index
            store = self._stored(loop, offset)
            term = "i" if step == 1 else f"{step} * i"
            if a:
                term = f"{a} - i" if step == -1 else f"{a} + {term}"
            text = f"{store}[{term}]"
            return text, text, store
        name = self._name("t")
        parts, reads = [], []
        r = 0
        while r < len(items):
            end = _run_end(places, r)
            if end - r >= 3:  # items r..end-1: a slice of one list
                loop, offset, first = places[r]
                self._slice(parts, reads, loop, offset, first, places[end - 1][2])
                r = end
            else:
                self._item(parts, reads, items[r])
                r += 1
        return self._tuple(name, parts, reads, before)

    def _around_stride(self, items: Stride, before: list) -> tuple[str, str, str]:
        """``_sequence``'s tuple for a ``Stride`` with a ``head`` or ``tail``: the same
        text as for its items one by one (``(*s0[26::-1], v1,)``), without them."""
        name = self._name("t")
        parts, reads = [], []
        for q in items.head:
            self._item(parts, reads, q)
        last = items.start + items.step * (items.count - 1)
        self._slice(parts, reads, items.loop, items.offset, items.start, last)
        for q in items.tail:
            self._item(parts, reads, q)
        return self._tuple(name, parts, reads, before)

    def _item(self, parts: list, reads: list, item: Instr) -> None:
        text, read = self.text(item)
        parts.append(text)
        reads.append(read)

    def _slice(self, parts: list, reads: list, loop: Loop, offset: int, first: int,
               last: int) -> None:
        """The items ``first`` to ``last`` (steps of 1 or -1) of a loop's list, unpacked."""
        store = self._stored(loop, offset)
        step = 1 if last > first else -1
        stop = "" if step == -1 and last == 0 else str(last + step)
        parts.append(f"*{store}[{first}:{stop}]" if step == 1
                     else f"*{store}[{first}:{stop}:-1]")
        reads.append(store)

    @staticmethod
    def _tuple(name: str, parts: list, reads: list, before: list) -> tuple[str, str, str]:
        tuple_text = f"({', '.join(parts)},)"
        before.append((name, tuple_text, tuple_text, tuple(reads)))
        return f"{name}[i]", f"{name}[i]", name

    # ---------------------------------------------------------------- lines
    def line(self, ins: Instr) -> str:
        """A straight instruction's line, as it is (no ``del``, no ``out=``)."""
        return self._line(ins, self.texts[id(ins)], False)

    def _line(self, ins: Instr, texts: list, fast: bool, comment: str | None = None
              ) -> str | None:
        if comment is None:
            comment = ins.comment
        if fast:
            if ins.kind == "convert":
                return None
            code = ins.fast.format(*[t[1] for t in texts])
        else:
            code = ins.code.format(*[t[0] for t in texts])
        if ins.kind == "guard":
            return f"{code}  # {comment}"
        return f"{ins.var} = {code}  # {comment}"

    def _watch_line(self, ins: Instr) -> str:
        return f"_watch += {ins.var} * 0.0  # NumPy warns where {ins.var} is not finite"

    def fast_lines(self, keep: set[str]) -> tuple[list[str], list[str]]:
        """The float program's lines, and those of its tail calls (``tails``). A value of
        straight code read once, by straight code, is written into its reader's line
        rather than named (``v9 = v2 + (v4 * v7)``): a float kept in a variable costs a
        store and a load, as much as the operation itself (``keep``: the names the
        program returns, always named)."""
        loop_lines = {id(u): self._loop_lines(u, True) for u in self.units if type(u) is Loop}
        reads: dict[str, int] = {}
        fixed = set(keep)  # values read by a loop, a watch or a tail call: named
        for unit in self.units:
            if type(unit) is Loop:
                fixed.update(loop_lines[id(unit)][1])
                continue
            names = [t[2] for t in self.texts[id(unit)] if t[2] is not None]
            if id(unit) in self.tails:
                fixed.update(names)
            if id(unit) in self.watched:
                fixed.add(unit.var)
            for name in names:
                reads[name] = reads.get(name, 0) + 1
        lines: list[str] = []
        tail_lines: list[str] = []
        # name -> (its expression, or in parentheses where it is not one call; its size;
        # the comments of its calls)
        pending: dict[str, tuple[str, int, list[str]]] = {}
        calls: dict[str, bool] = {}  # code -> whether it is one call (``_call_text``)
        for unit in self.units:
            if type(unit) is Loop:
                lines += loop_lines[id(unit)][0]
                continue
            if unit.kind == "convert":
                continue
            texts = self.texts[id(unit)]
            size = 1
            comments = []
            if pending:
                texts = list(texts)
                for j, t in enumerate(texts):
                    inner = pending.pop(t[2], None) if t[1] == t[2] else None
                    if inner is not None:
                        texts[j] = (t[0], inner[0], t[2])
                        size += inner[1]
                        comments += inner[2]
            comments.append(unit.comment)
            if id(unit) in self.tails:
                tail_lines.append(self._line(unit, texts, True))
                continue
            var = unit.var
            if unit.kind == "call" and reads.get(var) == 1 and var not in fixed \
                    and size <= _MOST_INLINED:
                code = unit.fast
                call = calls.get(code)
                if call is None:
                    call = calls[code] = _call_text(code)
                text = code.format(*[t[1] for t in texts])
                pending[var] = (text if call else f"({text})", size, comments)
                continue
            lines.append(self._line(unit, texts, True, _joined(comments)))
            if id(unit) in self.watched:
                lines.append(self._watch_line(unit))
        assert not pending, pending  # (each was read once, by a later line)
        return lines, tail_lines

    def _loop_lines(self, loop: Loop, fast: bool, outputs: set | None = None,
                    inplace: frozenset = frozenset()) -> tuple[list[str], list[str], dict]:
        """The loop's lines, the names it reads from before it (once per read), and the
        accumulators it could update in place (offset -> the name its first value comes
        from; ``inplace``: those the caller found free to be written into). ``outputs``:
        None for the float program, else the exact program's (which gets dels and
        ``out=``)."""
        lines: list[str] = []
        outside: list[str] = []
        for offset, store in sorted(loop.stored.items(), key=lambda kv: kv[1]):
            var = loop.body[offset].var
            init = self.store_inits.get((id(loop), offset))
            if init is None:
                lines.append(f"{store} = [None] * {loop.repeats}  # {var} of each iteration")
            else:
                lines.append(f"{store} = [None] * {loop.repeats + 1}  # {var} before the "
                             f"loop and after each iteration")
                lines.append(f"{store}[0] = {init[0]}")
                outside.append(init[1])
        starts = {}  # carried variable -> the name its first value comes from
        for name, exact, fast_text, reads in self.before[id(loop)]:
            outside += reads
            lines.append(f"{name} = {fast_text if fast else exact}")
            if exact == reads[0]:
                starts[name] = exact
        body: list[str] = []
        reads: list[tuple] = []
        reusable: dict[int, tuple[list[str], bool]] = {}
        viewed: set[str] = set()
        local = {ins.var for ins in loop.body if ins.var}
        copied = {offset for _, offset in self.copies[id(loop)]}
        accumulators: dict[int, str] = {}
        for ins in loop.body:
            texts = self.texts[id(ins)]
            line = self._line(ins, texts, fast)
            if line is None:
                continue
            names = tuple(t[2] for t in texts if t[2] is not None)
            outside += [n for n in names if n not in local]
            if ins.reuse and outputs is not None:
                k = ins.offset
                # ``a = a + b`` carried from the previous iteration: its old value dies here
                if any(loop.operands[k][j][:2] == ("carry", k) for j in ins.reuse) and \
                        k not in loop.stored and k not in copied and ins.var in starts and \
                        loop.inits[k].fresh:
                    accumulators[k] = starts[ins.var]
                if k in inplace:
                    line = _with_out(line, ins.var, ins.fresh == POSITIONAL_OUT)
                else:
                    reusable[len(body)] = _reusable(texts, ins)
            if ins.view:
                viewed.update(names)
            body.append(line)
            reads.append(names)
            if fast and id(ins) in self.watched:
                body.append(self._watch_line(ins))
                reads.append(())
            if ins.offset in loop.stored:
                shift = " + 1" if ins.offset in loop.inits else ""
                body.append(f"{loop.stored[ins.offset]}[i{shift}] = {ins.var}")
                reads.append((ins.var,))
        for copy, offset in self.copies[id(loop)]:
            body.append(f"{copy} = {loop.body[offset].var}")
            reads.append((loop.body[offset].var,))
        if outputs is not None:  # the exact program: dels and out= inside the body
            kept = {loop.body[k].var for k in loop.exported} | set(loop.stored.values())
            kept |= {loop.body[k].var for k in loop.stored}
            kept |= {name for name, *_ in self.before[id(loop)]}
            kept |= {copy for copy, _ in self.copies[id(loop)]}
            dying = {ins.var for ins in loop.body if ins.array} - kept - outputs
            body = _free_after_last_use(body, reads, dying, {
                i: ([n for n in names if n not in viewed], positional)
            for i, (names, positional) in reusable.items()
            })
            # (a loop variable viewed in the body too: its last iteration's view outlives
            # the loop with it, so straight code after the loop may not write into it)
            self.viewed_outside |= viewed
            accumulators = {k: name for k, name in accumulators.items()
                            if loop.body[k].var not in viewed}
        lines.append(f"for i in range({loop.repeats}):  # {len(loop.body)} operations, "
                     f"{loop.repeats} times (a loop of the traced code, rolled)")
        lines += ["    " + line for line in body]
        return lines, outside, accumulators

    def exact_lines(self, out_names: set[str], inputs: set[str]) -> list[str]:
        """The exact program's lines, with ``del`` after each array's last use (the
        ``inputs`` that are arrays too) and ``out=`` where an elementwise ufunc may write
        into an operand that dies (in a loop, an accumulator whose first value is an
        array nothing else reads)."""
        entries: list[str] = []
        reads: list[tuple] = []
        reusable: dict[int, tuple[list[str], bool]] = {}
        viewing: set[int] = set()
        arrays: set[str] = set(inputs)
        self.viewed_outside: set[str] = set()
        loops: dict[int, tuple] = {}  # entry -> (loop, its reads, its accumulators)
        for unit in self.units:
            if type(unit) is Loop:
                text, outside, accumulators = self._loop_lines(unit, False, out_names)
                loops[len(entries)] = (unit, outside, accumulators)
                entries.append("\n".join(text))
                reads.append(tuple(outside))
                arrays.update(ins.var for ins in unit.body if ins.array)
                arrays.update(unit.stored.values())
                # a variable whose value a list also holds is not rewritten in place
                self.viewed_outside.update(unit.body[k].var for k in unit.stored)
            else:
                texts = self.texts[id(unit)]
                names = tuple(t[2] for t in texts if t[2] is not None)
                if unit.kind == "convert":
                    names = (unit.var,)
                if unit.reuse:
                    reusable[len(entries)] = _reusable(texts, unit)
                if unit.view:
                    viewing.add(len(entries))
                if unit.array:
                    arrays.add(unit.var)
                entries.append(self._line(unit, texts, False))
                reads.append(names)
        arrays -= out_names
        if not arrays:
            return "\n".join(entries).split("\n") if entries else []
        viewed = {name for i in viewing for name in reads[i]} | self.viewed_outside
        last: dict[str, int] = {}
        for i, names in enumerate(reads):
            for name in names:
                last[name] = i
        for i, (loop, outside, accumulators) in loops.items():
            # an accumulator is updated in place when the array it starts from dies at
            # the loop, read by nothing else in it
            free = frozenset(k for k, start in accumulators.items() if start in arrays
                             and start not in viewed and last.get(start) == i
                             and outside.count(start) == 1)
            if free:
                entries[i] = "\n".join(self._loop_lines(loop, False, out_names, free)[0])
        lines = _free_after_last_use(entries, reads, arrays, {
            i: ([n for n in names if n not in viewed], positional)
            for i, (names, positional) in reusable.items()
        })
        return "\n".join(lines).split("\n")


def _joined(comments: list[str]) -> str:
    """One comment for a line's calls: their labels, each once, per source line
    (``log, multiply, add @ f.py:3; cos @ the derivative of f.py:3``)."""
    if len(comments) == 1:
        return comments[0]
    groups: dict[str, list[str]] = {}
    for comment in dict.fromkeys(comments):
        label, _, source = comment.partition(" @ ")
        labels = groups.setdefault(source, [])
        if label not in labels:
            labels.append(label)
    return "; ".join(", ".join(labels) + (f" @ {source}" if source else "")
                     for source, labels in groups.items())


def _call_text(text: str) -> bool:
    """Whether ``text`` is one call, ``math.sin({0})`` (an operand needing no parentheses;
    a code, whose operands ``{0}`` are variables or themselves in parentheses)."""
    head, paren, _ = text.partition("(")
    if not paren or not text.endswith(")") or not head.replace(".", "").isidentifier():
        return False
    depth = 0
    for k in range(len(head), len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return k == len(text) - 1
    return False


# an instruction's ``fresh`` where it is a plain call of a ufunc, ``f3({0}, {1})``: its
# ``out`` is then written as the argument after the operands (NumPy parses a keyword
# ``out=`` in some 60 ns more, a tenth of a call on a 14-entry vector: lstm's loops)
POSITIONAL_OUT = "positional out"


def _with_out(line: str, name: str, positional: bool = False) -> str:
    """A call's line with ``out=name`` (the call ends its code, before the comment)."""
    code, comment = line.split("  # ", 1)
    return f"{code[:-1]}, {'' if positional else 'out='}{name})  # {comment}"


def _reusable(texts: list, ins: Instr) -> tuple[list[str], bool]:
    """The operands whose memory ``ins`` may take, read as a plain variable (not
    ``s3[i]``, an item of a list a loop keeps: its memory is not the variable's to
    reuse), and whether it takes ``out`` by position."""
    return [texts[j][0] for j in ins.reuse if texts[j][0] == texts[j][2]], \
        ins.fresh == POSITIONAL_OUT



def _free_after_last_use(
    lines: list[str], reads: list, freed: set[str],
    reusable: dict[int, tuple[list[str], bool]]
) -> list[str]:
    """``del`` each of ``freed`` after its last use (``reads[i]``: the variables line i
    reads), as the eager backward pass releases intermediates: NumPy then reuses the
    memory it just freed instead of touching new pages. An elementwise ufunc whose operand
    dies on its line (``reusable``: new arrays of its shape and dtype, of which no view was
    taken) writes its answer into it, ``out=``, as a hand-written ``a += b`` does: the
    same values, one allocation fewer."""
    last: dict[str, int] = {}
    for i, names in enumerate(reads):
        for name in names:
            last[name] = i
    dead: dict[int, list[str]] = {}
    for name, i in last.items():
        if name in freed:
            dead.setdefault(i, []).append(name)
    out = []
    for i, line in enumerate(lines):
        names, positional = reusable.get(i, ((), False))
        into = [n for n in names if n in freed and last[n] == i]
        if into:
            line = _with_out(line, into[0], positional)
        out.append(line)
        if i in dead:
            out.append(f"del {', '.join(sorted(dead[i]))}")
    return out


def _places(items: list) -> list:
    """Per item, ``(loop, offset, index)``: where the list ``loop`` keeps for ``offset``
    holds it (see ``Plan._stored``: a carried offset's list starts with the value the loop
    started from), or None for a value of straight code."""
    places = [
        None if q.loop is None else (q.loop, q.offset, q.iteration + (q.offset in q.loop.inits))
        for q in items
    ]
    for r, q in enumerate(items):
        if places[r] is None:  # the value a neighbour's loop started from?
            for near in (r - 1, r + 1):
                if 0 <= near < len(items) and places[near] is not None:
                    loop, offset, _ = places[near]
                    if loop.inits.get(offset) is q:
                        places[r] = (loop, offset, 0)
                        break
    return places


def _affine(places: list) -> tuple | None:
    """``(loop, offset, a, b)`` where item r is kept by one loop for one offset at list
    index ``a + b*r``, else None."""
    if places[0] is None or _run_end(places, 0) != len(places):
        return None
    loop, offset, a = places[0]
    return loop, offset, a, places[1][2] - a


def _run_end(places: list, r: int) -> int:
    """The end of the run from item r of items one list keeps at indices in steps of +1 or
    -1 (r + 1 where item r starts none)."""
    if places[r] is None or r + 1 >= len(places) or places[r + 1] is None:
        return r + 1
    loop, offset, first = places[r]
    step = places[r + 1][2] - first
    if step not in (1, -1):
        return r + 1
    end = r + 1
    while end < len(places) and places[end] is not None and places[end][:2] == (loop, offset) \
            and places[end][2] == first + step * (end - r):
        end += 1
    return end
