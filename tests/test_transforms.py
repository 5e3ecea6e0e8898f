"""Every transform of the public API, against hand-derived values."""

import math

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import (
    checkpoint,
    custom_jvp,
    custom_vjp,
    deriv,
    grad,
    grad_and_aux,
    grad_named,
    hessian,
    hessian_tensor_product,
    hessian_vector_product,
    holomorphic_grad,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    make_ggnvp,
    make_hvp,
    make_jvp,
    make_vjp,
    multigrad_dict,
    stop_gradient,
    tensor_jacobian_product,
    value_and_grad,
    vector_jacobian_product,
    vjp,
)
from chainrule.test_util import check_grads

A = onp.array([[3.0, 1.0, 0.5], [1.0, 2.0, 0.0], [0.5, 0.0, 1.0]])
X = onp.array([0.3, -0.7, 1.1])


def quadratic_plus_sin(x):
    return 0.5 * np.dot(x, np.dot(A, x)) + np.sum(np.sin(x))


HESSIAN = A - onp.diag(onp.sin(X))


def test_value_and_grad_and_argnum_tuple():
    f = lambda x, y, z: x * y**2 + z
    value, grads = value_and_grad(f, (0, 1))(2.0, 3.0, 1.0)
    assert value == 19.0 and grads == (9.0, 12.0)
    assert grad(f, 2)(2.0, 3.0, 1.0) == 1.0
    assert grad(f, -1)(2.0, 3.0, 1.0) == 1.0


def test_bad_argnum_is_explained():
    with pytest.raises(ValueError, match="argnum 3 is out of range"):
        grad(lambda x: x, 3)(1.0)
    with pytest.raises(TypeError, match="argnum must be an int or a tuple"):
        grad(lambda x: x, "x")(1.0)
    g = grad(lambda x, y: x * y, True)  # a bool is no argnum (even in range)
    for _ in range(2):
        with pytest.raises(TypeError, match="argnum must be an int or a tuple"):
            g(2.0, 3.0)
    import enum

    class Which(enum.IntEnum):
        SECOND = 1

    g = grad(lambda x, y: x * y**2, Which.SECOND)  # an int subclass is an int
    assert g(2.0, 3.0) == 12.0 and g(1.0, -0.0) == 0.0
    with pytest.raises(ValueError, match="out of range"):  # in range once, then not
        g(2.0)
    assert grad(lambda x, y: x * y, [1, 0])(2.0, 3.0) == (2.0, 3.0)


def test_grad_and_aux():
    g, aux = grad_and_aux(lambda x: (x**2, {"note": "aux", "value": x * 3}))(2.0)
    assert g == 4.0 and aux == {"note": "aux", "value": 6.0}


def test_jacobian_all_ways_agree():
    f = lambda x: np.sin(x) * np.sum(x**2)
    x = onp.array([0.5, 1.0, -2.0])
    want = onp.diag(onp.cos(x)) * onp.sum(x**2) + onp.outer(onp.sin(x), 2 * x)
    for J in (jacobian(f)(x), jacfwd(f)(x), jacrev(f)(x)):
        onp.testing.assert_allclose(J, want, rtol=1e-12)


def test_jacfwd_jacrev_with_several_argnums():
    f = lambda x, y: x * np.sum(y)
    x, y = onp.array([1.0, 2.0]), onp.array([3.0, 4.0, 5.0])
    for jac in (jacfwd, jacrev):
        Jx, Jy = jac(f, argnums=(0, 1))(x, y)
        onp.testing.assert_allclose(Jx, 12.0 * onp.eye(2))
        onp.testing.assert_allclose(Jy, onp.outer(x, onp.ones(3)))


def test_hessian_and_hessian_vector_products():
    onp.testing.assert_allclose(hessian(quadratic_plus_sin)(X), HESSIAN, rtol=1e-12)
    v = onp.array([1.0, -2.0, 0.5])
    onp.testing.assert_allclose(hessian_tensor_product(quadratic_plus_sin)(X, v), HESSIAN @ v)
    onp.testing.assert_allclose(hessian_vector_product(quadratic_plus_sin)(X, v), HESSIAN @ v)
    hvp, g = make_hvp(quadratic_plus_sin)(X)
    onp.testing.assert_allclose(g, A @ X + onp.cos(X))
    onp.testing.assert_allclose(hvp(v), HESSIAN @ v, rtol=1e-12)


