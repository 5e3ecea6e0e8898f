"""What a function reaches outside itself: random number generators and NumPy arrays.
``vmap`` uses it to tell that a mapped function drew random numbers (NumPy's draws are not
calls chainrule sees), and to keep the function's runs from writing into arrays outside
it (they are made read-only while vmap runs it, see ``ReadOnly``).

A function reaches an object through its arguments, the variables it closes over, its
default arguments, the module globals its code names (and, in a module or object it names,
the attributes its code names, slots included: ``np.random.normal`` reaches NumPy's global
RandomState),
the object of a bound method, the class-defined ``__call__`` of an object called as a
function, and the same things of every function reached that way,
``functools.partial`` and ``functools.wraps`` (chainrule's transforms) included; the items
of lists, tuples, dicts and sets met on the way (their first 64). Generators are NumPy's
``Generator``, ``RandomState`` and bit generators, and Python's ``random.Random`` (the
``random`` module's functions).

A search records what it read (a global, a closure cell, an attribute), so a later call can
reuse it after checking that those still hold the same objects (``Reach.current``).

``grad`` uses it too (``Window``): a gradient keeps a large constant array itself, without
a copy, where every array the function reaches is read-only for the call.
"""

from __future__ import annotations

import functools
import itertools
import mmap
import operator
import random
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as _np

_GENERATORS = (_np.random.Generator, _np.random.RandomState, _np.random.BitGenerator,
               random.Random)
# values that lead nowhere (an array is kept, not searched)
INERT = frozenset({type(None), bool, int, float, complex, str, bytes, _np.ndarray,
                    _np.float64, _np.float32, _np.int64, _np.bool_, _np.ufunc})
_LIBRARIES = ("chainrule", "numpy", "scipy", "builtins")  # their globals are not searched
_MAX_DEPTH = 12
_MAX_ITEMS = 64  # of a container
_CELL, _ITEMS, _DEFAULTS, _SLOT = object(), object(), object(), object()  # what a read was
_ALL_ITEMS = object()  # (a container's items, all of them, a dict's keys and values in turn:
# ``Reach(complete=True)``)
_CONTAINERS = (list, tuple, dict, set)
_ITEM_READS = (_ITEMS, _ALL_ITEMS)


