"""The GPU path without a GPU: gradients of the strict CuPy stand-in (tests/strict_array.py)
stay in its library and equal NumPy's."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from strict_array import Strict, _unwrap

RNG = onp.random.default_rng(2)
XN = RNG.standard_normal((5, 3))

FUNCTIONS = {
    "elementwise": lambda x: np.sum(np.tanh(x) * np.exp(x) / (1.0 + x ** 2)),
    "reductions": lambda x: np.sum(np.max(x, axis=0)) + np.mean(x) + np.sum(np.prod(x, 1)),
    "indexing": lambda x: np.sum(x[1:4, ::-1]) + np.sum(x[[0, 2, 2]] ** 2),
    "matmul": lambda x: np.sum(np.dot(x.T, x)),
    "sinc_cumprod": lambda x: np.sum(np.sinc(x)) + np.sum(np.cumprod(x, axis=0)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_reverse_mode_stays_in_the_array_library(name):
    f = FUNCTIONS[name]
    g = cr.grad(f)(Strict(XN))
    assert isinstance(g, Strict)
    onp.testing.assert_allclose(g.data, cr.grad(f)(XN), rtol=1e-10)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_forward_mode_stays_in_the_array_library(name):
    f = FUNCTIONS[name]
    t = RNG.standard_normal(XN.shape)
    _, tangent = cr.jvp(f, (Strict(XN),), (Strict(t),))
    _, expected = cr.jvp(f, (XN,), (t,))
    assert isinstance(tangent, Strict)
    onp.testing.assert_allclose(tangent.data, expected, rtol=1e-10)


def test_hvp_and_jacobian():
    v = RNG.standard_normal(XN.shape)
    hv = cr.make_hvp(lambda x: np.sum(x ** 3) / 3.0)(Strict(XN))[0](Strict(v))
    assert isinstance(hv, Strict)
    onp.testing.assert_allclose(hv.data, 2 * XN * v)
    jac = cr.jacobian(lambda x: np.sin(x) * 2.0)(Strict(XN[0]))
    onp.testing.assert_allclose(onp.asarray(_unwrap(jac)), onp.diag(2 * onp.cos(XN[0])))