def test_make_ggnvp():
    W = onp.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]])
    f = lambda x: np.dot(W, x)
    g = lambda y: np.sum(y**4) / 4  # Hessian 3 y^2 on the diagonal
    x, v = onp.array([0.5, 0.2, -0.1]), onp.array([1.0, 0.0, 2.0])
    y = W @ x
    want = W.T @ onp.diag(3 * y**2) @ W @ v
    onp.testing.assert_allclose(make_ggnvp(f, g)(x)(v), want, rtol=1e-12)


def test_vector_and_tensor_jacobian_products():
    f = lambda x: np.sin(x) * 2.0
    x, v = onp.array([0.1, 0.2]), onp.array([3.0, -1.0])
    onp.testing.assert_allclose(vector_jacobian_product(f)(x, v), 2 * onp.cos(x) * v)
    onp.testing.assert_allclose(tensor_jacobian_product(f)(x, v), 2 * onp.cos(x) * v)


def test_make_vjp_and_make_jvp():
    f = lambda x, y: np.sin(x) * y
    pullback, ans = make_vjp(f)(0.5, 2.0)
    assert ans == pytest.approx(math.sin(0.5) * 2.0)
    assert pullback(1.0) == pytest.approx(2 * math.cos(0.5))
    pushforward = make_jvp(f, 1)(0.5, 2.0)
    assert pushforward(1.0) == (pytest.approx(ans), pytest.approx(math.sin(0.5)))


def test_jax_style_jvp_and_vjp():
    f = lambda x, y: (x * y, np.sin(x))
    out, tangent = jvp(f, (2.0, 3.0), (1.0, 0.0))
    assert out == (6.0, pytest.approx(math.sin(2.0)))
    assert tangent == (3.0, pytest.approx(math.cos(2.0)))
    out, pullback = vjp(lambda x, y: x * y, 2.0, 3.0)
    cotangents = pullback(1.0)
    assert isinstance(cotangents, tuple) and cotangents == (3.0, 2.0)
    with pytest.raises(ValueError, match="one tangent per primal"):
        jvp(f, (2.0, 3.0), (1.0,))


def test_deriv_and_holomorphic_grad():
    assert deriv(np.exp)(1.0) == pytest.approx(math.e)
    z = 0.3 + 0.4j
    assert holomorphic_grad(np.exp)(z) == pytest.approx(onp.exp(z))
    assert holomorphic_grad(lambda z: z**3)(z) == pytest.approx(3 * z**2)


def test_grad_named_and_multigrad_dict():
    def f(x, y, scale=1.0):
        return scale * x * y**2

    assert grad_named(f, "y")(2.0, 3.0) == 12.0
    grads = multigrad_dict(f)(2.0, 3.0, scale=2.0)
    assert grads == {"x": 18.0, "y": 24.0, "scale": 18.0}


def test_transform_names_and_docs():
    def f(x):
        return x

    assert grad.__name__ == "grad"
    assert grad.__doc__.strip().startswith("Returns a function which computes the gradient")
    assert grad(f, 1).__name__ == "grad_of_f_wrt_argnum_1"
    assert "grad of function f" in grad(f).__doc__


def test_stop_gradient_blocks_every_level():
    f = lambda x: x * stop_gradient(x) ** 2
    assert grad(f)(3.0) == 9.0
    assert jvp(f, (3.0,), (1.0,))[1] == 9.0
    assert grad(lambda x: np.sum(stop_gradient({"a": x})["a"] * x))(onp.ones(2)).tolist() == [1, 1]


