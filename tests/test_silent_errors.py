"""Issue 16: the core's silent errors. Each of these gave a wrong answer (or a box instead
of a number) with no warning; now it gives the right derivative or a clear error.

1. copy.copy / copy.deepcopy of a traced value stay on the graph; pickling one is refused.
2. Tensors pickle, copy and deep-copy as PyTorch's do (checked side by side with torch).
3. A user's JVP rule is checked for its tangent's shape and dtype, as VJP rules are.
4. A traced value used after its trace ended raises LeakedTracerError.
5. defvjp replacing the VJP of a primitive whose JVP stays the old one warns.
6. A constant array the function writes into after using it (basis vectors rebuilt in one
   buffer) reaches the backward pass with the contents it had when it was used.
"""

from __future__ import annotations

import copy
import math
import pickle
import subprocess
import sys
import warnings

import autograd
import autograd.numpy as anp_ref
import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import (
    LeakedTracerError,
    Tensor,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    make_jvp,
    stop_gradient,
)
from chainrule.extend import RuleReplacedWarning, defjvp, defvjp, primitive
from chainrule.test_util import check_grads

X = onp.array([0.4, -1.1, 2.3])


def central_difference(f, x: float, eps: float = 1e-6) -> float:
    return (f(x + eps) - f(x - eps)) / (2 * eps)


# ------------------------------------------------------------------------------- 1. copies of boxes

COPIERS = [copy.copy, copy.deepcopy]


@pytest.mark.parametrize("copier", COPIERS, ids=["copy", "deepcopy"])
def test_copy_of_traced_float_keeps_gradient(copier):
    f = lambda x: copier(2 * np.sin(x)) * x  # noqa: E731
    x = 0.5
    expected = 2 * math.cos(x) * x + 2 * math.sin(x)  # d/dx 2 x sin x
    assert grad(f)(x) == pytest.approx(expected, rel=1e-12)
    assert grad(f)(x) == pytest.approx(central_difference(f, x), rel=1e-7)
    assert jvp(f, (x,), (1.0,))[1] == pytest.approx(expected, rel=1e-12)
    second = 4 * math.cos(x) - 2 * x * math.sin(x)
    assert grad(grad(f))(x) == pytest.approx(second, rel=1e-12)
    assert jacfwd(jacrev(f))(x) == pytest.approx(second, rel=1e-12)
    check_grads(f, x, modes=("fwd", "rev"), order=2)


@pytest.mark.parametrize("copier", COPIERS, ids=["copy", "deepcopy"])
def test_copy_of_traced_array_matches_uncopied_function(copier):
    def with_copy(x):
        y = copier(np.sin(x) * x)
        return np.sum(y * y)

    def without_copy(x):
        y = np.sin(x) * x
        return np.sum(y * y)

    def reference(x):  # autograd, an independent implementation
        y = anp_ref.sin(x) * x
        return anp_ref.sum(y * y)

    onp.testing.assert_allclose(grad(with_copy)(X), autograd.grad(reference)(X), rtol=1e-12)
    onp.testing.assert_allclose(hessian(with_copy)(X), hessian(without_copy)(X), rtol=1e-12)
    onp.testing.assert_allclose(hessian(with_copy)(X), autograd.hessian(reference)(X),
                                rtol=1e-12)
    check_grads(with_copy, X, modes=("fwd", "rev"), order=2)


@pytest.mark.parametrize("copier", COPIERS, ids=["copy", "deepcopy"])
def test_copy_of_traced_complex_value_matches_autograd(copier):
    z = onp.array([0.3 + 0.8j, -1.2 + 0.4j])

    def with_copy(z):
        w = copier(z * z + 1j * z)
        return np.sum(np.real(w * np.conj(w)))

    def reference(z):
        w = z * z + 1j * z
        return anp_ref.sum(anp_ref.real(w * anp_ref.conj(w)))

    onp.testing.assert_allclose(grad(with_copy)(z), autograd.grad(reference)(z), rtol=1e-12)
    check_grads(with_copy, z, modes=("fwd", "rev"), order=2)


def test_deepcopy_of_container_of_boxes():
    def f(x):
        y = np.sin(x)
        box = copy.deepcopy({"a": [y, y * x], "b": (np.exp(x),)})
        return box["a"][0] * box["a"][1] + box["b"][0]

    x = 0.7
    expected = 2 * math.sin(x) * math.cos(x) * x + math.sin(x) ** 2 + math.exp(x)
    assert grad(f)(x) == pytest.approx(expected, rel=1e-12)
    assert grad(f)(x) == pytest.approx(central_difference(f, x), rel=1e-7)
    check_grads(f, x, modes=("fwd", "rev"), order=2)


