"""Attacks on the fourteenth session's speed work (brief attack14), each against the
reference semantics: grad's fixed cost (call14: the plain-leaf type cache, a space's seed
without np.ones), the rules (km14: max/min's picked tangent, unbroadcast by einsum) and
jit's faster forms (jit14) against eager NumPy bit for bit, warnings and errors included."""

import dataclasses
import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule._core.pytree import tree_flatten


def _bits(a):
    a = onp.asarray(a)
    return a.dtype.str, a.shape, a.tobytes()


# ------------------------------------------------------------------ 1. call14
class _Sub(onp.ndarray):
    """An ndarray subclass (as np.memmap, astropy's Quantity ...): not a scalar."""


@pytest.mark.parametrize("shape", [(3,), (2, 2), (1,)])
def test_elementwise_grad_of_an_ndarray_subclass_output_has_its_shape(shape):
    # ArrayVSpace.ones() seeded with a scalar wherever the value was not exactly an
    # ndarray: the seed of an n-element subclass output was one number
    x = onp.arange(1.0, 1.0 + onp.prod(shape)).reshape(shape).view(_Sub)
    got = cr.elementwise_grad(lambda x: x * 2.0)(x)
    assert _bits(got) == _bits(onp.full(shape, 2.0))
    got = cr.elementwise_grad(lambda x: x * x)(x)  # (the chain rule: 2 x)
    assert _bits(got) == _bits(2.0 * onp.asarray(x))


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_elementwise_grad_of_a_matrix_output():
    m = onp.matrix([[1.0, 2.0]])
    got = cr.elementwise_grad(lambda x: x * 3.0)(m)
    assert onp.array_equal(onp.asarray(got), [[3.0, 3.0]])


@pytest.mark.parametrize("value", [2.0, onp.float64(2.0), onp.float32(2.0), onp.float16(2.0),
                                   onp.array(2.0), onp.array(2.0, ">f8")])
def test_grad_seed_of_scalars_is_still_a_scalar(value):
    g = cr.grad(lambda x: x * x * 1.5)(value)
    want = onp.asarray(value).dtype.newbyteorder("=").type(3.0 * float(value))
    assert type(g) is type(want) and _bits(g) == _bits(want)


def test_a_class_made_a_dataclass_after_it_was_flattened_as_a_leaf():
    # the plain-leaf type cache remembered the class; dataclasses.dataclass(cls) turns the
    # class itself into a dataclass (in place), which must then flatten as one
    class Point:
        a: float
        b: float

    p = Point()
    p.a, p.b = 1.0, 2.0
    leaves, _ = tree_flatten(p)
    assert leaves == [p]
    dataclasses.dataclass(Point)
    leaves, _ = tree_flatten(Point(3.0, 4.0))
    assert leaves == [3.0, 4.0]
    g = cr.grad(lambda p: p.a * p.b)(Point(3.0, 4.0))
    assert type(g) is Point and (g.a, g.b) == (4.0, 3.0)


def test_a_class_registered_after_it_was_flattened_as_a_leaf():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    assert len(tree_flatten(Pair(1.0, 2.0))[0]) == 1
    cr.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))
    g = cr.grad(lambda p: p.a ** 2 * p.b)(Pair(3.0, 2.0))
    assert (g.a, g.b) == (12.0, 9.0)


@pytest.mark.parametrize("argnum, error", [(2, ValueError), (-3, ValueError),
                                           (True, TypeError), (onp.int64(1), TypeError)])
def test_argnum_out_of_range_or_not_an_int_is_refused(argnum, error):
    with pytest.raises(error, match="argnum"):
        cr.grad(lambda x, y: x * y, argnum)(2.0, 3.0)


def test_argnum_negative_and_one_argument_fast_path():
    f = lambda x, y: x * y ** 2  # noqa: E731
    assert cr.grad(f, -1)(2.0, 3.0) == 12.0 and cr.grad(f, -2)(2.0, 3.0) == 9.0
    assert cr.grad(np.sin, -1)(2.0) == onp.cos(2.0)
    with pytest.raises(ValueError, match="argnum 1"):
        cr.grad(np.sin, 1)(2.0)
    assert cr.grad(lambda x, k=1.0: np.sin(x) * k)(2.0, k=3.0) == 3.0 * onp.cos(2.0)