class Reach:
    """The generators and the arrays reachable from ``roots`` (in the order found), and the
    reads that found them. (Arrays in the closures of chainrule's, NumPy's and SciPy's own
    functions are theirs, not the user's, and are left out.)"""

    def __init__(self, roots: list, complete: bool = False):
        # complete: for a check that must see every change, and pays for it: every item
        # of a container is searched and read (not its first _MAX_ITEMS; a dict's keys
        # too), an object is searched for the attributes its class's methods and
        # properties named by the code read of it, and again where another path reaches
        # it with names not yet followed (a helper reading m.Q, m reached first by a
        # function reading m.R)
        self._complete = complete
        self._items = _ALL_ITEMS if complete else _ITEMS
        followed: dict[int, frozenset] = {}  # (complete: the names an object was searched for)
        self.lookups: list = []  # (a dict, a key, its value)
        self._owners: dict = {}  # a class's attribute mapping (made anew on each read): the class
        self.reads: list = []  # (a cell, function or container, what was read, the value)
        self.state: list = []  # the user's own reads (see PythonState): (a place, a key)
        found: dict[int, Any] = {}
        arrays: dict[int, _np.ndarray] = {}
        subclassed: dict[int, _np.ndarray] = {}
        seen: set[int] = set()
        pending = [(root, frozenset(), 0, False, False) for root in reversed(roots)]
        while pending:
            obj, names, depth, library, libraries = pending.pop()
            if type(obj) is _np.ndarray and not library:
                arrays.setdefault(id(obj), obj)
            elif isinstance(obj, _np.ndarray) and not library:  # (a memmap: searched too)
                subclassed.setdefault(id(obj), obj)
            if type(obj) in INERT or depth > _MAX_DEPTH:
                continue
            if id(obj) in seen:
                if not complete or isinstance(obj, (types.FunctionType, *_GENERATORS)):
                    continue  # (a function's reads do not depend on the names it is reached with)
                names = names - followed[id(obj)]
                if not names:
                    continue
            seen.add(id(obj))
            if complete:
                followed[id(obj)] = followed.get(id(obj), frozenset()) | names
            if isinstance(obj, _GENERATORS):
                found.setdefault(id(obj), obj)
                continue
            library = _in_library(obj)
            # (whose state: a function's or an object's own, a container's its holder's)
            if not isinstance(obj, _CONTAINERS):
                libraries = library or _of_a_library(obj)
            marks = len(self.reads), len(self.lookups)
            for child, child_names in self._children(obj, names):
                pending.append((child, child_names, depth + 1, library, libraries))
            if not libraries:
                self.state += [read[:2] for read in self.reads[marks[0]:]]
                self.state += [(place, key, self._owners.get(id(place)))
                               for place, key, _ in self.lookups[marks[1]:]]
        self.generators = list(found.values())
        self.arrays = list(arrays.values())
        self.subclassed_arrays = list(subclassed.values())  # (of ndarray's subclasses)
        self._large: tuple | None = None
        self.searched = seen  # (the ids of the objects searched: not those too deep)

    def current(self) -> bool:
        """Do the places read still hold what they held?"""
        return (all(place.get(key) is value for place, key, value in self.lookups)
                and all(_read(place, key) is value or _same_items(_read(place, key), value)
                        for place, key, value in self.reads))

    def large(self, at_least: int) -> list:
        """The arrays found of ``at_least`` bytes or more (found once per threshold: an
        array's size does not change while anything refers to it)."""
        if self._large is None or self._large[0] != at_least:
            self._large = (at_least, [a for a in (*self.arrays, *self.subclassed_arrays)
                                      if a.nbytes >= at_least])
        return self._large[1]

    def same_reads(self, before: Reach, equal: Callable[[Any, Any], bool]) -> bool:
        """Whether this search, made from the same roots after ``before``'s places stopped
        holding what they held (``current``), read as ``before`` did: the same reads in
        the same order, each value judged by ``equal(value, value_before)``, the items of
        a container or a function's defaults item by item (of a container of
        ``_MAX_ITEMS`` items or more, searched without ``complete``: never, its later
        items were not read), and the values read in two places one object where they
        were one object before, two where they were two (the function may compare them
        with ``is``). Where the values are equal, so are the places they lead the search
        to."""
        now_of: dict[int, Any] = {}  # id(a value before) -> the value now in its place
        then_of: dict[int, Any] = {}

        def same(value, value_then) -> bool:
            paired = now_of.setdefault(id(value_then), value)
            return (paired is value and then_of.setdefault(id(value), value_then) is value_then
                    and equal(value, value_then))

        for now, then in ((self.lookups, before.lookups), (self.reads, before.reads)):
            if len(now) != len(then):
                return False
            for (_, key, value), (_, key_then, value_then) in zip(now, then):
                if key != key_then:
                    return False
                if key is _ITEMS or key is _ALL_ITEMS or key is _DEFAULTS:
                    if not (len(value) == len(value_then)
                            and (key is not _ITEMS or len(value) < _MAX_ITEMS)
                            and all(map(same, value, value_then))):
                        return False
                elif not same(value, value_then):
                    return False
        return True

    def _record(self, place, key) -> Any:
        value = _read(place, key)
        if isinstance(key, str):
            self.lookups.append((place, key, value))
        else:
            self.reads.append((place, key, value))
        return value

    def _children(self, obj, names: frozenset) -> list:
        """What ``obj`` leads to, with the attribute names to follow in each module or
        object (those the code reaching it uses)."""
        if isinstance(obj, types.FunctionType):
            return self._of_function(obj)
        if isinstance(obj, functools.partial):
            return [(v, names) for v in (obj.func, *obj.args, *obj.keywords.values())]
        if isinstance(obj, (types.MethodType, types.BuiltinMethodType)):
            func = getattr(obj, "__func__", None)
            if isinstance(func, types.FunctionType):
                names = _code_names(func.__code__)
            return [(getattr(obj, "__self__", None), names), (func, names)]
        if isinstance(obj, _CONTAINERS):
            # (values that lead nowhere are not pushed: a list of a million floats)
            return [(v, names) for v in self._record(obj, self._items)
                    if type(v) not in INERT or type(v) is _np.ndarray]
        if isinstance(obj, (type, types.ModuleType)) or hasattr(obj, "__dict__") or hasattr(
                type(obj), "__slots__"):
            if self._complete and not isinstance(obj, (type, types.ModuleType)) and not (
                    _of_a_library(obj)):
                names = _methods_read(type(obj), names)  # (what self.perm() reads of self)
            children = [(v, names) for v in self._named_attributes(obj, names)]
            call = _call_method(obj)
            if isinstance(call, types.FunctionType) and not isinstance(obj, type):
                # an object called as a function: what its __call__ reads of it
                called = _code_names(call.__code__)
                children += [(v, called) for v in self._named_attributes(obj, called)]
                children.append((call, called))
            return children
        return []

    def _of_function(self, fun: types.FunctionType) -> list:
        names = _code_names(fun.__code__)
        children = [self._record(cell, _CELL) for cell in fun.__closure__ or ()]
        # (read through a weak reference: a search kept for ``fun`` does not keep it alive)
        children += self._record(weakref.ref(fun), _DEFAULTS)
        children.append(self._record(fun.__dict__, "__wrapped__"))
        if not _in_library(fun):
            children += [self._record(fun.__globals__, n) for n in names]
        return [(child, names) for child in children]

    def _named_attributes(self, obj, names: frozenset) -> list:
        """The attributes of a module, class or object among ``names``, read from their
        ``__dict__``s (a property is not run)."""
        owners = [obj]
        if not isinstance(obj, (type, types.ModuleType)):
            owners += [cls for cls in type(obj).__mro__ if cls is not object]
        dicts = [(getattr(owner, "__dict__", None), owner) for owner in owners]
        self._owners.update((id(d), owner) for d, owner in dicts
                            if isinstance(d, types.MappingProxyType))
        slots = [] if isinstance(obj, (type, types.ModuleType)) else [
            self._record(obj, (_SLOT, n)) for n in names
            if isinstance(getattr(type(obj), n, None), types.MemberDescriptorType)]
        return slots + [self._record(d, n) for d, _ in dicts
                        if isinstance(d, (dict, types.MappingProxyType)) for n in names if n in d]


