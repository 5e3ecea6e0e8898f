"""Attacks on the fifteenth session's changes and this session's branches (brief attack16),
each against the reference semantics: jit ≡ eager (values to the bit, warnings, NumPy's error
calls, exceptions), vmap ≡ the loop of the caller's own examples (views), eager ≡ NumPy.
Tests of older bugs (failing on main before this session too) are strict xfails naming the
mechanism; the rest pin what held under attack."""

import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule.numpy.rules._helpers import _axis_summed, unbroadcast
from observed import bits, observed


def _hard_sums(rng, shape, dtype):
    """Terms whose sum's last bits depend on the order they are added in."""
    return (rng.standard_normal(shape) * onp.exp2(rng.integers(-40, 40, shape))).astype(dtype)


# ------------------------------------------------------------- eager15 / lead: pair sums
@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("lead, n", [((2,), 8193), ((3,), 129), ((2, 2), 700), ((1000,), 3),
                                     ((7,), 70000)])
def test_pair_sums_are_numpys_bits_beyond_the_checked_sizes(lead, n, dtype):
    # exact_pair_sum checks 5 x 300 once; einsum's iterator buffers 8192 elements: sizes on
    # both sides, two outer axes, and many short columns
    g = _hard_sums(onp.random.default_rng(n), lead + (n, 2), dtype)
    axis = len(lead)
    summed = _axis_summed(g, axis)
    assert summed is not None  # (the form applies)
    assert bits(summed) == bits(onp.sum(g, axis=axis, keepdims=True))


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("n", [2, 9, 17, 8193])
def test_rows_summed_into_a_pair_are_numpysbits(n, dtype):
    # (n, 2) -> (2,): the einsum form over the rows, -0.0 columns included
    g = _hard_sums(onp.random.default_rng(n), (n, 2), dtype)
    g[:, 0] = -0.0
    assert bits(unbroadcast(g, onp.zeros(2, dtype))) == bits(onp.sum(g, axis=0))


def _centred_loss(mu, x, c):
    return np.sum(c * (x[None, :, :] - mu[:, None, :]))


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("kind", ["huge", "cancel", "nan", "inf", "negzero"])
@pytest.mark.parametrize("state", [dict(all="warn"), dict(all="raise"), dict(all="call")])
def test_a_pair_sums_cotangent_jitted_is_eagers_at_special_values(kind, dtype, state):
    rng = onp.random.default_rng(7)
    k, n = 25, 1000
    x, mu = rng.standard_normal((n, 2)).astype(dtype), rng.standard_normal((k, 2)).astype(dtype)
    c = _hard_sums(rng, (k, n, 2), dtype)
    big = onp.finfo(dtype).max
    if kind == "huge":  # every pair's sum overflows: NumPy's reduce warns or raises
        c[...] = big / 4
    elif kind == "cancel":  # a partial sum overflows where the total would not
        c[...] = big / 2
        c[:, 1::2] *= -1
    elif kind == "nan":
        c[3, 7, 1] = onp.nan
    elif kind == "inf":
        c[0, 5, 0] = onp.inf
    else:
        c[...] = -0.0
    gradient = cr.grad(_centred_loss)
    want = observed(gradient, mu, x, c, **state)
    if kind == "negzero":
        assert want[0][0] == "ok" and not onp.signbit(
            onp.frombuffer(want[0][1][2], dtype)).any()  # (-sum(-0.0s) = -(0.0))
    jitted = cr.jit(gradient)
    for _ in range(3):  # (the trace, then the program)
        assert observed(jitted, mu, x, c, **state) == want


# ------------------------------------------------------------------- jit: error states
def _sum_of_squares(x):
    return np.sum(x * x)


# (older, found here: grad's switch of "warn" to "log" inside jit's trace was read by
# jit/_staging.StagingNode through _errstate.acts(), which counted the caller's own
# "raise": a JitWarning and eager calls for ever; fixed by fix16's d33f32f)
@pytest.mark.parametrize("state", [dict(invalid="raise"), dict(divide="raise"),
                                   dict(under="raise")])
