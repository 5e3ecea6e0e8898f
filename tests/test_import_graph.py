"""The package's import graph, read statically from the source, has no circles.

An edge ``a -> b`` means: executing module ``a`` imports chainrule module ``b``. The graph
is read with ``ast`` from every ``import`` and ``from ... import`` in ``src/chainrule``:

* ``import chainrule.x.y`` and ``from chainrule.x import y`` (y a submodule) point at the
  module ``chainrule.x.y``; ``from chainrule.x import name`` (not a submodule) points at
  the package ``chainrule.x`` itself, whose ``__init__`` must have run.
* Importing ``chainrule.x.y`` also runs the ``__init__`` of each package on the way,
  except those that enclose the importing module (they started running before it did).
* Imports under ``if TYPE_CHECKING:`` never run, and are left out.

Imports inside functions count as edges too: a function-level import run while a module
is half-built (a rule registered at import that calls a helper) sees what a module-level
one would, and a circle hidden by a lazy import is a circle of the design all the same.
So the graph of all imports (``ALL``) has no circle.

And no layer imports a layer above it (``LAYERS``, bottom first): the engine, its support
modules, the primitives, the transforms, the front end (Tensor), the differentiated
solvers, the tools, the faces. Imports within a layer are free (the circle test covers
them).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "chainrule"


def _modules() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the package."""
    found = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve_from(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from X import ...`` reads from."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The chainrule modules an import statement makes Python execute (see the docstring)."""
    if isinstance(node, ast.Import):
        named = [alias.name for alias in node.names]
    else:
        source = _resolve_from(module, node)
        named = [
            f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source
            for alias in node.names
        ]
    targets = []
    for name in named:
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            continue
        parts = name.split(".")
        for k in range(1, len(parts) + 1):  # the packages on the way, then the module
            step = ".".join(parts[:k])
            if (
                step in MODULES
                and step != module
                and not module.startswith(step + ".")
                and step not in targets
            ):
                targets.append(step)
        if name in MODULES and name not in targets:
            targets.append(name)  # (a package enclosing the importer, read from: a real edge)
    return targets


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _read_imports(module: str, tree: ast.Module) -> tuple[set[str], set[str]]:
    """(modules imported at module level, modules imported inside functions)."""
    eager: set[str] = set()
    lazy: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child, in_function)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            (lazy if in_function else eager).update(_targets(module, node))
        inside = in_function or isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
        )
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(tree, False)
    return eager, lazy


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    eager_edges, lazy_edges = {}, {}
    for module, path in MODULES.items():
        eager, lazy = _read_imports(module, ast.parse(path.read_text(), str(path)))
        eager_edges[module] = eager
        lazy_edges[module] = lazy - eager
    return eager_edges, lazy_edges


