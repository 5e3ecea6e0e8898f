"""The eighteenth session's faster forms, each against the form it replaces, bit for bit:

- a cotangent summed over one axis followed by 3 to 64 entries (gmm's mu at d = 10, in
  ``x[None] - mu[:, None]``) by einsum (``_helpers.rows_sum``), in eager rules and jit;
- subtract's cotangent of a broadcast operand as the negated sums of the cotangent;
- ``np.min`` / ``np.max`` / ``np.sum`` over a short last axis column by column (kmeans'
  nearest centroid, gmm's squares summed over d: ``chainrule.numpy.short_axes``),
  untraced, traced and in jit's programs.
"""

from __future__ import annotations

import warnings

import numpy as onp
import pytest
from benchmarks.gradbench.evals import gmm, kmeans

import chainrule as cr
import chainrule.numpy as np
from chainrule.jit import _kernels
from chainrule.numpy import short_axes
from chainrule.numpy.rules import _helpers
from observed import assert_same_array

_bits = assert_same_array  # (NumPy's answer: type, shape, dtype, strides, bytes)


def _hard(shape, dtype=onp.float64, seed=0):
    """Finite numbers whose sums show their order in the last bits, with signed zeros."""
    rng = onp.random.default_rng(seed)
    a = rng.standard_normal(shape) * onp.exp2(rng.integers(-40, 40, shape))
    a[0] = -0.0
    a[-1, ..., 1] = -0.0
    a.reshape(-1)[[-3, -9]] = [0.0, -0.0]
    return a.astype(dtype)


def _without_faster_forms(monkeypatch):
    """The rules as they were: NumPy's reduce over the axis, and -g summed."""
    monkeypatch.setattr(_helpers, "ROWS_SUMMED_MAX_WIDTH", 2)
    monkeypatch.setattr(_helpers, "_NEGATED_UNBROADCAST_MIN_SIZE", 1 << 62)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("shape,axis", [((25, 1000, 10), 1), ((3, 40, 3), 1), ((300, 7), 0),
                                        ((2, 100, 64), 1), ((4, 50, 3, 5), 1),
                                        ((2, 3, 60, 4), 2), ((7, 70000, 3), 1),
                                        ((1, 100000, 5), 1), ((3, 3000, 17), 1)])
def test_rows_sum_is_numpys_sum_over_an_axis_before_a_short_run(shape, axis, dtype):
    # (exact_rows_sum checks a few small shapes once; einsum's iterator buffers 8192
    # elements: sizes on both sides, several outer axes, long and short columns)
    a = _hard(shape, dtype)
    outer, n = int(onp.prod(shape[:axis])), shape[axis]
    width = int(onp.prod(shape[axis + 1:]))
    want = onp.add.reduce(a, axis, keepdims=True)
    _bits(_helpers.rows_sum(a, outer, n, width).reshape(want.shape), want)
    _bits(_kernels.rows_sum(a, outer, n, width, want.shape), want)
    _bits(_helpers._axis_summed(a, axis), want)


def test_rows_sum_that_is_not_finite_is_numpys_reduce_with_its_warning():
    a = onp.full((4, 300, 5), 1e308)
    assert _helpers._axis_summed(a, 1) is None  # (the rule's general path then sums)
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        got = _kernels.rows_sum(a, 4, 300, 5, (4, 5))
    with warnings.catch_warnings(record=True) as numpy_told:
        warnings.simplefilter("always")
        want = onp.add.reduce(a, 1)
    _bits(got, want)
    assert [str(w.message) for w in told] == [str(w.message) for w in numpy_told] != []


def centered_loss(mu, x, w):
    """A broadcast difference whose cotangent is summed over n for each (k, d) entry."""
    centered = x[None, :, :] - mu[:, None, :]
    return np.sum(w * centered * centered)


