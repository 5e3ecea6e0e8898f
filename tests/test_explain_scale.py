"""explain on real programs: lazy derivative traces, paged tables, loops folded in tables
and graphs, Tensor graphs, the derivative program (report.code), hostile names, and the
planted bugs each mode catches."""

from __future__ import annotations

import html
import inspect
import os
import re
import shutil
import subprocess

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule import Tensor, debug_nans, explain, grad
from chainrule.extend import defvjp, primitive

HERE = os.path.basename(__file__)


def line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def rnn_loss(w, h0, steps=200):
    h = h0
    for _ in range(steps):
        h = np.tanh(w * h + 0.5)  # one line, three operations a step
    return np.sum(h * h)


# ----------------------------------------------------------------------------- lazy, paged


def test_a_report_builds_without_computing_derivatives():
    report = explain(rnn_loss, 0.8, onp.array([0.1, -0.2]))
    lazy = report._lazy
    assert lazy._next == 0 and lazy._visits is None  # no tangent, no backward pass yet
    assert all(v._partials is None for v in report.steps)
    # what a row needs is computed when read, and agrees with grad
    assert report.gradient[0] == pytest.approx(grad(rnn_loss)(0.8, onp.array([0.1, -0.2])))
    assert lazy._visits is not None and lazy._next == 0


def test_contributions_made_when_read_are_the_backward_passs():
    report = explain(lambda x1, x2: np.log(x1) + x1 * x2 - np.sin(x2), 2.0, 5.0)
    seen = 0
    for visit in report.backward:
        for c in visit.contributions:
            child = report.var(c.child)
            j = child.parents.index(c.parent)
            assert c.child == visit.name and c.child_adjoint == visit.adjoint
            assert c.value == pytest.approx(c.child_adjoint * child.partials[j])  # chain rule
            assert c.total == pytest.approx(c.value + (c.previous or 0.0))
            assert c.partial_text == child.partial_texts[j]
            seen += 1
    assert seen == 8
    assert report.var("x1").adjoint == 5.5


def test_tables_page_and_compute_only_their_rows():
    report = explain(rnn_loss, 0.8, onp.array([0.1, -0.2]), max_rows=50)
    assert len(report.steps) == 602
    first = report.text()
    assert "page 1 of 13" in first and "operations omitted" in first
    # page 1's tangents need the nodes up to its last row, not the 602 operations
    assert report._lazy._next < 120
    assert sum(v._partials is not None for v in report.steps) <= 2 * 50  # two tables
    rows = [line.split()[0] for line in report.tables(page=3)[0].text().splitlines()[4:]]
    names = [v.name for v in report.steps[100:150]]
    assert [r for r in rows if r in names] == names  # page 3: operations 101-150
    last = report.tables(page=13)[1]
    tangent = chainrule.jvp(lambda w: rnn_loss(w, onp.array([0.1, -0.2])), (0.8,), (1.0,))[1]
    assert last.rows[-1][-1] == "= " + report.show(tangent)  # the output's tangent, last page
    assert "(page 13)" in report.tables(page=1)[1].rows[-1][-1]


def test_a_long_program_renders_with_every_view_bounded():
    report = explain(lambda w, h0: rnn_loss(w, h0, 3000), 0.8, onp.array([0.1, -0.2]))
    assert len(report.steps) == 9002
    renders = [report.text(), report.markdown(), report.dot(), report.mermaid(), report.html()]
    assert all(len(r) < 600_000 for r in renders)
    assert "Derivative program" not in renders[1]  # as long as the program: report.code
    assert report.dot().count("->") < 40


# ----------------------------------------------------------------------------- folding


def test_a_one_line_loop_body_folds_and_a_line_of_several_calls_does_not():
    report = explain(rnn_loss, 0.8, onp.array([0.1, -0.2]))
    loop = line_of(rnn_loss, "np.tanh(w * h + 0.5)")
    blocks = report.folds()
    assert [(b.repeats, [s.line for s in b.lines]) for b in blocks] == [
        (200, [loop]),
        (1, [loop + 1]),
    ]
    assert all([report.var(n).op for n in names] == ["multiply", "add", "tanh"]
               for names in blocks[0].names)  # fmt: skip

    def chain(x):
        return x * x * x * x * x  # four multiplies on one line: not a loop

    (block,) = explain(chain, 1.5).folds()
    assert block.repeats == 1 and len(block.names[0]) == 4


