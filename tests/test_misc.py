"""chainrule.misc: optimizers, flatten, fixed points, const_graph, with known answers."""

from __future__ import annotations

from collections import namedtuple

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import deriv, grad, hessian, jacobian
from chainrule.misc import const_graph, flatten, flatten_func
from chainrule.misc.fixed_points import fixed_point
from chainrule.misc.optimizers import adam, rmsprop, sgd
from chainrule.test_util import check_grads


# ----------------------------------------------------------------------------- optimizers
def rosenbrock(x):
    return (1.0 - x[0]) ** 2 + 100.0 * (x[1] - x[0] ** 2) ** 2


def rosenbrock_grad(x):
    # by hand; checked against chainrule's grad in the test below
    return onp.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2),
                      200 * (x[1] - x[0] ** 2)])


def quadratic(params):
    # minimum at w = [1, -2, 3], b = 0.5, value 0
    w, b = params["w"], params["b"]
    return np.sum((w - np.array([1.0, -2.0, 3.0])) ** 2) + 4.0 * (b - 0.5) ** 2


@pytest.mark.parametrize("optimizer, kwargs", [
    (sgd, dict(num_iters=400, step_size=0.1)),
    (rmsprop, dict(num_iters=1000, step_size=0.01)),
    (adam, dict(num_iters=1500, step_size=0.05)),
])
def test_optimizer_minimises_quadratic_pytree(optimizer, kwargs):
    x0 = {"w": onp.zeros(3), "b": 0.0}
    g0 = grad(quadratic)(x0)
    onp.testing.assert_allclose(g0["w"], [-2.0, 4.0, -6.0])
    assert g0["b"] == -4.0

    def quadratic_grad(p, i):  # the same gradient by hand, to keep the test fast
        return {"w": 2 * (p["w"] - onp.array([1.0, -2.0, 3.0])), "b": 8.0 * (p["b"] - 0.5)}

    result = optimizer(quadratic_grad, x0, **kwargs)
    assert set(result) == {"w", "b"}
    onp.testing.assert_allclose(result["w"], [1.0, -2.0, 3.0], atol=2e-2)
    onp.testing.assert_allclose(result["b"], 0.5, atol=2e-2)
    assert onp.shape(result["b"]) == ()


def test_adam_finds_rosenbrock_minimum():
    x0 = onp.array([-1.0, 1.0])
    onp.testing.assert_allclose(grad(rosenbrock)(x0), rosenbrock_grad(x0))
    x = adam(lambda x, i: rosenbrock_grad(x), x0, num_iters=5000, step_size=0.01)
    onp.testing.assert_allclose(x, [1.0, 1.0], atol=1e-3)


def test_sgd_first_steps_by_hand():
    # f(x) = x^2 / 2: g = x. v1 = -(1-m) x0, x1 = x0 + s v1; v2 = m v1 - (1-m) x1 ...
    x0, m, s = 2.0, 0.9, 0.5
    v1 = -(1 - m) * x0
    x1 = x0 + s * v1
    v2 = m * v1 - (1 - m) * x1
    x2 = x1 + s * v2
    out = sgd(lambda x, i: x, onp.array([x0]), num_iters=2, step_size=s, mass=m)
    onp.testing.assert_allclose(out, [x2], rtol=1e-12)


def test_adam_first_step_is_step_size_times_sign():
    # bias correction makes the first Adam step exactly -step_size * g/|g| (up to eps)
    out = adam(lambda x, i: onp.array([3.0, -0.2]), onp.zeros(2), num_iters=1, step_size=0.1)
    onp.testing.assert_allclose(out, [-0.1, 0.1], rtol=1e-6)


def test_rmsprop_first_step_by_hand():
    g, gamma, s = 2.0, 0.9, 0.1
    avg = gamma * 1.0 + (1 - gamma) * g**2
    out = rmsprop(lambda x, i: onp.array([g]), onp.zeros(1), num_iters=1, step_size=s)
    onp.testing.assert_allclose(out, [-s * g / onp.sqrt(avg)], rtol=1e-6)