def test_error_settings_changed_between_calls_and_inside():
    g = cr.grad(lambda x: np.log(x) + 0.0 * x)
    old = onp.seterr(divide="raise")
    try:
        with pytest.raises(FloatingPointError):
            g(0.0)
        onp.seterr(divide="ignore")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert g(0.0) == onp.inf
        calls = []
        old_call = onp.seterrcall(lambda *a: calls.append(a))
        onp.seterr(divide="call")
        assert g(0.0) == onp.inf and len(calls) == 2
        onp.seterrcall(old_call)
        onp.seterr(divide="warn")
        with pytest.warns(RuntimeWarning, match="divide by zero") as record:
            g(0.0)
        assert {r.filename for r in record} == {__file__}
    finally:
        onp.seterr(**old)


# ------------------------------------------------------------------ 2. km14
_X = onp.array([[1.0, 5.0, 2.0], [4.0, 0.5, 3.0]])
_T = onp.arange(1.0, 7.0).reshape(2, 3)


@pytest.mark.parametrize("fun", [np.max, np.min, np.amax, np.nanmin])
def test_extreme_jvp_over_no_axes_is_the_tangent(fun):
    ans, t = cr.jvp(lambda x: fun(x, axis=()), (_X,), (_T,))
    assert _bits(ans) == _bits(_X) and _bits(t) == _bits(_T)
    ans, series = cr.jet(lambda x: fun(x, axis=()), (_X,), ((_T, 2.0 * _T),))
    assert _bits(series[0]) == _bits(_T) and _bits(series[1]) == _bits(2.0 * _T)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, (0,), (2,), (0, 2), (1, 2), (0, 1, 2),
                                  (2, 0), None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_extreme_jvp_is_the_picked_tangent_and_matches_reverse(axis, keepdims):
    rng = onp.random.default_rng(3)
    x, t = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    t[0, 0, 0] = -0.0
    for fun, pick in ((np.max, onp.max), (np.min, onp.min)):
        got = cr.jvp(lambda x, fun=fun: fun(x, axis=axis, keepdims=keepdims), (x,), (t,))[1]
        mask = x == pick(x, axis=axis, keepdims=True)
        want = onp.sum(onp.where(mask, t, 0.0), axis=axis, keepdims=keepdims)
        assert _bits(got) == _bits(want)
        jac = cr.jacobian(lambda x, fun=fun: fun(x, axis=axis, keepdims=keepdims))(x)
        assert onp.allclose(onp.tensordot(jac, t, axes=3), want, rtol=0, atol=1e-12)


def test_extreme_jvp_ties_on_the_second_call_of_a_jitted_function():
    f = cr.jit(lambda x, t: cr.jvp(lambda x: np.max(x, axis=1), (x,), (t,))[1])
    untied = onp.array([[1.0, 3.0, 2.0], [0.0, -1.0, 5.0]])
    tied = onp.array([[3.0, 3.0, 2.0], [0.0, -0.0, -1.0]])
    t = onp.array([[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]])
    for x in (untied, tied, untied, tied):
        eager = cr.jvp(lambda x: np.max(x, axis=1), (x,), (t,))[1]
        assert _bits(f(x, t)) == _bits(eager)
    assert _bits(f(tied, t)) == _bits(onp.array([1.5, 12.0]))


def test_a_broadcast_operands_gradient_keeps_numpys_floating_point_errors():
    w = onp.array([[1e308, 1.0], [1e308, 2.0], [1.0, 3.0]])
    x = onp.zeros((3, 2))
    f = cr.grad(lambda b: np.sum(w * (x + b)))
    with onp.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        f(onp.zeros(2))


# ------------------------------------------------------------------ 3. jit14
def _same_twice(f, *args):
    """jit(f) ≡ f on its tracing call and on its program's call, bit for bit."""
    want = f(*args)
    jf = cr.jit(f)
    for _ in range(3):
        got = jf(*args)
        assert type(got) is type(want) and _bits(got) == _bits(want)


