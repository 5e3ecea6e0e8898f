"""The hostile user, session 7: jit, vmap and tensor.vmap, Taylor mode, sparse derivatives,
the SciPy solvers, explain and the debug tools, the Tensor front end and a newcomer's first
hour. Each test is a silent wrong answer (or an unclear error) found by attacking, checked
against the reference semantics: jit == eager, vmap == the per-example loop, sparse ==
dense, jet == nested jvp, Tensor == PyTorch (or a clear refusal)."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule import Tensor


def _value(t):
    return onp.asarray(t.value if isinstance(t, Tensor) else t)


# ------------------------------------------------------------- tensor.vmap


def _doubles_its_weights(w, x):
    w.mul_(2.0)
    return (w * x).sum()


def _assigns_into_its_argument(x):
    x[0] = 7.0
    return x.sum()


@pytest.mark.parametrize("fun, in_dims", [
    (_doubles_its_weights, (None, 0)),
    (_assigns_into_its_argument, 0),
], ids=["unmapped mul_", "mapped t[0] = v"])
def test_tensor_vmap_refuses_an_in_place_change_of_an_argument(fun, in_dims):
    # The loop over the rows (w unmapped: the same Tensor each time) doubles w at each
    # example: answers [-38, 32] with w ending [4, 40]; torch.func.vmap runs once, doubles
    # w once and answers [-38, 16]. chainrule.tensor.vmap gave each run a new Tensor around
    # w's value: it answered [-38, 16] and left the caller's w as it was, silently neither.
    # (A mapped argument is a row of the batch: the loop refuses its in-place change as a
    # view's; tensor.vmap answered as on copies.) Now it refuses, naming the fix.
    xs = Tensor(onp.array([[1.0, -2.0], [3.0, 0.5]]), requires_grad=False)
    w = Tensor(onp.array([1.0, 10.0]), requires_grad=False)
    args = (w, xs) if in_dims != 0 else (xs,)
    with pytest.raises(RuntimeError, match="changed an argument in place.*clone"):
        cr.tensor.vmap(fun, in_dims=in_dims)(*args)
    assert onp.array_equal(_value(w), [1.0, 10.0])
    assert onp.array_equal(_value(xs), [[1.0, -2.0], [3.0, 0.5]])


def test_tensor_vmap_allows_in_place_changes_of_its_own_tensors():
    xs = Tensor(onp.array([[1.0, -2.0], [3.0, 0.5]]), requires_grad=False)

    def doubled_copy(x):
        y = x.clone()
        y.mul_(2.0)
        x.requires_grad_()  # (not a change of the value)
        return y.sum()

    assert onp.array_equal(_value(cr.tensor.vmap(doubled_copy)(xs)), [-2.0, 7.0])


# ------------------------------------------------------------- sparse derivatives


def _products_and_sines(x):
    return np.concatenate([x[:-1] * x[1:], np.sin(x)])


@pytest.mark.parametrize("transform", [cr.jacobian, cr.jacfwd, cr.jacrev])
def test_jacobian_of_a_sparse_jacobian_is_that_of_its_stored_values(transform):
    # The Jacobian of a function answering a scipy.sparse matrix is that of its stored
    # values (its vector space's coordinates): jacrev gave it, jacobian and jacfwd raised
    # "cannot reshape array of size 6 into shape (6,16)" (the tangents, sparse matrices,
    # stacked by NumPy as an object array).
    x = onp.linspace(-1.0, 1.0, 6)
    sparse_jacobian = cr.jacobian(_products_and_sines, sparse=True)
    derivative = transform(sparse_jacobian)(x)
    nnz = sparse_jacobian(x).nnz
    assert derivative.shape == (nnz, 6)
    h = 1e-6
    central = onp.stack([(sparse_jacobian(x + e).data - sparse_jacobian(x - e).data) / (2 * h)
                         for e in onp.eye(6) * h], axis=1)
    assert onp.allclose(derivative, central, atol=1e-7)
    # d/dx_i of the stored value sin'(x_i) = cos(x_i) is -sin(x_i): the last six rows
    assert onp.allclose(onp.diag(derivative[-6:]), -onp.sin(x))


def test_sparse_jacobian_after_a_closure_matrix_gains_nonzeros():
    x = onp.linspace(-1.0, 1.0, 4)
    scale = onp.zeros(4)

    def scaled(u):
        return np.dot(onp.diag(scale), u) + u[0]

    jac = cr.jacobian(scaled, sparse=True)
    assert onp.array_equal(jac(x).toarray(), cr.jacobian(scaled)(x))
    scale[:] = 1.0
    # dense: ones in column 0 plus the identity; the sparse answer was 2 in column 0
    # of every row and nothing on the diagonal
    assert onp.array_equal(jac(x).toarray(), cr.jacobian(scaled)(x))


# ------------------------------------------------------------- jit == eager


@pytest.mark.parametrize("fun", [
    lambda a: round(a, 2) * a,
    lambda a: a * round(a),
    lambda a: round(a * 3.0, 1),
], ids=["round(a, 2) * a", "a * round(a)", "round(3a, 1)"])
def test_python_round_of_a_traced_scalar_is_numpys(fun):
    # round() of a NumPy scalar is NumPy's (an int; with ndigits np.round's scalar: 1.56
    # for 1.555, where Python's float gives 1.55); a jitted call raised "type ArrayBox
    # doesn't define __round__ method" where the eager one answers.
    jitted = cr.jit(fun)
    for value in (1.555, 2.5, -0.0, -0.4, 0.125, 2.675):
        eager = fun(onp.float64(value))
        answer = jitted(value)
        assert type(answer) is type(eager)
        assert answer == eager and onp.signbit(answer) == onp.signbit(eager)
    # NumPy's arrays do not define round(), nor do traced ones
    with pytest.raises(TypeError, match="numpy.ndarray doesn't define __round__"):
        cr.grad(lambda x: np.sum(round(x, 1)))(onp.ones(2))


def test_round_with_digits_differentiates_as_a_constant_and_round_refuses_as_int():
    for value in (1.555, -2.675):
        # d/da (round(a, 2) * a) = round(a, 2): np.round has no derivative
        assert cr.grad(lambda a: round(a, 2) * a)(value) == onp.round(value, 2)
        assert cr.jit(cr.grad(lambda a: round(a, 2) * a))(value) == onp.round(value, 2)
    with pytest.raises(TypeError, match=r"round\(\) of a traced value would drop"):
        cr.grad(lambda a: a * round(a))(1.5)


# ------------------------------------------------------------- a newcomer's first hour


@pytest.mark.parametrize("method, call", [
    ("add.reduce", lambda x: np.add.reduce(x)),
    ("maximum.accumulate", lambda x: np.sum(np.maximum.accumulate(x))),
    ("multiply.outer", lambda x: np.sum(np.multiply.outer(x, x))),
    ("add.reduceat", lambda x: np.sum(np.add.reduceat(x, [0, 2]))),
])
def test_ufunc_methods_are_numpys_and_refuse_traced_values_by_name(method, call):
    # np.add.reduce & co. were "AttributeError: 'function' object has no attribute
    # 'reduce'": chainrule.numpy's ufuncs are functions. They keep NumPy's methods now:
    # NumPy's answer on plain arrays, a TypeError naming the method on traced ones.
    x = onp.array([1.0, 3.0, 2.0])
    raw = {"add.reduce": onp.add.reduce(x),
           "maximum.accumulate": onp.sum(onp.maximum.accumulate(x)),
           "multiply.outer": onp.sum(onp.multiply.outer(x, x)),
           "add.reduceat": onp.sum(onp.add.reduceat(x, [0, 2]))}[method]
    assert call(x) == raw
    with pytest.raises(TypeError, match=f"no derivative rule for numpy.{method} on traced"):
        cr.grad(call)(x)


@pytest.mark.parametrize("fun", [
    lambda x: np.add.reduce(x) * x,
    lambda x: np.maximum.accumulate(x),
    lambda x: np.multiply.outer(x, x[:2]),
    lambda x: onp.add.reduceat(x, [0, 2]),
    lambda x: onp.minimum.reduce(x),
], ids=["add.reduce", "maximum.accumulate", "multiply.outer", "onp add.reduceat",
        "onp minimum.reduce"])
def test_jitted_ufunc_methods_answer_as_eagerly(fun):
    # NumPy's ufunc methods on a staged value raised "no derivative rule for
    # numpy.add.reduce on traced values" under jit where the eager call answers: the
    # staging trace follows their plain values, as it follows out= writes (the function
    # then runs eagerly for that signature)
    jitted = cr.jit(fun)
    for x in (onp.array([1.0, 3.0, 2.0]), onp.array([0.5, -1.0, 4.0]), onp.array([1.0, 3.0, 2.0])):
        answer, eager = jitted(x), fun(x)
        assert type(answer) is type(eager) and onp.array_equal(answer, eager)
