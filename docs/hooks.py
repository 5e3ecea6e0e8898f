"""MkDocs hook: generate docs/coverage.md before every build, so that `mkdocs build` works
from a clean clone (the page is made from the installed package and is not tracked)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def on_pre_build(config, **kwargs) -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_coverage", Path(__file__).resolve().parent / "gen_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
