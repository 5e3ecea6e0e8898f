"""The autograd-compatibility harness's own logic (tests/compat), without network."""

import importlib.util
import io
import math
import os
import subprocess
import sys
import tarfile
import textwrap
import types
from pathlib import Path

import pytest

import chainrule
import chainrule.numpy.linalg
from compat import autograd_alias, examples, run, sdist
from compat.divergences import DIVERGENCES, divergences_markdown

REPO = Path(__file__).resolve().parent.parent
ALIAS_PATH = os.pathsep.join([str(REPO / "tests" / "compat"), str(REPO / "src")])


# --- the import alias ---------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("autograd", "chainrule"),
    ("autograd.numpy.linalg", "chainrule.numpy.linalg"),
    ("autograd.scipy.stats.norm", "chainrule.scipy.stats.norm"),
    ("autogradx", None), ("numpy", None), ("my.autograd", None),
])
def test_alias_maps_module_names(name, expected):
    assert autograd_alias.target_name(name) == expected


def test_alias_loads_the_chainrule_module_object_itself():
    finder = autograd_alias.AutogradAlias()  # not installed: this process keeps real imports
    assert finder.find_spec("numpy.linalg") is None
    spec = finder.find_spec("autograd.numpy.linalg")
    assert importlib.util.module_from_spec(spec) is chainrule.numpy.linalg
    with pytest.raises(ModuleNotFoundError, match="autograd.no_such has no chainrule"):
        importlib.util.module_from_spec(finder.find_spec("autograd.no_such"))


def test_alias_spots_a_real_autograd_module():
    real = types.ModuleType("autograd.numpy")  # what the real package's module looks like
    loaded = {"autograd": chainrule, "autograd.numpy": real, "numpy": types.ModuleType("numpy")}
    assert autograd_alias.foreign_autograd_modules(loaded) == ["autograd.numpy"]


def test_script_runner_differentiates_autograd_code_with_this_chainrule(tmp_path):
    # autograd is installed here too: the alias must win over it
    script = tmp_path / "example.py"
    script.write_text(textwrap.dedent("""
        import autograd, autograd.numpy as np
        from autograd import grad
        print(autograd.__name__, autograd.__file__)
        print(repr(float(grad(lambda x: np.sin(x) * x ** 2)(0.7))))
    """))
    env = {**os.environ, "PYTHONPATH": ALIAS_PATH}
    out = subprocess.run([sys.executable, "-m", "autograd_alias", str(script)], check=True,
                         capture_output=True, text=True, env=env)
    name, where = out.stdout.splitlines()[0].split()
    assert name == "chainrule" and Path(where) == REPO / "src" / "chainrule" / "__init__.py"
    x = 0.7
    assert float(out.stdout.splitlines()[1]) == pytest.approx(
        math.cos(x) * x ** 2 + 2 * x * math.sin(x), rel=1e-15)  # d/dx sin(x) x^2, by hand
    assert autograd_alias.CHECK_PASSED in out.stderr


# --- reading pytest's output ----------------------------------------------------------------

