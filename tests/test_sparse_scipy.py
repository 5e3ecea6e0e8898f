"""chainrule.scipy.sparse: sparse constant operands and differentiable sparse solves,
against dense NumPy, finite differences (check_grads, both modes) and hand-derived VJPs."""

import warnings

import numpy as onp
import pytest
import scipy.linalg as scipy_linalg_dense
import scipy.sparse as sp
import scipy.sparse.linalg as scipy_linalg

import chainrule
import chainrule.numpy as np
from chainrule.scipy.sparse import linalg as sparse_linalg
from chainrule.scipy.sparse import matmul
from chainrule.scipy.sparse.linalg import splu, spsolve, spsolve_values
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


# ----------------------------------------------------------------------------- splu, Krylov


S = (A + A.T).tocsr()  # symmetric positive definite (diagonally dominant), for cg
KRYLOV = [("cg", S), ("gmres", A), ("bicgstab", A)]


def test_splu_solves_are_differentiable_in_b_and_the_values():
    b, w = rng.random(6), rng.random(6)
    lu = splu(A)
    dense = A.toarray()
    onp.testing.assert_allclose(lu.solve(b), onp.linalg.solve(dense, b), rtol=1e-13)
    onp.testing.assert_allclose(lu.solve(b, trans="T"), onp.linalg.solve(dense.T, b), rtol=1e-13)
    # hand-derived: d/db w.(A^-1 b) = A^-T w;  d/dA_ij = -lam_i x_j at the stored entries
    onp.testing.assert_allclose(
        chainrule.grad(lambda v: np.sum(w * lu.solve(v)))(b),
        onp.linalg.solve(dense.T, w),
        rtol=1e-12,
    )
    x, lam = onp.linalg.solve(dense, b), onp.linalg.solve(dense.T, w)
    rows = onp.repeat(onp.arange(6), onp.diff(A.indptr))
    grad = chainrule.grad(lambda d: np.sum(w * splu(A, data=d).solve(b)))(A.data.copy())
    onp.testing.assert_allclose(grad, -lam[rows] * x[A.indices], rtol=1e-12)
    for trans in ("N", "T"):
        check_grads(lambda v, t=trans: lu.solve(v, t), modes=["fwd", "rev"], order=2)(b)
        check_grads(lambda d, t=trans: splu(A, data=d).solve(b, t), modes=["fwd", "rev"], order=2)(
            A.data.copy()
        )
    with pytest.raises(ValueError, match="trans"):
        lu.solve(b, "X")


def test_spsolve_values_of_several_right_hand_sides():
    B = rng.random((6, 3))
    expected = onp.linalg.solve(A.toarray(), B)
    onp.testing.assert_allclose(spsolve(A, B, data=A.data), expected, rtol=1e-12)
    check_grads(lambda d: spsolve(A, B, data=d), modes=["fwd", "rev"], order=2)(A.data.copy())
    check_grads(lambda v: spsolve(A, v), modes=["fwd", "rev"], order=2)(B)


@pytest.mark.parametrize("name,M", KRYLOV, ids=[k[0] for k in KRYLOV])
def test_krylov_solves_in_b_and_the_values(name, M):
    solver = getattr(sparse_linalg, name)
    b, w = rng.random(6), rng.random(6)
    dense = M.toarray()
    x, info = solver(M, b, rtol=1e-13)
    assert info == 0
    onp.testing.assert_allclose(x, onp.linalg.solve(dense, b), rtol=1e-11)
    onp.testing.assert_allclose(
        chainrule.grad(lambda v: np.sum(w * solver(M, v, rtol=1e-13)[0]))(b),
        onp.linalg.solve(dense.T, w),
        rtol=1e-10,
    )
    check_grads(lambda v: solver(M, v, rtol=1e-13)[0], modes=["fwd", "rev"], order=2)(b)
    check_grads(lambda d: solver(M, b, rtol=1e-13, data=d)[0] ** 2, modes=["fwd", "rev"], order=2)(
        M.data.copy()
    )


