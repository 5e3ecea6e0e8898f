"""chainrule.explain: the textbook tables, computed by the engine's rules."""

import math
import re
import shutil
import subprocess
import time

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule.explain import GraphvizNotFound, explain
from chainrule.extend import defvjp, primitive


def baydin(x1, x2):
    return np.log(x1) + x1 * x2 - np.sin(x2)


@pytest.fixture(scope="module")
def seed():
    return explain(baydin, 2.0, 5.0)


def values(report):
    return {v.name: v.value for v in report.variables}


# ----------------------------------------------------------------------------- the seed example


def test_seed_evaluation_trace_has_the_published_values(seed):
    v = values(seed)
    assert [x.expr for x in seed.steps] == ["log(x1)", "x1 * x2", "sin(x2)", "v1 + v2", "v4 - v3"]
    assert round(v["v1"], 3) == 0.693 and v["v1"] == pytest.approx(math.log(2))
    assert v["v2"] == 10.0
    assert round(v["v3"], 3) == -0.959
    assert round(v["v4"], 3) == 10.693
    assert round(v["v5"], 3) == 11.652
    assert seed.outputs == [("y", "v5", v["v5"])]
    assert seed.var("v2").partials == [5.0, 2.0]
    assert seed.var("v3").partials[0] == pytest.approx(math.cos(5))
    assert seed.var("v5").partials == [1.0, -1.0]


def test_seed_forward_trace(seed):
    assert seed.forward_wrt == "x1"
    tangents = {v.name: v.tangent for v in seed.variables}
    assert tangents == pytest.approx(
        {"x1": 1, "x2": 0, "v1": 0.5, "v2": 5, "v3": 0, "v4": 5.5, "v5": 5.5}
    )
    by_x2 = explain(baydin, 2.0, 5.0, wrt="x2")
    assert by_x2.var("v5").tangent == pytest.approx(2 - math.cos(5))


def test_seed_reverse_trace_and_gradient(seed):
    assert seed.var("x1").adjoint == 5.5
    assert seed.var("x2").adjoint == pytest.approx(2 - math.cos(5))
    assert round(seed.var("x2").adjoint, 3) == 1.716
    assert seed.gradient == pytest.approx(chainrule.grad(baydin, (0, 1))(2.0, 5.0))
    to_x2 = [c for visit in seed.backward for c in visit.contributions if c.parent == "x2"]
    assert [(c.child, round(c.value, 3), round(c.total, 3)) for c in to_x2] == [
        ("v3", -0.284, -0.284),
        ("v2", 2.0, 1.716),
    ]
    assert [visit.adjoint for visit in seed.backward[:1]] == [1.0]
    assert {visit.name: visit.adjoint for visit in seed.backward} == pytest.approx(
        {"v5": 1, "v4": 1, "v3": -1, "v2": 1, "v1": 1, "x1": 5.5, "x2": 2 - math.cos(5)}
    )


def test_seed_topological_orders(seed):
    assert seed.forward_order == ["x1", "x2", "v1", "v2", "v3", "v4", "v5"]
    order = seed.backward_order
    assert order[0] == "v5" and sorted(order) == sorted(seed.forward_order)
    for visit in seed.backward:  # every child is visited before its parents
        for c in visit.contributions:
            assert order.index(c.child) < order.index(c.parent)


def test_seed_text_shows_the_tables(seed):
    text = str(seed)
    for line in [
        "v1  = log(x1)  = log(2)",
        "= 0.693",
        "v2  = x1 * x2  = 2 * 5",
        "= 10 ",
        "v3  = sin(x2)",
        "= -0.959",
        "= 10.693",
        "= 11.652",
        "v̇5",
        "= 5.5",
        "x̄2 = -0.284 + 2 = 1.716",
        "x̄1 = 5 + 0.5 = 5.5",
        "∂y/∂x2  = x̄2     = 1.716",
        "evaluation  x1, x2, v1, v2, v3, v4, v5",
    ]:
        assert line in text, line
    assert text == seed.text()


