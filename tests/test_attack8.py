"""Attack 8: sparse derivatives whose pattern read values fun takes from outside x
(closures, globals), and small items left by attack 7. Each test failed before its fix."""

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np

X = onp.linspace(-1.0, 1.0, 5)


def _same_as_dense(jac, dense, x):
    assert onp.array_equal(jac(x).toarray(), onp.reshape(dense(x), (-1, onp.size(x))))


# ------------------------------------------------------- sparse: constants read from outside x

WEIGHTS = onp.zeros(5)


def _globally_weighted(u):
    return np.dot(onp.diag(WEIGHTS), u) + u[0]


def test_sparse_jacobian_after_a_global_array_is_rebound():
    global WEIGHTS
    jac = cr.jacobian(_globally_weighted, sparse=True)
    try:
        _same_as_dense(jac, cr.jacobian(_globally_weighted), X)
        WEIGHTS = onp.arange(1.0, 6.0)
        _same_as_dense(jac, cr.jacobian(_globally_weighted), X)
    finally:
        WEIGHTS = onp.zeros(5)


def test_sparse_jacobian_after_a_closure_is_rebound():
    weights = onp.zeros(5)

    def weighted(u):
        return np.dot(onp.diag(weights), u) + u[-1]

    jac = cr.SparseJacobian(weighted, X)
    _same_as_dense(jac, cr.jacobian(weighted), X)
    weights = onp.ones(5)  # noqa: F841 (read by weighted)
    _same_as_dense(jac, cr.jacobian(weighted), X)


def test_sparse_jacobian_after_a_permutation_in_a_closure_changes():
    # no zero read here: the index array itself is a constant of the pattern
    perm = onp.arange(5)

    def permuted(u):
        return u[perm] * u

    jac = cr.jacobian(permuted, sparse=True)
    _same_as_dense(jac, cr.jacobian(permuted), X)
    perm[:] = perm[::-1].copy()
    _same_as_dense(jac, cr.jacobian(permuted), X)


def test_sparse_jacobian_after_a_closure_array_changes_dtype():
    holder = {"mask": onp.zeros(5, dtype=bool)}

    def masked(u):
        return np.dot(onp.diag(holder["mask"]).astype(float), u) + u[2]

    jac = cr.jacobian(masked, sparse=True)
    _same_as_dense(jac, cr.jacobian(masked), X)
    holder["mask"] = onp.ones(5, dtype=onp.int8)
    _same_as_dense(jac, cr.jacobian(masked), X)


def test_sparse_jacobian_after_a_closure_float_becomes_zero_and_back():
    scale = [0.0]

    def scaled(u):
        return np.dot(onp.eye(5) * scale[0], u) + u[0]

    jac = cr.jacobian(scaled, sparse=True)
    for value in (0.0, 2.0, -0.0, 3.0):
        scale[0] = value
        _same_as_dense(jac, cr.jacobian(scaled), X)


def test_sparse_hessian_after_a_closure_matrix_gains_nonzeros():
    coupling = onp.zeros((5, 5))

    def energy(u):
        return np.sum(u**3) + np.dot(u, np.dot(coupling, u))

    hess = cr.hessian(energy, sparse=True)
    _same_as_dense(hess, cr.hessian(energy), X)
    coupling[0, 4] = 1.0
    _same_as_dense(hess, cr.hessian(energy), X)


@pytest.mark.parametrize("options, before, after", [
    ({"local": True}, 0.0, 1.0),  # local, at the same x: the zeros of the closure moved
    # staged: same pattern, other values (the staged program held the old ones as constants)
    ({"staged": True}, 1.0, 3.0),
], ids=["local-same-x", "staged"])
def test_sparse_jacobian_after_a_closure_changes(options, before, after):
    weights = onp.full(5, before)

    def weighted(u):
        return np.dot(onp.diag(weights), u) + u[0]

    jac = cr.SparseJacobian(weighted, X, **options)
    _same_as_dense(jac, cr.jacobian(weighted), X)
    weights[:] = after
    _same_as_dense(jac, cr.jacobian(weighted), X)
    _same_as_dense(jac, cr.jacobian(weighted), -X)


def test_sparse_jacobian_whose_changed_closure_sends_fun_down_a_decision():
    mode = {"branch": False}

    def branching(u):
        if mode["branch"] and u[0] > 0:  # a decision on x, only once the flag is set
            return u * u[1]
        return u * 2.0

    jac = cr.jacobian(branching, sparse=True)
    _same_as_dense(jac, cr.jacobian(branching), X)
    mode["branch"] = True
    for x in (X, -X):
        _same_as_dense(jac, cr.jacobian(branching), x)