@pytest.mark.parametrize("d", [3, 10, 40])
def test_the_gradient_of_a_broadcast_difference_is_the_bits_it_was(d, monkeypatch):
    rng = onp.random.default_rng(d)
    k, n = 5, 2000
    x, w = rng.normal(size=(n, d)), rng.normal(size=(k, n, 1))
    cases = [rng.uniform(size=(k, d)), onp.zeros((k, d))]
    # totals that are exactly zero (mu's cotangent adds t then -t, row after row): the
    # sums of -g are 0.0, the negated sums of g would be -0.0 (so the rule sums -g there)
    x_sym = onp.empty_like(x)
    x_sym[0::2], x_sym[1::2] = x[: n // 2], -x[: n // 2]
    cases_sym = [(onp.zeros((k, d)), x_sym, onp.ones((k, n, 1)))]
    grad = cr.grad(centered_loss)
    jitted = cr.jit(grad)
    got = [grad(mu, x, w) for mu in cases] + [grad(*c) for c in cases_sym]
    jit_got = [jitted(mu, x, w) for mu in cases] + [jitted(*c) for c in cases_sym]
    source = jitted.lower(cases[0], x, w).source
    # (mu's cotangent: the sums of -g, without -g, from NEGATED_MIN_SIZE)
    assert ("_kernels.negated_rows_sum(" in source) == (k * n * d >= _kernels.NEGATED_MIN_SIZE)
    assert "_kernels.rows_sum(" in source or "_kernels.negated_rows_sum(" in source
    # against the hand-derived gradient -2 sum_n w (x - mu)
    for mu, g in zip(cases, got):
        want = -2.0 * onp.sum(w * (x[None] - mu[:, None]), axis=1)
        onp.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-10)
    assert (got[2] == 0).all() and not onp.signbit(got[2]).any()
    _without_faster_forms(monkeypatch)
    before = [grad(mu, x, w) for mu in cases] + [grad(*c) for c in cases_sym]
    for g, j, b in zip(got, jit_got, before):
        _bits(g, b)
        _bits(j, b)


def _zero_rows(n, dtype):
    """Rows of every pattern of -0.0 and 0.0 over six entries, then normal numbers."""
    patterns = onp.arange(64)[:, None] >> onp.arange(6)[None, :] & 1
    zeros = onp.where(patterns[:, onp.arange(n) % 6] == 1, -0.0, 0.0)
    rng = onp.random.default_rng(n)
    return onp.concatenate([zeros, rng.standard_normal((600, n))]).astype(dtype)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("n", [2, 3, 10, 16])
def test_min_and_max_over_a_short_last_axis_are_numpys(n, dtype):
    a = _zero_rows(n, dtype)
    assert short_axes.applies(a, 1, short_axes.LANE_EXTREME_MIN_SIZE)
    for ours, theirs in ((np.min, onp.min), (np.max, onp.max), (np.amin, onp.amin),
                         (np.amax, onp.amax)):
        for axis in (1, -1):
            _bits(ours(a, axis), theirs(a, axis))
            _bits(ours(a, axis=axis), theirs(a, axis=axis))
        _bits(ours(a.reshape(2, -1, n), axis=2), theirs(a.reshape(2, -1, n), axis=2))
    odd = a.copy()
    odd[70, 0], odd[71, 1], odd[72, n - 1], odd[73, 0] = onp.nan, -onp.nan, onp.inf, -onp.inf
    for ours, theirs in ((np.min, onp.min), (np.max, onp.max)):
        _bits(ours(odd, axis=1), theirs(odd, axis=1))  # (a nan: NumPy's reduce, its nan)
        want = theirs(odd, axis=1)
        _bits(short_axes.lane_extreme(onp.minimum if ours is np.min else onp.maximum, odd),
              want)


def test_other_calls_of_min_are_numpys():
    a = _zero_rows(10, onp.float64)
    size = short_axes.LANE_EXTREME_MIN_SIZE
    assert not short_axes.applies(a.T, 0, size)  # (not its last axis)
    assert not short_axes.applies(onp.asfortranarray(a), 1, size)
    for args, kwargs in [((a, 0), {}), ((a,), {}), ((a, 1), {"keepdims": True}),
                         ((a, 1), {"initial": 0.5}), ((onp.asfortranarray(a), 1), {}),
                         ((a[:, :20:2], 1), {}), ((a.astype(onp.int64), 1), {}),
                         ((a[:5], 1), {})]:
        _bits(np.min(*args, **kwargs), onp.min(*args, **kwargs))