def test_jit_sum_over_a_short_last_axis_with_keepdims_one():
    a = onp.random.default_rng(0).standard_normal((1000, 3))
    _same_twice(lambda a: np.sum(a, axis=-1, keepdims=1), a)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32, onp.float16])
@pytest.mark.parametrize("lead", [(1,), (8,), (128,), (129,), (600,), (3, 300)])
def test_jit_sums_over_a_short_last_axis_are_numpys(lead, dtype):
    rng = onp.random.default_rng(len(lead) * 1000 + lead[-1])
    for n in range(1, 21):
        a = rng.standard_normal(lead + (n,)) * onp.exp2(rng.integers(-40, 40, lead + (n,)))
        with onp.errstate(over="ignore"):  # (float16: some overflow to inf, as wanted)
            a = a.astype(dtype)
        a[..., 0] = -0.0
        for f in (lambda a: np.sum(a, axis=-1), lambda a: np.sum(a, axis=(-1,), keepdims=True),
                  lambda a: np.sum(a, axis=0), lambda a: np.sum(a.T, axis=0),
                  lambda a: np.sum(a[::2], axis=-1)):
            with onp.errstate(all="ignore"):
                _same_twice(f, a)


@pytest.mark.parametrize("mode", ["raise", "ignore", "warn"])
def test_jit_short_axis_forms_keep_numpys_floating_point_errors(mode):
    rng = onp.random.default_rng(5)
    a = rng.standard_normal((1000, 3)).astype(onp.float32)
    b = rng.standard_normal(3).astype(onp.float32)
    big = onp.float32(1e38)
    for f in (lambda a, b: np.sum(a * big * big, axis=-1), lambda a, b: np.exp(a * 1000.0) - b):
        jf = cr.jit(f)
        for _ in range(2):
            outcomes = []
            for g in (f, jf):
                with warnings.catch_warnings(record=True) as rec, onp.errstate(all=mode):
                    warnings.simplefilter("always")
                    try:
                        outcomes.append(_bits(g(a, b)))
                    except FloatingPointError as e:
                        outcomes.append(str(e))
                outcomes.append(sorted(str(r.message) for r in rec
                                       if r.category is RuntimeWarning))
            assert outcomes[:2] == outcomes[2:]


def test_jit_warns_once_where_a_call_also_raises():
    # (NumPy tells of overflow, then raises on underflow: one warning; jit's program once
    # told, then raised, and eager evaluation told again)
    a = onp.array([1000.0, -1000.0, 1.0])
    f = lambda a: np.exp(a) * 2.0  # noqa: E731
    jf = cr.jit(f)
    jf(onp.ones(3))  # (traced without an error: the next calls run its program)
    assert _warnings_told_where_underflow_raises((f, jf, jf), a) == [1, 1, 1]


def _warnings_told_where_underflow_raises(functions, a) -> list[int]:
    """Per function: the RuntimeWarnings its call on ``a`` gives under an error state
    that warns of overflow and raises on underflow (which each call must raise)."""
    counts = []
    for g in functions:
        with warnings.catch_warnings(record=True) as rec, \
                onp.errstate(over="warn", under="raise"):
            warnings.simplefilter("always")
            with pytest.raises(FloatingPointError, match="underflow"):
                g(a)
        counts.append(sum(r.category is RuntimeWarning for r in rec))
    return counts


@pytest.mark.parametrize("mode", ["call", "log"])
def test_jit_calls_the_error_callback_once_where_a_call_also_raises(mode):
    a = onp.array([1000.0, -1000.0, 1.0])
    f = lambda a: np.exp(a) * 2.0  # noqa: E731
    jf = cr.jit(f)
    jf(onp.ones(3))
    told: list = []

    class Log:
        def write(self, message):
            told.append(message)

    callback = Log() if mode == "log" else lambda kind, flag: told.append(kind)
    counts = []
    for g in (f, jf, jf):
        del told[:]
        with onp.errstate(over=mode, under="raise", call=callback):
            with pytest.raises(FloatingPointError, match="underflow"):
                g(a)
        counts.append(len(told))
    assert counts == [1, 1, 1]


