"""The collapsed Laplacian (``laplacian``: one pass carrying the value once, the first
coefficients along every direction, and one second coefficient summed over the directions)
against independent references: the per-direction second derivatives of ``jet`` summed
(itself checked against nested ``jvp`` in test_taylor.py), and ``trace(hessian(f))``."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule
import chainrule.extend
import chainrule.numpy as np
from chainrule._core.pytree import tree_flatten
from chainrule._transforms.vmap import VmapFallbackWarning
from test_taylor import SPEC_CASES, _mlp  # (tests/ is on sys.path)


def _per_direction_sum(f, x, directions):
    """sum over the rows v of ``directions`` of v^T H v, one jet of order 2 per direction
    (a Python loop: no batching, no collapsing)."""
    x = onp.asarray(x)
    total = 0.0
    for v in directions:
        v = v.reshape(x.shape)
        _, (_, second) = chainrule.jet(f, (x,), ([v, onp.zeros_like(v)],))
        total = total + second
    return total


def _real_case(case) -> bool:
    return all(onp.asarray(case.args[i]).dtype.kind == "f" for i in case.argnums)


REAL_CASES = [c for c in SPEC_CASES if _real_case(c)]


def _as_scalar_function(case):
    """g(z): the case's primitive with its differentiated arguments read from the flat
    vector z, its outputs contracted with fixed random weights to one real number."""
    shapes = [onp.shape(case.args[i]) for i in case.argnums]
    sizes = [int(onp.prod(s)) for s in shapes]
    dtype = onp.result_type(*[onp.asarray(case.args[i]) for i in case.argnums])
    z0 = onp.concatenate([onp.ravel(onp.asarray(case.args[i], dtype=dtype))
                          for i in case.argnums]) if sizes else onp.zeros(0, dtype)
    out = case.fun(*case.args, **case.kwargs)
    rng = onp.random.default_rng(3)
    weights = [rng.uniform(-1, 1, onp.shape(leaf)) for leaf in tree_flatten(out)[0]]

    def g(z):
        args, start = list(case.args), 0
        for i, shape, size in zip(case.argnums, shapes, sizes):
            args[i] = np.reshape(z[start:start + size], shape).astype(
                onp.asarray(case.args[i]).dtype)
            start += size
        leaves = tree_flatten(case.fun(*args, **case.kwargs))[0]
        return sum(np.sum(np.real(leaf) * w) for leaf, w in zip(leaves, weights))

    return g, z0


@pytest.mark.parametrize("case", REAL_CASES, ids=[c.id for c in REAL_CASES])
def test_collapsed_laplacian_equals_the_per_direction_sum_at_every_spec_case(case):
    """The meta-test: for every primitive with a JVP, at its real spec cases, the
    collapsed Laplacian of a scalar contraction of the primitive equals the sum of the
    second derivatives along each basis direction (one jet each), whichever path of the
    collapsed pass the primitive's Taylor rule takes (linear, elementwise recurrence,
    multilinear, generic nested JVP)."""
    g, z0 = _as_scalar_function(case)
    got = chainrule.laplacian(g)(z0)
    want = _per_direction_sum(g, z0, onp.eye(z0.size, dtype=z0.dtype))
    small = z0.dtype == onp.float32
    rtol = 2e-3 if small else 1e-9
    scale = max(1.0, float(onp.abs(want)) if onp.isfinite(want) else 1.0)
    onp.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)
    assert onp.asarray(got).dtype == onp.asarray(want).dtype


HESSIAN_CASES = [c for c in REAL_CASES if "rev" in c.modes and c.order >= 2][::7]


@pytest.mark.parametrize("case", HESSIAN_CASES, ids=[c.id for c in HESSIAN_CASES])
def test_collapsed_laplacian_equals_the_trace_of_the_hessian(case):
    """A slice of the spec cases (every 7th with second-order reverse mode) against the
    trace of the Hessian, which reverse mode builds without any Taylor rule."""
    g, z0 = _as_scalar_function(case)
    got = chainrule.laplacian(g)(z0)
    want = onp.trace(onp.reshape(chainrule.hessian(g)(z0), (z0.size, z0.size)))
    rtol = 2e-3 if z0.dtype == onp.float32 else 1e-9
    onp.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, abs(float(want))))


def test_the_mlp_laplacian_equals_the_trace_of_the_hessian_at_larger_d():
    f = _mlp(40, width=16, seed=4)
    x = onp.random.default_rng(5).standard_normal(40)
    want = onp.trace(chainrule.hessian(f)(x))
    onp.testing.assert_allclose(chainrule.laplacian(f)(x), want, rtol=1e-12)


def test_collapsed_laplacian_under_jit_vmap_and_grad(monkeypatch):
    # (vmap's first call bounds its batched run by a wall-clock deadline; on a busy machine
    # it may end in the per-example loop, which warns nothing, as a batch too small to
    # gain from a batched run does: no deadline, no small batch here)
    from chainrule._transforms import vmap as vmap_module
    monkeypatch.setattr(vmap_module._Call, "_deadline", lambda self, left: None)
    monkeypatch.setattr(vmap_module, "_FIRST_RUN_COST", 0.0)
    monkeypatch.setattr(vmap_module, "_SMALL_BATCH", 0)
    f = _mlp(5, seed=6)
    lap = chainrule.laplacian(f)
    x = onp.random.default_rng(7).standard_normal(5)
    eager = lap(x)
    jitted = chainrule.jit(lap)
    assert jitted(x) == eager
    assert jitted(x) == eager  # the second call replays
    other = x[::-1].copy()
    assert jitted(other) == lap(other)
    xs = onp.random.default_rng(8).standard_normal((4, 5))
    onp.testing.assert_allclose(chainrule.vmap(lap)(xs), [lap(row) for row in xs], rtol=1e-14)
    # an outer vmap whose examples take other branches: its signal passes through the
    # collapsed pass (which has none of its own) and vmap splits the batch
    branchy = lambda x: np.sum(np.cos(x)) if x[0] > 0 else np.sum(x ** 4)  # noqa: E731
    xs = onp.array([[1.0, 2.0], [-1.0, 2.0], [0.5, -0.3]])
    with pytest.warns(VmapFallbackWarning):
        split = chainrule.vmap(chainrule.laplacian(branchy))(xs)
    onp.testing.assert_allclose(split, [-onp.cos(1.0) - onp.cos(2.0), 60.0,
                                        -onp.cos(0.5) - onp.cos(0.3)], rtol=1e-14)
    # d/dx of the Laplacian, against the third derivatives of reverse mode
    third = chainrule.jacobian(chainrule.hessian(f))(x)
    onp.testing.assert_allclose(chainrule.grad(lap)(x), onp.einsum("iij->j", third),
                                rtol=1e-10)


def test_the_stochastic_laplacian_is_the_mean_along_its_directions():
    """samples=s takes the same directions numpy.random.default_rng(key) draws; collapsed,
    it is the mean of the per-direction second derivatives along them."""
    f = _mlp(6, seed=9)
    x = onp.random.default_rng(10).standard_normal(6)
    for distribution in ("rademacher", "gaussian"):
        rng = onp.random.default_rng(11)
        if distribution == "rademacher":
            directions = rng.choice([-1.0, 1.0], size=(5, 6))
        else:
            directions = rng.standard_normal((5, 6))
        got = chainrule.laplacian(f, samples=5, key=11, distribution=distribution)(x)
        want = _per_direction_sum(f, x, directions) / 5
        onp.testing.assert_allclose(got, want, rtol=1e-12)


def test_collapsed_laplacian_edges():
    # a Python float, a size-1 array and a 0-d array
    f = lambda x: np.sum(np.exp(2.0 * x))  # noqa: E731
    assert chainrule.laplacian(f)(0.5) == pytest.approx(4 * onp.exp(1.0), rel=1e-14)
    assert chainrule.laplacian(f)(onp.array([0.5])) == pytest.approx(4 * onp.exp(1.0),
                                                                     rel=1e-14)
    # a linear or constant function: 0 (of the input's dtype), an empty input: 0
    x32 = onp.array([1.0, -2.0], dtype=onp.float32)
    linear = chainrule.laplacian(lambda x: np.sum(3.0 * x) + 1.0)(x32)
    assert linear == 0 and onp.asarray(linear).dtype == onp.float32
    assert chainrule.laplacian(lambda x: 2.5)(onp.ones(3)) == 0
    assert chainrule.laplacian(lambda x: np.sum(x ** 2))(onp.zeros(0)) == 0
    # float32 stays float32 through every kind of rule
    g = lambda x: np.sum(np.tanh(x) * x[::-1] + x ** 3 / np.sqrt(1.0 + x * x))  # noqa: E731
    got32 = chainrule.laplacian(g)(x32)
    assert onp.asarray(got32).dtype == onp.float32
    want = onp.trace(chainrule.hessian(g)(x32.astype(onp.float64)))
    onp.testing.assert_allclose(got32, want, rtol=1e-5)
    # nan and -0.0 where the per-direction jets have them
    for x in (onp.array([onp.nan, 1.0]), onp.array([-0.0, 0.0]), onp.array([onp.inf, 1.0])):
        h = lambda x: np.sum(np.sin(x) * x)  # noqa: E731
        want = _per_direction_sum(h, x, onp.eye(2))
        onp.testing.assert_array_equal(chainrule.laplacian(h)(x), want)
    # a Python decision on the value (the value is not batched: no fallback needed)
    branchy = lambda x: np.sum(np.cos(x)) if x[0] > 0 else np.sum(x ** 4)  # noqa: E731
    for x in (onp.array([1.0, 2.0]), onp.array([-1.0, 2.0])):
        onp.testing.assert_allclose(chainrule.laplacian(branchy)(x),
                                    onp.trace(chainrule.hessian(branchy)(x)), rtol=1e-12)
    # the input is not modified, and a second call gives the same answer
    x = onp.array([0.3, -0.7])
    before = x.copy()
    first = chainrule.laplacian(g)(x)
    assert chainrule.laplacian(g)(x) == first
    assert onp.array_equal(x, before)


def test_a_rule_deciding_on_a_direction_falls_back_to_each_direction_apart():
    """A user's Taylor rule that makes a Python decision on its input's first coefficient
    cannot run with the directions batched (they disagree); laplacian then pushes each
    direction's series apart, and the answer is still the Hessian's trace."""

    @chainrule.primitive
    def cube(x):
        return x ** 3

    chainrule.extend.defjvp(cube, lambda g, ans, x: 3 * x ** 2 * g)
    chainrule.extend.defvjp(cube, lambda ans, x: lambda g: 3 * x ** 2 * g)

    def rule(series_in, argnums, ans, args, kwargs, order):
        (x,) = args
        coefficients = [x, *series_in[0]]
        if float(coefficients[1][0]) > 0:  # a decision on the direction (basis: they differ)
            pass
        out = []
        for j in range(1, order + 1):  # the Cauchy product of x * x * x
            out.append(sum(coefficients[a] * coefficients[b] * coefficients[j - a - b]
                           for a in range(j + 1) for b in range(j + 1 - a)))
        return tuple(out)

    chainrule.extend.deftaylor(cube, rule)
    f = lambda x: np.sum(np.sin(cube(x)))  # noqa: E731
    x = onp.array([0.4, -0.9, 1.1])
    onp.testing.assert_allclose(chainrule.laplacian(f)(x),
                                onp.trace(chainrule.hessian(f)(x)), rtol=1e-12)


def test_the_coordinate_directions_are_never_materialised():
    """The Laplacian's d coordinate directions enter as a structure (an elementwise
    function scales it, a linear map with a smaller output takes its columns), never as
    the d x d identity: at d = 1500 (an identity of 18 MB) the pass's peak stays far
    below it, and the answer is the trace of the Hessian."""
    import tracemalloc

    d = 1500
    rng = onp.random.default_rng(0)
    w = rng.standard_normal((4, d)) / d
    f = lambda x: np.sum(np.tanh(np.dot(w, np.sin(x))) ** 2)  # noqa: E731
    x = rng.standard_normal(d)
    laplacian = chainrule.laplacian(f)
    laplacian(x)
    tracemalloc.start()
    try:
        got = laplacian(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < d * d * 8 / 8, peak
    u = np.dot(w, np.sin(x))  # by hand: f = sum tanh(u)^2 with u = w sin(x)
    t = np.tanh(u)
    outer = 2 * (1 - t ** 2) * (1 - 3 * t ** 2)  # (tanh^2)'' at u
    inner = 2 * t * (1 - t ** 2)  # (tanh^2)' at u
    want = (np.sum(outer * np.dot(w ** 2, np.cos(x) ** 2))
            - np.sum(inner * np.dot(w, np.sin(x))))
    onp.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("shape", [(6,), (2, 3)])
def test_structured_directions_through_scaling_columns_and_nesting(shape):
    """The structured seed's paths (an elementwise function first, a linear map with a
    smaller output, one with a larger output, a product of two traced values) agree with
    trace(hessian), eagerly, jitted and under grad with respect to the weights."""
    rng = onp.random.default_rng(1)
    x = rng.standard_normal(shape)
    n = x.size

    def f(x, w):
        h = np.exp(0.3 * np.ravel(x))  # elementwise, then a scaled copy
        z = np.dot(w, h)  # fewer outputs than directions: the columns of w
        wide = np.outer(np.ravel(x), z)  # more outputs: the batch itself
        return np.sum(np.tanh(z) ** 2) + np.sum(np.sin(wide)) + np.dot(z, z[::-1])

    w = rng.standard_normal((3, n))
    want = onp.trace(chainrule.hessian(f)(x, w).reshape(n, n))
    onp.testing.assert_allclose(chainrule.laplacian(lambda z: f(z, w))(x), want, rtol=1e-12)
    jitted = chainrule.jit(lambda x, w: chainrule.laplacian(lambda z: f(z, w))(x))
    onp.testing.assert_allclose(jitted(x, w), want, rtol=1e-12)
    onp.testing.assert_allclose(jitted(x + 1.0, w),
                                onp.trace(chainrule.hessian(f)(x + 1.0, w).reshape(n, n)),
                                rtol=1e-12)
    by_weights = chainrule.grad(lambda w: chainrule.laplacian(lambda z: f(z, w))(x))(w)
    reference = chainrule.grad(
        lambda w: np.trace(np.reshape(chainrule.hessian(f)(x, w), (n, n))))(w)
    onp.testing.assert_allclose(by_weights, reference, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("which", ["slogdet", "eigh"])
def test_jit_of_the_laplacian_of_a_primitive_with_a_tuple_answer(which):
    """jit(laplacian(f)) with f through slogdet or eigh (primitives answering a tuple,
    which jit traces as one value) equals the eager Laplacian; it raised TypeError
    (the batch of a traced tuple was made one batched array)."""
    def f(x):
        a = np.outer(x, x) + np.eye(3)
        if which == "slogdet":
            return np.linalg.slogdet(a)[1]
        return np.sum(np.linalg.eigh(a)[0] ** 2)

    jitted = chainrule.jit(chainrule.laplacian(f))
    for x in (onp.array([0.3, 0.5, 0.7]), onp.array([1.3, -0.5, 0.2])):
        onp.testing.assert_allclose(jitted(x), chainrule.laplacian(f)(x), rtol=1e-12)
        onp.testing.assert_allclose(jitted(x), onp.trace(chainrule.hessian(f)(x)),
                                    rtol=1e-10)


EDGE_INPUTS = [onp.zeros(0), onp.zeros((0, 3), onp.float32), onp.array([-0.0]),
               onp.array([onp.nan, 1.0]), onp.array([[0.3]]), 0.5, -0.0]


@pytest.mark.parametrize("x", EDGE_INPUTS, ids=[repr(x) for x in EDGE_INPUTS])
@pytest.mark.parametrize("samples", [None, 3])
def test_laplacian_edges_under_jit_and_vmap(x, samples):
    """Empty (the Laplacian on R^0 is 0, of the input's dtype, exact and estimated),
    size-1, -0.0, nan and Python-float inputs: eager equals trace(hessian), jit equals
    eager bit for bit (twice: the replay too), vmap equals the loop."""
    f = lambda x: np.sum(np.tanh(x) ** 2 * np.exp(x)) + np.sum(x ** 3)  # noqa: E731
    lap = chainrule.laplacian(f, samples=samples, key=2)
    eager = lap(x)
    dtype = onp.result_type(x)
    assert onp.asarray(eager).dtype == dtype and onp.ndim(eager) == 0
    if onp.size(x) == 0:
        assert eager == 0
    elif samples is None or onp.size(x) == 1:  # (one coordinate: v^T H v = H whatever v)
        want = onp.trace(onp.atleast_2d(chainrule.hessian(f)(onp.asarray(x, float))))
        onp.testing.assert_allclose(eager, want, rtol=1e-14)
    jitted = chainrule.jit(lap)
    onp.testing.assert_array_equal(jitted(x), eager)
    onp.testing.assert_array_equal(jitted(x), eager)
    xs = onp.stack([onp.asarray(x), -onp.asarray(x)])
    onp.testing.assert_array_equal(chainrule.vmap(lap)(xs), [lap(row) for row in xs])