def test_jit_of_grad_compiles_under_a_callers_state_that_raises_and_warns(state):
    x = onp.array([0.5, -0.25, 2.0])
    gradient = cr.grad(_sum_of_squares)
    jitted = cr.jit(gradient)
    want = observed(gradient, x, **state)
    assert want[1] == []
    for _ in range(2):
        assert observed(jitted, x, **state) == want  # (no JitWarning)
    assert jitted.cache_info().variants == 1 and jitted.cache_info().eager == 0


def test_jit_of_grad_compiles_under_a_state_that_only_raises():
    # (the neighbour that holds: all="raise", or raise with the rest ignored)
    x = onp.array([0.5, -0.25, 2.0])
    jitted = cr.jit(cr.grad(_sum_of_squares))
    for state in (dict(all="raise"), dict(over="raise", invalid="ignore", divide="ignore")):
        assert observed(jitted, x, **state)[1] == []
    assert jitted.cache_info().eager == 0


def _log_then_branch(x):
    y = np.log(x)
    if y[0] > 0:
        return y * 2.0
    return y * 3.0


@pytest.mark.xfail(strict=True, reason="older (at 0278bbd too): a cached program that warned "
                   "(log of a negative) before a guard that fails answers MISS, and the "
                   "retrace evaluates the function again, which warns again")
def test_jit_warns_once_where_a_guard_fails_after_a_warning():
    a, b = onp.array([3.0, -1.0]), onp.array([0.5, -1.0])  # (the branch taken flips)
    jitted = cr.jit(_log_then_branch)
    assert observed(jitted, a) == observed(_log_then_branch, a)
    assert observed(jitted, b) == observed(_log_then_branch, b)


@pytest.mark.parametrize("state", [dict(all="call"), dict(all="raise"), dict(all="ignore")])
def test_jit_where_a_guard_fails_after_an_error_call_or_raise(state):
    # (the neighbours that hold: a program run strictly answers RAISED before the guard)
    a, b = onp.array([3.0, -1.0]), onp.array([0.5, -1.0])
    jitted = cr.jit(_log_then_branch)
    assert observed(jitted, a, **state) == observed(_log_then_branch, a, **state)
    assert observed(jitted, b, **state) == observed(_log_then_branch, b, **state)


# -------------------------------------------------------------- order15: vmap's examples
def _flat_a(x):
    return np.ravel(x, order="A")


def _strided():
    """(3, 4, 5) whose x[:, :, i] is neither C- nor F-contiguous (strides 8, 48): NumPy's
    order "A" reads it in C order; a compact copy in order "K" is F-contiguous."""
    return onp.asfortranarray(onp.arange(120.0).reshape(3, 8, 5))[:, ::2]


_BROADCAST_K = pytest.mark.xfail(
    strict=True, reason="older (at 0278bbd too): vmap's copy of a batch with a broadcast "
    "axis (a zero stride) lays the examples out otherwise than NumPy's order 'K' reads the "
    "caller's (_transforms/vmap's batch copy; the lead's 6e93c71 keeps 'A' and 'K' of "
    "strided examples, found here): ravel(e, 'K') reads another order, silently")


# (older, found here: vmap's compact copy of the batch in order "K" made a strided example
# F-contiguous, so order "A" read it in F; fixed by the lead's 6e93c71 but for a broadcast
# example read in order "K")
@pytest.mark.parametrize("case", ["strided A", "broadcast A",
                                  pytest.param("broadcast K", marks=_BROADCAST_K),
                                  pytest.param("batch broadcast K", marks=_BROADCAST_K)])
