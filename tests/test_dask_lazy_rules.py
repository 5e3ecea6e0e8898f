"""Dask arrays: the rules that used to compute or copy to NumPy (repeated fancy indices,
zero branches of prod/cumprod/sinc, in-place updates) stay lazy; missing functions fail."""

from __future__ import annotations

import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np

da = pytest.importorskip("dask.array", reason="Dask not installed (pip install chainrule[dask])")
dask = pytest.importorskip("dask")


def _forbid_compute(*args, **kwargs):
    raise AssertionError("the engine computed a Dask array during differentiation")


def no_compute():
    """Inside this block any Dask compute fails: the engine must stay lazy."""
    return dask.config.set(scheduler=_forbid_compute)


RNG = onp.random.default_rng(0)
XN = RNG.standard_normal((12, 5))
X = da.from_array(XN, chunks=(4, 5))


def test_fancy_and_boolean_free_indexing():
    idx = onp.array([0, 3, 3, 7])  # repeated index: gradients accumulate

    def f(x):
        return np.sum(np.sin(x[idx]) * 2.0) + np.sum(x[::2, ::-1][:, 0])

    with no_compute():
        g = cr.grad(f)(X)
    assert isinstance(g, da.Array)
    onp.testing.assert_allclose(g.compute(), cr.grad(f)(XN))


def test_rules_with_zero_branches_stay_lazy():
    xn = onp.array([[0.0, 0.5, -1.5], [2.0, 0.0, 1.0]])
    x = da.from_array(xn, chunks=(1, 3))
    fns = [lambda x: np.sum(np.sinc(x)), lambda x: np.sum(np.prod(x, axis=1)),
           lambda x: np.sum(np.cumprod(x, axis=1))]
    for f in fns:
        with no_compute():
            g = cr.grad(f)(x)
        assert isinstance(g, da.Array)
        onp.testing.assert_allclose(g.compute(), cr.grad(f)(xn))


def test_function_dask_lacks_is_named_in_dasks_warning():
    # Dask computes and warns, naming the function; chainrule leaves the warning
    # filters alone, and code that wants an error turns that warning into one
    x = da.from_array(onp.eye(3) * 2.0, chunks=3)
    with no_compute(), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        with pytest.raises(FutureWarning, match=r"numpy\.linalg\.det"):
            cr.grad(lambda x: np.linalg.det(x))(x)


def test_in_place_update_of_traced_value_stays_lazy():
    xn = onp.arange(6.0) + 1.0
    x = da.from_array(xn, chunks=2)

    def f(x):
        x = x * 1.0
        x[1:3] = x[0] * 2.0  # rewritten as a functional update, on the Dask graph
        return np.sum(x ** 2)

    with no_compute():
        g = cr.grad(f)(x)
    assert isinstance(g, da.Array)
    onp.testing.assert_allclose(g.compute(), [18.0, 0, 0, 8, 10, 12])



def test_hessian_vector_product_second_order():
    v = da.from_array(RNG.standard_normal((12, 5)), chunks=(4, 5))

    def f(x):
        return np.sum(x ** 3) / 3.0

    with no_compute():
        hv = cr.make_hvp(f)(X)[0](v)
    assert isinstance(hv, da.Array)
    onp.testing.assert_allclose(hv.compute(), 2 * XN * v.compute())


def test_float32_gradient_stays_float32():
    x = X.astype(onp.float32)
    with no_compute():
        g = cr.grad(lambda x: np.sum(x * x))(x)
    assert isinstance(g, da.Array) and g.dtype == onp.float32
