"""A fuzz of ``python -m chainrule explain``: no input lets an exception escape or runs code.

Every whitelisted function is called with many argument patterns (scalars, arrays, empty
arrays, nan/inf, negative and huge numbers, wrong arity, keywords) and the CLI is fed hostile
``--at`` values. Every run must either exit 0 with output, or exit 2 with exactly one line on
stderr that starts with the CLI's prefix. Deterministic (seeded) and in-process, except a few
subprocess runs that check the real exit status and stderr.
"""

import builtins
import os
import random
import subprocess
import sys
import types
from pathlib import Path

import pytest

import chainrule
from chainrule.__main__ import main
from chainrule.explain._expr import FUNCTIONS

ERROR = "chainrule explain: error: "
# the CLI's own lines on stderr; a usage error comes from argparse under the program's name
OWN_LINES = ("chainrule explain: ", "python -m chainrule explain: error: ")

ARGUMENT_PATTERNS = [
    "x",
    "x, x",
    "x, 2",
    "x, -1",
    "x, 0.5",
    "x, 0",
    "x, 1e9",
    "x, 1e300",
    "x, -1e300",
    "x, x, x",
    "x, x, x, x, x",
    "2, x",
    "1e9, x",
    "x, 1, 1e8",
    "x, axis=0",
]
VALUES = ["2", "-3.5", "0", "[1, 2, 3]", "[]", "[[1, 2], [3, 4]]", "[nan, inf]", "1e300", "-1e300"]
HOSTILE_AT = [
    "None",
    "nan",
    "inf",
    "-inf",
    "",
    "[]",
    "[[1],[2,3]]",
    "1e400",
    "__import__",
    "__import__('os').system('echo hacked')",
    "True",
    "'text'",
    "1j",
    "{1: 2}",
    "[1, None]",
    "x",
    "é",
    "١٢",  # Arabic-Indic digits
    "[" * 200 + "]" * 200,
    "9" * 5000,
]


def run(capsys, *argv):
    code = main(["explain", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_clean(code, out, err, argv):
    lines = err.splitlines()
    if code == 0:
        assert out, argv
        assert all(line.startswith(OWN_LINES) for line in lines), (argv, err)
    else:
        assert code == 2, (argv, code, err)
        assert out == "", argv
        assert len(lines) == 1 and lines[0].startswith(OWN_LINES), (argv, err)


@pytest.fixture
def canary(monkeypatch):
    """Records every exec, eval, shell command or new process while the CLI runs."""
    called = []
    targets = [(builtins, "exec"), (builtins, "eval"), (os, "system"), (os, "popen")]
    targets.append((subprocess, "Popen"))
    for owner, name in targets:
        real = getattr(owner, name)

        def spy(*a, _real=real, _name=name, **k):
            if not _imports_own_module(_name, a):
                called.append((_name, a[:1]))
            return _real(*a, **k)

        monkeypatch.setattr(owner, name, spy)
    return called


def _imports_own_module(name: str, args: tuple) -> bool:
    """Whether an exec is Python's import of one of chainrule's own modules (the CLI
    imports some on first use: the first test to run would see them)."""
    code = args[0] if args else None
    return (name == "exec" and isinstance(code, types.CodeType) and code.co_name == "<module>"
            and code.co_filename.startswith(os.path.dirname(chainrule.__file__)))


def cases(seed: int = 16):
    rng = random.Random(seed)
    for name in sorted(FUNCTIONS):
        for pattern in ARGUMENT_PATTERNS:
            value = rng.choice(VALUES)
            wrap = rng.random() < 0.3  # a reduction on top reaches the backward pass with arrays
            source = f"sum({name}({pattern}))" if wrap else f"{name}({pattern})"
            yield [source, "--at", f"x={value}"]


def test_every_function_and_argument_pattern_exits_cleanly(capsys):
    outcomes = {0: 0, 2: 0}
    for argv in cases():
        code, out, err = run(capsys, *argv)
        assert_clean(code, out, err, argv)
        outcomes[code] += 1
    # both outcomes are common: the fuzz exercises the report as well as the errors
    assert outcomes[0] > 300 and outcomes[2] > 300, outcomes


@pytest.mark.parametrize("value", HOSTILE_AT)
@pytest.mark.parametrize("source", ["x * sin(x)", "sum(x)", "x"])
def test_hostile_at_values_exit_cleanly(capsys, canary, source, value):
    code, out, err = run(capsys, source, "--at", f"x={value}")
    assert_clean(code, out, err, value)
    assert canary == []  # nothing ran
    if value in ("None", "", "__import__", "True", "'text'", "1j", "{1: 2}", "[1, None]", "x"):
        assert code == 2 and "must be a number" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["sin", "--at", "sin=1"],  # a name shadowing a function
        ["sin(sin)", "--at", "sin=1"],
        ["pi * x", "--at", "pi=1", "x=2"],  # pi is a constant, not a variable
        ["é + x", "--at", "é=1", "x=2"],
        ["x", "--at", "=1"],
        ["x", "--at", "x==1"],
        ["x", "--at", "<script>=1"],
        ["x", "--wrt", "__import__", "--at", "x=1"],
        ["x", "--format", "html", "--at", "x=1", "--digits", "-1"],
        ["x", "--max-elements", "0", "--at", "x=1"],
        ["x", "--digits", "abc", "--at", "x=1"],
    ],
)
def test_hostile_names_and_options_exit_cleanly(capsys, canary, argv):
    code, out, err = run(capsys, *argv)
    assert_clean(code, out, err, argv)
    assert canary == []


def _subprocess(*argv):
    src = str(Path(chainrule.__file__).parents[1])  # the chainrule these tests import
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "chainrule", "explain", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["reshape(x, 3)", "--at", "x=[1, 2]"], "TypeError"),
        (["take(x, 5)", "--at", "x=[1, 2]"], "IndexError"),
        (["repeat(y, 1e8)", "--at", "y=1"], "more than the limit of 10,000,000"),
        (["x", "--at", "x=None"], "must be a number"),
        (["x", "--at", "x=1", "-o", "/dev/full"], "cannot write /dev/full"),
    ],
)
def test_real_exit_status_and_stderr(argv, message):
    done = _subprocess(*argv)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(ERROR), done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