def reached_from(fun, complete: bool = False) -> Reach:
    """``Reach([fun], complete)``: the last search from ``fun`` where what it read still
    holds (a function mapped again, as ``vmap(f)(xs)`` in a loop maps ``f`` anew at each
    call, is not searched again)."""
    searched = _SEARCHED_COMPLETE if complete else _SEARCHED
    try:
        known = searched.get(fun)
    except (TypeError, ValueError):  # (not weakly referenceable, unhashable, or odd __eq__)
        return Reach([fun], complete)
    if known is not None and known.current():
        return known
    found = Reach([fun], complete)
    if len(searched) >= _MAX_SEARCHED:
        searched.clear()
    searched[fun] = found
    return found


_SEARCHED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SEARCHED_COMPLETE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MAX_SEARCHED = 256


def _in_library(obj) -> bool:
    """Is ``obj`` a function of chainrule, NumPy or SciPy (judged by the module it was
    defined in: functools.wraps copies __module__ from the user's function)?"""
    globals_ = getattr(obj, "__globals__", None)
    return globals_ is not None and str(globals_.get("__name__")).startswith(_LIBRARIES)


def _of_a_library(obj) -> bool:
    """Is ``obj`` a module of chainrule, NumPy or SciPy, or an object of a class of theirs
    (their state, as a jitted function's cache, is theirs)?"""
    if isinstance(obj, types.ModuleType):
        return obj.__name__.startswith(_LIBRARIES)
    kind = obj if isinstance(obj, type) else type(obj)
    return str(getattr(kind, "__module__", "")).startswith(_LIBRARIES) and not isinstance(
        obj, (types.FunctionType, types.MethodType, functools.partial))


