"""Sparse derivatives: detected patterns equal the nonzeros of dense Jacobians/Hessians
(random points, so no accidental zeros), coloured values equal dense ones, colour counts."""

import autograd
import autograd.numpy as anp_ref
import numpy as onp
import pytest
import scipy.sparse as sp

import chainrule
import chainrule.numpy as np
from chainrule._transforms.colouring import colour_columns

rng = onp.random.default_rng(0)


def tridiagonal_residual(u):
    # -u'' + exp(u) on a grid, Dirichlet rows at the ends
    inner = -u[:-2] + 2 * u[1:-1] - u[2:] + np.exp(u[1:-1])
    return np.concatenate([u[:1] - 1.0, inner, u[-1:]])


def arrowhead(u):
    return np.concatenate([np.sum(u**2)[None], u[1:] ** 2 + u[0] * u[1:]])


B = onp.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]])


def block_diagonal(u):
    blocks = np.reshape(u, (-1, 3))
    return np.ravel(np.tanh(blocks @ B))


def kinetics(c):
    # A + B -> C (k1), C -> A + B (k2), C -> D (k3): species A, B, C, D in cells
    a, b, cc, d = c[0::4], c[1::4], c[2::4], c[3::4]
    r1, r2, r3 = 2.0 * a * b, 0.5 * cc, 0.3 * cc**2
    rates = np.stack([-r1 + r2, -r1 + r2, r1 - r2 - r3, r3 - 0.1 * d], axis=1)
    return np.ravel(rates)


W = onp.array([1.0, 2.0, -1.0])


def broadcasting(u):
    return np.ravel(np.sin(u[:, None] * W[None, :]) + u[:, None])


INDEX = onp.array([3, 0, 0, 5, 2])


def indexing(u):
    return np.concatenate([u[INDEX] ** 2, np.flip(u)[:3] * u[1:4], np.take(u, [1, 1])])


def matrix_product(u):
    return np.cos(A_SPARSE_DENSE @ u)


A_SPARSE_DENSE = onp.where(rng.random((7, 6)) < 0.3, rng.standard_normal((7, 6)), 0.0)


def scalars_and_reductions(u):
    x = np.reshape(u, (2, 3))
    return np.concatenate(
        [
            np.array([u[0] * u[1], np.sin(u[2]), u[5] ** 2]),
            np.sum(x, axis=0),
            np.mean(x, 1, None, None, True)[:, 0],
            np.prod(x, axis=1),
        ]
    )


def cumulative(u):
    x = np.reshape(u, (3, 4))
    return np.concatenate(
        [np.ravel(np.cumsum(x, axis=1)), np.ravel(np.cumprod(x, 0)), np.cumsum(u[:5])]
    )


CASES = [
    (cumulative, 12),
    (scalars_and_reductions, 6),
    (tridiagonal_residual, 9),
    (arrowhead, 7),
    (block_diagonal, 9),
    (kinetics, 12),
    (broadcasting, 5),
    (indexing, 6),
    (matrix_product, 6),
]


def dense_pattern(matrix):
    return onp.asarray(matrix) != 0


@pytest.mark.parametrize("fun,n", CASES, ids=[f.__name__ for f, _ in CASES])
def test_jacobian_pattern_is_exact(fun, n):
    x = rng.random(n) + 0.5
    pattern = chainrule.jacobian_sparsity(fun, x)
    assert sp.issparse(pattern) and pattern.format == "csr" and pattern.dtype == bool
    dense = chainrule.jacobian(fun)(x)
    onp.testing.assert_array_equal(pattern.toarray(), dense_pattern(dense))


@pytest.mark.parametrize("fun,n", CASES, ids=[f.__name__ for f, _ in CASES])
def test_sparse_jacobian_equals_dense(fun, n):
    x = rng.random(n) + 0.5
    values = chainrule.sparse_jacobian(fun, x)
    assert sp.issparse(values) and values.format == "csr"
    onp.testing.assert_allclose(values.toarray(), chainrule.jacobian(fun)(x), rtol=0, atol=1e-12)


