"""``chainrule.jit``: trace a function once, then run it as straight-line NumPy.

The first call for a signature (pytree structure, type/shape/dtype of each array leaf,
values of static arguments and of non-array leaves) runs ``fun`` on a *staging trace*
(see ``_staging``), which records every primitive call, including the forward and
backward passes of ``grad``, ``jvp``, ``hessian`` ... nested inside ``fun``. The record is
emitted as a Python function of plain calls (see ``_emit``), compiled and cached; later
calls run only that function. Python decisions on traced values become guards: a call
whose guards fail retraces and adds a variant, and past ``max_variants`` variants the
function runs eagerly (with one warning).
"""

from __future__ import annotations

import functools
import gc
import inspect
import struct
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from .._core import tracer
from .._core.pytree import (
    LEAF,
    DictKeys,
    TreeDef,
    _sorted_keys,
    tree_flatten,
    tree_unflatten,
)
from .._core.tracer import check_not_leaked, front_ends, isbox, trace_leaves
from . import _staging
from ._emit import MISS, Program, emit
from ._staging import Session, StagingError, StagingNode

__all__ = ["jit", "StagingError", "CacheInfo"]

_STAGED_SCALARS = (float, complex, np.float64, np.float32, np.float16, np.complex64, np.complex128)


class CacheInfo(NamedTuple):
    hits: int  # calls answered by a compiled variant
    misses: int  # calls that traced
    signatures: int  # signatures cached now
    variants: int  # compiled variants over all signatures
    eager: int  # calls run eagerly (traced values as inputs, or too many variants)
    maxsize: int


class Lowered:
    """What ``jit(f).lower(*args)`` answers: the emitted program for those arguments."""

    def __init__(self, program: Program):
        self.source = program.source
        self.n_lines = program.n_lines
        self.n_calls = program.n_calls  # primitive calls one run makes (loops counted out)

    def __repr__(self) -> str:
        return self.source


def _leaf_key(leaf: Any) -> tuple:
    t = type(leaf)
    if t is np.ndarray:
        if leaf.dtype.kind in "fc":
            return (t, leaf.shape, leaf.dtype)
        # integer and boolean arrays (indices, masks) are part of the signature by value:
        # code reads them as plain values, without recording a decision
        return ("static", t, (leaf.shape, leaf.dtype.str, leaf.tobytes()))
    if t in _STAGED_SCALARS:
        return (t,)
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype") and not isinstance(leaf, np.generic):
        return (t, tuple(leaf.shape), leaf.dtype)  # Dask, CuPy: their type is in the key
    try:
        hash(leaf)
    except TypeError:
        raise StagingError(
            f"chainrule.jit cannot take an argument leaf of type {t.__name__}: it is neither "
            f"an array nor a hashable value that could be a static part of the signature."
        ) from None
    return ("static", _static_key(leaf))


_DOUBLE = struct.Struct("<d")


def _static_key(value: Any) -> Any:
    """What identifies a static value in the cache key: its type and value, a float by
    its bits. (``==`` alone would make ``1`` and ``True``, ``0.0`` and ``-0.0`` one key,
    and a nan never equal to itself.)"""
    t = type(value)
    if t is float:
        return t, _DOUBLE.pack(value)
    if t is complex:
        return t, _DOUBLE.pack(value.real), _DOUBLE.pack(value.imag)
    if t is tuple:
        return t, tuple(map(_static_key, value))
    if t is frozenset:
        return t, frozenset(map(_static_key, value))
    if isinstance(value, np.generic):
        return t, value.tobytes()
    return t, value


def _is_traced(leaf: Any) -> bool:
    """Whether a leaf is an input of the program (else its value is in the signature)."""
    return _leaf_key(leaf)[0] != "static"


def _walk(tree: Any, tokens: list, dyn: list) -> None:
    """Append ``tree``'s key tokens to ``tokens`` and its traced leaves to ``dyn``, in
    ``tree_flatten``'s leaf order. (It runs on every call: ``+=`` of a 1-tuple rather
    than ``append``, leaves of a container handled in its loop.)"""
    t = type(tree)
    if t is tuple or t is list:
        tokens += ((t, len(tree)),)
        children = tree
    elif t is dict:
        tokens += ((dict, tuple(tree)),)  # (the order it was built in: f may read it)
        children = [tree[k] for k in _sorted_keys(tree)]
    else:
        children = (tree,)
    for x in children:
        t = type(x)
        if t is np.ndarray and x.dtype.kind in "fc":
            tokens += ((t, x.shape, x.dtype),)
            dyn += (x,)
        elif t in _STAGED_SCALARS:
            tokens += (t,)
            dyn += (x,)
        elif t is int or t is bool or t is str:
            tokens += (("static", t, x),)
        elif x is None:
            tokens += (None,)
        elif t is tuple or t is list or t is dict:
            _walk(x, tokens, dyn)
        else:
            leaves, treedef = tree_flatten(x)
            if treedef is not LEAF:
                tokens += (treedef,)
            for leaf in leaves:
                key = _leaf_key(leaf)
                tokens += (key,)
                if key[0] != "static":
                    dyn += (leaf,)


