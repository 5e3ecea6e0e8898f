"""The engine's call handlers belong to what the engine meets (issue 36, the house): batched
types carry their call, node types answer notrace calls, untraceable answers and traced
keywords, box types redo refused lists and foreign containers. No module assigns a global
of another module (of the engine, or jit's)."""

import ast
import pathlib

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule._core import tracer
from chainrule.jit import StagingError
from chainrule.numpy.batched import BatchedArray, batch_call

SRC = pathlib.Path(__file__).resolve().parent.parent / "src" / "chainrule"


def _module_aliases(path: pathlib.Path, tree: ast.Module) -> set[str]:
    """The names a module gives other modules of chainrule (``tracer``, ``reverse``,
    ``_emit`` ...): imported names that are files or packages of the source tree."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = path.parents[node.level - 1]
            elif (node.module or "").split(".")[0] == "chainrule":
                base = SRC.parent
            else:
                continue
            package = base.joinpath(*node.module.split(".")) if node.module else base
            names |= {a.asname or a.name for a in node.names
                      if (package / f"{a.name}.py").exists()
                      or (package / a.name / "__init__.py").exists()}
        elif isinstance(node, ast.Import):
            names |= {a.asname for a in node.names
                      if a.name.startswith("chainrule.") and a.asname}
    return names


def _module_globals_changed(path: pathlib.Path) -> list[str]:
    """``tracer.X = ...``, ``_emit.X = ...`` and ``tracer.X.append(...)`` (and the like):
    the globals of another module of chainrule that the module sets."""
    tree = ast.parse(path.read_text(), str(path))
    aliases = _module_aliases(path, tree)

    def of_module(node) -> bool:
        return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id in aliases

    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
        found += [f"{path.name}:{node.lineno} assigns {t.value.id}.{t.attr}"
                  for t in targets if of_module(t)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("append", "extend", "insert") and of_module(node.func.value):
            found.append(f"{path.name}:{node.lineno} adds to "
                         f"{node.func.value.value.id}.{node.func.value.attr}")
    return found


def test_no_module_sets_a_global_of_another():
    # (the engine's hooks are node methods and registrations; jit's emitter takes no hook:
    # explain's report.code gives each staged call its line through the node)
    changed = [line for path in sorted(SRC.rglob("*.py")) for line in _module_globals_changed(path)]
    assert changed == []
    for name in ("batch_hook", "sequence_hook", "notrace_hook",
                 "untraceable_answer_handlers", "traced_keyword_handlers"):
        assert not hasattr(tracer, name), name


def test_a_permutation_read_from_lexsort_of_a_tuple_is_rechecked_at_each_x():
    # lexsort((x,)) gets x inside a tuple: NumPy reads its plain value, so the order it gives
    # is a decision on x. Sparsity detection must say so, or a SparseJacobian reuses the
    # first x's permutation at every x (it did: a silent wrong Jacobian).
    def sort_twice(x):
        return x[np.lexsort((x,))] * 2.0

    first, second = onp.array([3.0, 1.0, 2.0]), onp.array([1.0, 2.0, 3.0])
    jac = cr.SparseJacobian(sort_twice, first)
    assert "lexsort" in jac.guarded_by
    for x in (first, second, first):
        onp.testing.assert_array_equal(jac(x).toarray(), cr.jacobian(sort_twice)(x))
    # by hand: at the sorted x the permutation is the identity
    onp.testing.assert_array_equal(jac(second).toarray(), 2.0 * onp.eye(3))


def test_jit_still_refuses_a_staged_value_inside_a_list_of_a_notrace_call():
    @cr.jit
    def order(x):
        return np.lexsort((x,))

    with pytest.raises(StagingError, match="inside a list, tuple or keyword"):
        order(onp.array([2.0, 1.0]))


class _Held:
    """A minimal foreign container (as xarray's DataArray): it applies a ufunc to what it
    holds and holds the answer."""

    def __init__(self, data):
        self.data = data

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inner = [i.data if isinstance(i, _Held) else i for i in inputs]
        return _Held(getattr(ufunc, method)(*inner, **kwargs))


def test_a_foreign_container_applies_a_ufunc_to_a_traced_operand_itself():
    base = onp.array([0.5, -1.0, 2.0])
    assert cr.grad(lambda x: np.sum((x * _Held(base)).data))(1.3) == pytest.approx(base.sum())
    # by hand: d/dx sum(sin(x * (b x))) = sum(2 x b cos(x^2 b))
    expected = onp.sum(2 * 1.3 * base * onp.cos(1.3 * 1.3 * base))
    got = cr.grad(lambda x: np.sum(np.sin(x * (_Held(base) * x)).data))(1.3)
    assert got == pytest.approx(expected, rel=1e-12)


def test_lists_of_traced_values_are_redone_as_arrays_and_other_type_errors_kept():
    # d/dx mean([[x, 1], [2, x]]) = 2/4; d/dx sum(concatenate([[x], [x * x]])) = 1 + 2x
    assert cr.grad(lambda x: np.mean([[x, 1.0], [2.0, x]]))(1.5) == 0.5
    assert cr.grad(lambda x: np.sum(np.concatenate(([x], [x * x]))))(1.5) == 4.0
    with pytest.raises(TypeError) as plain:
        onp.add(onp.float64(1.5), "s")
    with pytest.raises(TypeError) as traced:
        cr.grad(lambda x: np.add(x, "s"))(1.5)
    assert type(traced.value) is type(plain.value)
    assert str(traced.value) == str(plain.value)


def test_a_batched_type_answers_through_the_call_it_registered():
    assert tracer.batched_types[BatchedArray] is batch_call
    xs = onp.array([[0.0, 1.0], [2.0, -3.0]])
    onp.testing.assert_array_equal(cr.vmap(lambda v: np.sum(np.sin(v) * v))(xs),
                                   onp.sum(onp.sin(xs) * xs, axis=1))
