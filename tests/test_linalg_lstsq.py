"""numpy.linalg.lstsq as one primitive: NumPy's own answer (x, residuals, rank, s) under
every transform, and the derivatives of x, residuals and s against finite differences and
JAX, for tall, square, wide and rank-deficient matrices, 1-d and 2-d right-hand sides."""

from __future__ import annotations

import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule._core.tracer import getval

R = onp.random.default_rng(7)


def _deficient(m, n, rank):
    return R.standard_normal((m, rank)) @ R.standard_normal((rank, n))


def _full(shape):
    return R.standard_normal(shape), lambda p: p


def _of_rank(m, n, rank):
    """A rank-deficient matrix as a function of its left factor: derivatives along it keep
    the rank (lstsq is differentiable at constant rank only)."""
    right = R.standard_normal((rank, n))
    return R.standard_normal((m, rank)), lambda p: p @ right


# (name, (parameter, matrix of the parameter), rcond)
MATRICES = [
    ("tall", _full((5, 3)), None),
    ("square", (R.standard_normal((3, 3)) + 3 * onp.eye(3), lambda p: p), None),
    ("wide", _full((3, 5)), None),
    ("deficient tall", _of_rank(5, 3, 2), None),
    ("deficient wide", _of_rank(3, 4, 2), 1e-10),
    ("tall rcond", _full((6, 2)), 0.01),
]
RHS = ["vector", "matrix"]


def _rhs(a, kind):
    return R.standard_normal(a.shape[0] if kind == "vector" else (a.shape[0], 2))


def _scalar(lstsq, np_, matrix):
    """A scalar function of all three differentiable answers, of a's parameter and b."""

    def f(p, b, rcond):
        x, res, _, s = lstsq(matrix(p), b, rcond=rcond)
        return np_.sum(np_.sin(x)) + 0.3 * np_.sum(res) + 0.1 * np_.sum(s**3)

    return f


def _central(f, x, eps=1e-6):
    g = onp.zeros_like(x)
    for k in onp.ndindex(x.shape):
        e = onp.zeros_like(x)
        e[k] = eps
        g[k] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


@pytest.mark.parametrize("name, a, rcond", MATRICES, ids=[m[0] for m in MATRICES])
@pytest.mark.parametrize("kind", RHS)
def test_gradients_match_finite_differences(name, a, rcond, kind):
    a, matrix = a
    b = _rhs(matrix(a), kind)
    f = _scalar(np.linalg.lstsq, np, matrix)
    ref = _scalar(onp.linalg.lstsq, onp, matrix)
    g_a, g_b = cr.grad(f, (0, 1))(a, b, rcond)
    onp.testing.assert_allclose(g_a, _central(lambda a: ref(a, b, rcond), a), atol=2e-6)
    onp.testing.assert_allclose(g_b, _central(lambda b: ref(a, b, rcond), b), atol=2e-6)
    # forward mode: the same directional derivative
    da, db = R.standard_normal(a.shape), R.standard_normal(b.shape)
    _, t = cr.jvp(lambda a, b: f(a, b, rcond), (a, b), (da, db))
    onp.testing.assert_allclose(t, onp.sum(g_a * da) + onp.sum(g_b * db), rtol=1e-9)


def test_residuals_exist_only_at_full_column_rank_and_are_differentiated():
    a, b = R.standard_normal((5, 3)), R.standard_normal((5, 2))
    res = lambda a, b: np.linalg.lstsq(a, b)[1]
    ref = lambda a, b: onp.linalg.lstsq(a, b)[1]
    assert res(a, b).shape == (2,)
    j_a = cr.jacobian(res)(a, b)
    fd = onp.stack([_central(lambda a, k=k: ref(a, b)[k], a) for k in range(2)])
    onp.testing.assert_allclose(j_a, fd, atol=1e-6)
    # the second derivative (the rules are written with traced functions)
    h = cr.hessian(lambda b: np.linalg.lstsq(a, b)[1][0])(b[:, 0])
    p = onp.eye(5) - a @ onp.linalg.pinv(a)  # residual = b^T P b
    onp.testing.assert_allclose(h, 2 * p, atol=1e-10)
    # rank-deficient: no residuals, and none under grad either
    low = _deficient(5, 3, 2)
    assert np.linalg.lstsq(low, b)[1].shape == (0,)
    assert cr.grad(lambda a: np.sum(np.linalg.lstsq(a, b)[1]) + np.sum(a))(low).shape == (5, 3)


def test_complex_gradient_matches_finite_differences():
    a = R.standard_normal((4, 3)) + 1j * R.standard_normal((4, 3))
    b = R.standard_normal(4) + 1j * R.standard_normal(4)

    def f(a):
        x, res, _, s = np.linalg.lstsq(a, b)
        return np.sum(np.abs(x) ** 2) + np.sum(res) + np.sum(s)

    def ref(re, im):
        x, res, _, s = onp.linalg.lstsq(re + 1j * im, b)
        return onp.sum(onp.abs(x) ** 2) + onp.sum(res) + onp.sum(s)

    g = cr.grad(f)(a)
    # autograd's convention for a real function of complex a: d/dRe a - i d/dIm a
    fd = (_central(lambda re: ref(re, a.imag), a.real)
          - 1j * _central(lambda im: ref(a.real, im), a.imag))
    onp.testing.assert_allclose(g, fd, atol=1e-6)