@pytest.mark.parametrize("mode", ["call", "log"])
def test_jit_calls_the_error_callback_once_at_a_trace_that_warned(mode):
    # (a trace that gave a warning runs its program once to see which it gives itself:
    # that run called the caller's callback a second time for the first call)
    def f(a):
        warnings.warn("the function's own", stacklevel=2)
        return np.exp(a) * 2.0

    told: list = []

    class Log:
        def write(self, message):
            told.append(message)

    callback = Log() if mode == "log" else lambda kind, flag: told.append(kind)
    a = onp.array([1000.0, 1.0])
    with onp.errstate(over="ignore"):
        want = _bits(onp.exp(a) * 2.0)
    jf = cr.jit(f)
    for g in (f, jf, jf, jf):
        del told[:]
        with warnings.catch_warnings(record=True) as rec, \
                onp.errstate(over=mode, call=callback):
            warnings.simplefilter("always")
            got = g(a)
        assert _bits(got) == want and len(told) == 1
        assert [str(r.message) for r in rec] == ["the function's own"]


def test_jit_under_a_raising_state_answers_and_warns_as_numpy_where_nothing_raises():
    # (the program runs with every telling mode made 'raise': an error it meets makes the
    # call eager evaluation's, which warns once and answers NumPy's values; a call without
    # an error is the program's, twice, a float scalar too)
    f = lambda a: np.exp(a) * 2.0  # noqa: E731
    jf = cr.jit(f)
    for x in (onp.ones(3), onp.array([1000.0, -0.0, onp.nan]), 2.0, 1000.0, onp.ones(0)):
        for _ in range(3):
            with warnings.catch_warnings(record=True) as rec, \
                    onp.errstate(over="warn", under="raise", invalid="ignore"):
                warnings.simplefilter("always")
                got = jf(x)
            with warnings.catch_warnings(record=True) as eager_rec, \
                    onp.errstate(over="warn", under="raise", invalid="ignore"):
                warnings.simplefilter("always")
                want = f(x)
            assert _bits(got) == _bits(want) and type(got) is type(want)
            assert [str(r.message) for r in rec] == [str(r.message) for r in eager_rec]
    assert jf.cache_info().hits > 0


def test_picked_tangent_under_vmap_and_jit_is_the_loop():
    # each example ties or not on its own; jit must not keep one example's decision
    rng = onp.random.default_rng(0)
    f = lambda x, t: cr.jvp(lambda x: np.max(x, axis=-1), (x,), (t,))[1]  # noqa: E731
    h = lambda x, t: cr.jvp(cr.grad(lambda x: np.min(x) * np.sum(x)), (x,), (t,))[1]  # noqa: E731
    for fun in (f, h):
        vmapped, jitted = cr.vmap(fun), cr.jit(cr.vmap(fun))
        for k in range(4):
            x, t = rng.standard_normal((5, 4, 3)), rng.standard_normal((5, 4, 3))
            if k % 2:
                x[1], x[3, 0], x[4] = onp.round(x[1]), 1.0, 0.0
                x[4, 0, 0] = -0.0
            loop = onp.stack([fun(x[i], t[i]) for i in range(5)])
            assert _bits(vmapped(x, t)) == _bits(loop) and _bits(jitted(x, t)) == _bits(loop)


_LANE_UFUNCS = [np.abs, np.exp, np.log, np.sqrt, np.add, np.divide, np.mod, np.power,
                np.subtract]


def _eager_then_jitted_twice(f, args, mode, seen, error_text) -> list:
    """f, then jit(f) twice (the trace, the program), each under np.errstate(all=mode):
    per call what ``seen`` makes of the answer (or ``error_text`` of the error), then the
    RuntimeWarnings' messages."""
    jf = cr.jit(f)
    outcomes = []
    for g in (f, jf, jf):
        with warnings.catch_warnings(record=True) as rec, onp.errstate(all=mode):
            warnings.simplefilter("always")
            try:
                outcomes.append(seen(g(*args)))
            except (FloatingPointError, TypeError, ValueError) as e:
                outcomes.append(error_text(e))
        outcomes.append(sorted(str(w.message) for w in rec if w.category is RuntimeWarning))
    return outcomes


