"""MkDocs hooks: generate docs/coverage.md before every build, so that `mkdocs build` works
from a clean clone (the page is made from the installed package and is not tracked), and
fill the API reference's member lists from the package (docs/gen_api.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
