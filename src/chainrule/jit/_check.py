"""``jit(f, check=True)``: every call run both ways, and the first difference named.

A checked call runs the jitted function and ``f`` itself on the same arguments (NumPy's
and Python's global random states restored in between, so both draw alike) and compares
what they give (``differences``: the pytree and its dict order, the types, dtypes, shapes
and bits of every leaf, which outputs share memory with each other and with the inputs,
the exception's class and message, the warnings). Where they differ it traces ``f`` once
more with nodes that keep their values and the user's line (``CheckedNode``), runs the
program of that trace as straight code, and names the first value that differs: its line
of the program, the primitive, and the line of ``f`` (or the forward line whose
derivative it computes) that made it.
"""

from __future__ import annotations

import random
import struct
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..numpy.placement import laid_out_like
from ._notices import JitWarning
from ._staging import SourcedNode


class JitCheckError(AssertionError):
    """A jitted call differs from eager evaluation (found by ``jit(f, check=True)``)."""


class Outcome:
    """What a call gives: its value or its exception, and its warnings (class and message,
    each once, in order; jit's own notices left out)."""

    __slots__ = ("value", "error", "warnings", "caught")

    def __init__(self, call: Callable[[], Any]):
        self.value = self.error = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                self.value = call()
            except Exception as error:  # noqa: BLE001 (the outcome compared)
                self.error = error
        self.caught = [w for w in caught if not issubclass(w.category, JitWarning)]
        self.warnings = list(dict.fromkeys((w.category, str(w.message)) for w in self.caught))

    def give(self) -> Any:
        """Show the warnings, then answer the value or raise the exception."""
        for message in self.caught:
            warnings._showwarnmsg(message)
        if self.error is not None:
            raise self.error
        return self.value


def differences(want: Outcome, got: Outcome, got_inputs: list,
                want_inputs: list | None = None) -> list[str]:
    """How ``got`` differs from ``want`` (empty: not at all). ``got_inputs``: the leaves of
    the arguments ``got`` was computed from, ``want_inputs`` those of ``want`` (the same
    by default; else copies of them, with the same layout): the outputs must share memory
    with them alike, and they must hold the same bits afterwards (a function may write
    into its arguments)."""
    want_inputs = got_inputs if want_inputs is None else want_inputs
    found: list[str] = []
    if want.error is not None or got.error is not None:
        if type(want.error) is not type(got.error) or str(want.error) != str(got.error):
            found.append(f"eager {_said(want)}; jitted {_said(got)}")
    else:
        _compare(want.value, got.value, "output", found)
        if not found:
            _compare_sharing(want.value, got.value, want_inputs, got_inputs, found)
    for k, (a, b) in enumerate(zip(want_inputs, got_inputs)):
        if a is not b and isinstance(a, np.ndarray) and not same_bits(a, b):
            found.append(f"input leaf {k} afterwards: {_first_difference(a, b)}")
    if want.warnings != got.warnings:
        found.append(f"warnings: eager {want.warnings}, jitted {got.warnings}")
    return found


def _said(outcome: Outcome) -> str:
    if outcome.error is None:
        return "returned"
    return f"raised {type(outcome.error).__name__}: {outcome.error}"


_DOUBLE = struct.Struct("<d")


def _compare(want: Any, got: Any, where: str, found: list) -> None:
    if type(want) is not type(got):
        found.append(f"{where}: eager {type(want).__name__}, jitted {type(got).__name__}")
        return
    if type(want) in (tuple, list) or isinstance(want, tuple):
        if len(want) != len(got):
            found.append(f"{where}: eager length {len(want)}, jitted {len(got)}")
            return
        for i, (a, b) in enumerate(zip(want, got)):
            _compare(a, b, f"{where}[{i}]", found)
        return
    if isinstance(want, dict):
        if list(want) != list(got):
            found.append(f"{where}: eager keys {list(want)}, jitted {list(got)}")
            return
        for k in want:
            _compare(want[k], got[k], f"{where}[{k!r}]", found)
        return
    if isinstance(want, (np.ndarray, np.generic)):
        if want.shape != got.shape or want.dtype != got.dtype:
            found.append(f"{where}: eager {want.dtype} {want.shape}, jitted {got.dtype} "
                         f"{got.shape}")
        elif not same_bits(want, got):
            found.append(f"{where}: {_first_difference(want, got)}")
        return
    if type(want) is float:
        if _DOUBLE.pack(want) != _DOUBLE.pack(got):
            found.append(f"{where}: eager {want!r}, jitted {got!r}")
        return
    fields = getattr(want, "__dict__", None)
    if fields is not None and not callable(want):
        _compare(fields, got.__dict__, where, found)
        return
    try:
        equal = bool(want == got)
    except Exception:  # noqa: BLE001
        equal = want is got
    if not equal:
        found.append(f"{where}: eager {want!r}, jitted {got!r}")


