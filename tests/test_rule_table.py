"""The rule table, checked entry by entry: every primitive chainrule registers a rule for,
wherever it was registered, has both modes, batched rules only where it has a JVP, a
label for explain, and a spec case that runs it (so its rules are checked by
``test_rule_specs`` against finite differences in both modes).

A primitive added anywhere is in the table, so it is checked here without being listed.
"""

from __future__ import annotations

import fnmatch
import importlib
import pkgutil
import warnings

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as anp
from chainrule import _specs as specs
from chainrule._core.reverse import Recording, UndeclaredReadError
from chainrule._core.rule_table import label_of, rule_table
from chainrule._core.tracer import getval
from chainrule.extend import defjvp, defvjp_direct, primitive

# every module that registers rules
for _module in ("chainrule.numpy.linalg", "chainrule.numpy.fft", "chainrule.scipy.special",
                "chainrule.scipy.linalg", "chainrule.scipy.signal", "chainrule.scipy.stats",
                "chainrule.scipy.integrate", "chainrule.scipy.optimize", "chainrule.tensor",
                "chainrule.misc", "chainrule.explain._expr", "chainrule.scipy.sparse.linalg"):
    importlib.import_module(_module)



def _name(fun) -> str:
    raw = getattr(fun, "fun", fun)
    return f"{getattr(raw, '__module__', None) or type(raw).__name__}.{fun.__name__}"


# chainrule's own primitives (other test modules may have registered their own by now);
# functions without a derivative (argmax, any...) have entries only for their batching rule
ENTRIES = sorted(((f, e) for f, e in rule_table.items()
                  if _name(f).split(".")[0] in ("chainrule", "numpy", "scipy", "ufunc")
                  and not getattr(f, "_chainrule_notrace", False)),
                 key=lambda item: _name(item[0]))
# primitives no spec case reaches, each with where its rules are tested instead
TESTED_ELSEWHERE = {
    "*.copy_of": "tests/test_silent_errors.py (copy.copy/deepcopy, both modes, 2nd order)",
    "*._fixed_point": "tests/test_misc.py (fixed_point against the closed form)",
    "*.odeint_args": "tests/test_scipy.py (odeint against finite differences)",
    "*._implicit": "tests/test_scipy_optimize.py (solutions against closed forms, both modes)",
    "*._optimum": "tests/test_scipy_optimize.py (optimal values: envelope theorem, 2nd order)",
    "*._valued": "tests/test_scipy_optimize.py (result fields against closed forms, both modes)",
    "*.ivp_values": "tests/test_scipy_integrate.py (solve_ivp: closed forms, finite differences)",
    "*.quad_value": "tests/test_scipy_integrate.py (quad: closed forms, both modes, 2nd order)",
    "chainrule.scipy.sparse.*": "tests/test_sparse_scipy.py (check_grads in both modes)",
    "chainrule._sparsity.products.*": "tests/test_sparse_scipy.py (check_grads in both modes)",
    "chainrule._transforms.colouring.*": "tests/test_sparse_symmetric.py (check_grads, both modes)",
    # the explain CLI's piecewise-constant functions (zero derivatives in both modes)
    "chainrule.explain._expr.*": "tests/test_explain_students.py (every one, both modes)",
    # the identity that runs a Tensor's gradient hooks (Tensor.register_hook)
    "*.hook_point": "tests/test_tensor_hooks.py (hooks against torch and by hand)",
}


def test_the_table_holds_every_registered_primitive():
    assert len(ENTRIES) >= 258
    assert rule_table[anp.sin].vjp is not None and rule_table[anp.sin].jvp is not None


@pytest.mark.parametrize("fun, entry", ENTRIES, ids=[_name(f) for f, _ in ENTRIES])
def test_entry_is_complete(fun, entry):
    assert entry.vjp is not None, f"{_name(fun)} has no VJP"
    assert entry.jvp is not None, f"{_name(fun)} has no JVP"
    if entry.batched_jvp is not None:
        assert entry.jvp is not None
    label = label_of(fun)
    assert label and (callable(label) or label.count("{") >= 1 or label.isidentifier())
    if entry.unread_args is not None:
        assert list(entry.unread_args) == sorted(entry.unread_args)


def _spec_cases():
    cases = []
    for info in pkgutil.iter_modules(specs.__path__):
        cases.extend(getattr(importlib.import_module(f"{specs.__name__}.{info.name}"), "CASES", []))
    return cases


def _recorded_primitives(case) -> set:
    """The primitives one case's function and its backward pass record (the backward
    pass is traced by an outer trace, so second-order primitives count too)."""
    funs = set()
    for argnum in case.argnums:
        def with_arg(x, argnum=argnum):
            args = list(case.args)
            args[argnum] = x
            return case.fun(*args, **case.kwargs)

        def pulled_back(x):
            inner = Recording(with_arg, x, keep_everything=True)
            funs.update(node.fun for node in inner.order())
            g = chainrule.tree_map(lambda a: onp.ones_like(getval(a)), inner.ans)
            return inner.pull_back(g)

        outer = Recording(pulled_back, case.args[argnum], keep_everything=True)
        funs.update(node.fun for node in outer.order())
    return funs


def test_every_primitive_has_a_spec_case():
    reached = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the pull-back of a linear function is constant)
        for case in _spec_cases():
            reached |= _recorded_primitives(case)
    missing = sorted(_name(f) for f, _ in ENTRIES if f not in reached and not any(
        fnmatch.fnmatch(_name(f), pattern) for pattern in TESTED_ELSEWHERE))
    assert not missing, f"no spec case reaches {missing}: add one to src/chainrule/_specs"


# ----------------------------------------------------------------------------- reads


@pytest.mark.parametrize("reads, fails", [((), True), ((0,), True), ((1,), True),
                                           ((0, 1), False), (None, False)])
def test_a_rule_that_reads_an_argument_declared_unread_fails(reads, fails):
    @primitive
    def scale(x, y):
        return x * y

    # each rule reads the other argument's value
    defvjp_direct(scale, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x, reads=reads)
    defjvp(scale, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x)
    gradient = chainrule.grad(lambda x: scale(x, x * 3.0).sum())
    if fails:
        with pytest.raises(UndeclaredReadError, match="reads="):
            gradient(onp.ones(2))
    else:
        onp.testing.assert_allclose(gradient(onp.array([1.0, 2.0])), [6.0, 12.0])


def test_declared_reads_drop_values_from_the_tape():
    rec = Recording(lambda x: anp.sum(anp.tanh(x) + x), onp.ones(3))
    nodes = {node.fun: node for node in rec.order() if node.fun is not None}
    assert type(nodes[anp.add].args[0]).__name__ == "ShapeOnly"  # add reads neither operand
    assert nodes[anp.add].ans is None
    assert isinstance(nodes[anp.tanh].ans, onp.ndarray)  # tanh reads its answer...
    assert type(nodes[anp.tanh].args[0]).__name__ == "ShapeOnly"  # ...not its input
