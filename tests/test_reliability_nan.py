"""NaN and inf propagate exactly as NumPy propagates them, and the warnings are NumPy's own.

For a table of elementwise functions fed nan, inf, -inf, signed zeros and values at the
edges of their domains, chainrule's primal is bitwise NumPy's (NaN payloads and signs
included), both untraced and in the forward pass of reverse mode and of a Tensor, and
the RuntimeWarnings recorded are exactly NumPy's: same categories, same messages, none
added by the engine. ``np.errstate`` is honoured ('raise' raises FloatingPointError).
"""

from __future__ import annotations

import warnings

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import Tensor, make_jvp, make_vjp

SPECIAL = onp.array([onp.nan, -onp.nan, onp.inf, -onp.inf, 0.0, -0.0, -1.0, 1.0, 2.0, -2.0,
                     1e308, -1e308, 5e-324, 800.0, -800.0])

UNARY = ["negative", "positive", "absolute", "square", "sqrt", "cbrt", "reciprocal",
         "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
         "sin", "cos", "tan", "arcsin", "arccos", "arctan",
         "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
         "deg2rad", "rad2deg", "sinc", "fabs", "sign", "floor", "ceil", "rint", "trunc"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
          "fmax", "fmin", "arctan2", "hypot", "logaddexp", "logaddexp2", "mod", "fmod",
          "copysign"]

# every pair of special values, as two flat arrays
PAIR_X, PAIR_Y = (a.ravel() for a in onp.meshgrid(SPECIAL, SPECIAL))


def recorded(fn, *args):
    """(result, [(category, message)]) of ``fn(*args)`` with every warning recorded."""
    with warnings.catch_warnings(record=True) as caught, onp.errstate(all="warn"):
        warnings.simplefilter("always")
        result = fn(*args)
    return result, sorted((w.category.__name__, str(w.message)) for w in caught)


def bits(value) -> bytes:
    value = onp.asarray(value)
    return value.dtype.str.encode() + value.tobytes()


NOT_DIFFERENTIABLE = {"sign", "floor", "ceil", "rint", "trunc"}


def forward_pass_of_reverse_mode(name, *args):
    fun = getattr(np, name)
    if name in NOT_DIFFERENTIABLE:
        # the output alone would not depend on x, and chainrule rightly warns about that
        # (its one warning of its own); returning x too keeps the trace non-trivial
        _, (ans, _) = make_vjp(lambda x: (fun(x, *args[1:]), x))(args[0])
        return ans
    _, ans = make_vjp(lambda x: fun(x, *args[1:]))(args[0])
    return ans


def tensor_forward(name, *args):
    out = getattr(np, name)(*(Tensor(a) for a in args))
    return out.value if isinstance(out, Tensor) else out  # floor, sign...: plain arrays


def cases():
    for name in UNARY:
        yield name, (SPECIAL,)
    for name in BINARY:
        yield name, (PAIR_X, PAIR_Y)


CASES = list(cases())


@pytest.mark.parametrize("name, args", CASES, ids=[c[0] for c in CASES])
def test_primal_bits_and_warnings_are_numpys(name, args):
    want, want_warnings = recorded(getattr(onp, name), *args)
    runs = {
        "plain call": lambda *a: getattr(np, name)(*a),
        "reverse mode": lambda *a: forward_pass_of_reverse_mode(name, *a),
        "Tensor": lambda *a: tensor_forward(name, *a),
    }
    for how, fn in runs.items():
        got, got_warnings = recorded(fn, *args)
        assert bits(got) == bits(want), (
            f"{name} ({how}): {onp.asarray(got)!r} is not bitwise {want!r}")
        assert got_warnings == want_warnings, f"{name} ({how}) warned {got_warnings}"


@pytest.mark.parametrize("name, args", CASES, ids=[c[0] for c in CASES])
def test_forward_mode_primal_bits_are_numpys(name, args):
    # Forward mode computes tangents during the forward pass, so NumPy may rightly warn
    # about the derivative too (sqrt'(0) divides by zero): only the primal is compared.
    fun = getattr(np, name)
    with warnings.catch_warnings(), onp.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = getattr(onp, name)(*args)
        got, _ = make_jvp(lambda x: fun(x, *args[1:]))(args[0])(onp.ones_like(args[0]))
    assert bits(got) == bits(want)


@pytest.mark.parametrize("name", ["log", "sqrt", "reciprocal", "arcsin", "exp"])
def test_errstate_raise_is_honoured(name):
    with onp.errstate(all="raise"):
        with pytest.raises(FloatingPointError) as numpy_error:
            getattr(onp, name)(SPECIAL)
        with pytest.raises(FloatingPointError) as ours:
            forward_pass_of_reverse_mode(name, SPECIAL)
    assert str(ours.value) == str(numpy_error.value)


@pytest.mark.parametrize("name", ["log", "sqrt", "divide", "arccos"])
def test_errstate_ignore_silences_the_forward_pass(name):
    args = (SPECIAL,) if name != "divide" else (PAIR_X, PAIR_Y)
    with warnings.catch_warnings(), onp.errstate(all="ignore"):
        warnings.simplefilter("error")  # any warning at all fails the test
        forward_pass_of_reverse_mode(name, *args)
        tensor_forward(name, *args)


def test_nan_in_a_reduction_propagates_like_numpy():
    x = onp.array([[1.0, onp.nan, 3.0], [onp.inf, 2.0, -onp.inf]])
    for name in ["sum", "mean", "prod", "max", "min", "cumsum"]:
        want, want_warnings = recorded(lambda v, n=name: getattr(onp, n)(v, axis=1), x)
        got, got_warnings = recorded(
            lambda v, n=name: make_vjp(lambda u: getattr(np, n)(u, axis=1))(v)[1], x)
        assert bits(got) == bits(want), name
        assert got_warnings == want_warnings, name