def test_markdown_is_pipe_tables(seed):
    md = seed.markdown()
    assert "### Evaluation trace" in md and "| v2 | = x1 \\* x2 | = 2 \\* 5 | = 10 |" in md
    assert "x̄2 = -0.284 + 2 = 1.716" in md


# ----------------------------------------------------------------------------- the other seeds


def test_fan_out_accumulates_5_plus_4():
    report = explain(lambda a, b: (a + b) * (b + 1), 2.0, 3.0)
    to_b = [c for visit in report.backward for c in visit.contributions if c.parent == "b"]
    assert [c.value for c in to_b] == [5.0, 4.0]
    assert [c.total for c in to_b] == [5.0, 9.0]
    assert report.gradient == (4.0, 9.0)
    assert "b̄ = 5 + 4 = 9" in report.text()


def test_repeated_argument_x_plus_3_times_x():
    report = explain(lambda x: (x + 3) * x, 5.0)
    assert report.value == 40.0 and report.gradient == (13.0,)
    to_x = [c.value for visit in report.backward for c in visit.contributions if c.parent == "x"]
    assert sorted(to_x) == [5.0, 8.0]
    assert explain(lambda x: x * x, 3.0).var("v1").partials == [3.0, 3.0]


def test_ints_are_promoted_and_names_come_from_the_signature():
    report = explain(lambda x, y: x * y + x, 3, 10)
    assert [v.name for v in report.inputs] == ["x", "y"]
    assert report.gradient == (11.0, 3.0)

    def star(*xs):
        return xs[0] * xs[1]

    assert [v.name for v in explain(star, 2.0, 4.0).inputs] == ["xs[0]", "xs[1]"]


def test_wrt_accepts_names_and_positions_and_rejects_others():
    assert explain(baydin, 2.0, 5.0, wrt=1).forward_wrt == "x2"
    with pytest.raises(ValueError, match="names no float input"):
        explain(baydin, 2.0, 5.0, wrt="z")
    with pytest.raises(ValueError, match="out of range"):
        explain(baydin, 2.0, 5.0, wrt=4)
    with pytest.raises(TypeError, match="at least one float"):
        explain(lambda n: n, "text")


# ----------------------------------------------------------------------------- arrays, containers


def test_arrays_are_summarised_and_gradients_match():
    x = onp.linspace(0.1, 2.0, 1000)
    report = explain(lambda x: np.sum(np.sin(x) * x), x)
    onp.testing.assert_allclose(report.gradient[0], onp.cos(x) * x + onp.sin(x))
    text = str(report)
    assert "f64[1000] min=" in text and "J f64[1000]<-f64[1000]" in text
    assert len(text) < 5000
    small = explain(lambda x: np.sum(x**2), onp.array([1.0, 2.0, 3.0]))
    assert "[1, 2, 3]" in str(small)
    onp.testing.assert_allclose(small.gradient[0], [2.0, 4.0, 6.0])


def test_containers_in_and_out():
    def f(params, x):
        return {"out": params["w"] * x + params["b"], "sq": x * x}

    report = explain(f, {"w": 2.0, "b": 1.0}, 3.0)
    # a dict's entries come in sorted key order (chainrule's pytrees sort keys)
    assert [v.name for v in report.inputs] == ["params['b']", "params['w']", "x"]
    assert [name for name, _, _ in report.outputs] == ["y['out']", "y['sq']"]
    grads = report.gradient
    assert grads[0] == {"w": 3.0, "b": 1.0} and grads[1] == 2.0 + 6.0  # d(sum)/dx
    assert "seeded with ones" in str(report)


def test_integer_arrays_stay_constants():
    report = explain(lambda x, idx: np.sum(x[idx]), onp.array([1.0, 2.0, 3.0]), onp.array([0, 2]))
    onp.testing.assert_allclose(report.gradient[0], [1.0, 0.0, 1.0])
    assert report.gradient[1] is None
    assert "x[[0, 2]]" in str(report)


