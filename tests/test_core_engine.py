"""The tracing core, reverse and forward mode, vector spaces and containers."""

import dataclasses
import gc
import math
import sys
import threading
import weakref
from collections import namedtuple

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import (
    elementwise_grad,
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    make_jvp,
    register_pytree_node,
    vjp,
)
from chainrule._core import reverse
from chainrule._core.tracer import getval, isbox
from chainrule.extend import defjvp, defvjp, defvjp_direct, primitive

# ----------------------------------------------------------------------------- nesting


def test_perturbation_confusion_is_avoided():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1, not 2
    f = lambda x: x * grad(lambda y: x + y)(2.0)
    assert grad(f)(1.0) == 1.0
    # the same with forward mode on the inside and on the outside
    assert grad(lambda x: x * make_jvp(lambda y: x + y)(2.0)(1.0)[1])(1.0) == 1.0
    assert make_jvp(lambda x: x * grad(lambda y: x + y)(2.0))(1.0)(1.0)[1] == 1.0


def test_closure_over_outer_value_in_inner_derivative():
    # d/dx [d/dy (x*y^2)] at y=3 = d/dx [2xy] = 2y = 6
    f = lambda x: grad(lambda y: x * y**2)(3.0)
    assert grad(f)(5.0) == 6.0
    assert make_jvp(f)(5.0)(1.0)[1] == 6.0


@pytest.mark.parametrize("outer, inner", [("rev", "rev"), ("fwd", "rev"), ("rev", "fwd"),
                                          ("fwd", "fwd")])
def test_second_derivative_in_every_mode_combination(outer, inner):
    f = lambda x: np.sin(x) * x**2
    d = {"rev": lambda g: grad(g), "fwd": lambda g: lambda x: make_jvp(g)(x)(1.0)[1]}
    second = d[outer](d[inner](f))
    x = 0.8
    exact = -math.sin(x) * x**2 + 4 * x * math.cos(x) + 2 * math.sin(x)
    assert second(x) == pytest.approx(exact, rel=1e-13)


def test_jacobian_of_grad_is_the_hessian():
    A = onp.array([[2.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 4.0]])
    f = lambda x: 0.5 * np.dot(x, np.dot(A, x)) + np.sum(np.sin(x))
    x = onp.array([0.1, -0.4, 0.9])
    want = A - onp.diag(onp.sin(x))
    onp.testing.assert_allclose(jacobian(grad(f))(x), want, rtol=1e-12)
    onp.testing.assert_allclose(hessian(f)(x), want, rtol=1e-12)
    onp.testing.assert_allclose(jacfwd(grad(f))(x), want, rtol=1e-12)
    onp.testing.assert_allclose(jacrev(jacfwd(f))(x), want, rtol=1e-12)


def test_third_order_mixed_modes():
    f = lambda x: x**5
    third = grad(lambda x: make_jvp(grad(f))(x)(1.0)[1])
    assert third(2.0) == pytest.approx(60 * 2.0**2)


# ----------------------------------------------------------------------------- scale


def test_million_primitive_chain_has_no_recursion_limit():
    n = 1_000_000
    assert n > 100 * sys.getrecursionlimit()

    def chain(x):
        for _ in range(n):
            x = x * 1.0000001
        return x

    assert grad(chain)(1.0) == pytest.approx(1.0000001**n, rel=1e-9)


def test_fan_out_accumulates():
    def f(x):
        total = 0.0
        for k in range(1, 201):
            total = total + k * x
        return total

    assert grad(f)(3.0) == 200 * 201 / 2


def _spy(calls: list):
    """A primitive doubling its argument, whose VJP notes each call in ``calls``."""

    @primitive
    def spy(x):
        return x * 2.0

    defvjp_direct(spy, lambda g, ans, x: calls.append("spy") or g * 2.0)
    defjvp(spy, lambda g, ans, x: g * 2.0)
    return spy


def test_backward_visits_only_ancestors_of_the_output():
    calls = []
    spy = _spy(calls)

    def f(x):
        spy(x)  # computed but unused: not an ancestor of the output
        return x * 3.0

    assert grad(f)(1.0) == 3.0
    assert calls == []


def test_an_ancestor_no_cotangent_reaches_is_not_visited():
    # (the pass walks only what cotangents reach: the rule of ``first`` answers no
    # cotangent for its second argument, so spy, an ancestor of the output, gets none)
    calls = []
    spy = _spy(calls)

    @primitive
    def first(a, b):
        return a + 0.0 * b

    defvjp_direct(first, lambda g, ans, a, b: g, lambda g, ans, a, b: None)

    def f(x):
        return first(x * 3.0, spy(x)) * x

    assert grad(f)(2.0) == 12.0  # d/dx of 3x * x, with spy's branch counted as constant
    assert calls == []