@pytest.mark.parametrize("name,M", KRYLOV, ids=[k[0] for k in KRYLOV])
def test_krylov_reports_as_scipy(name, M):
    solver, reference = getattr(sparse_linalg, name), getattr(scipy_linalg, name)
    b = rng.random(6)
    x0 = rng.random(6)
    options = {"maxiter": 1}
    if name == "gmres":
        options.update(restart=2, callback_type="pr_norm")
    calls = []
    x, info = solver(M, b, x0, callback=lambda *a: calls.append(1), **options)
    x_ref, info_ref = reference(M, b, x0, callback=lambda *a: None, **options)
    assert info == info_ref > 0  # not converged: SciPy's info, no exception
    onp.testing.assert_allclose(x, x_ref, rtol=1e-14)
    assert calls  # the callback ran in the user's solve
    with pytest.warns(RuntimeWarning, match="did not converge"):
        chainrule.grad(lambda v: np.sum(solver(M, v, **options)[0]))(b)


def test_krylov_with_a_preconditioner():
    b = rng.random(6)
    diag = sp.diags(1 / A.diagonal())
    x, info = sparse_linalg.gmres(A, b, rtol=1e-13, M=diag)
    assert info == 0
    check_grads(lambda v: sparse_linalg.gmres(A, v, rtol=1e-13, M=diag)[0], modes=["rev"])(b)


def test_expm_multiply_in_the_vector():
    from scipy.linalg import expm

    b, w = rng.random(6), rng.random(6)
    E = expm(-A.toarray())
    onp.testing.assert_allclose(sparse_linalg.expm_multiply(-A, b), E @ b, rtol=1e-12)
    onp.testing.assert_allclose(
        chainrule.grad(lambda v: np.sum(w * sparse_linalg.expm_multiply(-A, v)))(b),
        E.T @ w,
        rtol=1e-12,
    )
    check_grads(lambda v: sparse_linalg.expm_multiply(-A, v), modes=["fwd", "rev"], order=2)(b)
    check_grads(
        lambda v: sparse_linalg.expm_multiply(-A, v, start=0.0, stop=2.0, num=3),
        modes=["fwd", "rev"],
        order=2,
    )(b)


def _unsorted():
    """A with each row's entries stored in reverse order, and that order."""
    order = onp.concatenate(
        [onp.arange(A.indptr[r], A.indptr[r + 1])[::-1] for r in range(A.shape[0])]
    )
    unsorted = sp.csr_matrix((A.data[order], A.indices[order], A.indptr), shape=A.shape)
    assert not unsorted.has_sorted_indices
    return unsorted, order


@pytest.mark.parametrize("solve", ["spsolve", "splu", "bicgstab", "gmres", "expm_multiply"])
def test_data_of_an_unsorted_matrix_are_read_in_its_own_order(solve):
    # issue 34, item 5: the values were read in sorted order (another matrix, silently)
    unsorted, order = _unsorted()
    before = unsorted.indices.copy()
    b = rng.random(6)
    call = {
        "spsolve": lambda M, d: spsolve(M, b, data=d),
        "splu": lambda M, d: splu(M, data=d).solve(b),
        "bicgstab": lambda M, d: sparse_linalg.bicgstab(M, b, rtol=1e-13, data=d)[0],
        "gmres": lambda M, d: sparse_linalg.gmres(M, b, rtol=1e-13, data=d)[0],
        "expm_multiply": lambda M, d: sparse_linalg.expm_multiply(-M, b, data=-d),
    }[solve]
    expected = call(A, A.data)
    onp.testing.assert_allclose(call(unsorted, unsorted.data), expected, rtol=1e-10)
    w = rng.random(6)
    g_sorted = chainrule.grad(lambda d: w @ call(A, d))(A.data)
    g_unsorted = chainrule.grad(lambda d: w @ call(unsorted, d))(unsorted.data)
    onp.testing.assert_allclose(g_unsorted, g_sorted[order], rtol=1e-8, atol=1e-12)
    onp.testing.assert_array_equal(unsorted.indices, before)  # A as it was


