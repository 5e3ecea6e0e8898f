"""Sparsity rules of structurally sparse primitives give the exact pattern (issue 34, item
8): at a random point, where no value vanishes by accident, the detected pattern equals
the nonzeros of the dense Jacobian. Before their rules these were dense."""

from __future__ import annotations

import numpy as onp
import pytest
import scipy.special

import chainrule
import chainrule.numpy as np
import chainrule.scipy.linalg as csl
import chainrule.scipy.signal as csig
import chainrule.scipy.special as csp

rng = onp.random.default_rng(3)
STENCIL = onp.array([1.0, -2.0, 1.0])
M = rng.random((4, 4)) + 4 * onp.eye(4)

CASES = {
    "diff": (lambda u: np.diff(u), 12),
    "diff_n2_axis0": (lambda u: np.ravel(np.diff(np.reshape(u, (4, 3)), n=2, axis=0)), 12),
    "diff_prepend": (lambda u: np.diff(u, prepend=0.0, append=1.0), 8),
    "ediff1d": (lambda u: np.ediff1d(u, to_begin=[1.0]), 8),
    "gradient": (lambda u: np.ravel(np.stack(np.gradient(np.reshape(u, (3, 4))))), 12),
    "trapezoid": (lambda u: np.trapezoid(np.reshape(u, (3, 4))), 12),
    "convolve_same": (lambda u: np.convolve(u, STENCIL, "same"), 10),
    "convolve_kernel": (lambda u: np.convolve(onp.arange(1.0, 9.0), u[:3], "valid"), 5),
    "correlate": (lambda u: np.correlate(u, STENCIL, "full"), 10),
    "correlate_kernel": (lambda u: np.correlate(onp.arange(1.0, 9.0), u[:3], "same"), 5),
    "polyval": (lambda u: np.polyval(onp.array([1.0, 2.0, 3.0]), u), 6),
    "meshgrid": (lambda u: np.ravel(np.stack(np.meshgrid(u[:3], u[3:])) ** 2), 7),
    "dot_scalar": (lambda u: np.dot(2.0, u), 6),
    "dot_by_traced_scalar": (lambda u: np.dot(u, u[0]), 6),
    "dot_nd": (lambda u: np.ravel(np.dot(np.reshape(u, (2, 2, 3)), onp.eye(3)[:, :2])), 12),
    "matmul_stack": (lambda u: np.ravel(np.reshape(u, (3, 2, 2)) @ np.reshape(u, (3, 2, 2))), 12),
    "tensordot": (lambda u: np.ravel(np.tensordot(np.reshape(u, (3, 4)), M, 1)), 12),
    "inner": (lambda u: np.ravel(np.inner(np.reshape(u, (3, 4)), M)), 12),
    "outer": (lambda u: np.ravel(np.outer(u[:3], u[3:])), 7),
    "einsum": (lambda u: np.einsum("ij,jk->ik", np.reshape(u, (3, 4)), M), 12),
    "einsum_ellipsis": (lambda u: np.ravel(np.einsum("...ii->...i", np.reshape(u, (3, 2, 2)))), 12),
    "kron": (lambda u: np.ravel(np.kron(np.reshape(u[:4], (2, 2)), onp.eye(2) + 1)), 4),
    "cross": (lambda u: np.ravel(np.cross(np.reshape(u, (4, 3)), onp.array([1.0, 2.0, 3.0]))), 12),
    "fft_axis": (lambda u: np.ravel(np.abs(np.fft.fft(np.reshape(u, (3, 4)), axis=0))), 12),
    "rfft": (lambda u: np.ravel(np.abs(np.fft.rfft(np.reshape(u, (3, 4))))), 12),
    "fftshift": (lambda u: np.fft.fftshift(u) * u, 7),
    "inv_stack": (lambda u: np.ravel(np.linalg.inv(np.reshape(u, (3, 2, 2)) + 3 * onp.eye(2))), 12),
    "det_stack": (lambda u: np.linalg.det(np.reshape(u, (3, 2, 2))), 12),
    "eigh_items": (lambda u: np.linalg.eigh(_symmetric(u))[0] * 2.0, 12),
    "solve_columns": (lambda u: np.ravel(np.linalg.solve(M, np.reshape(u, (4, 3)))), 12),
    "norm_axis": (lambda u: np.linalg.norm(np.reshape(u, (3, 4)), axis=1), 12),
    "var_axis": (lambda u: np.var(np.reshape(u, (3, 4)), axis=1), 12),
    "average_weights": (
        lambda u: np.average(np.reshape(u, (3, 4)), axis=1, weights=onp.ones((3, 4))), 12),
    "trace_stack": (lambda u: np.trace(np.reshape(u, (3, 2, 2)), axis1=1, axis2=2), 12),
    "bincount": (lambda u: np.bincount(onp.array([0, 2, 2, 1, 0]), u[:5]), 6),
    "cov": (lambda u: np.ravel(np.cov(np.reshape(u, (3, 4)))), 12),
    "split": (lambda u: np.split(u, 3)[1] * 2.0, 6),
    "index_update": (lambda u: np.index_update(u, onp.array([1, 3]), u[:2] ** 2), 6),
    "index_add": (lambda u: np.index_add(u, onp.array([1, 1, 3]), u[:3] ** 2), 6),
    "softmax_axis": (lambda u: np.ravel(csp.softmax(np.reshape(u, (3, 4)), axis=1)), 12),
    "logsumexp_axis": (lambda u: csp.logsumexp(np.reshape(u, (3, 4)), axis=0), 12),
    "signal_convolve": (
        lambda u: np.ravel(csig.convolve(np.reshape(u, (3, 4)), onp.ones((2, 2)))), 12),
}


