"""The hot VJP rules hand a cotangent already in its argument's layout on unchanged, and
unbroadcast (sum, reshape, cast) every other: values against hand-derived ones."""

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np


def test_same_layout_binary_and_unary_rules():
    x, y = onp.array([0.5, -1.0, 2.0]), onp.array([3.0, 0.25, -0.5])

    def f(x, y):
        return np.sum(np.tanh(x * y + x) - y / x + np.exp(-x))

    gx, gy = chainrule.grad(f, argnum=(0, 1))(x, y)
    t = 1.0 - onp.tanh(x * y + x) ** 2
    onp.testing.assert_allclose(gx, t * (y + 1.0) + y / x**2 - onp.exp(-x), rtol=1e-13)
    onp.testing.assert_allclose(gy, t * x - 1.0 / x, rtol=1e-13)
    assert gx.dtype == gy.dtype == onp.float64


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
def test_broadcast_operands_are_summed(op):
    x, y = onp.arange(1.0, 4.0).reshape(3, 1), onp.array([0.5, 2.0, -1.5, 4.0])
    fun = getattr(np, op)
    gx, gy = chainrule.grad(lambda x, y: np.sum(fun(x, y)), argnum=(0, 1))(x, y)
    dx = {"add": 1.0, "subtract": 1.0, "multiply": y, "divide": 1.0 / y}[op]
    dy = {"add": 1.0, "subtract": -1.0, "multiply": x, "divide": -x / y**2}[op]
    onp.testing.assert_allclose(gx, onp.broadcast_to(dx, (3, 4)).sum(1, keepdims=True))
    onp.testing.assert_allclose(gy, onp.broadcast_to(dy, (3, 4)).sum(0))
    assert gx.shape == (3, 1) and gy.shape == (4,)


def test_a_number_and_a_zero_d_operand():
    x = onp.array([1.0, 2.0, 4.0])
    s = onp.float64(3.0)
    gx, gs = chainrule.grad(lambda x, s: np.sum((x - s) * (2.0 + x) / s), argnum=(0, 1))(x, s)
    onp.testing.assert_allclose(gx, (2.0 * x + 2.0 - s) / s)
    onp.testing.assert_allclose(gs, onp.sum(-(2.0 + x) / s - (x - s) * (2.0 + x) / s**2))
    assert onp.shape(gs) == ()


def test_other_dtypes_are_cast_back():
    x32 = onp.array([0.5, 1.5], dtype=onp.float32)
    y = onp.array([2.0, -3.0])
    gx, gy = chainrule.grad(lambda x, y: np.sum(np.exp(x) * y + x), argnum=(0, 1))(x32, y)
    assert gx.dtype == onp.float32 and gy.dtype == onp.float64
    onp.testing.assert_allclose(gx, onp.exp(x32.astype(float)) * y + 1.0, rtol=1e-6)
    # a dtype equal to float64 but another object (big-endian) takes the full test
    xb = onp.array([0.5, 1.5], dtype=">f8")
    g = chainrule.grad(lambda x: np.sum(np.tanh(x) * x + x))(xb)
    want = (1.0 - onp.tanh(xb) ** 2) * xb + onp.tanh(xb) + 1.0
    onp.testing.assert_allclose(g, want, rtol=1e-13)


def test_a_complex_cotangent_of_a_real_function_keeps_its_real_part():
    x = onp.array([0.3, -0.7])
    vjp, ans = chainrule.make_vjp(lambda x: np.exp(x) + x * x)(x)
    g = onp.array([1.0 + 2.0j, -1.0j])
    got = vjp(g)
    assert got.dtype == onp.float64
    onp.testing.assert_allclose(got, (g * (onp.exp(x) + 2 * x)).real)


def test_second_order_through_the_rules():
    x = onp.array([0.2, -0.4, 1.1])
    h = chainrule.hessian(lambda x: np.sum(np.tanh(x) * x - x / (1.0 + x * x)))(x)
    t = onp.tanh(x)
    d2 = -2 * t * (1 - t**2) * x + 2 * (1 - t**2) - (2 * x**3 - 6 * x) / (1 + x**2) ** 3
    onp.testing.assert_allclose(h, onp.diag(d2), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (4097,)])
def test_a_full_sums_cotangent_is_the_number_everywhere(shape):
    x = onp.linspace(0.1, 0.9, int(onp.prod(shape))).reshape(shape)
    g = chainrule.grad(lambda x: np.sum(x) * 3.0 + np.sum(x * x))(x)
    onp.testing.assert_allclose(g, 3.0 + 2 * x, rtol=1e-15)
    assert g.shape == shape and g.dtype == onp.float64
    g32 = chainrule.grad(lambda x: np.sum(x))(x.astype(onp.float32))
    assert g32.dtype == onp.float32 and onp.all(g32 == 1.0)
    vjp, _ = chainrule.make_vjp(lambda x: np.sum(x))(x)
    gc = vjp(2.0 - 1.0j)  # a complex cotangent of a real sum: its real part
    assert gc.dtype == onp.float64 and onp.all(gc == 2.0)