def test_a_matrix_with_duplicate_entries_sums_them():
    half = A.data / 2  # each entry stored twice, halves summing to A's
    doubled = sp.csr_matrix(
        (onp.repeat(half, 2), onp.repeat(A.indices, 2), A.indptr * 2), shape=A.shape
    )
    assert doubled.nnz == 2 * A.nnz
    b = rng.random(6)
    onp.testing.assert_allclose(
        spsolve(doubled, b, data=doubled.data), onp.linalg.solve(A.toarray(), b), rtol=1e-12
    )
    g = chainrule.grad(lambda d: onp.ones(6) @ spsolve(doubled, b, data=d))(doubled.data)
    g_single = chainrule.grad(lambda d: onp.ones(6) @ spsolve(A, b, data=d))(A.data)
    onp.testing.assert_allclose(g, onp.repeat(g_single, 2), rtol=1e-10)


def test_integer_right_hand_sides_are_solved_in_floats():
    b = onp.arange(6)
    onp.testing.assert_allclose(spsolve(A, b), onp.linalg.solve(A.toarray(), b), rtol=1e-12)
    onp.testing.assert_allclose(splu(A).solve(b), onp.linalg.solve(A.toarray(), b), rtol=1e-12)


def test_krylov_info_under_jit_is_that_of_each_run():
    # info comes from the solve at every run (jit guards it), not from the first trace
    solve = chainrule.jit(lambda v: sparse_linalg.cg(S, v, maxiter=2))
    b = rng.random(6)
    expected = [scipy_linalg.cg(S, v, maxiter=2)[1] for v in (b, onp.zeros(6), b)]
    assert expected[0] > 0 and expected[1] == 0
    assert [solve(v)[1] for v in (b, onp.zeros(6), b)] == expected


# ----------------------------------------------------------------------------- expm_multiply in A


def _frechet_at_entries(dense, w, b, rows, cols):
    """<w, L(A, e_i e_j^T) b> for each stored (i, j), from SciPy's dense expm_frechet."""
    n = dense.shape[0]
    unit = onp.eye(n)
    return onp.array([
        onp.sum(w * (scipy_linalg_dense.expm_frechet(dense, onp.outer(unit[i], unit[j]),
                                                     compute_expm=False) @ b))
        for i, j in zip(rows, cols)
    ])  # fmt: skip


E_FORMATS = [sp.csr_matrix, sp.csc_matrix, sp.csr_array, sp.csc_array]
Q = (sp.random(7, 7, density=0.35, random_state=5, format="csr") - 0.7 * sp.eye(7)).tocsr()


@pytest.mark.parametrize("kind", E_FORMATS, ids=[k.__name__ for k in E_FORMATS])
def test_expm_multiply_in_the_values_against_expm_frechet(kind):
    M = kind(Q)
    data = Q.data.copy()  # CSR order, sorted indices, whatever M's format
    dense = Q.toarray()
    rows = onp.repeat(onp.arange(7), onp.diff(Q.indptr))
    b, w, t = rng.standard_normal(7), rng.standard_normal(7), rng.standard_normal(data.size)
    f = lambda d, v: sparse_linalg.expm_multiply(M, v, data=d)  # noqa: E731
    onp.testing.assert_allclose(f(data, b), scipy_linalg_dense.expm(dense) @ b, rtol=1e-13)
    # JVP: L(A, dA) b, dA the tangent on A's pattern
    dA = sp.csr_matrix((t, Q.indices, Q.indptr), shape=Q.shape).toarray()
    expected = scipy_linalg_dense.expm_frechet(dense, dA, compute_expm=False) @ b
    _, tangent = chainrule.jvp(lambda d: f(d, b), (data,), (t,))
    onp.testing.assert_allclose(tangent, expected, rtol=1e-12, atol=1e-14)
    # VJP: L(A^T, w b^T) at the stored entries
    grad = chainrule.grad(lambda d: np.sum(w * f(d, b)))(data)
    onp.testing.assert_allclose(grad, _frechet_at_entries(dense, w, b, rows, Q.indices),
                                rtol=1e-11, atol=1e-13)  # fmt: skip
    onp.testing.assert_array_equal(data, Q.data)  # inputs are not modified
    check_grads(f, modes=["fwd", "rev"], order=2)(data, b)