def _positional_parameters(fun: Callable) -> int:
    """How many parameters ``fun`` takes by position; 0 where it takes ``*args`` or has no
    signature Python can read."""
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return 0
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return 0
    return sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
               for k in kinds)


def _unflattener(out_def: TreeDef) -> Callable:
    """From the program's tuple of output leaves to the output's structure: a compiled
    expression for tuples, lists, dicts and None, else ``tree_unflatten``."""
    if out_def.kind is tuple and all(c is LEAF for c in out_def.children):
        return _identity  # the program's tuple is the output
    counter = iter(range(out_def.num_leaves))
    expr = _rebuild_expr(out_def, counter)
    if expr is None:
        return functools.partial(tree_unflatten, out_def)
    return eval(f"lambda o: {expr}", {})  # noqa: S307 (an expression built just above)


def _rebuild_expr(treedef: TreeDef, counter) -> str | None:
    kind = treedef.kind
    if kind is None:
        return f"o[{next(counter)}]"
    if kind is type(None):
        return "None"
    parts = [_rebuild_expr(c, counter) for c in treedef.children]
    if any(p is None for p in parts):
        return None
    if kind is tuple:
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    if kind is list:
        return f"[{', '.join(parts)}]"
    if kind is dict and all(type(k) in (str, int) for k in treedef.aux):
        by_key = dict(zip(treedef.aux, parts))
        order = treedef.aux.order if type(treedef.aux) is DictKeys else treedef.aux
        return "{" + ", ".join(f"{k!r}: {by_key[k]}" for k in order) + "}"
    return None


def _identity(x: Any) -> Any:
    return x


class _Entry:
    __slots__ = ("variants", "eager")

    def __init__(self):
        self.variants: list[Program] = []
        self.eager = False


