"""The engine's one extension point (``chainrule._core.extension``): tools observe the
engine, nothing in it is swapped at run time."""

import importlib
import inspect
import sys

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule import debug_nans, explain, grad, jit
from chainrule._core import extension
from chainrule._core.extension import Observer, observing


def _engine_attributes() -> dict:
    """Every attribute of every ``_core`` module, and of every class defined there (node
    types included), and of jit's StagingNode: name -> the object itself."""
    staging = importlib.import_module("chainrule.jit._staging")

    found = {}
    modules = [m for name, m in sys.modules.items() if name.startswith("chainrule._core")]
    classes = [staging.StagingNode]
    for module in modules:
        for name, value in vars(module).items():
            found[f"{module.__name__}.{name}"] = value
            if inspect.isclass(value) and value.__module__ == module.__name__:
                classes.append(value)
    for cls in classes:
        for name, value in vars(cls).items():
            found[f"{cls.__module__}.{cls.__qualname__}.{name}"] = value
    return found


def _swapped(before: dict) -> list:
    after = _engine_attributes()
    return [k for k in before if after.get(k, before) is not before[k]] + [
        k for k in after if k not in before]


def _loss(x):
    return np.sum(np.log(x) * x)


def test_debug_nans_and_report_code_swap_nothing_in_the_engine():
    x = onp.array([1.0, 2.0])
    grad(_loss)(x), explain(_loss, x).code  # modules imported, caches made
    before = _engine_attributes()
    seen_during = []

    class Probe(Observer):
        def node_made(self, node, ans, fun, args):
            if not seen_during:
                seen_during.append(_swapped(before))

    with debug_nans():
        assert _swapped(before) == []
        with observing(Probe()):  # and while a pass runs under debug_nans
            assert onp.allclose(grad(_loss)(x), onp.log(x) + 1)
        with onp.errstate(divide="ignore", invalid="ignore"), pytest.raises(FloatingPointError):
            grad(_loss)(onp.array([0.0, 1.0]))
    assert seen_during == [[]]
    code = explain(_loss, x).code
    assert "log" in code and "(adjoint)" in code  # report.code still marks its lines
    assert _swapped(before) == []
    assert extension.observers == []


def test_an_observer_sees_each_node_made_and_each_node_the_backward_pass_visits():
    made, visited, cotangents = [], [], []

    class Recorder(Observer):
        def node_made(self, node, ans, fun, args):
            made.append((fun.__name__, onp.array(ans)))

        def node_visited(self, node):
            visited.append(None if node is None else node.fun.__name__)

        def cotangents_made(self, node, g, grads):
            cotangents.append((node.fun.__name__, [argnum for argnum, _ in grads]))

    x = onp.array([1.0, 2.0])
    with observing(Recorder()) as recorder:
        assert isinstance(recorder, Recorder)
        assert onp.allclose(grad(_loss)(x), onp.log(x) + 1)
    assert [name for name, _ in made] == ["log", "multiply", "sum"]
    assert onp.allclose(made[0][1], onp.log(x))
    assert visited == ["sum", "multiply", "log", None]
    assert cotangents == [("sum", [0]), ("multiply", [0, 1]), ("log", [0])]
    # off after the block, even when it raised
    made.clear()
    with pytest.raises(ZeroDivisionError), observing(Recorder()):
        1 / 0
    grad(_loss)(x)
    assert made == [] and extension.observers == []


def test_observers_nest_and_an_observer_can_be_on_twice():
    counts = []

    class Counter(Observer):
        def node_made(self, node, ans, fun, args):
            counts.append(self)

    a, b = Counter(), Counter()
    with observing(a), observing(b), observing(a):
        grad(np.sin)(1.0)
        assert counts == [a, b, a]
    assert extension.observers == []
    grad(np.sin)(1.0)
    assert len(counts) == 3


def test_forward_mode_and_jit_nodes_are_observed_too():
    kinds = []

    class Kinds(Observer):
        def node_made(self, node, ans, fun, args):
            kinds.append(type(node).__name__)

    with observing(Kinds()):
        chainrule.make_jvp(np.sin)(0.5)(1.0)
        jit(np.cos)(onp.array([0.5]))
    assert "JVPNode" in kinds and "StagingNode" in kinds