def test_graphs_fold_a_loop_into_one_iteration():
    report = explain(lambda w, h0: rnn_loss(w, h0, 1000), 0.8, onp.array([0.1, -0.2]))
    dot = report.dot()
    assert "× 1000 (a loop" in dot
    loop = f"{HERE}:{line_of(rnn_loss, 'np.tanh(w * h + 0.5)')}"
    assert dot.count(loop) == 1  # one cluster for the line
    assert 'label="next iteration"' in dot
    boxes = re.findall(r"^\s+(n\d+) \[label=", dot, re.M)
    assert len(boxes) == 2 + 3 + 2  # inputs, one iteration, h * h and sum
    mermaid = report.mermaid()
    assert "subgraph" in mermaid and "× 1000" in mermaid
    page = report.html()
    assert "× 1000 · " + loop in page  # the line under each node of the folded loop
    if shutil.which("dot"):
        done = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True)
        assert done.returncode == 0 and "× 1000" in done.stdout


def test_small_graphs_stay_unfolded_and_group_nodes_by_line():
    def f(x, y):
        a = x * y
        b = np.sin(a) + x
        return b * 2.0

    dot = explain(f, 0.5, 2.0).dot()
    for text in ("a = x * y", "b = np.sin(a) + x", "return b * 2.0"):
        assert f"{HERE}:{line_of(f, text)}: {text}" in dot
    assert dot.count("subgraph cluster_") == 3 and "× " not in dot


# ----------------------------------------------------------------------------- Tensor graphs


def test_explain_a_tensor_graph_like_make_dot():
    w = Tensor(onp.array([[0.5, -1.0], [2.0, 0.3]]))
    x = Tensor(onp.array([1.0, 2.0]), requires_grad=False)
    bias = Tensor(0.1)
    h = np.tanh(w @ x + bias)
    loss = (h * h).sum()
    report = explain(loss)
    assert [v.name for v in report.inputs] == ["w", "bias"]  # named as in this code
    assert report.value == pytest.approx(loss.item())
    loss.backward()
    onp.testing.assert_allclose(report.gradient[0], w.grad.numpy(), rtol=1e-12)
    assert report.gradient[1] == pytest.approx(bias.grad.item())
    assert report.code is None and "Derivative program" not in report.markdown()
    with pytest.raises(ValueError, match="freed by backward"):
        explain(loss)
    with pytest.raises(TypeError, match="requires_grad"):
        explain(Tensor(1.0, requires_grad=False) * 2.0)


def test_a_tensor_graph_recorded_under_debug_nans_knows_its_lines():
    w = Tensor(onp.array([0.5, -1.0]))
    with debug_nans():
        h = np.tanh(w * 3.0)
        loss = (h * h).sum()
    report = explain(loss)
    lines = {v.op: v.source.line for v in report.steps}
    here = inspect.currentframe().f_lineno
    assert lines["tanh"] == here - 4 and lines["sum"] == here - 3


# ----------------------------------------------------------------------------- report.code


def two_layer(w, x):
    h = np.tanh(w * x)
    return np.sum(h**2)


def test_report_code_is_the_jit_program_linked_to_source_lines():
    w, x = onp.array([0.5, 1.0]), onp.array([2.0, 3.0])
    report = explain(two_layer, w, x)
    code = report.code
    assert code == report.code and code.startswith("def ")
    first, second = (f"{HERE}:{line_of(two_layer, t)}" for t in ("np.tanh", "np.sum"))
    lines = [line.strip() for line in code.splitlines()]
    assert any(re.search(rf"# tanh @ {re.escape(first)}$", line) for line in lines)
    assert any(re.search(rf"# sum @ {re.escape(second)}$", line) for line in lines)
    adjoint = [line for line in lines if line.endswith("(adjoint)")]
    assert adjoint and all(first in line or second in line for line in adjoint)
    # the program computes what grad does
    namespace = chainrule.jit(chainrule.value_and_grad(two_layer, argnum=(0, 1)))
    value, grads = namespace(w, x)
    assert value == pytest.approx(report.value)
    onp.testing.assert_allclose(grads[0], report.gradient[0], rtol=1e-12)
    assert "### Derivative program" in report.markdown() and "```python" in report.markdown()
    assert "<h2>Derivative program" in report.html()


# ----------------------------------------------------------------------------- HTML safety

HOSTILE = "<script>alert('x')</script>\"&"


def test_hostile_names_are_escaped_everywhere():
    def f(params):
        return np.sin(params[HOSTILE]) * params["ok"]  # </script><img src=x onerror=1>

    report = explain(f, {HOSTILE: 0.5, "ok": 2.0}, check=True)
    assert any("<script>alert(" in v.name for v in report.inputs)
    for page in (report.html(), report._repr_html_()):
        assert "<script>alert" not in page and "<img src" not in page
        assert "&lt;script&gt;alert(" in page
        assert page.count("<script") == 2  # the data block and the stepper, nothing else
        assert "http://" not in page and "https://" not in page
    markdown = report._repr_markdown_()
    assert "<script>" not in markdown and "\\<script\\>" in markdown
    dot = report.dot()
    assert '\\"&' in dot  # quotes escaped inside DOT strings
    if shutil.which("dot"):
        done = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    assert "<script>" not in report.mermaid()


