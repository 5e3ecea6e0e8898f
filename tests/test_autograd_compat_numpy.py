"""The wrapped NumPy namespace accepts what autograd's does (issue 17): values checked
against NumPy and finite differences, reverse and forward mode."""

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, jacfwd

EPS = 1e-6


def _fd(f, x):
    x = onp.asarray(x, float)
    out = onp.zeros(x.shape)
    for i in onp.ndindex(x.shape):
        e = onp.zeros(x.shape)
        e[i] = EPS
        out[i] = (f(x + e) - f(x - e)) / (2 * EPS)
    return out


@pytest.mark.parametrize("name", ["mean", "std", "var", "sum"])
def test_reduction_of_list_of_traced_values(name):
    def f(v):
        return getattr(np, name)([v[0], 2.0 * v[1], onp.sin(v[2])])
    x = onp.array([0.3, -1.2, 0.7])
    plain = getattr(onp, name)
    assert f(x) == pytest.approx(plain([x[0], 2 * x[1], onp.sin(x[2])]))
    expected = _fd(f, x)
    assert onp.allclose(grad(f)(x), expected, atol=1e-6)
    assert onp.allclose(jacfwd(f)(x), expected, atol=1e-6)


def test_norm_of_tuple_of_traced_values():
    def f(v):
        return np.linalg.norm((v[0], v[1] * v[2]))
    x = onp.array([3.0, 2.0, 2.0])
    # hand-derived: norm = 5, d/dv = (v0, v1 v2^2, v1^2 v2) / 5
    expected = onp.array([3.0, 8.0, 8.0]) / 5.0
    assert f(x) == pytest.approx(5.0)
    assert onp.allclose(grad(f)(x), expected)
    assert onp.allclose(jacfwd(f)(x), expected)
    assert onp.allclose(_fd(f, x), expected, atol=1e-6)


def test_list_of_traced_arrays_second_argument():
    def f(v):
        return np.dot(v, [v, 2 * v]).sum()  # (2,) @ ... the list holds traced arrays
    x = onp.array([[1.0, 2.0], [0.5, -1.0]])
    def plain(v):
        return onp.dot(v, onp.array([v, 2 * v])).sum()
    assert f(x) == pytest.approx(plain(x))
    assert onp.allclose(grad(f)(x), _fd(plain, x), atol=1e-6)



def test_integer_casts_of_traced_values_are_plain_indices():
    # numpy.int64(x) and x.astype(int) give plain integer arrays (no derivative), as autograd
    def f(w):
        rows = onp.int64(w[:, -1])
        flags = (w[:, 0] + 0.5).astype(int).astype(bool)  # [True, False]
        assert rows.dtype == onp.int64 and flags.dtype == onp.bool_
        return (w[:, :-1][rows] ** 2).sum() + w[flags].sum()
    w = onp.array([[1.0, 2.0, 0.5], [-1.0, 3.0, 1.5]])  # away from the casts' jumps
    # rows = [0, 1] picks both rows once; flags picks row 0: hand-derived gradient
    expected = 2 * w * onp.array([1.0, 1.0, 0.0]) + onp.array([[1.0, 1.0, 1.0], [0, 0, 0]])
    assert onp.allclose(grad(f)(w), expected)
    assert onp.allclose(jacfwd(f)(w), expected)
    assert onp.allclose(_fd(f, w), expected, atol=1e-5)


def test_float_astype_stays_differentiable():
    def f(x):
        return (x.astype(onp.float32) * x).sum()
    x = onp.array([1.5, -2.0])
    assert onp.allclose(grad(f)(x), 2 * x)
