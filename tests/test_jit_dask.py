"""chainrule.jit on Dask arrays: the emitted program calls Dask through NumPy's dispatch,
so a jitted gradient is a lazy Dask array equal to the eager one, nothing is computed
while it runs, and the cache keeps Dask and NumPy signatures apart."""

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np

dask = pytest.importorskip("dask", reason="Dask is not installed (pip install chainrule[dask])")
da = pytest.importorskip("dask.array")

from test_dask import ComputeCounter  # noqa: E402 (after the skip: it imports Dask)


def loss(w, X, y):
    p = 1 / (1 + np.exp(-(X @ w)))
    return -np.sum(y * np.log(p) + (1 - y) * np.log(1 - p))


RNG = onp.random.default_rng(0)
X = RNG.standard_normal((40, 6))
W = RNG.standard_normal(6) * 0.3
Y = (RNG.uniform(size=40) < 0.5).astype(float)


def test_jitted_grad_of_dask_arrays_is_lazy_and_equals_eager():
    dX, dy = da.from_array(X, chunks=(10, 6)), da.from_array(Y, chunks=10)
    g = cr.jit(cr.grad(loss))
    counter = ComputeCounter()
    with counter:
        first, cached = g(W, dX, dy), g(W, dX, dy)
    assert counter.runs == 0, "the jitted gradient computed a Dask graph"
    assert isinstance(first, da.Array) and isinstance(cached, da.Array)
    eager = cr.grad(loss)(W, dX, dy)
    for got in (first, cached):
        assert onp.asarray(got).tobytes() == onp.asarray(eager).tobytes()
    onp.testing.assert_allclose(onp.asarray(cached), cr.grad(loss)(W, X, Y), rtol=1e-12)
    assert g.cache_info().hits == 1


def test_the_array_type_is_part_of_the_signature():
    dX, dy = da.from_array(X, chunks=(10, 6)), da.from_array(Y, chunks=10)
    g = cr.jit(cr.grad(loss))
    assert isinstance(g(W, dX, dy), da.Array)
    numpy_answer = g(W, X, Y)
    assert type(numpy_answer) is onp.ndarray  # not the Dask program's answer
    assert numpy_answer.tobytes() == cr.grad(loss)(W, X, Y).tobytes()
    info = g.cache_info()
    assert (info.signatures, info.misses, info.hits) == (2, 2, 0)
    assert isinstance(g(W, dX, dy), da.Array) and g.cache_info().hits == 1