def _lane_case(u):
    if u.__name__ in ("absolute", "abs", "exp", "log", "sqrt"):
        return lambda a, b: u(a) * b
    return lambda a, b: u(b, a)  # (b broadcast over a's rows or its short last axis)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32, onp.complex128, onp.int8])
@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
def test_jit_lanes_are_numpys_broadcast_ufuncs(dtype, mode):
    rng = onp.random.default_rng(1)
    for shape, other in (((1100, 2), (2,)), ((700, 3), (700, 1)), ((2, 1024, 3), (3,))):
        a = rng.standard_normal(shape) * onp.exp2(rng.integers(-5, 12, shape))
        a.reshape(-1)[rng.integers(0, a.size, 40)] = [onp.nan, -onp.inf, 0.0, -0.0] * 10
        with onp.errstate(all="ignore"):
            a, b = a.astype(dtype), rng.standard_normal(other).astype(dtype) * 3
        for u in _LANE_UFUNCS:
            outcomes = _eager_then_jitted_twice(_lane_case(u), (a, b), mode,
                                                lambda r: (_bits(r), r.strides), repr)
            assert outcomes[0:2] == outcomes[2:4] == outcomes[4:6], u


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_jit_short_axis_sums_with_nan_inf_zeros_and_overflow(dtype, mode):
    # lane_sum's order (in order under 8 entries, NumPy's eight running sums from 8)
    # with the values whose sums show it: signed zeros, nan, inf, overflow
    rng = onp.random.default_rng(11)
    big = onp.finfo(dtype).max
    for n in range(2, 21):
        a = rng.standard_normal((1000, n)) * onp.exp2(rng.integers(-60, 60, (1000, n)))
        a[0], a[1, ::2], a[1, 1::2] = -0.0, -0.0, 0.0
        a[2, 0], a[3, n // 2], a[4, 0], a[4, -1] = onp.nan, onp.inf, onp.inf, -onp.inf
        a[5], a[6] = big / 2, -big
        with onp.errstate(all="ignore"):
            a = a.astype(dtype)
        outcomes = _eager_then_jitted_twice(lambda a: np.sum(a, axis=-1), (a,), mode,
                                            _bits, str)
        assert outcomes[0:2] == outcomes[2:4] == outcomes[4:6], n


def test_a_broadcast_operands_gradient_warns_alike_eagerly_and_jitted():
    x = onp.zeros((3, 2))
    f = cr.grad(lambda b, w: np.sum(w * (x + b)))
    jf = cr.jit(f)
    b = onp.zeros(2)
    jf(b, onp.ones((3, 2)))  # (traced without a warning: the next calls run its program)
    w = onp.array([[onp.inf, 1.0], [-onp.inf, 2.0], [1.0, 3.0]])
    seen = []
    for g in (f, jf, jf):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            seen.append((_bits(g(b, w)), sorted(str(r.message) for r in rec
                                                if r.category is RuntimeWarning)))
    assert seen[0] == seen[1] == seen[2]


def test_a_staged_derivative_warns_once_where_a_call_also_raises():
    """scipy's solvers run derivative dynamics through ``Staged`` (jit's programs without
    jit's call): under an error state that warns of one error and raises on another, a
    program that warned, then raised, is run again by jit and then eagerly: it must warn
    once, as NumPy does, and raise NumPy's error."""
    from chainrule.scipy._staged import Staged

    a = onp.array([1000.0, -1000.0, 1.0])
    f = lambda a: np.exp(a) * 2.0  # noqa: E731
    staged = Staged(f)
    onp.testing.assert_array_equal(staged(onp.ones(3)), onp.exp(onp.ones(3)) * 2.0)
    assert staged.programs and not staged.refused
    assert _warnings_told_where_underflow_raises((f, staged, staged), a) == [1, 1, 1]
    onp.testing.assert_array_equal(staged(onp.full(3, 2.0)), onp.exp(onp.full(3, 2.0)) * 2.0)
