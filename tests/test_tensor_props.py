"""Property: Tensor gradients equal the functional API's on random compositions of primitives."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import Tensor

# Operations that stay finite on any input, written once and run on Tensors and on arrays.
UNARY = [
    cnp.sin, cnp.cos, cnp.tanh, cnp.negative,
    lambda a: cnp.exp(cnp.tanh(a)),
    lambda a: cnp.log(1.0 + a * a),
    lambda a: cnp.sqrt(1.0 + a * a),
    lambda a: a**3,
    lambda a: a[::-1],
    lambda a: cnp.sum(a) * a,
    lambda a: cnp.mean(a, axis=0, keepdims=True) + a,
]
BINARY = [
    cnp.add, cnp.subtract, cnp.multiply,
    lambda a, b: a / (1.0 + b * b),
    lambda a, b: cnp.where(a > b, a, b * 2.0),
    lambda a, b: cnp.dot(a, b) * a,
]

step = st.one_of(
    st.tuples(st.just(1), st.integers(0, len(UNARY) - 1), st.integers(0, 99), st.just(0)),
    st.tuples(st.just(2), st.integers(0, len(BINARY) - 1), st.integers(0, 99), st.integers(0, 99)),
)
vector = st.lists(st.floats(-2, 2), min_size=3, max_size=3).map(np.array)


def run(program, x, y):
    values = [x, y]
    for arity, op, i, j in program:
        a, b = values[i % len(values)], values[j % len(values)]
        values.append(UNARY[op](a) if arity == 1 else BINARY[op](a, b))
    total = values[0] * 0.0
    for v in values[2:]:
        total = total + v
    return cnp.sum(total * total)


@settings(max_examples=60)
@given(st.lists(step, min_size=1, max_size=6), vector, vector)
def test_tensor_gradients_equal_functional_gradients(program, xv, yv):
    x, y = Tensor(xv), Tensor(yv)
    out = run(program, x, y)
    out.backward()
    gx, gy = cr.grad(lambda a, b: run(program, a, b), argnum=(0, 1))(xv, yv)
    assert out.item() == cr.stop_gradient(run(program, xv, yv))
    for t, expected in [(x, gx), (y, gy)]:
        # a leaf the output does not reach keeps grad None (PyTorch), grad gives zeros
        got = np.zeros(3) if t.grad is None else t.grad.numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


@settings(max_examples=25)
@given(st.lists(step, min_size=1, max_size=4), vector, vector)
def test_create_graph_equals_hessian_vector_product(program, xv, yv):
    x = Tensor(xv)
    y = Tensor(yv, requires_grad=False)
    run(program, x, y).backward(create_graph=True)
    g = x.grad
    x.grad = None
    v = np.array([1.0, -0.5, 2.0])
    (g * v).sum().backward()
    hvp = cr.hessian_vector_product(lambda a: run(program, a, yv))(xv, v)
    np.testing.assert_allclose(g.numpy(), cr.grad(lambda a: run(program, a, yv))(xv), rtol=1e-10)
    np.testing.assert_allclose(x.grad.numpy(), hvp, rtol=1e-8, atol=1e-8)
