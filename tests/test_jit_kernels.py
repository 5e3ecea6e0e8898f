"""jit's faster forms of NumPy calls with a short inner loop (``chainrule.jit._kernels``):
the same bits as NumPy's own call, and jit programs using them ≡ eager evaluation."""

from __future__ import annotations

import functools
import warnings

import numpy as onp
import pytest
from benchmarks.gradbench.evals.det import det_by_minors  # (constant integer array indexes)

import chainrule as cr
import chainrule.numpy as np
from chainrule.jit import _kernels
from chainrule.numpy.rules.shape import untake


def _bits(a, b):
    assert type(a) is type(b)
    assert onp.shape(a) == onp.shape(b)
    assert onp.asarray(a).dtype == onp.asarray(b).dtype
    assert onp.asarray(a).strides == onp.asarray(b).strides
    assert onp.asarray(a).tobytes() == onp.asarray(b).tobytes()


def _warned(fun, args):
    """``fun(*args)`` and the messages of the warnings it gave."""
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        answer = fun(*args)
    return answer, [str(w.message) for w in told]


def _as_numpy(got, want, *args):
    """``got(*args)`` and ``want(*args)`` the same bits, with the same warnings."""
    (a, a_told), (b, b_told) = _warned(got, args), _warned(want, args)
    _bits(a, b)
    assert a_told == b_told


def _hard(shape, dtype=onp.float64, seed=0):
    """Numbers whose sums show their order in the last bits, with signed zeros, nan, inf."""
    rng = onp.random.default_rng(seed)
    a = rng.standard_normal(shape) * onp.exp2(rng.integers(-40, 40, shape))
    a[0] = -0.0  # every sum through a[0] starts from -0.0s
    if shape[-1] > 1:
        a[1, ..., 0] = -0.0
    flat = a.reshape(-1)
    flat[[-1, -7, -12, -13, -30, -31]] = [0.0, -0.0, onp.nan, -onp.inf, onp.inf, -onp.inf]
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("shape", [(300, 2), (5, 1000, 2), (7, 60, 3), (1000, 5), (2, 300, 7),
                                   (400, 8), (25, 40, 10), (300, 15), (200, 16)])
def test_lane_sum_is_numpys_sum_over_the_last_axis(shape, dtype):
    a = _hard(shape, dtype)
    with onp.errstate(all="ignore"):
        _bits(_kernels.lane_sum(a), onp.add.reduce(a, -1))
        keep = onp.add.reduce(a, (a.ndim - 1,), None, None, keepdims=True)
        _bits(_kernels.lane_sum(a, keep.shape), keep)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("shape,axis", [((5, 1000, 2), 1), ((400, 2), 0), ((3, 50, 2, 1), 1),
                                        ((2, 3, 300, 1, 2), 2)])
def test_pair_sum_is_numpys_sum_over_an_axis_before_a_pair(shape, axis, dtype):
    a = _hard(shape, dtype)
    outer = int(onp.prod(shape[:axis]))
    with onp.errstate(all="ignore"):
        for keepdims in (True, False):
            want = onp.add.reduce(a, (axis,), None, None, keepdims=keepdims)
            _bits(_kernels.pair_sum(a, outer, shape[axis], want.shape), want)


def test_count_true_is_numpys_sum_of_booleans():
    b = onp.random.default_rng(1).random((40, 30)) > 0.5
    _bits(_kernels.count_true(b, None, onp.dtype(onp.int64)), onp.add.reduce(b, None))
    _bits(_kernels.count_true(b, (1, 1), onp.dtype(onp.int64)),
          onp.add.reduce(b, None, None, None, keepdims=True))


@pytest.mark.parametrize("ufunc", [onp.subtract, onp.multiply, onp.divide, onp.greater,
                                   onp.arctan2, onp.add])
def test_lanes_is_the_ufunc(ufunc):
    rng = onp.random.default_rng(2)
    x, mu = _hard((1000, 2)), rng.standard_normal((5, 2))
    col = rng.standard_normal((5, 1000, 1))
    with onp.errstate(all="ignore"):
        for a, b in [(x[None], mu[:, None]), (col, _hard((5, 1000, 2), seed=3)),
                     (0.5, x[None] + mu[:, None]), (mu[:, None], onp.float64(-0.0)),
                     # (pairs: as complex numbers where each is contiguous, jitd15)
                     (x.astype(onp.float32)[None], mu.astype(onp.float32)[:, None]),
                     (_hard((5, 1000, 2), seed=4), x[None, :, ::-1]),
                     (x[None], _hard((5, 1000, 2), seed=5)[:, ::-1])]:
            want = ufunc(a, b)
            _bits(_kernels.lanes(ufunc, want.shape, want.dtype, a, b), want)
            into = onp.empty_like(want)
            got = _kernels.lanes(ufunc, want.shape, want.dtype, a, b, out=into)
            assert got is into
            _bits(got, want)
    neg = onp.negative(x[None] + mu[:, None])
    _bits(_kernels.lanes(onp.negative, neg.shape, neg.dtype, x[None] + mu[:, None]), neg)