# ----------------------------------------------------------------------------- planted bugs


def norm_loss(x):
    r = np.sqrt(np.sum(x**2))
    return 2.0 * r


def log_loss(x):
    z = np.log(x * 3.0)
    return np.sum(z)


def exp_loss(x):
    return np.sum(np.exp(x * 1000.0))


@primitive
def wrong_square(x):
    return x * x


defvjp(wrong_square, lambda ans, x: lambda g: 3.0 * g * x)  # off by a factor 1.5


def custom_loss(x):
    s = wrong_square(np.sin(x))
    return np.sum(s)


def unused_loss(a, b):
    return np.sin(a) + 0.0 * b


def tanh_rnn(h0, w):
    h = h0
    for _ in range(50):
        h = np.tanh(w * h + 1.0)
    return h


PLANTED = {
    # name: (function, arguments, the line that is to blame)
    "sqrt(0) in a norm": (norm_loss, (onp.zeros(3),), "np.sqrt"),
    "log(0)": (log_loss, (onp.array([1.0, 0.0]),), "np.log"),
    "exp overflow": (exp_loss, (onp.array([0.5, 1.0]),), "np.exp"),
    "wrong custom VJP": (custom_loss, (onp.array([0.3, -1.2]),), "wrong_square("),
    "unused input": (unused_loss, (0.5, 2.0), "0.0 * b"),
    "vanishing gradient": (tanh_rnn, (0.1, 3.0), "np.tanh"),
}


def _check_finding(name: str, report) -> str:
    """The finding explain(check=True) reports for the planted bug (fails if none)."""
    (finding,) = [
        f
        for f in report.diagnostics.findings()
        if {
            "sqrt(0) in a norm": "backward pass",
            "log(0)": "forward pass",
            "exp overflow": "forward pass",
            "wrong custom VJP": "disagrees with finite differences",
            "unused input": "input b has a zero gradient here",
            "vanishing gradient": "vanishing or exploding",
        }[name]
        in f
    ]
    return finding


@pytest.mark.parametrize("name", list(PLANTED))
def test_explain_check_names_the_line_of_each_planted_bug(name):
    fn, args, blamed = PLANTED[name]
    with onp.errstate(all="ignore"):
        report = explain(fn, *args, check=True)
        finding = _check_finding(name, report)
    assert f"{HERE}:{line_of(fn, blamed)}" in finding


@pytest.mark.parametrize("name", list(PLANTED))
def test_debug_nans_catches_the_nan_bugs_only(name):
    fn, args, blamed = PLANTED[name]
    with debug_nans(), onp.errstate(all="ignore"):
        try:
            grad(fn)(*args)
        except FloatingPointError as error:
            caught = str(error)
        else:
            caught = None
    if name in ("sqrt(0) in a norm", "log(0)", "exp overflow"):
        assert f"{HERE}:{line_of(fn, blamed)}" in caught
    else:  # a wrong derivative, an unused input, a vanishing chain make no NaN
        assert caught is None


# ----------------------------------------------------------------------------- docs, benchmark


def test_the_pictures_in_the_docs_are_the_renderers():
    """docs/images/explain_*.dot are what docs/gen_explain_pictures.py writes today, and the
    SVGs beside them were drawn from them (rerun the script after changing the renderer)."""
    import importlib.util
    from pathlib import Path

    docs = Path(__file__).resolve().parent.parent / "docs"
    spec = importlib.util.spec_from_file_location("gen_pictures", docs / "gen_explain_pictures.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for name, source in gen.dot_sources().items():
        assert (docs / "images" / f"{name}.dot").read_text(encoding="utf-8") == source, name
        svg = (docs / "images" / f"{name}.svg").read_text(encoding="utf-8")
        lines = [line for label in re.findall(r'label="([^"\\]*)"', source) for line in
                 label.split("\n")]  # fmt: skip
        assert lines and all(
            html.escape(line, quote=False).replace("-", "&#45;") in svg for line in lines
        )
    assert "× 50 (a loop" in source and 'color="#c00000"' in gen.dot_sources()["explain_nan"]


def test_the_explain_benchmark_runs():
    from benchmarks import bench_explain

    rows = bench_explain.run(steps=40, repeats=1, check=True)
    assert [name.split(" (")[0] for name, _ in rows] == [
        "chainrule.grad",
        "explain: build",
        "explain: first text page",
        "explain: HTML page",
        "explain: DOT graph",
        "explain(check=True): build and text",
    ]
    assert "206 operations" in rows[1][0]
