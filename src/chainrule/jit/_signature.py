"""The signature of a call: what a jitted function's cache is keyed by, and its inputs.

A leaf of the arguments is either an *input* of the program (an array of numbers or
booleans, a float or complex scalar: its type, shape, dtype and strides are in the key,
its value is not) or *static* (its type and value are in the key): Python ints, bools and
strings, NumPy integer and boolean scalars, None, functions, types, dtypes and enum
members, and whatever ``static_argnums``/``static_argnames`` name. Any other object is
refused with an error that names the fix (a pytree, a dataclass, or ``static_argnums``):
its attributes may change between calls without changing its identity, and the program
would answer for the old ones.

``walk`` computes the key and the inputs in one pass on every call; ``tree_flatten``
(which the trace uses) takes the leaves in the same order.
"""

from __future__ import annotations

import enum
import inspect
import struct
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.pytree import LEAF, _sorted_keys, tree_flatten
from ._staging import StagingError

# array kinds that are inputs of the program: floats and complex numbers, and integers
# and booleans (indices and masks), which are staged as masks are (see
# ``_staging.staged_as_mask``): read by the calls that use them on each call, guarded by
# value where the function decides on them (a shape, a Python branch, a boolean index)
_STAGED_KINDS = frozenset("fciub")
STAGED_SCALARS = (float, complex, np.float64, np.float32, np.float16, np.complex64,
                  np.complex128)
# leaves that are static without being declared so: values, or objects that stand for
# code or types rather than for data that changes
_PLAIN_STATIC = (bool, int, str, bytes, type(None), type(Ellipsis), slice, np.dtype, type,
                 enum.Enum, types.FunctionType, types.BuiltinFunctionType, np.ufunc,
                 np.integer, np.bool_, np.str_, np.bytes_)
_RANDOM = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)


def leaf_key(leaf: Any) -> tuple:
    t = type(leaf)
    if t is np.ndarray:
        if leaf.dtype.kind in _STAGED_KINDS:
            return (t, leaf.shape, leaf.dtype, leaf.strides)
        return ("static", t, (leaf.shape, leaf.dtype.str, leaf.tobytes()))
    if t in STAGED_SCALARS:
        return (t,)
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype") and not isinstance(leaf, np.generic):
        return (t, tuple(leaf.shape), leaf.dtype)  # Dask, CuPy: their type is in the key
    if not isinstance(leaf, _PLAIN_STATIC):
        raise StagingError(_refusal(leaf))
    try:
        return ("static", static_key(leaf))
    except TypeError:
        raise StagingError(
            f"chainrule.jit cannot take an argument leaf of type {t.__name__}: it is neither "
            f"an array nor a hashable value that could be a static part of the signature."
        ) from None


def _refusal(leaf: Any) -> str:
    name = type(leaf).__name__
    if isinstance(leaf, _RANDOM):
        return (
            f"chainrule.jit cannot take a {name} as an argument: the program would draw "
            f"the same numbers on every call. Draw them outside the function and pass "
            f"them as arguments, or mark the argument static (static_argnums, "
            f"static_argnames): jit then runs the function eagerly, as it does for any "
            f"function that draws random numbers."
        )
    return (
        f"chainrule.jit cannot take an argument of type {name}: it is neither an array, "
        f"a number nor a container of them, and its attributes could change between "
        f"calls without jit seeing it. Make its class a dataclass or register it with "
        f"chainrule.register_pytree_node, so that its arrays become inputs of the "
        f"program; or, if it never changes, mark it static (static_argnums, "
        f"static_argnames; for a method decorated with @jit, self is argument 0): it is "
        f"then part of the signature by type, == and hash."
    )


_DOUBLE = struct.Struct("<d")


def static_key(value: Any) -> Any:
    """What identifies a static value in the cache key: its type and value, a float by
    its bits. (``==`` alone would make ``1`` and ``True``, ``0.0`` and ``-0.0`` one key,
    and a nan never equal to itself.) Raises TypeError for an unhashable value."""
    t = type(value)
    if t is float:
        return t, _DOUBLE.pack(value)
    if t is complex:
        return t, _DOUBLE.pack(value.real), _DOUBLE.pack(value.imag)
    if t is tuple:
        return t, tuple(map(static_key, value))
    if t is frozenset:
        return t, frozenset(map(static_key, value))
    if isinstance(value, np.generic):
        return t, value.tobytes()
    hash(value)
    return t, value


def is_traced(leaf: Any) -> bool:
    """Whether a leaf is an input of the program (else its value is in the signature)."""
    return leaf_key(leaf)[0] != "static"


