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


SPLITTERS = [
    ("split", lambda m, x: m.split(x, 2, axis=1)),
    ("array_split", lambda m, x: m.array_split(x, 3, axis=1)),
    ("hsplit", lambda m, x: m.hsplit(x, 2)),
    ("vsplit", lambda m, x: m.vsplit(x, [1])),
    ("dsplit", lambda m, x: m.dsplit(x, 2)),
    ("gradient", lambda m, x: m.gradient(x, axis=(0, 2))),
]


@pytest.mark.parametrize("name,split", SPLITTERS, ids=[s[0] for s in SPLITTERS])
def test_forward_mode_of_functions_returning_lists(name, split):
    from chainrule import make_jvp

    x = onp.random.default_rng(0).standard_normal((2, 4, 4))
    v = onp.random.default_rng(1).standard_normal((2, 4, 4))
    _, tangent = make_jvp(lambda x: split(np, x ** 2))(x)(v)
    # these are linear maps of x ** 2: the tangent is the map applied to 2 x v
    expected = split(onp, 2 * x * v)
    assert len(tangent) == len(expected)
    for t, e in zip(tangent, expected):
        assert onp.allclose(t, e)

    def weighted(x):  # a scalar of every piece, for jacfwd and second order
        return sum(np.sum(np.sin(p) * (k + 1)) for k, p in enumerate(split(np, x ** 2)))

    g = grad(weighted)(x)
    assert onp.allclose(jacfwd(weighted)(x), g)
    assert onp.allclose(g, _fd(weighted, x), atol=1e-5)
    # second order: forward over forward and forward over reverse against the Hessian's
    # finite differences along v
    hv_fwd = jacfwd(lambda x: make_jvp(weighted)(x)(v)[1])(x)
    hv_rev = jacfwd(grad(weighted))(x).reshape(x.size, x.size) @ v.ravel()
    hv_fd = (grad(weighted)(x + EPS * v) - grad(weighted)(x - EPS * v)) / (2 * EPS)
    assert onp.allclose(hv_fwd, hv_fd, atol=1e-5)
    assert onp.allclose(hv_rev.reshape(x.shape), hv_fd, atol=1e-5)


def test_nested_jvp_of_split_returns_plain_lists():
    from chainrule import make_jvp

    x = onp.arange(6.0)

    def tangent_of_split(xv):
        return make_jvp(lambda y: np.split(y ** 2, 3))(xv[0])(xv[1])[1]

    # d/d(x, v) of split(2 x v) along (dx, dv) is split(2 dx v + 2 x dv)
    dx, dv = onp.ones(6), onp.linspace(0, 1, 6)
    value, tangent = make_jvp(tangent_of_split)((x, x))((dx, dv))
    assert isinstance(value, list) and isinstance(tangent, list)
    for t, e in zip(tangent, onp.split(2 * dx * x + 2 * x * dv, 3)):
        assert type(t) is onp.ndarray and onp.allclose(t, e)
