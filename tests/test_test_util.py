"""Testing the tester: check_grads must catch small errors in first and second
derivatives, in each mode, on pytrees and complex inputs, with a readable message."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule.extend import defjvp, defvjp, primitive
from chainrule.test_util import (
    GradientCheckError,
    check_equivalent,
    check_grads,
    check_jvp,
    check_vjp,
    combo_check,
    scalar_close,
)


@pytest.fixture(autouse=True)
def _seeded():
    onp.random.seed(0)  # check_grads draws its random directions from numpy.random


X = onp.array([0.3, -1.2, 2.0])


def _sin_with(vjp_scale=1.0, jvp_scale=1.0):
    """sin as a new primitive whose first-derivative rules are scaled."""

    @primitive
    def my_sin(x):
        return onp.sin(x)

    defvjp(my_sin, lambda ans, x: lambda g: vjp_scale * g * np.cos(x))
    defjvp(my_sin, lambda g, ans, x: jvp_scale * g * np.cos(x))
    return my_sin


def _sin_with_wrong_second_derivative():
    """sin whose derivative cos is right, but cos's own derivative is +sin (wrong sign)."""

    @primitive
    def bad_cos(x):
        return onp.cos(x)

    defvjp(bad_cos, lambda ans, x: lambda g: g * np.sin(x))
    defjvp(bad_cos, lambda g, ans, x: g * np.sin(x))

    @primitive
    def my_sin(x):
        return onp.sin(x)

    defvjp(my_sin, lambda ans, x: lambda g: g * bad_cos(x))
    defjvp(my_sin, lambda g, ans, x: g * bad_cos(x))
    return my_sin


def test_correct_rules_pass_to_second_order():
    check_grads(_sin_with(), modes=("fwd", "rev"), order=2)(X)


@pytest.mark.parametrize("mode, scales", [("rev", dict(vjp_scale=1.001)),
                                          ("fwd", dict(jvp_scale=1.001)),
                                          ("rev", dict(vjp_scale=0.999))])
def test_first_derivative_off_by_a_tenth_of_a_percent_fails(mode, scales):
    f = _sin_with(**scales)
    with pytest.raises(GradientCheckError):
        check_grads(f, modes=(mode,), order=1)(X)
    other = "fwd" if mode == "rev" else "rev"
    check_grads(f, modes=(other,), order=1)(X)  # the other mode's rule is right


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_wrong_second_derivative_fails_only_at_order_two(mode):
    f = _sin_with_wrong_second_derivative()
    check_grads(f, modes=(mode,), order=1)(X)
    with pytest.raises(GradientCheckError):
        check_grads(f, modes=(mode,), order=2)(X)


def test_check_vjp_and_check_jvp_directly():
    check_vjp(_sin_with(), X)
    check_jvp(_sin_with(), X)
    with pytest.raises(GradientCheckError):
        check_vjp(_sin_with(vjp_scale=1.001), X)
    with pytest.raises(GradientCheckError):
        check_jvp(_sin_with(jvp_scale=1.001), X)


def test_failure_message_is_readable():
    bad = _sin_with(vjp_scale=1.01)
    with pytest.raises(GradientCheckError) as info:
        check_grads(bad, modes=("rev",), order=1)(X)
    message = str(info.value)
    assert ("reverse mode (VJP) check of my_sin failed: it disagrees with finite differences"
            in message)
    assert "analytic:" in message and "numeric:" in message
    assert "largest difference" in message and "rtol=" in message


def test_failure_message_names_the_derivative_function_at_order_two():
    with pytest.raises(GradientCheckError, match=r"jvp_my_sin"):
        check_grads(_sin_with_wrong_second_derivative(), modes=("fwd",), order=2)(X)


def test_check_grads_rejects_unknown_mode():
    with pytest.raises(ValueError, match="unknown modes"):
        check_grads(np.sin, modes=("backward",))(X)


