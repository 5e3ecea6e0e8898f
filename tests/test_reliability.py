"""Scale, memory and hostile input: the engine never fails silently."""

import gc
import weakref

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, jacobian, make_jvp, value_and_grad


def test_wide_fan_out_and_fan_in():
    n = 100_000
    x = onp.linspace(0.0, 1.0, 8)

    def f(x):
        branches = [x * float(k % 7) for k in range(n)]  # fan-out: x feeds n nodes
        total = branches[0]
        for b in branches[1:]:  # fan-in: they are summed back
            total = total + b
        return np.sum(total)

    expected = sum(k % 7 for k in range(n))
    onp.testing.assert_allclose(grad(f)(x), onp.full(8, float(expected)))


def test_no_graph_objects_remain_after_many_gradients():
    nodes = []

    def f(x):
        y = np.tanh(x) * x
        nodes.append(weakref.ref(y._node))
        return np.sum(y)

    x = onp.linspace(-1, 1, 5)
    for _ in range(10_000):
        grad(f)(x)
    gc.collect()
    assert len(nodes) == 10_000
    assert sum(ref() is not None for ref in nodes) == 0


@pytest.mark.parametrize("transform", [grad, jacobian, value_and_grad])
@pytest.mark.parametrize("bad", ["text", object(), {1, 2}])
def test_unsupported_argument_types_name_the_type(transform, bad):
    with pytest.raises(TypeError, match=f"type {type(bad).__name__}.*floats, complex numbers"):
        transform(lambda x: x)(bad)


def test_unsupported_types_in_forward_mode_too():
    with pytest.raises(TypeError, match="type str"):
        make_jvp(lambda x: x)("text")


def test_inputs_are_never_modified():
    x = onp.linspace(0.1, 1.0, 6)
    params = {"w": x.copy(), "b": [1.0, onp.ones(3)]}
    before = {"w": params["w"].copy(), "b": [1.0, params["b"][1].copy()]}
    g = grad(lambda p: np.sum(p["w"] ** 2) * p["b"][0] + np.sum(p["b"][1] * 3.0))(params)
    onp.testing.assert_array_equal(params["w"], before["w"])
    onp.testing.assert_array_equal(params["b"][1], before["b"][1])
    g["w"] += 1.0  # gradients are fresh arrays: writing to them touches nothing else
    onp.testing.assert_array_equal(params["w"], before["w"])


def test_nan_and_inf_propagate_as_numpy_does():
    with onp.errstate(divide="ignore", invalid="ignore"):
        g = grad(lambda x: np.sum(np.log(x)))(onp.array([0.0, -1.0, 2.0]))
        assert onp.isinf(g[0]) and g[1] == -1.0 and g[2] == 0.5
        assert onp.isnan(grad(lambda x: np.sqrt(x) * 0.0)(-1.0))
