"""chainrule.vmap: JAX's in_axes/out_axes semantics, composition with the derivative
transforms in both orders, data-dependent Python control flow, and its errors."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np

# each test twice: as calls choose, and with every call starting batched (conftest)
pytestmark = pytest.mark.usefixtures("vmap_both_ways")


R = onp.random.default_rng(0)
X = R.normal(size=(4, 3))
W = R.normal(size=3)


def test_in_axes_ints_none_negative_and_pytrees():
    f = lambda w, x: np.tanh(x @ w)
    want = onp.tanh(X @ W)
    onp.testing.assert_allclose(cr.vmap(f, in_axes=(None, 0))(W, X), want, rtol=1e-14)
    onp.testing.assert_allclose(cr.vmap(f, in_axes=[None, -1])(W, X.T), want, rtol=1e-14)
    # a pytree argument with a pytree of axes, and a dict whose entries map differently
    g = lambda p: np.tanh(p["x"] @ p["w"])
    got = cr.vmap(g, in_axes=({"w": None, "x": 1},))({"w": W, "x": X.T})
    onp.testing.assert_allclose(got, want, rtol=1e-14)
    # a single int for a tuple argument maps every leaf
    h = lambda pair: pair[0] * pair[1]
    onp.testing.assert_allclose(cr.vmap(h)((X, X[:, ::-1])), X * X[:, ::-1], rtol=1e-14)


def test_out_axes_and_tuple_outputs():
    f = lambda x: (np.sum(x), np.outer(x, x))
    s, o = cr.vmap(f, out_axes=(0, -1))(X)
    onp.testing.assert_allclose(s, X.sum(1), rtol=1e-14)
    assert o.shape == (3, 3, 4)
    onp.testing.assert_allclose(o, onp.einsum("bi,bj->ijb", X, X), rtol=1e-14)
    middle = cr.vmap(lambda x: np.outer(x, x), out_axes=1)(X)
    onp.testing.assert_allclose(middle, onp.einsum("bi,bj->ibj", X, X), rtol=1e-14)
    # out_axes None: an output the same for every example comes back once
    const = cr.vmap(lambda w, x: (w * 2.0, x + w), in_axes=(None, 0), out_axes=(None, 0))
    a, b = const(W, X)
    onp.testing.assert_allclose(a, 2 * W, rtol=0)
    onp.testing.assert_allclose(b, X + W, rtol=0)


def test_keyword_arguments_map_over_their_leading_axis():
    got = cr.vmap(lambda w, x: np.dot(x, w), in_axes=(None,))(W, x=X)
    onp.testing.assert_allclose(got, X @ W, rtol=1e-14)


def test_axis_size_when_nothing_is_mapped():
    got = cr.vmap(lambda w: w * 2.0, in_axes=None, axis_size=3)(W)
    onp.testing.assert_allclose(got, onp.tile(2 * W, (3, 1)), rtol=0)


def _loss(w, x, y):
    return (np.tanh(x @ w) - y) ** 2


Y = R.normal(size=4)


def _hand_per_example_grads(w, xs, ys):
    t = onp.tanh(xs @ w)
    return (2 * (t - ys) * (1 - t**2))[:, None] * xs


def test_per_example_gradients_vmap_of_grad():
    got = cr.vmap(cr.grad(_loss), in_axes=(None, 0, 0))(W, X, Y)
    onp.testing.assert_allclose(got, _hand_per_example_grads(W, X, Y), rtol=1e-12)


def test_per_example_gradients_against_torch_func():
    torch = pytest.importorskip("torch")
    from torch.func import grad, vmap

    def tloss(w, x, y):
        return (torch.tanh(x @ w) - y) ** 2

    want = vmap(grad(tloss), in_dims=(None, 0, 0))(*map(torch.tensor, (W, X, Y)))
    got = cr.vmap(cr.grad(_loss), in_axes=(None, 0, 0))(W, X, Y)
    onp.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


def test_grad_of_summed_vmap():
    total = lambda w: np.sum(cr.vmap(_loss, in_axes=(None, 0, 0))(w, X, Y))
    got = cr.grad(total)(W)
    onp.testing.assert_allclose(got, _hand_per_example_grads(W, X, Y).sum(0), rtol=1e-12)
    # forward mode through vmap as well
    v = R.normal(size=3)
    _, tangent = cr.jvp(total, (W,), (v,))
    onp.testing.assert_allclose(tangent, got @ v, rtol=1e-12)


def test_vmap_of_vmap():
    A = R.normal(size=(2, 3, 4))
    f = lambda x, y: np.dot(x, y)  # scalars from vectors
    got = cr.vmap(cr.vmap(f, in_axes=(0, None)), in_axes=(0, None))(A, A[0, 0])
    onp.testing.assert_allclose(got, A @ A[0, 0], rtol=1e-14)
    got = cr.vmap(cr.vmap(f, in_axes=(0, 0)), in_axes=(1, None))(A, A[:, 0])
    onp.testing.assert_allclose(got, onp.einsum("bak,bk->ab", A, A[:, 0]), rtol=1e-14)


def test_jacobian_and_hessian_of_and_under_vmap():
    f = lambda x: np.sin(x) * np.sum(x**2)
    jac = cr.jacobian(cr.vmap(f))(X)  # (4,3) -> (4,3): block diagonal over examples
    for b in range(4):
        blocks = cr.jacobian(f)(X[b])
        onp.testing.assert_allclose(jac[b, :, b, :], blocks, rtol=1e-12)
        others = onp.delete(jac[b], b, axis=1)
        assert not others.any()
    # per-example Hessians of a scalar function, against the hand-derived ones
    g = lambda x: np.sum(x**3) * x[0]
    hs = cr.vmap(cr.hessian(g))(X)
    for b, x in enumerate(X):
        want = onp.diag(6 * x * x[0])
        want[0, :] += 3 * x**2
        want[:, 0] += 3 * x**2
        onp.testing.assert_allclose(hs[b], want, rtol=1e-12)
    # vmap of jvp: per-example directional derivatives
    tangents = R.normal(size=(4, 3))
    _, t = cr.vmap(lambda x, v: cr.jvp(f, (x,), (v,)))(X, tangents)
    want = onp.stack([cr.jacobian(f)(x) @ v for x, v in zip(X, tangents)])
    onp.testing.assert_allclose(t, want, rtol=1e-12)


def _branchy(x):
    if np.sum(x) > 0:
        return np.sin(x)
    return np.cos(x) * 2.0


def _newton_sqrt(a):
    x = a
    while np.abs(x * x - a) > 1e-10:  # a different number of steps per example
        x = 0.5 * (x + a / x)
    return x


def test_data_dependent_if_per_example():
    xs = onp.array([[1.0, 2.0], [-3.0, 1.0], [0.5, -0.1]])
    got = cr.vmap(_branchy)(xs)
    want = onp.stack([onp.sin(xs[0]), 2 * onp.cos(xs[1]), onp.sin(xs[2])])
    onp.testing.assert_allclose(got, want, rtol=1e-14)
    grads = cr.vmap(cr.grad(lambda x: np.sum(_branchy(x))))(xs)
    want = onp.stack([onp.cos(xs[0]), -2 * onp.sin(xs[1]), onp.cos(xs[2])])
    onp.testing.assert_allclose(grads, want, rtol=1e-14)


def test_data_dependent_while_per_example():
    a = onp.array([2.0, 9.0, 1e4])
    onp.testing.assert_allclose(cr.vmap(_newton_sqrt)(a), onp.sqrt(a), rtol=1e-10)
    d = cr.vmap(cr.grad(_newton_sqrt))(a)
    onp.testing.assert_allclose(d, 0.5 / onp.sqrt(a), rtol=1e-8)


def test_inputs_not_modified():
    x = X.copy()
    cr.vmap(lambda v: np.sort(v))(x)
    onp.testing.assert_array_equal(x, X)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: cr.vmap(np.sin)(onp.ones((2, 3))), None),
        (lambda: cr.vmap(lambda a, b: a + b)(onp.ones(2), onp.ones(3)), "batch size"),
        (lambda: cr.vmap(np.sin, in_axes=2)(onp.ones((2, 3))), "out of range"),
        (lambda: cr.vmap(np.sin, in_axes=(0, 0))(onp.ones(2)), "in_axes has 2"),
        (lambda: cr.vmap(np.sin, in_axes=None)(onp.ones(2)), "axis_size"),
        (lambda: cr.vmap(np.sin)(1.0), "scalar"),
        (lambda: cr.vmap(np.sin, out_axes=None)(onp.arange(2.0)), "differs"),
        (lambda: cr.vmap(lambda x: x, in_axes="a")(onp.ones(2)), "must be an int"),
    ],
)
def test_errors(call, match):
    if match is None:  # the control case: the same call shapes work
        assert call().shape == (2, 3)
        return
    with pytest.raises(ValueError, match=match):
        call()
