"""MkDocs hooks: generate docs/coverage.md before every build, so that `mkdocs build` works
from a clean clone (the page is made from the installed package and is not tracked), fill
the API reference's member lists from the package (docs/gen_api.py), and show the docstrings'
``>>>`` examples as code (Markdown would read ``>>>`` as nested quotes)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from markdown import Extension
from markdown.preprocessors import Preprocessor

HERE = Path(__file__).resolve().parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_pre_build(config, **kwargs) -> None:
    _load("gen_coverage").main()


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    if page.file.src_uri != "api.md":
        return markdown
    gen_api = _load("gen_api")
    if gen_api.MARKER not in markdown:
        raise ValueError(f"docs/api.md lost its {gen_api.MARKER} line: the member lists go there")
    return markdown.replace(gen_api.MARKER, gen_api.generate())


class _DoctestBlocks(Preprocessor):
    """Fence each run of ``>>>`` lines and the output after them (up to a blank line)."""

    FENCE = re.compile(r"^\s*(```|~~~)")

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        fenced, i = False, 0
        while i < len(lines):
            line = lines[i]
            if self.FENCE.match(line):
                fenced = not fenced
            elif (
                not fenced
                and line.lstrip().startswith(">>>")
                and len(line) - len(line.lstrip()) < 4
            ):  # 4 spaces: already code
                indent = line[: len(line) - len(line.lstrip())]
                block = []
                while i < len(lines) and lines[i].strip():
                    block.append(
                        lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i]
                    )
                    i += 1
                out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```", ""]
                continue
            out.append(line)
            i += 1
        return out


class DoctestBlocks(Extension):
    def extendMarkdown(self, md) -> None:
        # before fenced_code (priority 25), which then renders the new fences
        md.preprocessors.register(_DoctestBlocks(md), "doctest_blocks", 27)


def on_config(config, **kwargs):
    # the same list mkdocstrings renders docstrings with
    config.markdown_extensions.append(DoctestBlocks())
    # The generated coverage page joins the nav here, not in mkdocs.yml, which names only
    # tracked pages; it goes before the API reference (the last entry).
    config.nav.insert(len(config.nav) - 1, {"Coverage": "coverage.md"})
    return config