def nearest(points, centroids):
    distances = np.sum((points[:, None, :] - centroids[None, :, :]) ** 2, axis=2)
    return np.sum(np.min(distances, axis=1)) + np.sum(np.max(distances, axis=-1))


def test_derivatives_through_a_short_min_are_the_bits_they_were(monkeypatch):
    rng = onp.random.default_rng(7)
    points, centroids = rng.random((400, 3)), rng.random((6, 3))
    ties = onp.concatenate([centroids, centroids[:2]])  # (tied minima: shared weights)
    grad, hvp = cr.grad(nearest, 1), cr.hessian_vector_product(nearest, 1)
    jitted = cr.jit(grad)
    answers = [(grad(points, c), hvp(points, c, onp.ones_like(c)), jitted(points, c))
               for c in (centroids, ties, centroids)]
    assert "short_axes.lane_extreme(" in jitted.lower(points, centroids).source
    monkeypatch.setattr(short_axes, "MAX_LANES", 1)
    for c, (g, h, j) in zip((centroids, ties, centroids), answers):
        _bits(g, grad(points, c))
        _bits(h, hvp(points, c, onp.ones_like(c)))
        _bits(j, g)


def test_kmeans_and_gmm_tools_jit_is_eager_bit_for_bit_with_the_forms():
    rng = onp.random.default_rng(3)
    points = rng.random((1000, 8))
    for centroids in (points[-10:], points[:10] * 0.5, points[-10:]):
        eager = kmeans.newton_direction(points, centroids)
        jitted = kmeans.functions(True)["dir"].compute
        _bits(jitted(points, centroids), eager)
        _bits(kmeans.functions(True)["cost"].compute(points, centroids),
              kmeans.cost(points, centroids))
    source = cr.jit(kmeans.newton_direction).lower(points, points[-10:]).source
    assert "short_axes.lane_extreme(" in source
    d, k, n = 10, 5, 1000
    raw = {"d": d, "k": k, "n": n, "m": 0, "gamma": 1.0,
           "x": rng.normal(size=(n, d)).tolist(), "alpha": rng.normal(size=k).tolist(),
           "mu": rng.uniform(size=(k, d)).tolist(), "q": rng.normal(size=(k, d)).tolist(),
           "l": rng.normal(size=(k, d * (d - 1) // 2)).tolist()}
    args = gmm.prepare(raw)
    eager = gmm.functions(False)["jacobian"].compute
    jitted = gmm.functions(True)["jacobian"].compute
    for _ in range(3):
        for got, want in zip(jitted(*args), eager(*args)):
            _bits(got, want)
    assert "_kernels.negated_rows_sum(" in jitted.lower(*args).source  # (mu, k n d = 50,000)


def _weighted_difference(mu, x, c):
    return np.sum(c * (x[None, :, :] - mu[:, None, :]))


def _outcome(fun, *args):
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        try:
            answer = fun(*args)
        except FloatingPointError as error:
            return ("raised", str(error)), []
    return answer, [str(w.message) for w in told]


@pytest.mark.parametrize("kind", ["nan", "inf and -inf", "overflow", "zero totals"])
@pytest.mark.parametrize("state", ["warn", "raise", "ignore"])
def test_a_broadcast_differences_gradient_tells_of_errors_as_it_did(kind, state, monkeypatch):
    rng = onp.random.default_rng(11)
    k, n, d = 4, 3000, 5
    mu, x = rng.normal(size=(k, d)), rng.normal(size=(n, d))
    c = rng.normal(size=(k, n, d))
    if kind == "nan":
        c[1, 7, 2] = onp.nan
    elif kind == "inf and -inf":
        c[2, 3, 1], c[2, 9, 1] = onp.inf, -onp.inf
    elif kind == "overflow":
        c[0, :, 3] = 1e308
    else:
        c[:, 1::2] = -c[:, 0::2]
    grad = cr.grad(_weighted_difference)
    jitted = cr.jit(grad)
    plain = rng.normal(size=(k, n, d))
    jitted(mu, x, plain)
    assert "_kernels.negated_rows_sum(" in jitted.lower(mu, x, plain).source
    with onp.errstate(all=state):
        got, told = _outcome(grad, mu, x, c)
        jit_got, jit_told = _outcome(jitted, mu, x, c)
        _without_faster_forms(monkeypatch)
        want, want_told = _outcome(grad, mu, x, c)
    assert told == want_told == jit_told
    if type(want) is tuple:
        assert got == want == jit_got
    else:
        _bits(got, want)
        _bits(jit_got, want)


def _extremes_of_two_layouts(a, b):
    return np.sum(np.min(a * 1.0, axis=1)) + np.sum(np.max(b * 1.0, axis=1)) + \
        np.sum(np.min(b * 2.0, axis=1))


def test_a_programs_min_over_a_short_axis_is_not_written_for_another_layout():
    # one program, two calls of min of the same types: (1000, 10) over its short last
    # axis (lane_extreme), (5, 100, 10) over its middle one (NumPy's reduce)
    rng = onp.random.default_rng(5)
    a, b = rng.random((1000, 10)), rng.random((5, 100, 10))
    jf = cr.jit(_extremes_of_two_layouts)
    for x, y in ((a, b), (a * -1.0, b[::-1].copy()), (a, b)):
        _bits(jf(x, y), _extremes_of_two_layouts(x, y))
    assert jf.lower(a, b).source.count("short_axes.lane_extreme(") == 1


def _rows_of_extremes(x, table):
    d = np.outer(x, x)[:, None, :] - table[None, :, :3]
    c = np.sum(np.max(d * d, axis=2), axis=1)
    return np.sum(c * c[::-1])


@pytest.mark.parametrize("rows", [9, 4000])
def test_jit_of_a_hessian_through_a_max_is_eagers_bits(rows):
    # (found by the contracts' wide template: the staged tangent of max, a sum over the
    # axis of the tangent where the mask holds, kept the layout of hessian's batch of
    # tangents, batch axis innermost, where eager's take answers in C order; the sum over
    # the rows after it then added in another order: the last bit of two entries)
    table = onp.linspace(-2.0, 2.0, rows * 6).reshape(6, rows).T.copy()
    x = onp.array([-1.80585251, 1.05462967, 4.19140448])
    for transform in (cr.hessian, lambda f: cr.jacobian(cr.grad(f))):
        h = transform(lambda z: _rows_of_extremes(z, table))
        jh = cr.jit(h)
        for z in (x, -x, x):
            _bits(jh(z), h(z))


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("n", [2, 7, 8, 9, 10, 16])
def test_sum_over_a_short_last_axis_is_numpys(n, dtype):
    rng = onp.random.default_rng(n)
    a = (rng.standard_normal((300, n)) * onp.exp2(rng.integers(-40, 40, (300, n)))).astype(dtype)
    a[0], a[1, 0] = -0.0, -0.0
    assert short_axes.applies(a, 1, short_axes.LANE_SUM_MIN_SIZE) == (a.size >= 1024)
    for axis in (1, -1):
        _bits(np.sum(a, axis), onp.sum(a, axis))
        _bits(np.sum(a, axis=axis), onp.sum(a, axis=axis))
        _bits(short_axes.lane_sum(a), onp.add.reduce(a, -1))
    big = onp.concatenate([a] * 4)
    _bits(np.sum(big.reshape(4, 300, n), axis=2), onp.sum(big.reshape(4, 300, n), axis=2))


@pytest.mark.parametrize("state", ["warn", "raise", "ignore"])
def test_a_short_sum_that_overflows_tells_as_numpys(state):
    a = onp.ones((400, 5))
    a[3] = [1e308, 1e308, -onp.inf, 1.0, 2.0]
    a[7] = [1e308, 1e308, 1.0, 1.0, 2.0]
    a[9, 2] = onp.nan
    with onp.errstate(all=state):
        got, told = _outcome(np.sum, a, 1)
        want, want_told = _outcome(onp.sum, a, 1)
    assert told == want_told
    if type(want) is tuple:
        assert got == want
    else:
        _bits(got, want)
    assert state == "ignore" or told or type(want) is tuple


def _mixture_terms(q, x):
    return np.sum(np.log(np.sum(np.exp(-np.sum((x[None] - q[:, None]) ** 2, axis=2)), axis=0)))


def test_gradients_through_short_sums_are_the_bits_they_were(monkeypatch):
    rng = onp.random.default_rng(9)
    q, x = rng.normal(size=(6, 10)), rng.normal(size=(500, 10))
    grad = cr.grad(_mixture_terms)
    jitted = cr.jit(grad)
    got = [grad(q, x), jitted(q, x), jitted(q * 0.5, x)]
    source = jitted.lower(q, x).source
    assert "lane_sum(" in source and "rows_sum(" in source
    monkeypatch.setattr(short_axes, "MAX_LANES", 1)
    _without_faster_forms(monkeypatch)
    _bits(got[0], grad(q, x))
    _bits(got[1], grad(q, x))
    _bits(got[2], grad(q * 0.5, x))


@pytest.mark.parametrize("fun", [np.min, np.nanmax, np.amin])
def test_jit_of_the_tangent_of_an_extreme_over_every_axis_is_a_number(fun):
    # (the C-order fix above first made the staged tangent of a whole array's extreme a
    # 0-d array, where eager answers a NumPy float: the jit contract's spec cases, 4 of
    # 30,000)
    x = onp.random.default_rng(2).standard_normal((2, 3, 4))
    jvp = lambda z: cr.jvp(fun, (z,), (onp.ones_like(z),))  # noqa: E731
    jitted = cr.jit(jvp)
    for z in (x, -x, x):
        for got, want in zip(jitted(z), jvp(z)):
            _bits(got, want)


def _squares(x, c):
    y = np.sin(x)
    return np.sum(c * (y * y)) + np.sum((y + y) * x) + np.sum(x * np.asarray(x))


def test_one_value_as_both_operands_is_pulled_back_once_with_the_same_bits(monkeypatch):
    from chainrule._core.rule_table import rule_table

    rng = onp.random.default_rng(12)
    x, c = rng.normal(size=(40, 30)), rng.normal(size=(40, 1))
    grad = cr.grad(_squares)
    got = grad(x, c)
    want = 2 * c * onp.sin(x) * onp.cos(x) + 2 * onp.cos(x) * x + 2 * onp.sin(x) + 2 * x
    onp.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    entry = rule_table[np.multiply]
    first, second = entry.vjp_by_argnums[(0, 1)]
    calls = []
    monkeypatch.setitem(entry.vjp_by_argnums, (0, 1),
                        (first, lambda *a, **k: calls.append(1) or second(*a, **k)))
    _bits(grad(x, c), got)
    # ((y + y) * x calls the second rule; y * y and x * asarray(x), one value twice, not)
    assert len(calls) == 1
    monkeypatch.setattr(entry, "symmetric", False)
    monkeypatch.setattr(rule_table[np.add], "symmetric", False)
    _bits(grad(x, c), got)  # (each rule called: the same bits)
    assert len(calls) == 1 + 3
    # (the general path, a call's first VJP and the observers', computes it once too)
    monkeypatch.setattr(entry, "symmetric", True)
    g = rng.normal(size=x.shape)
    both = entry.vjp(g, (0, 1), x * x, (x, x), {})
    assert both[0] is both[1]
    _bits(both[0], g * x)
    apart = entry.vjp(g, (0, 1), x * x, (x, x.copy()), {})
    assert apart[0] is not apart[1]
    h = cr.hessian(lambda z: np.sum(z * z * z))(x[0, :5])
    onp.testing.assert_allclose(h, onp.diag(6 * x[0, :5]), rtol=1e-13, atol=1e-13)


def _summed_into(x):
    m = np.zeros(2)
    np.sum(np.reshape(np.concatenate([x, x * 2]), (2, x.size)), axis=1, out=m, where=x > 0)
    return m * 1.0


def test_a_float32_sum_into_a_float64_out_accumulates_in_float64():
    # (np.sum's primitive calls short_axes' form of it: buffers' table of the functions
    # that accumulate in out's dtype named NumPy's np.sum, and jit's program summed in
    # float32, another last digit: 19 of 30,000 jit cases)
    rng = onp.random.default_rng(4)
    x = (rng.standard_normal(40) * onp.exp2(rng.integers(-12, 12, 40))).astype(onp.float32)
    want = onp.zeros(2)
    onp.sum(onp.reshape(onp.concatenate([x, x * 2]), (2, 40)), axis=1, out=want, where=x > 0)
    assert want[0] != onp.sum(x[x > 0])  # (float32 sums: another last digit)
    jitted = cr.jit(_summed_into)
    for _ in range(3):
        _bits(_summed_into(x), want)
        _bits(jitted(x), want)


def _written_then_summed(x):
    o = np.zeros(6)
    np.divide(x, 1.0 + x * x, out=o, where=x > 0)
    d = np.outer(o, o)[:, None, :] - _TABLE[None, :, :6]
    return np.sum(np.max(d * d, axis=2), axis=1)


_TABLE = onp.linspace(-2.0, 2.0, 4000 * 6).reshape(6, 4000).T.copy()


@pytest.mark.parametrize("in_axis", [0, -1])
def test_vmap_of_a_written_buffer_lays_examples_out_as_the_loop(in_axis):
    # (found by the contracts' wide template, vmap case 15,163: an unbatched buffer written
    # by the batch was copied from its broadcast view in order K, the batch axis
    # innermost; the sum over the 4,000 rows after it then added in another order)
    from chainrule._transforms.vmap import batched_runs_first

    xs = onp.random.default_rng(6).standard_normal((5, 6))
    xs = xs if in_axis == 0 else xs.T.copy()
    loop = onp.stack([_written_then_summed(xs[i] if in_axis == 0 else xs[:, i])
                      for i in range(5)])
    with batched_runs_first():
        batched = cr.vmap(_written_then_summed, in_axes=in_axis)(xs)
    _bits(batched, loop)


def test_program_lines_times_every_line_of_the_compiled_derivative():
    from benchmarks.gradbench import profile, program_lines

    label, objective, argnum, args = profile.CASES["kmeans"](k=3, n=50, d=2)
    jitted = cr.jit(profile.derivative("kmeans", objective, argnum))
    total, lines = program_lines.timed_lines(jitted, args, runs=3)
    program = jitted.variants_for(*args)[0]
    assigned = [line for line in program.source.split("\n")
                if program_lines._ASSIGNED.match(line)]
    assert len(lines) == len(assigned) > 10
    assert abs(sum(t for t, _ in lines) - total) < 1e-9 and total > 0
    assert any("lane_extreme(np.minimum" in text for _, text in lines) is False  # (50 < 512)
    assert all(not program_lines._HANDLE.search(text.split("=", 1)[1]) for _, text in lines)
    _bits(jitted(*args), kmeans.newton_direction(*args))


@pytest.mark.parametrize("n", [9, 10, 13, 16])
def test_rows_answering_zero_among_others_are_numpys(n):
    # (attack18: NumPy's reduce of a float64 row of 9 to 13 entries picks another zero than
    # column after column; those rows alone are NumPy's, the others keep the lanes' form:
    # kmeans' centroids are points, a few exact zeros among 1000 rows)
    rng = onp.random.default_rng(n)
    a = rng.random((1200, n)) + 0.5
    tricky = onp.array(([-0.0] * 4 + [0.0] + [-0.0] * 2 + [0.0] * 2 + [1.0] * 7)[:n])
    a[::7] = tricky
    a[3::11] = -tricky
    for ufunc, fun in ((onp.minimum, np.min), (onp.maximum, np.max)):
        _bits(short_axes.lane_extreme(ufunc, a), ufunc.reduce(a, -1))
        _bits(fun(a, axis=1), ufunc.reduce(a, -1))
