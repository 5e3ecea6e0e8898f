"""Every rule-table spec case under ``vmap`` (batch of 3, in_axes 0, -1 or None varied
from case to case) against the Python loop over the same examples. Each call starts with a
batched run (``batched_runs_first``): by cost, a batch of 3 would run as the loop."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
from chainrule._transforms.vmap import batched_runs_first
from test_rule_specs import CASES

BATCH = 3


def _mappable(a) -> bool:
    return (
        isinstance(a, (onp.ndarray, onp.floating, onp.complexfloating, float))
        and onp.result_type(a).kind in "fc"
    )


def _examples(a, k: int):
    """Example k of a batch around ``a``: small distinct shifts keep it in the case's domain."""
    return a + onp.asarray(0.01 * k, dtype=onp.result_type(a)) if k else a


def _batched(case, which: int):
    """The case's arguments as a batch, and the in_axes for them: 0, -1 or None by turns."""
    args, axes, pos = [], [], 0
    for a in case.args:
        if not _mappable(a):
            args.append(a)
            axes.append(None)
            continue
        choice = (which + pos) % 3
        pos += 1
        stack = onp.stack([_examples(onp.asarray(a), k) for k in range(BATCH)])
        if choice == 1:
            args.append(onp.moveaxis(stack, 0, -1))
            axes.append(-1)
        elif choice == 2 and pos > 1:  # keep at least one argument mapped
            args.append(a)
            axes.append(None)
        else:
            args.append(stack)
            axes.append(0)
    return args, tuple(axes)


def _close(got, want):
    got_leaves, want_leaves = cr.tree_flatten(got)[0], cr.tree_flatten(want)[0]
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        # batched kernels may round single precision differently from one-example ones
        single = onp.result_type(onp.asarray(w)) in (onp.float32, onp.complex64)
        onp.testing.assert_allclose(onp.asarray(g), onp.asarray(w),
                                    rtol=1e-5 if single else 1e-12, atol=1e-6 if single else 0)
        assert onp.shape(g) == onp.shape(w)


SELECTED = [c for c in CASES if any(_mappable(a) for a in c.args)]


@pytest.mark.parametrize("i", range(len(SELECTED)), ids=[c.id for c in SELECTED])
def test_vmap_matches_loop(i):
    case = SELECTED[i]
    args, axes = _batched(case, i)

    def fun(*a):
        return case.fun(*a, **case.kwargs)

    with batched_runs_first():
        got = cr.vmap(fun, in_axes=axes)(*args)
    examples = []
    for k in range(BATCH):
        one = [a if ax is None else onp.take(a, k, axis=ax) for a, ax in zip(args, axes)]
        examples.append(fun(*one))
    want = (
        cr.tree_map(lambda *xs: onp.stack(xs), *examples)
        if not isinstance(examples[0], onp.ndarray)
        else onp.stack(examples)
    )
    _close(got, want)
