"""A gradient computed on a real cluster: dask.distributed's LocalCluster with two worker
processes on loopback, over a dataset of 120 chunks."""

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import value_and_grad

da = pytest.importorskip("dask.array", reason="Dask is not installed (pip install chainrule[dask])")
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")


def least_squares(w, X, y):
    residual = X @ w - y
    return np.sum(residual**2) / X.shape[0]


def test_least_squares_gradient_on_a_local_cluster():
    rng = onp.random.default_rng(1)
    X = rng.standard_normal((12_000, 5))
    y = X @ onp.array([1.0, -2.0, 0.5, 0.0, 3.0]) + 0.1 * rng.standard_normal(12_000)
    w = onp.zeros(5)
    Xd, yd = da.from_array(X, chunks=(100, 5)), da.from_array(y, chunks=100)
    assert Xd.numblocks[0] == 120  # 100x more data than one chunk and more

    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None, host="127.0.0.1") as cluster, \
            distributed.Client(cluster) as client:
        value, g = value_and_grad(least_squares)(w, Xd, yd)  # lazy: nothing runs yet
        futures = client.compute([value, g])
        distributed.wait(futures, timeout=60)  # bounded: a stuck cluster fails the test
        value, g = client.gather(futures)
        assert len(client.scheduler_info()["workers"]) == 2

    want_value, want_g = value_and_grad(least_squares)(w, X, y)
    onp.testing.assert_allclose(value, want_value, rtol=1e-12)
    onp.testing.assert_allclose(g, want_g, rtol=1e-10)
    onp.testing.assert_allclose(g, -2 * X.T @ y / len(y), rtol=1e-10)