class JittedFunction:
    """``fun`` staged and compiled per signature; see ``chainrule.jit``."""

    def __init__(
        self,
        fun: Callable,
        static_argnums: Iterable[int],
        static_argnames: Iterable[str],
        max_variants: int,
        maxsize: int,
    ):
        self.fun = fun
        self.static_argnums = frozenset(static_argnums)
        self.static_argnames = frozenset(static_argnames)
        self._positions: dict[int, frozenset[int]] = {}  # see _static_positions
        self._n_positional = _positional_parameters(fun)
        self.max_variants = max_variants
        self.maxsize = maxsize
        self._cache: OrderedDict = OrderedDict()
        self._hits = self._misses = self._eager = 0
        self._name = getattr(fun, "__name__", "fun").replace("<", "_").replace(">", "_")
        if not self._name.isidentifier():
            self._name = "fun"
        # The name, docstring and __wrapped__ only: copying ``fun.__dict__`` (what
        # update_wrapper does by default) would overwrite this object's own state with
        # the attributes of a chainrule primitive (``fun``), of another jitted function
        # (its cache) or of whatever a decorator copied onto ``fun``.
        functools.update_wrapper(self, fun, updated=())

    # -------------------------------------------------------------- signature
    def _static_positions(self, n_args: int) -> frozenset[int]:
        """``static_argnums`` as positions among ``n_args`` positional arguments: a
        negative one counts from the end of ``fun``'s positional parameters (as in JAX),
        or of the arguments given where ``fun`` takes ``*args``; one past the arguments
        given names no argument (a parameter left at its default)."""
        positions = self._positions.get(n_args)
        if positions is None:
            n = self._n_positional or n_args
            positions = self._positions[n_args] = frozenset(
                i % n for i in self.static_argnums if -n <= i < n and i % n < n_args)
        return positions

    def _signature(self, args, kwargs) -> tuple[tuple, list]:
        """The cache key and the traced leaves, in one pass over the arguments.

        The key spells the pytree structure with a token per container and a key per
        leaf; it is computed on every call, so tuples, lists, dicts and plain leaves
        are walked here without building a TreeDef (the trace builds one, on a miss).
        Keywords are walked in sorted order (``tree_flatten``'s), and their order as
        given is a token too (the function may read ``**kwargs`` in that order)."""
        tokens: list = []
        dyn: list = []
        statics = self._static_positions(len(args)) if self.static_argnums else ()
        if not statics:
            _walk(args, tokens, dyn)
        else:
            for i, a in enumerate(args):
                if i in statics:
                    tokens.append(("static", i, _static_key(a)))
                else:
                    _walk(a, tokens, dyn)
        if kwargs:
            tokens.append(tuple(kwargs))
            for k in _sorted_keys(kwargs):
                v = kwargs[k]
                if k in self.static_argnames:
                    tokens.append(("static", k, _static_key(v)))
                else:
                    tokens.append(k)
                    _walk(v, tokens, dyn)
        return tuple(tokens), dyn

    def _lookup(self, key: tuple) -> _Entry | None:
        try:
            return self._cache.get(key)
        except TypeError:
            raise StagingError(
                "chainrule.jit: static arguments must be hashable (they are part of the cache "
                "key); pass arrays as ordinary (traced) arguments."
            ) from None

    def _split(self, args, kwargs):
        """The leaves, their TreeDef and the static arguments, for a trace."""
        statics = []
        dyn_args = list(args)
        for i in sorted(self._static_positions(len(args))):
            statics.append((i, args[i]))
            dyn_args[i] = None
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self.static_argnames:
                statics.append((k, v))
                dyn_kwargs[k] = None  # (a place holder: the keywords keep their order)
            else:
                dyn_kwargs[k] = v
        leaves, treedef = tree_flatten((tuple(dyn_args), dyn_kwargs))
        return leaves, treedef, statics

    def _call_with(self, leaves, treedef, statics):
        dyn_args, kwargs = tree_unflatten(treedef, leaves)
        args = list(dyn_args)
        kwargs = dict(kwargs)
        for where, v in statics:
            if type(where) is int:
                args[where] = v
            else:
                kwargs[where] = v
        return self.fun(*args, **kwargs)

    # -------------------------------------------------------------- calls
    def __call__(self, *args, **kwargs):
        if kwargs or self.static_argnums:
            key, dyn = self._signature(args, kwargs)
        else:  # (the common call, without a call of _signature)
            tokens: list = []
            dyn = []
            _walk(args, tokens, dyn)
            key = tuple(tokens)
        try:
            entry = self._cache.get(key)
        except TypeError:
            entry = self._lookup(key)  # raises the error that names the fix
        if entry is not None:
            if entry.eager:
                self._eager += 1
                return self.fun(*args, **kwargs)
            for program in entry.variants:
                out = program.run(*dyn)
                if out is not MISS:
                    self._hits += 1
                    return program.unflatten(out)
        leaves, treedef, statics = self._split(args, kwargs)
        if any(isbox(leaf) or type(leaf) in front_ends for leaf in leaves):
            self._eager += 1  # inside another trace (grad(jit(f))): trace through
            return self.fun(*args, **kwargs)
        return self._trace(key, leaves, treedef, statics, entry, dyn)[0]

    def _trace(self, key, leaves, treedef, statics, entry, walked):
        # A trace makes many objects that live until the program is emitted, and the
        # cyclic collector would scan them again and again (a third of an RNN's trace);
        # reference counting frees them when the record is dropped.
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._trace_and_emit(key, leaves, treedef, statics, entry, walked)
        finally:
            if enabled:
                gc.enable()

    def _trace_and_emit(self, key, leaves, treedef, statics, entry, walked):
        if entry is None:
            entry = self._cache[key] = _Entry()
            while len(self._cache) > self.maxsize:
                self._cache.popitem(last=False)
        elif len(entry.variants) >= self.max_variants:
            entry.eager = True
            self._eager += 1
            warnings.warn(
                f"chainrule.jit: {self._name} was traced {len(entry.variants)} times for one "
                f"signature because its guards (Python decisions on traced values: if, "
                f"while, int(), indexing) kept failing; it now runs eagerly for this "
                f"signature. Raise max_variants, or make the deciding argument static.",
                stacklevel=3,
            )
            return self._call_with(leaves, treedef, statics), None
        self._misses += 1
        dyn_pos = [i for i, leaf in enumerate(leaves) if _is_traced(leaf)]
        dyn = [leaves[i] for i in dyn_pos]
        if len(dyn) != len(walked) or any(a is not b for a, b in zip(dyn, walked)):
            # the program's inputs are the cached call's walk: the two orders must agree
            raise AssertionError(
                "chainrule.jit: the signature walk and tree_flatten disagree on the order of "
                "the traced leaves; please report this with the argument types."
            )

        def staged(boxes):
            if boxes:
                session.trace_id = boxes[0]._trace_id
            full = list(leaves)
            for i, b in zip(dyn_pos, boxes):
                full[i] = b
            return tree_flatten(self._call_with(full, treedef, statics))

        session = Session(0)
        previous = _staging.current()
        _staging._state.session = session
        # installed once and left: it answers NotImplemented in threads not staging, so
        # two threads staging at once cannot uninstall it under each other
        tracer.notrace_hook = _staging.notrace_hook
        try:
            (out_leaves, out_def), trace_id, _ = trace_leaves(
                StagingNode, [(leaf, i) for i, leaf in enumerate(dyn)], staged, dyn, list
            )
        finally:
            _staging._state.session = previous
        items, plain = [], []
        foreign = False
        for leaf in out_leaves:
            if isbox(leaf) and leaf._trace_id == trace_id:
                items.append(leaf._node)
                plain.append(leaf._value)
            else:
                if isbox(leaf):
                    check_not_leaked(leaf)
                    foreign = True
                items.append(leaf)
                plain.append(leaf)
        result = tree_unflatten(out_def, plain)
        why = session.impure or ("it returns a value traced outside it" if foreign else "")
        if why:
            # A closed-over box of an outer trace: the result is right (the outer trace
            # recorded its part) but the record cannot be replayed without it.
            self._cache.pop(key, None)
            self._eager += 1
            return result, None
        program = emit(len(dyn), items, session.guards, self._name)
        program.unflatten = _unflattener(out_def)
        entry.variants.append(program)
        return result, program

    def lower(self, *args, **kwargs) -> Lowered:
        """The emitted program for these arguments (traced now if not cached)."""
        key, dyn = self._signature(args, kwargs)
        leaves, treedef, statics = self._split(args, kwargs)
        entry = self._lookup(key)
        if entry is not None:
            for program in entry.variants:
                if program.run(*dyn) is not MISS:
                    return Lowered(program)
        _, program = self._trace(key, leaves, treedef, statics, entry, dyn)
        if program is None:
            raise StagingError(
                f"chainrule.jit: {self._name} cannot be staged for these arguments (it "
                f"closes over values traced outside it, or has too many variants)."
            )
        return Lowered(program)

    def variants_for(self, *args, **kwargs) -> list[Program] | None:
        """The programs compiled for the signature of these arguments, for a caller that
        runs them itself after a lighter check of its own (a solver calling one function
        at every step on arrays of one signature). ``program.run(*leaves)`` takes the
        array leaves in ``tree_flatten`` order and answers the output leaves, or ``MISS``
        where a guard fails: calling the jitted function then traces a new variant, which
        is appended to this same list. None where the signature has no program (not traced
        yet, closing over values of an outer trace, or run eagerly past ``max_variants``)."""
        entry = self._lookup(self._signature(args, kwargs)[0])
        if entry is None or entry.eager or not entry.variants:
            return None
        return entry.variants

    def cache_info(self) -> CacheInfo:
        return CacheInfo(
            self._hits,
            self._misses,
            len(self._cache),
            sum(len(e.variants) for e in self._cache.values()),
            self._eager,
            self.maxsize,
        )

    def clear_cache(self) -> None:
        self._cache.clear()
        self._hits = self._misses = self._eager = 0

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)


