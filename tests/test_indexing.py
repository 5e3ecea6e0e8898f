"""Indexing traced arrays and the array attributes/methods of ArrayBox, to order 2 in both
modes."""

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule.test_util import check_grads

X = onp.random.default_rng(0).uniform(-2, 2, size=(3, 4, 2))
MASK = X > 0.3

INDICES = {
    "int": 1,
    "negative": -1,
    "slice": slice(1, None),
    "step": (slice(None, None, 2), slice(3, 0, -2)),
    "ellipsis": (Ellipsis, 0),
    "newaxis": (None, 1, slice(None), None),
    "int-array": [0, 2],
    "repeated": ([0, 0, 2, 0],),
    "2d-int-array": (onp.array([[0, 1], [2, 2]]), slice(None), 1),
    "mixed": (slice(None), [3, 1, 3], 0),
    "bool-mask": MASK,
    "bool-axis": (slice(None), onp.array([True, False, True, True])),
    "scalar": (1, 2, 0),
    "empty": (slice(2, 2),),
}


@pytest.mark.parametrize("name", list(INDICES))
def test_getitem_matches_numpy_and_differentiates(name):
    index = INDICES[name]
    onp.testing.assert_array_equal(np.array(X)[index], X[index])
    check_grads(lambda x: x[index] * x[index], order=2)(X)


def test_repeated_indices_accumulate():
    g = cr.grad(lambda x: np.sum(x[[0, 0, 2, 0]]))(X[:, 0, 0])
    onp.testing.assert_allclose(g, [3.0, 0.0, 1.0])
    g = cr.grad(lambda x: np.sum(x[[1, 1], [0, 0]] * 2.0))(X[:, :, 0])
    want = onp.zeros((3, 4))
    want[1, 0] = 4.0
    onp.testing.assert_allclose(g, want)


def test_attributes():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size, dtype=x.dtype, len=len(x),
                    T=x.T.shape)
        return np.sum(x)

    cr.grad(f)(X.astype(onp.float32))
    assert seen == dict(shape=(3, 4, 2), ndim=3, size=24, dtype=onp.float32, len=3,
                        T=(2, 4, 3))


def test_iteration_and_T():
    def f(x):
        rows = [r * (i + 1.0) for i, r in enumerate(x)]
        return np.stack(rows).T

    onp.testing.assert_allclose(f(X), (X * onp.array([1.0, 2.0, 3.0])[:, None, None]).T)
    check_grads(f, order=2)(X)
    g = cr.grad(lambda x: np.sum(f(x)))(X)
    onp.testing.assert_allclose(g, onp.broadcast_to([[[1.0]], [[2.0]], [[3.0]]], X.shape))


METHODS = {
    "sum": lambda x: x.sum(axis=1),
    "mean": lambda x: x.mean(),
    "reshape": lambda x: x.reshape(4, 6),
    "reshape-tuple": lambda x: x.reshape((2, -1)),
    "ravel": lambda x: x.ravel(),
    "flatten": lambda x: x.flatten(),
    "transpose": lambda x: x.transpose(1, 0, 2),
    "swapaxes": lambda x: x.swapaxes(0, 2),
    "squeeze": lambda x: x[:1].squeeze(0),
    "dot": lambda x: x[:, :, 0].dot(x[0]),
    "matmul": lambda x: x[:, :, 0] @ x[0],
    "astype": lambda x: x.astype(onp.complex128).real * x,
    "diagonal": lambda x: x.diagonal(0, 0, 1),
    "repeat": lambda x: x.repeat(2, axis=0),
    "take": lambda x: x.take([0, 5, 5]),
    "copy": lambda x: x.copy(),
    "tolist": lambda x: np.stack(x.tolist()) * 2.0,
}


@pytest.mark.parametrize("name", list(METHODS))
def test_methods(name):
    method = METHODS[name]
    onp.testing.assert_allclose(method(np.array(X)), method(X), rtol=1e-6)
    check_grads(method, order=2)(X)


def test_getitem_of_complex_and_float32_keeps_dtype():
    z = X[..., 0] + 1j * X[..., 1]
    g = cr.grad(lambda z: np.real(np.sum(z[[0, 2]] ** 2)))(z)
    assert g.dtype == onp.complex128
    g32 = cr.grad(lambda x: np.sum(x[1:] ** 2))(X.astype(onp.float32))
    assert g32.dtype == onp.float32


def test_traced_index_is_refused_clearly():
    with pytest.raises(TypeError, match="traced value cannot be converted"):
        cr.grad(lambda x: np.sum(onp.ones(3)[x]))(1.0)


def test_every_shape_and_contraction_function_has_both_rules_and_a_spec():
    from chainrule._core.rule_table import primitive_jvps, primitive_vjps
    from chainrule._specs import spec_contraction, spec_shape
    from chainrule.numpy import numpy_wrapper as w

    specced = {c.name for c in spec_shape.CASES + spec_contraction.CASES}
    for group in ("shape", "contraction"):
        for name in w.DIFFERENTIABLE[group].split():
            fun = w.namespace.get(name)
            if fun is None:  # not in this NumPy version
                continue
            assert fun in primitive_vjps and fun in primitive_jvps, name
            assert name in specced, name
    for name in ("concatenate", "stack", "vstack", "hstack", "dstack", "column_stack",
                 "row_stack", "block", "select", "array"):
        assert name in specced, name
