"""Sparse Jacobians of functions of Dask arrays: the coloured sweeps run through Dask's own
functions and the answer is the same scipy.sparse matrix as for the NumPy input."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np

da = pytest.importorskip("dask.array")


def residual(u):
    inner = 2.0 * u[1:-1] - u[:-2] - u[2:] + np.exp(u[1:-1])
    return np.concatenate([u[:1], inner, u[-1:]])


def test_sparse_jacobian_of_a_dask_input_equals_the_numpy_one():
    x = onp.linspace(0.0, 1.0, 60)
    want = cr.jacobian(residual, sparse=True)(x)
    got = cr.jacobian(residual, sparse=True)(da.from_array(x, chunks=20))
    assert got.shape == want.shape and got.nnz == want.nnz == 3 * 58 + 2
    assert abs(got - want).max() == 0.0
    dense = cr.jacobian(residual)(x)
    onp.testing.assert_allclose(want.toarray(), dense, rtol=1e-14, atol=0)