def test_vmap_of_ravel_order_a_reads_the_callers_examples_as_the_loop_does(case):
    base = onp.arange(60.0).reshape(5, 3, 4)
    x, axis, order = {
        "strided A": (_strided(), 2, "A"),
        "broadcast A": (onp.broadcast_to(base[:, :1, :], (5, 3, 4)), 0, "A"),
        "broadcast K": (onp.broadcast_to(base[:, :1, :], (5, 3, 4)), 0, "K"),
        "batch broadcast K": (onp.broadcast_to(base[:1], (5, 3, 4)), 1, "K")}[case]
    at = (slice(None),) * axis
    loop = onp.stack([onp.ravel(x[at + (i,)], order=order) for i in range(x.shape[axis])])
    got = cr.vmap(lambda e: np.ravel(e, order=order), in_axes=axis)(x)
    assert bits(got) == bits(loop)


@pytest.mark.filterwarnings("ignore::UserWarning")  # (jit(vmap)'s fallback: the test below)
def test_ravel_order_a_of_strided_examples_under_grad_and_jit_is_numpys():
    # (the neighbours that hold: one example, not vmapped, eager and jitted, and jit(vmap))
    x = _strided()
    w = onp.arange(12.0) - 5.5

    def loss(e):
        return np.sum(np.sin(_flat_a(e)) * w)

    for i in range(x.shape[2]):
        e = x[:, :, i]
        want = onp.zeros(e.shape)
        want.reshape(-1)[...] = (onp.cos(onp.ravel(e, order="C")) * w)  # (C: e is neither)
        assert onp.allclose(cr.grad(loss)(e), want, rtol=1e-15, atol=0)
        assert bits(cr.jit(cr.grad(loss))(e)) == bits(cr.grad(loss)(e))
    loop = onp.stack([cr.grad(loss)(x[:, :, i]) for i in range(x.shape[2])])
    assert bits(cr.jit(cr.vmap(cr.grad(loss), in_axes=2))(x)) == bits(loop)


# -------------------------------------------------------- vmap: x[i] of a 1-d example
def _element_then_written(c):
    v = c * 2.0
    w = v[1]  # NumPy: a scalar, a copy of the entry
    v[1] = 3.0
    return w * c[0]


def test_an_element_then_written_under_grad_and_jit_is_numpys():
    # (the neighbours that hold: grad and jit keep the element's value before the write)
    c = onp.array([4.0, 5.0, 6.0])
    assert _element_then_written(c) == 40.0
    assert cr.jit(_element_then_written)(c) == 40.0
    assert bits(cr.grad(_element_then_written)(c)) == bits(onp.array([10.0, 8.0, 0.0]))


# (older, found here: x[i] of a 1-d example was a view of the batch's column where
# NumPy's is a scalar copy; fixed by the lead's 6e93c71)
@pytest.mark.parametrize("jitted", [False, True])
def test_vmap_of_an_element_then_written_is_the_loop(jitted):
    from chainrule._transforms.vmap import batched_runs_first

    x = onp.arange(12.0).reshape(4, 3) + 1.0
    loop = onp.stack([_element_then_written(c) for c in x])
    with batched_runs_first():
        mapped = cr.vmap(_element_then_written)
        got = (cr.jit(mapped) if jitted else mapped)(x)
    assert bits(got) == bits(loop)


# ------------------------------------------------ fix16: the lines replayed warnings name
def _places(fn, *args):
    """The messages of the warnings a call gives, and the file and line each names."""
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        fn(*args)
    return [(str(m.message), m.filename, m.lineno) for m in told]


@pytest.mark.xfail(strict=True, reason="fix16's 9577c9e (merged at 8c102d7; passed at "
                   "c17b2c6): jit/_effects.Replaying takes the function's own warning on the "
                   "tracing call's line for a notice and names each later call's line")
def test_a_one_line_functions_own_warning_keeps_its_line_on_later_calls():
    # the function defined and first called on one line: its own warning names that line
    # on every call, eagerly; fix16's 9577c9e takes it for a notice naming the tracing
    # call's line (the same file and line) and names each later call's line instead
    # (passes on main at c17b2c6)
    x = onp.array([1.0, 2.0])
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        f = lambda x: (warnings.warn("inside", stacklevel=1), np.sum(x * 2.0))[1]; jf = cr.jit(f); jf(x)  # noqa: E501, E702, E731
        jf(x)
        f(x)
    lines = [m.lineno for m in told]
    assert len(lines) == 3 and lines[0] == lines[1] == lines[2]


