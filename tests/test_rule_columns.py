"""A snapshot of the rule table: for every primitive chainrule registers, which columns
of its entry (``PrimitiveRules``) are filled, one primitive per line, sorted.

Moving rules between files (issue 36: a primitive is one entry) must not change the
table; this test shows that it did not. After a deliberate change (a new primitive, a new
rule) regenerate the snapshot and commit it with the change:

    PYTHONPATH=src python -m tests.test_rule_columns --update

A line reads ``name: vjp jvp batched_jvp reads=(ans,0) label sparsity batch taylor=kind
layout_by_value operator new_array neutral=ones lowered_by_value finite_from_inf=(1)
reduction=add``:
``reads`` is what a VJP declared it reads (the tape keeps only that), ``taylor`` names the
kind of the Taylor rule (``closed form`` when the rule carries none), ``layout_by_value``
marks an answer whose type, dtype or shape its arguments' values decide; the rest are
``chainrule.jit``'s emission hints (``PrimitiveRules``): the label is Python's operator,
the answer is never a view, the constant a product by which is its other operand, jit's
code reads the constants' values, the positions where an inf may give a finite answer,
the ufunc whose reduce a call on an ndarray is; ``symmetric`` is the backward pass's
(interchangeable arguments: ``x * x`` pulled back once).
"""

from __future__ import annotations

import difflib
import importlib
import sys
from pathlib import Path

import chainrule
from chainrule._core.rule_table import registered_in, rule_table

SNAPSHOT = Path(__file__).parent / "snapshots" / "rule_columns.txt"

# every module that registers rules (chainrule itself imports the rest)
MODULES = ("chainrule.numpy.linalg", "chainrule.numpy.fft", "chainrule.scipy.special",
           "chainrule.scipy.linalg", "chainrule.scipy.signal", "chainrule.scipy.stats",
           "chainrule.scipy.integrate", "chainrule.scipy.optimize", "chainrule.tensor",
           "chainrule.misc", "chainrule.explain._expr", "chainrule.scipy.sparse.linalg")
for _module in MODULES:
    importlib.import_module(_module)

PACKAGE = Path(chainrule.__file__).resolve().parent


def package_file(filename: str) -> str | None:
    """``filename`` relative to the chainrule package (``numpy/rules/shape.py``), or None
    for a file outside it (a test's or user's primitive)."""
    path = Path(filename).resolve()
    return path.relative_to(PACKAGE).as_posix() if path.is_relative_to(PACKAGE) else None


def own_primitives() -> list:
    """The primitives chainrule registers itself (tests may add their own to the table)."""
    return [fun for fun in list(rule_table)
            if any(package_file(f) for files in registered_in.get(fun, {}).values()
                   for f in files)]


def _public_names() -> dict[int, str]:
    """id(primitive) -> the name it is reached by: the shortest ``module.attribute`` among
    chainrule's loaded modules, public names before private ones."""
    candidates: dict[int, list] = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "chainrule"
                                  or module_name.startswith("chainrule.")):
            continue
        for attr, value in list(vars(module).items()):
            if value in rule_table if _hashable(value) else False:
                private = attr.startswith("_") or any(
                    part.startswith("_") for part in module_name.split("."))
                name = f"{module_name}.{attr}"
                candidates.setdefault(id(value), []).append((private, len(name), name))
    return {key: min(names)[2] for key, names in candidates.items()}


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return callable(value)


def columns_of(fun) -> str:
    entry = rule_table[fun]
    columns = [c for c in ("vjp", "jvp", "batched_jvp") if getattr(entry, c) is not None]
    if entry.reads_by_argnum is not None:  # per traced argument
        per = (f"{i}:({','.join(str(r) for r in sorted(reads, key=str))})"
               for i, reads in sorted(entry.reads_by_argnum.items()))
        columns.append(f"reads={{{' '.join(per)}}}")
    elif entry.unread_args is not None:
        read = ["ans"] if entry.reads_ans else []
        read += [str(i) for i in range(4) if i not in entry.unread_args]
        columns.append(f"reads=({','.join(read)})")
    columns += [c for c in ("label", "sparsity", "batch") if getattr(entry, c) is not None]
    if entry.taylor is not None:
        columns.append(f"taylor={getattr(entry.taylor, 'kind', 'closed form')}")
    if entry.layout_by_value:
        columns.append("layout_by_value")
    columns += [c for c in ("operator", "new_array") if getattr(entry, c)]
    if entry.neutral is not None:
        columns.append(f"neutral={entry.neutral}")
    if entry.lowered_by_value:
        columns.append("lowered_by_value")
    if entry.finite_from_inf:
        columns.append(f"finite_from_inf=({','.join(map(str, entry.finite_from_inf))})")
    if entry.reduction is not None:
        columns.append(f"reduction={entry.reduction.__name__}")
    if entry.lowering is not None:
        columns.append("lowering")
    if entry.silent is not None:
        columns.append(f"silent={entry.silent.replace(' ', '_')}")
    if entry.takes_masks is not False:
        columns.append("takes_masks" + ("" if entry.takes_masks is True else
                                        f"={entry.takes_masks}"))
    if entry.takes_index_arrays:
        columns.append("takes_index_arrays")
    if entry.symmetric:
        columns.append("symmetric")
    return " ".join(columns)


