"""The HTML page in a real browser: headless Chromium steps through the backward pass.

The page reads ``#step=N`` and presses its own Next button N times (the same
click handler a reader uses); ``--dump-dom`` then shows what the reader would see.
"""

import html
import re
import shutil
import subprocess

import pytest

import chainrule.numpy as np
from chainrule.explain import explain

CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
    None,
)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    report = explain(lambda x1, x2: np.log(x1) + x1 * x2 - np.sin(x2), 2.0, 5.0)
    path = tmp_path_factory.mktemp("explain") / "seed.html"
    path.write_text(report.html(), encoding="utf-8")
    return path


def dom_after(path, steps: int) -> str:
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--dump-dom",
            f"file://{path}#step={steps}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def classes(dom: str) -> dict:
    return {
        m[1]: set(m[0].split()) - {"node"}
        for m in re.findall(r'<g class="(node[^"]*)" id="(n\d+)"', dom)
    }


def status(dom: str) -> str:
    return html.unescape(re.search(r'<div class="cx-status" id="status">(.*?)</div>', dom, re.S)[1])


def adjoint_labels(dom: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r'<text class="adj"[^>]*>([^<]*)</text>', dom)]


def test_before_the_backward_pass(page):
    dom = dom_after(page, 0)
    assert '<span id="step">0 / 7</span>' in dom
    assert "Press Next" in status(dom)
    assert "v\u03045 = 1" in adjoint_labels(dom)  # the seed, on the output node
    assert not any("current" in c for c in classes(dom).values())


def test_step_4_highlights_v2_and_its_contributions(page):
    dom = dom_after(page, 4)
    cls = classes(dom)
    assert "current" in cls["n3"]  # v2 = x1 * x2
    assert "receiving" in cls["n0"] and "receiving" in cls["n1"]  # x1, x2
    assert {"done"} <= cls["n6"] and {"done"} <= cls["n4"]  # v5, v3 already processed
    text = status(dom)
    assert "Step 4: node v2 receives its adjoint v\u03042 = 1" in text
    assert "x\u03042 = -0.284 + 2 = 1.716" in text
    assert "x\u03041 = 5" in adjoint_labels(dom)
    assert len(re.findall(r'class="edge active"', dom)) == 2


def test_last_step_shows_the_gradient(page):
    dom = dom_after(page, 7)
    assert '<span id="step">7 / 7</span>' in dom
    assert "x\u03041 = 5.5" in adjoint_labels(dom) and "x\u03042 = 1.716" in adjoint_labels(dom)
    assert "an input: this is its gradient" in status(dom)
    assert re.search(r'<button id="next" disabled', dom)