def _log_sum(x):
    return np.sum(np.log(x))


@pytest.mark.xfail(strict=True, reason="older (main too): a compiled program's NumPy warning "
                   "names the program's own source ('<chainrule.jit ...>', line 3) where "
                   "grad's eager call names the user's line (_user_code/lines."
                   "WARN_AT_USER_LINE); only the tracing call's matches")
def test_jit_of_grad_names_the_users_line_in_numpys_warning_as_eager_does():
    gradient = cr.grad(_log_sum)
    jitted = cr.jit(gradient)
    x = onp.array([-1.0, 2.0])
    for _ in range(3):
        assert _places(jitted, x) == _places(gradient, x)


def _warns_at_its_caller(x):
    warnings.warn("deprecated", DeprecationWarning, stacklevel=2)
    return np.sum(x * 2.0)


@pytest.mark.xfail(strict=True, reason="older (main too): a warning the function gives with "
                   "stacklevel=2 (a library's deprecation) names jit's own frame "
                   "(jit/__init__.py) where the eager call names the caller's line; "
                   "DeprecationWarning is then hidden by Python's default filters")
def test_jit_of_a_function_warning_at_its_callers_line_names_that_line():
    jitted = cr.jit(_warns_at_its_caller)
    x = onp.array([1.0, 2.0])
    for _ in range(2):
        want = _places(_warns_at_its_caller, x)
        assert [place[1] for place in want] == [__file__]
        assert _places(jitted, x) == want


# --------------------------------------------- order15 / lead: explain's check in layout
def _sin_times(x):
    return np.sum(np.sin(x) * x)


@pytest.mark.parametrize("layout", ["window", "broadcast", "strided", "reversed"])
def test_explains_check_finds_no_disagreement_on_inputs_laid_out_oddly(layout):
    # a sliding window's rows overlap in memory, which cannot hold x + step laid out as x:
    # main at c17b2c6 wrote it there anyway (explain/_check._shifted through
    # placement.laid_out_like, since order15 and the lead's mend) and reported sin's and
    # multiply's VJPs as disagreeing with finite differences (relative errors 0.29, 0.4)
    from numpy.lib.stride_tricks import sliding_window_view

    base = onp.linspace(0.1, 1.0, 8)
    x = {"window": sliding_window_view(base, 3),
         "broadcast": onp.broadcast_to(base[:3], (6, 3)),
         "strided": onp.asfortranarray(onp.outer(base, base[:6]))[::2, ::2],
         "reversed": onp.outer(base, base[:3])[::-1, ::-1]}[layout]
    report = str(cr.explain(_sin_times, x, check=True))
    assert "disagrees" not in report
    assert "VJP vs finite differences" in report  # (the check ran)


def test_explains_check_still_finds_a_wrong_vjp_on_a_window():
    from numpy.lib.stride_tricks import sliding_window_view

    from chainrule.extend import defvjp, primitive

    @primitive
    def twice(x):
        return 2.0 * x

    defvjp(twice, lambda ans, x: lambda g: 3.0 * g)  # (wrong: 2 g)
    x = sliding_window_view(onp.linspace(0.1, 1.0, 8), 3)
    assert "disagrees" in str(cr.explain(lambda x: np.sum(twice(x)), x, check=True))


# --------------------------------------------------- jit: a folded constant's overflow
def _scaled_sines(v):
    return np.sum(np.sin(v) * 1e300 * 1e10)


@pytest.mark.xfail(strict=True, reason="older (at 0278bbd too): the cotangent's product of "
                   "constants (1.0 * 1e10 * 1e300: inf) is folded into the program's "
                   "constant at trace time, so the cached program never gives its 'overflow "
                   "in multiply' again under 'warn' ('call' and 'raise' hold)")