def test_deepcopy_keeps_shared_references_shared():
    def f(x):
        y = x * 3.0
        pair = copy.deepcopy([y, y])
        assert pair[0] is pair[1]  # one copy, as deepcopy does for plain values
        return pair[0] + pair[1]

    assert grad(f)(1.5) == 6.0


def test_copy_of_traced_array_is_independent_of_the_original():
    def f(x):
        y = x * 2.0
        z = copy.copy(y)
        z[0] = 0.0  # writes to the copy only
        return np.sum(y) + 10.0 * np.sum(z)

    # d/dx: from y, 2 per element; from z, 20 per element except the overwritten one
    onp.testing.assert_array_equal(grad(f)(X), onp.array([2.0, 22.0, 22.0]))


def test_pickling_a_traced_value_is_refused():
    with pytest.raises(TypeError, match="cannot pickle a traced value.*outside the function"):
        grad(lambda x: pickle.loads(pickle.dumps(2 * np.sin(x))))(0.5)
    with pytest.raises(TypeError, match="stop_gradient"):
        jvp(lambda x: pickle.dumps(x * x), (X,), (X,))
    # the documented way out: pickle the plain value
    assert grad(lambda x: x * pickle.loads(pickle.dumps(stop_gradient(x))))(3.0) == 3.0


# --------------------------------------------------------------------------------- 2. Tensor copies

torch = pytest.importorskip("torch")


def _cases():
    """(name, chainrule Tensor, torch tensor) pairs in the same state."""
    a, ta = Tensor([1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    np.sum(a * a).backward()
    (ta * ta).sum().backward()
    b, tb = Tensor([1.0, 2.0], requires_grad=False), torch.tensor([1.0, 2.0], dtype=torch.float64)
    x, tx = Tensor([0.3, 0.9]), torch.tensor([0.3, 0.9], dtype=torch.float64, requires_grad=True)
    c, tc = np.sin(x) * 2, torch.sin(tx) * 2
    d, td = Tensor([3.0], requires_grad=False), torch.tensor([3.0], dtype=torch.float64)
    d.grad, td.grad = Tensor([1.0], requires_grad=False), torch.tensor([1.0], dtype=torch.float64)
    return [("leaf with grad", a, ta), ("leaf, no requires_grad", b, tb),
            ("non-leaf", c, tc), ("no requires_grad, with grad", d, td)]


OPERATIONS = {
    "pickle": lambda t: pickle.loads(pickle.dumps(t)),
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
}


def _same_state(ours, theirs):
    onp.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-15)
    assert ours.requires_grad == theirs.requires_grad
    assert ours.is_leaf == theirs.is_leaf
    theirs_grad = theirs.grad if theirs.is_leaf else None  # torch warns on a non-leaf's .grad
    assert (ours.grad is None) == (theirs_grad is None)
    if ours.grad is not None:
        onp.testing.assert_allclose(ours.grad.numpy(), theirs_grad.numpy(), rtol=1e-15)


@pytest.mark.parametrize("operation", list(OPERATIONS))
@pytest.mark.parametrize("case", range(4))
def test_tensor_copies_behave_as_torch(operation, case):
    name, ours, theirs = _cases()[case]
    op = OPERATIONS[operation]
    try:
        theirs_copy = op(theirs)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="graph leaves"):
            op(ours)
        return
    ours_copy = op(ours)
    _same_state(ours_copy, theirs_copy)
    _same_state(ours, theirs)  # the original is unchanged
    # copy.copy shares the value's memory in torch; a pickle or a deep copy does not
    shares = theirs_copy.data_ptr() == theirs.data_ptr()
    assert onp.shares_memory(ours_copy.numpy(), ours.numpy()) == shares


def test_deepcopy_of_non_leaf_raises_as_torch():
    x = Tensor(0.5)
    with pytest.raises(RuntimeError, match="graph leaves.*detach"):
        copy.deepcopy(np.sin(x) * 2)
    assert x.grad is None


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_copied_leaf_is_a_new_leaf(operation):
    x, tx = Tensor([0.5, 1.5]), torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    y, ty = OPERATIONS[operation](x), OPERATIONS[operation](tx)
    np.sum(np.sin(y) * 3).backward()
    (torch.sin(ty) * 3).sum().backward()
    onp.testing.assert_allclose(y.grad.numpy(), 3 * onp.cos([0.5, 1.5]), rtol=1e-15)
    onp.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-15)
    assert x.grad is None and tx.grad is None


def test_copy_of_tensor_inside_a_transform_stays_on_its_graph():
    def f(x):
        t = Tensor(np.sin(x)) * 2.0
        return np.sum(copy.deepcopy(t) * copy.copy(t))

    onp.testing.assert_allclose(grad(f)(X), 8 * onp.sin(X) * onp.cos(X), rtol=1e-12)
    with pytest.raises(TypeError, match="cannot pickle a traced value"):
        grad(lambda x: pickle.dumps(Tensor(x)))(1.0)


