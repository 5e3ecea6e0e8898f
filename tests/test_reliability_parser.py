"""Hostile input to explain's expression parser: it never executes code and never raises
anything but ExpressionError (parse_value: ValueError), whatever the string.

Code execution is watched two ways: a canary function planted in ``builtins`` (reachable
by any eval-based parser, by name or through ``__builtins__``), and a Python audit hook
that records every ``exec``, ``import``, ``open``, ``os.system``... while the parser or the
parsed expression runs.
"""

from __future__ import annotations

import builtins
import sys
import threading
import warnings

import numpy as onp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainrule.explain._expr import FUNCTIONS, Expression, ExpressionError, parse_value

CANARY_CALLS: list = []
WATCH = threading.local()
EVENTS: list = []
DANGEROUS = ("exec", "import", "open", "os.", "subprocess.", "shutil.", "socket.", "ctypes.",
             "builtins.input", "code.", "sys._getframe", "marshal.", "pickle.", "compile")


def _audit(event, args):
    if getattr(WATCH, "on", False) and event.startswith(DANGEROUS):
        EVENTS.append((event, repr(args)[:80]))


sys.addaudithook(_audit)  # audit hooks cannot be removed; it records only while WATCH.on


@pytest.fixture(autouse=True)
def canary(monkeypatch):
    monkeypatch.setattr(builtins, "chainrule_canary", lambda *a: CANARY_CALLS.append(a),
                        raising=False)
    CANARY_CALLS.clear()
    EVENTS.clear()
    yield
    assert CANARY_CALLS == [], "the parser executed code from an expression"


def parse_and_run(source: str):
    """Parse (and, if accepted, evaluate) ``source``; only ExpressionError may escape."""
    WATCH.on = True
    try:
        try:
            expr = Expression(source)
        except ExpressionError as err:
            assert "^" in str(err) and err.problem
            return None
        # the source may only produce compile events: ast.parse compiles to a tree
        assert all(name.isidentifier() and not name.startswith("_") for name in expr.variables)
        f = expr.function(expr.variables)
        values = [onp.float64(1.5)] * len(expr.variables)
        with warnings.catch_warnings(), onp.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                return f(*values)
            except ExpressionError:
                return None
    finally:
        WATCH.on = False
        unexpected = [e for e in EVENTS if e[0] != "compile"]
        assert unexpected == [], f"{source!r} triggered {unexpected}"
        compiled = [e for e in EVENTS if e[0] == "compile"]
        assert len(compiled) <= 1, compiled  # the one ast.parse, nothing compiled later
        EVENTS.clear()


# Pieces of hostile expressions: names that reach code if evaluated, dunder tricks,
# huge and odd numbers, strings, unicode look-alikes, and the real functions.
ATOMS = st.sampled_from([
    "x", "x1", "y_2", "pi", "e", "chainrule_canary", "chainrule_canary()", "__import__",
    "__builtins__", "__class__", "().__class__.__bases__[0].__subclasses__()", "eval", "exec",
    "open", "compile", "globals()", "locals()", "vars()", "breakpoint()", "getattr",
    "__import__('os').system('echo pwned')", "lambda: 0", "[x for x in ()]", "{}", "[]",
    "'s'", "b'b'", "f'{x}'", "1e308", "1e309", "9" * 400, "0x10", "1_000", "1j", "-0.0",
    "10**10**10", "(2**1023)*2", "nan", "inf", "None", "True", "...", "x.real", "x[0]",
    "ｘ", "ℯ", "\u00b2", "\u200bx", "\x00", "\\", "#", "sin", "log", "exp",
])
OPERATORS = st.sampled_from(["+", "-", "*", "/", "**", "//", "%", "@", "^", "&", "|", "<<",
                             " and ", " or ", " if x else ", "==", ":=", ",", ";", "\n"])
