"""Joining many traced pieces (stack, concatenate, array, hstack ...) is linear in their
number and right in both modes (issue 16).

Their VJPs used to be called once per piece with every piece as an argument and to
recompute the sizes of all pieces each time: O(M^2) (np.array of 16,000 traced scalars took
254 s). The growth is checked here by counting function calls, not by timing: the
benchmark (benchmarks/scale.py) shows the times.
"""

from __future__ import annotations

import sys

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, jacfwd
from chainrule.test_util import check_grads

JOINS = {
    "stack": lambda ps: np.stack(ps),
    "stack axis 1": lambda ps: np.stack([np.reshape(p, (1,)) for p in ps], axis=1),
    "concatenate": lambda ps: np.concatenate([np.reshape(p, (1,)) for p in ps]),
    "concatenate axis None": lambda ps: np.concatenate([np.reshape(p, (1, 1)) for p in ps],
                                                       axis=None),
    "array": lambda ps: np.array(ps),
    "array nested": lambda ps: np.array([ps[: len(ps) // 2], ps[len(ps) // 2:]]),
    "hstack": lambda ps: np.hstack(ps),
    "vstack": lambda ps: np.vstack(ps),
}


def _joined(join, n):
    def f(x):
        pieces = [x[i] for i in range(n)]
        return np.sum(join(pieces) ** 2 * 0.5)

    return f


@pytest.mark.parametrize("name", JOINS)
def test_joining_traced_pieces_is_differentiated_right(name):
    x = onp.linspace(-1.0, 2.0, 6)
    f = _joined(JOINS[name], 6)
    onp.testing.assert_allclose(grad(f)(x), x, rtol=1e-15)  # d/dx sum(x^2/2) = x
    onp.testing.assert_allclose(jacfwd(f)(x), x, rtol=1e-15)
    check_grads(f, modes=["fwd", "rev"], order=2)(x)


def test_concatenate_axis_none_flattens_as_numpy_and_differentiates():
    a, b = onp.arange(6.0).reshape(2, 3), onp.array([[7.0], [8.0]])
    f = lambda a, b: np.concatenate([a, b], axis=None)
    onp.testing.assert_array_equal(f(a, b), onp.concatenate([a, b], axis=None))
    g = grad(lambda a, b: np.sum(f(a, b) * onp.arange(8.0)), argnum=(0, 1))(a, b)
    onp.testing.assert_array_equal(g[0], onp.arange(6.0).reshape(2, 3))
    onp.testing.assert_array_equal(g[1], [[6.0], [7.0]])
    check_grads(lambda a, b: np.sum(np.sin(f(a, b))), modes=["fwd", "rev"], order=2)(a, b)


def test_concatenate_with_constant_lists_differentiates():
    # (a constant piece given as a list has no shape of its own: the VJP takes NumPy's)
    x = onp.array([[1.0, 3.0], [-2.0, 0.5]])
    f = lambda x: np.concatenate([[[1.0, 2.0]], x, [[4.0, 5.0]]]) * onp.arange(8.0).reshape(4, 2)
    g = grad(lambda x: np.sum(f(x)))(x)
    onp.testing.assert_array_equal(g, onp.arange(2.0, 6.0).reshape(2, 2))
    h = grad(lambda x: np.sum(np.concatenate([x, [[7.0], [8.0]]], axis=-1) ** 2))(x)
    onp.testing.assert_array_equal(h, 2 * x)
    onp.testing.assert_array_equal(jacfwd(lambda x: np.sum(f(x)))(x), g)


def _calls_in_backward_pass(name, n):
    """Function calls (Python and C) made while differentiating the join of n pieces."""
    f = _joined(JOINS[name], n)
    x = onp.linspace(0.1, 1.0, n)
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event in ("call", "c_call")

    sys.setprofile(count)
    try:
        grad(f)(x)
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("name", ["stack", "concatenate", "array", "hstack"])
def test_joining_costs_grow_linearly(name):
    small, large = _calls_in_backward_pass(name, 300), _calls_in_backward_pass(name, 1200)
    assert large / small < 4.5, f"{name}: {small} calls for 300 pieces, {large} for 1200"