def jit(
    fun: Callable | None = None,
    *,
    static_argnums: int | Iterable[int] = (),
    static_argnames: str | Iterable[str] = (),
    max_variants: int = 8,
    maxsize: int = 64,
) -> Any:
    """Trace ``fun`` once per signature and run it afterwards as straight-line NumPy.

    ``jit(grad(f))``, ``jit(hessian(f))`` and ``jit(lambda p: value_and_grad(loss)(p, b))``
    stage the whole derivative computation, backward passes included.

    Semantics, as in JAX: Python side effects in ``fun`` happen when it is traced only;
    values computed from globals, closures or ``numpy.random`` inside ``fun`` are
    constants of the trace (a warning names arrays over 1 MB that are baked in). Python
    decisions on traced values (``if x > 0``, ``while``, ``int(x)``, indexing with a
    traced integer) become guards: a call where one fails retraces and adds a variant;
    after ``max_variants`` variants for one signature, ``fun`` runs eagerly (one warning).
    Integer arguments and other non-array leaves are part of the signature, like
    ``static_argnums``/``static_argnames`` (which must be hashable). Called with traced
    values (``grad(jit(f))``), ``fun`` is traced through. ``f.lower(*args).source`` is the
    emitted program; ``f.cache_info()``, ``f.clear_cache()``; at most ``maxsize``
    signatures are kept (oldest dropped first).
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    if fun is None:
        return functools.partial(
            jit,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            max_variants=max_variants,
            maxsize=maxsize,
        )
    return JittedFunction(fun, static_argnums, static_argnames, max_variants, maxsize)
