"""chainrule.jit's float programs: a program of float64 scalar arithmetic and chainrule's
scalar-path functions runs on Python floats and must equal eager evaluation to the last
bit, on ordinary inputs and where Python raises or NumPy warns (division by zero, log of
0 or of a negative number, overflow, inf and nan inputs): there the exact program of NumPy
scalars answers, with NumPy's warnings."""

from __future__ import annotations

import math
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrule as cr
import chainrule.numpy as np

SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-300, -1e-300, 1e300, -1e300, 709.0, 710.0, 800.0,
           math.inf, -math.inf, math.nan, 0.5, 3.0]

UNARY = {"sin": np.sin, "cos": np.cos, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
         "neg": np.negative}
BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / b, "rdiv": lambda a, b: 1.0 / b + a,
          "const": lambda a, b: a * 2 - 0.5}

op = st.one_of(st.tuples(st.just("u"), st.sampled_from(sorted(UNARY)), st.integers(0, 9)),
               st.tuples(st.just("b"), st.sampled_from(sorted(BINARY)),
                         st.integers(0, 9), st.integers(0, 9)))


def program(ops):
    def f(x, y):
        values = [x, y]
        for o in ops:
            if o[0] == "u":
                values.append(UNARY[o[1]](values[o[2] % len(values)]))
            else:
                values.append(BINARY[o[1]](values[o[2] % len(values)],
                                           values[o[3] % len(values)]))
        return values[-1] + 0.0 * values[-2]
    return f


def _flat(t):
    return [x for v in t for x in _flat(v)] if isinstance(t, tuple) else [t]


def _same(a, b):
    assert type(a) is type(b)
    assert onp.asarray(a).tobytes() == onp.asarray(b).tobytes(), (a, b)