def test_tridiagonal_takes_three_colours_and_is_reusable():
    n = 50
    jac = chainrule.SparseJacobian(tridiagonal_residual, onp.zeros(n))
    assert (jac.mode, jac.n_colours) == ("forward", 3)
    for _ in range(2):  # new points, the same pattern and colouring
        x = rng.standard_normal(n)
        x_before = x.copy()
        values = jac(x).toarray()
        onp.testing.assert_array_equal(x, x_before)  # the input is not modified
        # hand-derived: tridiagonal (-1, 2 + exp(u_i), -1), identity rows at the ends
        expected = onp.diag(2 + onp.exp(x)) - onp.eye(n, k=1) - onp.eye(n, k=-1)
        expected[0], expected[-1] = 0, 0
        expected[0, 0] = expected[-1, -1] = 1
        onp.testing.assert_allclose(values, expected, rtol=1e-13, atol=1e-13)


def test_matches_autograd():
    x = rng.random(12) + 0.5

    def kinetics_ref(c):
        a, b, cc, d = c[0::4], c[1::4], c[2::4], c[3::4]
        r1, r2, r3 = 2.0 * a * b, 0.5 * cc, 0.3 * cc**2
        return anp_ref.ravel(anp_ref.stack([-r1 + r2, -r1 + r2, r1 - r2 - r3, r3 - 0.1 * d], 1))

    expected = autograd.jacobian(kinetics_ref)(x)
    onp.testing.assert_allclose(
        chainrule.sparse_jacobian(kinetics, x).toarray(), expected, atol=1e-12
    )


def test_a_dense_row_goes_reverse():
    def fun(u):
        return np.concatenate([np.sum(u**2)[None], u[1:] * u[:-1]])

    x = rng.random(20)
    jac = chainrule.SparseJacobian(fun, x)
    assert jac.mode == "reverse" and jac.n_colours <= 4
    onp.testing.assert_allclose(jac(x).toarray(), chainrule.jacobian(fun)(x), atol=1e-12)


def test_jacobian_sparse_option():
    jac = chainrule.jacobian(tridiagonal_residual, sparse=True)
    for n in (8, 8, 11):
        x = rng.random(n)
        onp.testing.assert_allclose(
            jac(x).toarray(), chainrule.jacobian(tridiagonal_residual)(x), atol=1e-12
        )
    assert len(jac.cache) == 2  # one pattern per shape


def test_sparse_option_refuses_what_it_cannot_do():
    with pytest.raises(NotImplementedError, match="one array argument"):
        chainrule.jacobian(lambda x, y: x * y, argnum=1, sparse=True)
    jac = chainrule.SparseJacobian(tridiagonal_residual, onp.zeros(5))
    with pytest.raises(ValueError, match="new SparseJacobian"):
        jac(onp.zeros(6))
    with pytest.raises(TypeError, match="scalar function"):
        chainrule.sparse_hessian(tridiagonal_residual, onp.ones(5))


def test_undeclared_primitive_is_dense_never_wrong():
    x = rng.random(6) + 0.5
    fun = lambda u: np.kron(u[:2], u[2:]) * u[0]  # noqa: E731  (kron declares no pattern)
    pattern = chainrule.jacobian_sparsity(fun, x).toarray()
    truth = dense_pattern(chainrule.jacobian(fun)(x))
    assert onp.all(pattern >= truth)
    onp.testing.assert_allclose(
        chainrule.sparse_jacobian(fun, x).toarray(), chainrule.jacobian(fun)(x), atol=1e-12
    )


def test_max_is_global_over_its_axis():
    # which element is the largest depends on x: globally, every element along the axis
    fun = lambda u: np.max(np.reshape(u, (2, 3)), axis=1)  # noqa: E731
    pattern = chainrule.jacobian_sparsity(fun, rng.random(6)).toarray()
    onp.testing.assert_array_equal(pattern, onp.kron(onp.eye(2), onp.ones(3)) != 0)
    for _ in range(3):
        x = rng.random(6)
        assert onp.all(pattern >= dense_pattern(chainrule.jacobian(fun)(x)))


