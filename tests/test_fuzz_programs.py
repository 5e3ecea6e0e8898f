"""Random programs built from wrapped primitives: reverse mode, forward mode and finite
differences must agree, on random shapes with broadcasting, and under nested transforms.

The default profile (tests/conftest.py) is small and fixed for CI; run the long one with
``python -m pytest tests/test_fuzz_programs.py --hypothesis-profile=long``.
"""

from __future__ import annotations

import numpy as onp
import pytest
from hypothesis import given
from hypothesis import strategies as st

import chainrule.numpy as np
from chainrule import (
    Tensor,
    grad,
    hessian,
    hessian_vector_product,
    jacfwd,
    jacrev,
    make_jvp,
)
from chainrule.test_util import check_grads

# Each op keeps values in a range where every later op is smooth: the unary ops map
# R into a bounded interval, the binary ones combine two such values. Shape-changing
# ops (matmul, indexing, concatenate, stack) come back to their input's shape, so any
# two values still broadcast. maximum and max can meet exact ties (max(v, v), rows
# copied by broadcasting): the tied entries then have equal tangents, so every
# convention gives the same derivative, and the fuzzer checks that it does.


def _last_axis(op):
    """``op`` applied along the last axis; 0-d values pass through unchanged."""
    return lambda x: op(x) if np.ndim(x) else x


def _mix(x):
    k = np.shape(x)[-1]
    m = onp.eye(k) * 0.6 + onp.full((k, k), 0.4 / k) + onp.triu(onp.ones((k, k)), 1) * 0.1
    return np.matmul(x, m.astype(np.result_type(x)))  # float32 stays float32


def _concat(x):
    return np.concatenate([np.cos(x), x], axis=-1)[..., 1:np.shape(x)[-1] + 1]


def _softmax(x):
    z = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return z / np.sum(z, axis=-1, keepdims=True)


# fmt: off
UNARY = {
    "sin":     lambda x: np.sin(x),
    "tanh":    lambda x: np.tanh(x),
    "exp_neg": lambda x: np.exp(-x * x),
    "log1p_sq": lambda x: np.log(1.0 + x * x),
    "sqrt":    lambda x: np.sqrt(x * x + 1.0),
    "square":  lambda x: x ** 2 / (1.0 + x ** 2),
    "cos":     lambda x: np.cos(x),
    "abs_smooth": lambda x: np.abs(x + 3.0) - 3.0,
    "flip":    lambda x: np.flip(x),
    "reshape": lambda x: np.reshape(np.ravel(x), np.shape(x)),
    "stack":   lambda x: np.sum(np.stack([x, np.sin(x)]), axis=0) * 0.5,
    "where":   lambda x: np.where(x > 0.0, np.tanh(x), np.sin(x)),
    "matmul":  _last_axis(_mix),
    "cumsum":  _last_axis(lambda x: np.cumsum(x, axis=-1) / np.shape(x)[-1]),
    "reverse": _last_axis(lambda x: x[..., ::-1]),
    "concat":  _last_axis(_concat),
    "softmax": _last_axis(_softmax),
}
BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (2.0 + y ** 2),
    "pow": lambda x, y: (1.5 + np.sin(x)) ** np.cos(y),
    "maximum":   lambda x, y: np.maximum(x, y),
    "logaddexp": lambda x, y: np.logaddexp(x, y),
    "arctan2":   lambda x, y: np.arctan2(x, 2.0 + np.cos(y)),
}
REDUCE = {
    "sum":  lambda x, axis: np.sum(x, axis=axis, keepdims=True),
    "mean": lambda x, axis: np.mean(x, axis=axis, keepdims=True),
    "max":  lambda x, axis: np.max(x, axis=axis, keepdims=True),
    "prod": lambda x, axis: np.prod(np.cos(x), axis=axis, keepdims=True),
    "var":  lambda x, axis: np.var(x, axis=axis, keepdims=True),
    "logsumexp": lambda x, axis: np.log(np.sum(np.exp(x), axis=axis, keepdims=True)),
}
# fmt: on

SHAPES = [(), (3,), (2, 3), (2, 1), (1, 3)]