def snapshot_lines() -> list[str]:
    names = _public_names()
    lines = []
    for fun in own_primitives():
        raw = getattr(fun, "fun", fun)
        name = names.get(id(fun)) or (
            f"{getattr(raw, '__module__', None)}."
            f"{getattr(raw, '__qualname__', getattr(raw, '__name__', '?'))}")
        lines.append(f"{name}: {columns_of(fun)}")
    return sorted(lines)


def test_rule_columns_match_the_snapshot():
    expected = SNAPSHOT.read_text().splitlines()
    actual = snapshot_lines()
    diff = list(difflib.unified_diff(expected, actual, "snapshot", "now", lineterm=""))
    assert not diff, (
        "The rule table's columns changed:\n" + "\n".join(diff) + "\nIf this is meant, "
        "regenerate with `PYTHONPATH=src python -m tests.test_rule_columns --update`.")


def test_every_primitive_has_a_name_of_its_own():
    lines = snapshot_lines()
    names = [line.split(": ")[0] for line in lines]
    assert len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)
    assert len(lines) > 250  # the whole table, not a part of it


# ----------------------------------------------------------------------------- one file
# Every primitive's columns are registered from ONE file (``rule_table.registered_in``, the
# file whose top-level code made each registration), so its VJP, JVP, label, sparsity,
# batching and Taylor rules are read side by side. User primitives (``chainrule.extend``)
# are the user's module's and not checked here. The one exception, with its reason:
# the engine's own primitives (copy_of, the container primitives of ``_core``) get their
# sparsity rules from the sparsity layer: it sits above the engine, which may not import it
# (tests/test_import_graph.py).
ENGINE_SPARSITY = "_sparsity/detection.py"


def registering_files(fun) -> set[str]:
    # (only the package's files: a rule a test or a user sets on a primitive, as the
    # harness's planted error does, overrides the entry from outside and is not its source)
    files = {package_file(f) for column in registered_in.get(fun, {}).values()
             for f in column} - {None}
    if any(f.startswith("_core/") for f in files):
        files.discard(ENGINE_SPARSITY)
    return files


def test_every_primitive_is_registered_from_one_file():
    names = _public_names()
    spread = sorted(
        f"{names.get(id(fun), fun)}: {', '.join(sorted(files))}"
        for fun in own_primitives()
        if len(files := registering_files(fun)) > 1)
    assert not spread, "columns registered from several files:\n" + "\n".join(spread)


# ----------------------------------------------------------------------------- jit's hints
def test_jit_hints_refuse_what_jit_could_not_read():
    import pytest

    from chainrule._core.rules import deflabel, defneutral, defsilent
    from chainrule._core.tracer import primitive

    scaled = primitive(lambda x, c: x * c)
    with pytest.raises(ValueError, match=r"defneutral\(<lambda>, 'zeros'\): the kind is one of "
                                         r"'ones', 'eye'"):
        defneutral(scaled, "zeros")
    with pytest.raises(TypeError, match="needs a format string"):
        deflabel(scaled, lambda texts, args: " * ".join(texts), operator=True)
    assert rule_table.get(scaled) is None or rule_table[scaled].neutral is None
    with pytest.raises(ValueError, match=r"defsilent\(<lambda>, 'never'\): the condition is one "
                                         r"of 'always', 'fixed index', 'one number'"):
        defsilent(scaled, "never")


def test_jit_lists_no_primitive_of_its_own():
    # what jit knows of a primitive is in the primitive's entry (its emission hints): no
    # module of chainrule.jit holds a collection naming primitives or their functions as
    # it is imported (a fresh process: jit's caches, keyed by the functions it met, fill
    # as it runs)
    import subprocess

    found = subprocess.run([sys.executable, "-c", _NAME_LISTS], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert found == "[]", found


_NAME_LISTS = """
import importlib, pkgutil
import chainrule.numpy, chainrule.scipy
from chainrule._core.rule_table import rule_table
package = importlib.import_module("chainrule.jit")  # (the module; chainrule.jit is jit)
primitives = {id(f) for f in rule_table} | {id(getattr(f, "fun", f)) for f in rule_table}
found = []
for info in pkgutil.iter_modules(package.__path__):
    module = importlib.import_module(f"chainrule.jit.{info.name}")
    for name, value in vars(module).items():
        if value is rule_table:
            continue  # (the table itself, which jit reads)
        if isinstance(value, dict):
            items = [*value, *value.values()]
        elif isinstance(value, (set, frozenset, tuple, list)):
            items = list(value)
        else:
            continue
        named = [item for item in items if callable(item) and id(item) in primitives]
        if named:
            found.append(f"{info.name}.{name}: {named[:3]}")
print(found)
"""

if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text("\n".join(snapshot_lines()) + "\n")
        print(f"wrote {SNAPSHOT} ({len(snapshot_lines())} primitives)")
    else:
        sys.exit("usage: python -m tests.test_rule_columns --update")

