"""python -m chainrule.coverage: the table is read from the registries and the specs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import chainrule.numpy as np
from chainrule import coverage
from chainrule.core import primitive_jvps, primitive_vjps
from chainrule.numpy import numpy_wrapper

SPECS = Path(coverage.__file__).parent / "_specs"


@pytest.fixture(scope="module")
def report():
    return coverage.collect(SPECS)


def _row(report, qualname):
    (row,) = [r for r in report.rows if r.qualname == qualname]
    return row


def test_default_specs_dir_is_the_repos():
    assert coverage.DEFAULT_SPECS.resolve() == SPECS.resolve()


def test_rows_come_from_the_registries(report):
    add = _row(report, "numpy.add")
    assert (add.vjp, add.jvp, add.kind) == (True, True, "primitive")
    assert add.orders == {"fwd": 2, "rev": 2} and add.tested() == "2"
    for row in report.rows:
        if row.kind == "composite":
            assert row.vjp is row.jvp is None and not row.primitives
            continue
        assert row.vjp == all(p in primitive_vjps for p in row.primitives)
        assert row.jvp == all(p in primitive_jvps for p in row.primitives)
    names = {r.qualname for r in report.rows}
    assert "numpy.linalg.det" in names and "numpy.fft.fft" in names
    assert "numpy.sign" not in names  # non-differentiable: a notrace primitive


def test_aliases_share_tested_orders(report):
    # spec_core tests np.abs under the name "absolute": same primitive, same orders
    assert _row(report, "numpy.abs").orders == _row(report, "numpy.absolute").orders != {}


def test_wrappers_resolve_to_the_primitives_they_call(report):
    concatenate = _row(report, "numpy.concatenate")
    assert concatenate.kind == "wrapper"
    assert concatenate.primitives == [numpy_wrapper.concatenate_args]
    assert numpy_wrapper.concatenate_args in coverage.primitives_reached(np.vstack)
    assert _row(report, "numpy.indexing").kind == "method"


def test_popped_rule_shows_as_missing_and_as_a_tier_gap():
    rule = primitive_jvps.pop(np.sin)
    try:
        report = coverage.collect(None)
    finally:
        primitive_jvps[np.sin] = rule
    sin = _row(report, "numpy.sin")
    assert (sin.vjp, sin.jvp) == (True, False)
    gaps = {(g.tier, g.namespace, g.name): g.reason for g in report.gaps}
    assert gaps[(1, "numpy", "sin")] == "no JVP rule"
    assert not report.specs_read and sin.tested() == "-"


def test_totals_add_up(report):
    totals = report.totals()
    assert totals["functions"] == len(report.rows)
    assert totals["with VJP"] == sum(r.vjp is True for r in report.rows)
    assert totals["with both"] <= min(totals["with VJP"], totals["with JVP"])
    assert totals["non-differentiable, accepting traced values"] >= len(
        "sign floor ceil argmax argmin argsort isclose allclose".split())
    for tier, (done, total) in report.tiers.items():
        gaps = [g for g in report.gaps if g.tier == tier]
        collapsed = sum(int(g.reason.split()[0]) - 1 for g in gaps if g.name == "*")
        assert done + len(gaps) + collapsed == total


def test_tier_names_exist_in_numpy():
    import numpy as onp

    for tier in (coverage.TIER1, coverage.TIER2):
        for name in tier["numpy"].split():
            assert name in coverage.METHODS or name in ("pow", "trapezoid", "permute_dims",
                                                        "asin", "acos", "atan", "atan2",
                                                        "asinh", "acosh", "atanh") \
                or hasattr(onp, name), name


def test_tier_status_reasons(monkeypatch):
    monkeypatch.setattr(coverage, "TIER1", {"numpy": "sin sign unravel_index no_such_fn eye"})
    monkeypatch.setattr(coverage, "TIER2", {"numpy": "piecewise"})
    report = coverage.collect(None)
    gaps = {g.name: g.reason for g in report.gaps}
    assert "sin" not in gaps and "sign" not in gaps and "eye" not in gaps
    assert gaps["unravel_index"].startswith("not wrapped")
    assert "no_such_fn" not in gaps  # not in this NumPy: not counted
    assert report.tiers[1] == (3, 4)
    if "piecewise" in gaps:
        assert "optional" in gaps["piecewise"]


def test_unimportable_namespace_is_one_gap(monkeypatch):
    monkeypatch.setattr(coverage, "NAMESPACES",
                        coverage.NAMESPACES + [("scipy.fake", "chainrule.no_such_module")])
    monkeypatch.setattr(coverage, "TIER1", {"scipy.fake": "a b c"})
    monkeypatch.setattr(coverage, "TIER2", {})
    report = coverage.collect(None)
    assert [(g.name, g.reason) for g in report.gaps] == [
        ("*", "3 functions: chainrule.scipy.fake is not importable")]
    assert report.tiers[1] == (0, 3)
    assert any("chainrule.no_such_module not importable" in n for n in report.notes)


def _write_specs(directory: Path) -> Path:
    specs = directory / "myspecs"
    specs.mkdir()
    (specs / "__init__.py").write_text(textwrap.dedent("""
        from dataclasses import dataclass

        @dataclass
        class Case:
            name: str
            fun: object
            order: int = 2
            modes: tuple = ("fwd", "rev")
    """))
    (specs / "spec_one.py").write_text(textwrap.dedent("""
        import chainrule.numpy as np
        from . import Case

        CASES = [Case("sin", np.sin, order=3, modes=("rev",)),
                 Case("sin", np.sin, order=1, modes=("fwd",)),
                 Case("linalg.det", np.linalg.det, order=1),
                 Case("array_getitem", None, order=1),
                 Case("no_such_function", None)]
    """))
    (specs / "spec_broken.py").write_text("raise RuntimeError('half-written spec')\n")
    (specs / "helpers.py").write_text("raise RuntimeError('not a spec module')\n")
    return specs


def test_specs_directory_can_be_chosen(tmp_path):
    report = coverage.collect(_write_specs(tmp_path))
    sin = _row(report, "numpy.sin")
    assert sin.orders == {"rev": 3, "fwd": 1} and sin.tested() == "fwd 1, rev 3"
    assert _row(report, "numpy.linalg.det").orders == {"fwd": 1, "rev": 1}
    assert _row(report, "numpy.add").orders == {}
    assert _row(report, "numpy.indexing").tested() == "1"
    notes = "\n".join(report.notes)
    assert "spec_broken: RuntimeError: half-written spec" in notes
    assert "no_such_function" in notes and "helpers" not in notes


def test_markdown_and_text_output(tmp_path, capsys):
    assert coverage.main(["--markdown", "--specs", str(_write_specs(tmp_path))]) == 0
    md = capsys.readouterr().out
    assert ("| function | VJP | JVP | batch | sparsity | taylor | tested orders | kind |"
            in md)
    assert "| `numpy.sin` | yes | yes | yes | yes | recurrence | fwd 1, rev 3 | primitive |" in md
    assert "| `numpy.reshape` | yes | yes | yes | yes | linear |" in md
    assert "| `numpy.matmul` | yes | yes | yes | yes | multilinear |" in md
    assert "| `numpy.convolve` | yes | yes | no |" in md  # runs once per example under vmap
    assert "- with VJP: " in md and "Tier 1 gaps" in md and "- Tier 2: " in md

    report = coverage.collect(None)
    text = report.text()
    header, rule = text.splitlines()[2:4]
    assert header.split() == ["function", "VJP", "JVP", "batch", "sparsity", "taylor", "tested",
                              "orders", "kind"]
    assert set(rule.replace(" ", "")) == {"-"}
    assert "tested orders: spec tables not found" in text


def test_bad_specs_option_is_an_error(tmp_path):
    with pytest.raises(SystemExit):
        coverage.main(["--specs", str(tmp_path / "missing")])
    with pytest.raises(FileNotFoundError, match="__init__.py"):
        coverage.load_cases(tmp_path)


def test_module_runs_as_a_script():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    command = [sys.executable, "-m", "chainrule.coverage", "--no-specs"]
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
    assert "numpy.add" in out and "Totals:" in out and "Tier 1:" in out


def test_primitives_reached_follows_globals_closures_and_module_attributes():
    def make():
        cos = np.cos
        return lambda x: cos(x) + np.sin(x) * 2.0

    reached = coverage.primitives_reached(make())
    assert np.cos in reached and np.sin in reached and np.multiply not in reached
    row = coverage.Row("numpy", "composite_example", "composite", [])
    assert (row.vjp, row.jvp) == (None, None) and coverage._rule_gap(row) == ""
