"""A sparsity pattern is used only at an x where it holds (issue 34, item 1).

Each case finds its pattern at one x and is then evaluated at points that take other
branches: values computed from x by non-differentiable functions (masks, signs,
stop_gradient) inside products, Python decisions, indices computed from x, local
patterns. The sparse result must equal the dense Jacobian or Hessian there."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np

A = onp.array([1.0, -1.0, 2.0])
B = onp.array([-1.0, 1.0, 2.0])  # the signs of the first two swapped


def _dense(fun, x, hessian=False):
    dense = (chainrule.hessian if hessian else chainrule.jacobian)(fun)(x)
    return onp.asarray(dense).reshape(onp.size(x) if hessian else -1, onp.size(x))


def mask_dot(u):
    return np.dot(np.where(u > 0, 1.0, 0.0), u) * u


def test_a_mask_inside_dot_is_not_read_as_zeros():
    # J[i, j] = m_j u_i + (m . u) delta_ij, m = (u > 0): at B, m = (0, 1, 1)
    expected = onp.outer(B, [0.0, 1.0, 1.0]) + onp.eye(3) * 3.0
    jac = chainrule.SparseJacobian(mask_dot, A)
    onp.testing.assert_array_equal(jac(B).toarray(), expected)
    sparse = chainrule.jacobian(mask_dot, sparse=True)
    sparse(A)
    onp.testing.assert_array_equal(sparse(B).toarray(), expected)
    staged = chainrule.SparseJacobian(mask_dot, A, staged=True)
    for x in (A, B, B):
        onp.testing.assert_array_equal(staged(x).toarray(), _dense(mask_dot, x))


def test_the_global_pattern_of_a_mask_holds_at_every_x():
    pattern = chainrule.jacobian_sparsity(mask_dot, A).toarray()
    assert pattern.all()  # any element may be selected by the mask somewhere
    local = chainrule.jacobian_sparsity(mask_dot, A, local=True).toarray()
    onp.testing.assert_array_equal(local, _dense(mask_dot, A) != 0)


def test_a_python_branch_is_rechecked_at_each_x():
    def fun(u):
        return u * 2.0 if u[0] > 0 else np.roll(u, 1) * 3.0

    jac = chainrule.SparseJacobian(fun, A)
    assert jac.guarded_by  # it records fun at each x
    onp.testing.assert_array_equal(jac(A).toarray(), 2.0 * onp.eye(3))
    onp.testing.assert_array_equal(jac(B).toarray(), 3.0 * onp.roll(onp.eye(3), 1, axis=0))
    onp.testing.assert_array_equal(jac(A).toarray(), 2.0 * onp.eye(3))  # both kept
    sparse = chainrule.jacobian(fun, sparse=True)
    for x in (A, B, A):
        onp.testing.assert_array_equal(sparse(x).toarray(), _dense(fun, x))


def test_a_diagonal_mask_matrix():
    def fun(u):
        return np.diag((u > 0) * 1.0) @ u**2

    jac = chainrule.SparseJacobian(fun, A)
    onp.testing.assert_array_equal(jac(B).toarray(), onp.diag([0.0, 2.0, 4.0]))


def test_a_hessian_through_a_mask_keeps_every_entry():
    def fun(u):
        return np.sum(np.dot(np.diag((u > 0) * 1.0), u) ** 3)

    # sum over the positive u_i of u_i**3: H = diag(6 u_i) there
    hess = chainrule.SparseHessian(fun, A)
    onp.testing.assert_array_equal(hess(B).toarray(), onp.diag([0.0, 6.0, 12.0]))
    sparse = chainrule.hessian(fun, sparse=True)
    sparse(A)
    onp.testing.assert_array_equal(sparse(B).toarray(), onp.diag([0.0, 6.0, 12.0]))


def test_a_hessian_branch_is_rechecked():
    def fun(u):
        return np.sum(u**3) if u[0] > 0 else np.sum(u[1:] * u[:-1])

    hess = chainrule.SparseHessian(fun, A)
    for x in (B, A, B):
        onp.testing.assert_array_equal(hess(x).toarray(), _dense(fun, x, hessian=True))


@pytest.mark.parametrize(
    "fun",
    [
        lambda u: np.dot(chainrule.stop_gradient(np.where(u > 0, 1.0, 0.0)), u) * u,
        lambda u: np.dot(np.sign(u), u) * u,
        lambda u: u * u[np.argmax(u)],
        lambda u: u[np.argsort(u)] * u,
        lambda u: np.concatenate([u[u > 0], u])[:3],
        lambda u: u * np.count_nonzero(u > 0),
        lambda u: u * onp.arange(3.0)[u > 0].sum(),  # a mask indexing a NumPy array
    ],
    ids=["stop_gradient", "sign", "argmax", "argsort", "boolean_index", "count", "numpy_index"],
)
def test_values_computed_from_x_by_functions_without_derivative(fun):
    zero = onp.array([0.0, -1.0, 2.0])  # sign(0) = 0: a zero a pattern must not keep
    jac = chainrule.SparseJacobian(fun, zero)
    staged = chainrule.SparseJacobian(fun, zero, staged=True)
    for x in (B, A, onp.array([2.0, 3.0, -1.0]), B):
        onp.testing.assert_array_equal(jac(x).toarray(), _dense(fun, x))
        onp.testing.assert_array_equal(staged(x).toarray(), _dense(fun, x))


def test_a_local_pattern_is_found_again_at_a_new_x():
    def fun(u):
        return np.sort(u) * u[::-1]

    jac = chainrule.SparseJacobian(fun, A, local=True)
    assert jac.pattern.nnz == 6  # a permutation plus the reversal, at A
    for x in (B, onp.array([3.0, 2.0, 1.0]), A):
        onp.testing.assert_array_equal(jac(x).toarray(), _dense(fun, x))


def test_a_local_pattern_keeps_its_colouring_where_the_new_one_lies_inside():
    def fun(u):  # a product whose zeros move with x
        return np.ravel(np.reshape(u, (2, 2)) @ np.reshape(u, (2, 2)))

    x = onp.array([1.0, 0.0, 0.0, 2.0])
    jac = chainrule.SparseJacobian(fun, x, local=True)
    colours = jac.colours
    y = onp.array([1.0, 0.0, 0.0, 5.0])  # the same zeros
    onp.testing.assert_array_equal(jac(y).toarray(), _dense(fun, y))
    assert jac.colours is colours
    z = onp.array([1.0, 2.0, 3.0, 4.0])  # none: every entry may be nonzero
    onp.testing.assert_array_equal(jac(z).toarray(), _dense(fun, z))
    assert jac.pattern.nnz > 10


def test_an_unguarded_pattern_records_nothing_at_later_calls():
    calls = []

    def fun(u):
        calls.append(1)
        return np.where(u > 0, u**2, -u)  # a mask, no decision: one structure everywhere

    jac = chainrule.SparseJacobian(fun, A)
    assert not jac.guarded_by
    calls.clear()
    values = jac(B).toarray()
    assert len(calls) == jac.n_colours  # the sweeps only
    onp.testing.assert_array_equal(values, _dense(fun, B))


def test_the_sparse_contract_catches_a_pattern_reused_where_it_does_not_hold(monkeypatch):
    """Test the tester: with guards switched off (a record never says it may differ at
    another x), the harness's sparse programs find wrong Jacobians."""
    from tests.contracts import contracts
    from tests.contracts._runner import run

    from chainrule._sparsity.detection import Detection

    monkeypatch.setattr(Detection, "guard", lambda self, reason: None)
    report = run(contracts()["sparse"], 300, seed=0, max_failures=1)
    assert report.failures, "patterns reused across branches went unnoticed for 300 programs"