def test_expm_multiply_in_the_values_with_several_vectors_and_times():
    data, dense = Q.data.copy(), Q.toarray()
    rows = onp.repeat(onp.arange(7), onp.diff(Q.indptr))
    B, W = rng.standard_normal((7, 2)), rng.standard_normal((7, 2))
    grad = chainrule.grad(lambda d: np.sum(W * sparse_linalg.expm_multiply(Q, B, data=d)))(data)
    expected = sum(_frechet_at_entries(dense, W[:, c], B[:, c], rows, Q.indices) for c in range(2))
    onp.testing.assert_allclose(grad, expected, rtol=1e-11, atol=1e-13)
    check_grads(
        lambda d, V: sparse_linalg.expm_multiply(Q, V, data=d), modes=["fwd", "rev"], order=1
    )(data, B)
    # a grid of times: exp(t_i A) b at t = 0.5, 1, 1.5 (and t = 0 with endpoint=False)
    b, w = rng.standard_normal(7), rng.standard_normal((3, 7))
    grid = lambda d: sparse_linalg.expm_multiply(Q, b, start=0.5, stop=1.5, num=3, data=d)  # noqa: E731
    grad = chainrule.grad(lambda d: np.sum(w * grid(d)))(data)
    expected = sum(
        t * _frechet_at_entries(t * dense, w[i], b, rows, Q.indices)
        for i, t in enumerate([0.5, 1.0, 1.5])
    )
    onp.testing.assert_allclose(grad, expected, rtol=1e-11, atol=1e-13)
    check_grads(grid, modes=["fwd", "rev"], order=1)(data)
    check_grads(
        lambda d: sparse_linalg.expm_multiply(Q, b, 0.0, 2.0, 4, False, data=d),
        modes=["fwd", "rev"],
        order=1,
    )(data)
    check_grads(
        lambda d: sparse_linalg.expm_multiply(Q, b, traceA=float(dense.trace()), data=d),
        modes=["fwd", "rev"],
        order=1,
    )(data)


def test_expm_multiply_refuses_what_it_cannot_differentiate(monkeypatch):
    dense = Q.toarray()
    with pytest.raises(TypeError, match="data="):
        chainrule.grad(lambda a: np.sum(sparse_linalg.expm_multiply(a, onp.ones(7))))(dense)
    with pytest.raises(ValueError, match="stores"):
        sparse_linalg.expm_multiply(Q, onp.ones(7), data=onp.ones(3))
    # the quadrature of the VJP stops with an error, never an unchecked answer
    from chainrule.scipy.sparse import linalg as module

    monkeypatch.setattr(module, "_EXPM_MAX_NODES", 8)
    with pytest.raises(RuntimeError, match="did not converge"):
        chainrule.grad(lambda d: np.sum(sparse_linalg.expm_multiply(Q, onp.ones(7), data=d)))(
            Q.data.copy()
        )