def test_local_pattern_uses_values_of_traced_factors():
    fun = lambda u: np.ravel(np.reshape(u, (2, 2)) @ np.reshape(u, (2, 2)))  # noqa: E731
    x = onp.array([1.0, 0.0, 0.0, 2.0])
    global_pattern = chainrule.jacobian_sparsity(fun, x).toarray()
    local_pattern = chainrule.jacobian_sparsity(fun, x, local=True).toarray()
    truth = dense_pattern(chainrule.jacobian(fun)(x))
    assert onp.all(global_pattern >= local_pattern) and onp.all(local_pattern >= truth)
    assert local_pattern.sum() < global_pattern.sum()
    # the global pattern holds everywhere: it covers the dense pattern at a random point
    y = rng.random(4) + 0.5
    onp.testing.assert_array_equal(global_pattern, dense_pattern(chainrule.jacobian(fun)(y)))


def banded_objective(u):
    # separable plus a coupling of bandwidth 2: a pentadiagonal Hessian
    return np.sum(u**4) + np.sum(np.sin(u[1:] * u[:-1])) + np.sum((u[2:] - u[:-2]) ** 3)


def chain_objective(u):
    return np.sum(np.exp(u[1:] - u[:-1]) ** 2) + np.sum(np.log(u))


@pytest.mark.parametrize("fun", [banded_objective, chain_objective])
def test_hessian_pattern_and_values(fun):
    x = rng.random(10) + 0.5
    dense = chainrule.hessian(fun)(x)
    pattern = chainrule.hessian_sparsity(fun, x)
    assert pattern.format == "csr"
    onp.testing.assert_array_equal(pattern.toarray(), dense_pattern(dense))
    hess = chainrule.SparseHessian(fun, x)
    onp.testing.assert_allclose(hess(x).toarray(), dense, rtol=1e-12, atol=1e-12)
    onp.testing.assert_allclose(
        chainrule.sparse_hessian(fun, x).toarray(), dense, rtol=1e-12, atol=1e-12
    )
    onp.testing.assert_allclose(
        chainrule.hessian(fun, sparse=True)(x).toarray(), dense, rtol=1e-12, atol=1e-12
    )


def test_tridiagonal_hessian_is_exact_with_two_colours():
    x = rng.random(30) + 0.5
    pattern = chainrule.hessian_sparsity(chain_objective, x).toarray()
    onp.testing.assert_array_equal(pattern, dense_pattern(chainrule.hessian(chain_objective)(x)))
    # acyclic (path: two alternating colours); distance-1 on columns would need three
    assert chainrule.SparseHessian(chain_objective, x).n_colours == 2
    assert chainrule.SparseHessian(chain_objective, x, colouring="distance-1").n_colours == 3


@pytest.mark.parametrize("seed", range(5))
def test_colouring_is_valid(seed):
    r = onp.random.default_rng(seed)
    pattern = sp.random(40, 30, density=0.08, random_state=r, format="csr") != 0
    colours = colour_columns(pattern)
    dense = pattern.toarray()
    for c in range(colours.max() + 1):
        # columns of one colour never share a row: each row sees at most one of them
        assert dense[:, colours == c].sum(axis=1).max() <= 1


def test_hessian_of_a_quadratic_form_has_the_matrix_pattern():
    M = onp.where(rng.random((8, 8)) < 0.2, 1.0, 0.0) + onp.eye(8)
    M = M + M.T
    fun = lambda u: u @ (M @ u) + np.sum(np.exp(u))  # noqa: E731
    x = rng.random(8)
    onp.testing.assert_array_equal(chainrule.hessian_sparsity(fun, x).toarray(), M != 0)
    onp.testing.assert_allclose(
        chainrule.sparse_hessian(fun, x).toarray(), 2 * M + onp.diag(onp.exp(x)), rtol=1e-13
    )


@pytest.mark.parametrize("fun,n", CASES, ids=[f.__name__ for f, _ in CASES])
def test_staged_sweeps_equal_eager_ones(fun, n):
    x = rng.random(n) + 0.5
    staged = chainrule.SparseJacobian(fun, x, staged=True)
    eager = chainrule.SparseJacobian(fun, x)
    for point in (x, rng.random(n) + 0.5):  # the second call runs the staged program
        onp.testing.assert_array_equal(staged(point).toarray(), eager(point).toarray())


