"""What a traced call does besides computing: the warnings it gives and the random numbers
it draws, which eager evaluation gives and draws again on every call.

Warnings. A trace records the warnings the function gives (``recording``, with the
caller's filters: one they make an error still raises inside the function) and shows
them once it has run, as the eager call would have. The program gives NumPy's warnings
itself where it makes the same calls on the same values; a warning it does not give (a
transform's own notice, a constant's ``log(0)``, the function's ``warnings.warn``) is
given again on each call (``Replaying``).

Random draws. A program cannot draw again what the trace drew: where a trace changed
the state of NumPy's global generator, of Python's ``random``, or of a generator the
function reaches through its arguments, its closure or its globals, the function runs
eagerly for that signature (``RandomState``).
"""

from __future__ import annotations

import random
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .._core.user_frames import user_place
from .._user_code import reach
from .._user_code.errstate import EveryError
from ._program import MISS as _MISS
from ._program import RAISED as _RAISED

# catch_warnings swaps module-level state: traces in two threads take turns (re-entrant:
# a function may call another jitted function, traced inside its own trace)
_recording_lock = threading.RLock()


class recording:
    """``with recording() as caught:`` the warnings given inside, in ``caught``, shown
    when the block ends (``show``) as they would have been without it."""

    def __enter__(self) -> list:
        _recording_lock.acquire()
        self._catcher = warnings.catch_warnings(record=True)
        try:
            return self._catcher.__enter__()
        except BaseException:
            _recording_lock.release()
            raise

    def __exit__(self, *exc_info) -> None:
        try:
            self._catcher.__exit__(*exc_info)
        finally:
            _recording_lock.release()


def show(caught: list) -> None:
    """Give the warnings ``recording`` caught, as their first giving would have."""
    for message in caught:
        warnings._showwarnmsg(message)


def _key(message: warnings.WarningMessage) -> tuple:
    return message.category, str(message.message)


def not_given_by(caught: list, given: list) -> list:
    """The warnings of ``caught`` whose class and message ``given`` (the program's) does not
    have (a program may give once what the trace gave twice: one call for two alike)."""
    have = {_key(m) for m in given}
    return [m for m in caught if _key(m) not in have]


class Replaying:
    """A program's ``call`` that also gives, where it answers, the warnings the eager call
    gives and the program does not (see the module's docstring), through the caller's
    filters. (Where it does not answer, a guard failed or a call raised: the call that
    answers, a new trace or eager evaluation, gives its own.)"""

    def __init__(self, call: Callable, messages: list):
        self.call = call
        # A warning that named the tracing call's own line (a transform's notice, as in
        # jit(grad(f)): the engine names the first frame outside chainrule) names each
        # call's line, as eager evaluation's does; one from inside the function (its
        # warnings.warn, NumPy's) keeps its place. (Made while the tracing call runs.)
        caller = (user_place(sys._getframe(1)) or (None, None))[:2]
        self.messages = [(m.message, m.category, m.filename, m.lineno,
                          (m.filename, m.lineno) == caller) for m in messages]
        self.registry: dict = {}  # ("default" shows a warning once per place, as eagerly)

    def __call__(self, *leaves):
        out = self.call(*leaves)
        if out is not _MISS and out is not _RAISED:
            here = None
            for message, category, filename, lineno, at_caller in self.messages:
                if at_caller:
                    here = here or (user_place(sys._getframe(1)) or (filename, lineno))[:2]
                    filename, lineno = here
                warnings.warn_explicit(message, category, filename, lineno,
                                       registry=self.registry)
        return out


class Quiet:
    """The ``call`` of a program whose function set NumPy's error state inside (``with
    np.errstate(divide="ignore")``, or a library function that does, as ``cond``): the
    program runs under one that tells it of every floating-point error, and a call that
    met one is handed to eager evaluation (``RAISED``), which warns, raises or keeps quiet
    where the function's own state says (no state changes a value, only who is told)."""

    def __init__(self, call: Callable):
        self.call = call

    def __call__(self, *leaves):
        with EveryError() as met:
            out = self.call(*leaves)
        return _RAISED if met.errors else out


_GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator,
               random.Random)


