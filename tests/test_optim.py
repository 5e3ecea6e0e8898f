"""chainrule.optim: SGD (momentum) and Adam reach known minima and match the update formulas."""

import numpy as np
import pytest

import chainrule.numpy as cnp
from chainrule import Tensor, optim

TARGET = np.array([1.0, -2.0, 0.5])
SCALES = np.array([1.0, 3.0, 0.5])


def quadratic(w):
    return (SCALES * (w - TARGET) ** 2).sum()


def minimize(opt, w, steps):
    for _ in range(steps):
        opt.zero_grad()
        quadratic(w).backward()
        opt.step()
    return w


def test_sgd_reaches_the_minimum():
    w = Tensor(np.zeros(3))
    minimize(optim.SGD([w], lr=0.1), w, 200)
    np.testing.assert_allclose(w.numpy(), TARGET, atol=1e-8)


def test_sgd_momentum_reaches_the_minimum_and_matches_the_formula():
    w = Tensor(np.zeros(3))
    opt = optim.SGD([w], lr=0.05, momentum=0.9)
    minimize(opt, w, 2)
    # by hand: g0 = -2*S*T at w=0; buf0 = g0; w1 = -lr*g0; buf1 = 0.9*g0 + g1; w2 = w1 - lr*buf1
    g0 = 2 * SCALES * (0 - TARGET)
    w1 = -0.05 * g0
    g1 = 2 * SCALES * (w1 - TARGET)
    np.testing.assert_allclose(w.numpy(), w1 - 0.05 * (0.9 * g0 + g1))
    minimize(opt, w, 400)
    np.testing.assert_allclose(w.numpy(), TARGET, atol=1e-8)


def test_sgd_nesterov_and_weight_decay():
    w = Tensor(np.zeros(3))
    minimize(optim.SGD([w], lr=0.05, momentum=0.5, nesterov=True, weight_decay=0.1), w, 500)
    # the minimum of sum S (w - T)^2 + 0.05 |w|^2 (weight decay adds 0.1 w to the gradient)
    np.testing.assert_allclose(w.numpy(), 2 * SCALES * TARGET / (2 * SCALES + 0.1), atol=1e-8)


def test_adam_reaches_the_minimum_and_first_step_is_lr_sized():
    w = Tensor(np.zeros(3))
    opt = optim.Adam([w], lr=0.1)
    minimize(opt, w, 1)
    # Adam's first step is lr * sign(g) (up to eps)
    np.testing.assert_allclose(w.numpy(), 0.1 * np.sign(TARGET), rtol=1e-6)
    minimize(opt, w, 1000)
    np.testing.assert_allclose(w.numpy(), TARGET, atol=1e-4)


def test_adam_least_squares_matches_lstsq():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((20, 3))
    b = a @ np.array([0.5, -1.0, 2.0]) + 0.1 * rng.standard_normal(20)
    w = Tensor(np.zeros(3))
    opt = optim.Adam([w], lr=0.1)
    for _ in range(400):
        opt.zero_grad()
        ((a @ w - b) ** 2).mean().backward()
        opt.step()
    np.testing.assert_allclose(w.numpy(), np.linalg.lstsq(a, b, rcond=None)[0], atol=1e-5)


def test_parameter_groups_and_zero_grad():
    a, b = Tensor(1.0), Tensor(1.0)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    (a * 2 + b * 2).backward()
    opt.step()
    assert (a.item(), b.item()) == pytest.approx((0.8, 0.0))
    assert a.is_leaf and a.requires_grad
    opt.zero_grad(set_to_none=False)
    assert a.grad.item() == 0.0
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_step_does_not_disturb_recorded_graphs():
    w = Tensor(np.array([2.0]))
    y = cnp.sin(w).sum()
    (w * w).sum().backward()
    optim.SGD([w], lr=1.0).step()
    y.backward()  # uses the value w had when y was recorded
    np.testing.assert_allclose(w.grad.numpy(), [4.0 + np.cos(2.0)])


def test_bad_parameters_are_refused():
    with pytest.raises(TypeError, match="leaf Tensors"):
        optim.SGD([Tensor(1.0) * 2], lr=0.1)
    with pytest.raises(TypeError, match="leaf Tensors"):
        optim.Adam([np.zeros(2)])
    with pytest.raises(ValueError, match="empty"):
        optim.Adam([])