# ----------------------------------------------------------------------------- 3. custom JVP checks


def _sine_with_jvp(jvp_rule):
    @primitive
    def sine(x):
        return onp.sin(x)

    defvjp(sine, lambda ans, x: lambda g: g * np.cos(x))
    defjvp(sine, jvp_rule)
    return sine


def test_custom_jvp_with_wrong_tangent_shape_raises():
    sine = _sine_with_jvp(lambda g, ans, x: onp.ones(9))
    with pytest.raises(ValueError, match=r"JVP of sine returned a tangent of shape \(9,\).*\(3,\)"):
        jvp(sine, (X,), (onp.ones(3),))
    with pytest.raises(ValueError, match="JVP of sine"):
        jacfwd(sine)(X)
    broadcastable = _sine_with_jvp(lambda g, ans, x: 1.0)  # a scalar would broadcast silently
    with pytest.raises(ValueError, match=r"shape \(\)"):
        jvp(broadcastable, (X,), (onp.ones(3),))


def test_custom_jvp_decorator_checks_its_tangent_too():
    from chainrule import custom_jvp

    @custom_jvp
    def sine(x):
        return np.sin(x)

    @sine.defjvp
    def sine_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return np.sin(x), np.sum(t * np.cos(x))  # a scalar where a 3-vector belongs

    with pytest.raises(ValueError, match=r"JVP of sine returned a tangent of shape \(\)"):
        jvp(sine, (X,), (onp.ones(3),))


def test_custom_jvp_with_complex_tangent_for_real_output_raises():
    sine = _sine_with_jvp(lambda g, ans, x: g * np.cos(x) * (1 + 0j))
    with pytest.raises(TypeError, match="JVP of sine returned a complex tangent"):
        jvp(sine, (X,), (onp.ones(3),))


def test_custom_vjp_with_complex_cotangent_for_real_argument_raises():
    @primitive
    def sine(x):
        return onp.sin(x)

    defvjp(sine, lambda ans, x: lambda g: g * np.cos(x) + 0j)
    with pytest.raises(TypeError, match="VJP of sine returned a complex cotangent for argument 0"):
        grad(lambda x: np.sum(sine(x)))(X)


def test_correct_custom_jvp_passes_the_check():
    sine = _sine_with_jvp(lambda g, ans, x: g * np.cos(x))
    _, tangent = jvp(sine, (X,), (onp.array([1.0, 2.0, 3.0]),))
    onp.testing.assert_allclose(tangent, onp.cos(X) * [1.0, 2.0, 3.0], rtol=1e-15)
    check_grads(lambda x: np.sum(sine(x) * x), X, modes=("fwd", "rev"), order=2)
    # a complex output may take a real tangent, and a complex one
    @primitive
    def rotate(x):
        return x * 1j

    defvjp(rotate, lambda ans, x: lambda g: np.real(g * -1j))
    defjvp(rotate, lambda g, ans, x: g * 1j)
    assert jvp(rotate, (2.0,), (1.0,))[1] == 1j


# -------------------------------------------------------------------------- 4. leaked traced values


def _leak(transform):
    kept = []

    def f(x):
        kept.append(x * 2.0)
        return x * 3.0

    transform(f)
    return kept[0]


LEAKS = {
    "grad": lambda f: grad(f)(1.0),
    "jvp": lambda f: jvp(f, (1.0,), (1.0,)),
}


@pytest.mark.parametrize("source", list(LEAKS))
def test_leaked_value_combined_with_a_new_trace_raises(source):
    leaked = _leak(LEAKS[source])
    match = "a value traced by an earlier grad/jvp call was used after that call returned"
    with pytest.raises(LeakedTracerError, match=match):
        grad(lambda x: x * leaked)(2.0)
    with pytest.raises(LeakedTracerError, match="stop_gradient"):
        jvp(lambda x: leaked * x, (2.0,), (1.0,))
    with pytest.raises(LeakedTracerError):
        grad(lambda x: np.sin(leaked) + x)(2.0)


@pytest.mark.parametrize("source", list(LEAKS))
def test_leaked_value_as_the_output_of_a_new_trace_raises(source):
    leaked = _leak(LEAKS[source])
    with pytest.raises(LeakedTracerError):
        grad(lambda x: np.sin(leaked))(2.0)
    with pytest.raises(LeakedTracerError):
        make_jvp(lambda x: (x * 2.0, leaked))(1.0)(1.0)
    with pytest.raises(LeakedTracerError):  # differentiating at a leaked value
        grad(np.sin)(leaked)