def test_check_grads_on_pytrees():
    def f(params):
        w, b = params["w"], params["b"]
        return {"out": np.tanh(np.dot(w, X) + b), "reg": (np.sum(w**2), b * b)}

    params = {"w": onp.array([0.5, -0.3, 0.1]), "b": 0.2}
    check_grads(f, modes=("fwd", "rev"), order=2)(params)

    @primitive
    def pair_sum(a, b):
        return a + b

    defvjp(pair_sum, lambda ans, a, b: lambda g: g, lambda ans, a, b: lambda g: 1.001 * g)
    with pytest.raises(GradientCheckError):
        check_grads(lambda p: pair_sum(p[0], p[1]), modes=("rev",), order=1)((X, X[::-1]))


def test_check_grads_with_argnum_on_multiple_arguments():
    f = lambda x, y: np.sum(np.sin(x) * y)
    check_grads(f, 1)(X, X + 1.0)
    check_grads(f, (0, 1))(X, X + 1.0)


def test_check_grads_on_complex_inputs():
    z = onp.array([0.5 + 0.3j, -1.0 + 2.0j])
    check_grads(lambda z: z * z * 2.0, modes=("fwd", "rev"), order=2)(z)

    # autograd's convention: the VJP of a holomorphic f is g * f'(z), not its conjugate
    @primitive
    def square(z):
        return z * z

    defvjp(square, lambda ans, z: lambda g: g * np.conj(2.0 * z))
    defjvp(square, lambda g, ans, z: g * 2.0 * z)
    check_grads(square, modes=("fwd",), order=1)(z)
    with pytest.raises(GradientCheckError):
        check_grads(square, modes=("rev",), order=1)(z)


def test_check_grads_float32_uses_looser_tolerance():
    check_grads(np.sin, modes=("fwd", "rev"), order=1)(X.astype(onp.float32))


# ----------------------------------------------------------------------------- helpers
def test_check_equivalent():
    check_equivalent(onp.array([1.0, 2.0]), onp.array([1.0, 2.0 + 1e-9]))
    check_equivalent({"a": 1.0, "b": (onp.ones(2),)}, {"a": 1.0, "b": (onp.ones(2),)})
    with pytest.raises(AssertionError, match="Value mismatch") as info:
        check_equivalent(onp.array([1.0, 2.0]), onp.array([1.0, 2.1]))
    assert "finite differences" not in str(info.value)
    with pytest.raises(AssertionError, match="VSpace mismatch"):
        check_equivalent(onp.ones(2), onp.ones(3))
    with pytest.raises(AssertionError, match="VSpace mismatch"):
        check_equivalent(onp.ones(2), onp.ones(2, dtype=onp.float32))


def test_scalar_close():
    assert scalar_close(1.0, 1.0 + 1e-9)
    assert scalar_close(1e9, 1e9 + 1.0)  # relative
    assert scalar_close(0.0, 1e-8)       # absolute
    assert not scalar_close(1.0, 1.01)
    assert not scalar_close(1.0, -1.0)   # a + b == 0 must not divide by zero


def test_combo_check_tries_every_combination():
    calls = []

    def fun(x, y, scale=1.0, power=1):
        calls.append((onp.shape(x), scale, power))
        return scale * np.sum(x * y) ** power

    combo_check(fun, (0, 1), modes=["rev"], order=1)(
        [X, X[:1]], [2.0], scale=[1.0, 3.0], power=[1, 2])
    assert {c for c in calls} == {(s, k, p) for s in [(3,), (1,)] for k in [1.0, 3.0]
                                  for p in [1, 2]}


def test_combo_check_accepts_int_argnum_and_catches_a_bad_rule():
    combo_check(np.sin, 0)([X, 0.5])
    with pytest.raises(GradientCheckError):
        combo_check(_sin_with(vjp_scale=1.001), [0], modes=["rev"], order=1)([X])