def test_a_decision_that_keeps_the_pattern_keeps_the_colouring():
    def fun(u):  # float() of the data: a decision that differs at every x
        return u[1:] * u[:-1] * float(np.max(chainrule.stop_gradient(u)))

    jac = chainrule.SparseJacobian(fun, A)
    colours = jac.colours
    for x in (B, onp.array([0.5, 2.0, -3.0])):
        onp.testing.assert_allclose(jac(x).toarray(), _dense(fun, x), rtol=1e-15)
    assert jac.guarded_by and jac.colours is colours


@pytest.mark.parametrize(
    "select",
    [lambda u: np.extract(u > 0, u), lambda u: np.compress(u > 0, u),
     lambda u: np.repeat(u, (u > 0) * 1 + 1)],
    ids=["extract", "compress", "repeat"],
)
def test_a_shape_read_from_x_is_a_decision(select):
    # the selection never reaches the output: Python reads only its length, so no
    # pattern rule sees it; the call itself guards the record
    first = onp.array([1.0, 2.0, -3.0])
    length = len(select(first))

    def fun(u):
        return u * 2.0 if len(select(u)) == length else np.roll(u, 1) * 3.0

    jac = chainrule.SparseJacobian(fun, first)
    assert jac.guarded_by
    for x in ([1.0, -2.0, -3.0], [4.0, 5.0, -1.0], [-1.0, -1.0, -1.0]):
        x = onp.array(x)
        onp.testing.assert_array_equal(jac(x).toarray(), _dense(fun, x))