class PythonState:
    """The Python state the user's code reaches (the ``state`` of a Reach: the contents of
    closure cells, the items of the lists and dicts met, the globals and attributes the
    code names; chainrule's, NumPy's and SciPy's own left out), as it is when made.
    ``changed()``: has it changed since (a counter counted, a list appended to, a closure
    variable or an attribute rebound)? ``restore()`` puts back what changed."""

    def __init__(self, state: list):
        self.cells, self.lists, self.dicts, self.sets, self.names = [], [], [], [], []
        for place, key, *owner in state:
            if key is _CELL:
                self.cells.append((place, _contents(place)))
            elif key in _ITEM_READS and isinstance(place, list):
                self.lists.append((place, list(place)))
            elif key in _ITEM_READS and isinstance(place, dict):
                self.dicts.append((place, dict(place)))
            elif key in _ITEM_READS and isinstance(place, set):
                self.sets.append((place, set(place)))
            elif isinstance(key, str):
                self.names.append((place, key, place.get(key, _EMPTY), owner[0]))
            elif type(key) is tuple:  # (a slot: the object is its own owner)
                self.names.append((_Slots(place), key[1], getattr(place, key[1], _EMPTY),
                                   place))

    def changed(self) -> bool:
        return (any(_contents(cell) is not value for cell, value in self.cells)
                or any(not _same_list(place, items) for place, items in self.lists)
                or any(not _same_dict(place, items) for place, items in self.dicts)
                or any(place != items for place, items in self.sets)
                or any(place.get(key, _EMPTY) is not value
                       for place, key, value, _ in self.names))

    def restore(self) -> None:
        for cell, value in self.cells:
            if _contents(cell) is not value:
                _set_contents(cell, value)
        for place, items in self.lists:
            if not _same_list(place, items):
                place[:] = items
        for place, items in [*self.dicts, *self.sets]:
            if not (_same_dict(place, items) if type(items) is dict else place == items):
                place.clear()
                place.update(items)
        for place, key, value, owner in self.names:
            if place.get(key, _EMPTY) is not value:
                _set_name(place, key, value, owner)


_EMPTY = object()  # (an empty cell, a name not bound)


class _Slots:
    """An object's slots read as a mapping (``get``), as its ``__dict__`` is."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def get(self, name: str, default=None):
        return getattr(self.obj, name, default)


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


def _set_contents(cell, value) -> None:
    if value is _EMPTY:
        del cell.cell_contents
    else:
        cell.cell_contents = value


def _same_list(place: list, items: list) -> bool:
    return len(place) == len(items) and all(a is b for a, b in zip(place, items))


def _same_dict(place: dict, items: dict) -> bool:
    return len(place) == len(items) and all(place.get(k, _EMPTY) is v for k, v in items.items())


def _set_name(place, key: str, value, owner) -> None:
    if type(place) is not dict:  # (a class's attributes, or slots: set through the owner)
        if value is _EMPTY:
            delattr(owner, key)
        else:
            setattr(owner, key, value)
    elif value is _EMPTY:
        place.pop(key, None)
    else:
        place[key] = value


def _read(place, key):
    if key is _CELL:
        try:
            return place.cell_contents
        except ValueError:  # an empty cell
            return None
    if key is _ALL_ITEMS and isinstance(place, dict):  # (its keys too: a key renamed in
        return tuple(itertools.chain.from_iterable(place.items()))  # place moves a value)
    if key is _ITEMS or key is _ALL_ITEMS:
        items = place.values() if isinstance(place, dict) else place
        return tuple(items if key is _ALL_ITEMS else itertools.islice(items, _MAX_ITEMS))
    if key is _DEFAULTS:
        place = place()  # (a weak reference to the function)
        if place is None:
            return ()
        return (place.__defaults__ or ()) + tuple((place.__kwdefaults__ or {}).values())
    if type(key) is tuple:  # (_SLOT, its name)
        return getattr(place, key[1], None)
    return place.get(key)


def _same_items(a, b) -> bool:
    return (type(a) is tuple and type(b) is tuple and len(a) == len(b)
            and all(map(operator.is_, a, b)))


def _methods_read(cls: type, names: frozenset) -> frozenset:
    try:
        return _read_by_methods(cls, names)
    except TypeError:  # (a class its metaclass made unhashable: its names as given)
        return names


@functools.lru_cache(maxsize=1024)
def _read_by_methods(cls: type, names: frozenset) -> frozenset:
    """``names`` and the names the code of ``cls``'s methods and properties among them
    uses, and so on for the methods those name (``self.perm()`` reads ``self._perm``)."""
    found, pending = set(names), list(names)
    while pending:
        name = pending.pop()
        attribute = next((vars(k)[name] for k in cls.__mro__ if name in vars(k)), None)
        if isinstance(attribute, (staticmethod, classmethod)):
            attribute = attribute.__func__
        elif isinstance(attribute, property):
            attribute = attribute.fget
        elif isinstance(attribute, functools.cached_property):
            attribute = attribute.func
        if isinstance(attribute, types.FunctionType):
            new = _code_names(attribute.__code__) - found
            found |= new
            pending += new
    return frozenset(found)


@functools.lru_cache(maxsize=1024)
def _code_names(code: types.CodeType) -> frozenset:
    """The global and attribute names ``code`` uses, nested functions' included."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return frozenset(names)