def test_staged_sweeps_follow_python_branches():
    # a decision on a traced value: jit guards it, so each branch gives its own Jacobian
    def fun(u):
        inner = u[1:] * u[:-1]
        return np.concatenate([inner, u[:1] ** 2 if u[0] > 0 else np.sin(u[:1])])

    jac = chainrule.SparseJacobian(fun, onp.ones(6), staged=True)
    for first in (1.0, -1.0, 2.0, -0.5):
        x = rng.random(6)
        x[0] = first
        onp.testing.assert_allclose(jac(x).toarray(), chainrule.jacobian(fun)(x), atol=1e-14)


def test_unstaged_sweeps_read_closures_at_every_call():
    # staged=True fixes what fun reads from closures at the first call (jit's rule); the
    # default re-runs fun, so a parameter changed between calls is seen
    scale = {"lam": 1.0}
    fun = lambda u: np.exp(u) * scale["lam"] + u[::-1]  # noqa: E731
    x = rng.random(5)
    jac = chainrule.SparseJacobian(fun, x)
    jac(x)
    scale["lam"] = 3.0
    onp.testing.assert_allclose(jac(x).toarray(), chainrule.jacobian(fun)(x), atol=1e-14)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_sort_is_global_along_its_axis_and_a_permutation_locally(axis):
    def fun(u):
        return np.ravel(np.sort(np.reshape(u, (3, 4)), axis=axis))

    x = rng.random(12)
    global_pattern = chainrule.jacobian_sparsity(fun, x).toarray()
    local_pattern = chainrule.jacobian_sparsity(fun, x, local=True).toarray()
    onp.testing.assert_array_equal(local_pattern, dense_pattern(chainrule.jacobian(fun)(x)))
    assert local_pattern.sum() == 12  # one source per output
    lines = {0: 3, 1: 4, -1: 4, None: 12}[axis]
    assert (global_pattern.sum(axis=1) == lines).all()
    for _ in range(3):  # the global pattern holds wherever the order changes
        y = rng.random(12)
        assert onp.all(global_pattern >= dense_pattern(chainrule.jacobian(fun)(y)))
    partition = lambda u: np.partition(u, 3)  # noqa: E731
    onp.testing.assert_array_equal(
        chainrule.jacobian_sparsity(partition, x, local=True).toarray(),
        dense_pattern(chainrule.jacobian(partition)(x)),
    )


def _tuple_and_dict_outputs(u):
    return {"total": np.sum(u**2)[None], "pairs": (u[1:] * u[:-1], np.exp(u[:2]))}


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
def test_outputs_of_several_arrays_in_either_mode(mode):
    # issue 34 item 7: reverse sweeps took one output array only, and forward could not be
    # forced; the rows are the output leaves flattened in order (dict keys sorted)
    x = rng.random(6)
    jac = chainrule.SparseJacobian(_tuple_and_dict_outputs, x, mode=mode)
    assert jac.mode == ("reverse" if mode == "auto" else mode)  # a full row: reverse is cheaper
    for point in (x, rng.random(6)):
        dense = chainrule.jacobian(_tuple_and_dict_outputs)(point)
        expected = onp.vstack([dense["pairs"][0], dense["pairs"][1], dense["total"]])
        onp.testing.assert_allclose(jac(point).toarray(), expected, rtol=1e-14, atol=1e-14)
    with pytest.raises(ValueError, match="mode='sideways'"):
        chainrule.SparseJacobian(_tuple_and_dict_outputs, x, mode="sideways")


def test_the_pattern_of_a_function_of_complex_x_has_a_column_per_element():
    # issue 34 item 7: a complex element counted as two columns ("matmul: dimension mismatch")
    x = rng.random(4) + 1j * rng.random(4)
    pattern = chainrule.jacobian_sparsity(lambda z: z[1:] * z[:-1] * (1 + 2j), x)
    assert pattern.shape == (3, 4)
    band = onp.eye(3, 4, dtype=bool) | onp.eye(3, 4, k=1, dtype=bool)
    onp.testing.assert_array_equal(pattern.toarray(), band)
    with pytest.raises(TypeError, match="real inputs"):
        chainrule.SparseJacobian(lambda z: z * 2.0, x)(x)


@pytest.mark.parametrize("colouring", ["auto", "star", "acyclic", "distance-1"])
def test_a_hessian_with_an_empty_pattern_is_zero(colouring):
    # issue 34 item 7: the acyclic recovery of no entries raised SciPy's NotImplementedError
    x = rng.random(4)
    with pytest.warns(UserWarning, match="independent of input"):
        hess = chainrule.SparseHessian(lambda u: np.sum(2.0 * u), x, colouring=colouring)
    assert hess.n_colours == 0
    values = hess(x)
    assert values.shape == (4, 4) and values.nnz == 0