def test_callback_receives_x_iteration_and_gradient_in_input_structure():
    Params = namedtuple("Params", "a b")
    seen = []

    def grad_fun(p, i):
        return Params(2 * p.a, 2 * p.b)

    def callback(p, i, g):
        seen.append((p, i, g))

    sgd(grad_fun, Params(onp.ones(2), 1.0), callback=callback, num_iters=3)
    assert [i for _, i, _ in seen] == [0, 1, 2]
    for p, _, g in seen:
        assert isinstance(p, Params) and isinstance(g, Params)
        onp.testing.assert_allclose(g.a, 2 * p.a)
        onp.testing.assert_allclose(g.b, 2 * p.b)
    onp.testing.assert_allclose(seen[0][0].a, [1.0, 1.0])
    assert seen[1][0].b < 1.0


def test_grad_gets_iteration_number():
    iterations = []
    sgd(lambda x, i: iterations.append(i) or x, onp.ones(1), num_iters=4)
    assert iterations == [0, 1, 2, 3]


def test_optimizers_take_autograds_positional_arguments():
    # autograd code calls sgd(grad, x0, callback, num_iters, step_size, mass)
    out = sgd(lambda x, i: x - 1.0, onp.zeros(1), None, 300, 0.5, 0.5)
    onp.testing.assert_allclose(out, [1.0], atol=1e-6)


def test_optimizer_keeps_float32():
    out = adam(lambda x, i: x, onp.ones(2, dtype=onp.float32), num_iters=2)
    assert out.dtype == onp.float32


# ----------------------------------------------------------------------------- flatten
def test_flatten_round_trip_nested_containers():
    value = {"a": onp.arange(6.0).reshape(2, 3), "b": (2.5, [onp.array([7.0, 8.0])])}
    flat, unflatten = flatten(value)
    onp.testing.assert_array_equal(flat, [0, 1, 2, 3, 4, 5, 2.5, 7, 8])
    back = unflatten(flat)
    onp.testing.assert_array_equal(back["a"], value["a"])
    assert back["b"][0] == 2.5 and onp.ndim(back["b"][0]) == 0
    assert isinstance(back["b"], tuple) and isinstance(back["b"][1], list)
    onp.testing.assert_array_equal(back["b"][1][0], [7.0, 8.0])


def test_flatten_is_differentiable_both_ways():
    value = {"w": onp.array([[1.0, 2.0], [3.0, 4.0]]), "b": 0.5}
    flat, unflatten = flatten(value)

    def loss(v):
        p = unflatten(v)
        return np.sum(p["w"] ** 2) * p["b"]

    # keys in sorted order, as in autograd: b, then w
    onp.testing.assert_allclose(grad(loss)(flat), [30.0, 1.0, 2.0, 3.0, 4.0])
    g = grad(lambda p: np.sum(flatten(p)[0] ** 3))(value)
    onp.testing.assert_allclose(g["w"], 3 * value["w"] ** 2)
    onp.testing.assert_allclose(g["b"], 0.75)


def test_flatten_empty_and_wrong_length():
    flat, unflatten = flatten(())
    assert flat.shape == (0,) and unflatten(flat) == ()
    _, unflatten = flatten([onp.ones(3)])
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        unflatten(onp.ones(4))


def test_flatten_func():
    def f(params, scale):
        return scale * (params[0] ** 2 + np.sum(params[1]))

    flat_f, unflatten, flat0 = flatten_func(f, (3.0, onp.ones(2)))
    onp.testing.assert_array_equal(flat0, [3.0, 1.0, 1.0])
    assert flat_f(flat0, 2.0) == 2.0 * (9.0 + 2.0)
    onp.testing.assert_allclose(grad(flat_f)(flat0, 2.0), [12.0, 2.0, 2.0])


# ----------------------------------------------------------------------------- fixed points
def newton_sqrt_iter(a):
    return lambda x: 0.5 * (x + a / x)


def distance(x, y):
    return np.abs(x - y)


def sqrt_fp(a):
    return fixed_point(newton_sqrt_iter, a, 1.0, distance, 1e-12)


