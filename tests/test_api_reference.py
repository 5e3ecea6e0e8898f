"""The API reference (docs/api.md, filled by docs/gen_api.py at build time) lists every public
name under its public path, and follows the package when a name is added."""

from __future__ import annotations

import importlib
import importlib.util
import re
import types
from pathlib import Path

import pytest

import chainrule

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _gen_api():
    spec = importlib.util.spec_from_file_location("gen_api", DOCS / "gen_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_api = _gen_api()


@pytest.fixture(scope="module")
def page() -> str:
    return gen_api.generate()


def _listed(page: str, path: str) -> bool:
    """Documented (a ``:::`` entry) or pointing to where the same object is documented."""
    return re.search(rf"^::: {re.escape(path)}$", page, re.M) is not None or f"- `{path}`:" in page


def test_every_top_level_name_is_listed_under_chainrule(page):
    modules = {n for n in chainrule.__all__ if isinstance(getattr(chainrule, n), types.ModuleType)}
    missing = [
        n for n in chainrule.__all__ if n not in modules and not _listed(page, f"chainrule.{n}")
    ]
    assert missing == []
    for name in modules:  # optim (and nn when it is exported) have sections of their own
        assert f"## chainrule.{name}\n" in page


def test_every_public_module_and_its_names_are_listed(page):
    modules = gen_api.public_modules()
    for expected in [
        "chainrule.optim",
        "chainrule.extend",
        "chainrule.test_util",
        "chainrule.misc.optimizers",
        "chainrule.tensor",
        "chainrule.builtins",
    ]:
        assert expected in modules
    if importlib.util.find_spec("chainrule.nn") is not None:
        assert "chainrule.nn" in modules
    for name in modules[1:]:
        module = importlib.import_module(name)
        for member in gen_api.members(name):
            if isinstance(getattr(module, member), types.ModuleType):
                continue  # listed as a link to the module's own section
            if name in gen_api.LISTED_ONLY:
                assert f"`{member}`" in page.split(f"- `{name}`")[1].splitlines()[0]
            else:
                assert _listed(page, f"{name}.{member}"), f"{name}.{member} is not listed"


def test_only_public_paths_and_each_object_documented_once(page):
    entries = re.findall(r"^::: (\S+)$", page, re.M)
    assert entries, "no ::: entries generated"
    private = [e for e in entries if any(p.startswith("_") for p in e.split("."))]
    assert private == []
    objects = []
    for path in entries:
        module, _, name = path.rpartition(".")
        obj = getattr(importlib.import_module(module), name)
        if callable(obj):
            objects.append(id(obj))
    assert len(objects) == len(set(objects)), "an object is documented at two paths"
    assert "::: chainrule.grad\n" in page + "\n"
    assert "- `chainrule.tensor.Tensor`: the same object as [`chainrule.Tensor`]" in page


def test_a_new_public_name_appears_without_editing_the_page(monkeypatch):
    def brand_new_transform(f):
        """A transform added after the page was written."""
        return f

    monkeypatch.setattr(chainrule, "brand_new_transform", brand_new_transform, raising=False)
    monkeypatch.setattr(chainrule, "__all__", [*chainrule.__all__, "brand_new_transform"])
    assert "::: chainrule.brand_new_transform" in gen_api.generate()


def test_api_page_keeps_its_marker():
    assert gen_api.MARKER in (DOCS / "api.md").read_text(encoding="utf-8")


def test_docstring_examples_become_code_blocks():
    """Markdown reads ``>>>`` as three nested quotes; the docs hook fences the examples."""
    pytest.importorskip("markdown")
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    import markdown

    text = (
        "Intro.\n\n>>> print(1)\n1\n\nAfter.\n\n```\n>>> kept as is\n```\n\n"
        "    >>> an indented code block\n"
    )
    html = markdown.markdown(text, extensions=["fenced_code", hooks.DoctestBlocks()])
    assert "<blockquote>" not in html
    assert '<code class="language-pycon">&gt;&gt;&gt; print(1)\n1\n</code>' in html
    assert "<p>After.</p>" in html and "&gt;&gt;&gt; kept as is" in html
    assert "<pre><code>&gt;&gt;&gt; an indented code block" in html
