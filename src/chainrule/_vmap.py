"""``vmap``: a function mapped over an axis of its arguments (JAX's ``in_axes``/``out_axes``).

The function is called once, on BatchedArrays (``chainrule.numpy.batched``): each stands
for one example and holds the whole batch, and each primitive answers for the whole batch
by its batching rule (or, lacking one, once per example). vmap is a trace like grad's, so it
composes with every transform in any order (``vmap(grad(f))`` gives per-example gradients,
``grad`` of a summed ``vmap`` differentiates through it).

Python decisions on the data (``if x.sum() > 0``, ``while``) are taken for the whole batch
when the examples agree; where they disagree, the call is redone per group of agreeing
examples and the answers are put back in order, so results always equal the Python loop's.
Anything that cannot run batched (converting a batched value to a NumPy array) falls back
to calling the function once per example, with one warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import wraps
from typing import Any

from . import numpy as cnp
from ._core.pytree import tree_flatten, tree_unflatten
from ._core.tracer import live_trace_ids, new_trace_id
from .numpy.batched import BatchedArray, BatchSplit, BatchUnsupported

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

    ``fun`` runs once, each primitive by its batching rule for the whole batch (a primitive
    without one runs once per example, with a ``BatchLoopWarning``). A Python decision on
    the data (``if x.sum() > 0``) where the examples disagree reruns ``fun`` per group of
    agreeing examples; code that converts a batched value to a NumPy array makes ``fun``
    run once per example (both with a ``VmapFallbackWarning``). Results equal the loop's.

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
        return _run(fun, leaves, normalized, treedef, size, out_axes, notes)

    notes: set = set()  # the one-time notes this function has given
    return mapped


class VmapFallbackWarning(UserWarning):
    """vmap runs a function per group of examples, or per example, instead of batched."""


def _run(fun, leaves, axes, treedef, size: int, out_axes, notes: set) -> Any:
    """``fun`` on the batch: batched, per group of agreeing examples, or per example."""
    trace_id = new_trace_id()
    live_trace_ids.add(trace_id)
    try:
        batched = [leaf if ax is None else BatchedArray(cnp.moveaxis(leaf, ax, 0), trace_id, size)
                   for leaf, ax in zip(leaves, axes)]
        call_args, call_kwargs = tree_unflatten(treedef, batched)
        answer = fun(*call_args, **call_kwargs)
        return _unbatched(answer, out_axes, size, trace_id)
    except BatchSplit as split:
        if split.trace_id != trace_id:
            raise
        _note(notes, "split", "vmap: the examples took different branches of a Python "
              "decision on their values; the function runs once per group of examples "
              "that agree, and the answers are put back in order.")
        return _per_group(fun, leaves, axes, treedef, split.keys, out_axes, notes)
    except BatchUnsupported as unsupported:
        if unsupported.trace_id != trace_id:
            raise
        _note(notes, "loop", f"vmap: {unsupported.what} cannot run on the whole batch, so "
              f"the function runs once per example.")
        return _per_example(fun, leaves, axes, treedef, size, out_axes)
    finally:
        live_trace_ids.discard(trace_id)


def _note(notes: set, kind: str, text: str) -> None:
    if kind not in notes:
        notes.add(kind)
        warnings.warn(text, VmapFallbackWarning, stacklevel=4)


def _per_group(fun, leaves, axes, treedef, keys: list, out_axes, notes: set) -> Any:
    groups: dict = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    order = [i for members in groups.values() for i in members]
    answers = []
    for members in groups.values():
        index = cnp.asarray(members)
        sub = [leaf if ax is None else cnp.take(leaf, index, axis=ax)
               for leaf, ax in zip(leaves, axes)]
        answers.append(_run(fun, sub, axes, treedef, len(members), out_axes, notes))
    # the groups' answers side by side, then each example back in its place
    flat = [tree_flatten(a) for a in answers]
    out_tree = flat[0][1]
    if any(other != out_tree for _, other in flat[1:]):
        raise ValueError("vmap: the function answered with different structures for "
                         "different examples.")
    out_spec = _out_spec(out_axes, answers[0])
    inverse = cnp.asarray(sorted(range(len(order)), key=order.__getitem__))
    stitched = []
    for j, ax in enumerate(_broadcast_prefix(out_spec, answers[0], "out_axes")):
        column = [leaves_[j] for leaves_, _ in flat]
        if ax is None:
            stitched.append(_same_for_all(column))
            continue
        ax = _normalize_axis(ax, cnp.ndim(column[0]), "an out_axes entry")
        stitched.append(cnp.take(cnp.concatenate(column, axis=ax), inverse, axis=ax))
    return tree_unflatten(out_tree, stitched)


def _per_example(fun, leaves, axes, treedef, size: int, out_axes) -> Any:
    answers = []
    for i in range(size):
        sliced = [leaf if ax is None else _take(leaf, ax, i) for leaf, ax in zip(leaves, axes)]
        call_args, call_kwargs = tree_unflatten(treedef, sliced)
        answers.append(fun(*call_args, **call_kwargs))
    return _stack_answers(answers, out_axes, size)


def _out_spec(out_axes: AxisSpec, answer: Any) -> AxisSpec:
    if isinstance(out_axes, list) and not isinstance(answer, list):
        return tuple(out_axes)
    return out_axes


def _same_for_all(column: list) -> Any:
    # (array_equal is a notrace primitive: under chainrule.jit each answer is a guarded
    # decision, so a later call whose examples differ retraces and raises here too)
    if not all(cnp.array_equal(column[0], c) for c in column[1:]):
        raise ValueError(
            "vmap: out_axes is None for an output that differs between "
            "examples; give it an axis to stack along."
        )
    return column[0]


def _unbatched(answer: Any, out_axes: AxisSpec, size: int, trace_id: int) -> Any:
    """The batched answer as arrays: the batch axis moved to ``out_axes``, answers that do
    not depend on the example repeated along it."""
    leaves, out_tree = tree_flatten(answer)
    axes = _broadcast_prefix(_out_spec(out_axes, answer), answer, "out_axes")
    out = []
    for leaf, ax in zip(leaves, axes):
        mine = type(leaf) is BatchedArray and leaf._trace_id == trace_id
        if ax is None:
            out.append(_same_for_all(list(leaf._value)) if mine else leaf)
            continue
        if not mine:
            leaf = cnp.stack([leaf] * size)
        else:
            leaf = leaf._value
        ax = _normalize_axis(ax, cnp.ndim(leaf), "an out_axes entry")
        out.append(cnp.moveaxis(leaf, 0, ax) if ax else leaf)
    return tree_unflatten(out_tree, out)


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
    axes = _broadcast_prefix(_out_spec(out_axes, answers[0]), answers[0], "out_axes")
    stacked = []
    for j, ax in enumerate(axes):
        column = [leaves[j] for leaves, _ in flat]
        if ax is None:
            stacked.append(_same_for_all(column))
            continue
        ax = _normalize_axis(ax, cnp.ndim(column[0]) + 1, "an out_axes entry")
        stacked.append(cnp.stack(column, axis=ax))
    return tree_unflatten(treedef, stacked)
