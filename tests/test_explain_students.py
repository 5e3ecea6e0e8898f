"""explain for students: names that never collide, ASCII terminals, the CLI's functions.

The tables are checked by value: every row that states a derivative is compared with a
central difference and with the derivative worked out by hand, so a row that carries the
right label but the wrong quantity (an input's adjoint mixed with the output's seed) fails.
"""

import inspect
import math
import os
import string
import subprocess
import sys
from pathlib import Path

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule import explain
from chainrule.__main__ import main
from chainrule.explain._expr import ZERO_DERIVATIVE, Expression, ExpressionError
from chainrule.explain._notation import to_ascii
from chainrule.explain._tables import barred, dotted

LATIN = list(string.ascii_lowercase)
GREEK = [chr(c) for c in range(ord("α"), ord("ω") + 1)]  # includes ς, final sigma
DIGITS = 8  # decimals shown, so the printed values can be compared closely


def named(fun, names):
    """``fun`` with positional parameters called ``names`` (explain names inputs after them)."""

    def g(*args):
        return fun(*args)

    g.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names]
    )
    return g


def model(a, b):
    return a * b + np.sin(b) * a


def by_hand(a, b):
    """d model / da and d model / db."""
    return b + math.sin(b), a + math.cos(b) * a


def central(fun, args, i, h=1e-6):
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    return (fun(*up) - fun(*down)) / (2 * h)


def number(cell: str) -> float:
    """The value at the end of a cell: '= 3.5' or 'x̄ = 3.5 (input: its gradient)' -> 3.5."""
    text = cell.split(" (input")[0].rsplit("=", 1)[-1]
    return float(text)


def rows(report, title, ascii=False):
    return next(t for t in report.tables(ascii) if t.title == title).rows


def check_tables(report, names, point, ascii=False):
    """Every derivative row of the text tables against finite differences and by hand."""
    spell = to_ascii if ascii else str
    out = report.output
    assert out not in names and out == report.outputs[0][0]
    value = float(model(*point))
    grads = by_hand(*point)
    for i in range(2):
        assert central(model, point, i) == pytest.approx(grads[i], rel=1e-6)

    evaluation = rows(report, "Evaluation trace", ascii)
    labels = [r[0] for r in evaluation]
    assert len(labels) == len(set(labels)), labels
    by_label = {r[0]: r for r in evaluation}
    for name, x in zip(names, point):
        assert number(by_label[spell(name)][3]) == pytest.approx(x)
    assert number(by_label[spell(out)][3]) == pytest.approx(value, rel=1e-7)

    # forward: seeded on the first input, the output's tangent is d f / d names[0]
    forward = {r[0]: r for r in rows(report, "Forward tangent trace", ascii)}
    assert len(forward) == len(evaluation)
    assert number(forward[spell(dotted(names[0]))][3]) == 1
    assert number(forward[spell(dotted(names[1]))][3]) == 0
    assert number(forward[spell(dotted(out))][3]) == pytest.approx(grads[0], rel=1e-6)

    # reverse: each input's adjoint row once, holding its gradient; the seed only at the top
    backward = rows(report, "Reverse adjoint trace", ascii)
    adjoints = [r[1] for r in backward if r[1]]
    assert adjoints[0].endswith(f"= {spell(barred(out))} = 1")
    assert sum(spell(barred(out)) in a for a in adjoints) == 1
    for name, g in zip(names, grads):
        mine = [a for a in adjoints if a.startswith(spell(barred(name)) + " = ")]
        assert len(mine) == 1, mine
        assert mine[0].endswith("(input: its gradient)")
        assert number(mine[0]) == pytest.approx(g, rel=1e-6)

    gradient = {r[0]: r for r in rows(report, "Gradient", ascii)}
    for name, g in zip(names, grads):
        row = gradient[spell(f"∂{out}/∂{name}")]
        assert row[1] == "= " + spell(barred(name))
        assert number(row[2]) == pytest.approx(g, rel=1e-6)
    text = report._text(ascii)
    assert text.isascii() or not ascii


def other_name(letter: str) -> str:
    return "y" if letter != "y" else "x"


@pytest.mark.parametrize("letter", LATIN + GREEK)
def test_every_single_letter_input_name(letter):
    names = [letter, other_name(letter)]
    point = (2.0, 3.0)
    report = explain(named(model, names), *point, digits=DIGITS)
    # y is taken in every case here: the output is f, or g when f is an input
    assert report.output == ("g" if letter == "f" else "f")
    check_tables(report, names, point)
    check_tables(report, names, point, ascii=True)
    assert report.gradient == pytest.approx(by_hand(*point))