def test_jit_of_grad_warns_of_a_constant_products_overflow_on_every_call():
    gradient = cr.grad(_scaled_sines)
    jitted = cr.jit(gradient)
    v = onp.array([0.5, 1.0, 2.0])
    want = observed(gradient, v)
    assert len(want[1]) == 2  # (the value's product and the cotangent's)
    for _ in range(2):
        assert observed(jitted, v) == want


@pytest.mark.parametrize("state", [dict(all="call"), dict(all="raise")])
def test_jit_of_grad_with_a_constant_products_overflow_where_the_state_acts(state):
    gradient = cr.grad(_scaled_sines)
    jitted = cr.jit(gradient)
    v = onp.array([0.5, 1.0, 2.0])
    want = observed(gradient, v, **state)
    for _ in range(2):
        assert observed(jitted, v, **state) == want


# ------------------------------------------- fix16: the lines laplacian's warnings name
def _with_a_pole(x):
    return np.sum(np.sqrt(x) + 1.0 / x)


_POLE_LINE = _with_a_pole.__code__.co_firstlineno + 1


def test_grad_of_laplacian_names_the_functions_line_in_its_warnings():
    # grad's eager warnings name the line of the function where NumPy met the error in
    # the forward pass (_user_code/lines.WARN_AT_USER_LINE; the backward pass's the calling
    # line), as grad(f)'s do; fix16's d33f32f records the collapsed pass's errors and tells
    # them after the pass (_user_code.errstate.Deferred.tell), naming only the line that
    # called the transform (passes on main at c17b2c6)
    x = onp.array([0.0, 1.0, 2.0])
    for transform in (cr.grad, lambda f: cr.grad(cr.laplacian(f))):
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            transform(_with_a_pole)(x)
        assert (__file__, _POLE_LINE) in {(m.filename, m.lineno) for m in told}


def test_laplacian_names_the_functions_line_in_its_warnings():
    x = onp.array([0.0, 1.0, 2.0])
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        cr.laplacian(_with_a_pole)(x)
    places = {(m.filename, m.lineno) for m in told}
    assert (__file__, _POLE_LINE) in places
    assert {filename for filename, _ in places} == {__file__}


# --------------------------------------------- jit: a square's VJP computed once
def _exp_of_a_square(x, c):
    y = x * 1e-20
    return np.sum(np.exp(y * y) * c)


# (was a strict xfail, older (at 0278bbd too): y * y's VJP was g * y for each operand, two
# products that each underflow eagerly, where jit's program computes it once and adds it
# to itself, so a cached call under a state that hears underflow warned once less; since
# defsymmetric the eager backward pass computes it once too)
def test_jit_of_grad_of_a_square_warns_of_each_underflow_as_eager_does():
    gradient = cr.grad(_exp_of_a_square)
    jitted = cr.jit(gradient)
    x = onp.array([1e-5, 2.0, 3.0], onp.float32)
    c = onp.array([1e-20, 1.0, 1.0], onp.float32)
    want = observed(gradient, x, c, under="warn")
    for _ in range(3):
        assert observed(jitted, x, c, under="warn") == want


# ------------------------------------------ fix16: ufuncs without a rule under jit, out=
def _parts_into_buffers(x):
    whole, frac = np.zeros(x.shape), np.zeros(x.shape)
    np.modf(x, out=(frac, whole))
    return frac * 1.0, whole * 1.0


# (main at c17b2c6 raised "no derivative rule"; fixed by fix16's 7b0efee)
@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_jit_of_modf_and_frexp_is_eager_bit_for_bit():
    x = onp.array([1.5, -0.0, -2.25, onp.nan, onp.inf, -onp.inf, 1e300, 5e-324])

    def parts(x):
        return np.modf(x), np.frexp(x * 2.0), np.ldexp(x, np.frexp(x)[1])

    jitted = cr.jit(parts)
    for v in (x, x.astype(onp.float32, casting="unsafe"), x[::-1], x[:0]):
        want = [bits(a) for pair in parts(v)[:2] for a in pair] + [bits(parts(v)[2])]
        for _ in range(2):
            got = jitted(v)
            assert [bits(a) for pair in got[:2] for a in pair] + [bits(got[2])] == want


