"""Dask arrays through the same code: gradients are lazy Dask arrays with NumPy's values,
and the engine computes nothing itself."""

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import elementwise_grad, grad, jacobian, jvp, value_and_grad

dask = pytest.importorskip("dask", reason="Dask is not installed (pip install chainrule[dask])")
da = pytest.importorskip("dask.array")


class ComputeCounter(dask.callbacks.Callback):
    """Counts graph executions: the engine itself must trigger none."""

    def __init__(self):
        super().__init__()
        self.runs = 0

    def _start(self, dsk):
        self.runs += 1


def lazy(f):
    """Run f with a counter; assert nothing was computed."""
    counter = ComputeCounter()
    with counter:
        result = f()
    assert counter.runs == 0, "the engine computed a Dask graph"
    return result


RNG = onp.random.default_rng(0)
X = RNG.standard_normal((40, 6))
W = RNG.standard_normal(6) * 0.3
Y = (RNG.uniform(size=40) < 0.5).astype(float)


def logistic_loss(w, X, y):
    logits = X @ w
    return np.mean(np.logaddexp(0.0, logits) - y * logits)


def test_gradient_of_a_function_of_dask_arrays_is_lazy_and_right():
    x = da.from_array(onp.linspace(-1, 1, 12), chunks=4)
    g = lazy(lambda: grad(lambda x: np.sum(np.sin(x) * x))(x))
    assert isinstance(g, da.Array) and g.chunks == x.chunks
    xs = onp.linspace(-1, 1, 12)
    onp.testing.assert_allclose(g.compute(), onp.cos(xs) * xs + onp.sin(xs))


def test_chunked_dataset_loss_gradient_matches_numpy():
    Xd, yd = da.from_array(X, chunks=(10, 6)), da.from_array(Y, chunks=10)
    value, g = lazy(lambda: value_and_grad(logistic_loss)(W, Xd, yd))
    want_value, want_g = value_and_grad(logistic_loss)(W, X, Y)
    onp.testing.assert_allclose(float(value.compute()), want_value, rtol=1e-12)
    onp.testing.assert_allclose(da.compute(g)[0], want_g, rtol=1e-12)


def test_gradient_with_respect_to_dask_data():
    Xd = da.from_array(X, chunks=(10, 3))
    g = lazy(lambda: grad(logistic_loss, 1)(W, Xd, Y))
    assert isinstance(g, da.Array)
    onp.testing.assert_allclose(g.compute(), grad(logistic_loss, 1)(W, X, Y), rtol=1e-12)


@pytest.mark.parametrize("f", [
    lambda x: np.sum(x * onp.arange(6.0), axis=1),                # broadcasting, axis
    lambda x: np.mean(x ** 2, axis=0, keepdims=True) + x[:, :1],  # keepdims, slicing
    lambda x: np.tanh(x)[::2, [0, 2]],                           # strided + integer indexing
    lambda x: np.exp(-x).T @ x,                                  # transpose, matmul
    lambda x: np.max(x, axis=1) - np.sqrt(np.abs(x) + 1.0).sum(axis=1),
])
def test_reductions_broadcasting_and_indexing_on_chunks(f):
    x = RNG.standard_normal((8, 6))
    xd = da.from_array(x, chunks=(3, 4))
    g = lazy(lambda: elementwise_grad(lambda x: np.sum(f(x)))(xd))
    onp.testing.assert_allclose(g.compute(), elementwise_grad(lambda x: np.sum(f(x)))(x),
                                rtol=1e-12, atol=1e-14)


def test_forward_mode_and_jacobian_on_dask():
    x = da.from_array(onp.linspace(0.1, 1.0, 4), chunks=2)
    _, tangent = lazy(lambda: jvp(lambda x: np.log(x) * 2.0, (x,), (da.ones(4, chunks=2),)))
    assert isinstance(tangent, da.Array)
    onp.testing.assert_allclose(tangent.compute(), 2.0 / onp.linspace(0.1, 1.0, 4))
    J = jacobian(lambda x: np.sin(x))(x)
    onp.testing.assert_allclose(onp.asarray(J), onp.diag(onp.cos(onp.linspace(0.1, 1.0, 4))))


def test_a_function_dask_lacks_is_named():
    x = da.from_array(onp.ones(4), chunks=2)
    with pytest.raises(Exception, match="i0"):
        grad(lambda x: np.sum(np.i0(x)))(x)