def same_bits(a: Any, b: Any) -> bool:
    """Whether two values are the same bits (arrays: type, shape, dtype and bytes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (np.ndarray, np.generic)):
        return a.shape == b.shape and a.dtype == b.dtype and (
            bool(np.array_equal(a, b)) if a.dtype.hasobject else a.tobytes() == b.tobytes())
    if type(a) is float:
        return _DOUBLE.pack(a) == _DOUBLE.pack(b)
    if type(a) is complex:
        return same_bits(a.real, b.real) and same_bits(a.imag, b.imag)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return a is b


def _first_difference(want: Any, got: Any) -> str:
    a, b = np.atleast_1d(want), np.atleast_1d(got)
    for index in np.ndindex(a.shape):
        if a[index].tobytes() != b[index].tobytes():
            at = "" if np.ndim(want) == 0 else f" at {index}"
            return f"eager {a[index]!r}, jitted {b[index]!r}{at}"
    return "the bytes differ"


def _arrays(tree: Any, path: str, out: list) -> list:
    if isinstance(tree, (tuple, list)):
        for i, t in enumerate(tree):
            _arrays(t, f"{path}[{i}]", out)
    elif isinstance(tree, dict):
        for k, t in tree.items():
            _arrays(t, f"{path}[{k!r}]", out)
    elif isinstance(tree, np.ndarray):
        out.append((path, tree))
    return out


def _compare_sharing(want: Any, got: Any, want_inputs: list, got_inputs: list,
                     found: list) -> None:
    """Which output arrays share memory with which others and with the inputs, and which
    are the very same object, as eagerly."""
    a, b = _arrays(want, "output", []), _arrays(got, "output", [])
    ins = [(k, u, v) for k, (u, v) in enumerate(zip(want_inputs, got_inputs))
           if isinstance(u, np.ndarray)]
    for i, (path, x) in enumerate(a):
        y = b[i][1]
        for j in range(i):
            if (x is a[j][1]) != (y is b[j][1]) or \
                    np.shares_memory(x, a[j][1]) != np.shares_memory(y, b[j][1]):
                found.append(f"{path} and {a[j][0]}: eager {_sharing(x, a[j][1])}, jitted "
                             f"{_sharing(y, b[j][1])}")
        for k, u, v in ins:
            if (x is u) != (y is v) or np.shares_memory(x, u) != np.shares_memory(y, v):
                found.append(f"{path} and input leaf {k}: eager {_sharing(x, u)}, jitted "
                             f"{_sharing(y, v)}")


def same_layout_copy(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` with its strides (a reduction over it adds in the same order)."""
    copy = laid_out_like(a)
    copy[...] = a
    return copy


def _sharing(x: np.ndarray, y: np.ndarray) -> str:
    if x is y:
        return "the same array"
    return "share memory" if np.shares_memory(x, y) else "do not share memory"


class RandomStates:
    """NumPy's and Python's global random states, to give two runs the same draws."""

    def __init__(self):
        self.numpy = np.random.get_state()
        self.python = random.getstate()

    def restore(self) -> None:
        np.random.set_state(self.numpy)
        random.setstate(self.python)


class CheckedNode(SourcedNode):
    """A staging node that keeps its value and the line that made it (``jit(check=True)``
    traces with these only to name a difference: they cost a copy and a look up the
    stack per call)."""

    __slots__ = ("value",)

    def __init__(self, ans, fun, args, kwargs, argnums, parents):
        super().__init__(ans, fun, args, kwargs, argnums, parents)
        self.value = ans.copy() if isinstance(ans, np.ndarray) else ans


def first_wrong_value(program: Callable, source: str, placed: dict, inputs: list) -> str:
    """Run the straight program of a checked trace on ``inputs`` and name the first call
    whose value is not the one eager evaluation gave (``CheckedNode.value``), or say
    that every value agrees."""
    try:
        values = program(*inputs)
    except Exception as error:  # noqa: BLE001
        return f"the program of this trace raised {type(error).__name__}: {error}"
    lines = source.splitlines()
    for node, (var, line) in placed.items():
        got = values.get(var)
        if isinstance(node, CheckedNode) and not same_bits(node.value, got):
            name = getattr(node.fun, "__name__", "?")
            return (f"the first value that differs is made on line {line} of the program "
                    f"(as straight code):\n    {lines[line - 1].strip()}\n"
                    f"  by {name}, called from {node.source}:\n"
                    f"  eager {_brief(node.value)}, jitted {_brief(got)}")
    return ("every value of the program, run as straight code, is eager evaluation's: "
            "the difference is in how the compiled program is put together (its loops, "
            "its outputs, or what it shares with its inputs)")


def _brief(v: Any) -> str:
    text = repr(v)
    return text if len(text) < 200 else text[:200] + " ..."


TRACE_DIFFERS = (
    "running the function on traced values gives another answer than running it: it "
    "relies on something chainrule's traced arrays do otherwise than NumPy's (a view that "
    "sees a later write into its base array, x[i] = v into an array it made, an object's "
    "identity); see docs/jit.md, \"The contract\"")


def changed_since(old: list, new: list) -> str:
    """Where a record of the function traced now (``new``) first differs from the record
    its program was made from (``old``): a constant it reads (an array of its closure or
    globals, changed since) or the path it takes. Empty where they agree."""
    for a, b in zip(old, new):
        if a.fun is not b.fun or a.argnums != b.argnums or len(a.args) != len(b.args):
            return (f"the function takes another path than when its program was traced,\n"
                    f"  from {getattr(b, 'source', '?')}:\n"
                    f"a value it decides on that is not an argument (a global, a closure, an "
                    f"object's attribute) has changed.")
        if len(a.args) != len(a.argnums):
            for j, (u, v) in enumerate(zip(a.args, b.args)):
                if j not in a.argnums and not _same_constant(u, v):
                    return (f"a constant the program read when it was traced has changed:\n"
                            f"  argument {j} of {getattr(a.fun, '__name__', '?')}, called from "
                            f"{getattr(b, 'source', '?')},\n"
                            f"  was {_brief(u)}, is now {_brief(v)}.\n"
                            f"Values the function reads from its closure, its globals, "
                            f"a functools.partial's arguments or an object's attributes "
                            f"are constants of the program: pass the array as an argument.")
    return ""


def _same_constant(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list)) and type(a) is type(b) and len(a) == len(b):
        return all(map(_same_constant, a, b))
    return same_bits(a, b)
