"""Every example runs in --smoke mode, exits 0 and prints its RESULT line."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = ["logistic_regression", "mlp_digits", "char_rnn", "char_lstm", "gaussian_process",
           "vae_digits", "neural_ode", "hmc_banana", "tanh_derivatives", "explain_seed"]
NEEDS = {name: ["sklearn", "matplotlib"] for name in SCRIPTS}
NEEDS["neural_ode"].append("chainrule.scipy")


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


def test_every_example_is_listed():
    on_disk = {p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_")}
    # tensor_fit is run by tests/test_tensor_example.py
    assert on_disk - {"tensor_fit"} == set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_smoke(name, tmp_path):
    missing = [m for m in NEEDS[name] if _missing(m)]
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)} (pip install -e '.[docs]')")
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
