"""numpy.linalg: hand-derived derivatives, named tuple results, degenerate cases, dtypes.

The spec tables (specs/spec_linalg.py) check every rule against finite differences;
here the derivatives are compared with closed forms from matrix calculus.
"""

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, hessian, jvp, vjp

rng = onp.random.default_rng(0)


def general(n=3, batch=(), dtype=onp.float64):
    a = rng.standard_normal(batch + (n, n))
    if onp.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(batch + (n, n))
    return (a + 4 * onp.eye(n)).astype(dtype)


def spd(n=3, batch=(), dtype=onp.float64):
    b = general(n, batch, dtype)
    return (b @ onp.conj(onp.swapaxes(b, -1, -2)) + n * onp.eye(n)).astype(dtype)


def T(a):
    return onp.swapaxes(a, -1, -2)


def tangent_of(f, a, da):
    return jvp(f, (a,), (da,))[1]


# ----------------------------------------------------------------------------- det, slogdet, inv
@pytest.mark.parametrize("batch", [(), (2,)])
def test_det_gradient_is_det_times_inverse_transpose(batch):
    a = general(batch=batch)
    want = onp.linalg.det(a)[..., None, None] * T(onp.linalg.inv(a))
    onp.testing.assert_allclose(grad(lambda a: np.sum(np.linalg.det(a)))(a), want, rtol=1e-10)


def test_complex_det_is_holomorphic_no_conjugation():
    a = general(dtype=onp.complex128)
    want = onp.linalg.det(a) * T(onp.linalg.inv(a))
    got = vjp(np.linalg.det, a)[1](1.0 + 0j)[0]
    onp.testing.assert_allclose(got, want, rtol=1e-10)


def test_slogdet_named_fields_and_gradient():
    a = -general()

    def f(a):
        result = np.linalg.slogdet(a)
        sign, logabsdet = result
        assert result.logabsdet is not None and type(result).__name__ == "SlogdetResult"
        return result.logabsdet + 0 * sign

    onp.testing.assert_allclose(grad(f)(a), T(onp.linalg.inv(a)), rtol=1e-10)


def test_logdet_second_derivative():
    # d^2 log det A [E, E] = -tr(A^-1 E A^-1 E)
    a, e = spd(), rng.standard_normal((3, 3))
    first = lambda a: jvp(lambda a: np.linalg.slogdet(a)[1], (a,), (e,))[1]
    second = tangent_of(first, a, e)
    ai = onp.linalg.inv(a)
    onp.testing.assert_allclose(second, -onp.trace(ai @ e @ ai @ e), rtol=1e-8)


def test_inverse_tangent():
    a, e = general(batch=(2,)), rng.standard_normal((2, 3, 3))
    ai = onp.linalg.inv(a)
    onp.testing.assert_allclose(tangent_of(np.linalg.inv, a, e), -ai @ e @ ai, rtol=1e-10)


def test_matrix_power_tangent_is_product_rule():
    a, e = general() / 4, rng.standard_normal((3, 3))
    want = e @ a @ a + a @ e @ a + a @ a @ e
    onp.testing.assert_allclose(tangent_of(lambda a: np.linalg.matrix_power(a, 3), a, e), want,
                                rtol=1e-10)


# ----------------------------------------------------------------------------- symmetric eigen
def test_eigenvalue_tangent_is_v_dA_v():
    a = spd()
    e = rng.standard_normal((3, 3))
    e = e + e.T
    _, v = onp.linalg.eigh(a)
    want = onp.diag(v.T @ e @ v)
    onp.testing.assert_allclose(tangent_of(np.linalg.eigvalsh, a, e), want, rtol=1e-10)
    onp.testing.assert_allclose(tangent_of(lambda a: np.linalg.eigh(a).eigenvalues, a, e), want,
                                rtol=1e-10)


def test_eigenvalue_gradient_lives_in_the_triangle_numpy_reads():
    a = spd()
    _, v = onp.linalg.eigh(a)
    vv = onp.outer(v[:, 1], v[:, 1])
    # of the symmetric part: 2 v v^T; of the raw matrix (lower triangle read): tril
    sym_grad = grad(lambda a: np.linalg.eigh(a + a.T).eigenvalues[1])(a / 2)
    onp.testing.assert_allclose(sym_grad, 2 * vv, atol=1e-10)
    raw_grad = grad(lambda a: np.linalg.eigvalsh(a)[1])(a)
    onp.testing.assert_allclose(raw_grad, onp.tril(2 * vv, -1) + onp.diag(onp.diag(vv)),
                                atol=1e-10)
    upper = grad(lambda a: np.linalg.eigvalsh(a, UPLO="U")[1])(a)
    onp.testing.assert_allclose(upper, raw_grad.T, atol=1e-10)


