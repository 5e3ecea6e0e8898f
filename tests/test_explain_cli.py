"""python -m chainrule explain: the seed example, formats, and a parser that refuses code."""

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chainrule
from chainrule.__main__ import main
from chainrule.explain._expr import Expression, ExpressionError


def run(capsys, *argv):
    code = main(["explain", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_no_expression_explains_the_seed_example(capsys):
    code, out, _ = run(capsys)
    assert code == 0
    assert out.startswith("chainrule.explain: y = log(x1) + x1*x2 - sin(x2) at x1 = 2, x2 = 5")
    for text in [
        "= log(2)",
        "= 0.693",
        "= 10.693",
        "= 11.652",
        "= -0.959",
        "x̄2 = -0.284 + 2 = 1.716",
        "∂y/∂x1  = x̄1     = 5.5",
    ]:
        assert text in out, text
    code, explicit, _ = run(capsys, "log(x1) + x1*x2 - sin(x2)", "--at", "x1=2", "x2=5")
    assert explicit == out


def test_module_entry_point_runs():
    src = str(Path(chainrule.__file__).parents[1])  # the chainrule these tests import
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-m", "chainrule", "explain", "x*x", "--at", "x=3"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "∂y/∂x  = x̄      = 6" in done.stdout


@pytest.mark.parametrize(
    "fmt, start",
    [
        ("markdown", "## chainrule.explain"),
        ("dot", "digraph explain {"),
        ("mermaid", "flowchart LR"),
        ("html", "<!DOCTYPE html>"),
    ],
)
def test_formats(capsys, fmt, start):
    code, out, _ = run(capsys, "--format", fmt)
    assert code == 0 and out.startswith(start)


def test_output_file_and_format_from_suffix(capsys, tmp_path):
    target = tmp_path / "seed.html"
    code, out, err = run(capsys, "-o", str(target))
    assert code == 0 and out == "" and "wrote html" in err
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_svg_without_graphviz(capsys, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    code, out, err = run(capsys, "--format", "svg")
    assert code == 1 and out == "" and "apt-get install graphviz" in err


def test_arrays_wrt_and_constants(capsys):
    code, out, _ = run(capsys, "sum(x * exp(-x)) + pi", "--at", "x=[0, 1, 2]")
    assert code == 0 and "= [1, 0, -0.135]" in out  # d/dx x e^-x = (1 - x) e^-x
    code, out, _ = run(capsys, "a*b", "--at", "a=2", "b=7", "--wrt", "b")
    assert code == 0 and "Tangents with respect to b" in out and "y\u0307   = v\u03071" in out


# (expression, its value at x = [1, 2, 3] or A = [[2, 1], [1, 3]], the gradient by hand)
VECTOR_CALLS = {
    "norm(x)": (np.sqrt(14), np.array([1, 2, 3]) / np.sqrt(14)),
    "sum(x)": (6.0, np.ones(3)),
    "mean(x)": (2.0, np.full(3, 1 / 3)),
    "max(x)": (3.0, np.array([0.0, 0.0, 1.0])),
    "min(x)": (1.0, np.array([1.0, 0.0, 0.0])),
    "prod(x)": (6.0, np.array([6.0, 3.0, 2.0])),
    "dot(x, x)": (14.0, np.array([2.0, 4.0, 6.0])),
    "std(x)": (np.sqrt(2 / 3), (np.array([1, 2, 3]) - 2) / (3 * np.sqrt(2 / 3))),
    "vector_norm(x)": (np.sqrt(14), np.array([1, 2, 3]) / np.sqrt(14)),
    "det(A)": (5.0, np.array([[3.0, -1.0], [-1.0, 2.0]])),  # the cofactors
    "sum(inv(A))": (0.6, -np.outer([0.4, 0.2], [0.4, 0.2])),  # -inv(A)ᵀ 1 1ᵀ inv(A)ᵀ
    "norm(A)": (np.sqrt(15), np.array([[2.0, 1.0], [1.0, 3.0]]) / np.sqrt(15)),
}


@pytest.mark.parametrize("source", VECTOR_CALLS)
def test_reductions_and_linear_algebra_on_arrays_given_with_at(capsys, source):
    """--at x=[1,2,3] (issue 35): the value and gradient the report gives are right."""
    from chainrule.explain._expr import Expression

    value, gradient = VECTOR_CALLS[source]
    name = "A" if "A" in source else "x"
    point = [[2.0, 1.0], [1.0, 3.0]] if name == "A" else [1.0, 2.0, 3.0]
    report = chainrule.explain(Expression(source).function([name]), np.array(point))
    assert report.value == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(report.gradient[0], gradient, rtol=1e-12, atol=1e-15)
    code, out, err = run(capsys, source, "--at", f"{name}={point}".replace(" ", ""))
    assert code == 0 and err == "" and "Gradient" in out


def test_an_unknown_function_names_what_the_expression_may_call(capsys):
    code, _, err = run(capsys, "normm(x)", "--at", "x=[1,2,3]")
    assert code == 2 and err.count("\n") == 1
    for part in ("reductions (sum, mean, max", "linear algebra (norm, det, inv, solve",
                 "python -m chainrule explain --functions` lists all", "similar:"):
        assert part in err
    code, out, err = run(capsys, "--functions")
    assert code == 0 and err == ""
    lines = dict(line.split(": ", 1) for line in out.splitlines())
    assert set(lines) >= {"elementwise (71)", "products (9)", "shapes (56)"}  # divmod is 71st
    listed = " ".join(lines.values()).split()
    from chainrule.explain._expr import FUNCTIONS

    assert sorted(listed) == sorted(FUNCTIONS)
    for name in ("norm", "sum", "mean", "max", "dot", "det", "inv", "solve", "floor"):
        assert name in listed


@pytest.mark.parametrize(
    "argv, message",
    [
        (["x*y", "--at", "x=1"], "no value for y: add --at y=1.0"),
        (["x", "--at", "x=1", "z=2"], "does not use"),
        (["x", "--at", "x"], "NAME=VALUE"),
        (["x", "--at", "x=abc"], "must be a number"),
        (["2 + 3"], "no variables"),
        (["x", "--at", "x=1", "--wrt", "q"], "names no float input"),
    ],
)
def test_bad_arguments(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and message in err


@pytest.mark.parametrize(
    "source, problem, column",
    [
        ("__import__('os').system('ls')", "attribute access", 17),
        ("().__class__.__bases__", "attribute access", 13),
        ("x1 +* 2", "syntax error", 5),
        ("sin(x, out=y)", "keyword arguments", 12),
        ("x[0]", "indexing", 2),
        ("(lambda: 1)()", "only functions called by their plain name", 2),
        ("open('f')", "unknown function 'open'", 1),
        ("eval('1')", "unknown function 'eval'", 1),
        ("x if x else 1", "'if ... else'", 1),
        ("x // 2", "'//'", 1),
        ("x ^ 2", "use ** for powers", 1),
        ("'a' * x", "not str", 1),
        ("1e999 * x", "too large", 1),
        ("sin", "sin is a function", 1),
        ("_x + 1", "not allowed", 1),
        ("", "empty", 1),
    ],
)
def test_parser_errors_point_at_the_problem(source, problem, column):
    with pytest.raises(ExpressionError) as info:
        Expression(source)
    err = info.value
    assert problem in str(err)
    assert err.column + 1 == column, str(err)
    lines = str(err).splitlines()
    assert lines[-1].index("^") == 2 + err.column and lines[-2] == "  " + source


def test_the_error_is_one_line_marking_the_column(capsys):
    code, _, err = run(capsys, "x1 + y.real", "--at", "x1=1")
    assert code == 2
    assert err == (
        "chainrule explain: error: attribute access ('.') not allowed in an expression "
        "(column 7): x1 + y>>>.real\n"
    )


@pytest.mark.parametrize(
    "source",
    [
        "(" * 300 + "x" + ")" * 300,
        "-" * 5000 + "x",
        "sin(" * 100 + "x" + ")" * 100,
        "x" + "+x" * 3000,
        "9" * 5000 + "*x",
        "x" * 5000,
        "\x00x",
    ],
)
def test_large_and_deep_inputs_fail_cleanly(source):
    with pytest.raises(ExpressionError):
        Expression(source)


def test_huge_powers_do_not_hang():
    f = Expression("10**10**10 * x").function(["x"])
    with pytest.warns(RuntimeWarning, match="overflow"):
        assert f(1.0) == float("inf")


def test_fuzzed_strings_only_raise_expression_errors():
    rng = random.Random(1234)
    alphabet = "x1y2 +-*/().,[]{}'\"_abcdefsinlogexp=:;!@#$%^&~`\\<>|?0123456789e"
    accepted = 0
    for _ in range(400):
        source = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        try:
            expr = Expression(source)
        except ExpressionError as err:
            assert "^" in str(err)
            continue
        accepted += 1
        assert all(name.isidentifier() and not name.startswith("_") for name in expr.variables)
    assert accepted < 400


def gradient_line(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(f"∂y/∂{name} "))


def central_difference(source: str, x: float, h: float = 1e-6) -> float:
    f = Expression(source).function(["x"])
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("argv", [["-x**3", "--at", "x=2"], ["--at", "x=2", "--", "-x**3"]])
def test_an_expression_may_start_with_minus(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    # d/dx -x^3 = -3x^2 = -12 at x = 2
    assert central_difference("-x**3", 2.0) == pytest.approx(-12, rel=1e-6)
    assert gradient_line(out, "x").endswith("= -12")
    assert out.startswith("chainrule.explain: y = -x**3 at x = 2")


@pytest.mark.parametrize("terms", [65, 999])
def test_a_flat_sum_is_not_deep(capsys, terms):
    source = "x" + " + x" * (terms - 1) if terms < 100 else "x" + "+x" * (terms - 1)
    code, out, err = run(capsys, source, "--at", "x=2")
    assert code == 0, err
    assert central_difference(source, 2.0) == pytest.approx(terms, rel=1e-6)
    assert gradient_line(out, "x").endswith(f"= {terms}")


def test_real_nesting_is_still_capped(capsys):
    code, _, err = run(capsys, "sin(" * 65 + "x" + ")" * 65, "--at", "x=1")
    assert code == 2 and "nested more than 64 levels" in err
    code, _, _ = run(capsys, "sin(" * 63 + "x" + ")" * 63, "--at", "x=1")
    assert code == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["x", "--at", "x=1", "-o", "{tmp}"], "Is a directory"),
        (["x", "--at", "x=1", "-o", "{tmp}/missing/y.md"], "No such file or directory"),
        (["x", "--at", "x=1", "-o", "/dev/full"], "No space left on device"),
        (["x", "--at", "x=1", "--digits", "-1"], "--digits must be between 0 and 15"),
        (["x", "--at", "x=1", "--digits", "400"], "--digits must be between 0 and 15"),
        (["x", "--at", "x=None"], "must be a number"),
        (["x", "--at", "x=True"], "must be a number"),
        (["x", "--at", "x=[1, None]"], "must be a number"),
        (["x", "--at", "x=[[1],[2,3]]"], "of equal lengths"),
        (["x*y", "--at", "x=1", "y=2", "x=3"], "--at gives x twice"),
        (["take(x, 5)", "--at", "x=[1, 2]"], "take failed: IndexError"),
        (["reshape(x, 3)", "--at", "x=[1, 2]"], "reshape failed: TypeError"),
        (["x", "--at", "x=1", "--digits", "two"], "invalid int value"),
    ],
)
def test_every_failure_is_one_line_with_status_2(capsys, tmp_path, argv, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and message in err, err
    assert err.startswith(("chainrule explain: error: ", "python -m chainrule explain: error: "))


@pytest.mark.parametrize(
    "source",
    [
        "repeat(x, 1e8)",
        "repeat(repeat(x, 1e4), 1e4)",
        "outer(repeat(x, 4000), repeat(x, 4000))",
        "kron(repeat(x, 4000), repeat(x, 4000))",
        "outer(repeat(x, 4000), x) * repeat(x, 4000)",  # (4000, 1) * (4000,) broadcasts
        "matmul(outer(repeat(x, 4000), x), outer(x, repeat(x, 4000)))",
        "diag(repeat(x, 4000))",
        "meshgrid(repeat(x, 4000), repeat(x, 4000))",
    ],
)
def test_the_size_cap_refuses_before_allocating(capsys, source):
    import tracemalloc

    tracemalloc.start()
    try:
        code, out, err = run(capsys, source, "--at", "x=1")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 2 and out == "" and "more than the limit of 10,000,000" in err, err
    assert "--max-elements" in err
    assert peak < 5e6, peak  # a refused call allocated nothing like its 80+ MB result


def test_the_size_cap_is_settable(capsys):
    argv = ["sum(repeat(x, 100))", "--at", "x=3"]
    code, out, err = run(capsys, *argv, "--max-elements", "100")
    assert code == 0, err
    # sum of 100 copies of x: the derivative is 100
    assert central_difference("sum(repeat(x, 100))", 3.0) == pytest.approx(100, rel=1e-6)
    assert gradient_line(out, "x").endswith("= 100")
    code, out, err = run(capsys, *argv, "--max-elements", "99")
    assert code == 2 and "repeat would create 100 elements, more than the limit of 99" in err
    code, _, err = run(capsys, "sum(x)", "--at", "x=[1, 2, 3]", "--max-elements", "2")
    assert code == 2 and "--at x:" in err


def test_the_help_documents_the_limits(capsys):
    assert main(["explain", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--max-elements N" in out and "10,000,000" in out and "before it allocates" in out
    assert "exit status 2" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["x<script>", "--at", "x=1"],
        ["x", "--at", "<script>alert(1)</script>=1"],
        ["x", "--at", "x=<script>"],
        ["x", "--at", "x=1", "--wrt", "<script>"],
    ],
)
def test_markdown_output_cannot_carry_html(capsys, argv):
    code, out, err = run(capsys, "--format", "markdown", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    # the only names and values that reach the report are identifiers and numbers
    code, out, _ = run(capsys, "--format", "markdown", "x_script * y", "--at", "x_script=1", "y=2")
    assert code == 0 and "<" not in out and ">" not in out


def test_division_by_zero_gives_numpys_inf_with_its_warning(capsys):
    code, out, err = run(capsys, "x / 0", "--at", "x=1")
    assert code == 0 and "= inf" in out
    assert err.startswith("chainrule explain: warning: divide by zero"), err
