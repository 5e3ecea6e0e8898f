"""A long record that does not repeat, run as a table instead of compiled source.

Python compiles some 10-20 µs per line of source: a trace of 30,000 calls whose backward
pass makes 250,000 calls, none of them a loop ``_roll`` could find, would cost seconds to
compile, ten times its eager evaluation. ``interpret`` makes instead a table, one row per
needed call (its raw function, its constant arguments, where its traced ones are, the
values it is the last reader of), and a program that walks it: it calls the raw functions
the trace called, on the same values, so it answers the same bits; it checks the same
guards (``_emit.guard_holds``), frees each value after its last use, answers ``MISS``
where a guard fails and ``RAISED`` where a call raises. Each row costs some 0.5 µs more
than a compiled line, against the 10 µs that compiling that line would have cost once.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ._program import MISS, RAISED, AtFirstRun, Program, copied_together, guard_holds
from ._staging import ArrayMeta, Guard, StagingNode, rules_of_call

_AS_NUMPY = {float: np.float64, complex: np.complex128}
_STAGED, _COPIED, _CONSTANT = "staged", "copied", "constant"  # kinds of output


def interpret(n_inputs: int, nodes: list[StagingNode], out_items: list, guards: list[Guard],
              name: str) -> Program:
    """A ``Program`` (see ``_emit.emit``) that walks ``nodes`` (the needed nodes of a
    record, see ``_program.needed``): the table is the nodes themselves, each numbered by
    its ``place`` among them, with a few lists beside them (the record's size again would
    double the first call's memory). The table is made when the program first runs (the
    call that traces answers from its trace: a signature called once never pays for it);
    the array constants among the outputs are copied now, as the call read them."""
    # (the array constants are copied now, and on each call once for all their places,
    # sharing memory as they do, as _emit does: copied_together)
    arrays = list({id(o): o for o in out_items if isinstance(o, np.ndarray)}.values())
    table = AtFirstRun(functools.partial(_table, nodes, out_items, guards, arrays,
                                         copied_together(tuple(arrays))))
    n_rows = sum(node.fun is not None for node in nodes)
    return Program(f"# {name}: {n_rows} calls, run as a table (see chainrule.jit._interpret)\n",
                   table, 1, n_rows)


def _table(nodes: list, out_items: list, guards: list, arrays: list,
           constants: tuple) -> _Table:
    """The table ``interpret``'s program walks, made at its first run."""
    for k, node in enumerate(nodes):
        node.place = k
    guards_at: dict[int, list] = {}
    for g in guards:
        guards_at.setdefault(g.node.place, []).append(g)
    out_nodes = [o for o in out_items if isinstance(o, StagingNode)]
    kept = {o.place for o in out_nodes}
    last: dict[int, int] = {}
    inputs = []
    for k, node in enumerate(nodes):
        if node.fun is None:
            inputs.append((node.index, k, _AS_NUMPY.get(type(node.ans)), guards_at.get(k)))
            kept.add(k)
        for p in node.parents:
            last[p.place] = k
    frees: list = [()] * len(nodes)
    for k, at in last.items():
        if k not in kept and type(nodes[k].ans) is ArrayMeta:
            frees[at] += (k,)
    rows = [node for node in nodes if node.fun is not None]
    calls = [_direct(node) for node in rows]
    place = {id(a): k for k, a in enumerate(arrays)}
    outs = [(_STAGED, o.place) if isinstance(o, StagingNode) else
            (_COPIED, place[id(o)]) if isinstance(o, np.ndarray) else (_CONSTANT, o)
            for o in out_items]
    return _Table(len(nodes), inputs, rows, calls, frees, guards_at, outs, constants)


def _direct(node: StagingNode) -> Any:
    """The function a row calls: the C function the raw function ends in for these
    argument types, where it is one (as ``_direct.direct_call`` writes in source): a
    chainrule ufunc wrapper on an array is the ufunc, a function whose entry names its
    ``reduction`` (``numpy.sum``/``prod``/``max``/``min``) of one array is the ufunc's
    reduce over all axes."""
    raw = node.fun.fun
    if not any(type(p.ans) is ArrayMeta for p in node.parents):
        return raw
    entry = rules_of_call(node)
    ufunc = getattr(raw, "ufunc", None)
    if ufunc is not None:
        if entry.lowering is None or node.kwargs:
            return ufunc  # (most rows: no operands to build)
        # where jit's source writes other code on an array (power by a number: the
        # array's ``**``), the raw function takes that path too, not the ufunc
        operands = list(node.args)
        for i, p in zip(node.argnums, node.parents):
            operands[i] = p.ans
        texts = [f"x{i}" for i in range(len(operands))]
        lowered = type(operands[0]) is ArrayMeta and \
            entry.lowering(operands, texts, {}) is not None
        return raw if lowered else ufunc
    if entry.reduction is not None and len(node.args) == 1 and not node.kwargs:
        return _reduce_all(entry.reduction)
    return raw


@functools.cache
def _reduce_all(ufunc: np.ufunc) -> Any:
    """``ufunc.reduce`` over all axes, one for every table."""
    return functools.partial(ufunc.reduce, axis=None)


class _Table:
    """The program's ``call``: runs the calls of ``rows`` (``calls[k]``: the function row
    k calls) on the inputs."""

    __slots__ = ("size", "inputs", "rows", "calls", "frees", "guards", "outs", "constants")

    def __init__(self, size: int, inputs: list, rows: list, calls: list, frees: list,
                 guards: dict, outs: list, constants: tuple):
        self.size, self.inputs, self.rows, self.calls = size, inputs, rows, calls
        self.frees, self.guards, self.outs = frees, guards, outs
        self.constants = constants  # (the array constants among the outputs)

    def __call__(self, *leaves) -> Any:
        vals: list = [None] * self.size
        frees, guards = self.frees, self.guards
        try:
            for index, k, as_numpy, checks in self.inputs:
                x = leaves[index]
                vals[k] = x = x if as_numpy is None else as_numpy(x)
                if checks is not None and not all(guard_holds(g, x) for g in checks):
                    return MISS
            for node, fun in zip(self.rows, self.calls):  # (common calls spelled out)
                args, parents = node.args, node.parents
                if node.kwargs:
                    args = args.copy() if args is not node.argnums else [None] * len(args)
                    for i, p in zip(node.argnums, parents):
                        args[i] = vals[p.place]
                    value = fun(*args, **node.kwargs)
                elif args is not node.argnums:
                    args = args.copy()
                    for i, p in zip(node.argnums, parents):
                        args[i] = vals[p.place]
                    value = fun(*args)
                elif len(parents) == 1:
                    value = fun(vals[parents[0].place])
                elif len(parents) == 2:
                    value = fun(vals[parents[0].place], vals[parents[1].place])
                else:
                    value = fun(*[vals[p.place] for p in parents])
                k = node.place
                vals[k] = value
                if k in guards and not all(guard_holds(g, value) for g in guards[k]):
                    return MISS
                for p in frees[k]:
                    vals[p] = None
            copies = copied_together(self.constants) if self.constants else ()
            return tuple(vals[v] if kind is _STAGED else v if kind is _CONSTANT else
                         copies[v] for kind, v in self.outs)
        except Exception:  # eager evaluation raises it, or the function catches it
            return RAISED
