"""explain(f, *args, taylor=k): each value's Taylor coefficients in the evaluation trace,
against taylor_derivatives and nested jvp."""

from __future__ import annotations

from math import factorial

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule.explain import explain


def _f(x1, x2):
    return np.log(x1) + x1 * x2 - np.sin(x2)


def _coefficients(fun, x0, order):
    """Normalized Taylor coefficients 1..order of fun(x0 + t), from taylor_derivatives."""
    derivatives = chainrule.taylor_derivatives(fun, order)(x0)
    return [derivatives[j] / factorial(j) for j in range(1, order + 1)]


def _nested_jvp(fun, x0, order):
    """The same from jvp nested ``order`` times (independent of Taylor mode)."""
    out, h = [], fun
    for j in range(1, order + 1):
        h = (lambda inner: lambda t: chainrule.jvp(inner, (t,), (1.0,))[1])(h)
        out.append(h(x0) / factorial(j))
    return out


def test_every_value_carries_its_series_along_the_chosen_input():
    order = 4
    report = explain(_f, 2.0, 5.0, taylor=order)
    assert report.taylor == order
    v = {var.name: var for var in report.variables}
    onp.testing.assert_allclose(v["x1"].taylor, [1, 0, 0, 0])
    onp.testing.assert_allclose(v["x2"].taylor, [0, 0, 0, 0])
    onp.testing.assert_allclose(v["v1"].taylor, _nested_jvp(np.log, 2.0, order), rtol=1e-12)
    onp.testing.assert_allclose(v["v2"].taylor, [5.0, 0, 0, 0])  # x1 * x2, x2 fixed
    onp.testing.assert_allclose(v["v3"].taylor, [0, 0, 0, 0])  # sin(x2) does not move
    want = _coefficients(lambda t: _f(t, 5.0), 2.0, order)
    onp.testing.assert_allclose(v["v5"].taylor, want, rtol=1e-12)
    onp.testing.assert_allclose(want, _nested_jvp(lambda t: _f(t, 5.0), 2.0, order),
                                rtol=1e-12)
    # ... and along x2
    report = explain(_f, 2.0, 5.0, taylor=3, wrt="x2")
    onp.testing.assert_allclose(report.var("v5").taylor,
                                _nested_jvp(lambda t: _f(2.0, t), 5.0, 3), rtol=1e-12)


def test_the_evaluation_table_shows_the_coefficients():
    report = explain(_f, 2.0, 5.0, taylor=2)
    table = report.table("Evaluation trace")
    assert table.headers[-2:] == ["t^1", "t^2"]
    rows = {row[0]: row for row in table.rows}
    assert rows["v1"][-2:] == ["0.5", "-0.125"]  # log(2 + t) = log 2 + t/2 - t^2/8 + ...
    assert rows["y"][-2:] == ["5.5", "-0.125"]  # the output row, as its variable's
    assert "x1(t) = x1 + t" in table.note
    text = report.text()
    assert "t^2" in text and "-0.125" in text
    assert "| t^1 | t^2 |" in report.markdown()
    # without taylor=k the table is as it was
    plain = explain(_f, 2.0, 5.0).table("Evaluation trace")
    assert plain.headers == ["", "operation", "with values", "value", "local partials"]
    assert explain(_f, 2.0, 5.0).var("v1").taylor is None


def test_arrays_move_along_ones():
    x = onp.array([0.1, -0.4, 0.8])
    fun = lambda x: np.sum(np.tanh(x) ** 2)  # noqa: E731
    report = explain(fun, x, taylor=3)
    _, terms = chainrule.jet(fun, (x,), ([onp.ones(3), onp.zeros(3), onp.zeros(3)],))
    want = [terms[j] / factorial(j + 1) for j in range(3)]
    onp.testing.assert_allclose(report.var("v3").taylor, want, rtol=1e-12)
    onp.testing.assert_allclose(report.var("v1").taylor,
                                [_nested_jvp(np.tanh, x, 3)[j] for j in range(3)], rtol=1e-12)


def test_a_primitive_without_a_rule_shows_no_series():
    @chainrule.primitive
    def opaque(x):
        return x * 2.0

    report = explain(lambda x: np.sin(opaque(x)) + x, 0.5, taylor=2)
    rows = {row[0]: row for row in report.table("Evaluation trace").rows}
    assert rows["v1"][-2:] == ["(no rule)", "(no rule)"]
    assert rows["y"][-2:] == ["(no rule)", "(no rule)"]
    assert report.var("v1").taylor is None


@pytest.mark.parametrize("order", [-1, 1.5, True, "2"])
def test_taylor_must_be_a_whole_order(order):
    with pytest.raises(ValueError, match="taylor"):
        explain(_f, 2.0, 5.0, taylor=order)


def test_the_command_line_takes_taylor(capsys):
    from chainrule.__main__ import main

    assert main(["explain", "exp(2*x)", "--at", "x=0", "--taylor", "3"]) == 0
    out = capsys.readouterr().out
    assert "t^3" in out
    y = [line for line in out.splitlines() if line.strip().startswith("y ")][0]
    # exp(2t) = 1 + 2t + 2t^2 + (4/3)t^3 + ...
    assert y.split()[-3:] == ["2", "2", "1.333"]
    assert main(["explain", "exp(2*x)", "--at", "x=0", "--taylor", "-1"]) == 2
    assert "taylor" in capsys.readouterr().err