def test_expm_multiply_gradient_in_the_values_under_jit():
    # the rule's node count is decided at each run (8A needs more nodes than A)
    rows = onp.repeat(onp.arange(7), onp.diff(Q.indptr))
    b, w = onp.ones(7), onp.arange(7.0)
    grad = chainrule.jit(
        chainrule.grad(lambda d: np.sum(w * sparse_linalg.expm_multiply(Q, b, data=d)))
    )
    for c in (1.0, 8.0, 1.0):
        expected = _frechet_at_entries(c * Q.toarray(), w, b, rows, Q.indices)
        onp.testing.assert_allclose(grad(c * Q.data), expected, rtol=1e-11, atol=1e-13)


def test_expm_multiply_refuses_a_differentiated_time_clearly():
    Q = sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(5, 5), format="csr")
    b = onp.arange(5.0)
    with pytest.raises(TypeError, match="not in stop=: pass stop as a plain number"):
        chainrule.grad(lambda s: np.sum(sparse_linalg.expm_multiply(Q, b, stop=s, num=3)))(1.0)
    # the way it names: t scaling A's values is differentiable in t
    t = 0.7
    d = chainrule.grad(lambda s: np.sum(sparse_linalg.expm_multiply(Q, b, data=s * Q.data)))(t)
    expected = onp.sum(Q @ scipy_linalg.expm_multiply(t * Q, b))  # d/dt exp(tQ) b = Q exp(tQ) b
    onp.testing.assert_allclose(d, expected, rtol=1e-10)