def mixture(alpha, mu, x):
    """gmm's shape of work at d=2: a broadcast difference, a sum over the short last
    axis, a logsumexp over the components (max and its derivative)."""
    centered = x[None, :, :] - mu[:, None, :]
    beta = alpha[:, None] - 0.5 * np.sum(centered * centered, axis=2)
    top = np.max(beta, axis=0, keepdims=True)
    lse = np.log(np.sum(np.exp(beta - top), axis=0)) + np.squeeze(top, axis=0)
    return np.sum(lse) - np.max(alpha) + np.sum(np.exp(alpha - np.max(alpha)))


def test_jit_of_the_mixture_gradient_is_eager_bit_for_bit_and_uses_the_kernels():
    rng = onp.random.default_rng(4)
    g = cr.grad(mixture, argnum=(0, 1))
    jg = cr.jit(g)
    alpha, mu, x = rng.standard_normal(5), rng.uniform(size=(5, 2)), rng.normal(size=(1000, 2))
    for a, m, xx in [(alpha, mu, x), (alpha * 3, mu, -x), (onp.zeros(5), mu * 0, x),
                     (alpha, mu, x)]:
        for got, want in zip(jg(a, m, xx), g(a, m, xx)):
            _bits(got, want)
    source = jg.lower(alpha, mu, x).source
    assert "_kernels.lanes(" in source and "_kernels.lane_sum(" in source
    assert "_kernels.pair_sum(" in source
    assert "broadcast_to(" not in source  # (each read by a ufunc that broadcasts)
    x2 = x.copy()
    x2[3] = [-0.0, onp.nan]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for got, want in zip(jg(alpha, mu, x2), g(alpha, mu, x2)):
            _bits(got, want)