CALLABLES = st.sampled_from(["sin", "log", "exp", "sqrt", "sum", "tanh", "chainrule_canary",
                             "eval", "__import__", "getattr", "x", "(lambda t: t)",
                             "x.__class__", "type"])


def _expressions():
    def extend(inner):
        return st.one_of(
            st.tuples(inner, OPERATORS, inner).map("".join),
            st.tuples(st.sampled_from(["-", "+", "~", "not "]), inner).map("".join),
            inner.map(lambda s: f"({s})"),
            st.tuples(CALLABLES, st.lists(inner, max_size=3)).map(
                lambda t: f"{t[0]}({', '.join(t[1])})"),
            st.tuples(inner, st.sampled_from([".__class__", ".__dict__", "[0]", "[::-1]",
                                              "()", ".T"])).map("".join),
        )

    return st.recursive(ATOMS, extend, max_leaves=40)


@given(_expressions())
def test_structured_hostile_expressions(source):
    parse_and_run(source)


@given(st.text(max_size=60))
def test_random_unicode_strings(source):
    parse_and_run(source)


@given(st.text(alphabet="()+-*/ x1sin,.e_[]'\"0123456789", max_size=200))
def test_random_strings_over_the_expression_alphabet(source):
    parse_and_run(source)


@given(st.integers(1, 3000), st.sampled_from(["(", "sin(", "-", "+", "(-", "x**", "[", "{"]))
def test_deep_nesting(depth, opener):
    closer = {"(": ")", "sin(": ")", "(-": ")", "[": "]", "{": "}"}.get(opener, "")
    parse_and_run(opener * depth + "x" + closer * depth)


@given(st.integers(min_value=-(10**4000), max_value=10**4000),
       st.floats(allow_nan=True, allow_infinity=True))
def test_huge_and_odd_numbers(integer, number):
    parse_and_run(f"{integer} * x + {number!r}")
    parse_and_run(f"x ** {integer}")


@given(st.text(max_size=40))
def test_parse_value_only_raises_value_error(text):
    WATCH.on = True
    try:
        value = parse_value(text, "x")
    except ValueError as err:
        assert "--at x=" in str(err)
    else:
        assert isinstance(value, (float, onp.ndarray))
    finally:
        WATCH.on = False
    assert [e for e in EVENTS if e[0] != "compile"] == []


@pytest.mark.parametrize("source", [
    "chainrule_canary()",
    "chainrule_canary(x)",
    "__builtins__.chainrule_canary(x)",
    "[c for c in ().__class__.__base__.__subclasses__()]",
    "().__class__.__base__.__subclasses__()[0].__init__.__globals__['sys'].exit()",
    "__import__('os').system('touch /tmp/chainrule_pwned')",
    "sin(__import__('os'))",
    "exp(x) if chainrule_canary() else x",
    "(chainrule_canary := sin)(x)",
    "sum([chainrule_canary() for _ in (1,)])",
    "x.__class__.__mro__",
    "getattr(x, '__class__')",
    "sin(*[x])",
    "sin(x)(chainrule_canary)",
    "sin(x, x)",  # NumPy's second positional argument is out=: refused, not written
])
def test_known_escapes_are_refused(source):
    assert parse_and_run(source) is None


def test_a_known_function_still_evaluates_under_the_watch():
    # the harness must not refuse everything: real expressions run and give numbers
    assert parse_and_run("log(x1) + x1*x2 - sin(x2)") == pytest.approx(onp.log(1.5) + 2.25
                                                                       - onp.sin(1.5))
    assert "sin" in FUNCTIONS and "eval" not in FUNCTIONS


def test_the_watch_sees_code_execution():
    # test the tester: an eval-based parser would be caught by both the hook and the canary
    WATCH.on = True
    try:
        eval("chainrule_canary()")  # noqa: S307 - the point of the test
    finally:
        WATCH.on = False
    assert any(event == "exec" for event, _ in EVENTS) and CANARY_CALLS == [()]
    CANARY_CALLS.clear()
