"""explain as a gradient debugger: source lines, check=True, debug_nans."""

from __future__ import annotations

import inspect
import os
import sys

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule import debug_nans, explain, grad
from chainrule._core import forward as core_forward
from chainrule._core import reverse as core_reverse
from chainrule.extend import defvjp, primitive

HERE = os.path.basename(__file__)


def line_of(fn, text: str) -> int:
    """The line number of the line of ``fn``'s source that contains ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def norm_loss(x):
    r = np.sqrt(np.sum(x**2))
    return 2.0 * r


def log_loss(x):
    y = x * 3.0
    z = np.log(y)
    return np.sum(z)


def exp_loss(x):
    big = x * 1000.0
    return np.sum(np.exp(big))


def unused_loss(a, b, c):
    return np.sin(a) + 0.0 * b


@primitive
def scaled_square(x):
    return x * x


defvjp(scaled_square, lambda ans, x: lambda g: 2.0 * g * x)


@primitive
def wrong_square(x):
    return x * x


defvjp(wrong_square, lambda ans, x: lambda g: 3.0 * g * x)  # off by a factor 1.5


def custom_loss(x, wrong):
    square = wrong_square if wrong else scaled_square
    s = square(np.sin(x))
    return np.sum(s)


def test_every_node_knows_its_source_line():
    report = explain(log_loss, onp.array([1.0, 2.0]))
    ops = {v.op: v for v in report.steps}
    assert ops["log"].source.line == line_of(log_loss, "np.log(y)")
    assert ops["log"].source.text == "z = np.log(y)"
    assert os.path.basename(ops["log"].source.file) == HERE
    assert ops["multiply"].source.line == line_of(log_loss, "x * 3.0")
    groups = {src.line: names for src, names in report.by_line().items()}
    assert groups[line_of(log_loss, "np.log(y)")] == [ops["log"].name]
    assert sum(map(len, groups.values())) == len(report.steps)


@pytest.mark.parametrize("check", [False, True])
def test_source_lines_in_tables_and_html(check):
    report = explain(log_loss, onp.array([1.0, 2.0]), check=check)
    where = f"{HERE}:{line_of(log_loss, 'np.log(y)')}"
    text = report.text()
    assert "Source lines" in text and where in text and "z = np.log(y)" in text
    assert where.replace("_", "\\_") in report.markdown()  # Markdown escapes _
    assert where in report.html() and "z = np.log(y)" in report.html()
    assert ("Checks" in text) is check
    # the operations grouped by line: each line once, with the operations it made
    log = next(v.name for v in report.steps if v.op == "log")
    lines = report.tables()[5]
    assert lines.title == "Source lines"
    (row,) = [r for r in lines.rows if r[1] == where]
    assert row[2:] == ["z = np.log(y)", log]


def test_nan_origin_sqrt_at_zero_inside_a_norm():
    x = onp.zeros(3)
    with onp.errstate(divide="ignore", invalid="ignore"):
        assert onp.all(onp.isnan(grad(norm_loss)(x)))  # the planted bug: NaN gradient
        d = explain(norm_loss, x, check=True).diagnostics
    assert d.nan_forward is None  # the value is a finite 0
    origin = d.nan_backward
    assert origin.source.line == line_of(norm_loss, "np.sqrt")
    assert "= 0" in origin.operands and "inf" in origin.value


def test_nan_origin_log_zero():
    with onp.errstate(divide="ignore", invalid="ignore"):
        d = explain(log_loss, onp.array([1.0, 0.0]), check=True).diagnostics
    assert d.nan_forward.source.line == line_of(log_loss, "np.log(y)")
    assert "1 inf" in d.nan_forward.value and "min=0" in d.nan_forward.operands


def test_nan_origin_exp_overflow():
    with onp.errstate(over="ignore"):
        report = explain(exp_loss, onp.array([0.5, 1.0]), check=True)
    origin = report.diagnostics.nan_forward
    assert origin.source.line == line_of(exp_loss, "np.exp(big)")
    assert "inf" in origin.value and "max=1000" in origin.operands
    assert f"{HERE}:{origin.source.line}" in report.text()


def test_finite_difference_check_flags_exactly_the_wrong_vjp():
    x = onp.array([0.3, -1.2, 2.0])
    good = explain(custom_loss, x, False, check=True)
    assert good.diagnostics.flagged == []
    bad = explain(custom_loss, x, True, check=True)
    assert [bad.var(n).op for n in bad.diagnostics.flagged] == ["wrong_square"]
    name = bad.diagnostics.flagged[0]
    assert bad.diagnostics.nodes[name].fd_error == pytest.approx(1 / 3, rel=1e-4)  # |2-3|/3
    assert bad.var(name).source.line == line_of(custom_loss, "square(np.sin(x))")
    assert "WRONG" in bad.text()
    # every other node passes, and the true derivative is the one the correct rule gives:
    # d/dx sum(sin(x)**2) = 2 sin(x) cos(x) = sin(2x)
    assert all(
        c.fd_error < 1e-6
        for n, c in bad.diagnostics.nodes.items()
        if c.fd_error is not None and n != name
    )
    onp.testing.assert_allclose(good.gradient[0], onp.sin(2 * x), rtol=1e-12)


def test_unused_inputs():
    d = explain(unused_loss, 0.5, 2.0, 3.0, check=True).diagnostics
    assert d.unused == ["c"]  # no path leads from c to the output
    assert d.zero_gradient == ["b"]  # 0.0 * b: a path, whose derivative is zero
    found = d.findings()
    assert found[0].startswith("input c does not reach the output")
    assert found[1].startswith("input b has a zero gradient here, though the output is computed")


@pytest.mark.parametrize("start", [onp.zeros(3), 0.0, -0.0])
def test_a_stationary_point_is_not_an_unused_input(start):
    """sum(w**2) at w = 0, the most common starting point: the gradient is zero there, but
    w is what the output is made of; it must never be reported as not influencing it."""
    report = explain(lambda w: np.sum(w**2), start, check=True)
    d = report.diagnostics
    assert d.unused == [] and d.zero_gradient == ["w"]
    (finding,) = d.findings()
    assert finding.startswith("input w has a zero gradient here, though the output is computed")
    assert "does not" not in report.text()
    # away from the minimum nothing is reported
    assert explain(lambda w: np.sum(w**2), start + 1.0, check=True).diagnostics.findings() == []


def test_adjoint_sizes_and_bytes_kept():
    x = onp.ones((4, 5))
    report = explain(lambda x: np.sum(np.tanh(x) * 2.0), x, check=True)
    d = report.diagnostics
    tanh = next(v for v in report.steps if v.op == "tanh")
    assert d.nodes[tanh.name].kept_bytes == 2 * x.nbytes  # its argument and its answer
    expected = onp.linalg.norm(2.0 * onp.ones((4, 5)))
    assert d.nodes[tanh.name].adjoint_norm == pytest.approx(expected)


def test_vanishing_gradient_in_a_tanh_rnn():
    def rnn(h0, w):
        h = h0
        for _ in range(50):
            h = np.tanh(w * h + 1.0)
        return h

    d = explain(rnn, 0.1, 3.0, check=True).diagnostics
    norms = [c.adjoint_norm for c in d.nodes.values() if c.adjoint_norm is not None]
    # the adjoint of the first step's state has vanished compared with the last
    tanh_norms = [d.nodes[v].adjoint_norm for v in d.nodes if v.startswith("v")]
    assert min(norms) < 1e-20 < max(tanh_norms)


def test_debug_nans_is_off_by_default_and_costs_nothing_when_off():
    assert not chainrule.debug.is_enabled()
    assert core_reverse.VJPNode.__init__ is core_reverse.VJPNode.__dict__["__init__"]
    original = core_reverse.VJPNode.__dict__["__init__"]
    with onp.errstate(divide="ignore", invalid="ignore"):
        assert onp.isnan(grad(norm_loss)(onp.zeros(2))).all()  # no raise when off
    # plain grad never looks up source lines; explain does, once per operation
    calls = []
    lookups = [(sys.modules["chainrule.debug"], "user_source")]
    lookups.append((sys.modules["chainrule.explain._trace"], "user_site"))
    real = {name: getattr(m, name) for m, name in lookups}
    for m, name in lookups:
        setattr(m, name, lambda *a, name=name: calls.append(a) or real[name](*a))
    try:
        grad(log_loss)(onp.array([1.0, 2.0]))
        assert calls == []
        explain(log_loss, onp.array([1.0, 2.0]))
        assert len(calls) == 3 + 1  # three operations and the input's root node
    finally:
        for m, name in lookups:
            setattr(m, name, real[name])
    from chainrule._core.extension import observers

    assert observers == []
    with debug_nans():
        assert core_reverse.VJPNode.__init__ is original  # observed, not swapped
        assert len(observers) == 1
    assert observers == []
    assert core_reverse.VJPNode.__init__ is original
    assert core_reverse._entry_of == core_reverse.rule_table.get
    assert core_reverse.children_first.__module__ == "chainrule._core.reverse"


def test_debug_nans_raises_in_the_forward_pass():
    with debug_nans(), onp.errstate(divide="ignore"):
        with pytest.raises(FloatingPointError) as err:
            grad(log_loss)(onp.array([1.0, 0.0]))
    message = str(err.value)
    assert "log produced" in message and "forward pass" in message
    assert f"{HERE}:{line_of(log_loss, 'np.log(y)')}" in message and "min=0" in message


def test_debug_nans_raises_in_the_backward_pass():
    with debug_nans(), onp.errstate(divide="ignore"):
        with pytest.raises(FloatingPointError) as err:
            grad(norm_loss)(onp.zeros(3))
    message = str(err.value)
    assert "VJP of sqrt" in message and "backward pass" in message
    assert f"{HERE}:{line_of(norm_loss, 'np.sqrt')}" in message


def test_debug_nans_forward_mode_and_global_switch():
    debug_nans()
    try:
        assert chainrule.debug.is_enabled()
        with onp.errstate(over="ignore"), pytest.raises(FloatingPointError, match="exp"):
            chainrule.jvp(exp_loss, (onp.array([1.0]),), (onp.array([1.0]),))
        # finite programs are unchanged
        assert grad(lambda x: np.sum(np.sin(x)))(onp.array([0.5])) == pytest.approx(onp.cos(0.5))
    finally:
        debug_nans(False)
    assert not chainrule.debug.is_enabled()
    assert core_forward.JVPNode.__init__ is core_forward.JVPNode.__dict__["__init__"]


def test_a_loop_folds_into_one_block():
    def rnn(h0, w):
        h = h0
        for _ in range(30):
            a = w * h
            h = np.tanh(a + 1.0)
        return h * 2.0

    report = explain(rnn, 0.1, 0.5, check=True)
    blocks = report.folds()
    loop_line = line_of(rnn, "a = w * h")
    assert [(b.repeats, [s.line for s in b.lines]) for b in blocks] == [
        (30, [loop_line, loop_line + 1]),
        (1, [loop_line + 2]),
    ]
    # each iteration made one multiply, one add and one tanh, in that order
    assert all(
        [report.var(n).op for n in names] == ["multiply", "add", "tanh"]
        for names in blocks[0].names
    )
    assert len({n for names in blocks[0].names for n in names}) == 90
    text = report.text()
    assert "× 30" in text and text.count("a = w * h") == 1
    assert "vanishing or exploding" in text  # 0.5**30-ish shrinkage of the adjoint
    page = report.html()
    assert "<details><summary>× 30</summary>" in page
    assert page.count("<li>iteration ") == 30
    first = ", ".join(blocks[0].names[0])
    assert f"<li>iteration 1: {first}</li>" in page


def test_hostile_source_text_is_escaped_in_html():
    def f(x):
        y = np.sin(x)  # <script>alert(1)</script>
        return y

    page = explain(f, 0.5, check=True).html()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_large_arrays_show_a_summary_with_nan_counts():
    x = onp.linspace(-1.0, 2.0, 40).reshape(4, 10)
    with onp.errstate(invalid="ignore", divide="ignore"):
        report = explain(lambda x: np.sum(np.sqrt(x)), x)
    sqrt = next(v for v in report.steps if v.op == "sqrt")
    shown = report.show(sqrt.value)
    finite = onp.sqrt(x[x >= 0])
    assert shown.startswith("f64[4,10] ")
    assert f"{int((x < 0).sum())} NaN" in shown
    assert f"max={report.show(finite.max())}" in shown


def test_debug_nans_shows_the_operands_of_a_primitive_whose_tape_keeps_shapes_only():
    # add's rule reads neither operand (its node keeps them as shapes only), yet the forward
    # check runs before the tape drops them: the message shows their values
    import chainrule.numpy as np
    from chainrule import debug_nans, grad

    shown = r"add .*arg0: f64\[2\] min=1 max=1e\+308"
    with debug_nans(), pytest.raises(FloatingPointError, match=shown):
        grad(lambda x: np.sum(x + x))(np.array([1e308, 1.0]))
