"""CuPy arrays on a GPU: the same transforms, values staying on the device.

Skipped (with the reason) where CuPy or a GPU is not available."""

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, hessian_vector_product, jacobian, jvp


def _cupy_with_a_gpu():
    try:
        import cupy

        cupy.zeros(1) + 1  # fails without a usable device
        return cupy
    except Exception:
        return None


cp = _cupy_with_a_gpu()
pytestmark = pytest.mark.skipif(cp is None, reason="CuPy/GPU not available")


def loss(w, X, y):
    return np.mean(np.logaddexp(0.0, X @ w) - y * (X @ w)) + 0.1 * np.sum(w**2)


def data():
    rng = onp.random.default_rng(0)
    X, w = rng.standard_normal((64, 5)), rng.standard_normal(5)
    y = (rng.uniform(size=64) < 0.5).astype(float)
    return X, w, y


def test_gradient_stays_on_the_device_and_matches_numpy():
    X, w, y = data()
    g = grad(loss)(cp.asarray(w), cp.asarray(X), cp.asarray(y))
    assert isinstance(g, cp.ndarray)
    onp.testing.assert_allclose(cp.asnumpy(g), grad(loss)(w, X, y), rtol=1e-10)


def test_forward_mode_jacobian_and_hvp_on_the_device():
    X, w, y = data()
    wd, Xd, yd = cp.asarray(w), cp.asarray(X), cp.asarray(y)
    _, tangent = jvp(lambda w: loss(w, Xd, yd), (wd,), (cp.ones(5),))
    onp.testing.assert_allclose(float(tangent), jvp(lambda w: loss(w, X, y), (w,),
                                                    (onp.ones(5),))[1], rtol=1e-10)
    J = jacobian(lambda w: np.tanh(Xd @ w))(wd)
    assert isinstance(J, cp.ndarray)
    onp.testing.assert_allclose(cp.asnumpy(J), jacobian(lambda w: np.tanh(X @ w))(w), rtol=1e-10)
    v = onp.linspace(-1, 1, 5)
    hv = hessian_vector_product(loss)(wd, Xd, yd, cp.asarray(v))
    assert isinstance(hv, cp.ndarray)
    onp.testing.assert_allclose(cp.asnumpy(hv), hessian_vector_product(loss)(w, X, y, v),
                                rtol=1e-10)
