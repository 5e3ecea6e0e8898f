"""The issue-16 forms written as users write them (operators on a float, ``x ** x``,
``2.0 ** x``, constants on either side), to second order and through ``deriv``: a Python
float gets the derivative its numpy.float64 and its one-element array get, bit for bit and
with the same warnings. tests/test_scalar_edges.py does the same over every spec case."""

from __future__ import annotations

import warnings

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import deriv, grad, jvp

EDGES = [0.0, -0.0, 1.0, -1.0, onp.inf, -onp.inf, onp.nan, 1e308, -1e308, 1e-308, -1e-308,
         -4.0, 0.5, -0.5, 2.0, 1e200]

UNARY = {
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
    "arcsin": np.arcsin, "arccos": np.arccos, "arctanh": np.arctanh, "arccosh": np.arccosh,
    "reciprocal": np.reciprocal, "tan": np.tan, "exp": np.exp, "sin": np.sin,
    "x ** 0.5": lambda x: x ** 0.5, "x ** 1.5": lambda x: x ** 1.5,
    "x ** 3.0": lambda x: x ** 3.0, "x ** -1.0": lambda x: x ** -1.0,
    "power(x, 0.5)": lambda x: np.power(x, 0.5), "x ** x": lambda x: x ** x,
    "2.0 ** x": lambda x: 2.0 ** x, "mod(1, x)": lambda x: np.mod(1.0, x),
    "arctan2(1, x)": lambda x: np.arctan2(1.0, x), "arctan2(x, 0)": lambda x: np.arctan2(x, 0.0),
    "1 / x": lambda x: 1.0 / x, "x * x": lambda x: x * x,
}

# NumPy itself differs here between a scalar and an array, so only the Python float and the
# numpy.float64 are compared: x ** 1.5's derivative is 1.5 * x ** 0.5, and NumPy's array
# power with exponent 0.5 is sqrt (sqrt(-0.0) = -0.0, sqrt(-inf) = nan) where its scalar
# power is C's pow (+0.0, inf). chainrule's power on NumPy scalars is the scalar's (so that
# x ** 0.5 traced is x ** 0.5 untraced, issue 32), and so is x ** 0.5's derivative at -inf.
NUMPY_SCALAR_ARRAY_DIFFER = {("x ** 1.5", -0.0), ("x ** 1.5", -onp.inf),
                             ("x ** 0.5", -onp.inf), ("power(x, 0.5)", -onp.inf)}


def _outcome(compute):
    """(bits of the result, sorted warning categories), or the error's type."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = compute()
        except Exception as error:  # noqa: BLE001 - the outcome being compared
            return type(error).__name__
    value = onp.asarray(value, dtype=onp.float64).reshape(-1)[0]
    if onp.isnan(value):
        value = onp.float64(onp.nan)  # NumPy's own scalar and array loops differ in nan's sign bit
    return value.tobytes(), sorted({w.category.__name__ for w in caught})


def _three_ways(derivative):
    """The derivative at a Python float, a numpy.float64 and a shape-(1,) array."""
    return (derivative(lambda x: x, float), derivative(onp.float64, onp.float64),
            derivative(lambda x: onp.array([x]), lambda x: onp.array([x])))


@pytest.mark.parametrize("name", UNARY)
def test_python_float_derivative_equals_numpy_scalar_and_array(name):
    fun = UNARY[name]
    for x in EDGES:
        def by_grad(make, _, x=x):
            return _outcome(lambda: grad(lambda v: np.sum(fun(v)))(make(x)))

        def by_jvp(make, make_tangent, x=x):
            return _outcome(lambda: jvp(fun, (make(x),), (make_tangent(1.0),))[1])

        def by_second_order(make, _, x=x):
            return _outcome(lambda: grad(lambda v: np.sum(grad(lambda u: np.sum(fun(u)))(v)))(
                make(x)))

        for how in (by_grad, by_jvp, by_second_order):
            as_float, as_scalar, as_array = _three_ways(how)
            assert as_float == as_scalar, (name, x, how.__name__)
            if (name, x) not in NUMPY_SCALAR_ARRAY_DIFFER:
                assert as_scalar == as_array, (name, x, how.__name__)


@pytest.mark.parametrize("fun, x, want", [
    (np.log, 0.0, onp.inf),                          # was ZeroDivisionError
    (lambda x: x ** 3.0, 1e200, onp.inf),            # was OverflowError
    (lambda x: x ** 0.5, -4.0, onp.nan),             # was 1.53e-17, silently
    (lambda x: x ** 1.5, -4.0, onp.nan),
    (lambda x: np.power(x, 0.5), -4.0, onp.nan),
    (np.arcsin, 1.0, onp.inf),
    (np.arctanh, -1.0, onp.inf),
])
def test_issue_examples_give_numpys_value_with_its_warning(fun, x, want):
    for derivative in (grad(fun), deriv(fun), lambda v: jvp(fun, (v,), (1.0,))[1]):
        with pytest.warns(RuntimeWarning):
            got = derivative(x)
        onp.testing.assert_array_equal(got, want)


def test_second_order_at_a_pole():
    # d2/dx2 log x = -1/x**2: -inf at 0, as for numpy.float64
    with pytest.warns(RuntimeWarning):
        assert grad(grad(np.log))(0.0) == -onp.inf


def test_gradient_type_is_unchanged():
    # as in autograd: the gradient at a Python float is a numpy.float64
    assert type(grad(np.sin)(2.0)) is onp.float64
    assert grad(np.sin)(2.0) == onp.cos(2.0)


def test_a_traced_values_shape_ndim_and_size_are_numpys():
    # (read from the value's own attributes where it has them: a 0-d value's shape is (),
    # which is falsy, and must not be taken for a missing one)
    import chainrule
    import chainrule.numpy as cnp

    seen = []

    def f(x):
        y = cnp.sum(x) if onp.ndim(x) else x
        seen.append((x.shape, x.ndim, x.size, y.shape, y.ndim, y.size))
        return y * y

    for value in (onp.ones((2, 3)), onp.float64(2.0), 2.0, onp.array(-0.0), onp.ones(0)):
        seen.clear()
        chainrule.grad(f)(value)
        want = onp.asarray(value)
        assert seen == [(want.shape, want.ndim, want.size, (), 0, 1)], (value, seen)
    seen.clear()
    chainrule.grad(chainrule.grad(f))(3.0)  # boxes of boxes
    assert seen == [((), 0, 1, (), 0, 1)]
