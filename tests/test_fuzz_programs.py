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
from chainrule import grad, jacfwd, jacrev, make_jvp
from chainrule.test_util import check_grads

# Each op keeps values in a range where every later op is smooth: the unary ops map
# R into a bounded interval, the binary ones combine two such values.
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
}
BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (2.0 + y ** 2),
    "pow": lambda x, y: (1.5 + np.sin(x)) ** np.cos(y),
}
REDUCE = {
    "sum":  lambda x, axis: np.sum(x, axis=axis, keepdims=True),
    "mean": lambda x, axis: np.mean(x, axis=axis, keepdims=True),
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