def test_checkpoint_recomputes_but_agrees():
    calls = []

    def block(x):
        calls.append(1)
        return np.tanh(np.sin(x) * 2.0)

    cblock = checkpoint(block)
    f = lambda x: np.sum(cblock(cblock(x)) ** 2)
    plain = lambda x: np.sum(block(block(x)) ** 2)
    x = onp.linspace(-1, 1, 5)
    calls.clear()
    g = grad(f)(x)
    assert len(calls) == 4  # two forward calls, then each block recomputed once on the way back
    onp.testing.assert_allclose(g, grad(plain)(x), rtol=1e-13)
    onp.testing.assert_allclose(jvp(f, (x,), (onp.ones(5),))[1],
                                jvp(plain, (x,), (onp.ones(5),))[1], rtol=1e-13)
    check_grads(f, modes=["rev"], order=2)(x)


def test_checkpoint_recomputes_once_for_several_arguments():
    calls = []

    def block(x, w):
        calls.append(1)
        return np.tanh(x * w)

    cblock = checkpoint(block)
    x, w = onp.linspace(-1, 1, 3), onp.array([0.5, 1.0, 2.0])
    gx, gw = grad(lambda x, w: np.sum(cblock(cblock(x, w), w)), (0, 1))(x, w)
    assert len(calls) == 4  # two forward, two recomputations: not one per argument
    want = grad(lambda x, w: np.sum(block(block(x, w), w)), (0, 1))(x, w)
    onp.testing.assert_allclose(gx, want[0], rtol=1e-13)
    onp.testing.assert_allclose(gw, want[1], rtol=1e-13)


def test_custom_vjp_jax_style():
    @custom_vjp
    def clip_gradient(x):
        return x * 1.0

    def fwd(x):
        return x * 1.0, None

    def bwd(res, g):
        return (np.clip(g, -0.5, 0.5),)

    clip_gradient.defvjp(fwd, bwd)
    assert grad(lambda x: 3.0 * clip_gradient(x))(2.0) == 0.5
    assert clip_gradient(2.0) == 2.0


def test_custom_vjp_second_order_and_residuals():
    @custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x**2), lambda x2, g: (3 * x2 * g,))
    assert grad(cube)(2.0) == 12.0
    assert grad(grad(cube))(2.0) == 12.0  # d/dx 3x^2 = 6x


def test_custom_vjp_checks_its_output():
    @custom_vjp
    def f(x):
        return np.sum(x)

    f.defvjp(lambda x: (np.sum(x), None), lambda res, g: (g,))  # wrong: a scalar
    with pytest.raises(ValueError, match="shape"):
        grad(f)(onp.ones(3))


def test_custom_jvp_jax_style_in_both_modes():
    @custom_jvp
    def safe_log1pexp(x):
        return np.log(1.0 + np.exp(x))

    @safe_log1pexp.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return safe_log1pexp(x), t / (1.0 + np.exp(-x))

    x = 0.7
    sigmoid = 1 / (1 + math.exp(-x))
    assert jvp(safe_log1pexp, (x,), (1.0,))[1] == pytest.approx(sigmoid)
    assert grad(safe_log1pexp)(x) == pytest.approx(sigmoid)
    assert grad(grad(safe_log1pexp))(x) == pytest.approx(sigmoid * (1 - sigmoid))


def test_custom_jvp_takes_a_boolean_mask_and_an_integer_argument():
    # (JAX gives such arguments float0 zeros as tangents; chainrule raised that booleans
    # have no gradient, in both modes)
    @custom_jvp
    def masked_exp(mask, k, x):
        return onp.where(mask, onp.exp(x) * k, 0.0)

    @masked_exp.defjvp
    def masked_exp_jvp(primals, tangents):
        (mask, k, x), (tm, tk, tx) = primals, tangents
        assert not onp.any(tm) and not onp.any(tk)
        return masked_exp(mask, k, x), np.where(mask, np.exp(x) * k, 0.0) * tx

    from chainrule import jit

    m, x = onp.array([True, False, True]), onp.array([0.5, -1.0, 2.0])
    want = onp.where(m, 2 * onp.exp(x), 0.0)
    f = lambda x: np.sum(masked_exp(m, 2, x))
    assert onp.allclose(grad(f)(x), want)
    assert onp.allclose(jvp(f, (x,), (onp.ones(3),))[1], want.sum())
    assert onp.allclose(jit(grad(f))(x), want)
