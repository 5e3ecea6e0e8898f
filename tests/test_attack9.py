"""Attack 9: a hostile user's programs (per-example gradients, sparse Jacobians of jitted
functions, misuse errors) compared with the reference semantics: jit = eager, vmap = the
per-example loop, sparse = dense. No silent wrong answer was found in this hour; these
pin the cases probed so a regression is caught."""

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np


def _loss(w, xi, yi):
    return (np.dot(w, xi) - yi) ** 2


@pytest.mark.parametrize("n", [1, 3, 0])
def test_per_example_gradients_equal_the_loop_eager_and_jitted(n):
    w = onp.array([1.0, 2.0])
    xs = onp.linspace(-1.0, 1.0, 2 * n).reshape(n, 2)
    ys = onp.arange(float(n))
    per_example = cr.vmap(cr.grad(_loss), in_axes=(None, 0, 0))
    loop = onp.array([cr.grad(_loss)(w, xi, yi) for xi, yi in zip(xs, ys)]).reshape(n, 2)
    jitted = cr.jit(per_example)
    for _ in range(3):
        assert onp.array_equal(per_example(w, xs, ys), loop)
        assert onp.array_equal(jitted(w, xs, ys), loop)


def _mixed(x):
    return np.sin(x) * x[::-1] + np.cumsum(x)


@pytest.mark.parametrize("x", [onp.linspace(-1.0, 1.0, 4), -onp.linspace(-1.0, 1.0, 4),
                               onp.array([0.0, -0.0, 2.0, 1.0])])
def test_sparse_jacobian_of_a_jitted_function_equals_dense(x):
    sparse = cr.jacobian(cr.jit(_mixed), sparse=True)
    for _ in range(3):
        assert onp.array_equal(sparse(x).toarray(), cr.jacobian(_mixed)(x))


@pytest.mark.parametrize("x", [onp.array([1.0, -1.0]), onp.array([-0.0, 0.0]),
                               onp.array([2.0, 3.0, 3.0])])
def test_jitted_gradient_of_max_equals_eager_bit_for_bit(x):
    eager = cr.grad(np.max)(x)
    jitted = cr.jit(cr.grad(np.max))
    for _ in range(3):
        got = jitted(x)
        assert onp.array_equal(got, eager)
        assert onp.array_equal(onp.signbit(got), onp.signbit(eager))


def test_misuse_errors_name_the_problem():
    with pytest.raises(TypeError, match="jacobian"):
        cr.jit(cr.grad(lambda x: x * 2.0))(onp.ones(3))
    with pytest.raises(ValueError, match="argnum 2 is out of range"):
        cr.grad(lambda x, y: x * y, argnum=2)(1.0, 2.0)
    with pytest.raises(ValueError, match="batch size: 3 and 4"):
        cr.vmap(lambda a, b: a + b)(onp.ones(3), onp.ones(4))
    with pytest.raises(TypeError, match="integer"):
        cr.jit(cr.grad(lambda x: x ** 2))(3)


def _kinks(x):
    return np.sum(np.abs(x) * np.sign(x) + np.maximum(x, 0.0))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_gradient_at_kinks_jit_and_vmap_equal_eager():
    eager = cr.grad(_kinks)
    jitted = cr.jit(cr.grad(_kinks))
    rows = [onp.array([-0.0, 0.0, 1.0]), onp.array([2.0, -3.0, 0.0]),
            onp.array([onp.nan, onp.inf, -onp.inf])]
    for x in rows:
        got, want = jitted(x), eager(x)
        assert onp.array_equal(got, want, equal_nan=True)
        assert onp.array_equal(onp.signbit(got), onp.signbit(want))
    batch = onp.stack(rows[:2])
    loop = onp.stack([eager(r) for r in batch])
    assert onp.array_equal(cr.vmap(cr.grad(_kinks))(batch), loop)
    assert onp.array_equal(cr.jit(cr.vmap(cr.grad(_kinks)))(batch), loop)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_jitted_complex_modulus_equals_eager():
    def f(z):
        return np.abs(z) ** 2 + np.real(z * np.conj(z))

    jitted = cr.jit(f)
    zs = onp.array([1 + 2j, -0.0 - 1j, 3.5 + 0j])
    for z in [zs, zs[::-1].copy(), onp.array([onp.nan + 1j])]:
        assert onp.array_equal(jitted(z), f(z), equal_nan=True)
