"""fix16: the known wrong behaviours left open by the last session. Reference semantics:
jit ≡ eager (values to the bit, the warnings and the lines they name), laplacian ≡ the sum
of per-direction jets (and what they tell under NumPy's error state)."""

import inspect
import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno


def _told(call, *args):
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        call(*args)
    return [(m.category, str(m.message), m.filename, m.lineno) for m in told]


# ------------------------------------------------------------------ replayed warnings' lines
def _constant(x):
    return 2.0


def _warns_itself(x):
    warnings.warn("the function's own", stacklevel=1)
    return np.sum(x * 2.0)


@pytest.mark.parametrize("fun", [_constant, _warns_itself])
def test_jit_names_the_lines_eager_names_on_every_call(fun):
    # a transform's notice names each call's line (here _told's, for both); the function's
    # own warning its own line
    f = cr.grad(fun)
    jitted = cr.jit(f)
    x = onp.arange(3.0)
    for _ in range(3):
        assert _told(jitted, x) == _told(f, x)


def test_jit_replay_names_the_calling_line_from_two_places():
    jitted = cr.jit(cr.grad(_constant))
    x = onp.ones(2)
    lines = []
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        for _ in range(2):
            jitted(x); lines.append(_line())  # noqa: E702
            jitted(x)
            lines.append(_line() - 1)
    assert [m.lineno for m in told] == lines
    assert {m.filename for m in told} == {__file__}


# ------------------------------------------------------------------ laplacian's deferred errors
_S = 0.1743772399463484
_X32 = onp.array([-1.1788114, 6.109755, 0.5], onp.float32)


def _tiny_exp(x):  # the collapsed pass's f''/2 overflows float32; the answer does not
    return np.sum(_S / np.exp(-x * x))


def _big_exp(x):  # really overflows: exp(100) in float32
    return np.sum(np.exp(x * x))


def _log_at_zero(x):  # f's own divide by zero, and an answer of nan
    return np.sum(np.log(x) * x)


def _observed(fn, x, **state):
    """A call's value (or exception), warnings (message, file, line) and NumPy's calls."""
    calls: list = []
    old = onp.seterrcall(lambda kind, flag: calls.append((kind, flag)))
    try:
        with warnings.catch_warnings(record=True) as told, onp.errstate(**state):
            warnings.simplefilter("always")
            try:
                answer = ("ok", onp.asarray(fn(x)).tobytes())
            except FloatingPointError as e:
                answer = ("raised", str(e))
    finally:
        onp.seterrcall(old)
    return answer, [(str(m.message), m.filename, m.lineno) for m in told], calls


def _per_direction(f):
    def total(x):
        return sum(cr.jet(f, (x,), ([e, 0 * e],))[1][1] for e in onp.eye(x.size, dtype=x.dtype))
    return total


_STATES = [{}, dict(over="raise"), dict(all="raise"), dict(all="call"), dict(all="ignore"),
           dict(all="warn", under="ignore")]


@pytest.mark.parametrize("state", _STATES)
def test_laplacian_mended_by_its_second_pass_tells_nothing_as_the_jets(state):
    got = _observed(cr.laplacian(_tiny_exp), _X32, **state)
    want = _observed(_per_direction(_tiny_exp), _X32, **state)
    assert got[1:] == want[1:] == ([], [])
    onp.testing.assert_allclose(onp.frombuffer(got[0][1], onp.float32),
                                onp.frombuffer(want[0][1], onp.float32), rtol=1e-5)
    assert onp.frombuffer(got[0][1], onp.float32)[0] == onp.float32(4.297346e17)


@pytest.mark.parametrize("state", _STATES)
def test_laplacian_that_really_overflows_tells_it_at_the_users_line(state):
    x = onp.array([10.0, 1.0], onp.float32)
    got = _observed(cr.laplacian(_big_exp), x, **state)
    line = _big_exp.__code__.co_firstlineno + 1  # (where NumPy met it: the function's, as grad's)
    if state.get("over", state.get("all")) == "raise":
        assert got == (("raised", "overflow encountered in exp"), [], [])
        return
    assert onp.frombuffer(got[0][1], onp.float32)[0] == onp.inf
    told = {"over": "warn"} if not state else {"over": state.get("over", state.get("all"))}
    if told["over"] == "warn":
        assert ("overflow encountered in exp", __file__, line) in got[1]
        assert {(f, ln) for _, f, ln in got[1]} == {(__file__, line)}
    elif told["over"] == "call":
        assert ("overflow", 2) in got[2] and got[1] == []
    else:
        assert got[1:] == ([], [])


@pytest.mark.parametrize("fun, x", [(_tiny_exp, _X32),
                                    (_big_exp, onp.array([10.0, 1.0], onp.float32)),
                                    (_log_at_zero, onp.array([0.0, 1.0])),
                                    (_log_at_zero, onp.array([2.0, 1.0]))])