@pytest.mark.xfail(strict=True, reason="older (main raised 'no derivative rule'); on fix16 "
                   "at 7b0efee jit of np.modf(x, out=(a, b)) into chainrule.numpy buffers "
                   "raises TypeError 'would write a traced value into a plain NumPy array "
                   "... drops its derivative' (no derivative asked; they are buffers) where "
                   "eager answers")
def test_jit_of_modf_into_buffers_is_eager():
    x = onp.array([1.5, -0.0, -2.25, onp.nan])
    want = [bits(a) for a in _parts_into_buffers(x)]
    got = cr.jit(_parts_into_buffers)(x)
    assert [bits(a) for a in got] == want


# ------------------------------------------------ zero derivatives are arrays of their own
def _linear(a):
    return np.sum(a)


# (older, fixed by the lead: the zero Jacobian of an output independent of the input, the
# zero Hessian of a linear function, and a sum's rows pulled back at once were read-only
# broadcasts of one row, where NumPy's and autograd's answers are writeable)
@pytest.mark.parametrize("transform", ["hessian", "jacobian", "jacrev", "jit_hessian",
                                       "jit_jacobian"])
def test_zero_derivatives_are_writeable_arrays_of_their_own(transform):
    x = onp.arange(3.0)
    make = {"hessian": lambda: cr.hessian(_linear),
            "jacobian": lambda: cr.jacobian(lambda a: onp.ones(2) + 0.0 * _linear(a)),
            "jacrev": lambda: cr.jacrev(lambda a: onp.ones(2) + 0.0 * _linear(a)),
            "jit_hessian": lambda: cr.jit(cr.hessian(_linear)),
            "jit_jacobian": lambda: cr.jit(cr.jacobian(
                lambda a: onp.ones(2) + 0.0 * _linear(a)))}[transform]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ("Output seems independent of input.")
        d = make()(x)
    assert not d.any()
    d[onp.diag_indices(min(d.shape))] += 2.0
    assert d.sum() == 2.0 * min(d.shape)


# ------------------------------------------------ jitd16 / older: powers of NumPy scalars
def _squared_by_a_numpy_int(x):
    return x ** onp.int64(2)


@pytest.mark.parametrize("state", [dict(all="warn"), dict(all="raise")])
@pytest.mark.xfail(strict=True, reason="older (main too): a NumPy float64 scalar ** np.int64(2) "
                   "is NumPy's scalar math eagerly ('overflow encountered in scalar power'), "
                   "the power ufunc in jit's program ('... in power'): another warning and "
                   "another FloatingPointError message")
def test_jit_of_a_numpy_scalars_power_tells_as_eager(state):
    x = onp.float64(1e200)
    jitted = cr.jit(_squared_by_a_numpy_int)
    want = observed(_squared_by_a_numpy_int, x, **state)
    for _ in range(2):
        assert observed(jitted, x, **state) == want


@pytest.mark.filterwarnings("ignore:overflow encountered in cast",
                            "ignore:invalid value encountered in multiply")
def test_jit_of_an_arrays_square_by_power_is_eager():
    # (jitd16's 68d6e04 writes x ** 2 as np.square: the same bits and warnings on main and
    # there, over float16/32/64, complex64/128, 0-d, F-ordered, reversed, empty, nan, inf,
    # -0.0, subnormal and overflowing entries)
    vals = onp.array([1.5, -0.0, onp.nan, -onp.inf, 1e200, 3e-162, 5e-324])
    for x in (vals, vals.astype(onp.float32), vals + 1j * vals[::-1], onp.array(1e200),
              vals[::-1], vals[:0]):
        for e in (2, 2.0):
            def f(x, e=e):
                return x ** e

            jitted = cr.jit(f)
            for state in (dict(all="warn"), dict(all="raise")):
                want = observed(f, x, **state)
                for _ in range(2):
                    assert observed(jitted, x, **state) == want


