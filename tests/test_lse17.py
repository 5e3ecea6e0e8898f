"""lse17: the cheaper VJPs of max (a one-hot array), of x - number (the negated sum) and
of sum (a filled array), bit for bit against the general paths they skip (main's rules)."""

from __future__ import annotations

import itertools
import warnings

import numpy
import pytest

import chainrule
import chainrule.numpy as np
from chainrule._core.rules import rules_of
from chainrule.numpy.rules import _helpers, reductions

INF, NAN = numpy.inf, numpy.nan


def lse(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def same_bits(got, expected):
    """Same type, dtype, shape, C-order and bits (nan payloads and zero signs included)."""
    assert type(got) is type(expected)
    got, expected = numpy.asarray(got), numpy.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.flags.c_contiguous == expected.flags.c_contiguous
    assert got.tobytes() == expected.tobytes()


def general_extreme_vjp(g, ans, x, **kwargs):
    """The general path of max's VJP (main's rule): the weights, then their weighted sum
    (for an array's cotangent main's reshape by NumPy's function, then the product)."""
    w, axis, keepdims = reductions._extreme_weights(ans, x, **kwargs)
    if isinstance(g, numpy.ndarray):
        g = numpy.reshape(g, _helpers.keepdims_shape(numpy.shape(x), axis))
        return _helpers.match_dtype(g * w, x)
    return reductions._weights_vjp(g, x, w, axis, keepdims)


COTANGENTS = [0.75, -0.75, 0.0, -0.0, 1e-300, -5e-324, 3e300, INF, -INF, NAN]

ARRAYS = [
    [0.5, -1.0, 2.0, 0.25],              # one maximum
    [3.0, 1.0, 3.0],                     # a tie
    [-0.0, -1.0, -3.0],                  # the maximum -0.0
    [0.0, -0.0, -2.0],                   # 0.0 and -0.0 tie (equal)
    [1.0, NAN, 2.0],                     # a nan answer
    [-INF, -INF],                        # a tie at -inf
    [INF, 1.0],                          # an inf maximum
    [7.0],                               # one element
]


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32])
@pytest.mark.parametrize("fun", [numpy.max, numpy.min, numpy.nanmax, numpy.nanmin])
def test_extreme_vjp_is_the_general_path_bit_for_bit(dtype, fun):
    for values, g in itertools.product(ARRAYS, COTANGENTS):
        x = numpy.array(values, dtype=dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # (nanmax of all-nan)
            ans = fun(x)
        with numpy.errstate(all="ignore"):
            g = dtype(g)  # (3e300 is inf in float32)
            expected = general_extreme_vjp(g, ans, x)
            for _ in range(2):
                got = reductions._extreme_vjp(g, ans, x)
                same_bits(got, expected)
                assert got.flags.writeable and not numpy.shares_memory(got, x)
        assert x.tobytes() == numpy.array(values, dtype=dtype).tobytes()  # (not written)


def test_extreme_vjp_shapes_orders_and_options_bit_for_bit():
    rng = numpy.random.default_rng(17)
    a = rng.standard_normal((4, 5))
    cases = [
        (a, {}), (a.T, {}), (a[:, ::2], {}), (a.reshape(2, 2, 5), {}),   # full reductions
        (a, {"axis": 1}), (a, {"axis": 0, "keepdims": True}), (a, {"axis": (0, 1)}),
        (a, {"keepdims": True}), (a, {"initial": 10.0}), (a, {"initial": -10.0}),
        (a, {"where": a > 0, "initial": -INF}), (numpy.float64(2.0) * numpy.ones(()), {}),
        (numpy.zeros((3, 0)), {"axis": 0}), (numpy.zeros((0,)), {"initial": 1.0}),
        (a.astype(numpy.float32), {"axis": -1}),
        # the -0.0s copied (up to 4,096) and filled (beyond)
        (rng.random(4096), {}), (rng.random(4097).astype(numpy.float32), {}),
        (rng.random((70, 70)), {}),
    ]
    for x, kwargs in cases:
        ans = numpy.max(x, **kwargs)
        for g in (0.5, -0.5, -0.0):
            g = numpy.ones_like(ans) * g if isinstance(ans, numpy.ndarray) else \
                ans.dtype.type(g)
            expected = general_extreme_vjp(g, ans, x, **kwargs)
            same_bits(reductions._extreme_vjp(g, ans, x, **kwargs), expected)
    # the other selections' weights (ptp, median, quantile) by the same product
    x = numpy.round(a * 2) / 2  # (ties)
    for fun, weights, kwargs in (
            (np.ptp, reductions._ptp_weights, {"axis": 1}),
            (np.median, reductions._median_rule(False), {"axis": 0}),
            (np.quantile, reductions._quantile_rule(1.0, False), {"q": 0.3, "axis": 1})):
        ans = getattr(numpy, fun.__name__)(x, **kwargs)
        g = numpy.linspace(-1.0, 1.0, ans.size).reshape(ans.shape)
        q = (kwargs.pop("q"),) if "q" in kwargs else ()
        w, axis, _ = weights(ans, x, *q, **kwargs)
        expected = _helpers.match_dtype(numpy.reshape(g, _helpers.keepdims_shape(x.shape, axis))
                                        * w, x)
        for _ in range(2):
            same_bits(rules_of(fun).vjp(g, (0,), ans, (x,) + q, kwargs)[0], expected)
    # a Python float cotangent and a float32 one of a float64 x: the general path
    x = a.ravel()
    for g in (0.5, numpy.float32(0.5)):
        same_bits(reductions._extreme_vjp(g, x.max(), x), general_extreme_vjp(g, x.max(), x))


def test_extreme_vjp_inf_cotangent_warns_as_the_product_does():
    x = numpy.array([1.0, 2.0])
    with pytest.warns(RuntimeWarning, match="invalid value encountered in multiply"):
        got = reductions._extreme_vjp(numpy.float64(INF), x.max(), x)
    assert numpy.isnan(got[0]) and got[1] == INF
    with numpy.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        reductions._extreme_vjp(numpy.float64(INF), x.max(), x)


def general_negated_sum(g):
    return _helpers.unbroadcast(-g, numpy.float64(0.0).astype(g.dtype))


NEGATED = [
    [0.5, 0.25, -3.0], [1e308, 1e308], [-1e308, -1e308, 1e-300],   # overflow: +-inf
    [0.0, 0.0], [-0.0, -0.0], [0.0, -0.0], [1.0, -1.0], [],         # zero sums
    [1.0, NAN], [NAN, -NAN, 2.0], [INF, -INF], [INF, 1.0], [-INF, NAN, INF],
    [5e-324, -5e-324, 5e-324],
]


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32])
def test_negated_sum_is_the_sum_of_the_negated_cotangent(dtype):
    rng = numpy.random.default_rng(3)
    with numpy.errstate(over="ignore"):  # (1e308 is inf in float32)
        arrays = [numpy.array(v, dtype=dtype) for v in NEGATED]
    arrays += [(rng.standard_normal(n) * numpy.exp2(rng.integers(-40, 40, n))).astype(dtype)
               for n in (3, 8, 9, 130, 2500)]
    arrays += [rng.standard_normal((30, 40)).astype(dtype),
               rng.standard_normal((40, 30)).astype(dtype).T]
    for g in arrays:
        with numpy.errstate(all="ignore"):
            expected = (-g).sum()
            for number in (dtype(1.5), numpy.zeros((), dtype)):  # a number, a 0-d array
                got = _helpers.binary_rule(1, negated=True)(g, None, g, number)
                same_bits(got, expected)
                same_bits(general_negated_sum(g), expected)
        assert g.tobytes() == g.copy().tobytes()