class GeneratorStates:
    """The states of some generators when made; ``drawn()`` names those that have moved
    on since, ``restore()`` puts them back."""

    def __init__(self, generators: list):
        self.generators = generators
        self.states = [_state(g) for g in generators]

    def drawn(self) -> list:
        return [g for g, s in zip(self.generators, self.states) if not _same(_state(g), s)]

    def restore(self) -> None:
        for g, s in zip(self.generators, self.states):
            _set_state(g, s)


def _state(generator):
    if isinstance(generator, _np.random.Generator):
        return generator.bit_generator.state
    if isinstance(generator, _np.random.RandomState):
        return generator.get_state(legacy=False)
    if isinstance(generator, _np.random.BitGenerator):
        return generator.state
    return generator.getstate()


def _set_state(generator, state) -> None:
    if isinstance(generator, _np.random.Generator):
        generator.bit_generator.state = state
    elif isinstance(generator, _np.random.RandomState):
        generator.set_state(state)
    elif isinstance(generator, _np.random.BitGenerator):
        generator.state = state
    else:
        generator.setstate(state)


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, _np.ndarray):
        return _np.array_equal(a, b)
    return a == b or (a != a and b != b)  # (a cached gaussian may be nan)


def describe(generator) -> str:
    if generator is _np.random.mtrand._rand:
        return "NumPy's global RandomState (numpy.random.*)"
    if isinstance(generator, random.Random) and generator is getattr(random, "_inst", None):
        return "Python's random module"
    return f"a {type(generator).__name__}"


class ReadOnly:
    """Arrays made read-only until ``release()``: writes into them raise NumPy's
    "read-only" ValueError instead of changing them (see ``written``). An array another
    ReadOnly holds (another thread's vmap or gradient) is held by both, writeable again
    when the last releases it; one read-only otherwise is left as it is."""

    def __init__(self, arrays: list):
        self.arrays: list = []
        self.add(arrays)

    def add(self, arrays) -> None:
        """Make the writeable ones of ``arrays`` read-only too (and hold those another
        ReadOnly holds)."""
        with _holding:
            for a in arrays:
                held = _HELD.get(id(a))
                if a.flags.writeable:
                    a.flags.writeable = False
                    _HELD[id(a)] = [a, 1]  # (the array kept: its id is not reused)
                elif held is not None:
                    held[1] += 1
                else:
                    continue
                self.arrays.append(a)

    def holds(self, a) -> bool:
        """Whether some ReadOnly holds ``a``."""
        return id(a) in _HELD

    def release(self) -> None:
        with _holding:
            # (a view's flag is set after its base's: NumPy refuses a writeable view of a
            # read-only base)
            for a in sorted(self.arrays, key=_bases_above):
                held = _HELD[id(a)]
                held[1] -= 1
                if not held[1]:
                    del _HELD[id(a)]
                    a.flags.writeable = True
            self.arrays = []


