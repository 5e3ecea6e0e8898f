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
from chainrule.numpy.numpy_boxes import array_getitem
from chainrule.numpy.numpy_wrapper import concatenate_args

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
    # NumPy's own ufunc call with where= into out=, staged by chainrule.jit alone
    "*._ufunc_where": "tests/test_jit12.py (check_grads, both modes, 2nd order)",
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



def test_shape_only_answers_shape_dtype_ndim_and_refuses_the_values():
    # (a named tuple since gradbench5, for C-level .shape/.dtype: its items, length and
    # iteration must still refuse, or a rule reading an undeclared value would get them)
    rec = Recording(lambda x: anp.sum(anp.tanh(x) + x), onp.ones((2, 3), dtype=onp.float32))
    kept = next(node for node in rec.order() if node.fun is anp.add).args[0]
    assert (kept.shape, kept.dtype, kept.ndim) == ((2, 3), onp.dtype(onp.float32), 2)
    for read in (lambda: kept[0], lambda: len(kept), lambda: list(kept),
                 lambda: onp.asarray(kept), lambda: kept * 2.0, lambda: kept == kept):
        with pytest.raises(UndeclaredReadError, match="reads="):
            read()

def test_kept_shapes_are_each_arrays_own_across_shapes_and_dtypes():
    # (a node keeps one ShapeOnly per (shape, dtype), shared between nodes: each call
    # below keeps its own array's, in any order, and the gradients keep their dtypes)
    def f(x):
        return anp.sum(anp.tanh(x) + x)

    for shape, dtype in [((3,), onp.float64), ((3,), onp.float32), ((2, 3), onp.float64),
                         ((3,), onp.float64), ((), onp.float32), ((3,), onp.complex128)]:
        x = onp.full(shape, 0.5, dtype=dtype)
        rec = Recording(f, x)
        kept = next(node for node in rec.order() if node.fun is anp.add).args[0]
        assert (kept.shape, kept.dtype) == (shape, onp.dtype(dtype))
        gradient = (chainrule.holomorphic_grad if dtype is onp.complex128 else
                    chainrule.grad)(f)(x)
        assert gradient.dtype == dtype and gradient.shape == shape
        onp.testing.assert_allclose(gradient, 2.0 - onp.tanh(0.5) ** 2, rtol=1e-6)


_A = onp.array([0.5, -2.0, 3.0])
_B = onp.array([[1.5], [0.25]])  # broadcasts against _A: the cotangents are summed back


def _kept(node) -> list[str]:
    """What a node keeps of each argument and of its answer: 'value' or 'shape'."""
    def kind(v):
        return "shape" if type(v).__name__ == "ShapeOnly" else "value"
    return [kind(a) for a in node.args] + ["no ans" if node.ans is None else "ans"]


# (function of the traced input, the primitive, what its node keeps): each rule keeps only
# what the rules of the call's traced arguments read (declared per argument)
PER_ARGUMENT_READS = [
    (lambda x: x * _B, anp.multiply, ["shape", "value", "no ans"]),  # d/dx reads y only
    (lambda x: _B * x, anp.multiply, ["value", "shape", "no ans"]),
    (lambda x: x * anp.sin(x), anp.multiply, ["value", "value", "no ans"]),  # both traced
    (lambda x: x / _B, anp.divide, ["shape", "value", "no ans"]),  # numerator: 1 / y
    (lambda x: _B / x, anp.divide, ["shape", "value", "ans"]),  # denominator: -ans / y
    (lambda x: x / anp.cos(x), anp.divide, ["shape", "value", "ans"]),  # x is never read
    (lambda x: x[1:], array_getitem, ["shape", "value", "no ans"]),
    (lambda x: anp.concatenate([x[:1], _A, x * 2.0]), concatenate_args,
     ["value", "shape", "shape", "shape", "no ans"]),
    (lambda x: anp.concatenate([x[:1], _B, x * 2.0], axis=None), concatenate_args,
     ["value", "shape", "shape", "shape", "no ans"]),
]


@pytest.mark.parametrize("f, fun, kept", PER_ARGUMENT_READS)
def test_a_node_keeps_what_the_rules_of_its_traced_arguments_read(f, fun, kept):
    def loss(x):
        return anp.sum(anp.sin(f(x)))

    lean = Recording(loss, _A.copy())
    node = next(node for node in lean.order() if node.fun is fun)
    assert _kept(node) == kept
    # the same gradient, bit for bit, as a tape that keeps everything
    g = onp.ones(())
    full = Recording(loss, _A.copy(), keep_everything=True).pull_back(g)
    assert lean.pull_back(g).tobytes() == full.tobytes()
    onp.testing.assert_allclose(full, _finite_difference(loss, _A), rtol=1e-6)


def _finite_difference(f, x, eps=1e-6):
    return onp.array([(f(x + e * eps) - f(x - e * eps)) / (2 * eps) for e in onp.eye(len(x))])


def test_a_per_argument_declaration_that_misstates_a_rule_fails_loudly():
    @primitive
    def scale(x, y):
        return x * y

    # wrong on purpose: each rule reads the other argument, declared as reading its own
    defvjp_direct(scale, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x,
                  reads={0: (0,), 1: (1,)})
    defjvp(scale, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x)
    with pytest.raises(UndeclaredReadError, match="reads="):
        chainrule.grad(lambda x: scale(x, onp.ones(2)).sum())(onp.ones(2))
    # both traced: the union of both declarations keeps both, and the answer is right
    onp.testing.assert_allclose(chainrule.grad(lambda x: scale(x, x * 3.0).sum())(
        onp.array([1.0, 2.0])), [6.0, 12.0])


def test_an_argument_a_per_argument_declaration_leaves_out_reads_everything():
    @primitive
    def scale(x, y):
        return x * y

    defvjp_direct(scale, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x,
                  reads={0: (1,)})  # nothing said of y's rule
    defjvp(scale, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x)
    y = onp.array([2.0, 5.0])
    onp.testing.assert_allclose(chainrule.grad(lambda y: scale(3.0 * onp.ones(2), y).sum())(y),
                                [3.0, 3.0])
    rec = Recording(lambda y: scale(onp.ones(2), y).sum(), y)
    node = next(node for node in rec.order() if node.fun is scale)
    assert _kept(node) == ["value", "value", "ans"]