def _flattened_then_written(c):
    v = c * 2.0
    w = v.flatten()  # NumPy: always a copy
    v[1] = 3.0
    return w * 1.0


@pytest.mark.xfail(strict=True, reason="older (at 0278bbd too): in eager vmap's batched run "
                   "(chosen by cost, forced here), v.flatten() of an example is a "
                   "view of the batch where NumPy's flatten always copies, so a later write "
                   "into v changes it: silently other values (jit(vmap), jit and grad right)")
def test_vmap_of_a_flatten_then_written_is_the_loop():
    from chainrule._transforms.vmap import batched_runs_first

    x = onp.arange(12.0).reshape(4, 3) + 1.0
    loop = onp.stack([_flattened_then_written(c) for c in x])
    with batched_runs_first():  # (vmap's own choice of the batched run goes by cost)
        assert bits(cr.vmap(_flattened_then_written)(x)) == bits(loop)


def test_a_flatten_then_written_under_jit_and_jit_of_vmap_is_numpys():
    from chainrule._transforms.vmap import batched_runs_first

    x = onp.arange(12.0).reshape(4, 3) + 1.0
    loop = onp.stack([_flattened_then_written(c) for c in x])
    with batched_runs_first():
        assert bits(cr.jit(cr.vmap(_flattened_then_written))(x)) == bits(loop)
    assert bits(cr.jit(_flattened_then_written)(x[1])) == bits(loop[1])


# ------------------------------------- what NumPy answers as the array itself, or a copy
def _then_written(read):
    def f(c):
        v = c * 2.0
        w = read(v)
        v[0] = -7.0
        return np.sum(w * c)
    return f


_SAME_OR_COPY = {
    # NumPy: np.positive(v), an array of its own; ArrayBox.__pos__ answers the box itself
    "+v": lambda v: +v,
    # NumPy: v itself (no copy needed), so the later write shows; traced: a copy
    "np.array(v, copy=None)": lambda v: np.array(v, copy=None),
    "v.conj() of a real v": lambda v: v.conj(),
    "np.asfortranarray of a vector": lambda v: np.asfortranarray(v),
}


# (older, fixed by the lead: +v was the box itself; np.array(v, copy=None), v.conj() of
# a real v and np.asfortranarray of a vector were copies where NumPy answers v itself)


@pytest.mark.filterwarnings("ignore::UserWarning")  # (jit's notice for asfortranarray)
@pytest.mark.parametrize("read", list(_SAME_OR_COPY))
@pytest.mark.parametrize("transform", ["grad", "jit"])
def test_a_read_then_written_is_numpys_under_grad_and_jit(transform, read):
    f = _then_written(_SAME_OR_COPY[read])
    c = onp.array([4.0, 5.0, 6.0])
    want = f(c)  # (NumPy's arrays: no trace)
    if transform == "jit":
        assert cr.jit(f)(c) == want
    else:
        h = 1e-6
        fd = [(f(c + h * e) - f(c - h * e)) / (2 * h) for e in onp.eye(3)]
        onp.testing.assert_allclose(cr.grad(f)(c), fd, atol=1e-5)


def _read_then_written(read):
    def f(c):
        v = c * 2.0
        w = read(v)
        v[0] = -7.0
        return w * 1.0
    return f


_READS = {"flat element": lambda v: v.flat[0],  # (NumPy: a scalar copy)
          "ravel F of a vector": lambda v: np.ravel(v, order="F")}  # (NumPy: a view)


# (older, found here: v.flat[i] of an example was a view of the batch, NumPy's a scalar
# copy; fixed on main by the lead's 6e93c71)
@pytest.mark.filterwarnings("ignore::UserWarning")  # (vmap's loop notices)
@pytest.mark.parametrize("read", [
    "flat element",
    pytest.param("ravel F of a vector", marks=pytest.mark.xfail(
        strict=True, reason="older (at 0278bbd too): vmap's batched run answers "
        "ravel(v, 'F') of a 1-d example as a copy where NumPy's is a view of v, so a later "
        "write into v does not show where the loop's does"))])