_HELD: dict = {}  # id(an array ReadOnly made read-only) -> [the array, how many hold it]
_holding = threading.Lock()


def written(error: BaseException, read_only: ReadOnly) -> bool:
    """Did ``error`` come from a write into one of ``read_only``'s arrays (as far as
    NumPy's message tells)?"""
    # (NumPy's words for a write refused, and for a read-only view's flag set back)
    return (bool(read_only.arrays) and isinstance(error, ValueError)
            and ("read-only" in str(error) or "set WRITEABLE flag" in str(error)))


def _bases_above(a: _np.ndarray) -> int:
    n = 0
    while isinstance(a.base, _np.ndarray):
        a, n = a.base, n + 1
    return n


def _array_bases(a: _np.ndarray) -> list | None:
    """The arrays ``a`` is a view of, nearest first; None where its memory is a Python
    buffer's (a bytearray's, a memoryview's: code holding the buffer writes into it past
    any array's flag). A memory map's is the file's, reached only through the memmap."""
    bases, base = [], a.base
    while isinstance(base, _np.ndarray):
        bases.append(base)
        base = base.base
    return bases if base is None or type(base) is mmap.mmap else None


class Window:
    """What a closed recording keeps of its large constant arrays (grad's: the function's
    record is made and pulled back within one chainrule call): the arrays themselves, where
    copying each would cost more, read-only while the window is open.

    ``around`` opens one where the function reaches a writeable array that large: it then
    makes every array the function reaches read-only (of any size, and their bases), so
    that a write into any of them raises NumPy's "read-only" ValueError (``written``)
    before anything it reaches has changed. The caller then ``undo``es the run — the
    flags, and the Python state and random generators the function reaches (``PythonState``,
    ``GeneratorStates``) as they were — and runs the function again, copying. A function
    found writing (one of its code) is not given a window again (``met_large``).

    One window per thread is open at a time (``current_window()``): a recording nested in
    the call (grad of grad) keeps its arrays in it; its write is the outer call's to undo.
    """

    def __init__(self, fun, searches: list, large: list, marked: list):
        self.fun = fun
        self.held = {id(a) for a in large}
        self.state = PythonState([key for search in searches for key in search.state])
        self.generators = GeneratorStates(
            list({id(g): g for search in searches for g in search.generators}.values()))
        self._marked = marked
        self.read_only = ReadOnly([])  # (the arrays are made read-only as it opens)
        self._outer = None

    @classmethod
    def around(cls, fun, x, at_least: int) -> Window | None:
        """A window for the call ``fun(x)``, or None where the function reaches no
        writeable array of ``at_least`` bytes, or reaches an array that could not be made
        writeable again (a writeable view of a base made read-only) or whose memory is a
        Python buffer's (a write through the buffer passes any flag)."""
        arrays, searches = [], []  # (an array among the roots is searched no further)
        complete = []  # (every item of every container, and the attributes of objects the
        # code names: an alias of a held array past a list's 64th item, written, would
        # change what a node keeps; the state put back on a run again is the plain
        # search's, as vmap's: a complete one reads library objects' insides, a
        # threading.Event's flag, which must not be put back)
        try:
            for root in _search_roots([fun, x]):
                if type(root) is _np.ndarray:
                    arrays.append(root)
                else:
                    searches.append(reached_from(root))
                    complete.append(reached_from(root, complete=True))
        except Exception:  # (an object of the user's that refuses the search: copied)
            return None
        large = [a for a in itertools.chain(
            [a for a in arrays if a.nbytes >= at_least],
            *[search.large(at_least) for search in complete])
            if a.flags.writeable or id(a) in _HELD]
        if not large:
            return None
        marked = []
        for a in itertools.chain(arrays, *[(*search.arrays, *search.subclassed_arrays)
                                           for search in complete]):
            if not (a.flags.writeable or id(a) in _HELD):
                continue  # (the user's read-only array: stays so, and is kept as it is)
            bases = _array_bases(a)
            if bases is None or any(not (b.flags.writeable or id(b) in _HELD)
                                    for b in bases):
                return None
            marked += [a, *bases]
        return cls(fun, searches, large, marked)

    def __enter__(self) -> Window:
        self._outer = _windows.open
        _windows.open = self
        try:
            self.read_only.add(self._marked)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        _windows.open = self._outer
        self.read_only.release()

    def holds(self, a: _np.ndarray) -> bool:
        """May a node keep ``a`` itself (an array read-only while the window is open)?"""
        return id(a) in self.held

    def reopened(self) -> list:
        """The arrays made read-only here that are writeable again (by the function's
        ``setflags(write=True)``, or another thread's): the nodes' arrays may have changed."""
        return [a for a in self.read_only.arrays if a.flags.writeable]

    def undo(self) -> None:
        """After a write refused: the flags, the Python state and the generators the
        function reaches as they were when the window opened; the function's code is
        marked as writing (its next gradients copy, see ``met_large``)."""
        self.read_only.release()
        self.held = set()
        self.state.restore()
        self.generators.restore()
        _LARGE_CODES.update(dict.fromkeys(_user_codes(self.fun), False))

    def aliases(self, leaves) -> bool:
        """Whether an array among ``leaves`` shares memory with one held read-only."""
        return any(isinstance(leaf, _np.ndarray) and _np.may_share_memory(leaf, a)
                   for leaf in leaves for a in self.read_only.arrays)