def test_an_output_that_is_also_an_ancestor_of_another_gets_both_cotangents():
    def f(x):
        y = np.sin(x)
        return y, y * y

    out, pull_back = vjp(f, 0.5)
    # d/dx (g1 * sin x + g2 * sin^2 x) = (g1 + 2 g2 sin x) cos x
    for g1, g2 in ((1.0, 0.0), (0.0, 1.0), (2.0, -3.0)):
        (gx,) = pull_back((g1, g2))
        assert gx == pytest.approx((g1 + 2 * g2 * math.sin(0.5)) * math.cos(0.5), rel=1e-14)


def test_a_seed_without_a_cotangent_is_skipped():
    rec = reverse.Recording(lambda x: (np.sin(x), x * 2.0), 0.5)
    (_, sine), (_, double) = rec.ends
    assert reverse.backward_pass([(sine, None), (double, 1.5)]) == {rec.roots[0]: 3.0}
    assert reverse.backward_pass([(sine, None)]) == {}


def test_node_memory_is_released_as_soon_as_consumed():
    big_refs = []
    seen_alive = []

    @primitive
    def observe(x):
        return x + 0.0

    # When observe's VJP runs, every later node has been consumed: the intermediate
    # array made after it must already have been released by the backward pass.
    defvjp_direct(observe, lambda g, ans, x: seen_alive.append(big_refs[0]() is not None) or g)
    defjvp(observe, lambda g, ans, x: g)

    def f(x):
        y = observe(x)
        big = np.exp(y) * 2.0
        big_refs.append(weakref.ref(getval(big)))
        return np.sum(np.sin(big))

    grad(f)(onp.ones(1000))
    gc.collect()
    assert seen_alive == [False]


def test_no_graph_objects_survive_a_gradient():
    tracked = []

    @primitive
    def tag(x):
        return x * 1.0

    defvjp_direct(tag, lambda g, ans, x: g)
    defjvp(tag, lambda g, ans, x: g)

    def f(x):
        y = tag(x) * 2.0
        tracked.append(weakref.ref(y))
        tracked.append(weakref.ref(y._node))
        return np.sum(y)

    for _ in range(20):
        grad(f)(onp.ones(3))
    gc.collect()
    assert all(ref() is None for ref in tracked)


