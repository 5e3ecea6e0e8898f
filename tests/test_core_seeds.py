"""The seed tutorials' worked examples, with their published numbers."""

import math

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import deriv, elementwise_grad, grad, jvp, make_jvp, value_and_grad
from chainrule.extend import defjvp, defvjp, primitive
from chainrule.test_util import check_grads


@pytest.mark.parametrize("x, y", [(2.0, 5.0), (0.5, -1.0), (3.0, 0.25)])
def test_log_plus_product_plus_sin(x, y):
    f = lambda x, y: np.log(x) + x * y + np.sin(y)
    gx, gy = grad(f, argnum=(0, 1))(x, y)
    assert gx == pytest.approx(1 / x + y, rel=1e-14)
    assert gy == pytest.approx(x + math.cos(y), rel=1e-14)


def test_e_equals_a_plus_b_times_b_plus_1():
    e = lambda a, b: (a + b) * (b + 1)
    value, (de_da, de_db) = value_and_grad(e, argnum=(0, 1))(2.0, 3.0)
    assert (value, de_da, de_db) == (20.0, 4.0, 9.0)


def test_x_plus_3_times_x():
    f = lambda x: (x + 3) * x
    assert value_and_grad(f)(5.0) == (40.0, 13.0)


def test_baydin_example_reverse_and_forward():
    f = lambda x1, x2: np.log(x1) + x1 * x2 - np.sin(x2)
    assert round(float(f(2.0, 5.0)), 3) == 11.652
    dx1, dx2 = grad(f, argnum=(0, 1))(2.0, 5.0)
    assert dx1 == pytest.approx(5.5, rel=1e-14)
    assert dx2 == pytest.approx(2 - math.cos(5.0), rel=1e-14)
    assert dx2 == pytest.approx(1.7163378145367738, rel=1e-14)
    # forward mode: one pass with the tangent (1, 0) gives dy/dx1 alone
    y, ydot = jvp(f, (2.0, 5.0), (1.0, 0.0))
    assert y == pytest.approx(11.652071455223084) and ydot == pytest.approx(5.5)


def test_exp_2x1_plus_x1_x2_squared_plus_cos_x2():
    f = lambda x1, x2: np.exp(2 * x1) + x1 * x2**2 + np.cos(x2)
    dx1, dx2 = grad(f, argnum=(0, 1))(1.0, 2.0)
    assert dx1 == pytest.approx(2 * math.e**2 + 4, rel=1e-14)
    assert dx2 == pytest.approx(4 - math.sin(2.0), rel=1e-14)


def test_z_equals_x_squared_plus_x_y():
    z = lambda x, y: x * x + x * y
    assert grad(z, argnum=(0, 1))(3.0, 10.0) == (16.0, 3.0)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_power_by_python_loop(n):
    def power(x):
        result = 1.0
        for _ in range(n):
            result = result * x
        return result

    assert grad(power)(1.7) == pytest.approx(n * 1.7 ** (n - 1), rel=1e-13)
    assert deriv(power)(1.7) == pytest.approx(n * 1.7 ** (n - 1), rel=1e-13)


def test_branches_and_recursion():
    def f(x, depth):
        if depth == 0:
            return np.sin(x)
        return f(x, depth - 1) * x if depth % 2 else f(x * 2.0, depth - 1)

    # f(x, 3) = sin(2x) * x * x ... unrolled by hand: depth3 -> f(x,2)*x, depth2 -> f(2x,1),
    # depth1 -> f(2x,0)*(2x) = sin(2x)*2x; so f = sin(2x) * 2x * x = 2 x^2 sin(2x)
    x = 0.7
    expected = 4 * x * math.sin(2 * x) + 4 * x**2 * math.cos(2 * x)
    assert grad(f)(x, 3) == pytest.approx(expected, rel=1e-13)


def test_grad_of_dict_parameters():
    f = lambda p: p["x"] * p["x"]
    assert grad(f)({"x": 3.0}) == {"x": 6.0}


@primitive
def logsumexp(x):
    """A numerically stable log(sum(exp(x)))."""
    m = onp.max(x)
    return m + onp.log(onp.sum(onp.exp(x - m)))


defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans))
defjvp(logsumexp, lambda g, ans, x: np.sum(g * np.exp(x - ans)))


def test_custom_logsumexp_primitive():
    x = onp.array([1.0, 2.0, 1000.0])  # the naive formula overflows here
    assert logsumexp(x) == pytest.approx(1000.0)
    softmax = onp.exp(x - logsumexp(x))
    onp.testing.assert_allclose(grad(logsumexp)(x), softmax, rtol=1e-12)
    check_grads(logsumexp, modes=["fwd", "rev"], order=2)(onp.array([0.3, -1.2, 2.0]))


def test_fourth_derivative_of_tanh():
    x = onp.linspace(-2, 2, 9)
    d4 = elementwise_grad(elementwise_grad(elementwise_grad(elementwise_grad(np.tanh))))
    t = onp.tanh(x)
    s = 1 - t**2  # tanh' = sech^2
    onp.testing.assert_allclose(d4(x), 16 * t * s**2 - 8 * t**3 * s, rtol=1e-12, atol=1e-14)
    # forward mode four times gives the same
    fwd = np.tanh
    for _ in range(4):
        fwd = (lambda f: lambda x: make_jvp(f)(x)(onp.ones_like(x))[1])(fwd)
    onp.testing.assert_allclose(fwd(x), 16 * t * s**2 - 8 * t**3 * s, rtol=1e-12, atol=1e-14)