def _search_roots(roots: list) -> list:
    """``roots``, with a chainrule function's closure (a transform's wrapper of the user's
    function, holding it and its other arguments) searched as roots of their own: the
    user's function is then searched once and kept (``reached_from``), where the wrapper
    is made anew for each call."""
    found = []
    for root in roots:
        if isinstance(root, types.FunctionType) and _in_library(root) and root.__closure__:
            found += [value for value in map(_contents, root.__closure__)
                      if type(value) not in INERT and value is not _EMPTY]
        elif type(root) not in INERT or type(root) is _np.ndarray:
            found.append(root)
    return found


class _Windows(threading.local):
    open: Window | None = None  # this thread's open window


_windows = _Windows()


def current_window() -> Window | None:
    """This thread's open ``Window``, if any."""
    return _windows.open


# How many large writeable arrays recorded calls have copied (chainrule.numpy counts them):
# a gradient that copied one gives its function a window from its next call on
# (``note_large``), so a gradient of small arrays pays no search.
large_copies = [0]
# The code of functions whose gradients met large arrays: True, or False once found
# writing into what they reach (their gradients copy then)
_LARGE_CODES: dict = {}


def _call_method(obj):
    """The ``__call__`` that calling ``obj`` runs, as its class defines it (None where none
    does)."""
    return next((vars(cls)["__call__"] for cls in type(obj).__mro__
                 if "__call__" in vars(cls)), None)


def _user_codes(fun, depth: int = 0) -> list:
    """The code of ``fun`` (of a method's function, a partial's, a callable object's
    ``__call__``), or where it is a chainrule function's closure (a transform's wrapper of
    the user's function) of the functions it holds."""
    if depth > 2:
        return []
    if type(fun) is not types.FunctionType:
        if isinstance(fun, types.MethodType):
            fun = fun.__func__
        elif isinstance(fun, functools.partial):
            fun = fun.func
        else:
            fun = _call_method(fun)
        return _user_codes(fun, depth + 1)
    if fun.__closure__ is None or not _in_library(fun):
        return [fun.__code__]
    return [code for value in map(_contents, fun.__closure__)
            for code in _user_codes(value, depth + 1)]


def met_large(fun) -> bool:
    """Did a gradient of ``fun`` (of a function of the same code) meet a large array, and
    was the function not found writing into what it reaches?"""
    if not _LARGE_CODES:
        return False
    if type(fun) is types.FunctionType and fun.__closure__ is None:
        return _LARGE_CODES.get(fun.__code__, False)
    codes = _user_codes(fun)
    return bool(codes) and all(_LARGE_CODES.get(code, False) for code in codes)


def note_large(fun) -> None:
    """A gradient of ``fun`` copied a large array."""
    if len(_LARGE_CODES) >= 1024:
        _LARGE_CODES.clear()
    for code in _user_codes(fun):
        _LARGE_CODES.setdefault(code, True)