def walk(tree: Any, tokens: list, dyn: list) -> None:
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
        if t is np.ndarray and x.dtype.kind in _STAGED_KINDS:
            tokens += ((t, x.shape, x.dtype, x.strides),)
            dyn += (x,)
        elif t in STAGED_SCALARS:
            tokens += (t,)
            dyn += (x,)
        elif t is int or t is bool or t is str:
            tokens += (("static", t, x),)
        elif x is None:
            tokens += (None,)
        elif t is tuple or t is list or t is dict:
            walk(x, tokens, dyn)
        else:
            leaves, treedef = tree_flatten(x)
            if treedef is not LEAF:
                tokens += (treedef,)
            for leaf in leaves:
                key = leaf_key(leaf)
                tokens += (key,)
                if key[0] != "static":
                    dyn += (leaf,)


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_BY_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def static_parameters(fun: Callable, argnums: frozenset[int], argnames: frozenset[str],
                      name: str) -> tuple[frozenset[int], frozenset[str], int]:
    """``static_argnums`` and ``static_argnames`` checked against ``fun``'s parameters and
    completed from each other (as in JAX: a parameter that can be given by position or by
    keyword is static given either way), and how many parameters ``fun`` takes by
    position (0 where it takes ``*args`` or has no signature Python can read: then the
    numbers are not checked, and a negative one counts from the end of each call's
    arguments). A number or a name that no argument could be passed as raises a
    ValueError naming it and the fix: silently ignored, it would leave the argument it
    was meant for traced, or refused as an object. An argument a call leaves to its
    default is not an argument of that call: nothing is static then (``fun`` reads its
    default as eagerly)."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return argnums, argnames, 0
    kinds = {p.kind for p in params}
    positional = [p for p in params if p.kind in _POSITIONAL]
    n = 0 if inspect.Parameter.VAR_POSITIONAL in kinds else len(positional)
    listed = ", ".join(p.name for p in positional) or "none"
    numbers = set()
    names = set(argnames)
    for i in sorted(argnums):
        if n and not -n <= i < n:
            raise ValueError(
                f"chainrule.jit: static_argnums names argument {i}, but {name} takes "
                f"{n} argument{'s' if n != 1 else ''} by position ({listed}): count them "
                f"from 0 (a negative number from the end), or name a keyword-only "
                f"parameter in static_argnames.")
        if n:
            i %= n
            if positional[i].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
                names.add(positional[i].name)  # (static when given by keyword too)
        numbers.add(i)
    keyword_any = inspect.Parameter.VAR_KEYWORD in kinds
    by_keyword = {p.name for p in params if p.kind in _BY_KEYWORD}
    for key in sorted(argnames):
        if key in by_keyword:
            at = next((k for k, p in enumerate(positional) if p.name == key), None)
            if at is not None:
                numbers.add(at)  # (static when given by position too)
        elif not keyword_any:
            only = any(p.name == key for p in positional)
            raise ValueError(
                f"chainrule.jit: static_argnames names {key!r}, but {name} "
                + (f"takes {key!r} by position only: name its place in static_argnums."
                   if only else
                   f"has no parameter of that name (its parameters: "
                   f"{', '.join(p.name for p in params) or 'none'}): name one of them."))
    return frozenset(numbers), frozenset(names), n


def array_defaults(fun: Callable) -> tuple[tuple[str, int | None], ...]:
    """The parameters of a Python function (not a wrapper's: its own ``__defaults__``)
    that can be given by keyword and default to a NumPy array, with their positions
    (None for keyword-only ones). Eagerly the function reads such an array's contents at
    each call; ``with_array_defaults`` gives it to the program as an argument, so that
    the program does too."""
    if not isinstance(fun, types.FunctionType):
        return ()
    code = fun.__code__
    n_positional = code.co_argcount
    names = code.co_varnames[:n_positional + code.co_kwonlyargcount]
    return tuple((name, k if k < n_positional else None) for k, name in enumerate(names)
                 if k >= code.co_posonlyargcount
                 and type(_default_of(fun, name, k, n_positional)) is np.ndarray)


def _default_of(fun: types.FunctionType, name: str, k: int, n_positional: int) -> Any:
    """The current default of parameter ``name`` (number ``k``), or None."""
    if k >= n_positional:
        return (fun.__kwdefaults__ or {}).get(name)
    defaults = fun.__defaults__ or ()
    first = n_positional - len(defaults)  # (the defaults are the last positional ones)
    return defaults[k - first] if k >= first else None


def with_array_defaults(fun: types.FunctionType, params: tuple, args: tuple,
                        kwargs: dict) -> dict:
    """``kwargs`` with the array defaults (``array_defaults``) the call leaves out given
    by keyword: the arrays ``fun`` would read now (its ``__defaults__`` may have been
    replaced since)."""
    n_positional = fun.__code__.co_argcount
    filled = None
    for name, position in params:
        if name in kwargs or (position is not None and position < len(args)):
            continue
        k = position if position is not None else fun.__code__.co_varnames.index(name)
        value = _default_of(fun, name, k, n_positional)
        if type(value) is np.ndarray:
            if filled is None:
                filled = dict(kwargs)
            filled[name] = value
    return kwargs if filled is None else filled