def test_missing_jvp_rule_is_reported_not_fatal():
    @primitive
    def cube(x):
        return x**3

    defvjp(cube, lambda ans, x: lambda g: 3 * g * x**2)
    report = explain(lambda x: cube(x) + x, 2.0)
    assert report.gradient == (13.0,)
    assert any("no JVP rule" in note for note in report.notes)
    assert "(not computed)" in str(report)


def test_thousands_of_nodes_are_summarised_quickly():
    def long(x):
        for _ in range(700):
            x = np.sin(x) * 0.5 + x
        return x

    start = time.perf_counter()
    report = explain(long, 0.3)
    renders = [report.text(), report.dot(), report.mermaid(), report.html()]
    assert time.perf_counter() - start < 20
    assert len(report.steps) == 2100
    assert report.gradient[0] == pytest.approx(chainrule.grad(long)(0.3))
    assert "operations omitted" in renders[0] and "backward steps omitted" in renders[0]
    # the graph folds the loop into one iteration in a block "× 700"
    assert "× 700" in renders[1] and renders[1].count("->") < 300
    assert "× 700" in renders[2] and "× 700" in renders[3]
    assert all(len(r) < 400_000 for r in renders)


# ----------------------------------------------------------------------------- renderings


def test_dot_and_mermaid(seed):
    dot = seed.dot()
    assert dot.startswith("digraph explain {") and dot.count("->") == 8
    assert 'label="0.5"' in dot and "peripheries=2" in dot
    mermaid = seed.mermaid()
    assert mermaid.startswith("flowchart LR") and mermaid.count("-->") == 8


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_dot_parses_and_svg_renders(seed):
    done = subprocess.run(["dot", "-Tcanon"], input=seed.dot(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    svg = seed.svg()
    assert "<svg" in svg and "v5 = v4 &#45; v3" in svg
    assert seed._repr_svg_() == svg


def test_svg_without_graphviz_says_what_to_do(seed, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(GraphvizNotFound, match="apt-get install graphviz"):
        seed.svg()
    assert seed._repr_svg_() is None


def test_html_is_self_contained(seed):
    page = seed.html()
    assert page.startswith("<!DOCTYPE html>") and "</html>" in page
    assert "http" not in page and "src=" not in page and "@import" not in page
    assert '<g class="node output" id="n6">' in page and 'id="next"' in page
    assert "x̄2 = -0.284 + 2 = 1.716" in page  # the stepper's running sum
    fragment = seed._repr_html_()
    assert fragment.startswith('<div class="chainrule-explain">') and "<html" not in fragment
    # ids carry a per-rendering prefix, so two reports in one notebook do not collide
    prefixes = {re.search(r'id="(cx[0-9a-f]+-)next"', seed._repr_html_())[1] for _ in range(3)}
    assert len(prefixes) == 3 and 'id="next"' not in fragment


def test_html_escapes_names():
    report = explain(lambda x: {"</script><b>": x * 2.0}, 1.0)
    page = report.html()
    assert "</script><b>" not in page.replace("<\\/script>", "")


@pytest.mark.parametrize(
    "f, point, grad",
    [
        # 003: y = exp(2 x1) + x1 x2^2 + cos x2
        (
            lambda x1, x2: np.exp(2 * x1) + x1 * x2**2 + np.cos(x2),
            (0.5, 2.0),
            lambda x1, x2: (2 * math.exp(2 * x1) + x2**2, 2 * x1 * x2 - math.sin(x2)),
        ),
        # 004: z = x*x + x*y at (3, 10)
        (lambda x, y: x * x + x * y, (3.0, 10.0), lambda x, y: (2 * x + y, x)),
    ],
)
def test_other_seed_examples(f, point, grad):
    report = explain(f, *point)
    assert report.gradient == pytest.approx(grad(*point))
    for i, name in enumerate(v.name for v in report.inputs):
        forward = explain(f, *point, wrt=name)
        assert forward.var(forward.outputs[0][1]).tangent == pytest.approx(grad(*point)[i])
