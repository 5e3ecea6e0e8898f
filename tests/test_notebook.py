"""docs/notebooks/tutorial.ipynb runs top to bottom in a Jupyter kernel, its numbers are the
hand-derived ones, the explain report renders inline as HTML, and the outputs saved in the
notebook (what the docs site shows) are the ones a fresh run gives.

After editing the notebook, save it with fresh outputs:
``jupyter nbconvert --to notebook --execute --inplace docs/notebooks/tutorial.ipynb``.
"""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs nbformat")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs nbclient")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "docs" / "notebooks" / "tutorial.ipynb"


def _kernel_available(name: str) -> bool:
    try:
        from jupyter_client.kernelspec import KernelSpecManager
    except ImportError:
        return False
    return name in KernelSpecManager().find_kernel_specs()


@pytest.fixture(scope="module")
def executed():
    saved = nbformat.read(NOTEBOOK, as_version=4)
    kernel = saved.metadata.get("kernelspec", {}).get("name", "python3")
    if not _kernel_available(kernel):
        pytest.skip(f"no Jupyter kernel {kernel!r}: pip install ipykernel")
    fresh = copy.deepcopy(saved)
    for cell in fresh.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    src = str(ROOT / "src")  # the kernel imports this checkout's chainrule
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])))
        client = nbclient.NotebookClient(
            fresh,
            timeout=120,
            kernel_name=kernel,
            resources={"metadata": {"path": str(NOTEBOOK.parent)}},
        )
        client.execute()
    return saved, fresh


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _text(cell) -> str:
    parts = []
    for out in cell.outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif "data" in out:
            parts.append(out.data.get("text/plain", ""))
    return "".join(parts)


def test_notebook_runs_without_errors(executed):
    _, fresh = executed
    errors = [o for c in _code_cells(fresh) for o in c.outputs if o.output_type == "error"]
    assert errors == [], errors and "\n".join(errors[0].traceback)


def test_notebook_prints_the_hand_derived_gradient(executed):
    _, fresh = executed
    text = "".join(_text(c) for c in _code_cells(fresh))
    by_hand = (1 / 2.0 + 5.0, 2.0 - math.cos(5.0))
    assert f"dy/dx1 = {by_hand[0]:.6f}, dy/dx2 = {by_hand[1]:.6f}" in text
    assert f"forward mode: y = {math.log(2.0) + 10.0 - math.sin(5.0):.6f}" in text


def test_explain_report_renders_inline_as_html(executed):
    _, fresh = executed
    rich = [o for c in _code_cells(fresh) for o in c.outputs if "text/html" in o.get("data", {})]
    assert len(rich) == 1, "the explain report cell should display one HTML report"
    page = rich[0].data["text/html"]
    for part in ("<svg", "chainrule.explain", "x̄1", "= 5.5", "= 1.716", "Next"):
        assert part in page, f"{part!r} missing from the inline report"
    assert rich[0].data["text/plain"].startswith("<explain report:")


def test_saved_outputs_are_a_fresh_runs_outputs(executed):
    """The site renders the saved outputs: they must not go stale."""
    saved, fresh = executed
    assert [c.source for c in _code_cells(saved)] == [c.source for c in _code_cells(fresh)]
    for old, new in zip(_code_cells(saved), _code_cells(fresh)):
        assert _text(old) == _text(new), f"stale saved output in cell:\n{old.source}"
        assert bool(old.outputs) == bool(new.outputs)