def _call(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return f(*args), None
        except Exception as e:  # the same error, eager and jitted
            return None, type(e)


@settings(max_examples=60, deadline=None)
@given(st.lists(op, min_size=1, max_size=12),
       st.lists(st.tuples(st.sampled_from(SPECIAL) | st.floats(-5, 5),
                          st.sampled_from(SPECIAL) | st.floats(-5, 5)), min_size=1, max_size=6))
def test_random_float_programs_equal_eager_to_the_last_bit(ops, points):
    f = program(ops)
    # (under a transform: a plain f on Python floats is Python arithmetic, not NumPy's)
    for transform in (lambda g: cr.value_and_grad(g, argnum=(0, 1)),
                      lambda g: cr.grad(g, argnum=0)):
        eager, jitted = transform(f), cr.jit(transform(f))
        for x, y in points + points:
            # (jit's contract: a Python float argument is a float64 inside f, so y / y of
            # y = 0.0 left plain by grad(argnum=0) is nan with a warning, not Python's
            # ZeroDivisionError)
            want, want_error = _call(eager, onp.float64(x), onp.float64(y))
            got, got_error = _call(jitted, x, y)
            assert got_error == want_error
            if want_error is None:
                # (warnings are not compared: code the outputs do not need is not run)
                for a, b in zip(_flat(got), _flat(want)):
                    _same(a, b)


def test_the_chain_runs_on_floats_and_falls_back_where_numpy_would_warn():
    def f(x):
        for _ in range(5):
            x = np.sin(x) * x + 0.5
        return np.log(x) / x

    g = cr.jit(cr.grad(f))
    _same(g(0.7), cr.grad(f)(0.7))
    source = g.lower(0.7).source
    assert "try:" in source and "_exact" in source and "# sin" in source
    for x in [0.0, -0.3, math.inf, math.nan, 1e308]:
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            want = cr.grad(f)(x)
            got = g(x)
        _same(got, want)
    assert g.cache_info().variants == 1


@pytest.mark.parametrize("x", [0.0, -1.0, 1000.0])
def test_a_warning_of_numpy_is_a_warning_of_the_jitted_program(x):
    f = lambda x: np.log(x) + np.exp(x) + 1.0 / x
    g = cr.jit(f)
    g(2.0)
    with pytest.warns(RuntimeWarning):
        got = g(x)
    with pytest.warns(RuntimeWarning):
        want = f(onp.float64(x))  # jit traces a float as a NumPy float64, as grad does
    _same(got, want)


def test_float32_and_arrays_are_not_float_programs():
    f = lambda x: np.sum(np.sin(x) * x)
    g = cr.jit(cr.grad(f))
    for x in [onp.float32(0.5), onp.ones(3), onp.float64(0.5)]:
        _same(g(x), cr.grad(f)(x))
    assert "_exact(" not in g.lower(onp.float32(0.5)).source
    assert "_exact(" not in g.lower(onp.ones(3)).source
    assert "_exact(" in g.lower(onp.float64(0.5)).source


def test_an_input_the_float_program_does_not_read_may_be_an_array():
    # The float program checked every input finite with math.isfinite, also an array it
    # never reads: "only 0-dimensional arrays can be converted" (vmap contract case 4806,
    # jit(vmap(f)) of an empty batch: its answer is a constant, s alone is traced).
    f = cr.jit(lambda x, s: np.sin(s) + 1.0)
    for x in (onp.zeros(3), onp.array([1.0, onp.nan]), onp.zeros((0, 4))):
        for s in (0.5, 0.5, -0.0, math.inf):
            with warnings.catch_warnings(record=True) as jitted:
                warnings.simplefilter("always")
                got = f(x, s)
            with warnings.catch_warnings(record=True) as eager:
                warnings.simplefilter("always")
                want = np.sin(s) + 1.0
            _same(got, want)
            assert [w.category for w in jitted] == [w.category for w in eager]


def test_jit_of_vmap_on_an_empty_batch_answers_an_empty_stack():
    def g(x, s):
        if x[0] > 0:
            return np.sum(np.sin(x)) + s
        return np.sum(x) + s

    mapped = cr.jit(cr.vmap(g, in_axes=(0, None)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (vmap's notice of the decision)
        for xs in (onp.zeros((0, 3)), onp.zeros((0, 3)), onp.ones((2, 3))):
            got = mapped(xs, 0.5)
            want = onp.array([g(x, 0.5) for x in xs], dtype=onp.float64)
            assert got.shape == want.shape and got.dtype == want.dtype
            onp.testing.assert_array_equal(got, want)


def _same_but_nans(a, b):
    """``_same``, a nan matching any nan (as the jit contract compares: the exact program
    may give a nan of the other sign, tests/contracts/jit.py)."""
    assert type(a) is type(b)
    a, b = onp.asarray(a), onp.asarray(b)
    nan = onp.isnan(a)
    assert (nan == onp.isnan(b)).all(), (a, b)
    _same(onp.where(nan, 0.0, a), onp.where(nan, 0.0, b))


def _warned(f, *args):
    """``f(*args)`` (or its error's type) and the warnings it gave, each message once (jit
    computes once what eager evaluation computes twice, as cosh(x) in a value and in its
    derivative, so it may warn fewer times)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            answer = f(*args)
        except Exception as e:
            answer = type(e)
    return answer, sorted({str(w.message) for w in caught})


def _numpy_functions(x):
    # functions whose float path would be math's (which differs from NumPy's in the last
    # bit): the float program calls NumPy's own, on float64 scalars
    return (np.tanh(x) * np.arcsinh(x) + np.log1p(x) ** 3 + np.expm1(x) / np.cosh(x)
            + np.arctanh(0.5 * x) - np.sinh(x) ** -0.5)


@pytest.mark.parametrize("transform", [lambda f: f, cr.grad], ids=["value", "grad"])
def test_numpy_functions_without_a_float_path_are_called_by_the_float_program(transform):
    eager, jitted = transform(_numpy_functions), cr.jit(transform(_numpy_functions))
    points = [0.3, 0.7, 1.5, -0.0, 0.0, 2.5, -0.4, 1e-300, 800.0, -800.0, math.inf,
              math.nan, 1.9999999999999998, 2.0]
    for x in points + points:
        want, want_warnings = _warned(eager, onp.float64(x))
        got, got_warnings = _warned(jitted, x)
        if isinstance(want, type):
            assert got is want
        else:
            _same_but_nans(got, want)
        assert got_warnings == want_warnings, x
    source = jitted.lower(0.3).source
    assert "_exact(" in source and "errstate" in source and "arcsinh" in source


def test_an_overflow_a_numpy_function_hides_warns():
    # tanh(inf) is 1: the overflow of x * x is seen by tanh's operand's check
    f = cr.jit(lambda x: np.tanh(x * x) + np.arctan(x * 1e300))
    f(0.5)
    for x in (0.5, 1e200, -1e200, 0.5):
        got, got_warnings = _warned(f, x)
        want, want_warnings = _warned(lambda x: np.tanh(x * x) + np.arctan(x * 1e300),
                                      onp.float64(x))
        _same_but_nans(got, want)
        assert got_warnings == want_warnings


def test_a_stack_of_floats_is_made_after_the_float_program():
    def f(x):
        return np.stack([x * 2.0, np.sin(x), onp.array(0.5) * x])

    g = cr.jit(f)
    for x in (0.5, 0.5, -0.0, 1e308, math.nan, 2.0):
        got, got_warnings = _warned(g, x)
        want, want_warnings = _warned(f, onp.float64(x))
        _same_but_nans(got, want)
        assert got_warnings == want_warnings
    first, second = g(0.5), g(0.5)
    assert first is not second and not onp.shares_memory(first, second)
    source = g.lower(0.5).source
    assert "_exact(" in source and "math.sin" in source
    inputs = cr.jit(lambda x, y: np.stack([x, y, x]))  # (tail calls alone, of inputs)
    for x in (0.5, -0.0, math.inf):
        _same(inputs(x, 2.0), np.stack([onp.float64(x), onp.float64(2.0), onp.float64(x)]))


def test_a_jet_compiles_to_a_float_program_past_the_length_of_a_table(monkeypatch):
    import sys

    def f(x):
        x = np.sin(x) + np.tanh(2.0 * x)
        x = np.sqrt(1.0 + x * x) ** 3
        return np.log(np.arcsinh(x)) / (1.0 + np.cosh(x))

    eager = cr.taylor_derivatives(f, 6)
    emit = sys.modules["chainrule.jit._emit"]
    monkeypatch.setattr(emit, "LONG_PROGRAM", 100)  # (the jet makes some 700 calls)
    jitted = cr.jit(eager)
    for x in (0.3, 0.7, -0.0, -2.0, math.inf, 0.3):
        want, want_warnings = _warned(eager, onp.float64(x))
        got, got_warnings = _warned(jitted, x)
        _same_but_nans(got, want)
        assert got_warnings == want_warnings
    source = jitted.lower(0.3).source
    assert "as a table" not in source and "_exact(" in source
    # a program that is not of floats still runs as a table
    arrays = cr.jit(cr.taylor_derivatives(lambda x: np.sum(f(x)), 6))
    _same(arrays(onp.array([0.3, 0.7])), cr.taylor_derivatives(lambda x: np.sum(f(x)), 6)(
        onp.array([0.3, 0.7])))
    assert "as a table" in arrays.lower(onp.array([0.3, 0.7])).source


def test_a_value_read_once_is_written_into_its_reader():
    import random

    choice = random.Random(0).choices([0, 1], k=300)  # (no loop to roll)

    def f(x):
        for k in choice:  # a chain of values read once
            x = np.sin(x) * 1.5 if k else np.sin(x) + 0.5
        return x + 1.0

    g = cr.jit(f)
    for x in (0.3, -0.0, 1e308, math.nan, 0.3):
        got, got_warnings = _warned(g, x)
        want, want_warnings = _warned(f, onp.float64(x))
        _same(got, want)
        assert got_warnings == want_warnings
    lines = g.lower(0.3).source.splitlines()
    sines = [line for line in lines if "math.sin(" in line]
    # 600 calls in some 20 lines (a line holds at most 32 of them: parentheses nest)
    assert 300 / 32 < len(sines) < 30 and max(line.count("(") for line in sines) < 100


@pytest.mark.parametrize("errstate", [{}, {"all": "raise"}, {"under": "warn"}])
def test_numpy_functions_in_a_rolled_loop_and_under_an_error_state(errstate):
    def f(x):
        for _ in range(60):
            x = np.tanh(x) * 1.1 + np.arcsinh(x) * np.expm1(-1e-3 * x * x)
        return x + np.power(x, 3) + np.hypot(x, 3.0)

    g = cr.jit(f)
    g(0.3)
    assert "for i in range(" in g.lower(0.3).source and "errstate" in g.lower(0.3).source
    with onp.errstate(**errstate):
        for x in (0.3, -0.0, 1e-200, 1e200, -800.0, math.nan, 0.3):
            got, got_warnings = _warned(g, x)
            want, want_warnings = _warned(f, onp.float64(x))
            if isinstance(want, type):
                assert got is want
            else:
                _same_but_nans(got, want)
            assert got_warnings == want_warnings


@pytest.mark.parametrize("make", [
    lambda: cr.grad(lambda x: cr.jet(
        lambda x: np.tanh(x) * np.arcsinh(x) + np.expm1(x) / np.cosh(x), (x,),
        ([1.0, 0.0, 0.0],))[1][2]),
    lambda: lambda x: cr.jet(np.tanh, (x,), ([1.0, 0.0, 0.0],)),
    lambda: cr.taylor_derivatives(lambda x: np.sin(x) * np.cos(x) + np.exp(-x * x), 8),
], ids=["grad of a jet", "jet", "taylor_derivatives"])
def test_jets_under_jit_equal_eager(make):
    f = make()
    g = cr.jit(f)
    for x in (0.3, 0.7, -0.0, 5.0, 400.0, -0.4, 1e200, math.nan, 0.3):
        got, got_warnings = _warned(g, x)
        want, want_warnings = _warned(f, onp.float64(x))
        for a, b in zip(_flat(got) if isinstance(got, tuple) else [got],
                        _flat(want) if isinstance(want, tuple) else [want]):
            if isinstance(b, list):
                for u, v in zip(a, b):
                    _same_but_nans(u, v)
            else:
                _same_but_nans(a, b)
        assert got_warnings == want_warnings
    assert "_exact(" in g.lower(0.3).source  # (a float program)


@pytest.mark.parametrize("f, regular, singular", [
    (np.arctanh, 0.3, [1.0, -1.0, 2.0]),
    (np.sqrt, 0.3, [0.0, -0.0]),
    (np.log, 0.3, [0.0]),
    (lambda x: x ** -0.5 + np.abs(x), 0.3, [0.0, -0.0]),
    (lambda x: np.abs(x - 1.0), 0.3, [1.0]),
], ids=["arctanh", "sqrt", "log", "power", "abs"])
def test_a_rules_decision_on_a_value_is_guarded_by_jit(f, regular, singular):
    # at a singular point a Taylor rule takes the nested JVP's terms (the one-sided
    # limits), at a zero abs and a fractional power too: a decision on the value, which
    # jit traced at a regular point must not take for granted
    eager = cr.taylor_derivatives(f, 4)
    jitted = cr.jit(eager)
    jitted(regular)
    for x in [regular, *singular, regular, *singular]:
        got, got_warnings = _warned(jitted, x)
        want, want_warnings = _warned(eager, onp.float64(x))
        _same_but_nans(got, want)
        assert got_warnings == want_warnings
    assert "return MISS" in jitted.lower(regular).source