def test_negated_sum_reports_each_error_once():
    g = numpy.array([INF, -INF])
    rule = _helpers.binary_rule(1, negated=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rule(g, None, g, numpy.float64(1.0))
    assert [str(w.message) for w in caught] == ["invalid value encountered in reduce"]
    same_bits(got, _quiet_sum(-g))  # (which nan: -g's sum's)
    with numpy.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        rule(g, None, g, numpy.float64(1.0))
    with numpy.errstate(over="raise"), pytest.raises(FloatingPointError):
        rule(numpy.array([1e308, 1e308]), None, g, numpy.float64(1.0))


def _quiet_sum(a):
    with numpy.errstate(all="ignore"):
        return a.sum()


@pytest.mark.parametrize("g", [0.5, -0.0, NAN, INF, 2.5j, numpy.float64(-3.0),
                               numpy.float32(0.25), numpy.complex64(1 - 2j)])
def test_sum_vjp_of_a_number_is_numpy_full(g):
    for shape in ((), (5,), (3, 4), (0,), (2, 0, 3)):
        x = numpy.zeros(shape)
        for _ in range(2):
            got = _helpers.expand_to(g, x, None, False)
            same_bits(got, numpy.full(shape, g))
            assert got.flags.writeable and got.flags.owndata


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32])
def test_lse_gradient_against_central_differences_and_softmax(dtype):
    rng = numpy.random.default_rng(1)
    g = chainrule.grad(lse)
    for x in (rng.random(2500), rng.standard_normal(7) * 30, numpy.array([3.0, 3.0, 1.0]),
              numpy.array([-0.0, -5.0]), rng.random((3, 4))):
        x = x.astype(dtype)
        e = numpy.exp(x.astype(float) - x.max())
        for _ in range(2):
            got = g(x)
            assert got.dtype == dtype and got.shape == x.shape
            # (the maximum's entry also holds 1 - sum(softmax), float32's rounding error)
            tol = 2e-6 if dtype is numpy.float32 else 1e-13
            numpy.testing.assert_allclose(got, e / e.sum(), rtol=tol, atol=tol)
    x = rng.standard_normal(6)
    h = 1e-6
    fd = [(lse(x + h * d) - lse(x - h * d)) / (2 * h) for d in numpy.eye(6)]
    numpy.testing.assert_allclose(g(x), fd, rtol=1e-7, atol=1e-9)
    assert numpy.isnan(g(numpy.array([1.0, NAN]))).all()


@pytest.mark.filterwarnings("ignore:Output seems independent of input")
def test_max_grad_of_grad_and_a_boxed_cotangent():
    # nested transforms take the general path (boxes): the Hessian of max is zero, and
    # the gradient of sum(x * grad(max)(x)) is the one-hot vector again
    x = numpy.array([0.5, 2.0, -1.0])
    numpy.testing.assert_array_equal(chainrule.hessian(np.max)(x), numpy.zeros((3, 3)))
    f = chainrule.grad(lambda x: np.sum(x * chainrule.grad(np.max)(x)))
    numpy.testing.assert_array_equal(f(x), [0.0, 1.0, 0.0])
    jit_grad = chainrule.jit(chainrule.grad(lse))
    for y in (x, numpy.array([2.0, 2.0, 0.0]), numpy.array([-0.0, -1.0, -2.0])):
        for _ in range(2):
            same_bits(jit_grad(y), chainrule.grad(lse)(y))