def test_output_is_y_when_free_and_steps_avoid_input_names():
    seed = explain(lambda x1, x2: np.log(x1) + x1 * x2 - np.sin(x2), 2.0, 5.0)
    assert seed.output == "y" and seed.outputs[0][0] == "y"
    for names, output, letter in [
        (["y", "f"], "g", "v"),
        (["v1", "v2"], "y", "w"),
        (["v1", "w2"], "y", "u"),
        (["y", "f", "g", "h"], "out", "v"),
        (["v1", "w1", "u1", "z1"], "y", "v_"),
    ]:
        point = tuple(float(k + 2) for k in range(len(names)))
        report = explain(named(lambda *a: model(a[0], a[1]), names), *point, digits=DIGITS)
        assert report.output == output
        assert [v.name for v in report.steps] == [f"{letter}{k}" for k in range(1, 5)]
        check_tables(report, names[:2], point[:2])


def test_pytree_output_is_named_after_the_free_name():
    report = explain(lambda y: {"sq": y * y, "cube": y**3}, 2.0)
    assert [name for name, _, _ in report.outputs] == ["f['cube']", "f['sq']"]
    assert rows(report, "Gradient")[0] == ["∂sum(f)/∂y", "= " + barred("y"), "= 16"]  # 2y + 3y²


# ----------------------------------------------------------------------------- the CLI