def test_the_dense_jacobian_of_a_complex_function_of_real_x():
    # issue 34 item 7: a reverse pass per real dimension gave twice the rows (reshape error)
    x = rng.random(3)
    expected = (1 + 2j) * onp.eye(3) + onp.roll(onp.eye(3), 1, axis=0)
    fun = lambda u: u * (1 + 2j) + np.roll(u, 1)  # noqa: E731
    onp.testing.assert_array_equal(chainrule.jacobian(fun)(x), expected)
    onp.testing.assert_array_equal(chainrule.jacfwd(fun)(x), expected)
    onp.testing.assert_array_equal(chainrule.jacobian(lambda u: np.sum(fun(u)))(x), expected.sum(0))


def bratu(u):
    h2 = (len(u) + 1.0) ** 2
    padded = np.concatenate([np.zeros(1), u, np.zeros(1)])
    return (2 * u - padded[:-2] - padded[2:]) * h2 - np.exp(u)


def test_jit_of_a_sparse_jacobian_stages_the_sweeps():
    # issue 34 item 7: "A traced value cannot be converted to a plain NumPy array"; the
    # pattern is found at the traced value, the sweeps and the gather become the program
    jitted = chainrule.jit(chainrule.jacobian(bratu, sparse=True))
    eager = chainrule.jacobian(bratu, sparse=True)
    for _ in range(3):
        x = rng.random(200)
        values = jitted(x)
        assert sp.issparse(values) and values.format == "csr"
        onp.testing.assert_array_equal(values.toarray(), eager(x).toarray())
    assert jitted.cache_info().variants == 1 and jitted.cache_info().hits == 2


def test_jit_of_a_sparse_derivative_keeps_the_guards():
    def fun(u):
        return u * 2.0 if u[0] > 0 else np.roll(u, 1) * 3.0

    jitted = chainrule.jit(chainrule.jacobian(fun, sparse=True))
    for first in (1.0, -1.0, 2.0, -3.0):
        x = onp.array([first, 1.0, 2.0])
        onp.testing.assert_array_equal(jitted(x).toarray(), chainrule.jacobian(fun)(x))
    assert jitted.cache_info().variants == 2  # one program per branch
    hessian = chainrule.jit(chainrule.hessian(banded_objective, sparse=True))
    for _ in range(2):
        x = rng.random(20) + 0.5
        onp.testing.assert_allclose(
            hessian(x).toarray(), chainrule.hessian(banded_objective)(x), rtol=1e-13, atol=1e-13
        )


def test_a_sparse_jacobian_of_a_traced_x_is_a_traced_matrix():
    from chainrule.scipy.sparse.linalg import spsolve

    x, v = rng.random(40), rng.random(40)
    # an outer derivative through the sparse Jacobian's values (second derivatives)
    through_sparse = chainrule.grad(
        lambda u: np.sum((chainrule.jacobian(bratu, sparse=True)(u) @ v) ** 2))(x)
    through_dense = chainrule.grad(lambda u: np.sum((chainrule.jacobian(bratu)(u) @ v) ** 2))(x)
    onp.testing.assert_allclose(through_sparse, through_dense, rtol=1e-12)
    # a Newton step, staged whole: the solve reads the traced Jacobian's values
    step = chainrule.jit(lambda u: u - spsolve(chainrule.jacobian(bratu, sparse=True)(u), bratu(u)))
    for point in (x, x + 0.1):
        expected = point - onp.linalg.solve(chainrule.jacobian(bratu)(point), bratu(point))
        onp.testing.assert_allclose(step(point), expected, rtol=1e-12)


def test_the_result_owns_its_index_arrays():
    jac = chainrule.SparseJacobian(bratu, rng.random(10))
    first = jac(rng.random(10))
    first.data[:] = 0.0
    first.eliminate_zeros()  # in place: it must not reach the next result's pattern
    x = rng.random(10)
    onp.testing.assert_allclose(jac(x).toarray(), chainrule.jacobian(bratu)(x), rtol=1e-14)