@pytest.mark.parametrize("state", _STATES)
def test_jit_of_laplacian_tells_what_eager_tells(fun, x, state):
    jitted = cr.jit(cr.laplacian(fun))
    want = _observed(cr.laplacian(fun), x, **state)
    for _ in range(3):
        assert _observed(jitted, x, **state) == want


def test_laplacian_tells_the_functions_own_errors_once_in_order():
    # f's own divide by zero in log (and the invalid 0 * -inf): told in the order met, once
    got = _observed(cr.laplacian(_log_at_zero), onp.array([0.0, 1.0]))
    assert got[1][0][0] == "divide by zero encountered in log"
    assert all(ln == got[1][0][2] for _, _, ln in got[1])
    called = _observed(cr.laplacian(_log_at_zero), onp.array([0.0, 1.0]), all="call")
    assert [k for k, _ in called[2]] == [m.split(" encountered")[0] for m, _, _ in got[1]]


def test_deferred_blocks_nest_and_tell_the_outer_block():
    from chainrule._user_code.errstate import Deferred

    calls: list = []
    with onp.errstate(over="call", divide="ignore", call=lambda k, f: calls.append(k)):
        with Deferred() as outer:
            with Deferred() as inner:
                onp.exp(onp.float64(1000.0))
                onp.log(onp.float64(0.0))
            assert calls == [] and len(inner.errors) == 1
            inner.tell()
            assert calls == [] and len(outer.errors) == 1
        outer.tell()
    assert calls == ["overflow"]
    with onp.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow "
                                                  "encountered in exp"):
        with Deferred() as errors:
            onp.exp(onp.float64(1000.0))
            assert errors.errors
        errors.tell()


def test_jit_of_vmap_of_a_transform_under_a_raising_state_compiles():
    # (older: the caller's own state met again after a transform's was read as the
    # function setting a raising state inside: jit gave up, with a JitWarning)
    f = cr.vmap(cr.grad(lambda x: np.sum(x ** 3)))
    x = onp.arange(6.0).reshape(2, 3)
    with warnings.catch_warnings(), onp.errstate(over="raise"):
        warnings.simplefilter("error")
        jitted = cr.jit(f)
        for _ in range(2):
            assert _bits(jitted(x)) == _bits(f(x))
        assert jitted.cache_info().eager == 0


def _bits(a):
    a = onp.asarray(a)
    return a.dtype.str, a.shape, a.tobytes()


# ------------------------------------------------------------------ ufuncs without a rule, jitted
def _two_outputs(x):
    frac, whole = np.modf(x)
    mantissa, exponent = np.frexp(x * 2.0)
    return frac * 3.0 + whole, whole, mantissa, exponent, np.ldexp(mantissa, exponent) - x


_EDGES = [1.5, -2.25, -0.0, 0.0, onp.nan, -onp.nan, -onp.inf, onp.inf, 3.0, 5e-324, -1e-310,
          1e308, 0.5, -7.75]


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
def test_jit_of_modf_and_frexp_is_eager_bit_for_bit(dtype):
    jitted = cr.jit(_two_outputs)
    with onp.errstate(over="ignore"):  # (1e308 is inf in float32)
        x = onp.array(_EDGES).astype(dtype)
    inputs = [x, x[::-1].copy(), x[::2], x, onp.array([2.5, -0.0], dtype), x[3], dtype(-0.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (inf - inf; compared below)
        for arg in inputs:
            got, want = jitted(arg), _two_outputs(arg)
            assert [_bits(g) for g in got] == [_bits(w) for w in want]
            assert [type(g) for g in got] == [type(w) for w in want]
    assert jitted.cache_info().eager == 0


def test_jit_of_modf_tells_the_warnings_eager_tells():
    x = onp.array([onp.inf, 1.0])
    jitted = cr.jit(_two_outputs)
    for _ in range(2):
        assert [w[:2] for w in _told(jitted, x)] == [w[:2] for w in _told(_two_outputs, x)]


def test_jit_of_grad_through_modf_raises_as_eager():
    f = cr.grad(lambda x: np.sum(np.modf(x)[0]))
    x = onp.array([1.5, 2.5])
    with pytest.raises(TypeError, match="no derivative rule for numpy.modf") as eager:
        f(x)
    with pytest.raises(TypeError) as jitted:
        cr.jit(f)(x)
    assert str(jitted.value) == str(eager.value)


def test_jits_own_notice_names_the_calling_line():
    # (jit's notices and the engine's share user_frames.user_stacklevel)
    def draws(x):
        return x + onp.random.default_rng(0).normal() + onp.random.normal()

    jitted = cr.jit(draws)
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        jitted(onp.ones(2)); line = _line()  # noqa: E702
    assert [(m.filename, m.lineno) for m in told if issubclass(m.category, cr.jit.JitWarning)
            ] == [(__file__, line)]
