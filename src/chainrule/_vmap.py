"""``vmap``: a function mapped over an axis of its arguments (JAX's ``in_axes``/``out_axes``).

First version: the mapped function is called once per example (a slice of every mapped
argument) and the answers are stacked along ``out_axes``. Slicing and stacking are
chainrule.numpy primitives, so ``vmap`` composes with every transform in any order
(``vmap(grad(f))`` gives per-example gradients, ``grad`` of a summed ``vmap`` differentiates
through it), and Python decisions on the data (``if x.sum() > 0``, ``while``) are taken per
example, so results always equal the Python loop's. Batching rules that compute a whole batch
in one call per primitive are not written yet (issue 21); this is the loop they will replace.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from . import numpy as cnp
from ._core.pytree import tree_flatten, tree_unflatten
from ._core.tracer import getval

AxisSpec = Any  # an int, None, or a pytree of them (a prefix of the arguments' structure)


def _broadcast_prefix(spec: AxisSpec, tree: Any, what: str) -> list:
    """One axis (int or None) per leaf of ``tree``: ``spec`` is an int/None for the whole
    tree, or a pytree whose leaves stand for whole subtrees of ``tree`` (JAX's prefix rule)."""
    if spec is None or isinstance(spec, int):
        return [spec] * len(tree_flatten(tree)[0])
    if isinstance(spec, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(spec) != len(tree):
            raise ValueError(
                f"vmap: {what} has {len(spec)} entries but the value it "
                f"describes has {len(tree)}; give one axis per entry."
            )
        return [ax for s, t in zip(spec, tree) for ax in _broadcast_prefix(s, t, what)]
    if isinstance(spec, dict) and isinstance(tree, dict):
        if set(spec) != set(tree):
            raise ValueError(
                f"vmap: {what} has keys {sorted(spec)} but the value it "
                f"describes has keys {sorted(tree)}."
            )
        # tree_flatten orders dict leaves by sorted key; follow the same order
        keys = sorted(tree)
        return [ax for k in keys for ax in _broadcast_prefix(spec[k], tree[k], what)]
    raise ValueError(
        f"vmap: {what} must be an int, None, or a tuple/list/dict of them "
        f"matching the structure of the value; got {spec!r}."
    )


def _normalize_axis(axis: int, ndim: int, what: str) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"vmap: {what} is {axis}, out of range for a value with {ndim} dimension(s)."
        )
    return axis % ndim


def _take(leaf: Any, axis: int, i: int) -> Any:
    return leaf[(slice(None),) * axis + (i,)]


def vmap(
    fun: Callable, in_axes: AxisSpec = 0, out_axes: AxisSpec = 0, axis_size: int | None = None
) -> Callable:
    """``fun`` mapped over an axis of its arguments, stacking its answers.

    ``in_axes``: for each positional argument, the axis mapped over (an int, negative ones
    counting from the end), or None for an argument passed whole to every call; an int or
    None applies to every argument, a tuple gives one entry per argument, and an entry may
    itself be a pytree matching that argument. ``out_axes``: where the mapped axis goes in
    each output (same forms; None for an output that does not depend on the example, which
    is checked). ``axis_size``: the batch size, needed only when no argument is mapped.
    Keyword arguments are mapped over their leading axis.

    >>> import chainrule as cr, chainrule.numpy as np
    >>> per_example = cr.vmap(cr.grad(lambda w, x: np.sum(w * x) ** 2), in_axes=(None, 0))
    >>> per_example(np.ones(2), np.array([[1.0, 2.0], [3.0, 0.0]])).tolist()
    [[6.0, 12.0], [18.0, 0.0]]
    """

    @wraps(fun)
    def mapped(*args: Any, **kwargs: Any) -> Any:
        spec = in_axes
        if isinstance(spec, list):
            spec = tuple(spec)  # JAX reads a list in_axes like a tuple
        if isinstance(spec, tuple) and len(spec) != len(args):
            raise ValueError(
                f"vmap: in_axes has {len(spec)} entries but the function "
                f"was called with {len(args)} positional argument(s)."
            )
        # keyword arguments are mapped over their leading axis (as JAX does)
        leaves, treedef = tree_flatten((args, kwargs))
        axes = _broadcast_prefix(spec, args, "in_axes") + [0] * (
            len(leaves) - len(tree_flatten(args)[0])
        )
        size = axis_size
        normalized = []
        for leaf, ax in zip(leaves, axes):
            if ax is None:
                normalized.append(None)
                continue
            ndim = cnp.ndim(leaf)
            if ndim == 0:
                raise ValueError(
                    f"vmap: in_axes maps axis {ax} of a scalar argument; give "
                    f"None for arguments that are not mapped."
                )
            ax = _normalize_axis(ax, ndim, "an in_axes entry")
            n = cnp.shape(leaf)[ax]
            if size is None:
                size = n
            elif n != size:
                raise ValueError(
                    f"vmap: mapped arguments disagree on the batch size: "
                    f"{size} and {n} (axis {ax} of an argument of shape "
                    f"{cnp.shape(leaf)})."
                )
            normalized.append(ax)
        if size is None:
            raise ValueError(
                "vmap: no argument is mapped (every in_axes entry is None); "
                "give axis_size to say how many times to call the function."
            )
        answers = []
        for i in range(size):
            sliced = [
                leaf if ax is None else _take(leaf, ax, i) for leaf, ax in zip(leaves, normalized)
            ]
            call_args, call_kwargs = tree_unflatten(treedef, sliced)
            answers.append(fun(*call_args, **call_kwargs))
        return _stack_answers(answers, out_axes, size)

    return mapped


def _stack_answers(answers: list, out_axes: AxisSpec, size: int) -> Any:
    if size == 0:
        raise ValueError(
            "vmap: the batch size is 0, so the function was never called and "
            "the shape of its answer is unknown."
        )
    flat = [tree_flatten(a) for a in answers]
    treedef = flat[0][1]
    for _, other in flat[1:]:
        if other != treedef:
            raise ValueError(
                f"vmap: the function answered with different structures for "
                f"different examples ({treedef!r} and {other!r})."
            )
    out_spec = out_axes
    if isinstance(out_spec, list) and not isinstance(answers[0], list):
        out_spec = tuple(out_spec)
    axes = _broadcast_prefix(out_spec, answers[0], "out_axes")
    stacked = []
    for j, ax in enumerate(axes):
        column = [leaves[j] for leaves, _ in flat]
        if ax is None:
            first = cnp.asarray(getval(column[0]))
            if any(not cnp.array_equal(first, getval(c)) for c in column[1:]):
                raise ValueError(
                    "vmap: out_axes is None for an output that differs between "
                    "examples; give it an axis to stack along."
                )
            stacked.append(column[0])
            continue
        ax = _normalize_axis(ax, cnp.ndim(column[0]) + 1, "an out_axes entry")
        stacked.append(cnp.stack(column, axis=ax))
    return tree_unflatten(treedef, stacked)
