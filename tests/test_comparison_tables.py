"""The tables that compare chainrule with its peers say what the code has (issue 35: the
comparison page said chainrule had no jit, after it had one).

- docs/comparison.md: every row of chainrule's column is run (``CLAIMS``: the cell's text
  and a check that does what it says), and every row must have one; the names the peers'
  columns give are looked up in autograd, JAX and PyTorch where they are installed, and
  autograd's "no" cells are tried; the speed paragraph's figures are the benchmark page's.
- docs/tensor.md and docs/migrating.md: every method, function and class their tables name
  as chainrule's exists (PyTorch's too, where torch is installed), and what the tensor
  table lists as missing does not exist.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule import Tensor

DOCS = Path(__file__).resolve().parents[1] / "docs"


def tables(page: str) -> list[list[list[str]]]:
    """The Markdown tables of a page: rows (the header first) of cells (``\\|`` unescaped)."""
    found, current = [], None
    for line in (DOCS / page).read_text(encoding="utf-8").splitlines():
        if line.startswith("|"):
            cells = [c.strip().replace("\\|", "|")
                     for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if current is None:
                current = []
                found.append(current)
            if not all(set(c) <= set("-: ") for c in cells):
                current.append(cells)
        else:
            current = None
    return found


def names(cell: str) -> list[str]:
    """The code spans of a cell."""
    return re.findall(r"`([^`]+)`", cell)


def resolve(root, dotted: str):
    """``root.a.b`` for ``"a.b"`` (importing submodules on the way), or None."""
    obj = root
    for part in dotted.split("."):
        nxt = getattr(obj, part, None)
        if nxt is None and hasattr(obj, "__path__"):
            try:
                nxt = importlib.import_module(f"{obj.__name__}.{part}")
            except ImportError:
                nxt = None
        if nxt is None:
            return None
        obj = nxt
    return obj


# ----------------------------------------------------------------------------- comparison.md
def _jvp_for_every_vjp():
    from chainrule._core.rule_table import rule_table

    own = [e for f, e in rule_table.items()
           if (getattr(getattr(f, "fun", f), "__module__", "") or "").split(".")[0]
           in ("chainrule", "numpy", "scipy") and e.vjp is not None]
    assert len(own) > 200 and all(e.jvp is not None for e in own)


def _mixed_orders():
    f = lambda x: np.sin(x) * x
    third = chainrule.jvp(chainrule.grad(chainrule.grad(f)), (0.7,), (1.0,))[1]
    # d3/dx3 of x sin x = -3 sin x - x cos x
    assert third == pytest.approx(-3 * onp.sin(0.7) - 0.7 * onp.cos(0.7), rel=1e-12)


def _in_place():
    def f(x):
        a = x * np.ones(3)  # a traced array
        a[1] = x * x
        a[2] += x
        return np.sum(a)

    assert chainrule.grad(f)(1.5) == pytest.approx(1.0 + 3.0 + 2.0)


@dataclasses.dataclass
class _Params:
    w: onp.ndarray
    b: float


def _dataclass_pytree():
    g = chainrule.grad(lambda p: np.sum(p.w**2) + p.b)(_Params(onp.array([1.0, 2.0]), 0.5))
    assert type(g) is _Params and list(g.w) == [2.0, 4.0] and g.b == 1.0


def _define_by_run():
    x = Tensor(3.0)
    (x * x).backward()
    assert x.grad.item() == 6.0


def _control_flow_under_jit_and_vmap():
    def f(x):
        return x * 2.0 if np.sum(x) > 0 else -x

    jitted = chainrule.jit(f)
    assert jitted(onp.array([1.0])) == 2.0 and jitted(onp.array([-1.0])) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split into groups is announced
        out = chainrule.vmap(f)(onp.array([[1.0], [-1.0]]))
    onp.testing.assert_array_equal(out, [[2.0], [1.0]])


def _jit_emits_numpy():
    jitted = chainrule.jit(chainrule.grad(lambda x: np.sum(np.tanh(x) ** 2)))
    x = onp.array([0.3, -0.2])
    onp.testing.assert_array_equal(jitted(x), chainrule.grad(lambda x: np.sum(np.tanh(x) ** 2))(x))
    assert "def " in jitted.lower(x).source


def _vmap():
    per_example = chainrule.vmap(chainrule.grad(lambda w, x: np.sum(w * x) ** 2), (None, 0))
    w, xs = onp.array([1.0, 2.0]), onp.array([[1.0, 0.0], [0.0, 1.0]])
    onp.testing.assert_allclose(per_example(w, xs), [[2.0, 0.0], [0.0, 4.0]])


def _taylor_counts() -> dict:
    """The rule table's primitives with a JVP (so a Taylor rule: jet nests the JVP where
    there is no closed form) and those with a closed-form Taylor rule."""
    from tests.test_rule_columns import own_primitives

    from chainrule._core.rule_table import rule_table
    entries = [rule_table[f] for f in own_primitives() if rule_table[f].jvp is not None]
    return {"with_jvp": len(entries), "closed": sum(e.taylor is not None for e in entries)}


def _taylor():
    """jet's 10th derivative of exp(sin x) equals nested jvp's; laplacian equals trace(H)."""
    f = lambda x: np.exp(np.sin(x))  # noqa: E731
    h = f
    for _ in range(5):
        h = (lambda inner: lambda t: chainrule.jvp(inner, (t,), (1.0,))[1])(h)
    onp.testing.assert_allclose(chainrule.taylor_derivatives(f, 5)(0.3)[5], h(0.3), rtol=1e-12)
    g = lambda x: np.sum(np.tanh(x) * x[::-1])  # noqa: E731
    x = onp.array([0.2, -0.5, 0.9])
    onp.testing.assert_allclose(chainrule.laplacian(g)(x), onp.trace(chainrule.hessian(g)(x)),
                                rtol=1e-12)


def _sparse():
    pytest.importorskip("scipy", reason="sparse Jacobians are scipy.sparse matrices")
    f = lambda x: np.sin(x) * x[0]
    x = onp.array([0.5, 1.0, 2.0])
    onp.testing.assert_allclose(chainrule.jacobian(f, sparse=True)(x).toarray(),
                                chainrule.jacobian(f)(x), rtol=1e-14)
    h = lambda x: np.sum(x**3)
    onp.testing.assert_allclose(chainrule.hessian(h, sparse=True)(x).toarray(), onp.diag(6 * x))


def _implicit_solvers():
    pytest.importorskip("scipy", reason="the solvers are SciPy's")
    from chainrule.scipy import integrate, optimize

    argmin = lambda p: optimize.minimize(lambda z: np.sum((z - p) ** 2), onp.zeros(1)).x[0]
    assert chainrule.grad(argmin)(2.0) == pytest.approx(1.0, rel=1e-6)
    decay = lambda k: integrate.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), [1.0],
                                          rtol=1e-10, atol=1e-12).y[0, -1]
    assert chainrule.grad(decay)(0.5) == pytest.approx(-onp.exp(-0.5), rel=1e-6)


def _gpu():
    cupy = pytest.importorskip("cupy", reason="CuPy (and a GPU) are not available here")
    x = cupy.asarray([0.5, 1.0])
    g = chainrule.grad(lambda x: np.sum(np.sin(x)))(x)
    assert type(g) is type(x) and float(abs(g - cupy.cos(x)).max()) < 1e-12


def _dask():
    da = pytest.importorskip("dask.array", reason="Dask is not installed")
    x = da.from_array(onp.array([0.5, 1.0, 2.0]), chunks=2)
    g = chainrule.grad(lambda x: np.sum(np.sin(x)))(x)
    assert isinstance(g, da.Array)
    onp.testing.assert_allclose(g.compute(), onp.cos([0.5, 1.0, 2.0]))


def _scipy_functions():
    pytest.importorskip("scipy", reason="chainrule.scipy wraps SciPy")
    import scipy.special

    from chainrule.scipy import integrate, linalg, special, stats

    assert chainrule.grad(special.gammaln)(1.7) == pytest.approx(scipy.special.digamma(1.7))
    assert chainrule.grad(stats.norm.logpdf)(0.3) == pytest.approx(-0.3)
    a = onp.array([[2.0, 1.0], [1.0, 3.0]])
    onp.testing.assert_allclose(chainrule.grad(lambda a: np.sum(linalg.expm(a)))(a).shape, (2, 2))
    assert callable(integrate.odeint)


def _explain():
    report = chainrule.explain(lambda a, b: np.log(a) * b, 2.0, 5.0)
    assert "Reverse adjoint trace" in report.text() and report.gradient[1] == onp.log(2.0)


def _dependencies():
    import tomllib

    project = tomllib.loads((DOCS.parent / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0] for d in project["dependencies"]] == ["numpy"]
    assert "scipy" in project["optional-dependencies"]


def _reverse():
    assert chainrule.grad(lambda x: np.log(x) * x)(2.0) == pytest.approx(onp.log(2.0) + 1)


def _numpy_models():
    assert np.sin is not onp.sin and chainrule.grad(np.sin)(0.0) == 1.0


# the label of each row: (chainrule's cell, the check that it is true)
CLAIMS: dict[str, tuple[str, Callable[[], None]]] = {
    "write models in": ("NumPy (`chainrule.numpy`)", _numpy_models),
    "reverse mode": ("yes", _reverse),
    "forward mode for every primitive": ("yes", _jvp_for_every_vjp),
    "any order, any mix of modes": ("yes", _mixed_orders),
    "in-place array updates": ("yes (`a[i] = x` on traced arrays)", _in_place),
    "pytrees incl. dataclasses": ("yes", _dataclass_pytree),
    "define-by-run objects": ("`Tensor`", _define_by_run),
    "Python control flow on traced values": ("free, also under `jit` and `vmap`",
                                             _control_flow_under_jit_and_vmap),
    "compilation (`jit`)": ("`jit`: the traced program emitted as NumPy code", _jit_emits_numpy),
    "batching (`vmap`)": ("`vmap`", _vmap),
    "Taylor mode (derivatives of order k in one pass)": (
        "`jet` for all {with_jvp} primitives with a JVP (closed-form series for {closed} of "
        "them: the elementwise functions, linear maps, products, `inv`, `solve`, `cholesky`, "
        "`det`, `slogdet`; the others nest their JVP), `taylor_derivatives`, `laplacian` "
        "(exact and stochastic), `hessian_diagonal`; see [Taylor mode](taylor.md)"
        .format(**_taylor_counts()), _taylor),
    "sparse Jacobians and Hessians (coloured)": (
        "`jacobian(f, sparse=True)`, `hessian(f, sparse=True)`", _sparse),
    "solvers differentiated implicitly": (
        "`chainrule.scipy.optimize` (`minimize`, `root`, ...), "
        "`chainrule.scipy.integrate.solve_ivp`", _implicit_solvers),
    "GPU": ("CuPy via dispatch", _gpu),
    "out-of-core / cluster arrays": ("Dask via dispatch", _dask),
    "SciPy functions (special, stats, linalg, odeint)": ("yes", _scipy_functions),
    "explains its own graph and traces": ("`explain`", _explain),
    "dependencies": ("NumPy (SciPy optional)", _dependencies),
}


def _comparison_rows() -> dict[str, list[str]]:
    (table,) = tables("comparison.md")
    header, *rows = table
    assert header == ["", "chainrule", "autograd", "JAX", "PyTorch"]
    return {row[0]: row for row in rows}


def test_every_row_of_chainrules_column_has_its_check():
    rows = _comparison_rows()
    assert set(rows) == set(CLAIMS), "a row was added or renamed: give it a check in CLAIMS"
    for label, (cell, _) in CLAIMS.items():
        assert rows[label][1] == cell, f"{label}: the page says {rows[label][1]!r}"


@pytest.mark.parametrize("label", CLAIMS)
def test_chainrules_column_is_true(label):
    CLAIMS[label][1]()


PEERS = {"autograd": 2, "jax": 3, "torch": 4}


@pytest.mark.parametrize("peer", PEERS)
def test_the_names_in_the_peers_columns_exist(peer):
    module = pytest.importorskip(peer, reason=f"{peer} is not installed")
    checked = 0
    for row in _comparison_rows().values():
        for name in names(row[PEERS[peer]]):
            if not re.fullmatch(r"[A-Za-z_][\w.]*", name):
                continue  # a spelling such as .at[].set
            dotted = name.removeprefix(f"{peer}.")
            if dotted != peer:
                assert resolve(module, dotted) is not None, f"{peer} has no {name}"
                checked += 1
    assert checked > 0 or peer == "autograd"


def test_jets_rule_count_is_jaxs():
    """The JAX column's count of jet's rules, where the installed JAX is the one it names."""
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    from jax.experimental import jet
    cell = _comparison_rows()["Taylor mode (derivatives of order k in one pass)"][3]
    count, version = re.search(r"rules for (\d+) primitives in JAX ([\d.]+)", cell).groups()
    if jax.__version__ != version:
        pytest.skip(f"the page counts JAX {version}'s rules; JAX {jax.__version__} is installed")
    assert len(jet.jet_rules) == int(count)


def test_autogradss_no_cells_are_true():
    autograd = pytest.importorskip("autograd", reason="autograd is not installed")
    import autograd.numpy as anp

    rows = _comparison_rows()
    for label in ("define-by-run objects", "compilation (`jit`)", "batching (`vmap`)",
                  "in-place array updates", "GPU"):
        assert rows[label][2] == "no", label
    assert not any(hasattr(autograd, n) for n in ("Tensor", "jit", "vmap"))

    def in_place(x):
        a = anp.zeros(3)
        a[1] = x
        return anp.sum(a)

    with pytest.raises(ValueError, match="setting an array element with a sequence"):
        autograd.grad(in_place)(1.5)
    assert rows["pytrees incl. dataclasses"][2] == "tuple/list/dict"
    with pytest.raises(TypeError, match="Can't differentiate w.r.t. type"):
        autograd.grad(lambda p: anp.sum(p.w**2))(_Params(onp.array([1.0, 2.0]), 0.5))


# ----------------------------------------------------------------------------- the speed paragraph
def _seconds(cell: str) -> float:
    number, unit = cell.split()[:2]
    return float(number) * {"ms": 1e-3, "µs/prim": 1e-6}[unit]


def test_the_speed_paragraph_says_what_the_benchmark_page_measured():
    found = tables("benchmarks.md")
    times = found[0]
    (targets,) = [t for t in found if t[0][:3] == ["ratio", "target", "measured"]]
    columns = times[0]
    measured = {}
    for row in times[1:]:  # a label may hold an unescaped "|" (|x|^2): the values are last
        label, values = "|".join(row[: len(row) - len(columns) + 1]), row[1 - len(columns):]
        if "ms" in values[0] or "µs" in values[0]:
            measured[label.split(",")[0]] = dict(zip(columns[1:], map(_seconds, values)))
    ratios = {row[0]: row[2] for row in targets[1:]}
    text = (DOCS / "comparison.md").read_text(encoding="utf-8").split("## Speed")[1]
    text = " ".join(text.split())
    for phrase, ratio in [
        ("x on an MLP's gradient", "mlp autograd / chainrule"),
        ("x on an RNN", "rnn autograd / chainrule"),
        ("x on scalar code", "scalar chain autograd / chainrule"),
        ("x on a full Jacobian", "jacobian autograd / chainrule"),
        ("x on a full Hessian", "hessian autograd / chainrule"),
        ("x its time", "mlp chainrule / hand-written"),
    ]:
        assert f"{ratios[ratio]}{phrase}" in text, (phrase, ratios[ratio])
    workloads = list(measured)
    assert len(workloads) == 5
    for workload in workloads:  # faster than autograd everywhere, slower than jitted JAX
        row = measured[workload]
        assert row["chainrule"] < row["autograd"] and row["JAX jit"] < row["chainrule"]
    faster_than_torch = [w for w in workloads
                         if measured[w]["chainrule"] < measured[w]["PyTorch eager"]]
    assert [w.split()[0] for w in faster_than_torch] == ["scalar", "full", "full"]
    assert "faster than PyTorch eager on scalar code, Jacobians and Hessians" in text


# ----------------------------------------------------------------------------- tensor.md
def _torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


def alternatives(head: str) -> list[str]:
    """``sum/mean``, ``logical_and/or/xor``, ``optim.SGD/Adam``: each name written whole."""
    first, *others = head.split("/")
    if "." in first:
        prefix = first.rpartition(".")[0] + "."
    elif "_" in first.strip("_"):
        prefix = first.rpartition("_")[0] + "_"
    else:
        prefix = ""
    return [first] + [name if ("." in name or "_" in name) else prefix + name for name in others]


def _method_names(cell: str) -> list[str]:
    """Tensor methods a cell of the PyTorch column names: ``t.sum/mean(dim)`` gives sum and
    mean; ``sub_`` after ``t.add_`` is a method too."""
    out = []
    for span in names(cell):
        span = span.removeprefix("t.")
        head = re.split(r"[(\s]", span)[0]
        if not re.fullmatch(r"[A-Za-z_][\w/]*", head) or head in ("x", "torch"):
            continue
        out += alternatives(head)
    return out


def test_tensor_methods_table_names_what_the_tensor_has():
    torch = _torch_or_none()
    methods = tables("tensor.md")[0]
    assert methods[0] == ["PyTorch", "chainrule", "difference"]
    checked = 0
    for pytorch, ours, _ in methods[1:]:
        if ours == "same":
            for name in _method_names(pytorch):
                assert hasattr(Tensor, name), f"Tensor has no {name} (docs/tensor.md says same)"
                if torch is not None:
                    assert hasattr(torch.Tensor, name), f"torch.Tensor has no {name}"
                checked += 1
        elif ours == "—":  # listed as missing: it must be missing
            for span in names(pytorch):
                for name in span.removeprefix("torch.").split("/"):
                    assert not hasattr(chainrule, name) and not hasattr(Tensor, name), name
                    if torch is not None:
                        assert hasattr(torch, name)
                    checked += 1
        else:  # chainrule's own spelling of the same
            for span in names(ours):
                head = re.split(r"[(\s]", span)[0]
                assert resolve(chainrule, head) is not None, head
                checked += 1
    assert checked > 100


def _qualified(cell: str) -> list[str]:
    """Dotted names a cell gives, continuing names without a prefix from the last dotted
    one: after ``nn.init.calculate_gain``, ``uniform_`` is nn.init.uniform_; after
    ``nn.Module``, ``parameters`` is nn.Module.parameters (an attribute of the class) and
    after ``nn.Sequential``, ``ReLU`` is nn.ReLU; after ``optim.SGD(...)``, ``.step()`` is
    optim.SGD.step."""
    out, last = [], None
    for span in names(cell):
        for head in alternatives(re.split(r"[(\s=\[]", span)[0].rstrip(".")):
            if not head or not re.fullmatch(r"\.?[A-Za-z_][\w.]*", head):
                continue
            if head.startswith("."):
                out.append(f"{last}{head}")
            elif "." in head:
                out.append(head)
                last = head
            elif last is not None:
                owner = resolve(chainrule, last)
                member = isinstance(owner, type) and (
                    hasattr(owner, head) or head in getattr(owner, "__annotations__", {}))
                out.append(f"{last if member else last.rpartition('.')[0]}.{head}")
            else:
                out.append(head)
    return out


def _attribute(root, name: str):
    """``resolve``, where an attribute only annotated on a class (Module.training) counts."""
    owner, _, last = name.rpartition(".")
    if last in getattr(resolve(root, owner), "__annotations__", {}):
        return True
    return resolve(root, name)


def test_nn_optim_and_functional_tables_name_what_chainrule_has():
    torch = _torch_or_none()
    functional, nn_table = tables("tensor.md")[1:3]
    checked = 0
    for row in functional[1:]:
        for span in names(row[0]):
            name = span.split("(")[0]
            assert hasattr(chainrule.tensor.functional, name), name
            if torch is not None:
                assert hasattr(torch.nn.functional, name), name
            checked += 1
    for pytorch, difference in nn_table[1:]:
        missing = difference == "missing"
        for name in _qualified(pytorch):
            ours = _attribute(chainrule, name)
            assert (ours is None) == missing, f"chainrule.{name}: docs/tensor.md is wrong"
            if torch is not None:
                assert _attribute(torch, name) is not None, f"torch.{name}"
            checked += 1
    assert checked > 60


def test_migrating_tables_chainrule_column_names_what_chainrule_has():
    rows = tables("migrating.md")[0]
    assert rows[0] == ["", "autograd", "chainrule"]
    checked = 0
    for _, _, ours in rows[1:]:
        for name in _qualified(ours):
            if name not in ("x", "vjp_fun", "g", "argnums", "rng"):  # arguments and results
                assert resolve(chainrule, name) is not None, name
                checked += 1
    assert checked > 10
