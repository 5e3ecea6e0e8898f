"""``np.r_``, ``np.c_`` and ``np.array`` of empty lists behave as NumPy's, and r_/c_
differentiate when an item is traced (autograd's test_numpy r_/c_ tests; issue 17)."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import make_vjp
from chainrule.test_util import check_grads

X = onp.array([1.0, -2.0])
A = onp.arange(6.0).reshape(2, 3)

# each builds the same thing from a module: chainrule.numpy (traced x) or numpy (plain)
BUILDS = {
    "r_ two pieces": lambda m, x: m.r_[x, 2 * x],
    "r_ with scalars": lambda m, x: m.r_[x, 3.0, x[0]],
    "r_ with a slice": lambda m, x: m.r_[x, 0:3],
    "r_ 2-D directive": lambda m, x: m.r_["0,2", x, x],
    "r_ trans1d directive": lambda m, x: m.r_["-1,2,0", x, x],
    "c_ two columns": lambda m, x: m.c_[x, 2 * x],
    "c_ matrix and column": lambda m, x: m.c_[A, x],
}


@pytest.mark.parametrize("name", BUILDS)
def test_index_tricks_with_traced_items_match_numpy_and_differentiate(name):
    build = BUILDS[name]
    _, traced_value = make_vjp(lambda x: build(np, x))(X)
    onp.testing.assert_array_equal(traced_value, build(onp, X))
    check_grads(lambda x: np.sum(np.sin(build(np, x))), modes=["fwd", "rev"], order=2)(X)


def test_r_gradient_by_hand():
    vjp, _ = make_vjp(lambda x: np.r_[x, 2 * x, x[0]])(X)
    g = vjp(onp.array([1.0, 10.0, 100.0, 1000.0, 10000.0]))
    onp.testing.assert_array_equal(g, [1.0 + 200.0 + 10000.0, 10.0 + 2000.0])


def test_index_tricks_without_traced_items_are_numpys():
    onp.testing.assert_array_equal(np.r_[1:4, 5], onp.r_[1:4, 5])
    onp.testing.assert_array_equal(np.r_["r", 1:3], onp.r_["r", 1:3])
    columns = onp.ones(2), onp.zeros(2)
    onp.testing.assert_array_equal(np.c_[columns], onp.c_[columns])


def test_an_unsupported_directive_with_traced_items_is_refused():
    with pytest.raises(ValueError, match="directive 'r' is not supported"):
        make_vjp(lambda x: np.r_["r", x, x])(X)


@pytest.mark.parametrize("obj, dtype", [([], None), ([[]], None), ([], int), ((), None)])
def test_array_of_empty_lists_is_numpys(obj, dtype):
    got, expected = np.array(obj, dtype=dtype), onp.array(obj, dtype=dtype)
    assert got.shape == expected.shape and got.dtype == expected.dtype
