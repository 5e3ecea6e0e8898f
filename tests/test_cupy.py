"""CuPy arrays on a GPU: the same transforms, values staying on the device.

Skipped (with the reason) where CuPy or a GPU is not available."""

import numpy as onp
import pytest

import chainrule.numpy as np
import duck_transforms
from chainrule import grad, hessian_vector_product, jacobian, jacobian_sparsity, jit, jvp


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


TRANSFORMS = duck_transforms.cases(lambda a: cp.asarray(a)) if cp is not None else {}
ON_NUMPY = duck_transforms.cases(lambda a: a)


@pytest.mark.filterwarnings("error::chainrule._transforms.vmap.VmapFallbackWarning")
@pytest.mark.parametrize("name", sorted(ON_NUMPY))
def test_transforms_on_the_device_match_numpy(name):
    """jit, vmap, Taylor mode, Hessians... of functions of CuPy arrays: the answer is a
    cupy.ndarray equal to NumPy's, at two points (the second takes the branches' other
    side); vmap runs the batch at once (a NumPy constant met on the batch would send it to
    the loop, with a warning: an error here)."""
    fun, point = TRANSFORMS[name]
    for x in (point, duck_transforms.second_point(point)):
        got = fun(cp.asarray(x))
        assert isinstance(got, cp.ndarray), type(got)
        onp.testing.assert_allclose(cp.asnumpy(got), ON_NUMPY[name][0](x), rtol=1e-9,
                                    atol=1e-12)


def test_one_jitted_function_on_numpy_then_the_device():
    f = jit(grad(duck_transforms.coupled))
    x = duck_transforms.X
    want = f(x)
    got = f(cp.asarray(x))
    assert isinstance(got, cp.ndarray)
    onp.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-12)
    assert f.cache_info().misses == 2


def test_sparse_derivatives_refuse_device_arrays_clearly():
    x = cp.asarray(duck_transforms.X)
    with pytest.raises(TypeError, match="without sparse=True"):
        jacobian(duck_transforms.chained, sparse=True)(x)
    pattern = jacobian_sparsity(duck_transforms.chained, x)
    dense = jacobian(duck_transforms.chained)(duck_transforms.X)
    onp.testing.assert_array_equal(pattern.toarray(), dense != 0)
