"""Every example runs in --smoke mode, exits 0 and prints its RESULT line."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = ["logistic_regression", "mlp_digits", "char_rnn", "char_lstm", "gaussian_process",
           "vae_digits", "neural_ode", "hmc_banana", "tanh_derivatives", "explain_seed",
           "torch_style_mlp", "ode_fit", "bilevel", "newton_pde"]


def _imported_modules(tree: ast.AST) -> list[tuple[str, list[str]]]:
    """(module, names imported from it) for every absolute import in ``tree`` that the code
    cannot do without."""
    found = []
    optional = _optional_imports(tree)
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.append((node.module, [alias.name for alias in node.names]))
    return found


def _optional_imports(tree: ast.AST) -> set[int]:
    """ids of the imports inside ``try: ... except ImportError``: optional packages (tqdm,
    threadpoolctl) that an example uses when present and does without otherwise."""
    optional = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
            for h in node.handlers
        ):
            for part in node.body:
                optional |= {id(n) for n in ast.walk(part)}
    return optional


def _needs(name: str, only: list[str] | None = None) -> set[str]:
    """The optional packages an example imports, read from its source, so that it skips only
    for what it uses. From a local helper (``_common``) only the functions it takes count:
    plotting there imports matplotlib lazily, inside ``save``."""
    tree = ast.parse((EXAMPLES / f"{name}.py").read_text())
    if only is not None:  # the helper's module-level imports and the functions taken
        tree = ast.Module(
            body=[n for n in tree.body if not isinstance(n, ast.FunctionDef) or n.name in only],
            type_ignores=[],
        )
    needs = set()
    for module, names in _imported_modules(tree):
        top = module.split(".")[0]
        if (EXAMPLES / f"{top}.py").exists():
            needs |= _needs(top, names)
        elif module.startswith("chainrule.scipy"):
            needs.add("scipy")
        elif top not in sys.stdlib_module_names and top not in ("numpy", "chainrule"):
            needs.add(top)
    return needs


NEEDS = {name: sorted(_needs(name)) for name in SCRIPTS}


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


def test_each_example_skips_only_for_what_it_imports():
    assert NEEDS["explain_seed"] == []
    assert NEEDS["tanh_derivatives"] == ["matplotlib"]  # through _common's plotting
    assert NEEDS["mlp_digits"] == ["matplotlib", "sklearn"]
    assert NEEDS["neural_ode"] == ["matplotlib", "scipy"]
    assert NEEDS["hmc_banana"] == ["matplotlib"]  # tqdm is optional (plain progress lines)
    assert all("tqdm" not in n and "threadpoolctl" not in n for n in NEEDS.values())


def test_optional_imports_are_not_needs():
    tree = ast.parse(
        "try:\n    import tqdm\nexcept ImportError:\n    tqdm = None\nimport sklearn\n"
    )
    assert [m for m, _ in _imported_modules(tree)] == ["sklearn"]


def test_every_example_is_listed():
    on_disk = {p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_")}
    # tensor_fit is run by tests/test_tensor_example.py
    assert on_disk - {"tensor_fit"} == set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_smoke(name, tmp_path):
    missing = [m for m in NEEDS[name] if _missing(m)]
    if missing:
        pytest.skip(
            f"{name} needs {', '.join(missing)} (pip install -e '.[examples]' installs them)"
        )
    src = str(EXAMPLES.parent / "src")
    env = {
        **os.environ,
        "MPLBACKEND": "Agg",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), "--smoke", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RESULT:" in proc.stdout, proc.stdout[-2000:]
    written = {p.suffix for p in tmp_path.iterdir()}
    assert written & {".png", ".html"}, f"{name} wrote no plot into --out"
    # it says where each plot went, and how many BLAS threads it ran with
    shown = re.findall(r"^(?:plot|page): (\S+)", proc.stdout, flags=re.M)
    assert shown and {Path(p) for p in shown} <= {p.resolve() for p in tmp_path.iterdir()}
    assert "BLAS threads: " in proc.stdout


def _common_module(monkeypatch, **hidden):
    """examples/_common.py imported afresh, with the packages in ``hidden`` uninstalled."""
    for module in hidden:
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    spec = importlib.util.spec_from_file_location("_common_under_test", EXAMPLES / "_common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_progress_without_tqdm_prints_plain_lines(monkeypatch, capsys):
    common = _common_module(monkeypatch, tqdm=True)
    with common.progress(4, "training") as bar:
        bar.every = 0.0  # a line after each step, not every few seconds
        for i in range(4):
            bar.update()
            if i == 1:
                bar.write("halfway")
    out, err = capsys.readouterr()
    assert out == "halfway\n"
    lines = err.splitlines()
    assert [line.split(" (")[0] for line in lines] == [f"training: {i}/4" for i in range(1, 5)]
    assert lines[-1].startswith("training: 4/4 (100%)")
    assert list(common.track(["a", "b"], "items")) == ["a", "b"]


def test_progress_uses_tqdm_when_installed(monkeypatch):
    tqdm = pytest.importorskip("tqdm")
    bar = _common_module(monkeypatch).progress(3, "training")
    assert isinstance(bar, tqdm.tqdm)
    bar.close()


@pytest.mark.parametrize("variable", [None, "OPENBLAS_NUM_THREADS"])
def test_blas_threads_are_limited_by_the_example(monkeypatch, capsys, variable):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(v, raising=False)
    if variable:
        monkeypatch.setenv(variable, "2")
    common = _common_module(monkeypatch)
    try:
        line = common.limit_blas_threads()
        if variable:  # the user's setting stands
            assert line == f"BLAS threads: as set by {variable}=2" and common._limits is None
        else:
            blas = [p for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
            assert blas and all(p["num_threads"] == 1 for p in blas)
            assert line.startswith("BLAS threads: 1 (threadpoolctl")
    finally:
        if common._limits is not None:
            common._limits.restore_original_limits()
    assert capsys.readouterr().out == line + "\n"


def test_blas_threads_without_threadpoolctl_say_how(monkeypatch):
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(v, raising=False)
    line = _common_module(monkeypatch, threadpoolctl=True).limit_blas_threads()
    assert "threadpoolctl is not installed" in line and "OPENBLAS_NUM_THREADS=1" in line
