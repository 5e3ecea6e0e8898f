"""examples/tensor_fit.py runs in smoke mode and actually fits its data."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tensor_fit.py"


def test_tensor_fit_smoke_run_reduces_the_error():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(EXAMPLE), "--smoke"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    first, last = map(float, re.search(r"error: ([\d.]+) -> ([\d.]+)", done.stdout).groups())
    assert last < 0.1 * first and last < 0.2