def test_vmap_of_a_read_then_written_is_the_loop(read):
    from chainrule._transforms.vmap import batched_runs_first

    f = _read_then_written(_READS[read])
    x = onp.arange(15.0).reshape(5, 3) + 1.0
    loop = onp.stack([f(c) for c in x])
    with batched_runs_first():
        assert bits(cr.vmap(f)(x)) == bits(loop)


# ---------------------------------------------- jit under Python's default warning filter
@pytest.mark.xfail(strict=True, reason="older (at 0278bbd too): the tracing call's NumPy "
                   "warning names one place (chainrule's tracer.py) and the program's another "
                   "('<chainrule.jit ...>'), so Python's default filter (once per place) "
                   "shows it twice over calls that eagerly show it once ('once' alike)")
@pytest.mark.parametrize("action", ["default"])  # (once per place: Python's own default)
def test_jit_warns_as_often_as_eager_under_pythons_filters(action):
    def told(fn):
        with warnings.catch_warnings(record=True) as got:
            warnings.resetwarnings()
            warnings.simplefilter(action)
            for _ in range(3):
                fn(onp.array([-1.0, 2.0]))
        return [str(m.message) for m in got]

    assert told(cr.jit(_log_sum)) == told(_log_sum) == ["invalid value encountered in log"]


def test_jit_of_vmap_of_ravel_order_a_runs_batched_as_eager_does():
    x = _strided()
    w = onp.arange(12.0) - 5.5

    def loss(e):
        return np.sum(np.sin(_flat_a(e)) * w)

    mapped = cr.vmap(cr.grad(loss), in_axes=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = mapped(x)
        jitted = cr.jit(mapped)
        for _ in range(2):
            assert bits(jitted(x)) == bits(want)


@pytest.mark.parametrize("order, axis", [("K", 0), ("K", 2), ("A", 2)])
def test_jit_of_vmap_of_ravel_reads_a_fortran_batchs_examples_as_the_loop(order, axis):
    x = onp.asfortranarray(onp.arange(60.0).reshape(5, 3, 4))
    at = (slice(None),) * axis
    loop = onp.stack([onp.ravel(x[at + (i,)], order=order) for i in range(x.shape[axis])])
    mapped = cr.vmap(lambda e: np.ravel(e, order=order), in_axes=axis)
    assert bits(mapped(x)) == bits(loop)  # (eager holds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (vmap's loop notices)
        assert bits(cr.jit(mapped)(x)) == bits(loop)


def _asarray_of_a_buffer(c):
    v = np.zeros(3)
    v[:] = c
    a = np.asarray(v)[None]
    v[2] = -0.0
    return a * 2.0


@pytest.mark.xfail(strict=True, reason="older for vmap's batched run (eager under "
                   "batched_runs_first too), shown under jit since cfc5e56 (vmap under a jit "
                   "trace runs batched first): grad(sum(vmap(f)(y) ** 2)) answers -0.0 where "
                   "the loop's cotangent, added to a zero, answers 0.0 (an example's entry "
                   "-0.0); jit at c17b2c6 ran this batch of 4 as the loop")
def test_jit_of_grad_of_vmap_of_a_buffer_keeps_eagers_signed_zeros():
    x = onp.arange(12.0).reshape(4, 3) * 0.5 - 1.0
    x[1, 1] = -0.0

    def loss(y):
        return np.sum(cr.vmap(_asarray_of_a_buffer)(y) ** 2)

    want = cr.grad(loss)(x)
    loop = cr.grad(lambda y: sum(np.sum(_asarray_of_a_buffer(y[i]) ** 2)
                                 for i in range(len(y))))(x)
    assert bits(want) == bits(loop)
    for _ in range(2):
        assert bits(cr.jit(cr.grad(loss))(x)) == bits(want)
