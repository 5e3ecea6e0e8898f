"""A strict stand-in for CuPy: a duck array that refuses any host conversion and any
NumPy-array operand (as CuPy does), so the GPU path is checked without a GPU."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np


class Strict(onp.lib.mixins.NDArrayOperatorsMixin):
    """Wraps an ndarray; NumPy functions and ufuncs run on it and return Strict."""

    def __init__(self, data):
        self.data = onp.asarray(data)

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)
    T = property(lambda self: Strict(self.data.T))

    def __array__(self, *args, **kwargs):
        raise TypeError("Strict: implicit conversion to a NumPy array is not allowed")

    def __float__(self):
        raise TypeError("Strict: float() would copy to the host")

    def __bool__(self):
        raise TypeError("Strict: bool() would copy to the host")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return Strict(self.data[_unwrap(index)])

    def __setitem__(self, index, value):
        self.data[_unwrap(index)] = _unwrap(value)

    def astype(self, dtype, **kwargs):
        return Strict(self.data.astype(dtype, **kwargs))

    def reshape(self, *shape, **kwargs):
        return Strict(self.data.reshape(*shape, **kwargs))

    def sum(self, *args, **kwargs):
        return Strict(self.data.sum(*args, **kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(_foreign(v) for v in inputs):
            return NotImplemented  # NEP 13: let the other operand (a chainrule box) act
        for v in inputs:
            if isinstance(v, onp.ndarray) and v.ndim > 0:
                raise TypeError(f"Strict: NumPy array operand in {ufunc.__name__}")
        out = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
        return _wrap(out)

    def __array_function__(self, func, types, args, kwargs):
        if any(not issubclass(t, (Strict, onp.ndarray)) for t in types):
            return NotImplemented
        if "like" in kwargs:
            kwargs = {k: v for k, v in kwargs.items() if k != "like"}
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))


def _foreign(v):
    return hasattr(v, "__array_ufunc__") and not isinstance(v, (Strict, onp.ndarray, onp.generic))


def _unwrap(v):
    if isinstance(v, Strict):
        return v.data
    if isinstance(v, (list, tuple)):
        return type(v)(_unwrap(e) for e in v)
    if isinstance(v, dict):
        return {k: _unwrap(e) for k, e in v.items()}
    return v


def _wrap(v):
    if isinstance(v, (onp.ndarray, onp.generic)):
        return Strict(v)
    if isinstance(v, tuple):
        return tuple(_wrap(e) for e in v)
    return v


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