def test_an_exception_caught_by_the_function_is_a_decision():
    # found by the sparse contract: the path through `except` depends on x, and no Python
    # decision on a traced value shows it (Node.on_error tells the record)
    def fun(u):
        try:
            factor = np.linalg.cholesky(np.diag(u[:2] + 0.5))
            return u * np.sum(factor)
        except onp.linalg.LinAlgError:
            return np.roll(u, 1) * 3.0

    jac = chainrule.SparseJacobian(fun, onp.array([-1.0, 1.0, 2.0]))  # cholesky raises
    assert jac.guarded_by.startswith("an exception raised by")
    for x in ([1.0, 1.0, 2.0], [-1.0, 1.0, 2.0], [0.0, 3.0, -1.0]):
        x = onp.array(x)
        onp.testing.assert_allclose(jac(x).toarray(), _dense(fun, x), rtol=1e-15)


def _noisy(u):
    w = onp.random.rand(u.size)  # a new draw on every evaluation
    return u * w + np.roll(u, 1) * w


@pytest.mark.parametrize("make", [
    lambda: chainrule.jacobian(_noisy, sparse=True),
    lambda: chainrule.SparseJacobian(_noisy, onp.arange(1.0, 7.0)),
    lambda: chainrule.hessian(lambda u: np.sum(_noisy(u) ** 2), sparse=True),
], ids=["jacobian", "SparseJacobian", "hessian"])
def test_a_function_that_draws_random_numbers_is_refused(make):
    # each colour's sweep drew new numbers: the entries came from different functions
    # (diagonal from one draw, subdiagonal from another; dense: one draw for all)
    with pytest.raises(ValueError, match="draws random numbers .NumPy's global RandomState"):
        make()(onp.arange(1.0, 7.0))


def test_an_entry_outside_the_pattern_is_exactly_zero_where_dense_meets_zero_times_inf():
    # d sqrt(u_i)/du_j = 0 for i != j; the dense sweep computes 0 * (1 / (2 sqrt(0))) = nan
    # off the diagonal (said in docs/sparse.md); the sparse Jacobian keeps no entry there
    x = onp.array([0.0, 1.0])
    with pytest.warns(RuntimeWarning, match="divide by zero"):  # NumPy's, as eagerly
        sparse = chainrule.jacobian(np.sqrt, sparse=True)(x)
    assert sparse.nnz == 2
    onp.testing.assert_array_equal(sparse.toarray(), [[onp.inf, 0.0], [0.0, 0.5]])


def test_a_value_written_into_a_plain_numpy_array_is_refused_as_grad_refuses_it():
    # NumPy's a[1] = x[0] calls float(): detection took it as a decision and returned the
    # identity, dropping d a[1] / d x[0] (found by the jit helper); jacobian raises
    def fill(x):
        a = onp.zeros(3)
        a[1] = x[0]
        return a + x

    x = onp.array([1.0, 2.0, 3.0])
    for transform in (chainrule.jacobian, lambda f: lambda x: chainrule.jacobian_sparsity(f, x)):
        with pytest.raises(ValueError, match="setting an array element") as caught:
            transform(fill)(x)
        assert "index_update" in str(caught.value.__cause__)