EAGER, LAZY = _graph()


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as ``[a, b, ..., a]``, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for root in sorted(edges):
        if root in state:
            continue
        path, stack = [root], [iter(sorted(edges[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(edges.get(nxt, ()))))
    return None


def find_path(edges: dict[str, set[str]], start: str, end: str) -> list[str] | None:
    """A shortest path ``[start, ..., end]`` along the edges, or None (breadth first)."""
    came_from = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            if node == end:
                path = [node]
                while came_from[path[-1]] is not None:
                    path.append(came_from[path[-1]])
                return path[::-1]
            for nxt in sorted(edges.get(node, ())):
                if nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    return None


def test_the_graph_is_read():
    # the walk finds the package's known structure (a broken walk would find no cycle)
    assert len(MODULES) > 60
    assert "chainrule.numpy" in EAGER["chainrule"]
    assert "chainrule.numpy.numpy_wrapper" in EAGER["chainrule.numpy.linalg"]
    assert "chainrule.numpy.linalg" in EAGER["chainrule.numpy.rules.linalg"]
    # a package enclosing the importer is not an edge; one outside it is
    assert "chainrule.numpy" not in EAGER["chainrule.numpy.linalg"]
    assert "chainrule.numpy" in EAGER["chainrule.scipy.special"]
    assert sum(map(len, EAGER.values())) > 150


def test_find_cycle_reports_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    assert find_path({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}}, "a", "d") == ["a", "b", "d"]
    assert find_path({"a": {"b"}, "b": set()}, "b", "a") is None


ALL = {module: EAGER[module] | LAZY[module] for module in MODULES}


def test_imports_have_no_cycle_function_level_ones_included():
    cycle = find_cycle(ALL)
    assert cycle is None, "import cycle (function-level imports included): " + " -> ".join(
        cycle
    )


# The layers, bottom first: (name, module prefixes). A module belongs to the layer of the
# longest prefix that names it or a package enclosing it; moving a module moves a path here.
LAYERS: list[tuple[str, list[str]]] = [
    ("engine", ["chainrule._core"]),
    # what the rule tables and transforms share below the primitives: sparsity patterns
    # (rules declare them), what chainrule reads of the user's code, autograd's engine aliases
    ("engine support", [
        "chainrule._sparsity", "chainrule._user_code", "chainrule.builtins",
        "chainrule.tracer",
    ]),
    ("primitives", [
        "chainrule.numpy", "chainrule.scipy.linalg",
        "chainrule.scipy.special", "chainrule.scipy.signal", "chainrule.scipy.stats",
        "chainrule.scipy.misc", "chainrule.scipy.sparse", "chainrule.scipy.rules",
        "chainrule.scipy._closure",
    ]),
    ("transforms", [
        "chainrule._transforms", "chainrule.jit", "chainrule.extend", "chainrule.test_util",
    ]),
    ("front end", ["chainrule.tensor"]),  # a Tensor is a value every solver accepts
    ("differentiated solvers", [
        # (chainrule.scipy's __init__ imports every module under it, the solvers too)
        "chainrule.scipy", "chainrule.scipy.optimize", "chainrule.scipy.integrate",
        "chainrule.scipy._staged",
    ]),
    ("tools", [
        "chainrule.explain", "chainrule.debug", "chainrule.nn", "chainrule.optim",
        "chainrule.serialization", "chainrule.coverage", "chainrule._specs",
        "chainrule.misc",
    ]),
    # the package (its __init__ imports everything) and the modules kept for autograd's names
    ("faces", ["chainrule", "chainrule.__main__", "chainrule.core", "chainrule.util",
               "chainrule.wrap_util"]),
]


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` of the layer ``module`` belongs to (longest prefix)."""
    best, best_length = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    return best


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} "
        f"({LAYERS[layer_of(target)][0]})"
        for module, targets in edges.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) < 0] == []
    assert layer_of("chainrule._core.tracer") == 0
    assert layer_of("chainrule.scipy.optimize") > layer_of("chainrule.scipy.stats.norm") == 2
    assert layer_of("chainrule") == len(LAYERS) - 1


def test_the_layer_check_finds_an_upward_import():
    found = upward_imports({"chainrule._core.tracer": {"chainrule.jit"},
                            "chainrule.jit": {"chainrule._core.tracer"}})
    assert found == ["chainrule._core.tracer (engine) imports chainrule.jit (transforms)"]


def test_no_layer_imports_a_layer_above_it():
    assert upward_imports(ALL) == []


# Inside the differentiated solvers, floors of the same kind, bottom first: optimize's
# implicit-differentiation engine, the result objects it answers, the driver every solver
# calls, bounds, the solver families, optimize's face; then integrate, whose event times
# are implicit solutions by optimize's driver: what its rules share, ivp_values, the
# solvers with the adjoint and events, solve_ivp, its face.
SOLVER_FLOORS: list[list[str]] = [
    ["chainrule.scipy.optimize._implicit_system"],
    ["chainrule.scipy.optimize._results"],
    ["chainrule.scipy.optimize._driver"],
    ["chainrule.scipy.optimize._bounds"],
    ["chainrule.scipy.optimize._minimize", "chainrule.scipy.optimize._roots",
     "chainrule.scipy.optimize._least_squares"],
    ["chainrule.scipy.optimize"],
    ["chainrule.scipy.integrate._forward", "chainrule.scipy.integrate._lifting",
     "chainrule.scipy.integrate._sensitivity"],
    ["chainrule.scipy.integrate._ivp_values"],
    ["chainrule.scipy.integrate._adjoint", "chainrule.scipy.integrate._events",
     "chainrule.scipy.integrate._odeint", "chainrule.scipy.integrate._quad"],
    ["chainrule.scipy.integrate._solve_ivp"],
    ["chainrule.scipy.integrate"],
]


def test_the_solvers_floors_hold():
    floor = {module: i for i, modules in enumerate(SOLVER_FLOORS) for module in modules}
    solvers = [m for m in MODULES if m.startswith(("chainrule.scipy.optimize",
                                                   "chainrule.scipy.integrate"))]
    assert sorted(solvers) == sorted(floor), "a solver module without a floor, or gone"
    upward = [f"{module} imports {target}" for module in solvers for target in ALL[module]
              if target in floor and floor[target] > floor[module]]
    assert upward == []


# Rules are registered by the package __init__s, not by the wrapper modules: importing one
# public module alone, first, in a fresh interpreter, must still give derivatives in both
# modes. Each case: the import, a function f of x, x, and f's gradient derived by hand.
FRESH_IMPORT_CASES = {
    "chainrule.numpy": (
        "import chainrule.numpy as np",
        "lambda x: np.sum(np.sin(x) * x)",
        "onp.array([0.3, -1.2, 2.0])",
        "onp.cos(x) * x + onp.sin(x)",
    ),
    "chainrule.numpy.linalg": (
        "import chainrule.numpy.linalg as la",
        "lambda a: la.det(a)",
        "onp.array([[2.0, 0.5], [0.3, 1.5]])",
        "onp.linalg.det(x) * onp.linalg.inv(x).T",
    ),
    "chainrule.numpy.fft": (
        "from chainrule.numpy import fft",
        # sum_k Re X_k = N x_0 for a real x
        "lambda x: fft.fft(x).real.sum()",
        "onp.array([0.5, -1.0, 2.0, 0.25])",
        "onp.array([4.0, 0.0, 0.0, 0.0])",
    ),
    "chainrule.scipy.special": (
        "from chainrule.scipy import special",
        "lambda x: special.gammaln(x).sum()",
        "onp.array([0.7, 2.5, 4.0])",
        "scipy.special.digamma(x)",
    ),
    "chainrule.scipy.linalg": (
        "import chainrule.scipy.linalg as sla",
        # d tr(expm(A)) = tr(expm(A) dA)
        "lambda a: sla.expm(a).trace()",
        "onp.array([[0.1, 0.4], [-0.3, 0.2]])",
        "scipy.linalg.expm(x).T",
    ),
    "chainrule.scipy.signal": (
        "from chainrule.scipy import signal",
        # every x_i meets every kernel entry once in the full convolution
        "lambda x: signal.convolve(x, onp.array([1.0, -2.0, 0.5])).sum()",
        "onp.array([0.3, 1.1, -0.7, 2.0])",
        "onp.full(4, -0.5)",
    ),
    "chainrule.scipy.integrate": (
        "import chainrule.scipy.integrate as integrate",
        # y' = -a y, y(0) = 1: y(1) = exp(-a), dy(1)/da = -exp(-a)
        "lambda a: integrate.odeint(lambda y, t, a: -a * y, 1.0, onp.array([0.0, 1.0]), "
        "args=(a,), rtol=1e-10, atol=1e-12)[-1, 0]",
        "0.7",
        "-onp.exp(-x)",
    ),
    "chainrule.scipy.stats": (
        "from chainrule.scipy.stats import norm",
        "lambda x: norm.logpdf(x, 0.5, 2.0).sum()",
        "onp.array([0.3, -1.0])",
        "-(x - 0.5) / 4.0",
    ),
    "chainrule.scipy.misc": (
        "from chainrule.scipy.misc import logsumexp",
        "lambda x: logsumexp(x)",
        "onp.array([0.3, -1.0, 2.0])",
        "onp.exp(x) / onp.exp(x).sum()",
    ),
}


@pytest.mark.parametrize("module", sorted(FRESH_IMPORT_CASES))
def test_a_module_imported_alone_has_its_rules(module):
    imports, f, x, expected = FRESH_IMPORT_CASES[module]
    script = textwrap.dedent(f"""
        {imports}
        import numpy as onp
        import scipy.linalg, scipy.special
        from chainrule import grad, jacfwd
        f = {f}
        x = {x}
        expected = {expected}
        reverse, forward = grad(f)(x), jacfwd(f)(x)
        onp.testing.assert_allclose(reverse, expected, rtol=1e-6, atol=1e-9)
        onp.testing.assert_allclose(forward, expected, rtol=1e-6, atol=1e-9)
        print("ok")
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
