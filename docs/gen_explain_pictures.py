"""The pictures of docs/debugging.md, drawn by explain's own renderer and Graphviz.

    PYTHONPATH=src python docs/gen_explain_pictures.py      # rewrites docs/images/explain_*

Each picture is written twice: the DOT source (``report.dot()``, compared with a fresh one
by tests/test_explain_scale.py) and the SVG Graphviz's ``dot`` draws from it. The program
is the tutorial's: a 50-step tanh RNN whose loss is the spread (a norm) of its last state,
NaN in its gradient where every state is the same.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as onp

import chainrule.numpy as np
from chainrule import explain

IMAGES = Path(__file__).resolve().parent / "images"


def rnn(w, x):
    h = x
    for _ in range(50):
        h = np.tanh(w * h + 0.5)
    return h


def spread(w, x):
    h = rnn(w, x)
    centred = h - np.mean(h)
    return np.sqrt(np.sum(centred**2))


def spread_fixed(w, x):
    h = rnn(w, x)
    centred = h - np.mean(h)
    return np.sqrt(np.sum(centred**2) + 1e-12)


def dot_sources() -> dict[str, str]:
    """{picture name: DOT source}: the reports of the tutorial, as the renderer draws them."""
    with onp.errstate(all="ignore"):
        nan = explain(spread, 0.9, onp.zeros(3), check=True)
        fixed = explain(spread_fixed, 0.9, onp.zeros(3), check=True)
        return {"explain_nan": nan.dot(), "explain_fixed": fixed.dot()}


def main() -> None:
    exe = shutil.which("dot")
    if exe is None:
        sys.exit("Graphviz's dot program is needed to draw the pictures (apt-get install graphviz)")
    for name, source in dot_sources().items():
        (IMAGES / f"{name}.dot").write_text(source, encoding="utf-8")
        svg = subprocess.run([exe, "-Tsvg"], input=source, capture_output=True, text=True)
        if svg.returncode != 0:
            sys.exit(svg.stderr)
        (IMAGES / f"{name}.svg").write_text(svg.stdout, encoding="utf-8")
        print(f"wrote docs/images/{name}.dot and .svg")


if __name__ == "__main__":
    main()
