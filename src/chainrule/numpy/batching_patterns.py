"""Patterns of batching rules (``defbatch``, ``chainrule.vmap``) for the rule tables of
chainrule.numpy and chainrule.scipy: factories that make a primitive's rule from how it
treats its axes, and the small pieces the written-out rules share. The engine piece they
serve is ``chainrule.numpy.batched``.

A rule ``rule(values, batched, kwargs)`` computes a primitive for a whole batch: the
arguments flagged in ``batched`` hold the batch as their leading axis, and so does every
output. A rule answers ``NotImplemented`` for a call its pattern does not cover (a batched
argument where the pattern expects a constant, say); that call runs once per example.

- elementwise (every ufunc, found by ``batched.batching_rule``; ``batched.elementwise``
  for functions that broadcast like one);
- ``along_axis`` (reductions, scans, sorts, flips, the FFTs; ``over_axes`` for fft2,
  fftn): the axis moves past the batch; ``axis=None`` means all of an example's axes, or
  its flattened values for scans and sorts;
- ``as_is``: NumPy already maps the function over leading axes (linalg, tril, triu);
- ``named_axes``: parameters that name axes of an example (swapaxes, diagonal, trace).
"""

from __future__ import annotations

import numpy as _np

from .batched import axis_parameter, example_ndim, flat_examples


def batch_size(values, batched) -> int:
    return next(_np.shape(v)[0] for v, b in zip(values, batched) if b)


def only_first(batched) -> bool:
    return batched[0] and not any(batched[1:])


def shifted_axis(axis, ndim: int):
    """An example's axis (or tuple of axes) as an axis of the batch."""
    if isinstance(axis, (tuple, list)):
        return tuple(shifted_axis(a, ndim) for a in axis)
    if not -ndim <= axis < ndim:
        raise _np.exceptions.AxisError(axis, ndim)
    return axis % ndim + 1


def as_is(fun, min_ndim: int = 0):
    """The batching rule of a function that needs no change for a batch in its first
    argument (the others the same for every example), given examples of at least
    ``min_ndim`` axes: NumPy maps the linalg functions (inv, det, cholesky, eigh...), tril and
    triu over leading axes by themselves, and interp and asarray work elementwise."""

    def rule(values, batched, kwargs):
        if not only_first(batched) or example_ndim(values[0], True) < min_ndim:
            return NotImplemented
        return fun(*values, **kwargs)

    return rule


def along_axis(fun, when_none: str = "all"):
    """The batching rule of ``fun`` computed along an axis of its first argument.
    ``when_none``: what ``axis=None`` means: ``"all"`` of an example's axes, ``"flat"``
    its flattened values, or ``"loop"`` (not covered)."""
    position, default = axis_parameter(fun) or (None, None)

    def rule(values, batched, kwargs):
        if not only_first(batched) or "prepend" in kwargs or "append" in kwargs:
            return NotImplemented  # (diff's: arrays shaped like an example)
        values, kwargs = list(values), dict(kwargs)
        ndim = example_ndim(values[0], True)
        given = position is not None and len(values) > position
        axis = values[position] if given else kwargs.get("axis", default)
        if axis is None:
            if when_none == "loop":
                return NotImplemented
            if when_none == "flat":
                if kwargs.get("keepdims"):
                    return NotImplemented
                values[0] = flat_examples(values[0])
                axis = 1
            else:
                axis = tuple(range(1, ndim + 1))
        else:
            axis = shifted_axis(axis, ndim)
        if given:
            values[position] = axis
        else:
            kwargs["axis"] = axis
        return fun(*values, **kwargs)

    return rule


def named_axes(fun, *params: tuple[int, str, object]):
    """The batching rule of ``fun`` whose axis parameters ``(position, name, default)``
    are each an axis of an example (swapaxes, moveaxis, diagonal, trace)."""

    def rule(values, batched, kwargs):
        if not only_first(batched):
            return NotImplemented
        values, kwargs = list(values), dict(kwargs)
        ndim = example_ndim(values[0], True)
        for position, name, default in params:
            if len(values) > position:
                values[position] = shifted_axis(values[position], ndim)
            else:
                kwargs[name] = shifted_axis(kwargs.get(name, default), ndim)
        return fun(*values, **kwargs)

    return rule


def over_axes(fun, default):
    """The batching rule of ``fun(a, s=None, axes=default, ...)`` (fft2, fftn and their
    kin): ``axes=None`` is every axis of an example, or the last ``len(s)`` ones."""

    def rule(values, batched, kwargs):
        if not only_first(batched):
            return NotImplemented
        values, kwargs = list(values), dict(kwargs)
        ndim = example_ndim(values[0], True)
        given = len(values) > 2
        axes = values[2] if given else kwargs.get("axes", default)
        s = values[1] if len(values) > 1 else kwargs.get("s")
        if axes is None:
            axes = range(ndim) if s is None else range(ndim - len(s), ndim)
        axes = shifted_axis(tuple(axes), ndim)
        if given:
            values[2] = axes
        else:
            kwargs["axes"] = axes
        return fun(*values, **kwargs)

    return rule