def test_expm_multiply_gradients_keep_trace_a():
    # a linear operator has no trace SciPy can read: without traceA it estimates one, and
    # warns; the VJPs pass the caller's on (scaled by each time)
    Q = sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(5, 5), format="csr")
    op, b = scipy_linalg.aslinearoperator(Q), onp.arange(5.0)
    trace = float(Q.diagonal().sum())
    for options in ({}, {"start": 0.0, "stop": 1.0, "num": 3}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # SciPy's "Trace of LinearOperator not available"
            g = chainrule.grad(lambda v, options=options: np.sum(
                sparse_linalg.expm_multiply(op, v, traceA=trace, **options)))(b)
        times = [1.0] if not options else onp.linspace(0.0, 1.0, 3)
        expected = sum(scipy_linalg.expm_multiply(t * Q.T.tocsr(), onp.ones(5)) for t in times)
        onp.testing.assert_allclose(g, expected, rtol=1e-12)


# ----------------------------------------------------------------------------- sparse arguments
# A scipy.sparse matrix is a differentiable argument: the derivative in A is a matrix of A's
# format and pattern holding d f / d (each stored value), against central differences of A.data.
def _values_fd(ref, M, eps=1e-6):
    grad = onp.zeros(M.data.size)
    for k in range(M.data.size):
        up, down = M.copy(), M.copy()
        up.data.ravel()[k] += eps
        down.data.ravel()[k] -= eps
        grad[k] = (ref(up) - ref(down)) / (2 * eps)
    return grad


X, W, B_RHS = rng.random(6), rng.random(6), rng.random(6)


def _solved(M):
    return scipy_linalg.spsolve(M.tocsc(), B_RHS)


SPARSE_ARGUMENT_CASES = {
    "A@x": (lambda M: np.sum((M @ X) ** 2), lambda M: onp.sum((M @ X) ** 2)),
    "x@A": (lambda M: np.sum(np.sin(X @ M)), lambda M: onp.sum(onp.sin(X @ M))),
    "A.T@x": (lambda M: W @ (M.T @ X), lambda M: W @ (M.T @ X)),
    "spsolve": (lambda M: W @ spsolve(M, B_RHS), lambda M: W @ _solved(M)),
    "splu": (lambda M: W @ splu(M).solve(B_RHS), lambda M: W @ _solved(M)),
    "gmres": (lambda M: W @ sparse_linalg.gmres(M, B_RHS, rtol=1e-13)[0],
              lambda M: W @ _solved(M)),
    "expm_multiply": (lambda M: W @ sparse_linalg.expm_multiply(-M, B_RHS),
                      lambda M: W @ scipy_linalg.expm_multiply(-M.tocsr(), B_RHS)),
    "toarray": (lambda M: np.sum(M.toarray() ** 3), lambda M: onp.sum(M.toarray() ** 3)),
    "arithmetic": (lambda M: W @ ((2.0 * M - M / 4.0 + -M) @ X),
                   lambda M: W @ ((2.0 * M - M / 4.0 - M) @ X)),
}


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr", "csr_array"])
@pytest.mark.parametrize("case", sorted(SPARSE_ARGUMENT_CASES))
def test_a_sparse_matrix_is_a_differentiable_argument(case, fmt):
    fun, ref = SPARSE_ARGUMENT_CASES[case]
    special = {"bsr": lambda: A.tobsr(blocksize=(2, 2)), "csr_array": lambda: sp.csr_array(A)}
    M = special[fmt]() if fmt in special else A.asformat(fmt)
    before = M.copy()
    g = chainrule.grad(fun)(M)
    assert type(g) is type(M) and g.shape == M.shape and g.data.shape == M.data.shape
    onp.testing.assert_allclose(onp.ravel(g.data), _values_fd(ref, M), rtol=1e-6, atol=1e-8)
    onp.testing.assert_array_equal(M.data, before.data)  # A as it was, and not aliased
    assert not onp.shares_memory(g.data, M.data)


def test_a_sparse_argument_in_forward_mode_and_to_second_order():
    f = SPARSE_ARGUMENT_CASES["A@x"][0]
    direction = A.copy()
    direction.data = rng.random(A.nnz)
    value, tangent = chainrule.jvp(f, (A,), (direction,))
    onp.testing.assert_allclose(tangent, chainrule.grad(f)(A).data @ direction.data, rtol=1e-12)
    check_grads(f, modes=["fwd", "rev"], order=2)(A)
    # d/dx of a derivative in A: the sparse cotangent carries x's derivative
    mixed = chainrule.grad(lambda y: np.sum(chainrule.grad(
        lambda M: np.sum((M @ y) ** 2))(A).toarray()))(X)
    dense = chainrule.grad(lambda y: np.sum(chainrule.grad(
        lambda M: np.sum((M @ y) ** 2))(A.toarray()) * (A.toarray() != 0)))(X)
    onp.testing.assert_allclose(mixed, dense, rtol=1e-12)


def test_a_sparse_argument_in_a_container_with_duplicates():
    coo = sp.coo_matrix((onp.array([1.0, 2.0, 3.0]), ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    grads = chainrule.grad(lambda p: np.sum((p["A"] @ p["x"]) ** 2))({"A": coo, "x": onp.ones(2)})
    # (A x) = (3, 3): d/d a_k = 2 (A x)[row_k] x[col_k] for each stored duplicate
    onp.testing.assert_allclose(grads["A"].data, [6.0, 6.0, 6.0])
    onp.testing.assert_allclose(grads["x"], 2 * coo.toarray().T @ onp.array([3.0, 3.0]))


def test_what_a_traced_sparse_matrix_cannot_do_is_said():
    with pytest.raises(AttributeError, match="A.multiply: chainrule differentiates these"):
        chainrule.grad(lambda M: np.sum(M.multiply(M).toarray()))(A)
    with pytest.raises(TypeError, match="formats csr, csc, coo, bsr"):
        chainrule.grad(SPARSE_ARGUMENT_CASES["A@x"][0])(A.todia())
    with pytest.raises(TypeError, match="dtype int64"):
        chainrule.grad(lambda M: np.sum(M @ X[:3]))(sp.csr_matrix(onp.eye(3, dtype=onp.int64)))
    with pytest.raises(TypeError, match="Jacobian with respect to a scipy.sparse matrix"):
        chainrule.jacobian(lambda M: M @ X)(A)
    with pytest.raises(TypeError, match="pass one of them"):
        chainrule.grad(lambda M: np.sum(spsolve(M, B_RHS, data=A.data)))(A)