@st.composite
def programs(draw):
    """A straight-line program over two inputs: a list of (op, operand indices)."""
    n_steps = draw(st.integers(1, 6))
    steps = []
    for i in range(n_steps):
        n_values = 2 + i
        kind = draw(st.sampled_from(["unary", "binary", "binary", "reduce"]))
        if kind == "unary":
            steps.append(("unary", draw(st.sampled_from(sorted(UNARY))),
                          draw(st.integers(0, n_values - 1))))
        elif kind == "binary":
            steps.append(("binary", draw(st.sampled_from(sorted(BINARY))),
                          draw(st.integers(0, n_values - 1)), draw(st.integers(0, n_values - 1))))
        else:
            steps.append(("reduce", draw(st.sampled_from(sorted(REDUCE))),
                          draw(st.integers(0, n_values - 1)), draw(st.sampled_from([None, 0, -1]))))
    return steps


def run(steps, x, y):
    values = [x, y]
    for step in steps:
        if step[0] == "unary":
            values.append(UNARY[step[1]](values[step[2]]))
        elif step[0] == "binary":
            values.append(BINARY[step[1]](values[step[2]], values[step[3]]))
        else:
            value, axis = values[step[2]], step[3]
            if axis is not None and np.ndim(value) == 0:
                axis = None
            values.append(REDUCE[step[1]](value, axis))
    # keep both inputs on the tape, so a program that ignores one is not 'independent'
    return values[-1] + 0.0 * np.sum(x) + 0.0 * np.sum(y)


def inputs(draw_shape_x, draw_shape_y, seed):
    rng = onp.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, draw_shape_x), rng.uniform(-1.5, 1.5, draw_shape_y)


@given(programs(), st.sampled_from(SHAPES), st.sampled_from(SHAPES), st.integers(0, 10**6))
def test_random_programs_agree_in_both_modes(steps, shape_x, shape_y, seed):
    x, y = inputs(shape_x, shape_y, seed)
    f = lambda x, y: run(steps, x, y)
    check_grads(f, 0, modes=("fwd", "rev"), order=2)(x, y)
    check_grads(f, 1, modes=("fwd", "rev"), order=1)(x, y)