def test_threads_trace_independently():
    f = lambda x: np.sum(np.tanh(x) * x**2)
    xs = [onp.linspace(-1, 1, 50) * (k + 1) for k in range(8)]
    serial = [grad(f)(x) for x in xs]
    results = [None] * 8

    def work(k):
        for _ in range(20):
            results[k] = grad(f)(xs[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, serial):
        onp.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- vector spaces


@pytest.mark.parametrize("dtype", [onp.float32, onp.float64, onp.float16])
def test_gradient_dtype_matches_input(dtype):
    x = onp.linspace(0.1, 1.0, 4).astype(dtype)
    g = grad(lambda x: np.sum(np.sin(x) * 2.0 + x * onp.ones(4)))(x)
    assert g.dtype == dtype
    onp.testing.assert_allclose(g, 2 * onp.cos(x.astype(float)) + 1, rtol=1e-2)


def test_float32_stays_float32_in_forward_mode():
    x = onp.ones(3, dtype=onp.float32)
    _, t = jvp(lambda x: np.exp(x) * 3.0, (x,), (onp.ones(3, dtype=onp.float32),))
    assert t.dtype == onp.float32


def test_complex_gradient_follows_autograds_convention():
    # f(z) = |z|^2 = x^2 + y^2: gradient df/dx - i df/dy = 2 conj(z)
    z = 1.5 - 0.5j
    g = grad(lambda z: np.abs(z) ** 2)(z)
    assert g == pytest.approx(2 * onp.conj(z))
    assert isinstance(g, complex | onp.complexfloating)


def test_scalar_inputs_get_scalar_gradients():
    g = grad(lambda x: x * x)(3.0)
    assert onp.ndim(g) == 0 and g == 6.0


@pytest.mark.parametrize("bad", [3, True, onp.array([1, 2]), onp.array([True])])
def test_integer_and_boolean_inputs_are_refused(bad):
    with pytest.raises(TypeError, match="(integer|boolean).*no gradient"):
        grad(lambda x: np.sum(x * 2.0))(bad)


def test_integer_arguments_not_differentiated_are_fine():
    f = lambda x, n: x**n
    assert grad(f)(2.0, 3) == 12.0


# ----------------------------------------------------------------------------- containers

Point = namedtuple("Point", "x y")


@dataclasses.dataclass
class Params:
    w: onp.ndarray
    b: float


class Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second


register_pytree_node(Pair, lambda p: ((p.first, p.second), None),
                     lambda aux, children: Pair(*children))


def test_containers_as_inputs():
    g = grad(lambda t: t[0] * t[1][0] + t[1][1])((2.0, [3.0, 4.0]))
    assert g == (3.0, [2.0, 1.0])
    g = grad(lambda p: p.x**2 * p.y)(Point(3.0, 2.0))
    assert isinstance(g, Point) and g == Point(12.0, 9.0)
    params = Params(onp.array([1.0, 2.0]), 0.5)
    g = grad(lambda p: np.sum(p.w**2) * p.b)(params)
    assert isinstance(g, Params)
    onp.testing.assert_allclose(g.w, [1.0, 2.0])
    assert g.b == 5.0
    g = grad(lambda p: p.first * p.second)(Pair(2.0, 7.0))
    assert isinstance(g, Pair) and (g.first, g.second) == (7.0, 2.0)


def test_containers_as_outputs_and_intermediates():
    def f(x):
        parts = {"a": x * 2.0, "b": [x**2, np.sin(x)]}
        return parts["a"] + parts["b"][0], Point(parts["b"][1], x)

    out, pullback = vjp(f, 1.2)
    assert out[1] == Point(math.sin(1.2), 1.2)
    (g,) = pullback((1.0, Point(10.0, 100.0)))
    assert g == pytest.approx(2.0 + 2 * 1.2 + 10 * math.cos(1.2) + 100.0)
    _, tangent = jvp(f, (1.2,), (1.0,))
    assert tangent[0] == pytest.approx(2.0 + 2.4)
    assert tangent[1] == Point(pytest.approx(math.cos(1.2)), 1.0)


def test_primitive_returning_a_tuple_is_a_traced_sequence():
    @primitive
    def split_even_odd(x):
        return x[::2], x[1::2]

    def vjp_split(g, ans, x):
        even, odd = g
        return np.concatenate([even, odd])[onp.argsort(onp.r_[0:len(x):2, 1:len(x):2])]

    defvjp_direct(split_even_odd, vjp_split)
    defjvp(split_even_odd, lambda g, ans, x: split_even_odd(g))
    x = onp.arange(6.0)
    f = lambda x: np.sum(split_even_odd(x)[0] * 3.0) + np.sum(split_even_odd(x)[1] ** 2)
    onp.testing.assert_allclose(grad(f)(x), [3, 2, 3, 6, 3, 10])
    _, t = jvp(f, (x,), (onp.ones(6),))
    assert t == pytest.approx(9 + 2 * (1 + 3 + 5))


# ----------------------------------------------------------------------------- errors


def test_grad_of_non_scalar_output_says_what_to_use():
    with pytest.raises(TypeError, match="jacobian.*elementwise_grad"):
        grad(lambda x: x * 2.0)(onp.ones(3))


def test_float_and_int_of_a_traced_value_are_refused():
    with pytest.raises(TypeError, match=r"float\(\) of a traced value.*stop_gradient"):
        grad(lambda x: float(x))(1.0)
    with pytest.raises(TypeError, match=r"int\(\) of a traced value"):
        grad(lambda x: int(x) * x)(1.0)


def test_numpy_function_without_rule_is_named():
    with pytest.raises(TypeError, match="no derivative rule for numpy.i0"):
        grad(lambda x: onp.i0(x))(1.0)


def test_custom_vjp_with_wrong_shape_is_reported():
    @primitive
    def double(x):
        return 2 * x

    defvjp(double, lambda ans, x: lambda g: onp.sum(g))  # wrong: a scalar for a vector
    with pytest.raises(ValueError, match=r"VJP of double.*shape \(\).*shape \(3,\)"):
        grad(lambda x: np.sum(double(x)))(onp.ones(3))


def test_missing_vjp_rule_is_named():
    @primitive
    def no_rules(x):
        return x

    with pytest.raises(NotImplementedError, match="no VJP rule for .*no_rules"):
        grad(no_rules)(1.0)
    with pytest.raises(NotImplementedError, match="no JVP rule for .*no_rules"):
        make_jvp(no_rules)(1.0)(1.0)


def test_output_independent_of_input_warns_and_gives_zero():
    with pytest.warns(UserWarning, match="independent"):
        assert grad(lambda x: 3.0)(1.0) == 0.0


def test_boxes_look_like_what_they_hold():
    seen = []
    grad(lambda x: seen.append(repr(x)) or x * 1.0)(2.5)
    assert seen[0].startswith("ArrayBox(np.float64(2.5)")  # a Python float is traced as np.float64
    assert isbox(1.0) is False


def test_freed_graph_reports_clearly():
    vjp_fun, _ = reverse.make_vjp(lambda x: np.sin(x) * 2.0, 1.0, free=True)
    vjp_fun(1.0)
    with pytest.raises(reverse.FreedGraphError, match="freed"):
        vjp_fun(1.0)


def test_elementwise_grad_and_jacobian_shapes():
    x = onp.linspace(0.5, 1.5, 4)
    onp.testing.assert_allclose(elementwise_grad(np.log)(x), 1 / x)
    J = jacobian(lambda x: x[:, None] * x[None, :])(x[:3])
    assert J.shape == (3, 3, 3)
    onp.testing.assert_allclose(J[1, 2], [0, x[2], x[1]])


def test_traced_values_passed_by_keyword_are_traced():
    w = onp.array([1.0, 2.0])
    onp.testing.assert_allclose(grad(lambda w: np.sum(a=w**2, axis=0))(w), 2 * w)
    onp.testing.assert_allclose(grad(lambda w: np.sum(np.reshape(a=w, shape=(2,)) ** 2))(w), 2 * w)
    values = onp.array([1.0, 3.0])
    onp.testing.assert_allclose(grad(lambda w: np.average(values, weights=w))(w),
                                (values * w.sum() - values @ w) / w.sum() ** 2)


def test_traced_keyword_only_argument_is_refused_clearly():
    @primitive
    def scale(x, *, factor):
        return x * factor

    with pytest.raises(TypeError, match="scale: chainrule traces positional arguments only, "
                                        "and factor cannot"):
        grad(lambda f: scale(2.0, factor=f))(3.0)


def test_the_tape_keeps_only_the_arrays_the_rules_read():
    """matmul's product, the operands of +, the input of tanh and of sum are not kept
    (their VJPs need only shapes), yet the gradient and a second order are right."""
    rng = onp.random.default_rng(3)
    X, w0 = rng.standard_normal((40, 30)), rng.standard_normal((30, 20))
    dropped = []

    def f(w):
        product = X @ w
        pre = product + 1.0
        dropped.extend([weakref.ref(getval(product)), weakref.ref(getval(pre))])
        return np.sum(np.tanh(pre))

    vjp, _ = reverse.make_vjp(f, w0)
    gc.collect()
    assert [ref() for ref in dropped] == [None, None]
    t = onp.tanh(X @ w0 + 1.0)
    onp.testing.assert_allclose(vjp(1.0), X.T @ (1 - t * t), rtol=1e-12)
    v = rng.standard_normal(w0.shape)
    hvp = grad(lambda w: np.sum(grad(f)(w) * v))(w0)  # reverse over reverse
    onp.testing.assert_allclose(hvp, X.T @ (-2 * t * (1 - t * t) * (X @ v)), rtol=1e-10)


def test_the_cycle_collector_pauses_while_a_graph_lives_and_resumes_as_it_was():
    # a recording's nodes are acyclic and freed by reference counting; the collector's
    # rescans of the growing graph were 40% of a long gradient of small arrays
    import chainrule

    seen = []

    def f(x):
        seen.append(gc.isenabled())
        if x > 1.0:
            raise ValueError("taken branch")
        return np.sin(x) * x

    assert gc.isenabled()
    assert chainrule.grad(f)(0.5) == onp.cos(0.5) * 0.5 + onp.sin(0.5)
    vjp, _ = chainrule.make_vjp(f)(0.25)
    assert vjp(1.0) == onp.cos(0.25) * 0.25 + onp.sin(0.25)
    assert seen == [False, False] and gc.isenabled()
    with pytest.raises(ValueError, match="taken branch"):
        chainrule.grad(f)(2.0)
    assert gc.isenabled()  # restored after an exception too
    gc.disable()
    try:
        chainrule.grad(f)(0.5)
        assert not gc.isenabled()  # a collector the user paused stays paused
    finally:
        gc.enable()