def test_the_answer_of_a_sum_over_the_short_axis_is_eagers_value_and_layout():
    f = cr.jit(lambda a: np.sum(a * a, axis=-1, keepdims=True))
    a = _hard((400, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _bits(f(a), np.sum(a * a, axis=-1, keepdims=True))
        _bits(f(a[:, ::-1]), np.sum(a[:, ::-1] * a[:, ::-1], axis=-1, keepdims=True))


def split_divide(x, mu):
    return np.sum(x[None, :, :] / mu[:, None, :])


def test_a_floating_point_error_in_a_split_call_is_eagers_warning_or_error():
    jf = cr.jit(split_divide)
    x = onp.random.default_rng(5).normal(size=(1000, 2))
    mu = onp.ones((5, 2))
    jf(x, mu)
    jf(x, mu)
    assert "_kernels.lanes(" in jf.lower(x, mu).source
    zero = mu.copy()
    zero[2, 1] = 0.0
    for _ in range(2):
        with warnings.catch_warnings(record=True) as jitted:
            warnings.simplefilter("always")
            got = jf(x, zero)
        with warnings.catch_warnings(record=True) as eager:
            warnings.simplefilter("always")
            want = split_divide(x, zero)
        _bits(got, want)
        assert [str(w.message) for w in jitted] == [str(w.message) for w in eager]
        assert eager  # (divide by zero, and what the sum of infinities gives)
    with onp.errstate(divide="raise"), pytest.raises(FloatingPointError):
        jf(x, zero)
    with onp.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        _bits(jf(x, zero), split_divide(x, zero))


def test_indicator_divide_is_numpys_division_of_booleans():
    rng = onp.random.default_rng(6)
    b = rng.random((30, 100)) > 0.7
    for c in [onp.array([[3]]), onp.maximum(onp.add.reduce(b, 0, keepdims=True), 1),
              onp.add.reduce(b, 0, keepdims=True), onp.array([[-2]]), onp.int64(7)]:
        with warnings.catch_warnings(record=True) as got_warnings:
            warnings.simplefilter("always")
            got = _kernels.indicator_divide(b, c, b.shape)
        with warnings.catch_warnings(record=True) as want_warnings:
            warnings.simplefilter("always")
            want = onp.divide(b, c)
        _bits(got, want)
        assert [str(w.message) for w in got_warnings] == [str(w.message) for w in want_warnings]
        into = onp.full(b.shape, onp.nan)
        assert _kernels.indicator_divide(b, c, b.shape, out=into) is into
        _bits(into, want)


def lse(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def test_jit_of_logsumexps_gradient_is_eager_bit_for_bit():
    jg = cr.jit(cr.grad(lse))
    x = onp.random.default_rng(7).random(40000)
    ties = x.copy()
    ties[[3, 70, 4000]] = ties.max() + 1.0
    for v in (x, ties, -x, x):
        _bits(jg(v), cr.grad(lse)(v))
    source = jg.lower(x).source
    assert "_kernels.negated_sum(" in source and "_kernels.mask_product(" in source


@pytest.mark.parametrize("x", [[1.5, -2.25, 1e-300], [1.0, -1.0], [0.0, -0.0], [-0.0, -0.0],
                               [onp.inf, -onp.inf], [onp.nan, 1.0], [-onp.inf, 2.0],
                               [1e308, 1e308], onp.linspace(-3.0, 2.0, 1001)])
def test_negated_sum_is_the_sum_of_the_negated_terms(x):
    x = onp.asarray(x, dtype=onp.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        want = onp.add.reduce(onp.negative(x), None)
        seen = len(caught)
        try:
            got = _kernels.negated_sum(onp.add.reduce, x, None)
        except FloatingPointError:
            assert seen  # (raised only where NumPy warns: the call is then eager)
            return
    _bits(got, want)
    keep = onp.add.reduce(onp.negative(x), (0,), None, None, keepdims=True)
    with onp.errstate(all="ignore"):
        _bits(_kernels.negated_sum(onp.add.reduce, x, (0,), None, None, keepdims=True), keep)


def spread(x, w):
    """Cotangents of sums and of a broadcast subtraction."""
    return np.sum(np.sum(x, axis=1, keepdims=True) * w - np.max(x)) + np.sum(w - x[:, :1])


def test_jit_of_spread_cotangents_is_eager_bit_for_bit():
    rng = onp.random.default_rng(8)
    g = cr.grad(spread, argnum=(0, 1))
    jg = cr.jit(g)
    x, w = rng.standard_normal((6, 3)), rng.standard_normal((6, 3))
    for a, b in [(x, w), (-x, w * 0.0), (onp.zeros((6, 3)), -w), (x, w)]:
        for got, want in zip(jg(a, b), g(a, b)):
            _bits(got, want)


def _untake64(g, index, shape):
    return untake(g, index, shape, onp.dtype(onp.float64))


@pytest.mark.parametrize("rows", [20, 400])  # (bincount below SCATTER_AT_SIZE, add.at from)
@pytest.mark.parametrize("bins", [7, 100])  # (a short vector's check in Python, jitd15)
def test_scatter_sum_is_untakes_add_at(bins, rows):
    assert (rows * 6 >= _kernels.SCATTER_AT_SIZE) == (rows == 400)
    rng = onp.random.default_rng(9)
    index = rng.integers(0, bins, (rows, 6)).astype(onp.int8)
    g = _hard((rows, 6))
    g[index == 3] = -0.0
    finite = onp.where(onp.isfinite(g), g, 1.5)
    huge = finite.copy()
    huge[index == 5] = 1e308  # (finite terms, an infinite sum: add.at's overflow warning)
    for values in (finite, g, huge):
        _as_numpy(_kernels.scatter_sum, _untake64, values, index, (bins,))


def test_jit_of_the_det_gradient_is_eager_bit_for_bit():
    g = cr.grad(det_by_minors)
    jg = cr.jit(g)
    rng = onp.random.default_rng(10)
    A = rng.random((7, 7))
    huge = A.copy()
    huge[:6] *= 3e51  # (the last row's cotangent's sums overflow: add.at's warnings)
    huge[6] *= 1e-300
    odd = A.copy()
    odd[3, 2], odd[5, 1], odd[1, 4] = onp.nan, onp.inf, -0.0
    for a in (A, -A, onp.where(A > 0.5, A, -0.0), huge, odd, A):
        _as_numpy(jg, g, a)
    source = jg.lower(A).source
    assert "_kernels.scatter_sum(" in source
    assert "_kernels.outer_lanes(" in source  # (np.outer by a short vector)
    assert source.count("_kernels.scatter_added(") == 6  # (a row scattered where it lies)
    assert "int8" not in source  # (its index constants as intp)


@pytest.mark.parametrize("first", [False, True])
def test_placed_added_is_the_sum_with_a_placed_row(first):
    rng = onp.random.default_rng(17)
    index = rng.integers(0, 7, 60)
    g = _hard((60, 1), seed=5)[:, 0]
    g[index == 2] = -0.0  # (a sum of -0.0s: 0.0 from the scatter)
    a = onp.stack([_untake64(g * k, index, (7,)) for k in (1.0, -2.0, 0.5, 3.0)])
    assert not onp.signbit(a[a == 0]).any()  # (a sum from 0.0)
    def want(a, row, i):
        placed = _kernels.placed(row, i, a.shape)
        return onp.add(placed, a) if first else onp.add(a, placed)

    def into_a_copy(a, row, i):
        return _kernels.placed_added(a, row, i, first, out=a.copy())

    for row in (onp.array([-0.0, 1.5, onp.nan, -onp.inf, 1e308, -2.5e-310, 0.0]),
                onp.full(7, -0.0), onp.full(7, onp.inf)):
        for i in (0, 3):
            _as_numpy(functools.partial(_kernels.placed_added, first=first), want, a, row, i)
            _as_numpy(into_a_copy, want, a, row, i)
    nan_first = onp.full(7, onp.nan)
    nan_first.view(onp.int64)[:] |= 1  # (two nans: the first operand's payload)
    _as_numpy(functools.partial(_kernels.placed_added, first=first), want, a * onp.nan,
              nan_first, 1)


@pytest.mark.parametrize("terms", [(40,), (20, 2), (2100,), (700, 3)])  # (bincount, add.at)
def test_scatter_added_is_the_sum_with_a_placed_scatter(terms):
    rng = onp.random.default_rng(23)
    index = rng.integers(0, 7, terms)
    g = _hard(terms if len(terms) == 2 else terms + (1,), seed=7).reshape(terms)
    g[index == 2] = -0.0
    a = onp.stack([_untake64(g * k, index, (7,)) for k in (1.0, -2.0, 0.5, 3.0)])
    a[1] = 0.0

    def want(a, g, row):
        return onp.add(a, _kernels.placed(_untake64(g, index, (7,)), row, a.shape))

    def fresh(a, g, row):
        return _kernels.scatter_added(a, g, index, row)

    def into_a_copy(a, g, row):
        return _kernels.scatter_added(a, g, index, row, out=a.copy())

    finite = onp.where(onp.isfinite(g), g, 1.5)
    huge = finite.copy()
    huge[index == 5] = 1e308  # (finite terms, an infinite sum: add.at's warning)
    for values in (finite, g, huge):
        _as_numpy(fresh, want, a, values, 1)
        _as_numpy(into_a_copy, want, a, values, -3)


def rows_taken(m, w):
    # (each row's entries taken by a constant index: its cotangent a scatter per row,
    # each placed into zeros and added)
    return sum(np.sum(m[r][INDEX[r]] * w[r]) for r in range(3))


def rows_mixed(m, w):
    return np.sum(m[1][INDEX[0]] * w[0]) + np.sum(m[2] * w[1, :7]) + \
        np.sum(m[0][INDEX[1]] * w[2])


def rows_twice(m, w):  # (row 0's second scatter is added to the first's sums)
    return np.sum(m[0][INDEX[0]] * w[0]) + np.sum(m[1][INDEX[1]] * w[1]) + \
        np.sum(m[0][INDEX[2]] * w[2])


def rows_read(m, w):
    return np.sum(m[0] * w[0]) + np.sum(m[2] * w[1]) + np.sum(m[1] * w[2])


INDEX = onp.random.default_rng(18).integers(0, 7, (3, 40))


def test_jit_adds_a_placed_row_where_it_lies_only_to_sums_from_zero():
    rng = onp.random.default_rng(19)
    m = rng.standard_normal((3, 7))
    w = rng.standard_normal((3, 40))
    odd = w.copy()
    odd[0, :] = -0.0  # (row 0's scatter: 0.0s)
    odd[1, [3, 5]], odd[2, [1, 9]] = onp.inf, [onp.nan, -onp.inf]
    big = w * 3e307  # (overflow in some scatters' sums)
    jg, g = cr.jit(cr.grad(rows_taken)), cr.grad(rows_taken)
    for v in (w, odd, big, -w, w):
        _as_numpy(jg, g, m, v)
    assert jg.lower(m, w).source.count("scatter_added(") == 2
    jx, x = cr.jit(cr.grad(rows_mixed)), cr.grad(rows_mixed)
    for v in (w, odd, big, -w, w):
        _as_numpy(jx, x, m, v)
    source = jx.lower(m, w).source
    assert source.count("placed_added(") == 1 and source.count("scatter_added(") == 1
    jt, t = cr.jit(cr.grad(rows_twice)), cr.grad(rows_twice)
    for v in (w, odd, big, -w, w):
        _as_numpy(jt, t, m, v)
    source = jt.lower(m, w).source
    assert source.count("placed_added(") == 1 and source.count("scatter_added(") == 1
    # a placed row of products (their -0.0s are -0.0 + 0.0 = 0.0 in the sum): not fused
    jr, r = cr.jit(cr.grad(rows_read)), cr.grad(rows_read)
    minus = onp.full((3, 7), -0.0)
    for v in (w[:, :7], minus, -w[:, :7]):
        _as_numpy(jr, r, m, v)
    # (rows of -0.0 products, each placed and added to 0.0s: fused, they stayed -0.0)
    assert not onp.signbit(r(m, minus)).any()
    source = jr.lower(m, w[:, :7]).source
    assert "_kernels.placed(" in source and "placed_added(" not in source


def sum_and_negated_sum(x):
    return np.sum(-x) + np.sum(x)


def test_a_negated_sum_is_not_the_sum_of_its_operand():
    # (found by the jit contract with the size thresholds at 0: the absorbed negation's
    # sum read as a common subexpression of the plain sum of its operand)
    x = onp.random.default_rng(11).standard_normal(40000)
    jf = cr.jit(sum_and_negated_sum)
    _bits(jf(x), sum_and_negated_sum(x))
    _bits(jf(x * 3), sum_and_negated_sum(x * 3))
    assert "_kernels.negated_sum(" in jf.lower(x).source


def two_sums(a, b):
    return np.sum(a * a, axis=-1)[:3] + np.sum(b * b, axis=-1)[:3]


def test_sums_of_the_same_types_over_other_shapes_each_take_their_own_form():
    # (a program keeps a call's code for the next call of the same types: the form of a
    # sum depends on its operand's shape too)
    rng = onp.random.default_rng(12)
    for a, b in [(_hard((600, 2)), _hard((600, 300))), (_hard((600, 300)), _hard((600, 2))),
                 (_hard((600, 10)), _hard((600, 3)))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jf = cr.jit(two_sums)
            _bits(jf(a, b), two_sums(a, b))
            b2 = b * rng.random(b.shape)
            _bits(jf(a, b2), two_sums(a, b2))
            _bits(jf(a * 2.0, b), two_sums(a * 2.0, b))


def two_scatters(x, y):
    return np.sum(x[onp.array([0, 2, 2, 1])] ** 2) + np.sum(np.sin(y[onp.array([[5, 0], [3, 3]])]))


def test_scatters_into_vectors_of_other_lengths_each_keep_their_length():
    # (found by the jit contract with the size thresholds at 0: the first scatter's
    # length was written into the code the second one shared)
    g = cr.grad(two_scatters, argnum=(0, 1))
    jg = cr.jit(g)
    x, y = onp.linspace(-1.0, 2.0, 3), onp.linspace(0.5, 3.0, 7)
    for a, b in [(x, y), (x * 2, -y), (x, y)]:
        for got, want in zip(jg(a, b), g(a, b)):
            _bits(got, want)
    assert jg.lower(x, y).source.count("_kernels.scatter_sum(") == 2


@pytest.mark.parametrize("index,shape", [(2, (4, 3)), ((slice(None), None), (5,)),
                                         ((Ellipsis, slice(1, 3)), (2, 4)), (-1, (3, 2))])
def test_placed_is_untake_of_a_basic_index(index, shape):
    piece = onp.zeros(shape)[index]
    g = onp.random.default_rng(13).standard_normal(piece.shape)
    g.reshape(-1)[:1] = -0.0
    _bits(_kernels.placed(g, index, shape), untake(g, index, shape, onp.dtype(onp.float64)))


def median_of_rows(x):
    return np.sum(np.sin(np.nanmedian(x, axis=1)))


def test_nanmedians_gradient_with_every_form_on_small_arrays_is_eager(monkeypatch):
    # (found by the jit contract with the size thresholds at 0, against a fused form of
    # max's derivative since dropped: np.size of a traced array's record, which has no
    # shape, was 1, so counts per row were taken for one)
    for name in ("LANES_MIN_SIZE", "SUM_MIN_SIZE", "INDICATOR_MIN_SIZE", "NEGATED_MIN_SIZE"):
        monkeypatch.setattr(_kernels, name, 0)
    g = cr.grad(median_of_rows)
    jg = cr.jit(g)
    x = onp.array([[1.1, onp.nan, 0.8, -1.6], [0.5, 1.9, -1e308, -1.5], [1.8, 0.7, -onp.inf, 0.7]])
    y = onp.array([[1.1, onp.nan, 0.8, -1.6], [0.5, 1.9, onp.nan, -1.5], [1.8, 0.7, -1.2, 0.7]])
    with onp.errstate(all="ignore"):
        for v in (x, y, x):
            _bits(jg(v), g(v))


def test_max_tied_at_the_trace_and_a_count_of_booleans_take_their_forms():
    # (max's derivative shares its weight among ties: a trace that saw a tie stages the
    # shares, (x == max) / count, whose sum of booleans and division take their forms)
    jg = cr.jit(cr.grad(lse))
    x = onp.random.default_rng(15).random(40000)
    ties = x.copy()
    ties[[5, 7000]] = ties.max() + 0.5
    for v in (ties, ties * 2.0, ties, x):
        _bits(jg(v), cr.grad(lse)(v))
    source = jg.lower(ties).source
    assert "_kernels.indicator_divide(" in source and "_kernels.count_true(" in source


@pytest.mark.parametrize("g", [0.75, -0.5, 0.0, -0.0, onp.nan, -onp.inf, 5e-324])
def test_mask_product_is_numpys_product(g):
    mask = onp.random.default_rng(16).random((30, 40)) > 0.9
    for number in (onp.array([g]), onp.float64(g), onp.array([[g]])):
        for a, b in ((number, mask), (mask, number)):
            with warnings.catch_warnings(record=True) as want_warnings:
                warnings.simplefilter("always")
                want = onp.multiply(a, b)
            with warnings.catch_warnings(record=True) as got_warnings:
                warnings.simplefilter("always")
                got = _kernels.mask_product(a, b, want.shape)
            _bits(got, want)
            assert [str(w.message) for w in got_warnings] == \
                [str(w.message) for w in want_warnings]
            into = onp.full(want.shape, 3.0)
            assert _kernels.mask_product(a, b, want.shape, out=into) is into
            _bits(into, want)


# ---------------------------------------------------------------- jitd15's forms
@pytest.mark.parametrize("y", [0.0, -0.0, 1.5, onp.nan, -onp.inf])
def test_filled_where_is_numpys_where(y):
    rng = onp.random.default_rng(17)
    condition = rng.random((30, 40)) > 0.7
    for x in (_hard((30, 40)), _hard((60, 1), seed=1)[::2], _hard((40, 1), seed=2).T,
              onp.zeros((30, 40))[:, ::-1] - 0.0):
        for c in (condition, condition[:1], onp.zeros((30, 40), bool)):
            want = onp.where(c, x, y)
            _bits(_kernels.filled_where(c, x, y, want.shape), want)


def nearest_cost(points, centroids):  # (GradBench's kmeans cost: a min over centroids)
    distances = (np.sum(points ** 2, axis=1)[:, None] + np.sum(centroids ** 2, axis=1)
                 - 2 * points @ centroids.T)
    return np.sum(np.min(distances, axis=1))


def newton_direction(points, centroids):
    gradient_of_cost = cr.grad(nearest_cost, argnum=1)
    gradient, curvature = cr.jvp(lambda c: gradient_of_cost(points, c), (centroids,),
                                 (np.ones_like(centroids),))
    return gradient / curvature


def test_jit_of_a_min_derivative_is_eager_bit_for_bit_and_takes_its_forms():
    # min's derivative selects the cotangent where the minimum was (``np.where`` by a
    # number: ``filled_where``) and, forward over reverse, multiplies the mask by the
    # cotangent of the sum, ones (the mask cast: ``.astype``); its guards read a count
    # (an integer compared without ``_same``) and whether a minimum is nan (``any``)
    rng = onp.random.default_rng(18)
    points, centroids = rng.random((1000, 8)), rng.random((20, 8))
    jf = cr.jit(newton_direction)
    tied = centroids.copy()
    tied[3] = tied[4]  # (a point nearest to two centroids: another count of minima)
    nan_point = points.copy()
    nan_point[7, 2] = onp.nan
    signed = points.copy()
    signed[:10] = -0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p, c in [(points, centroids), (points, centroids * 2.0), (points, tied),
                     (nan_point, centroids), (signed, centroids), (points, centroids)]:
            _bits(jf(p, c), newton_direction(p, c))
        source = jf.lower(points, centroids).source
    assert "_kernels.filled_where(" in source and ".astype(" in source
    assert "np.logical_or.reduce(" in source and "np.any(" not in source
    assert "_same(" not in source


def test_a_mask_times_ones_is_the_mask_as_floats_only_where_exact():
    forms = {
        "ones": lambda x: np.ones((30, 1)) * (x > 0) + x,
        "ones32": lambda x: np.ones((30, 1), np.float32) * (x > 0),
        "one": lambda x: (x > 0) * 1.0 - x,
        "twos": lambda x: np.full((30, 1), 2.0) * (x > 0),
        "wider": lambda x: np.ones((2, 30, 40)) * (x > 0),
        "ints": lambda x: np.ones((30, 1), int) * (x > 0),
    }
    x = _hard((30, 40))
    for name, f in forms.items():
        jf = cr.jit(f)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for v in (x, -x, x.astype(onp.float32), x[::-1], x):
                _bits(jf(v), f(v))
            cast = ".astype(" in jf.lower(x).source
        assert cast == (name in ("ones", "ones32", "one")), name


def test_the_kernels_error_state_is_stricts_under_every_callers_state():
    # (strict() set on NumPy's context variable, its settings made once per caller's state:
    # _user_code/errstate.derived_settings)
    for state in ({}, {"all": "raise"}, {"under": "warn"}, {"over": "ignore"},
                  {"all": "ignore"}, {"divide": "call"}, {}):
        with onp.errstate(**state, call=print if state.get("divide") == "call" else None):
            before = onp.geterr()
            a = onp.array([1e308, 1.0])
            if onp.geterr()["over"] != "ignore":
                with pytest.raises(FloatingPointError):  # (into an operand: raises)
                    _kernels.lanes(onp.multiply, (1, 2), onp.dtype(onp.float64), a[None], 10.0,
                                   out=onp.empty((1, 2)))
            assert onp.geterr() == before


def test_a_fresh_lanes_answer_that_errs_is_numpys_call():
    # (a program that warned at an earlier line, then raised in a split call, was evaluated
    # again eagerly, which warned a second time: a fresh answer is NumPy's call instead)
    a = onp.array([[1e308, 1.0]] * 3)
    for state in ("warn", "raise", "ignore"):
        with onp.errstate(over=state), warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            try:
                got = _kernels.lanes(onp.multiply, (3, 2), onp.dtype(onp.float64), a, 10.0)
            except FloatingPointError:
                got = "raised"
        assert (type(got) is str) == (state == "raise")
        if state != "raise":
            _bits(got, a * 10.0)
        assert [str(w.message) for w in rec] == \
            ["overflow encountered in multiply"] * (state == "warn")


@pytest.mark.parametrize("shape,axis", [((5, 1000, 2), 1), ((400, 2), 0)])
def test_pair_sum_that_overflows_is_left_to_eager_evaluation(shape, axis):
    """The pairs' einsum form reports no floating-point error: a sum that overflows is
    NumPy's reduce again, which warns as NumPy does (once: jit14 raised, for eager
    evaluation to warn, which warned again of what the program's earlier lines had)."""
    a = onp.full(shape, 1e308)
    outer = int(onp.prod(shape[:axis]))
    summed = shape[:axis] + shape[axis + 1:]
    _as_numpy(lambda x: _kernels.pair_sum(x, outer, shape[axis], summed),
              lambda x: onp.add.reduce(x, axis), a)
    f = lambda x: np.sum(np.sum(x, axis=axis) * 2.0)  # noqa: E731
    jf = cr.jit(f)
    jf(onp.ones(shape))
    assert ("_kernels.pair_sum(" in jf.lower(onp.ones(shape)).source) == (axis == 1)
    for x in (a, onp.ones(shape), a):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            got = jf(x)
        with warnings.catch_warnings(record=True) as eager:
            warnings.simplefilter("always")
            want = f(x)
        _bits(got, want)
        assert [str(r.message) for r in rec] == [str(r.message) for r in eager]


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("rows,n", [(300, 2), (400, 3), (900, 8), (0, 3)])
def test_outer_lanes_is_numpys_outer(rows, n, dtype):
    a = _hard((max(rows, 40), 1), dtype)[:rows, 0] if rows else onp.zeros(0, dtype)
    b = onp.array([1.0, -1.0, -0.0, 0.0, onp.nan, onp.inf, 3.5, -2.25][:n], dtype)
    with onp.errstate(all="ignore"):  # (inf times 0: strict raises where the state warns)
        _bits(_kernels.outer_lanes(a, b, (rows, n)), onp.outer(a, b))
    inf = onp.full(rows + 1, onp.inf, dtype)  # (inf times 0: NumPy's call, its one warning)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = _kernels.outer_lanes(inf, onp.zeros(n, dtype), (rows + 1, n))
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        _bits(got, onp.outer(inf, onp.zeros(n, dtype)))
    assert [str(w.message) for w in rec] == [str(w.message) for w in want] == \
        ["invalid value encountered in multiply"]


def outer_of(a, b):
    return np.outer(np.sin(a), b)


def test_jit_of_an_outer_by_a_short_vector_is_eager_bit_for_bit():
    rng = onp.random.default_rng(14)
    jf = cr.jit(outer_of)
    a, b = rng.standard_normal(500), onp.array([1.0, -1.0, 2.5])
    assert "_kernels.outer_lanes(" in jf.lower(a, b).source
    odd = a.copy()
    odd[[3, 9, 20]] = [onp.nan, onp.inf, -0.0]
    for x, y in [(a, b), (odd, b), (odd, onp.array([-0.0, onp.inf, 1e308])), (a * 0.0, -b),
                 (a, onp.array([1e308, 1e-320, -1e308])), (a, b)]:
        _as_numpy(jf, outer_of, x, y)
    zero = a.copy()
    zero[5] = -0.0  # (sin(-0.0) * inf: invalid)
    with onp.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="multiply"):
            jf(zero, onp.array([1.0, onp.inf, 2.0]))
    f32 = cr.jit(outer_of)
    _bits(f32(a.astype(onp.float32), b.astype(onp.float32)),
          outer_of(a.astype(onp.float32), b.astype(onp.float32)))


def outers_by_constants(dtype):
    signs = onp.array([1.0, -1.0, 1.0], dtype)
    odd = onp.array([-0.0, onp.inf, 3e38, onp.nan], dtype)

    def outers(a):  # (two outers by constants of one shape and dtype: each its own tiling)
        return np.outer(np.sin(a), signs)[:, :2] + np.outer(a, odd[:3] * 0.5)[:, 1:] + \
            np.outer(a, odd)[:, :2]

    def signed_rows(m):
        return np.sum(np.tanh(m @ signs))  # (its cotangent of m: np.outer(g, signs))

    return outers, cr.grad(signed_rows)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
def test_an_outer_by_a_short_constant_is_eager_bit_for_bit(dtype):
    rng = onp.random.default_rng(37)
    a = _hard((60, 1), dtype, seed=3)[:, 0]
    outer_by_constants, grad_of_signed_rows = outers_by_constants(dtype)
    jf, jg = cr.jit(outer_by_constants), cr.jit(grad_of_signed_rows)
    m = rng.standard_normal((50, 3)).astype(dtype)
    for source, outers in ((jf.lower(a).source, 3), (jg.lower(m).source, 1)):
        assert source.count(".repeat(") == outers and "outer_lanes" not in source
    big = a.copy()
    big[4:9] = onp.finfo(dtype).max / 10  # (times 3e38: overflow)
    for x in (a, -a, big, a[:0], onp.full(7, -0.0, dtype), a[:1], a):
        _as_numpy(jf, outer_by_constants, x)
    odd = m.copy()
    odd[2, 1], odd[7, 0], odd[9, 2] = onp.nan, onp.inf, -0.0
    for x in (m, odd, m[:0], -m, m):
        _as_numpy(jg, grad_of_signed_rows, x)
    finite = onp.where(onp.isfinite(big), big, 2.0)  # (-0.0 times inf: invalid)
    for state in ("invalid", "over"):
        with onp.errstate(**{state: "raise"}):
            with pytest.raises(FloatingPointError, match=f"{state}.* in multiply"):
                jf(finite)
    # (a long vector: outer_lanes, no constant as large as the answer)
    long = onp.resize(a, _kernels.OUTER_TILE_SIZE // 3 + 1)
    assert ".repeat(" not in jf.lower(long).source
    _as_numpy(jf, outer_by_constants, long)


def squares(x, y):
    return np.tanh(x) ** 2 + x ** 2 * y ** 2.0 - (x * y) ** 3


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32, onp.complex128, onp.int64])
def test_an_arrays_square_is_the_square_its_power_calls(dtype):
    # (x ** 2 of a float or complex array is NumPy's square, whose warning names square;
    # the program calls it, not the array's __pow__)
    jf, jg = cr.jit(squares), cr.jit(cr.grad(lambda x, y: np.sum(squares(x, y)).real))
    x = onp.linspace(-3.0, 3.0, 14)
    if dtype == onp.complex128:
        x = x + 1j * x[::-1]
    x, y = x.astype(dtype), (x * 2).astype(dtype)
    jf(x, y)
    assert jf.lower(x, y).source.count("np.square(") == (2 if onp.dtype(dtype).kind in "fc" else 1)
    odd = x.copy()
    if onp.dtype(dtype).kind != "i":
        odd[[1, 4, 6]] = [onp.nan, onp.inf, -0.0]
    big = x * (1e200 if dtype != onp.float32 else 1e30) if onp.dtype(dtype).kind != "i" else x
    for a, b in [(x, y), (odd, y), (big, y), (x, -y), (x, y)]:
        _as_numpy(jf, squares, a, b)
        if dtype == onp.float64:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _bits(jg(a, b), cr.grad(lambda x, y: np.sum(squares(x, y)).real)(a, b))


def _lane_summed(x):
    return np.sum(np.sin(x) + x, axis=-1)


def _pair_summed(x):
    return np.sum(np.sin(x) + x, axis=1)


def _negated_summed(x):
    return np.sum(-(np.sin(x) + x))


@pytest.mark.parametrize("f,shape,form", [(_lane_summed, (600, 3), "lane_sum"),
                                          (_pair_summed, (5, 400, 2), "pair_sum"),
                                          (_negated_summed, (200, 200), "negated_sum")])
def test_a_faster_form_that_errs_after_the_program_warned_warns_once(f, shape, form):
    # (the program warned at sin's line, then the faster form raised in strict(): the
    # call was evaluated again eagerly, which warned at sin a second time)
    x = onp.linspace(0.0, 1.0, int(onp.prod(shape))).reshape(shape)
    jf = cr.jit(f)
    jf(x)
    assert f"_kernels.{form}(" in jf.lower(x).source
    odd = x.copy()
    odd.reshape(-1)[0] = onp.inf  # (sin warns)
    odd[1] = 1e308  # (the sums overflow)
    for a in (x, odd, x, odd):
        _as_numpy(jf, f, a)