@pytest.mark.parametrize("source", list(LEAKS))
def test_leaked_value_used_outside_any_trace_raises_when_converted(source):
    leaked = _leak(LEAKS[source])
    result = np.sin(leaked)  # the one-trace fast path does not look (it would cost every call)
    assert "(ended)" in repr(result)
    with pytest.raises(LeakedTracerError):
        float(result)
    with pytest.raises(LeakedTracerError):
        onp.asarray(leaked)


def test_values_of_running_outer_traces_are_not_leaks():
    # closures over an outer trace's values, as in grad of grad, are legitimate
    def outer(x):
        return grad(lambda y: np.sin(x * y) * x)(1.0)

    x = 0.8
    expected = central_difference(outer, x)
    assert grad(outer)(x) == pytest.approx(expected, rel=1e-6)
    # d/dx [x^2 cos(x)] = 2x cos x - x^2 sin x
    assert grad(outer)(x) == pytest.approx(2 * x * math.cos(x) - x * x * math.sin(x), rel=1e-12)


# ------------------------------------------------------------------------------- 5. replacing rules


def _cube():
    @primitive
    def cube(x):
        return x ** 3

    defvjp(cube, lambda ans, x: lambda g: g * 3 * x ** 2)
    defjvp(cube, lambda g, ans, x: g * 3 * x ** 2)
    return cube


def test_defvjp_on_primitive_with_a_jvp_warns():
    cube = _cube()
    with pytest.warns(RuleReplacedWarning, match="VJP of cube.*defjvp\\(cube") as record:
        defvjp(cube, lambda ans, x: lambda g: g * 0.0)
    assert issubclass(record[0].category, UserWarning)
    assert record[0].filename == __file__  # points at the user's call
    # what the warning is about: the two modes now disagree
    assert grad(cube)(2.0) == 0.0
    assert jvp(cube, (2.0,), (1.0,))[1] == 12.0


def test_replacing_both_rules_jvp_first_does_not_warn():
    cube = _cube()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        defjvp(cube, lambda g, ans, x: g * 6.0)
        defvjp(cube, lambda ans, x: lambda g: g * 6.0)
    assert grad(cube)(2.0) == 6.0
    assert jvp(cube, (2.0,), (1.0,))[1] == 6.0


def test_defvjp_on_primitive_without_a_jvp_does_not_warn():
    @primitive
    def cube(x):
        return x ** 3

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        defvjp(cube, lambda ans, x: lambda g: g * 3 * x ** 2)
        defvjp(cube, lambda ans, x: lambda g: g * 3.0 * x ** 2)
    assert grad(cube)(2.0) == 12.0


def test_defvjp_on_a_chainrule_primitive_warns():
    from chainrule._core.rule_table import primitive_vjps

    saved = primitive_vjps[np.tanh]
    try:
        with pytest.warns(RuleReplacedWarning, match="tanh"):
            defvjp(np.tanh, lambda ans, x: lambda g: g)
    finally:
        primitive_vjps[np.tanh] = saved
    assert grad(np.tanh)(0.5) == pytest.approx(1 - math.tanh(0.5) ** 2, rel=1e-12)


def test_chainrule_tables_do_not_warn_at_import():
    subprocess.run([sys.executable, "-W", "error", "-c", "import chainrule.numpy, chainrule.scipy"],
                   check=True)


# ---------------------------------------------------------------- 6. constants written later
def test_a_basis_vector_rebuilt_in_one_buffer_differentiates_right():
    e = onp.zeros(3)

    def f(x):
        total = 0.0
        for i in range(3):
            e[:] = 0.0
            e[i] = 1.0
            total = total + np.dot(x, e) ** 2 * (i + 1)
        return total

    x = onp.array([1.0, 2.0, 3.0])
    expected = 2 * x * onp.array([1.0, 2.0, 3.0])  # d/dx_i of sum (i+1) x_i^2
    assert onp.array_equal(grad(f)(x), expected)  # was [6, 12, 18]: every VJP saw e = [0, 0, 1]
    assert onp.array_equal(hessian(f)(x), onp.diag([2.0, 4.0, 6.0]))
    assert onp.array_equal(e, [0.0, 0.0, 1.0])  # the user's buffer is still theirs


def test_a_constant_written_after_its_use_keeps_its_old_value_for_the_gradient():
    c = onp.array([1.0, 2.0, 3.0])

    def f(x):
        y = x * c
        c[0] = 5.0
        return np.sum(y + x * c)

    x = onp.ones(3)
    c[:] = [1.0, 2.0, 3.0]
    reverse = grad(f)(x)
    c[:] = [1.0, 2.0, 3.0]
    forward = [jvp(f, (x,), (onp.eye(3)[i],))[1] for i in range(3)]
    assert onp.array_equal(reverse, [6.0, 4.0, 6.0])  # was [10, 4, 6]
    assert onp.array_equal(reverse, forward)
