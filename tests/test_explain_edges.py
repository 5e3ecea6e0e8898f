"""explain's numbers at the edges: every local partial it shows is the value the rules give.

A student reads the tables as the truth, so each partial shown for an operation is compared
with the derivative the engine itself computes for that argument alone (``grad`` and ``jvp``
with the other operand held constant), at operands where a careless reading goes wrong:
zeros of both signs, infinities and nan.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import explain, grad, jvp
from chainrule._core.rule_table import rule_table
from chainrule.explain import _format as fmt

EDGES = [0.0, -0.0, 1.5, -1.5, math.inf, -math.inf, math.nan]


def _namespaces():
    spaces = [np]
    try:
        import chainrule.scipy.special as special
    except ImportError:  # SciPy is optional: its functions are then not checked
        return spaces
    return [*spaces, special]


def _binary_primitives() -> dict[str, object]:
    """The public primitives (with a JVP rule) that wrap a NumPy or SciPy ufunc of two
    inputs and take two float scalars: every row of theirs shows two numeric partials."""
    found: dict[str, object] = {}
    for space in _namespaces():
        for name in sorted(dir(space)):
            fun = getattr(space, name)
            try:
                entry = rule_table.get(fun)
            except TypeError:  # unhashable attribute
                continue
            if entry is None or entry.jvp is None:
                continue
            raw = getattr(fun, "fun", fun)  # a primitive wraps the raw function
            ufunc = raw if isinstance(raw, onp.ufunc) else getattr(onp, fun.__name__, None)
            if not (isinstance(ufunc, onp.ufunc) and ufunc.nin == 2 and ufunc.signature is None):
                continue
            with onp.errstate(all="ignore"):
                out = fun(0.7, 0.6)
            if onp.ndim(out) == 0 and onp.result_type(out).kind == "f":
                found[fun.__name__] = fun
    return found


BINARY = _binary_primitives()


def test_the_binary_primitives_are_found():
    expected = {"add", "subtract", "multiply", "divide", "power", "arctan2", "hypot", "maximum",
                "logaddexp", "copysign", "fmod", "remainder"}
    assert expected <= set(BINARY)
    assert len(BINARY) >= 20


def _same(shown, expected) -> bool:
    """Equal, nan equal to nan (0 and -0 are both written 0)."""
    shown, expected = float(shown), float(expected)
    return shown == expected or (math.isnan(shown) and math.isnan(expected))


def _derivative(fun, x, y, j: int):
    """d fun(x, y) / d argument j by the engine, the other argument a constant: the
    gradient (reverse mode) and the tangent (forward mode); None where it has no rule."""
    at = (x, y)

    def alone(t):
        args = list(at)
        args[j] = t
        return fun(*args)

    try:
        return grad(alone)(at[j]), jvp(alone, (at[j],), (1.0,))[1]
    except NotImplementedError:
        return None


@pytest.mark.parametrize("name", sorted(BINARY))
def test_every_partial_shown_is_the_rules_value_at_edge_points(name):
    fun = BINARY[name]
    checked = 0
    with warnings.catch_warnings(), onp.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for x, y in itertools.product(EDGES, EDGES):
            try:
                fun(x, y)
            except Exception as error:  # NumPy's own domain errors: explain raises them too
                with pytest.raises(type(error)):
                    explain(lambda a, b: fun(a, b), x, y)
                continue
            report = explain(lambda a, b: fun(a, b), x, y)
            step = report.steps[-1]
            assert len(step.partials) == 2
            for j in range(2):
                derivative = _derivative(fun, x, y, j)
                where = f"{name}({x}, {y}), argument {j}: shown {step.partial_texts[j]}"
                if derivative is None:
                    assert step.partials[j] is None and step.partial_texts[j] == "?", where
                    continue
                reverse, forward = derivative
                assert _same(step.partials[j], reverse), f"{where}, gradient {reverse}"
                assert _same(step.partials[j], forward), f"{where}, tangent {forward}"
                assert step.partial_texts[j] == fmt.number(reverse), where
                checked += 1
    assert checked > 0


def test_the_debugging_pages_command_shows_x2_as_the_partial_of_log_x1_times_x2(capsys):
    """docs/debugging.md's command: the product's partial along log(0) is x2 = 5, and the
    backward table's contribution multiplies by that 5 (it showed nan, then ``1·nan = 5``)."""
    from chainrule.__main__ import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main(["explain", "log(x1) * x2", "--check", "--at", "x1=0", "x2=5"])
    out = capsys.readouterr().out
    assert "∂v2/∂v1 = 5, ∂v2/∂x2 = -inf" in out
    assert "v̄1 += v̄2·∂v2/∂v1  = 1·5 = 5" in out
    assert "nan" not in out.split("Forward tangent trace")[0]


def test_an_overflowing_factor_times_zero():
    """exp(800) * 0: the product's partial along exp(800) is the other factor, 0."""
    with warnings.catch_warnings(), onp.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        report = explain(lambda a, b: np.exp(a) * b, 800.0, 0.0)
        product = report.steps[-1]
        assert product.partial_texts == ["0", "inf"]
        assert "∂v2/∂v1 = 0, ∂v2/∂b = inf" in report.text()


@pytest.mark.parametrize("requires_grad", [True, False])
def test_explain_of_a_function_of_tensors(requires_grad):
    """explain(f, Tensor(...)) differentiates by the Tensors' values, as grad(f)(tensor)
    does (Tensors that require grad were refused: "got ArrayBox, ArrayBox")."""
    from chainrule import Tensor

    with warnings.catch_warnings(), onp.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        a, b = Tensor(0.0, requires_grad=requires_grad), Tensor(5.0, requires_grad=requires_grad)
        report = explain(lambda a, b: np.log(a) * b, a, b)
    assert report.steps[-1].partial_texts == ["5", "-inf"]
    assert [g.item() for g in report.gradient] == [math.inf, -math.inf]
    assert a.grad is None and b.grad is None  # explain leaves the Tensors as they were


@pytest.mark.parametrize("split", ["split", "array_split"])
def test_explain_writes_the_pieces_of_a_split(split):
    # (str(explain(f)) raised "Field elements must be 2- or 3-tuples" for np.split's list
    # answer, and an inhomogeneous one's for np.array_split's: the tables wrote a list of
    # arrays as one array)
    def f(x):
        parts = getattr(np, split)(x, 2 if split == "split" else 3)
        return np.sum(parts[0] * parts[-1]) if split == "split" else \
            np.sum(parts[0]) * np.sum(parts[2])

    x = onp.arange(4.0 if split == "split" else 5.0)
    report = explain(f, x)
    text = str(report)
    want = grad(f)(x)
    onp.testing.assert_array_equal(report.gradient[0], want)
    assert "x̄ = [" + ", ".join(fmt.number(v) for v in want) + "]" in text
    pieces = [fmt.value(p) for p in onp.split(x, 2)] if split == "split" else \
        [fmt.value(p) for p in onp.array_split(x, 3)]
    assert "= [" + ", ".join(pieces) + "]" in text  # (the split's value, piece by piece)
    assert fmt.shape_text(onp.array_split(onp.arange(5.0), 3)) == "[f64[2], f64[2], f64[1]]"
    assert fmt.shape_text(tuple(onp.split(onp.arange(4.0), 2))) == "(f64[2], f64[2])"
