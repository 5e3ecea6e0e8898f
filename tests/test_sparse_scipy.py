"""chainrule.scipy.sparse: sparse constant operands and differentiable sparse solves,
against dense NumPy, finite differences (check_grads, both modes) and hand-derived VJPs."""

import numpy as onp
import pytest
import scipy.sparse as sp

import chainrule
import chainrule.numpy as np
from chainrule.scipy.sparse import matmul
from chainrule.scipy.sparse.linalg import spsolve, spsolve_values
from chainrule.test_util import check_grads

rng = onp.random.default_rng(1)
A = (sp.random(6, 6, density=0.3, random_state=2, format="csr") + 4 * sp.eye(6)).tocsr()
R = sp.random(4, 6, density=0.4, random_state=3, format="csr")  # rectangular
FORMATS = [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array, sp.coo_array]


@pytest.mark.parametrize("kind", FORMATS, ids=[k.__name__ for k in FORMATS])
def test_sparse_times_traced_vector(kind):
    M = kind(R)
    x = rng.random(6)
    f = lambda u: np.sin(matmul(M, u))  # noqa: E731
    expected = onp.cos(R @ x)[:, None] * R.toarray()  # hand-derived
    onp.testing.assert_allclose(chainrule.jacobian(f)(x), expected, atol=1e-14)
    onp.testing.assert_array_equal(chainrule.jacobian_sparsity(f, x).toarray(), R.toarray() != 0)
    check_grads(f, modes=["fwd", "rev"], order=2)(x)


@pytest.mark.parametrize("kind", FORMATS, ids=[k.__name__ for k in FORMATS])
def test_traced_times_sparse_and_transpose(kind):
    M = kind(R)
    x, X = rng.random(4), rng.random((3, 4))
    onp.testing.assert_allclose(
        chainrule.jacobian(lambda u: matmul(u, M))(x), R.toarray().T, atol=1e-14
    )
    check_grads(lambda u: matmul(u**2, M), modes=["fwd", "rev"], order=2)(X)
    check_grads(lambda u: matmul(M.T, u**2), modes=["fwd", "rev"], order=2)(x)
    f = lambda u: np.ravel(matmul(np.reshape(u, (3, 4)), M))  # noqa: E731
    dense = chainrule.jacobian(f)(onp.ravel(X))
    onp.testing.assert_array_equal(
        chainrule.jacobian_sparsity(f, onp.ravel(X)).toarray(), dense != 0
    )
    onp.testing.assert_allclose(
        chainrule.sparse_jacobian(f, onp.ravel(X)).toarray(), dense, atol=1e-14
    )


@pytest.mark.parametrize("kind", FORMATS, ids=[k.__name__ for k in FORMATS])
def test_the_operator_with_a_sparse_constant(kind):
    M, dense = kind(R), R.toarray()
    x, y, X = rng.random(6), rng.random(4), rng.random((6, 3))
    # hand-derived Jacobians of the products, in both modes
    onp.testing.assert_allclose(chainrule.jacobian(lambda u: M @ u)(x), dense, atol=1e-14)
    onp.testing.assert_allclose(chainrule.jacfwd(lambda u: M.T @ u)(y), dense.T, atol=1e-14)
    onp.testing.assert_allclose(chainrule.jacfwd(lambda u: u @ M)(y), dense.T, atol=1e-14)
    onp.testing.assert_allclose(chainrule.jacobian(lambda u: u @ M.T)(x), dense, atol=1e-14)
    for f, arg in [
        (lambda u: np.sin(M @ u), x),
        (lambda u: np.sin(M.T @ u**2), y),
        (lambda u: np.tanh(u @ M) * u[0], y),
        (lambda u: np.sin(M @ u) ** 2, X),
        (lambda u: np.cos(u.T @ M.T), X),
    ]:
        check_grads(f, modes=["fwd", "rev"], order=2)(arg)
    f = lambda u: np.exp(M @ u)  # noqa: E731
    onp.testing.assert_array_equal(chainrule.jacobian_sparsity(f, x).toarray(), dense != 0)
    onp.testing.assert_allclose(
        chainrule.jacobian(f, sparse=True)(x).toarray(), chainrule.jacobian(f)(x), atol=1e-14
    )


def test_the_operator_refuses_an_spmatrix_star():
    # spmatrix * x is SciPy's matrix product: refused with the fix, never elementwise
    with pytest.raises(TypeError, match="write A @ x"):
        chainrule.grad(lambda u: np.sum(sp.csr_matrix(A) * u))(rng.random(6))


def test_matmul_needs_a_sparse_operand():
    with pytest.raises(TypeError, match="scipy.sparse matrix"):
        matmul(onp.ones((2, 2)), onp.ones(2))


def test_spsolve_gradient_solves_the_transposed_system():
    b, w = rng.random(6), rng.random(6)
    f = lambda v: np.sum(w * spsolve(A, v))  # noqa: E731
    # hand-derived: d/db w.(A^-1 b) = A^-T w
    onp.testing.assert_allclose(
        chainrule.grad(f)(b), onp.linalg.solve(A.toarray().T, w), rtol=1e-12
    )
    check_grads(lambda v: spsolve(A, v), modes=["fwd", "rev"], order=2)(b)
    check_grads(
        lambda v: spsolve(sp.csc_array(A), np.reshape(v, (6, 1)) * v), modes=["fwd", "rev"], order=1
    )(b)


def test_spsolve_with_respect_to_the_values():
    b, w = rng.random(6), rng.random(6)
    data = A.data.copy()
    x = onp.linalg.solve(A.toarray(), b)
    lam = onp.linalg.solve(A.toarray().T, w)
    rows = onp.repeat(onp.arange(6), onp.diff(A.indptr))
    grad = chainrule.grad(lambda d: np.sum(w * spsolve_values(d, A, b)))(data)
    # hand-derived: d/dA_ij w.(A^-1 b) = -lam_i x_j, read at the stored entries
    onp.testing.assert_allclose(grad, -lam[rows] * x[A.indices], rtol=1e-12)
    onp.testing.assert_array_equal(data, A.data)  # inputs are not modified
    check_grads(lambda d: spsolve_values(d, A, b), modes=["fwd", "rev"], order=1)(data)
    check_grads(lambda d: spsolve_values(d, A, b), modes=["rev"], order=2)(data)
    check_grads(lambda v: spsolve_values(data, A, v), modes=["fwd", "rev"], order=2)(b)


def test_spsolve_refuses_dense_matrices_and_wrong_values():
    with pytest.raises(TypeError, match="numpy.linalg.solve"):
        spsolve(onp.eye(2), onp.ones(2))
    with pytest.raises(ValueError, match="stores"):
        spsolve_values(onp.ones(3), A, onp.ones(6))
