"""Every example runs in --smoke mode, exits 0 and prints its RESULT line."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = ["logistic_regression", "mlp_digits", "char_rnn", "char_lstm", "gaussian_process",
           "vae_digits", "neural_ode", "hmc_banana", "tanh_derivatives", "explain_seed",
           "torch_style_mlp"]


def _imported_modules(tree: ast.AST) -> list[tuple[str, list[str]]]:
    """(module, names imported from it) for every absolute import in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.append((node.module, [alias.name for alias in node.names]))
    return found


def _needs(name: str, only: list[str] | None = None) -> set[str]:
    """The optional packages an example imports, read from its source, so that it skips only
    for what it uses. From a local helper (``_common``) only the functions it takes count:
    plotting there imports matplotlib lazily, inside ``save``."""
    tree = ast.parse((EXAMPLES / f"{name}.py").read_text())
    if only is not None:  # the helper's module-level imports and the functions taken
        tree = ast.Module(body=[n for n in tree.body
                                if not isinstance(n, ast.FunctionDef) or n.name in only],
                          type_ignores=[])
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


def test_every_example_is_listed():
    on_disk = {p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_")}
    # tensor_fit is run by tests/test_tensor_example.py
    assert on_disk - {"tensor_fit"} == set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_smoke(name, tmp_path):
    missing = [m for m in NEEDS[name] if _missing(m)]
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)} (pip install -e '.[docs]' installs them)")
    src = str(EXAMPLES.parent / "src")
    env = {**os.environ, "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--smoke",
                           "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RESULT:" in proc.stdout, proc.stdout[-2000:]
    written = {p.suffix for p in tmp_path.iterdir()}
    assert written & {".png", ".html"}, f"{name} wrote no plot into --out"
