"""An explain report in Jupyter: a small notebook runs headlessly (nbclient, a real kernel)
and its outputs are the report's HTML and Markdown: self-contained, escaped, with the
source lines, the folded loop, the checks and the derivative program."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs nbformat")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs nbclient")

from test_notebook import _kernel_available  # noqa: E402  (tests/ is on sys.path)

SRC = str(Path(__file__).resolve().parent.parent / "src")

CELLS = [
    """\
import numpy as onp
import chainrule
import chainrule.numpy as np
from chainrule import explain

def loss(w, x):
    h = x
    for _ in range(12):
        h = np.tanh(w * h)
    r = np.sqrt(np.sum(h ** 2))
    return 2.0 * r

with onp.errstate(all="ignore"):
    report = explain(loss, 0.5, onp.zeros(3), check=True)
report""",
    """\
w = chainrule.Tensor(onp.array([0.5, -1.0]))
t_loss = (np.tanh(w * 2.0) ** 2).sum()
explain(t_loss)""",
    """\
key = "<script>alert('x')</script>"
explain(lambda p: np.sin(p[key]), {key: 0.5})""",
]


@pytest.fixture(scope="module")
def outputs():
    if not _kernel_available("python3"):
        pytest.skip("no Jupyter kernel python3: pip install ipykernel")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])))
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    results = []
    for cell in nb.cells:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors == [], errors and "\n".join(errors[0].traceback)
        (result,) = [o for o in cell.outputs if o.output_type == "execute_result"]
        results.append(result.data)
    return results


def test_the_report_renders_inline_as_self_contained_html(outputs):
    data = outputs[0]
    page = data["text/html"]
    assert page.startswith('<div class="chainrule-explain">')  # a fragment, not a document
    assert "<svg" in page and "Next" in page
    assert not re.search(r"https?://|src=|@import|<link", page)  # no network
    ids = set(re.findall(r'id="(cx[0-9a-f]+-)', page))
    assert len(ids) == 1  # every element id scoped to this report
    # the planted NaN: sqrt at 0, named at its line of the cell
    assert "first NaN/inf in the backward pass" in page and "r = np.sqrt(np.sum(h ** 2))" in page
    assert "<summary>× 12</summary>" in page  # the loop, folded and expandable
    assert "Derivative program" in page and "(adjoint)" in page
    assert data["text/plain"].startswith("<explain report:")


def test_the_report_renders_as_markdown(outputs):
    markdown = outputs[0]["text/markdown"]
    assert markdown.startswith("## chainrule.explain:")
    assert "### Source lines" in markdown and "### Checks" in markdown
    assert "× 12" in markdown and "```python" in markdown


def test_a_tensor_graph_renders_too(outputs):
    page = outputs[1]["text/html"]
    assert "y = f(w) at w = [0.5, -1]" in page and "tanh(" in page and "<svg" in page


def test_hostile_names_are_escaped_in_the_notebook(outputs):
    page = outputs[2]["text/html"]
    assert "<script>alert" not in page and "&lt;script&gt;alert(" in page
    assert page.count("<script") == 2  # the report's data block and its stepper
    assert "<script>" not in outputs[2]["text/markdown"]