def test_table_counts_what_pytest_reports(tmp_path):
    (tmp_path / "test_a.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.fixture
        def broken():
            raise RuntimeError("setup fails")

        def test_pass(): pass
        def test_fail(): assert 1 == 2
        def test_error(broken): pass
        @pytest.mark.parametrize("x", ["a b - c", "d"])
        def test_param(x): assert x == "d"
        @pytest.mark.skip(reason="not here")
        def test_skip(): pass
        @pytest.mark.xfail
        def test_xfail(): assert 0
    """))
    (tmp_path / "test_b.py").write_text("import no_such_module\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                          "--continue-on-collection-errors", "."],
                         cwd=tmp_path, capture_output=True, text=True).stdout
    per_file, per_test = run.parse_results(out)
    assert dict(per_file["test_a.py"]) == {"passed": 2, "failed": 2, "error": 1,
                                          "skipped": 1, "xfailed": 1}
    assert dict(per_file["test_b.py"]) == {"error": 1}
    assert per_test["test_a.py::test_param[a b - c]"] == "failed"
    assert per_test["test_a.py::test_param[d]"] == "passed"
    assert per_test["test_a.py::test_error"] == "error"
    table = run.format_table(per_file).splitlines()
    assert table[-1].split() == ["total", "2", "2", "2", "1"]


def test_floor_check():
    line, status = run.verdict(612, 612)
    assert status == 0 and line.endswith("floor 612: OK") and "(97.0%)" in line
    line, status = run.verdict(600, 612)
    assert status == 1 and line.endswith("FAILED (12 short)")


# --- the sdist ---------------------------------------------------------------------------

def _tarball(path: Path, names: list[str]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"x=1"))


def test_extract_keeps_tests_and_examples_only(tmp_path):
    archive = tmp_path / sdist.ARCHIVE
    _tarball(archive, ["autograd-1.9.1/tests/test_x.py", "autograd-1.9.1/examples/ex.py",
                       "autograd-1.9.1/autograd/__init__.py", "autograd-1.9.1/pyproject.toml"])
    root = sdist.extract(archive, tmp_path)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == [".extracted", "examples/ex.py", "tests/test_x.py"]


def test_a_cached_archive_with_the_wrong_hash_is_refused_and_deleted(tmp_path):
    archive = tmp_path / sdist.ARCHIVE
    _tarball(archive, ["autograd-1.9.1/tests/test_x.py"])
    with pytest.raises(RuntimeError, match="expected 7818c5c6"):
        sdist.download(tmp_path)
    assert not archive.exists()


def test_unreachable_index_skips_with_a_note(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CHAINRULE_COMPAT_CACHE", str(tmp_path))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip behaves as with no index to reach
    assert run.main(["--floor", "631"]) == 0
    assert capsys.readouterr().out.startswith("SKIPPED: autograd 1.9.1's sdist could not be")


# --- the known divergences ----------------------------------------------------------------

def test_migrating_docs_list_the_known_divergences():
    docs = (REPO / "docs" / "migrating.md").read_text()
    assert divergences_markdown() in docs, (
        "docs/migrating.md's divergence list is out of step with tests/compat/divergences.py: "
        "paste the output of `python -m tests.compat --divergences-markdown` into it")
    assert all(test_id.startswith("tests/test_") and "::" in test_id for test_id in DIVERGENCES)


# --- the examples' table ------------------------------------------------------------------

def test_printed_numbers_compare_to_six_significant_digits():
    assert examples.compare_numbers("loss 1.2345671\nstep 3", "loss 1.2345674\nstep 3") \
        == "equal (2)"
    assert examples.compare_numbers("loss 1.234561", "loss 1.234571") \
        == "differ at #1 of 1: 1.23456 vs 1.23457"
    assert examples.compare_numbers("1 2 3e-3 4", "1 2 0.003") == "equal (first 3 of 4/3)"
    assert examples.compare_numbers("nan -inf", "nan -inf") == "equal (2)"
    assert examples.compare_numbers("done", "done") == "none printed"
    # digits inside names, ids and reprs are not printed numbers
    assert examples.printed_numbers("node_13994 [color=gray30] np.float64(4.5e-13) 0x7f 2.") \
        == [4.5e-13, 2.0]


def test_a_line_cut_by_the_time_limit_is_dropped():
    assert examples.complete_lines("loss 1.5\nloss 1.2") == "loss 1.5\n"
    assert examples.printed_numbers(examples.complete_lines("a 1\nb 2.71828\n")) == [1, 2.71828]


def test_examples_that_download_data_are_skipped(tmp_path):
    (tmp_path / "fetches.py").write_text("from data import load_mnist\nN = load_mnist()\n")
    (tmp_path / "local.py").write_text("import autograd.numpy as np\nprint(np.sin(1.0))\n")
    (tmp_path / "data.py").write_text("def load_mnist(): return mnist()\n")
    to_run, skipped = examples.list_examples(tmp_path)
    assert [p.name for p in to_run] == ["local.py"]
    assert [p.name for p in skipped] == ["fetches.py"]
