"""The member lists of docs/api.md, made from the package at build time (docs/hooks.py puts
them in place of the page's ``<!-- api-reference -->`` line), so the reference cannot go stale:
every name in ``chainrule.__all__`` and in each public module's ``__all__`` is listed under
its public path (``chainrule.grad``, never ``chainrule._transforms.grad``).

A public module is any module of the package with no ``_`` in its path. Its members are its
``__all__`` or, without one, the public names it defines. An object reachable by several
public paths is documented once, under the first, and the others point to it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types

MARKER = "<!-- api-reference -->"

# sections of chainrule's own namespace, by the module that defines the object
TOP_SECTIONS = [
    ("chainrule._transforms.derivatives", "Transforms (autograd's API)"),
    ("chainrule._transforms.functional", "Transforms (JAX's API)"),
    ("chainrule._core.pytree", "Containers (pytrees)"),
    ("chainrule._core.tracer", "Primitives and tracing"),
    ("chainrule.builtins", "Containers inside traced code"),
    ("chainrule.explain", "explain"),
    ("chainrule.tensor", "Tensor"),
]
# modules whose names are listed, not documented again: autograd's internal names that user
# code imports anyway (the compatibility layer), and the coverage command
LISTED_ONLY = {
    "chainrule.core": "autograd's `autograd.core` names",
    "chainrule.tracer": "autograd's `autograd.tracer` names",
    "chainrule.util": "autograd's `autograd.util` names",
    "chainrule.wrap_util": "autograd's `autograd.wrap_util` names",
    "chainrule.misc.tracers": "autograd's `autograd.misc.tracers` names",
    "chainrule.coverage": "the `python -m chainrule.coverage` command",
}
# the wrapped namespaces: thousands of NumPy/SciPy names, listed on the coverage page
NAMESPACES = ("chainrule.numpy", "chainrule.scipy")


def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def public_modules() -> list[str]:
    """Every public module reachable by its public path, chainrule first, then by name."""
    import chainrule

    found = []
    for info in pkgutil.walk_packages(chainrule.__path__, "chainrule."):
        name = info.name
        if not _public(name) or name.startswith(NAMESPACES) or name.endswith("__main__"):
            continue
        parent, _, last = name.rpartition(".")
        module = importlib.import_module(name)
        # chainrule.misc.flatten is the function flatten, not its module: no public path
        if getattr(importlib.import_module(parent), last, None) is module:
            found.append(name)
    return ["chainrule"] + sorted(found)


def members(module_name: str) -> list[str]:
    """The public names of a module: its ``__all__``, else the public names it defines."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n, obj in vars(module).items()
            if not n.startswith("_") and _defined_in(obj, module_name)
        ]
    return list(names)


def _defined_in(obj: object, module_name: str) -> bool:
    where = getattr(obj, "__module__", None)
    return isinstance(where, str) and (where == module_name or where.startswith(module_name + "."))


def _entry(path: str, level: int) -> list[str]:
    return [
        f"::: {path}",
        "    options:",
        "      show_root_heading: true",
        "      show_root_full_path: true",
        f"      heading_level: {level}",
        "",
    ]


def generate() -> str:
    """The markdown that replaces ``MARKER``: sections of ``:::`` entries and name lists."""
    import chainrule

    documented: dict[int, str] = {}  # id of an object -> the public path it is documented at
    out: list[str] = []

    def document(path: str, obj: object, level: int) -> None:
        if inspect.isroutine(obj) or inspect.isclass(obj):
            if id(obj) in documented:
                first = documented[id(obj)]
                out.append(f"- `{path}`: the same object as [`{first}`](#{first})")
                out.append("")
                return
            documented[id(obj)] = path
        out.extend(_entry(path, level))

    top = [n for n in chainrule.__all__ if not isinstance(getattr(chainrule, n), types.ModuleType)]
    grouped: dict[str, list[str]] = {title: [] for _, title in TOP_SECTIONS}
    grouped["More"] = []
    for name in top:
        obj = getattr(chainrule, name)
        title = next(
            (
                t
                for module, t in TOP_SECTIONS
                if getattr(importlib.import_module(module), name, None) is obj
            ),
            "More",
        )
        grouped[title].append(name)
    out.append("## chainrule")
    out.append("")
    out.append("`import chainrule` gives these names; the modules below have their own sections.")
    out.append("")
    for title, names in grouped.items():
        if not names:
            continue
        out += [f"### {title}", ""]
        for name in names:
            document(f"chainrule.{name}", getattr(chainrule, name), 4)

    listed: list[str] = []
    for module_name in public_modules()[1:]:
        if module_name in LISTED_ONLY:
            listed.append(module_name)
            continue
        module = importlib.import_module(module_name)
        summary = (inspect.getdoc(module) or "").split("\n\n")[0].replace("\n", " ")
        out += [f"## {module_name}", "", summary, ""]
        for name in members(module_name):
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType):
                out += [f"- `{module_name}.{name}`: see [{obj.__name__}](#{_heading_id(obj)})", ""]
                continue
            document(f"{module_name}.{name}", obj, 3)

    out += [
        "## Compatibility modules",
        "",
        "Names kept at autograd's paths for code that imports them, and the coverage "
        "command; the objects behind them are documented above where they are public.",
        "",
    ]
    for module_name in listed:
        names = ", ".join(f"`{n}`" for n in members(module_name))
        out.append(f"- `{module_name}` ({LISTED_ONLY[module_name]}): {names}")
    out += [
        "",
        "## chainrule.numpy and chainrule.scipy",
        "",
        "The wrapped NumPy and SciPy namespaces (`chainrule.numpy`, `.numpy.linalg`, "
        "`.numpy.fft`, `.numpy.random`, `chainrule.scipy.*`) have NumPy's and SciPy's own "
        "names and signatures; the [coverage table](coverage.md) lists every "
        "differentiable function and its rules.",
        "",
    ]
    return "\n".join(out)


def _heading_id(module: types.ModuleType) -> str:
    # MkDocs' toc extension: lowercase, dots dropped, as for "## chainrule.optim"
    return module.__name__.lower().replace(".", "")


if __name__ == "__main__":
    print(generate())