def cli(capsys, *argv):
    code = main(["explain", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def cli_rows(out: str, first: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if line.strip().startswith(first)]


@pytest.mark.parametrize("letter", [c for c in LATIN + GREEK if c != "e"])
def test_every_single_letter_on_the_command_line(capsys, letter):
    other = other_name(letter)
    source = f"{letter} * {other} + sin({other}) * {letter}"
    fun = Expression(source).function([letter, other])
    grads = by_hand(2.0, 3.0)
    for i in range(2):
        assert central(fun, (2.0, 3.0), i) == pytest.approx(grads[i], rel=1e-6)
    code, out, err = cli(capsys, source, "--at", f"{letter}=2", f"{other}=3", "--digits", "8")
    assert code == 0, err
    out_name = "g" if letter == "f" else "f"
    assert out.startswith(f"chainrule.explain: {out_name} = {source} at ")
    for name, g in zip([letter, other], grads):
        (row,) = cli_rows(out, f"∂{out_name}/∂{name} ")
        assert row.split()[2] == barred(name)
        assert float(row.split()[-1]) == pytest.approx(g, rel=1e-6)
        (adjoint,) = [r for r in out.splitlines() if f" {barred(name)} = " in r and "(input" in r]
        assert number(adjoint.split(maxsplit=1)[1]) == pytest.approx(g, rel=1e-6)
    code, plain, err = cli(capsys, source, "--at", f"{letter}=2", f"{other}=3", "--ascii")
    assert code == 0, err
    assert plain.isascii()
    (row,) = cli_rows(plain, f"d{out_name}/d{to_ascii(letter)} ")
    assert float(row.split()[-1]) == pytest.approx(grads[0], rel=1e-3)


def test_e_and_pi_are_constants_on_the_command_line(capsys):
    code, _, err = cli(capsys, "x * e", "--at", "x=1", "e=2")
    assert code == 2 and "e is a constant, not a variable" in err
    code, out, _ = cli(capsys, "pi * x + e * x", "--at", "x=2")
    assert code == 0 and "= π * x" in out and "= 2.718 * x" in out
    assert float(cli_rows(out, "∂y/∂x ")[0].split()[-1]) == pytest.approx(math.pi + math.e, 1e-3)
    code, out, _ = cli(capsys, "pi * x", "--at", "x=2", "--ascii")
    assert code == 0 and "= pi * x" in out and "π" not in out
    # an input named π: the constant is then written as its number
    code, out, _ = cli(capsys, "pi * π", "--at", "π=2")
    assert code == 0 and "= 3.142 * π" in out and cli_rows(out, "∂y/∂π ")[0].endswith("3.142")


def test_ascii_names_that_would_collide_are_refused(capsys):
    report = explain(named(lambda a, b: a * b, ["α", "alpha"]), 2.0, 3.0)
    assert "∂y/∂α" in report.text()
    with pytest.raises(ValueError, match="'alpha' and 'α'|'α' and 'alpha'"):
        report.tables(ascii=True)
    code, _, err = cli(capsys, "α * alpha", "--at", "α=2", "alpha=3", "--ascii")
    assert code == 2 and "rename one" in err


def test_matmul_operator(capsys):
    a, x = onp.array([[1.0, 2.0], [3.0, 4.0]]), onp.array([1.0, -1.0])
    fun = Expression("sum(A @ x)").function(["A", "x"])
    # d sum(A x) / dx = A^T 1, d / dA = 1 x^T
    assert [central(lambda *t: fun(a, onp.array(t)), x.tolist(), i) for i in range(2)] == (
        pytest.approx(a.sum(axis=0).tolist())
    )
    code, out, err = cli(capsys, "sum(A @ x)", "--at", "A=[[1, 2], [3, 4]]", "x=[1, -1]")
    assert code == 0, err
    assert "= A @ x" in out and "= f64[2,2] @ f64[2]" in out
    assert cli_rows(out, "∂y/∂x ")[0].endswith("= [4, 6]")
    assert "f64[2,2] min=-1 mean=0 max=1" in cli_rows(out, "∂y/∂A ")[0]
    code, out, _ = cli(capsys, "x @ x", "--at", "x=[1, 2]")  # d x.x / dx = 2x
    assert code == 0 and cli_rows(out, "∂y/∂x ")[0].endswith("= [2, 4]")
    # a (3, 1) @ (1, 3) product has 9 elements: refused before it is computed
    code, _, err = cli(
        capsys, "A @ B", "--at", "A=[[1], [2], [3]]", "B=[[1, 2, 3]]", "--max-elements", "8"
    )
    assert code == 2 and "this operation would create 9 elements" in err
    # a scalar operand, mismatched shapes: one clear line
    for argv in [["x @ 2", "--at", "x=[1, 2]"], ["x @ A", "--at", "x=[1, 2]", "A=[[1, 2, 3]]"]]:
        code, out, err = cli(capsys, *argv)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "'@' failed: ValueError: matmul" in err and "(column 1)" in err
    with pytest.raises(ExpressionError, match="'@' failed"):  # the parser's own error type
        Expression("x @ 2").function(["x"])(onp.float64(1.5))


ZERO_CALLS = {
    "sign": "sign(x)",
    "floor": "floor(x)",
    "ceil": "ceil(x)",
    "round": "round(x)",
    "around": "around(x)",
    "trunc": "trunc(x)",
    "rint": "rint(x)",
    "fix": "fix(x)",
    "floor_divide": "floor_divide(x, 2)",
    "heaviside": "heaviside(x, 0.5)",
    "greater": "greater(x, 1)",
    "less_equal": "less_equal(x, 1)",
    "isfinite": "isfinite(x)",
    "signbit": "signbit(x)",
}


@pytest.mark.parametrize("name", sorted(ZERO_CALLS))
def test_piecewise_constant_functions_have_zero_derivative(capsys, name):
    assert name in ZERO_DERIVATIVE
    source = f"x**2 + 3 * {ZERO_CALLS[name]}"
    fun = Expression(source).function(["x"])
    x = 2.3  # away from every jump
    assert central(fun, [x], 0) == pytest.approx(2 * x, rel=1e-6)
    code, out, err = cli(capsys, source, "--at", f"x={x}")
    assert code == 0, err
    (step,) = [r for r in out.splitlines() if f"= {ZERO_CALLS[name]}" in r]
    v = step.split()[0]
    assert step.endswith(f"∂{v}/∂x = 0 (piecewise constant)")
    (contribution,) = [r for r in out.splitlines() if f"x̄ += {barred(v)}·∂{v}/∂x" in r]
    assert "= 3·0 = 0" in contribution  # its zero contribution to x̄
    assert float(cli_rows(out, "∂y/∂x ")[0].split()[-1]) == pytest.approx(2 * x)


def test_every_zero_derivative_function_is_callable_on_the_command_line(capsys):
    for name in ZERO_DERIVATIVE:
        code, out, err = cli(capsys, f"x + sum({name}(x))", "--at", "x=[0.5, 2.5]")
        if code == 0:
            assert cli_rows(out, "∂y/∂x ")[0].endswith("= [1, 1]"), name
        else:  # e.g. eye and identity need an integer size: one clear line
            assert code == 2 and err.count("\n") == 1 and f"{name} failed" in err, (name, err)


def test_zero_derivative_arrays_show_zero_partials(capsys):
    code, out, err = cli(capsys, "sum(x * floor(x))", "--at", "x=[1.5, 2.5]")
    assert code == 0, err
    assert "∂v1/∂x = 0 (piecewise constant)" in out
    assert cli_rows(out, "∂y/∂x ")[0].endswith("= [1, 2]")  # floor(x), the other term is 0


def test_abs_and_pi_labels():
    report = explain(lambda x: np.abs(x) * np.pi + np.absolute(-x), -2.0)
    text = report.tables()[0].text()  # the evaluation trace (Source lines quotes the code)
    assert "= abs(x)" in text and "= abs(v2)" in text and "absolute" not in text
    assert "= v1 * π" in text and "= 2 * 3.142" in text
    assert report.gradient == pytest.approx((-math.pi - 1,))  # d/dx (|x| π + |-x|) at -2
    assert "= v1 * pi" in explain(lambda x: np.abs(x) * np.pi, -2.0, ascii=True).text()


# ----------------------------------------------------------------------------- ASCII


def test_ascii_notation_is_the_unicode_one_spelled_out():
    fun = named(model, ["x1", "x2"])
    unicode, plain = explain(fun, 2.0, 5.0), explain(fun, 2.0, 5.0, ascii=True)
    assert unicode.ascii is None and plain.ascii is True
    for rendering in ["text", "markdown", "dot", "mermaid", "html"]:
        out = plain.render(rendering)
        assert out.isascii(), rendering
        if rendering in ("dot", "mermaid"):  # no columns to align: the same text, spelled out
            assert out == to_ascii(unicode.render(rendering))
    text = plain.text()
    for token in ["x1_bar", "x1_dot", "dv1/dx1", "v3_bar*dv3/dv2", "y_bar = 1", "dy/dx2"]:
        assert token in text, token
    assert to_ascii("ẋ1 v̄12 ∂α/∂Δ 2·3 π é ☃") == "x1_dot v12_bar dalpha/dDelta 2*3 pi e u2603"
    page = plain.html()
    assert "x1_bar" in page and "\\u2202" not in page and "\\u0304" not in page


def test_text_falls_back_to_ascii_when_stdout_cannot_encode_it(monkeypatch):
    import io

    report = explain(lambda x1, x2: x1 * x2, 2.0, 5.0)
    narrow = io.TextIOWrapper(io.BytesIO(), encoding="cp1252")
    monkeypatch.setattr(sys, "stdout", narrow)
    assert report.text().isascii() and "x1_bar" in report.text()
    report.ascii = False
    assert "x̄1" in report.text()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    report.ascii = None
    assert "x̄1" in str(report)


def run_narrow(env_extra, *args):
    src = str(Path(chainrule.__file__).parents[1])  # the chainrule these tests import
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PYTHONUTF8", None)
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, *args], capture_output=True, timeout=120, env=env, check=False
    )