def _symmetric(u):
    a = np.reshape(u[:9], (3, 3))
    return a + np.transpose(a)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_pattern_is_exact(name):
    fun, n = CASES[name]
    x = rng.random(n) + 0.5
    pattern = chainrule.jacobian_sparsity(fun, x).toarray()
    dense = onp.asarray(chainrule.jacobian(fun)(x)).reshape(pattern.shape)
    onp.testing.assert_array_equal(pattern, dense != 0)
    onp.testing.assert_allclose(
        chainrule.sparse_jacobian(fun, x).toarray(), dense, rtol=1e-13, atol=1e-13
    )


# rules whose global pattern is larger than the Jacobian at a point: which element a median
# picks depends on x, a triangular solve's column reads part of b's column
COVERING = {
    "median_axis": (lambda u: np.median(np.reshape(u, (3, 4)), axis=0), 12, 12),
    "quantile_q": (lambda u: np.ravel(np.quantile(np.reshape(u, (3, 4)), [0.3, 0.6], axis=1)),
                   12, 24),
    "scipy_triangular": (
        lambda u: np.ravel(csl.solve_triangular(onp.triu(M), np.reshape(u, (4, 3)))), 12, 48),
}


@pytest.mark.parametrize("name", sorted(COVERING))
def test_the_pattern_covers_the_jacobian_everywhere(name):
    fun, n, nnz = COVERING[name]
    pattern = chainrule.jacobian_sparsity(fun, rng.random(n)).toarray()
    assert pattern.sum() == nnz  # (dense: n times the number of outputs)
    for _ in range(4):
        x = rng.random(n)
        dense = onp.asarray(chainrule.jacobian(fun)(x)).reshape(pattern.shape)
        assert not (dense.astype(bool) & ~pattern).any()


def tridiagonal_with_diff(u):
    return -np.diff(u, n=2) + np.exp(u[1:-1])


def test_a_residual_written_with_diff_takes_three_colours():
    x = rng.random(1000)
    jac = chainrule.SparseJacobian(tridiagonal_with_diff, x)
    assert (jac.mode, jac.n_colours) == ("forward", 3)  # 998 before diff had its rule
    small = rng.random(30)
    onp.testing.assert_allclose(
        chainrule.sparse_jacobian(tridiagonal_with_diff, small).toarray(),
        chainrule.jacobian(tridiagonal_with_diff)(small),
        rtol=1e-14,
        atol=1e-14,
    )


def test_a_dot_with_a_scalar_is_diagonal():
    pattern = chainrule.jacobian_sparsity(lambda u: np.dot(2.0, u), onp.ones(500))
    assert pattern.nnz == 500
    assert chainrule.SparseJacobian(lambda u: np.dot(u, 3.0) + u, onp.ones(500)).n_colours == 1


def test_a_scalar_function_of_a_batch_of_matrices_has_a_block_hessian():
    def fun(u):
        return np.sum(np.linalg.slogdet(np.reshape(u, (50, 2, 2)) + 4 * onp.eye(2))[1])

    x = rng.random(200)
    hess = chainrule.SparseHessian(fun, x)
    assert hess.n_colours == 4  # one per entry of a 2 x 2 block
    onp.testing.assert_allclose(hess(x).toarray(), chainrule.hessian(fun)(x), atol=1e-12)


def test_logsumexp_matches_scipy_and_its_pattern():
    x = rng.random(12)
    fun = lambda u: csp.logsumexp(np.reshape(u, (3, 4)), axis=1)  # noqa: E731
    onp.testing.assert_allclose(fun(x), scipy.special.logsumexp(x.reshape(3, 4), axis=1))
    pattern = chainrule.jacobian_sparsity(fun, x).toarray()
    onp.testing.assert_array_equal(pattern, onp.kron(onp.eye(3), onp.ones(4)) != 0)


def test_the_coverage_table_shows_which_functions_are_dense_and_why():
    from chainrule import coverage

    rows = {row.qualname: row.sparsity for row in coverage.collect().rows}
    for name in ("numpy.diff", "numpy.dot", "numpy.kron", "numpy.einsum", "numpy.convolve",
                 "numpy.fft.fft", "numpy.linalg.solve", "numpy.median", "numpy.split"):
        assert rows[name] == "yes", name
    assert rows["scipy.linalg.solve_sylvester"].startswith("dense: each entry of X reads")
    assert all(s in ("yes", "?", "-") or s.startswith("dense: ") for s in rows.values())
    assert "sparsity" in coverage.collect().text().splitlines()[2]


@pytest.mark.parametrize(
    "fun",
    [lambda u: np.diff(u, append=u[-2:]) ** 2, lambda u: np.diff(u, n=2, prepend=u[0]),
     lambda u: np.ediff1d(u, to_begin=u[:1] * 3.0, to_end=[2.0])],
    ids=["append", "prepend", "ediff1d"],
)
def test_diff_with_a_traced_prepend_or_append(fun):
    # found by the sparse contract: both modes read prepend/append as constants (and
    # NumPy's _NoValue default as a value, where a traced keyword moved them into place)
    from chainrule.test_util import check_grads

    x = rng.random(5) + 0.5
    check_grads(fun, modes=["fwd", "rev"], order=2)(x)
    pattern = chainrule.jacobian_sparsity(fun, x).toarray()
    dense = onp.asarray(chainrule.jacobian(fun)(x))
    onp.testing.assert_array_equal(pattern, dense != 0)
