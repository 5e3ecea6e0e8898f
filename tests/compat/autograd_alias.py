"""Answer every ``import autograd...`` with the matching ``chainrule...`` module.

A meta-path finder placed first on ``sys.meta_path``, so an installed autograd is never
reached. Used three ways, always as a top-level module (``tests/compat`` on ``sys.path``):

- as a pytest plugin (``-p autograd_alias``) when running autograd's test suite; the plugin
  checks at the end of the session that every ``autograd*`` module it saw is chainrule's and
  prints one line saying so, which the harness requires;
- as a script runner: ``python -m autograd_alias script.py [args]`` runs an autograd example
  on chainrule;
- imported by the harness's own unit tests.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import runpy
import sys
from pathlib import Path
from types import ModuleType

import chainrule

SOURCE = "autograd"
TARGET = "chainrule"
# The line the plugin prints when the check passes; the harness looks for it.
CHECK_PASSED = "alias check passed"


def target_name(name: str) -> str | None:
    """``autograd.numpy.linalg`` -> ``chainrule.numpy.linalg``; None for other modules."""
    if name == SOURCE or name.startswith(SOURCE + "."):
        return TARGET + name[len(SOURCE):]
    return None


class AutogradAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Loads ``autograd.X`` as the module object ``chainrule.X`` itself (not a copy), so
    ``autograd.numpy is chainrule.numpy`` and isinstance checks see one class."""

    def find_spec(self, name, path=None, target=None):
        if target_name(name) is None:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        try:
            return importlib.import_module(target_name(spec.name))
        except ModuleNotFoundError as err:
            raise ModuleNotFoundError(
                f"{spec.name} has no chainrule counterpart: {err}", name=spec.name) from err

    def exec_module(self, module: ModuleType) -> None:
        pass  # the chainrule module is already executed


def install() -> AutogradAlias:
    """Put the alias first on ``sys.meta_path`` (once) and return it."""
    for finder in sys.meta_path:
        if isinstance(finder, AutogradAlias):
            return finder
    if any(target_name(name) for name in sys.modules):
        raise RuntimeError("an autograd module was imported before the alias was installed")
    finder = AutogradAlias()
    sys.meta_path.insert(0, finder)
    return finder


def foreign_autograd_modules(modules: dict[str, ModuleType]) -> list[str]:
    """Names of loaded ``autograd*`` modules that are not the chainrule module they alias."""
    return sorted(name for name, module in modules.items()
                  if target_name(name) is not None
                  and getattr(module, "__name__", None) != target_name(name))


def check_modules() -> str:
    """Raise if a real autograd module got loaded; else describe what was aliased."""
    foreign = foreign_autograd_modules(sys.modules)
    if foreign:
        raise RuntimeError(f"real autograd modules were loaded instead of chainrule: {foreign}")
    count = sum(1 for name in sys.modules if target_name(name) is not None)
    return f"{CHECK_PASSED}: {count} autograd modules were chainrule's, from {chainrule.__file__}"


# pytest plugin hooks ------------------------------------------------------------------------

def pytest_configure(config) -> None:
    install()


def pytest_terminal_summary(terminalreporter) -> None:
    terminalreporter.write_line(check_modules())


def _run_script(argv: list[str]) -> None:
    """Run a script as ``python script.py`` would, with autograd aliased to chainrule."""
    if not argv:
        raise SystemExit("usage: python -m autograd_alias script.py [args...]")
    install()
    sys.argv = argv
    sys.path.insert(0, str(Path(argv[0]).resolve().parent))  # as `python script.py` does
    try:
        runpy.run_path(argv[0], run_name="__main__")
    finally:
        print(check_modules(), file=sys.stderr)


if __name__ == "__main__":
    _run_script(sys.argv[1:])
