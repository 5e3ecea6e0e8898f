"""numpy.fft: closed-form derivatives (Parseval, symmetry of the DFT), dispatch, dtypes."""

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, hessian, jvp, vjp

rng = onp.random.default_rng(1)


def test_parseval_gradient_and_hessian():
    # sum |fft(x)|^2 = n sum x^2, so the gradient is 2 n x and the Hessian 2 n I
    x = rng.standard_normal(6)
    f = lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2)
    onp.testing.assert_allclose(grad(f)(x), 12 * x, rtol=1e-10)
    onp.testing.assert_allclose(hessian(f)(x), 12 * onp.eye(6), atol=1e-9)
    g = lambda x: np.sum(np.abs(np.fft.fft2(x, norm="ortho")) ** 2)
    x2 = rng.standard_normal((3, 4))
    onp.testing.assert_allclose(grad(g)(x2), 2 * x2, rtol=1e-10)


@pytest.mark.parametrize("name", ["fft", "ifft"])
def test_dft_is_its_own_transpose(name):
    # the DFT matrix is symmetric: the VJP (no conjugation) is the transform itself
    x = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    c = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    fun = getattr(np.fft, name)
    onp.testing.assert_allclose(vjp(fun, x)[1](c)[0], getattr(onp.fft, name)(c), rtol=1e-10)


def test_round_trips_have_identity_derivatives():
    x = rng.standard_normal((4, 6))
    c = rng.standard_normal((4, 6))
    for f in (lambda x: np.fft.irfft(np.fft.rfft(x), n=6),
              lambda x: np.fft.irfftn(np.fft.rfftn(x), s=(4, 6), axes=(0, 1)),
              lambda x: np.real(np.fft.ifft2(np.fft.fft2(x))),
              lambda x: np.fft.ifftshift(np.fft.fftshift(x))):
        onp.testing.assert_allclose(grad(lambda x, f=f: np.sum(c * f(x)))(x), c, atol=1e-10)
        onp.testing.assert_allclose(jvp(f, (x,), (c,))[1], c, atol=1e-10)


def test_rfft_tangent_is_rfft_of_tangent():
    x, t = rng.standard_normal(7), rng.standard_normal(7)
    onp.testing.assert_allclose(jvp(lambda x: np.fft.rfft(x, n=10), (x,), (t,))[1],
                                onp.fft.rfft(t, n=10))


def test_numpy_fft_dispatches_to_chainrule():
    x = rng.standard_normal(8)
    g = grad(lambda x: np.sum(onp.real(onp.fft.rfft(x))))(x)
    onp.testing.assert_allclose(g, onp.real(onp.fft.fft(onp.r_[onp.ones(5), onp.zeros(3)])))


@pytest.mark.parametrize("dtype", [onp.float32, onp.float64, onp.complex64])
def test_gradient_dtype_matches_input(dtype):
    x = rng.standard_normal(6).astype(dtype)
    assert grad(lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2))(x).dtype == dtype
    if onp.dtype(dtype).kind == "f":
        assert grad(lambda x: np.sum(np.abs(np.fft.rfft(x))))(x).dtype == dtype