FULL_RANK = [m for m in MATRICES if not m[0].startswith("deficient")]


# (JAX differentiates its SVD-based lstsq through U and V, whose derivatives do not exist
# at a zero singular value: at deficient rank its gradient is not the derivative; ours is,
# checked above against finite differences along the matrices of that rank.)
@pytest.mark.parametrize("name, a, rcond", FULL_RANK, ids=[m[0] for m in FULL_RANK])
@pytest.mark.parametrize("kind", RHS)
def test_gradients_match_jax(name, a, rcond, kind):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    a, matrix = a
    b = _rhs(matrix(a), kind)
    # JAX answers residuals at full column rank only as NumPy does; its rcond is a cutoff
    # like NumPy's (None: eps * max(m, n))
    ours = cr.grad(_scalar(np.linalg.lstsq, np, matrix), (0, 1))(a, b, rcond)
    theirs = jax.grad(_scalar(jnp.linalg.lstsq, jnp, matrix), (0, 1))(a, b, rcond)
    for o, t in zip(ours, theirs):
        onp.testing.assert_allclose(o, onp.asarray(t), rtol=1e-7, atol=1e-9)


# ----------------------------------------------------------------------------- jit ≡ eager
EDGES = [
    # the values at which the old composition (residuals recomputed from x) differed
    onp.array([[1.12, 0.42, 0.84], [-1.64, -1e308, 1.92], [-0.0, -1.55, 1.83],
               [0.70, -1.21, 0.69]]),
    onp.array([[1e308, 1.0], [1.0, -1e308], [0.5, 2.0]]),
    onp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
    onp.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]),  # rank 1: no residuals
]


def _same(x, y):
    assert type(x) is type(y)
    if isinstance(x, onp.ndarray):
        assert x.dtype == y.dtype and x.shape == y.shape
        onp.testing.assert_array_equal(x, y)
        assert (onp.signbit(x) == onp.signbit(y)).all()
    else:
        assert x == y


def test_jit_answers_numpy_bit_for_bit_at_edge_values():
    whole = cr.jit(lambda a, b: np.linalg.lstsq(a, b))
    summed = cr.jit(lambda a, b: sum(np.sum(v) for v in np.linalg.lstsq(a, b)[1::2]))
    loss = lambda a, b: np.sum(np.linalg.lstsq(a, b)[1]) + np.sum(a)
    grads = cr.jit(cr.grad(loss, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for a in EDGES + EDGES[::-1]:
            b = onp.linspace(-1.0, 2.0, a.shape[0] * 2).reshape(a.shape[0], 2)
            for got, want in zip(whole(a, b), onp.linalg.lstsq(a, b)):
                _same(got, want)
            x, res, rank, s = onp.linalg.lstsq(a, b)
            _same(summed(a, b), 0 + onp.sum(res) + onp.sum(s))
            _same(grads(a, b), cr.grad(loss, 0)(a, b))


def test_traced_lstsq_answers_numpy_tuple_under_grad():
    a, b = EDGES[0], onp.arange(4.0)
    seen = []

    def f(a):
        answer = np.linalg.lstsq(a, b)
        seen.append([getval(v) for v in answer])
        return np.sum(answer[0])

    cr.grad(f)(a)
    for got, want in zip(seen[0], onp.linalg.lstsq(a, b)):
        _same(onp.asarray(got) if isinstance(want, onp.ndarray) else got, want)


# ----------------------------------------------------------------------------- vmap
def test_vmap_equals_the_loop():
    # (a batching rule: no warning of a loop over the whole function)
    a = R.standard_normal((4, 5, 3))
    b = R.standard_normal((4, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = cr.vmap(lambda a, b: np.linalg.lstsq(a, b))(a, b)
    got = cr.vmap(lambda a, b: np.linalg.lstsq(a, b))(a, b)
    want = [onp.linalg.lstsq(a[i], b[i]) for i in range(4)]
    for k in range(4):
        onp.testing.assert_array_equal(got[k], onp.stack([w[k] for w in want]))
    shared = cr.vmap(lambda b: np.linalg.lstsq(a[0], b)[0])(b)
    onp.testing.assert_array_equal(shared, onp.stack([onp.linalg.lstsq(a[0], v)[0] for v in b]))
    g = cr.vmap(cr.grad(lambda a, b: np.sum(np.linalg.lstsq(a, b)[1])))(a, b)
    for i in range(4):
        onp.testing.assert_array_equal(
            g[i], cr.grad(lambda a, b: np.sum(np.linalg.lstsq(a, b)[1]))(a[i], b[i]))