@given(programs(), st.sampled_from(SHAPES), st.integers(0, 10**6))
def test_forward_and_reverse_jacobians_agree(steps, shape, seed):
    x, y = inputs(shape, shape, seed)
    f = lambda x: run(steps, x, y)
    onp.testing.assert_allclose(jacfwd(f)(x), jacrev(f)(x), rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore:Output seems independent")  # linear programs
@given(programs(), st.integers(0, 10**6))
def test_nested_scalar_derivatives_agree(steps, seed):
    x, y = inputs((), (), seed)
    f = lambda x: np.sum(run(steps, x, y))
    rev_rev = grad(grad(f))(x)
    fwd_rev = make_jvp(grad(f))(x)(1.0)[1]
    rev_fwd = grad(lambda x: make_jvp(f)(x)(1.0)[1])(x)
    onp.testing.assert_allclose([fwd_rev, rev_fwd], [rev_rev, rev_rev], rtol=1e-9, atol=1e-12)


@given(programs(), st.sampled_from(SHAPES), st.sampled_from(SHAPES), st.integers(0, 10**6))
def test_tensor_backward_agrees_with_both_modes(steps, shape_x, shape_y, seed):
    x, y = inputs(shape_x, shape_y, seed)
    f = lambda x, y: np.sum(run(steps, x, y))
    tx, ty = Tensor(x), Tensor(y)
    out = f(tx, ty)
    onp.testing.assert_allclose(out.value, f(x, y), rtol=1e-13, atol=1e-13)
    out.backward()
    rev_x, rev_y = grad(f, (0, 1))(x, y)
    onp.testing.assert_allclose(tx.grad.value, rev_x, rtol=1e-10, atol=1e-12)
    onp.testing.assert_allclose(ty.grad.value, rev_y, rtol=1e-10, atol=1e-12)
    # forward mode along a random direction: <grad, v> == jvp(v)
    v = onp.random.default_rng(seed + 1).standard_normal(shape_x)
    fwd = make_jvp(lambda x: f(x, y))(x)(v)[1]
    onp.testing.assert_allclose(onp.sum(tx.grad.value * v), fwd, rtol=1e-9, atol=1e-11)


@given(programs(), st.sampled_from(SHAPES), st.sampled_from(SHAPES), st.integers(0, 10**6))
def test_float32_programs_stay_float32_and_match_float64(steps, shape_x, shape_y, seed):
    x, y = inputs(shape_x, shape_y, seed)
    x32, y32 = onp.asarray(x, onp.float32), onp.asarray(y, onp.float32)
    f = lambda x, y: np.sum(run(steps, x, y))
    g32 = grad(f)(x32, y32)
    t32 = make_jvp(lambda x: f(x, y32))(x32)(onp.ones_like(x32))[1]
    assert onp.result_type(g32) == onp.float32
    assert onp.result_type(t32) == onp.float32
    # the float64 derivative of the float32-rounded inputs is the reference
    g64 = grad(f)(x32.astype(float), y32.astype(float))
    scale = 1.0 + onp.max(onp.abs(g64))
    onp.testing.assert_allclose(g32, g64, rtol=2e-3, atol=2e-4 * scale)
    onp.testing.assert_allclose(t32, onp.sum(g64), rtol=2e-3, atol=2e-4 * scale * g64.size)
    check_grads(f, 0, modes=("fwd", "rev"), order=1)(x32, y32)


@pytest.mark.filterwarnings("ignore:Output seems independent")  # linear programs
@given(programs(), st.sampled_from(SHAPES[:3]), st.integers(0, 10**6))
def test_jacobian_of_grad_and_hvp_agree(steps, shape, seed):
    x, y = inputs(shape, shape, seed)
    f = lambda x: np.sum(run(steps, x, y))
    n = int(onp.size(x))
    h_rev = onp.reshape(jacrev(grad(f))(x), (n, n))  # reverse over reverse
    h_fwd = onp.reshape(jacfwd(jacrev(f))(x), (n, n))
    h_ref = onp.reshape(hessian(f)(x), (n, n))  # forward sweeps over the recorded gradient
    onp.testing.assert_allclose(h_rev, h_fwd, rtol=1e-9, atol=1e-11)
    onp.testing.assert_allclose(h_rev, h_ref, rtol=1e-9, atol=1e-11)
    onp.testing.assert_allclose(h_rev, h_rev.T, rtol=1e-9, atol=1e-11)
    v = onp.random.default_rng(seed + 2).standard_normal(shape)
    hv = onp.ravel(hessian_vector_product(f)(x, v))
    onp.testing.assert_allclose(hv, h_rev @ onp.ravel(v), rtol=1e-9, atol=1e-11)
    # and against central differences of the gradient
    eps = 1e-6
    numeric = (grad(f)(x + eps * v) - grad(f)(x - eps * v)) / (2 * eps)
    onp.testing.assert_allclose(hv, onp.ravel(numeric), rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore:Output seems independent")
@pytest.mark.parametrize("table, test", [
    ("vjp", test_tensor_backward_agrees_with_both_modes),
    ("jvp", test_random_programs_agree_in_both_modes),
    ("vjp", test_jacobian_of_grad_and_hvp_agree),
])
def test_the_fuzzer_catches_a_planted_rule_error(monkeypatch, table, test):
    # test the tester: cos's rule off by 0.1% must make the property fail
    from hypothesis import Phase, settings

    from chainrule._core.rule_table import primitive_jvps, primitive_vjps

    rules = primitive_vjps if table == "vjp" else primitive_jvps
    right = rules[np.cos]

    def wrong(*args):
        if table == "jvp":
            return 1.001 * right(*args)
        return tuple(None if r is None else 1.001 * r for r in right(*args))

    monkeypatch.setitem(rules, np.cos, wrong)
    quick = settings(max_examples=200, phases=[Phase.generate], database=None)
    with pytest.raises(AssertionError):  # GradientCheckError is an AssertionError
        quick(test)()
