"""Plain ``numpy`` called on traced values goes to chainrule's rules (__array_ufunc__ and
__array_function__), so code written against NumPy differentiates unchanged."""

import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule.test_util import check_grads

X = onp.random.default_rng(1).uniform(0.5, 2.0, size=(2, 3))
Y = onp.random.default_rng(2).uniform(-1.0, 1.0, size=(3,))

PLAIN = {
    "ufunc-unary": lambda x, y: onp.sin(x) * onp.exp(y),
    "ufunc-binary": lambda x, y: onp.add(x, y) / onp.multiply(x, 2.0),
    "operators-with-numpy-left": lambda x, y: onp.ones(3) * x + onp.float64(2.0) * y,
    "sum": lambda x, y: onp.sum(x, axis=0) + onp.mean(y),
    "einsum": lambda x, y: onp.einsum("ij,j->i", x, y),
    "dot-matmul": lambda x, y: onp.dot(x, y) + onp.matmul(x, y),
    "concatenate": lambda x, y: onp.concatenate([x[0], y, x[1]]),
    "stack": lambda x, y: onp.stack([x[0], y], axis=1),
    "reshape-transpose": lambda x, y: onp.transpose(onp.reshape(x, (3, 2))) * y,
    "where": lambda x, y: onp.where(x > 1.0, x, y),
    "tile-flip": lambda x, y: onp.flip(onp.tile(y, 2)),
    "split": lambda x, y: onp.split(x, 3, axis=1)[1],
    "outer-kron": lambda x, y: onp.outer(y, x[0]) + onp.kron(y, onp.ones(1))[:, None],
}


@pytest.mark.parametrize("name", list(PLAIN))
def test_plain_numpy_dispatches(name):
    f = PLAIN[name]
    want = f(X, Y)
    got = f(np.array(X), np.array(Y))  # plain arrays: NumPy itself
    onp.testing.assert_allclose(got, want)
    check_grads(f, (0, 1), order=2)(X, Y)


def test_dispatched_gradient_value():
    g = cr.grad(lambda x: onp.sum(onp.sin(x) ** 2))(X)
    onp.testing.assert_allclose(g, 2 * onp.sin(X) * onp.cos(X))


def test_function_without_rule_is_named():
    with pytest.raises(TypeError, match=r"numpy\.fliplr|numpy\.histogram2d"):
        cr.grad(lambda x: onp.sum(onp.histogram2d(x, x)[0]))(Y)
    with pytest.raises(TypeError, match=r"no derivative rule for numpy\.add\.reduce"):
        cr.grad(lambda x: onp.add.reduce(x))(Y)
    with pytest.raises(TypeError, match=r"numpy\.frexp"):
        cr.grad(lambda x: onp.frexp(x)[0].sum())(Y)


def test_numpy_array_of_traced_values_says_what_to_use():
    # numpy.array is not overridable by __array_function__: it asks for __array__
    with pytest.raises(TypeError, match=r"chainrule\.numpy\.array"):
        cr.grad(lambda x: onp.sum(onp.array([x[0], x[1]])))(Y)


def test_keyword_array_argument_is_named():
    with pytest.raises(TypeError, match="pass .* positionally"):
        cr.grad(lambda x: onp.sum(onp.clip(x, a_min=x, a_max=2.0)))(Y)


# Float scalars take a shortcut past the ufunc (numpy_wrapper's scalar path); at the edges of
# each function's domain it must still give NumPy's value, type and warnings (of NumPy's
# categories; for float64 operands the message names NumPy's 'scalar' loop instead).
EDGES = [0.0, -0.0, 1.5, -2.0, 710.0, -710.0, 1e308, -1e308, onp.inf, -onp.inf, onp.nan,
         onp.float64(0.3), onp.float64(0.0), onp.float64(-1e-300), onp.float64(1e308)]


def _called(fun, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fun(*args)
    return value, type(value), [w.category for w in caught]


@pytest.mark.parametrize("name", ["negative", "sin", "cos", "exp", "log", "sqrt"])
def test_scalar_path_unary_matches_numpy_at_domain_edges(name):
    for x in EDGES:
        (got, got_type, got_warns) = _called(getattr(np, name), x)
        (want, want_type, want_warns) = _called(getattr(onp, name), x)
        assert got_type is want_type and got_warns == want_warns, (name, x)
        onp.testing.assert_equal(got, want)  # nan equals nan; -0.0 is not 0.0 here
        assert onp.signbit(got) == onp.signbit(want), (name, x)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide"])
def test_scalar_path_binary_matches_numpy_at_domain_edges(name):
    for x in EDGES:
        for y in EDGES:
            (got, got_type, got_warns) = _called(getattr(np, name), x, y)
            (want, want_type, want_warns) = _called(getattr(onp, name), x, y)
            assert got_type is want_type and got_warns == want_warns, (name, x, y)
            onp.testing.assert_equal(got, want)
            assert onp.signbit(got) == onp.signbit(want), (name, x, y)


def test_scalar_path_follows_numpy_errstate():
    # An overflow on Python floats or np.float64 reaches NumPy's error handling, as the
    # ufunc's would: raised here, under errstate(over="raise").
    for x, y in [(1e308, 10.0), (onp.float64(1e308), 10.0), (10.0, onp.float64(1e308))]:
        with onp.errstate(over="raise"), pytest.raises(FloatingPointError):
            np.multiply(x, y)
    with onp.errstate(over="raise"), pytest.raises(FloatingPointError):
        np.exp(1000.0)
    assert np.multiply(2.0, 3.0) == 6.0 and type(np.multiply(2.0, 3.0)) is onp.float64
