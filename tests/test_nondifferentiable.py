"""Non-differentiable NumPy functions accept traced values and return NumPy's own result.

Every name in NONDIFFERENTIABLE is called on traced arguments inside ``grad`` (reverse
mode) and ``jvp`` (forward mode); its result must equal NumPy's on the raw values and
must not be traced. A product such as ``x * sign(x)`` then differentiates with the
non-differentiable factor held constant.
"""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, hessian, jvp
from chainrule._core.tracer import isbox
from chainrule.numpy.numpy_wrapper import NONDIFFERENTIABLE, _names

X = onp.array([[-1.7, 0.4, 2.5], [0.5, -0.2, 1.1]])
Y = onp.array([[0.5, 0.4, -2.0], [1.3, 0.25, 1.1]])
SORTED = onp.array([-1.0, 0.0, 0.45, 2.0])

ONE = ["sign", "floor", "ceil", "round", "around", "trunc", "rint", "fix", "argmax", "argmin",
       "nanargmax", "nanargmin", "argsort", "nonzero", "flatnonzero", "argwhere",
       "count_nonzero", "unique", "logical_not", "isfinite", "isinf", "isnan", "isneginf",
       "isposinf", "isreal", "iscomplex", "signbit", "shape", "ndim", "size", "result_type",
       "iscomplexobj", "isrealobj", "zeros_like", "ones_like", "any", "all"]
TWO = ["floor_divide", "isclose", "allclose", "array_equal", "array_equiv", "greater",
       "greater_equal", "less", "less_equal", "equal", "not_equal", "logical_and",
       "logical_or", "logical_xor"]

# name -> the arguments of a call, built from traced x and y
CALLS = {
    **{name: lambda x, y: (x,) for name in ONE},
    **{name: lambda x, y: (x, y) for name in TWO},
    "heaviside": lambda x, y: (x, y),
    "argpartition": lambda x, y: (x, 1),
    "searchsorted": lambda x, y: (SORTED, x),
    "digitize": lambda x, y: (x, SORTED),
    "empty_like": lambda x, y: (x,),
    "histogram": lambda x, y: (x, 3),
    "isin": lambda x, y: (x, y),
    "eye": lambda x, y: (3,),
    "identity": lambda x, y: (2,),
    "lexsort": lambda x, y: ((x[0], y[0]),),  # the keys arrive inside a tuple
    # bitwise functions take masks (x & y of floats is an error in NumPy too)
    "bitwise_and": lambda x, y: (x > 0, y > 0),
    "bitwise_or": lambda x, y: (x > 0, y > 0),
    "bitwise_xor": lambda x, y: (x > 0, y > 0),
    "invert": lambda x, y: (x > 0,),
}

NAMES = _names(NONDIFFERENTIABLE)


def test_every_name_has_a_call():
    assert sorted(set(NAMES) - set(CALLS)) == []


def _assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
        return
    assert not isbox(got)
    onp.testing.assert_array_equal(onp.shape(got), onp.shape(want))
    assert onp.result_type(got) == onp.result_type(want)


def _assert_equal(got, want):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _assert_equal(g, w)
    else:
        onp.testing.assert_array_equal(got, want)


def _call_traced(name, mode):
    """Call ``name`` on traced x and y inside a transform; return what it gave."""
    seen = {}

    def f(x, y):
        seen["out"] = getattr(np, name)(*CALLS[name](x, y))
        return np.sum(x * y)

    if mode == "rev":
        grad(f, (0, 1))(X, Y)
    else:
        jvp(f, (X, Y), (onp.ones_like(X), onp.ones_like(Y)))
    return seen["out"]



@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize("name", NAMES)
def test_primal_on_traced_input(name, mode):
    got = _call_traced(name, mode)
    want = getattr(onp, name)(*CALLS[name](X, Y))
    _assert_same(got, want)
    if name != "empty_like":
        _assert_equal(got, want)


STEPS = ["sign", "floor", "ceil", "round", "around", "trunc", "rint", "fix"]


@pytest.mark.filterwarnings("ignore:Output seems independent")  # the Hessian is zero
@pytest.mark.parametrize("name", STEPS)
def test_product_with_piecewise_constant(name):
    """d/dx sum(x * s(x)) = s(x) for a piecewise-constant s, in both modes and at order 2."""
    step = getattr(np, name)
    f = lambda x: np.sum(x * step(x))
    want = getattr(onp, name)(X)
    onp.testing.assert_allclose(grad(f)(X), want)
    _, tangent = jvp(f, (X,), (onp.ones_like(X),))
    onp.testing.assert_allclose(tangent, onp.sum(want))
    onp.testing.assert_allclose(hessian(f)(X), onp.zeros(X.shape * 2))


def test_comparison_mask_in_where():
    f = lambda x: np.sum(np.where(np.greater(x, 0.3), x ** 2, -x))
    onp.testing.assert_allclose(grad(f)(X), onp.where(X > 0.3, 2 * X, -1.0))


def test_heaviside_times_x():
    f = lambda x: np.sum(np.heaviside(x, 0.5) * x ** 2)
    onp.testing.assert_allclose(grad(f)(X), onp.heaviside(X, 0.5) * 2 * X)