def test_repeated_eigenvalues():
    a = onp.diag([1.0, 1.0, 2.0])
    # eigenvalues only: exact (sum w^2 = ||A||_F^2 over the triangle read)
    g = grad(lambda a: np.sum(np.linalg.eigh(a).eigenvalues ** 2))(a)
    onp.testing.assert_allclose(g, 2 * a, atol=1e-12)
    onp.testing.assert_allclose(grad(lambda a: np.sum(np.linalg.eigvalsh(a) ** 3))(a), 3 * a @ a)
    # eigenvectors: no derivative exists, and the result is not a finite (wrong) number
    with onp.errstate(invalid="ignore"):
        g = grad(lambda a: np.linalg.eigh(a).eigenvectors[0, 0] ** 2)(a)
    assert not onp.all(onp.isfinite(g))


def test_eigh_gauge_invariant_reconstruction():
    # A = V diag(w) V^H is independent of the eigenvectors' phases: its tangent is dA
    a = spd(dtype=onp.complex128)
    e = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    e = e + onp.conj(e.T)

    def rebuild(a):
        w, v = np.linalg.eigh(a)
        return (v * w) @ np.conj(np.swapaxes(v, -1, -2))

    onp.testing.assert_allclose(tangent_of(rebuild, a, e), e, atol=1e-10)


# ----------------------------------------------------------------------------- general eigen
def test_eig_eigenvalue_tangent_uses_left_eigenvectors():
    a = onp.diag([1.0, 2.0, 4.0]) + 0.3 * rng.standard_normal((3, 3))
    e = rng.standard_normal((3, 3))
    w, v = onp.linalg.eig(a)
    want = onp.diag(onp.linalg.solve(v, e @ v))
    onp.testing.assert_allclose(tangent_of(np.linalg.eigvals, a, e), want, rtol=1e-10)
    result = np.linalg.eig(a)
    assert type(result).__name__ == "EigResult" and result.eigenvectors.shape == (3, 3)


# ----------------------------------------------------------------------------- svd, qr, cholesky
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_svd_reconstruction_tangent_complex(shape):
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    e = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    def rebuild(a):
        r = np.linalg.svd(a, full_matrices=False)
        return (r.U * np.expand_dims(r.S, -2)) @ r.Vh

    onp.testing.assert_allclose(tangent_of(rebuild, a, e), e, atol=1e-10)


def test_singular_value_gradient_is_u_v():
    a = rng.standard_normal((4, 3))
    u, s, vh = onp.linalg.svd(a)
    g = grad(lambda a: np.linalg.svd(a, compute_uv=False)[0])(a)
    onp.testing.assert_allclose(g, onp.outer(u[:, 0], vh[0]), atol=1e-10)
    onp.testing.assert_allclose(grad(lambda a: np.linalg.norm(a, "nuc"))(a),
                                u[:, :3] @ vh, atol=1e-10)
    onp.testing.assert_allclose(grad(lambda a: np.linalg.norm(a, 2))(a), onp.outer(u[:, 0], vh[0]),
                                atol=1e-10)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_qr_tangents(shape):
    a = rng.standard_normal(shape)
    e = rng.standard_normal(shape)
    q, r = np.linalg.qr(a)
    dq, dr = jvp(lambda a: tuple(np.linalg.qr(a)), (a,), (e,))[1]
    onp.testing.assert_allclose(dq @ r + q @ dr, e, atol=1e-10)
    onp.testing.assert_allclose(onp.tril(dr, -1), 0, atol=1e-12)
    k = min(shape)
    omega = q.T @ dq
    onp.testing.assert_allclose(omega, -omega.T, atol=1e-10)
    assert dq.shape == (shape[0], k)


def test_cholesky_tangent_reconstructs():
    a = spd(dtype=onp.complex128)
    e = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    e = e + onp.conj(e.T)
    l = onp.linalg.cholesky(a)
    dl = tangent_of(np.linalg.cholesky, a, e)
    onp.testing.assert_allclose(dl @ onp.conj(l.T) + l @ onp.conj(dl.T), e, atol=1e-10)
    du = tangent_of(lambda a: np.linalg.cholesky(a, upper=True), a, e)
    onp.testing.assert_allclose(du, onp.conj(dl.T), atol=1e-10)