@pytest.mark.parametrize("a", [2.0, 9.0, 0.3])
def test_fixed_point_sqrt_and_derivatives(a):
    assert abs(sqrt_fp(a) - onp.sqrt(a)) < 1e-12
    exact = 1.0 / (2.0 * onp.sqrt(a))
    assert abs(grad(sqrt_fp)(a) - exact) < 1e-10
    assert abs(deriv(sqrt_fp)(a) - exact) < 1e-10
    second = -0.25 * a ** -1.5
    assert abs(grad(grad(sqrt_fp))(a) - second) < 1e-8
    assert abs(deriv(grad(sqrt_fp))(a) - second) < 1e-8


def test_fixed_point_check_grads_vector():
    # x = tanh(W x + a): a contraction because |W| is small; gradient via the implicit
    # function theorem against finite differences, both modes, second order
    W = 0.3 * onp.array([[0.5, -0.2, 0.1], [0.3, 0.4, -0.6], [-0.1, 0.2, 0.3]])
    f = lambda a: lambda x: np.tanh(np.dot(W, x) + a)
    dist = lambda x, y: np.sqrt(np.sum((x - y) ** 2))
    solve = lambda a: fixed_point(f, a, onp.zeros(3), dist, 1e-13)
    a = onp.array([0.2, -0.5, 0.9])
    x = solve(a)
    onp.testing.assert_allclose(x, onp.tanh(W @ x + a), atol=1e-12)
    check_grads(solve, modes=("fwd", "rev"), order=2)(a)
    # dx/da = (I - D W)^{-1} D with D = diag(1 - x^2)
    D = onp.diag(1 - x**2)
    onp.testing.assert_allclose(jacobian(solve)(a), onp.linalg.solve(onp.eye(3) - D @ W, D),
                                atol=1e-10)


def test_fixed_point_of_container_parameters():
    # x* = sqrt(a b): d/da = b / (2 x*), d/db = a / (2 x*)
    f = lambda p: lambda x: 0.5 * (x + p["a"] * p["b"][0] / x)
    solve = lambda p: fixed_point(f, p, 1.0, distance, 1e-12)
    p = {"a": 2.0, "b": onp.array([8.0])}
    assert solve(p) == pytest.approx(4.0)
    g = grad(solve)(p)
    assert g["a"] == pytest.approx(1.0) and g["b"] == pytest.approx([0.25])
    check_grads(solve, modes=("fwd", "rev"), order=2)(p)


def test_fixed_point_max_iter():
    with pytest.raises(RuntimeError, match="did not converge"):
        fixed_point(lambda a: lambda x: x + a, 1.0, 0.0, distance, 1e-8, max_iter=5)


# ----------------------------------------------------------------------------- const_graph
def test_const_graph_replays_and_differentiates():
    calls = []

    def f(x, y):
        calls.append(1)  # Python body runs only while tracing
        return np.sin(x) * y + x ** 2

    cached = const_graph(f)
    assert cached(1.0, 2.0) == pytest.approx(onp.sin(1.0) * 2.0 + 1.0)
    assert cached(0.5, 3.0) == pytest.approx(onp.sin(0.5) * 3.0 + 0.25)
    assert len(calls) == 1
    g = grad(cached, 1)(0.5, 3.0)
    assert g == pytest.approx(onp.sin(0.5))
    assert hessian(lambda x: cached(x, 3.0))(0.7) == pytest.approx(-3 * onp.sin(0.7) + 2)
    assert len(calls) == 1


def test_const_graph_freezes_control_flow_and_bound_args():
    def f(scale, x):
        return np.where(x > 0, scale * x, x) if np.sum(x) > 0 else -x

    cached = const_graph(f, 10.0)
    onp.testing.assert_allclose(cached(onp.array([1.0, -1.0, 2.0])), [10.0, -1.0, 20.0])
    # the branch and the where-mask were recorded on the first call: documented behaviour
    onp.testing.assert_allclose(cached(onp.array([-1.0, 1.0, -2.0])), [-10.0, 1.0, -20.0])


def test_const_graph_errors():
    with pytest.raises(ValueError, match="does not depend"):
        const_graph(lambda x: 3.0)(1.0)
    cached = const_graph(lambda x: x * 2.0)
    cached(1.0)
    with pytest.raises(ValueError, match="structure"):
        cached(1.0, 2.0)