NARROW = [{"PYTHONIOENCODING": "cp1252"}, {"LC_ALL": "C", "PYTHONIOENCODING": "ascii"}]


@pytest.mark.parametrize("env", NARROW, ids=["cp1252", "C-ascii"])
def test_cli_on_a_narrow_terminal(env):
    done = run_narrow(env, "-m", "chainrule", "explain")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("ascii")  # nothing outside ASCII
    assert "dy/dx1  = x1_bar  = 5.5" in out and "x2_bar = -0.284 + 2 = 1.716" in out
    done = run_narrow(env, "-m", "chainrule", "explain", "α * y", "--at", "α=2", "y=3")
    assert done.returncode == 0, done.stderr
    assert "df/dalpha  = alpha_bar  = 3" in done.stdout.decode("ascii")


@pytest.mark.parametrize("env", NARROW, ids=["cp1252", "C-ascii"])
def test_print_report_on_a_narrow_terminal(env):
    code = (
        "import chainrule.numpy as np\n"
        "from chainrule import explain\n"
        "print(explain(lambda x1, x2: np.log(x1) + x1 * x2 - np.sin(x2), 2.0, 5.0))\n"
    )
    done = run_narrow(env, "-c", code)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("ascii")
    assert "dy/dx2  = x2_bar  = 1.716" in out and "v5_bar = y_bar = 1" in out


def test_ascii_option_on_the_command_line(capsys, tmp_path):
    code, out, _ = cli(capsys, "--ascii")
    assert code == 0 and out.isascii() and "dy/dx1  = x1_bar  = 5.5" in out
    target = tmp_path / "seed.html"
    code, _, err = cli(capsys, "--ascii", "-o", str(target))
    assert code == 0 and "wrote html" in err
    assert target.read_text(encoding="utf-8").isascii()
    code, out, _ = cli(capsys, "log(x1) + x1*x2 - sin(x2)", "--at", "x1=2", "x2=5", "--asc")
    assert code == 0 and "x1_bar" in out  # an abbreviation argparse accepts