# ----------------------------------------------------------------------------- norms, lstsq, misc
def test_vector_norm_gradients():
    x = rng.standard_normal(5)
    onp.testing.assert_allclose(grad(np.linalg.norm)(x), x / onp.linalg.norm(x))
    onp.testing.assert_allclose(grad(lambda x: np.linalg.norm(x, 1))(x), onp.sign(x))
    i = onp.argmax(onp.abs(x))
    onp.testing.assert_allclose(grad(lambda x: np.linalg.norm(x, onp.inf))(x),
                                onp.sign(x) * (onp.arange(5) == i))
    onp.testing.assert_allclose(grad(lambda x: np.linalg.norm(x, 0))(x), 0)
    onp.testing.assert_allclose(grad(np.linalg.norm)(onp.zeros(3)), 0)
    z = x + 1j * rng.standard_normal(5)  # autograd's convention: conj(z) / |z|
    onp.testing.assert_allclose(grad(np.linalg.norm)(z), onp.conj(z) / onp.linalg.norm(z))


def test_lstsq_gradient_of_residual():
    # d/db ||A x* - b||^2 = 2 (b - A x*) (the normal equations make the A-path vanish)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal(5)
    x, res, rank, s = np.linalg.lstsq(a, b)
    assert rank == 3 and res.shape == (1,)
    g = grad(lambda b: np.linalg.lstsq(a, b)[1][0])(b)
    onp.testing.assert_allclose(g, 2 * (b - a @ x), atol=1e-10)
    onp.testing.assert_allclose(grad(lambda b: np.sum(np.linalg.lstsq(a, b)[0]))(b),
                                onp.linalg.pinv(a).T @ onp.ones(3), atol=1e-10)


def test_tensorinv_and_multi_dot_follow_their_definitions():
    a = general(6).reshape(2, 3, 6)
    f = lambda a: np.sum(np.linalg.tensorinv(a) ** 2)
    g = lambda a: np.sum(np.linalg.inv(np.reshape(a, (6, 6))) ** 2)
    onp.testing.assert_allclose(grad(f)(a), grad(g)(a).reshape(2, 3, 6))
    x, y, z = rng.standard_normal(3), rng.standard_normal((3, 4)), rng.standard_normal(4)
    onp.testing.assert_allclose(grad(lambda y: np.linalg.multi_dot([x, y, z]))(y), onp.outer(x, z))


def test_numpy_linalg_dispatches_to_chainrule():
    a = general()
    g = grad(lambda a: onp.linalg.det(a))(a)
    onp.testing.assert_allclose(g, onp.linalg.det(a) * T(onp.linalg.inv(a)), rtol=1e-10)
    h = hessian(lambda a: onp.linalg.norm(a) ** 2)(rng.standard_normal(3))
    onp.testing.assert_allclose(h, 2 * onp.eye(3), atol=1e-10)
    s = spd()
    g = grad(lambda a: np.sum(onp.linalg.eigh(a).eigenvalues))(s)  # trace of the triangle read
    onp.testing.assert_allclose(g, onp.eye(3), atol=1e-10)


@pytest.mark.parametrize("dtype", [onp.float32, onp.complex64])
def test_gradient_dtype_matches_input(dtype):
    a = spd(dtype=dtype)
    for f in (np.linalg.det, np.linalg.inv, np.linalg.eigvalsh, np.linalg.cholesky,
              lambda a: np.linalg.svd(a)[1], np.linalg.norm):
        _, pullback = vjp(f, a)
        out = f(a)
        assert pullback(onp.ones_like(out))[0].dtype == dtype


def test_clear_errors():
    a = rng.standard_normal((4, 3))
    with pytest.raises(ValueError, match="mode='raw'"):
        grad(lambda a: np.sum(np.linalg.qr(a, mode="raw")[0]))(a)


# ----------------------------------------------------------------------------- completeness
def test_every_function_has_rules_and_spec_cases():
    from chainrule._core.rule_table import primitive_jvps, primitive_vjps
    from chainrule._specs import spec_fft, spec_linalg

    for module, spec in ((np.linalg, spec_linalg), (np.fft, spec_fft)):
        tested = {case.name for case in spec.CASES}
        assert set(module.DIFFERENTIABLE) <= tested, set(module.DIFFERENTIABLE) - tested
        for name in module.DIFFERENTIABLE:
            fun = getattr(module, name)
            fun = getattr(fun, "primitive", fun)
            if getattr(fun, "_is_chainrule_primitive", False):
                assert fun in primitive_vjps and fun in primitive_jvps, name
    for fun in (np.linalg.svd_values, np.linalg.qr_r, np.linalg.lstsq_tuple):
        assert fun in primitive_vjps and fun in primitive_jvps, fun.__name__