class RandomState:
    """The states of the random generators a function may draw from: NumPy's global one,
    Python's ``random``, and the generators among ``objects`` (its static arguments, the
    values its closure and globals name). ``changed()``: whether any was drawn from."""

    def __init__(self, fun: Callable, objects: Iterable):
        self.generators = [np.random.mtrand._rand, random._inst]
        seen = {id(g) for g in self.generators}
        for obj in [*objects, *_reachable(fun)]:
            if isinstance(obj, _GENERATORS) and id(obj) not in seen:
                seen.add(id(obj))
                self.generators.append(obj)
        self.states = [_state(g) for g in self.generators]
        self._raw = [_raw_state(g) for g in self.generators]

    def changed(self) -> bool:
        return any(_state(g) != s for g, s in zip(self.generators, self.states))

    def restore(self) -> None:
        """Put back every generator's state as it was when this was made."""
        for generator, state in zip(self.generators, self._raw):
            if isinstance(generator, random.Random):
                generator.setstate(state)
            elif isinstance(generator, np.random.RandomState):
                generator.set_state(state)
            else:
                _bits(generator).state = state


class Outside:
    """The arrays and the Python state ``fun`` reaches (through its closure, its globals and
    ``objects``: ``reach.Reach``), kept as they are when made: ``restore()`` puts them back,
    for a call made again from where it started."""

    def __init__(self, fun: Callable, objects: Iterable):
        found = reach.Reach([fun, *objects])
        self.arrays = [(a, a.copy()) for a in found.arrays if a.flags.writeable]
        self.state = reach.PythonState(found.state)

    def restore(self) -> None:
        for array, kept in self.arrays:
            np.copyto(array, kept)
        self.state.restore()


def _bits(generator: Any) -> Any:
    return generator.bit_generator if isinstance(generator, np.random.Generator) else generator


def _raw_state(generator: Any) -> Any:
    """A generator's state as its own setter takes it back."""
    if isinstance(generator, random.Random):
        return generator.getstate()
    if isinstance(generator, np.random.RandomState):
        return generator.get_state(legacy=False)
    return _bits(generator).state


def _library(names: dict) -> bool:
    """Whether ``names`` are the globals of a chainrule module."""
    module = names.get("__name__")
    return type(module) is str and (module == "chainrule" or module.startswith("chainrule."))


def _state(generator: Any) -> Any:
    """A generator's state, as a value ``==`` compares (arrays as their bytes)."""
    if isinstance(generator, random.Random):
        return generator.getstate()
    if isinstance(generator, np.random.RandomState):
        return _comparable(generator.get_state(legacy=False))  # (its gaussian cache too)
    if isinstance(generator, np.random.Generator):
        generator = generator.bit_generator
    return _comparable(generator.state)


def _comparable(state: Any) -> Any:
    if type(state) is dict:
        return tuple((k, _comparable(v)) for k, v in state.items())
    if isinstance(state, np.ndarray):
        return state.tobytes()
    return state


def _reachable(fun: Callable, limit: int = 64) -> list:
    """The values ``fun`` closes over or names as globals, and those of the functions among
    them and of what ``fun`` wraps (a transform, ``functools.wraps``, a partial), up to
    ``limit`` functions. The globals of chainrule's own functions (a transform's wrapper)
    are not read: they hold no generator (no chainrule module keeps one), and they named
    most of the functions walked (35 of the Jacobian's, 61 of the Hessian's), spending the
    limit on them; what a wrapper closes over (the user's function) is."""
    found: list = []
    todo = [fun]
    seen: set[int] = set()
    while todo and len(seen) < limit:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        values = []
        for cell in getattr(f, "__closure__", None) or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:  # (an empty cell)
                pass
        code = getattr(f, "__code__", None)
        names = getattr(f, "__globals__", None)
        if code is not None and names is not None and not _library(names):
            values += [names[n] for n in code.co_names if n in names]
        values += [getattr(f, "__wrapped__", None), getattr(f, "func", None),
                   getattr(f, "fun", None)]
        for v in values:
            if callable(v) and not isinstance(v, type):
                todo.append(v)
        found += values
    return found