def test_sparse_jacobian_after_a_closure_scipy_matrix_gains_an_entry():
    import warnings

    import scipy.sparse as sp

    A = sp.csr_matrix(onp.eye(5))

    def product(u):
        return A @ u

    jac = cr.jacobian(product, sparse=True)
    _same_as_dense(jac, cr.jacobian(product), X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
        A[0, 3] = 5.0  # a new stored entry, in place
    _same_as_dense(jac, cr.jacobian(product), X)


# ------------------------------------------------------- out= a traced array (attack 7's note)


def test_out_given_a_traced_array_is_refused_saying_what_happened():
    plain = onp.ones((3, 3))

    def reduced_into(x):
        y = x * 2.0
        onp.add.reduce(plain, out=y)  # plain values written into a traced array
        return np.sum(y * x)

    with pytest.raises(TypeError, match=r"numpy\.add\.reduce with out= a traced array: "
                                        r"NumPy would write the result into that array") as e:
        cr.grad(reduced_into)(onp.ones(3))
    assert "traced value into a plain" not in str(e.value)
    # the fix the message gives: y[...] = value, which chainrule records
    def assigned(x):
        y = x * 2.0
        y[...] = onp.add.reduce(plain)
        return np.sum(y * x)

    assert onp.array_equal(cr.grad(assigned)(onp.ones(3)), onp.full(3, 3.0))


def test_out_given_a_plain_array_with_a_traced_input_keeps_its_message():
    def written(x):
        buffer = onp.zeros(3)
        onp.sin(x, out=buffer)
        return np.sum(x)

    with pytest.raises(TypeError, match="sin with out= would write a traced value into a plain"):
        cr.grad(written)(onp.ones(3))


# ------------------------------------------------------- vmap of a sparse derivative


@pytest.mark.parametrize("transform", [
    lambda f: cr.hessian(f, sparse=True),
    lambda f: cr.jacobian(cr.grad(f), sparse=True),
], ids=["hessian", "jacobian"])
def test_vmap_of_a_sparse_derivative_refuses_instead_of_an_object_array(transform):
    batched = cr.vmap(transform(lambda u: np.sum(u**3)))
    with pytest.raises(TypeError, match=r"vmap: the function answers a scipy\.sparse "
                                        r"matrix \(example 0\).*toarray\(\)"):
        batched(onp.ones((2, 3)))
    # the advice works: a dense batch, each example's Hessian
    dense = cr.vmap(lambda u: transform(lambda v: np.sum(v**3))(u).toarray())
    xs = onp.arange(6.0).reshape(2, 3)
    assert onp.array_equal(dense(xs), onp.stack([onp.diag(6.0 * x) for x in xs]))


@pytest.mark.parametrize("hessian", [False, True])
def test_sparse_derivative_of_a_float16_x_is_refused_with_the_fix(hessian):
    # the answer was a float16 CSR matrix, which scipy.sparse cannot convert or multiply
    fun = (lambda u: np.sum(u**3)) if hessian else (lambda u: u * u)
    transform = cr.hessian if hessian else cr.jacobian
    with pytest.raises(TypeError, match=r"float16.*x\.astype\(numpy\.float32\)"):
        transform(fun, sparse=True)(X.astype(onp.float16))
    as_float32 = transform(fun, sparse=True)(X.astype(onp.float32)).toarray()
    assert onp.array_equal(as_float32, transform(fun)(X.astype(onp.float32)))


def test_sparse_jacobian_with_a_given_pattern_is_evaluated_as_given():
    weights = onp.ones(5)

    def weighted(u):
        return weights * u * u

    jac = cr.SparseJacobian(weighted, X, pattern=onp.eye(5, dtype=bool), staged=True)
    _same_as_dense(jac, cr.jacobian(weighted), X)
    weights[:] = 2.0  # staged again: the program held the old weights
    _same_as_dense(jac, cr.jacobian(weighted), X)


# ------------------------------------------------------- solvers: implicit derivatives


def _empty_root(t):
    from chainrule.scipy import optimize as so

    return so.root(lambda x: x - t, onp.zeros(0)).x


def _empty_least_squares(t):
    from chainrule.scipy import optimize as so

    return so.least_squares(lambda x: x - t, onp.zeros(0)).x


@pytest.mark.parametrize("solve", [_empty_root, _empty_least_squares],
                         ids=["root", "least_squares"])
def test_implicit_derivative_of_an_empty_solution_is_empty(solve):
    # SciPy solves an empty system (x = []); its derivative raised IndexError (s[0] of
    # the singular values of a 0 x 0 matrix)
    none = onp.zeros(0)
    jac = cr.jacobian(solve)(none)
    assert jac.shape == (0, 0) and jac.dtype == onp.float64
    value, tangent = cr.jvp(solve, (none,), (none,))
    assert value.shape == tangent.shape == (0,)
    assert cr.grad(lambda t: np.sum(solve(t)) + np.sum(t))(none).shape == (0,)


class _Weighted:
    """A model called as a function: its __call__ reads self.weights."""

    def __init__(self):
        self.weights = onp.zeros(5)

    def __call__(self, u):
        return np.dot(onp.diag(self.weights), u) + u[0]


def test_sparse_jacobian_of_a_callable_object_after_its_attribute_changes():
    model = _Weighted()
    jac = cr.jacobian(model, sparse=True)
    _same_as_dense(jac, cr.jacobian(model), X)
    model.weights[:] = 2.0
    _same_as_dense(jac, cr.jacobian(model), X)
    model.weights = onp.arange(5.0)
    _same_as_dense(jac, cr.jacobian(model), X)


def test_sparse_hessian_of_a_callable_object_after_its_attribute_changes():
    model = _Weighted()
    energy = lambda u: np.sum(model(u) ** 2)  # noqa: E731
    hess = cr.hessian(energy, sparse=True)
    _same_as_dense(hess, cr.hessian(energy), X)
    model.weights[:] = 2.0
    _same_as_dense(hess, cr.hessian(energy), X)
