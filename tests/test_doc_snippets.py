"""Every ```python block in README.md and docs/*.md runs, and prints what the page shows.

Conventions for writing the pages:

- The ```python blocks of one page run in order in one namespace, as a reader would paste them.
- A ```text block right after a ```python block (only blank lines between) is that block's
  printed output. It is compared with what the block prints, as doctest compares (``...``
  matches anything, runs of whitespace are equal). A block with no ```text block after it
  may print nothing the page does not show: it must print nothing at all.
- ``<!-- snippet: skip (reason) -->`` on the line before a block: the block is not run, and
  the test reports it as skipped with its reason (a GPU, a cluster, a deliberate fragment).
- ``<!-- snippet: needs MODULE[, MODULE] -->``: the block runs where the modules import and is
  reported as skipped where they do not.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import importlib.util
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy
import pytest

ROOT = Path(__file__).resolve().parent.parent
# docs/coverage.md is generated during the docs build and has no snippets of its own
PAGES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").glob("*.md") if p.name != "coverage.md"
)
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!--\s*snippet:\s*(skip|needs)\b(.*?)-->\s*$")
CHECKER = doctest.OutputChecker()
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass
class Snippet:
    page: str
    line: int  # of the opening fence, 1-based
    code: str
    expected: str | None = None  # the ```text block after it
    skip: str | None = None  # the reason given in a skip mark
    needs: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks(text: str) -> list[tuple[str, int, str, str | None, bool]]:
    """(language, line of the opening fence, body, the mark before it, whether only blank
    lines separate it from the previous fence's close) for each fenced block."""
    lines = text.splitlines()
    blocks, i, mark, adjacent = [], 0, None, False
    while i < len(lines):
        line = lines[i]
        if MARK.match(line.strip()):
            mark, adjacent = line.strip(), False
        elif m := FENCE.match(line):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
            assert end is not None, f"unclosed ``` fence at line {i + 1}"
            blocks.append((m.group(1), i + 1, "\n".join(lines[i + 1 : end]) + "\n", mark, adjacent))
            mark, adjacent, i = None, True, end
        elif line.strip():
            mark, adjacent = None, False  # a mark belongs to the block right below it
        i += 1
    return blocks


def snippets(text: str, name: str) -> list[Snippet]:
    found: list[Snippet] = []
    previous = None
    for lang, line, body, mark, adjacent in _blocks(text):
        if lang == "text" and previous == "python" and adjacent:
            found[-1].expected = body
        elif lang == "python":
            snippet = Snippet(name, line, body)
            if mark:
                kind, rest = MARK.match(mark).groups()
                if kind == "skip":
                    snippet.skip = rest.strip().removeprefix("(").removesuffix(")").strip()
                else:
                    snippet.needs = [m.strip() for m in rest.split(",") if m.strip()]
            found.append(snippet)
        elif mark:
            raise AssertionError(f"{name}:{line}: a snippet mark must precede a ```python block")
        previous = lang
    return found


ALL = {
    str(p.relative_to(ROOT)): snippets(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))
    for p in PAGES
}
RUNNABLE_PAGES = [page for page, found in ALL.items() if found]
MARKED = [s for found in ALL.values() for s in found if s.skip is not None or s.needs]


def _missing(modules: list[str]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def _for_this_numpy(text: str) -> str:
    """The pages show NumPy 2's scalar reprs (``np.float64(2.0)``); NumPy 1 prints ``2.0``."""
    if int(numpy.__version__.split(".")[0]) >= 2:
        return text
    text = re.sub(r"np\.(True|False)_", r"\1", text)
    return re.sub(r"np\.(?:float|int|uint|complex)\d*\(([^()]*)\)", r"\1", text)


def _run(snippet: Snippet, namespace: dict) -> str:
    out = io.StringIO()
    code = compile(snippet.code, snippet.where, "exec", dont_inherit=True)  # no __future__
    with contextlib.redirect_stdout(out):
        exec(code, namespace)
    return out.getvalue()


@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_page_snippets_run_and_print_what_the_page_shows(page, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # a snippet that writes a file writes it here
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__main__"}
    for snippet in ALL[page]:
        if snippet.skip is not None or _missing(snippet.needs):
            continue  # reported by test_marked_snippet
        printed = _run(snippet, namespace)
        want = _for_this_numpy(snippet.expected or "")
        if not CHECKER.check_output(want, printed, FLAGS):
            pytest.fail(f"{snippet.where} printed\n{printed}\nbut the page shows\n{want}")


@pytest.mark.parametrize("snippet", MARKED, ids=lambda s: s.where)
def test_marked_snippet(snippet):
    """Skipped blocks are counted here, one skip each with the page's reason."""
    if snippet.skip is not None:
        assert snippet.skip, f"{snippet.where}: a skip mark needs a reason in parentheses"
        pytest.skip(f"{snippet.where}: {snippet.skip}")
    if missing := _missing(snippet.needs):
        pytest.skip(f"{snippet.where} needs {', '.join(missing)}")


def test_every_python_block_parses_and_pages_have_snippets():
    total = sum(len(found) for found in ALL.values())
    assert total >= 20, f"only {total} python blocks found: is the fence parser broken?"
    for found in ALL.values():
        for snippet in found:
            ast.parse(snippet.code, snippet.where)


def test_parser_pairs_output_and_marks():
    text = (
        "<!-- snippet: skip (needs a GPU) -->\n```python\nimport cupy\n```\n\n"
        "```python\nprint(1)\n```\n\n```text\n1\n```\n"
        "<!-- snippet: needs dask, distributed -->\n```python\nimport dask\n```\n"
    )
    found = snippets(text, "case.md")
    assert [(s.skip, s.expected, s.needs) for s in found] == [
        ("needs a GPU", None, []),
        (None, "1\n", []),
        (None, None, ["dask", "distributed"]),
    ]


def test_tutorial_tables_are_the_real_report():
    """docs/tutorial.md says every table on it is the output of its first snippet: check it."""
    import chainrule.numpy as np
    from chainrule import explain

    def f(x1, x2):
        return np.log(x1) + x1 * x2 - np.sin(x2)

    report = explain(f, 2.0, 5.0)
    markdown, mermaid = report.markdown(), report.mermaid()
    page = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    # sections 2 to 4 show the report; the notation and CLI tables around them are prose
    body = page.split("## 2. The evaluation trace")[1].split("## 5. Which mode when")[0]
    tables = re.findall(r"(?:^\|.*\|\n)+", body, flags=re.M)
    assert len(tables) == 5
    for table in tables:
        assert table in markdown, f"tutorial.md shows a table explain does not print:\n{table}"
    graph = [b for _, _, b, _, _ in _blocks(page) if b.startswith("flowchart")]
    assert graph == [mermaid.rstrip("\n") + "\n"]
