"""logsumexp's rules (GradBench lse): max over every axis with a number's cotangent, and a
number broadcast against an array (``x - max(x)``), against hand-derived values and the
general paths those rules take for boxes (grad of grad) and staged values (jit)."""

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np


def lse(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def _same_bits(a, b):
    a, b = onp.asarray(a), onp.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert onp.array_equal(a, b, equal_nan=True)
    assert a.tobytes() == b.tobytes()  # (also the signs of zeros)


_CASES = [
    onp.array([0.5, -1.0, 2.0, 1.5]),
    onp.array([1.0, 3.0, 3.0]),  # a tie at the max
    onp.array([-0.0, -1.0, -2.0]),  # the max is -0.0
    onp.arange(12.0).reshape(3, 4) / 7.0,
    onp.array([0.25, -1.0, 2.0], onp.float32),
    onp.array([2.0, 2.0, -1.0], onp.float32),
]


@pytest.mark.parametrize("x", _CASES, ids=range(len(_CASES)))
def test_lse_gradient_is_softmax(x):
    g = chainrule.grad(lse)(x)
    e = onp.exp(x.astype(float) - x.max())
    assert g.dtype == x.dtype and g.shape == x.shape
    onp.testing.assert_allclose(g, e / e.sum(), rtol=1e-6 if x.dtype == onp.float32 else 1e-13)


def test_lse_hessian_through_the_general_rules():
    x = onp.array([0.5, -1.0, 2.0, 2.0])  # (a tie: the boxes take the shared weights)
    s = onp.exp(x - x.max())
    s /= s.sum()
    onp.testing.assert_allclose(chainrule.hessian(lse)(x), onp.diag(s) - onp.outer(s, s),
                                rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("scale", [3.0, -2.0, onp.float64(-0.5), onp.float32(0.3), 0.1])
@pytest.mark.parametrize("name", ["max", "min", "nanmax", "nanmin"])
def test_extreme_over_every_axis_by_hand(name, scale):
    fun = getattr(np, name)
    for x in (onp.array([1.0, 3.0, 3.0]), onp.array([[3.0, -0.0], [-1.0, -3.0]]),
              onp.array([1.0, 3.0, 3.0], onp.float32)):
        g = chainrule.grad(lambda z: fun(z) * scale)(x)
        pick = x == getattr(onp, name)(x)
        want = (onp.float64(scale) * (pick / pick.sum())).astype(x.dtype)
        assert g.dtype == x.dtype
        _same_bits(g, want)


def test_extreme_nan_answer_gives_no_gradient():
    x = onp.array([1.0, onp.nan, 2.0])
    g = chainrule.grad(lambda z: -np.max(z))(x)
    _same_bits(g, -onp.zeros(3))  # (the shared weights, all 0, times the cotangent -1)
    g = chainrule.grad(lambda z: -np.nanmax(z))(x)
    _same_bits(g, onp.array([-0.0, -0.0, -1.0]))


def _programs():
    return [
        lse,
        lambda x: np.max(x) * 0.1,
        lambda x: -np.min(x) * np.float32(0.3),
        lambda x: np.sum((x - np.max(x)) ** 2),
        lambda x: np.sum(x * 2.0 - np.min(x, keepdims=True)),
        lambda x: np.sum(np.exp(x - np.max(x, axis=0))),
    ]


@pytest.mark.parametrize("k", range(6))
def test_jit_is_eager_bit_for_bit(k):
    f = _programs()[k]
    eager, staged = chainrule.grad(f), chainrule.jit(chainrule.grad(f))
    rng = onp.random.default_rng(k)
    inputs = [rng.normal(size=(3, 4)), onp.array([[1.0, 3.0], [3.0, -0.0]]),
              rng.normal(size=(3, 4)).astype(onp.float32), onp.array([[-0.0, -1.0]]),
              rng.normal(size=(3, 4))]
    for x in inputs:  # (twice the first shape: other winners on the second call)
        _same_bits(staged(x), eager(x))


def test_vmap_is_the_loop():
    xs = onp.random.default_rng(1).normal(size=(5, 7))
    xs[2, :2] = 4.0  # a tie in one example
    got = chainrule.vmap(chainrule.grad(lse))(xs)
    want = onp.stack([chainrule.grad(lse)(x) for x in xs])
    onp.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.parametrize("s", [onp.float64(3.0), onp.array(3.0), onp.float32(3.0), 3.0,
                               onp.array(3.0, onp.float32), onp.complex128(3.0 - 1.0j)])
@pytest.mark.parametrize("dtype", [onp.float64, onp.float32, onp.complex128])
def test_a_number_broadcast_gets_the_sum(s, dtype):
    # against the same number as a 1-element array (the general unbroadcast: a sum over
    # the broadcast axes, then the reshape)
    x = (onp.arange(12.0).reshape(3, 4) / 7.0).astype(dtype)
    if onp.iscomplexobj(x):
        x = x * (1.0 - 0.5j)

    def f(s, x):
        d = x - s
        return np.real(np.sum(d * np.conj(d))) + np.sum(np.real(x * s))

    got = chainrule.grad(f)(s, x)
    ref = chainrule.grad(f)(onp.reshape(s, (1, 1)), x)
    assert onp.shape(got) == onp.shape(s)
    assert onp.result_type(got) == onp.result_type(s)
    onp.testing.assert_allclose(got, ref.reshape(()), rtol=1e-6, atol=1e-6)
    _same_bits(chainrule.grad(f)(s, x), got)  # called again: the same bits


def test_a_number_broadcast_over_nothing():
    g = chainrule.grad(lambda s, x: np.sum(x - s))(onp.float64(1.0), onp.zeros(0))
    _same_bits(g, onp.float64(0.0))
