"""A user's own primitive: one ``check_grads`` call checks its VJP and JVP against finite
differences and against each other, to second order, and a failure says which order,
which mode and which function failed, with the analytic and numeric values."""

from __future__ import annotations

import re

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import Tensor, grad
from chainrule.extend import defjvp, defvjp, primitive
from chainrule.test_util import GradientCheckError, check_grads

X = onp.array([0.4, -1.1, 2.3])


def softplus_with(vjp_scale=1.0, jvp_scale=1.0, second_scale=1.0):
    """A user's softplus primitive; its rules can be scaled to plant errors. The
    derivative, sigmoid, is a primitive too so its own rules (the second derivative)
    can be wrong independently."""

    @primitive
    def sigmoid(x):
        return 1.0 / (1.0 + onp.exp(-x))

    defvjp(sigmoid, lambda ans, x: lambda g: second_scale * g * ans * (1.0 - ans))
    defjvp(sigmoid, lambda g, ans, x: second_scale * g * ans * (1.0 - ans))

    @primitive
    def softplus(x):
        return onp.log1p(onp.exp(x))

    defvjp(softplus, lambda ans, x: lambda g: vjp_scale * g * sigmoid(x))
    defjvp(softplus, lambda g, ans, x: jvp_scale * g * sigmoid(x))
    return softplus


def failure(f, **kwargs) -> str:
    with pytest.raises(GradientCheckError) as info:
        check_grads(f, **kwargs)(X)
    return str(info.value)


def values(message: str, label: str) -> onp.ndarray:
    line = next(line for line in message.splitlines() if line.strip().startswith(label))
    return onp.array([float(v) for v in re.findall(r"-?\d+\.\d+(?:e[-+]\d+)?",
                                                   line.split(":", 1)[1])])


def test_a_correct_primitive_passes_in_one_call():
    check_grads(softplus_with(), modes=("fwd", "rev"), order=2)(X)
    check_grads(lambda x: np.sum(softplus_with()(x) ** 2), order=3)(X)


def test_a_wrong_vjp_names_order_mode_and_function_with_both_values():
    message = failure(softplus_with(vjp_scale=1.01), order=1)
    lines = message.splitlines()
    assert lines[0] == ("order 1: reverse mode (VJP) check of softplus failed: it disagrees "
                        "with finite differences:")
    analytic, numeric = values(message, "analytic"), values(message, "numeric")
    # the report shows the real numbers: the planted 1% error is their ratio
    onp.testing.assert_allclose(analytic / numeric, 1.01, rtol=1e-4)
    assert "largest difference" in lines[-1] and "rtol=1e-05" in lines[-1]


def test_a_wrong_jvp_is_reported_as_forward_mode():
    message = failure(softplus_with(jvp_scale=0.99), order=1)
    assert message.startswith(
        "order 1: forward mode (JVP) check of softplus failed: it disagrees with finite")
    onp.testing.assert_allclose(values(message, "analytic"),
                                0.99 * values(message, "numeric"), rtol=1e-4)


def test_modes_checked_against_each_other_catch_errors_below_finite_differences():
    # off by 2e-7: finite differences (rtol 1e-5) cannot see it, JVP vs VJP can
    f = softplus_with(jvp_scale=1 + 2e-7)
    check_grads(f, modes=("fwd",), order=1)(X)
    check_grads(f, modes=("rev",), order=1)(X)
    message = failure(f, order=1)
    assert message.splitlines()[0] == (
        "order 1: forward mode (JVP) check of softplus failed: it disagrees with its reverse "
        "mode (VJP):")
    by_jvp, by_vjp = values(message, "<u, J v> by JVP"), values(message, "<u, J v> by VJP")
    onp.testing.assert_allclose(by_jvp / by_vjp, 1 + 2e-7, rtol=1e-9)


@pytest.mark.parametrize("mode, derivative", [("rev", "vjp_softplus"), ("fwd", "jvp_softplus")])
def test_a_wrong_second_derivative_is_reported_at_order_two(mode, derivative):
    f = softplus_with(second_scale=1.05)
    check_grads(f, modes=(mode,), order=1)(X)  # first derivatives are right
    message = failure(f, modes=(mode,), order=2)
    kind = "reverse mode (VJP)" if mode == "rev" else "forward mode (JVP)"
    assert message.startswith(f"order 2: {kind} check of {derivative} failed: it disagrees "
                              "with finite")
    assert (f"({derivative} is a derivative function made by check_grads: its first "
            "derivatives are derivatives of order 2 of the function you passed)") in message


def test_float32_primitive_uses_loose_tolerances_but_still_catches_errors():
    x32 = X.astype(onp.float32)
    check_grads(softplus_with(), order=1)(x32)
    with pytest.raises(GradientCheckError, match="order 1: reverse mode"):
        check_grads(softplus_with(vjp_scale=1.2), order=1)(x32)


def test_a_custom_rule_is_used_by_tensor_backward():
    @primitive
    def straight_through_round(x):
        return onp.round(x)

    defvjp(straight_through_round, lambda ans, x: lambda g: g)
    defjvp(straight_through_round, lambda g, ans, x: g)
    x = onp.array([0.3, 1.7])
    onp.testing.assert_array_equal(grad(lambda x: np.sum(straight_through_round(x)))(x), [1, 1])
    t = Tensor(x)
    out = straight_through_round(t)
    assert isinstance(out, Tensor)
    np.sum(out).backward()
    onp.testing.assert_array_equal(t.grad.value, [1.0, 1.0])
