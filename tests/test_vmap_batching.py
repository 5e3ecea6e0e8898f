"""vmap's batching rules: every primitive has one or is listed as running once per example;
the rules are what runs (no loop, no fallback) on the programs vmap is for; Python
decisions split the batch into groups of agreeing examples; what cannot run batched falls
back to the per-example loop; composition with grad, jvp, jacobian, hessian, jit, itself."""

from __future__ import annotations

import collections
import time
import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
import chainrule.scipy  # noqa: F401  (registers SciPy's primitives)
import chainrule.scipy.linalg
from chainrule._core.rule_table import rule_table
from chainrule._transforms.vmap import VmapFallbackWarning
from chainrule.numpy import batched
from chainrule.numpy import numpy_wrapper as anp
from chainrule.numpy.batched import BatchLoopWarning, batching_rule

R = onp.random.default_rng(3)


@pytest.fixture
def without_deadlines(monkeypatch):
    """What a batched run does, whatever the machine's speed: a first call's batched run
    has a deadline (from example 0's time alone), which on a busy machine may stop a small
    batch of a cheap function before its first primitive (the loop answers then), and a
    batch too small for a batched run to beat the loop runs as the loop at once."""
    from chainrule._transforms import vmap as vmap_module
    monkeypatch.setattr(vmap_module._Call, "_deadline", lambda self, left: None)
    monkeypatch.setattr(vmap_module, "_FIRST_RUN_COST", 0.0)
    monkeypatch.setattr(vmap_module, "_SMALL_BATCH", 0)

# Primitives that run once per example under vmap, and why (a rule would be possible for
# most; none is wrong, only slower). A primitive registered anywhere is checked. A view
# function (numpy_wrapper.VIEWING) may not be here: its looped answer is a copy, which a
# later write into its base would leave stale.
RUN_PER_EXAMPLE = {
    # answers whose shape depends on the values or on several operands' ranks
    "append", "compress", "delete", "extract", "insert", "ediff1d", "meshgrid",
    "linspace", "full", "gradient", "cross", "convolve",
    "correlate", "corrcoef",
    # SciPy's linear algebra: banded matrices, one per call
    "solve_banded", "convolve_canonical",
    # containers, solvers and sparse operands: one Python object per example
    "container_add", "sequence_take", "sequence_untake", "_implicit", "ivp_values",
    "odeint_args", "quad_value", "_fixed_point", "_dense_sparse", "_sparse_dense", "_solve",
    "_expm_multiply", "stored_values", "with_values", "to_dense", "substitute", "_optimum",
    "_valued",
}


def _differentiable_primitives():
    import chainrule.explain  # noqa: F401  (its CLI's functions are primitives too)
    import chainrule.tensor  # noqa: F401

    # chainrule's own (other test modules may have registered theirs by now), but not the
    # explain CLI's stand-ins for piecewise-constant functions, which only its parser calls
    def own(fun) -> bool:
        raw = getattr(fun, "fun", fun)
        module = getattr(raw, "__module__", None) or type(raw).__name__
        return (module.split(".")[0] in ("chainrule", "numpy", "scipy", "ufunc")
                and module != "chainrule.explain._expr")

    return [f for f, entry in rule_table.items() if entry.vjp is not None and own(f)
            and not getattr(f, "_chainrule_notrace", False)]


# read at collection, before tests define primitives of their own at run time
PRIMITIVES = _differentiable_primitives()


def test_every_primitive_has_a_batching_rule_or_is_listed_as_looping():
    missing, listed_with_rule = [], []
    for fun in PRIMITIVES:
        name = getattr(fun, "__name__", repr(fun))
        has_rule = batching_rule(fun) is not None
        if not has_rule and name not in RUN_PER_EXAMPLE:
            missing.append(name)
        if has_rule and name in RUN_PER_EXAMPLE:
            listed_with_rule.append(name)
    assert not missing, f"no batching rule and not listed in RUN_PER_EXAMPLE: {missing}"
    assert not listed_with_rule, f"listed as looping but has a rule: {listed_with_rule}"
    assert not RUN_PER_EXAMPLE & set(anp.VIEWING)
    with_rule = sum(batching_rule(f) is not None for f in PRIMITIVES)
    assert with_rule >= 233  # the count when kron, cov, bincount and SciPy's solves got rules


def _no_fallback(call):
    """``call()``, failing if any primitive looped or vmap fell back."""
    batched._warned.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BatchLoopWarning)
        warnings.simplefilter("error", VmapFallbackWarning)
        return call()


def _mlp_loss(params, x, t):
    (w1, b1), (w2, b2) = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    return -np.sum(t * (logits - chainrule.scipy.special.logsumexp(logits)))


def test_per_example_gradients_of_an_mlp_run_batched_and_equal_the_loop():
    params = [(R.normal(size=(5, 8)) * 0.3, R.normal(size=8)),
              (R.normal(size=(8, 3)) * 0.3, R.normal(size=3))]
    xs, ts = R.normal(size=(16, 5)), onp.eye(3)[R.integers(0, 3, 16)]
    per_example = _no_fallback(
        lambda: cr.vmap(cr.grad(_mlp_loss), in_axes=(None, 0, 0))(params, xs, ts))
    for i in range(16):
        want = cr.grad(_mlp_loss)(params, xs[i], ts[i])
        for got_leaf, want_leaf in zip(cr.tree_flatten(per_example)[0],
                                       cr.tree_flatten(want)[0]):
            onp.testing.assert_allclose(got_leaf[i], want_leaf, rtol=1e-12, atol=1e-15)
    # and the gradient of the summed loss through vmap is the sum of the per-example ones
    total = _no_fallback(lambda: cr.grad(
        lambda p: np.sum(cr.vmap(_mlp_loss, in_axes=(None, 0, 0))(p, xs, ts)))(params))
    for got_leaf, leaf in zip(cr.tree_flatten(total)[0], cr.tree_flatten(per_example)[0]):
        onp.testing.assert_allclose(got_leaf, leaf.sum(axis=0), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, fun, shape", [
    ("softmax", lambda x: chainrule.scipy.special.softmax(x), (5,)),
    ("solve", lambda x: np.linalg.solve(np.eye(4) * 3 + np.outer(x, x), x), (4,)),
    ("cumsum", lambda x: np.cumsum(x * x), (6,)),
    ("fft", lambda x: np.real(np.fft.fft(x)) * np.imag(np.fft.fft(x)), (8,)),
    ("indexing", lambda x: np.reshape(x, (2, 3)).T[1:, ::-1] @ x[:2], (6,)),
    ("reductions", lambda x: np.max(x) * np.mean(x ** 2) - np.std(x), (5,)),
    ("linalg", lambda x: np.linalg.det(np.outer(x, x) + np.eye(3)) * np.linalg.inv(
        np.diag(x) + 2.0)[0], (3,)),
    ("einsum", lambda x: np.einsum("i,j->ij", x, x) @ x, (4,)),
])
def test_rules_of_each_pattern_run_batched_in_both_modes(name, fun, shape):
    xs = R.normal(size=(3,) + shape) * 0.5
    got = _no_fallback(lambda: cr.vmap(fun)(xs))
    onp.testing.assert_allclose(got, onp.stack([fun(x) for x in xs]), rtol=1e-12, atol=1e-14)
    jac = _no_fallback(lambda: cr.vmap(cr.jacobian(fun))(xs))
    jac_fwd = _no_fallback(lambda: cr.vmap(cr.jacfwd(fun))(xs))
    for i, x in enumerate(xs):
        want = cr.jacobian(fun)(x)
        onp.testing.assert_allclose(jac[i], want, rtol=1e-10, atol=1e-12)
        onp.testing.assert_allclose(jac_fwd[i], want, rtol=1e-10, atol=1e-12)


def test_a_primitive_without_a_rule_loops_with_one_warning_naming_it(without_deadlines):
    xs = R.normal(size=(4, 3))
    batched._warned.clear()
    with pytest.warns(BatchLoopWarning, match="convolve has no batching rule") as record:
        got = cr.vmap(lambda x: np.convolve(x, x))(xs)
        cr.vmap(lambda x: np.convolve(x, x))(xs)
    assert sum("convolve" in str(w.message) for w in record) == 1
    onp.testing.assert_array_equal(got, onp.stack([onp.convolve(x, x) for x in xs]))


_A = onp.tril(R.normal(size=(4, 3, 3))) + 3 * onp.eye(3)
_INDICES = R.integers(0, 3, size=(4, 5))
_COUNTS = onp.hstack([R.integers(0, 5, size=(4, 5)), onp.full((4, 1), 4)])


@pytest.mark.parametrize("name, fun, args, exact", [
    ("kron", lambda x, y: np.kron(x, y), (R.normal(size=(4, 3)), R.normal(size=(4, 2, 2))), True),
    ("kron of one matrix", lambda x: np.kron(onp.eye(2), x), (R.normal(size=(4, 3)),), True),
    ("cov", lambda x: np.cov(x), (R.normal(size=(4, 3, 5)),), False),
    ("cov of two", lambda x, y: np.cov(x, y, rowvar=False, ddof=0),
     (R.normal(size=(4, 5, 2)), R.normal(size=(4, 5))), False),
    ("bincount", lambda i, w: np.bincount(i, w), (_COUNTS, R.normal(size=(4, 6))), True),
    ("indices of each example", lambda x, i: x[i], (R.normal(size=(4, 3)), _INDICES), True),
    ("take of each example's indices", lambda x, i: np.take(x, i, axis=0),
     (R.normal(size=(4, 3, 2)), _INDICES), True),
    ("take from one array", lambda i: np.take(onp.arange(6.0).reshape(2, 3), i, axis=1),
     (_INDICES,), True),
    ("solve_triangular", lambda a, b: chainrule.scipy.linalg.solve_triangular(a, b, lower=True),
     (_A, R.normal(size=(4, 3))), False),
    ("solve_triangular of one matrix", lambda b: chainrule.scipy.linalg.solve_triangular(
        _A[0], b, trans=1, lower=True), (R.normal(size=(4, 3, 2)),), False),
    ("solve", lambda a, b: chainrule.scipy.linalg.solve(a, b), (_A, R.normal(size=(4, 3))),
     False),
    ("solve_sylvester", lambda a, q: chainrule.scipy.linalg.solve_sylvester(a, a.T, q),
     (_A, R.normal(size=(4, 3, 3))), False),
])
def test_kron_cov_bincount_indices_and_scipys_solves_run_batched(name, fun, args, exact):
    got = _no_fallback(lambda: cr.vmap(fun)(*args))
    want = onp.stack([fun(*example) for example in zip(*args)])
    if exact:
        onp.testing.assert_array_equal(got, want, strict=True)
    else:
        onp.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15, strict=True)
    # (bincount and take differentiate in their indices' values: their VJPs index with them
    # in NumPy, which runs once per example)
    if name not in ("bincount", "take from one array", "take of each example's indices"):
        grads = _no_fallback(lambda: cr.vmap(cr.grad(lambda *a: np.sum(np.sin(fun(*a)))))(*args))
        want = onp.stack([cr.grad(lambda *a: np.sum(np.sin(fun(*a))))(*example)
                          for example in zip(*args)])
        onp.testing.assert_allclose(grads, want, rtol=1e-11, atol=1e-13)


def test_disagreeing_decisions_run_per_group_and_keep_the_order(without_deadlines):
    calls = collections.deque()  # (a deque: state vmap does not watch)

    def f(x):
        calls.append(onp.shape(x))
        time.sleep(0.005)  # a call costs the same batched or not: groups are worth batching
        if np.sum(x) > 0:
            return np.sin(x)
        return 2.0 * np.cos(x)

    xs = R.normal(size=(16, 2))
    xs[:, 0] += onp.where(onp.arange(16) % 3 == 0, 5.0, -5.0)  # positive sums: 0, 3, 6...
    with pytest.warns(VmapFallbackWarning, match="different branches"):
        got = cr.vmap(f)(xs)
    want = onp.stack([f(x) for x in xs])
    onp.testing.assert_array_equal(got, want)
    # one batched call, three examples alone (what a call costs), then one per group
    calls.clear()
    cr.vmap(f)(xs)
    assert len(calls) == 6
    grads = cr.vmap(cr.grad(lambda x: np.sum(f(x))))(xs)
    onp.testing.assert_array_equal(grads, onp.stack([cr.grad(lambda x: np.sum(f(x)))(x)
                                                     for x in xs]))


def test_int_and_float_decisions_group_the_examples_by_value_to_the_bit():
    # (an int or float of a batch is decided from the values at once: equal values, and
    # for floats equal bits, 0.0 and -0.0 apart, each nan by its own bits, agree)
    xs = onp.array([[1.0, -0.0, 3.0], [0.0, 2.0, 1.0], [onp.nan, 0.0, 2.0],
                    [-onp.nan, -0.0, 1.0], [1.0, 5.0, 3.0]])
    extremes = onp.array([[onp.iinfo(onp.int64).min, 3], [onp.iinfo(onp.int64).max, 3],
                          [0, 4], [onp.iinfo(onp.int64).min, 4]])
    cases = [
        (lambda x: x * (2.0 if float(x[0]) > 0 else 3.0) + float(x[0]), xs),
        (lambda x: x * 0 + onp.copysign(1.0, float(x[1])), xs),
        (lambda x: np.roll(x, int(np.argmax(x))) * [1.0, 2.0, 3.0][int(np.argmin(x))], xs),
        (lambda i: i * 0 + int(i[0]) % 7 + int(i[1]), extremes),
        (lambda i: i + onp.uint64(int(i[0]) % 3),
         onp.array([[0, 1], [2 ** 64 - 1, 1], [5, 1]], dtype=onp.uint64)),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f, batch in cases:
            want = onp.stack([f(x) for x in batch])
            got = cr.vmap(f)(batch)
            assert got.dtype == want.dtype
            assert got.tobytes() == want.tobytes()


def test_splitting_into_many_groups_ends_in_the_loop(without_deadlines):
    calls = collections.deque()  # (a deque: state vmap does not watch)

    def f(x):
        calls.append(1)
        for i in range(6):  # six decisions, 64 ways: a group each example, nearly
            if x[i] > 0:
                x = x * 1.5
        return x

    xs = R.normal(size=(64, 6))
    want = onp.stack([f(x) for x in xs])
    calls.clear()
    with pytest.warns(VmapFallbackWarning, match="different branches"):
        got = cr.vmap(f)(xs)
    onp.testing.assert_array_equal(got, want)
    # a batched call costs many examples' calls here: few are made, then the loop
    assert len(calls) <= 64 + 10


def test_agreeing_decisions_stay_batched():
    def f(x):
        y = x * 2.0
        if np.all(y > -100.0):  # true for every example
            y = y + 1.0
        return np.sum(y)

    xs = R.normal(size=(5, 3))
    got = _no_fallback(lambda: cr.vmap(f)(xs))
    onp.testing.assert_allclose(got, [f(x) for x in xs], rtol=1e-15)


def test_while_loops_with_different_trip_counts_under_grad_and_jit():
    def newton_sqrt(a):
        x = a
        while np.abs(x * x - a) > 1e-12 * a:
            x = 0.5 * (x + a / x)
        return x

    a = onp.array([2.0, 9.0, 1e4, 0.25])
    onp.testing.assert_allclose(cr.vmap(newton_sqrt)(a), onp.sqrt(a), rtol=1e-12)
    onp.testing.assert_allclose(cr.vmap(cr.grad(newton_sqrt))(a), 0.5 / onp.sqrt(a),
                                rtol=1e-8)
    jitted = cr.jit(cr.vmap(newton_sqrt))
    onp.testing.assert_allclose(jitted(a), onp.sqrt(a), rtol=1e-12)
    onp.testing.assert_allclose(jitted(a * 4.0), 2.0 * onp.sqrt(a), rtol=1e-12)


def test_nested_vmap_with_a_decision_of_the_inner_examples():
    def f(x, y):
        return x * y if x > y else x - y

    xs, ys = R.normal(size=4), R.normal(size=3)
    got = cr.vmap(cr.vmap(f, in_axes=(None, 0)), in_axes=(0, None))(xs, ys)
    want = onp.array([[f(x, y) for y in ys] for x in xs])
    onp.testing.assert_allclose(got, want, rtol=1e-15)


def test_what_cannot_run_batched_falls_back_to_the_loop(without_deadlines):
    def f(x):
        plain = onp.asarray(x)  # leaves chainrule: only a per-example call can do this
        return np.sum(x * plain.shape[0])

    xs = R.normal(size=(3, 4))
    with pytest.warns(VmapFallbackWarning, match="once per example"):
        got = cr.vmap(f)(xs)
    onp.testing.assert_allclose(got, 4.0 * xs.sum(axis=1), rtol=1e-15)


def test_composition_orders():
    f = lambda x, w: np.sum(np.tanh(x * w) ** 2)
    xs, w = R.normal(size=(5, 3)), R.normal(size=3)
    per_example = _no_fallback(lambda: cr.vmap(cr.grad(f, argnum=1), in_axes=(0, None))(xs, w))
    want = onp.stack([cr.grad(f, argnum=1)(x, w) for x in xs])
    onp.testing.assert_allclose(per_example, want, rtol=1e-13)
    # jacobian of vmap: one row of per-example gradients per example
    jac = cr.jacobian(lambda w: cr.vmap(f, in_axes=(0, None))(xs, w))(w)
    onp.testing.assert_allclose(jac, want, rtol=1e-13)
    # vmap of hessian and of jvp
    hs = _no_fallback(lambda: cr.vmap(cr.hessian(f), in_axes=(0, None))(xs, w))
    for i, x in enumerate(xs):
        onp.testing.assert_allclose(hs[i], cr.hessian(f)(x, w), rtol=1e-12, atol=1e-14)
    v = R.normal(size=(5, 3))
    _, tangents = _no_fallback(lambda: cr.vmap(
        lambda x, t: cr.jvp(lambda x: f(x, w), (x,), (t,)))(xs, v))
    onp.testing.assert_allclose(tangents, [cr.grad(f)(x, w) @ t for x, t in zip(xs, v)],
                                rtol=1e-12)
    # jit of vmap of grad, and vmap of a jitted grad
    jitted = cr.jit(cr.vmap(cr.grad(f, argnum=1), in_axes=(0, None)))
    onp.testing.assert_allclose(jitted(xs, w), want, rtol=1e-13)
    onp.testing.assert_allclose(jitted(xs, w), want, rtol=1e-13)
    inner = cr.vmap(cr.jit(cr.grad(f, argnum=1)), in_axes=(0, None))(xs, w)
    onp.testing.assert_allclose(inner, want, rtol=1e-13)


def test_finite_differences_of_per_example_gradients():
    f = lambda x: np.sum(np.sin(x) * np.cumsum(x))
    xs = R.normal(size=(3, 4))
    per_example = cr.vmap(cr.grad(f))(xs)
    eps = 1e-6
    for i, x in enumerate(xs):
        fd = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in onp.eye(4)]
        onp.testing.assert_allclose(per_example[i], fd, rtol=1e-7, atol=1e-9)


def test_tensor_vmap_against_torch_func():
    torch = pytest.importorskip("torch")
    from chainrule.tensor import Tensor, vmap

    X, W, Y = R.normal(size=(6, 3)), R.normal(size=3), R.normal(size=6)

    def loss(w, x, y):
        return ((x * w).tanh().sum() - y) ** 2

    got = _no_fallback(lambda: vmap(cr.grad(loss), in_dims=(None, 0, 0))(
        Tensor(W), Tensor(X), Tensor(Y)))
    want = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(
        torch.tensor(W), torch.tensor(X), torch.tensor(Y))
    assert isinstance(got, Tensor)
    onp.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    # .backward() through a vmapped forward pass
    w, tw = Tensor(W, requires_grad=True), torch.tensor(W, requires_grad=True)
    (vmap(lambda x: (x * w).tanh().sum())(Tensor(X)) ** 2).sum().backward()
    (torch.func.vmap(lambda x: (x * tw).tanh().sum())(torch.tensor(X)) ** 2).sum().backward()
    onp.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_debug_nans_sees_inside_a_batch():
    xs = R.normal(size=(4, 3))
    with cr.debug_nans(), onp.errstate(divide="ignore", invalid="ignore"):
        with pytest.raises(FloatingPointError, match="VJP of sqrt"):
            cr.vmap(cr.grad(lambda x: np.sum(np.sqrt(x - x))))(xs)


def test_a_mapped_function_catching_exceptions_still_splits(without_deadlines):
    def f(x):
        try:
            scale = float(np.sum(x))  # differs per example: vmap must split, not fail
        except Exception:  # noqa: BLE001  (user code of this kind must not hide the split)
            scale = 0.0
        return x * scale

    xs = R.normal(size=(4, 3))
    with pytest.warns(VmapFallbackWarning):
        got = cr.vmap(f)(xs)
    onp.testing.assert_allclose(got, onp.stack([x * x.sum() for x in xs]), rtol=1e-14)


def test_a_batched_run_past_its_deadline_stops_at_the_next_primitive():
    trace = batched.BatchTrace(3, deadline=time.perf_counter() - 1.0)
    batched.tracer.live_trace_ids.add(trace.id)
    try:
        value = batched.BatchedArray(onp.arange(3.0), trace)
        with pytest.raises(batched.BatchUnsupported) as raised:
            value * 2.0
    finally:
        batched.tracer.live_trace_ids.discard(trace.id)
    assert raised.value.what == batched.OUT_OF_TIME


def test_a_primitive_run_per_example_stops_at_the_deadline_between_examples():
    # (a primitive without a batching rule may cost most of the loop: the deadline is
    # checked before each example's run, not only before the primitive)
    trace = batched.BatchTrace(3, quiet=True, deadline=time.perf_counter() + 3600.0)
    seen = []

    def convolve_then_pass_the_deadline(x, y):
        seen.append(x.shape)
        trace.deadline = time.perf_counter() - 1.0
        return onp.convolve(x, y)

    batched.tracer.live_trace_ids.add(trace.id)
    try:
        value = batched.BatchedArray(onp.arange(6.0).reshape(3, 2), trace)
        with pytest.raises(batched.BatchUnsupported) as raised:
            batched._loop(convolve_then_pass_the_deadline, (value, onp.ones(2)), {}, trace,
                          "has no batching rule")
    finally:
        batched.tracer.live_trace_ids.discard(trace.id)
    assert raised.value.what == batched.OUT_OF_TIME
    assert seen == [(2,)]  # example 0 ran, example 1 did not


def test_a_first_call_runs_example_0_alone_then_the_others_batched_with_a_deadline(
        monkeypatch):
    # (example 0's run, one of the loop's own, tells what an example costs: the batched
    # run of the others has a deadline on the first call too, not only on later ones)
    from chainrule._transforms import vmap as vmap_module
    deadlines = []
    deadline_of = vmap_module._Call._deadline
    monkeypatch.setattr(vmap_module._Call, "_deadline", lambda self, left: deadlines.append(
        deadline_of(self, left)))  # (recorded, then None: the run is not stopped)
    seen = collections.deque()  # (a deque: state vmap does not watch)

    def f(x):
        seen.append((type(x), onp.shape(x)))
        return np.sin(x) * 2.0

    xs = R.normal(size=(10, 3))  # (8 or fewer examples run as the loop: test_vmap_choice)
    mapped = cr.vmap(f)
    got = mapped(xs)
    assert list(seen) == [(onp.ndarray, (3,)), (batched.BatchedArray, (3,))]
    assert deadlines and all(deadline is not None for deadline in deadlines)
    onp.testing.assert_array_equal(got, onp.stack([f(x) for x in xs]))


def test_nested_vmaps_answering_one_value_twice_keep_their_structure_when_split(
        without_deadlines):
    # (contract case 236) the inner vmap runs example 0 alone inside the outer's batched
    # run, then the others batched; the answer given twice is stacked with NumPy's copy
    # (chainrule's, under the outer trace, made a Buffer: a pytree node the batched part
    # lacks, and the parts could not be put together)
    def f(x, s):
        v = x * round(float(np.mean(x)), 1) + (x + x)
        return {"b": v, "c": s, "a": v}

    xs = onp.array([[-0.78, 1.29, -3.8], [-0.94, -0.0, 2.5]])
    ss = onp.array([1.09, 0.41, 0.46])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        got = cr.vmap(cr.vmap(f, in_axes=(0, None)), in_axes=(None, 0))(xs, ss)
    want = [[f(x, s) for x in xs] for s in ss]
    assert list(got) == ["b", "c", "a"]
    for key in got:
        onp.testing.assert_array_equal(
            got[key], onp.array([[w[key] for w in row] for row in want]))


def _two_branches(x):
    y = np.sin(x) * 2.0
    if y[0] > 0:
        return y - x[1]
    return np.cos(y)


@pytest.mark.parametrize("calls", [1, 3])
def test_runs_stopped_at_their_deadline_answer_as_the_loop_without_a_note(monkeypatch, calls):
    # every batched run stops at its first primitive: the loop's answers, bit for bit,
    # split or not, and no "cannot run on the whole batch" note (it is not a construct)
    from chainrule._transforms import vmap as vmap_module
    monkeypatch.setattr(vmap_module._Call, "_deadline", lambda self, left: time.perf_counter() - 1)

    xs = R.normal(size=(9, 3))
    want = onp.stack([_two_branches(x) for x in xs])
    mapped = cr.vmap(_two_branches)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)
        for _ in range(calls):
            got = mapped(xs)
            assert got.dtype == want.dtype
            onp.testing.assert_array_equal(got, want)


def test_split_groups_keep_the_examples_order():
    from chainrule._transforms.vmap import _groups
    examples = onp.arange(10, 17)
    got = _groups(examples, [3, 1, 3, 0, 1, 7, 3])
    assert [g.tolist() for g in got] == [[10, 12, 16], [11, 14], [13], [15]]
    assert [g.tolist() for g in _groups(examples[:3], [False, True, False])] == [[10, 12], [11]]


@pytest.mark.parametrize("deadline", ["none", "passed"])
def test_answers_in_buffers_stack_with_answers_of_examples_run_alone(monkeypatch, deadline):
    """Example 0 runs outside the batch's trace (an ndarray from chainrule.numpy's empty),
    the others under it (a buffer holding the batch) or, past the deadline, one by one:
    one structure, the loop's answer (the fill-style corpus's Oregonator failed so on a
    busy machine)."""
    from chainrule._transforms import vmap as vmap_module
    monkeypatch.setattr(vmap_module._Call, "_deadline", lambda self, left: (
        None if deadline == "none" or self.batched_runs else time.perf_counter() - 1.0))

    def rhs(y, s=77.27, w=0.161, q=8.375e-6):
        dydt = np.empty(3)
        dydt[0] = s * (y[1] - y[0] * y[1] + y[0] - q * y[0] ** 2)
        dydt[1] = (-y[1] - y[0] * y[1] + y[2]) / s
        dydt[2] = w * (y[0] - y[2])
        return dydt

    def pair(y):
        return {"d": rhs(y), "pair": (rhs(y), y[0])}

    x = onp.array([1.0, 2.0, 3.0])
    batch = onp.stack([x, x * 1.1, x - 0.05])
    for f in (rhs, pair):
        loop = [f(row) for row in batch]
        for _ in range(2):  # the first call (example 0 alone) and a later one
            got = cr.vmap(f)(batch)
            if f is rhs:
                assert onp.array_equal(got, onp.stack(loop))
            else:
                assert onp.array_equal(got["d"], onp.stack([a["d"] for a in loop]))
                assert onp.array_equal(got["pair"][0],
                                       onp.stack([a["pair"][0] for a in loop]))
                assert onp.array_equal(got["pair"][1], onp.array([a["pair"][1] for a in loop]))


def test_a_batch_of_one_example_runs_the_function_once_as_the_loop():
    # (one example: the loop is the whole batch; before, its run met the arrays outside
    # the function made read-only, raised, and ran again: two calls, one side effect twice)
    calls, total = [], onp.zeros(3)

    def accumulate(x):
        calls.append(type(x))
        total[...] += x
        return total * 2.0

    xs = R.normal(size=(1, 3))
    got = cr.vmap(accumulate)(xs)
    assert calls == [onp.ndarray]
    onp.testing.assert_array_equal(total, xs[0])
    onp.testing.assert_array_equal(got, 2.0 * xs)


def test_a_first_call_of_two_examples_runs_the_second_alone_too():
    # (after example 0 alone, a batched run of the one example left costs more than its
    # run alone, which the loop makes anyway)
    seen, xs = [], R.normal(size=(2, 3))
    onp.testing.assert_array_equal(cr.vmap(_sine_seen_by(seen))(xs), 2.0 * onp.sin(xs))
    assert seen == [onp.ndarray, onp.ndarray]


def test_a_first_call_of_two_examples_drawing_random_numbers_runs_each_once(monkeypatch):
    # (example 0 alone is the loop's own first run, in order: nothing to watch or undo;
    # before, its draws were undone and the loop ran from example 0 again, three calls)
    from chainrule._transforms import vmap as vmap_module
    scans = []
    monkeypatch.setattr(vmap_module.reach, "Reach",
                        lambda roots, scan=vmap_module.reach.Reach: scans.append(roots)
                        or scan(roots))
    seen, xs = [], R.normal(size=(2, 3))

    def noisy(x):
        seen.append(type(x))
        return x + np.random.normal(size=3)

    np.random.seed(1)
    got = cr.vmap(noisy)(xs)
    np.random.seed(1)
    want = onp.stack([x + onp.random.normal(size=3) for x in xs])
    onp.testing.assert_array_equal(got, want)
    assert seen == [onp.ndarray, onp.ndarray] and not scans


def test_a_first_call_answering_a_tree_as_the_loop_stacks_each_leaf_freshly():
    # (the loop's answers in dicts and tuples are stacked at once, leaf by leaf)
    xs = R.normal(size=(3, 2))

    def f(x):
        y = x * 2.0
        return (y, {"b": y, "a": x.sum(), "c": [1.5, np.float32(2.0)]})

    got = cr.vmap(f)(xs)
    y, tree = got
    assert list(tree) == ["b", "a", "c"] and type(tree["c"]) is list
    onp.testing.assert_array_equal(y, 2.0 * xs)
    onp.testing.assert_array_equal(tree["a"], xs.sum(axis=1))
    assert tree["c"][1].dtype == onp.float32 and tree["c"][0].tolist() == [1.5] * 3
    assert not onp.shares_memory(y, tree["b"]) and not onp.shares_memory(y, xs)


def _sine_seen_by(seen: list):
    """2 sin(x), noting the type of each x it is called with in ``seen``."""
    def f(x):
        seen.append(type(x))
        return np.sin(x) * 2.0
    return f


def test_nested_vmaps_that_cannot_run_batched_run_the_loop_of_loops_once():
    # (a decision differing along both vmaps' examples: the outer runs its examples one by
    # one, each the inner function's loop; before, each outer example, and example 0 alone
    # inside the outer's batched run, made an inner batched attempt, split and fell back)
    seen = []

    def decide(x, y):
        seen.append((type(x), type(y)))
        return x * y if x > y else x - y

    a, b = R.normal(size=6), R.normal(size=5)
    nested = cr.vmap(cr.vmap(decide, in_axes=(None, 0)), in_axes=(0, None))
    want = onp.array([[decide(x, y) for y in b] for x in a])
    for call in range(2):
        seen.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VmapFallbackWarning)
            got = nested(a, b)
        onp.testing.assert_array_equal(got, want)
        batched_runs = [kinds for kinds in seen if batched.BatchedArray in kinds]
        assert len(batched_runs) <= (1 if call == 0 else 0)
        assert len(seen) - len(batched_runs) == 30  # each pair once, as the loop


def test_a_function_that_wraps_a_mapped_function_runs_its_own_body_per_example():
    # (functools.wraps copies the mapped function's attributes: the wrapper is not it)
    import functools
    inner = cr.vmap(lambda x: np.sin(x) if np.sum(x) > 0 else np.cos(x))
    calls = []

    @functools.wraps(inner)
    def wrapper(x):
        calls.append(onp.shape(x))
        return inner(x) * 2.0

    xs = R.normal(size=(4, 3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        got = cr.vmap(wrapper)(xs)
    want = onp.stack([2.0 * onp.stack([onp.sin(r) if r.sum() > 0 else onp.cos(r) for r in x])
                      for x in xs])
    onp.testing.assert_allclose(got, want, rtol=1e-15)
    # the wrapper's own body ran, on examples (alone or batched: the path is the clock's)
    assert calls and all(shape == (3, 2) for shape in calls)


def test_every_batched_run_of_a_call_has_a_deadline_the_runs_after_a_split_too(monkeypatch):
    # (a group's batched run after a split could take as long as it liked: the budget was
    # checked before it started, from the mean of the runs before it)
    from chainrule._transforms import vmap as vmap_module
    deadlines = []
    deadline_of = vmap_module._Call._deadline
    monkeypatch.setattr(vmap_module._Call, "_deadline", lambda self, left: deadlines.append(
        deadline_of(self, left)))  # (recorded, then None: no run is stopped)
    monkeypatch.setattr(vmap_module._Call, "_affordable", lambda self, left: True)

    xs = R.normal(size=(16, 3))
    xs[:, 0] = onp.where(onp.arange(16) % 2, 1.0, -1.0)  # (two groups of 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        got = cr.vmap(_two_branches)(xs)
    onp.testing.assert_array_equal(got, onp.stack([_two_branches(x) for x in xs]))
    assert len(deadlines) >= 3  # the whole batch, then each group's
    assert all(deadline is not None for deadline in deadlines)


@pytest.mark.parametrize("answer", [
    lambda x, y: x * y if x > y else x - y,  # NumPy scalars
    lambda x, y: float(x * y) if x > y else float(x - y),  # Python floats
    lambda x, y: 1 if x > y else 0,  # Python ints
    lambda x, y: onp.array([x, y]) if x > y else onp.array([y, 2.0]),  # arrays of one shape
    lambda x, y: {"b": x * y, "a": (x - y, 1.0)} if x > y else {"b": x, "a": (y, 2.0)},
    lambda x, y: x if x > y else 3,  # scalars of two types
    lambda x, y: np.sin(x) * y if x > y else np.cos(y),  # chainrule's arrays
])
@pytest.mark.parametrize("out_axes", [0, 1])
def test_the_loop_of_loops_answers_as_the_nested_loop(answer, out_axes):
    # (a decision differing along both vmaps: the loop of loops, stacked at once where
    # every answer is a scalar of one type or an array of one shape, else row by row)
    a, b = R.normal(size=4), R.normal(size=3)
    nested = cr.vmap(cr.vmap(answer, in_axes=(None, 0)), in_axes=(0, None), out_axes=out_axes)
    rows = [[answer(x, y) for y in b] for x in a]
    want_tree = cr.tree_flatten(rows[0][0])[1]
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VmapFallbackWarning)
            got = nested(a, b)
        got_leaves, got_tree = cr.tree_flatten(got)
        assert got_tree == want_tree
        for k, leaf in enumerate(got_leaves):
            want = onp.array([[cr.tree_flatten(v)[0][k] for v in row] for row in rows])
            want = onp.moveaxis(want, 0, out_axes)
            assert leaf.dtype == want.dtype
            onp.testing.assert_array_equal(leaf, want)


@pytest.mark.parametrize("time_left, batched_runs", [(0.5, 0), (1e6, 1)])
def test_a_batched_run_starts_only_with_the_time_of_an_example_before_its_deadline(
        monkeypatch, time_left, batched_runs):
    # (a batched run costs at least an example's run: with less time than that left, its
    # run was sure to be stopped at the deadline, and wasted)
    from chainrule._transforms import vmap as vmap_module
    monkeypatch.setattr(vmap_module._Call, "_deadline", lambda self, left: (
        time.perf_counter() + time_left * self.per_example()))
    seen, xs = collections.deque(), R.normal(size=(10, 3))  # (a deque: not watched)
    onp.testing.assert_array_equal(cr.vmap(_sine_seen_by(seen))(xs), 2.0 * onp.sin(xs))
    assert seen.count(batched.BatchedArray) == batched_runs
    assert seen.count(onp.ndarray) == (1 if batched_runs else 10)


def test_the_loop_of_loops_stacks_each_row_before_the_next_writes_into_its_answer():
    # (contract case 969: each example answers the closure array it writes s into; the
    # loop of loops stacks each row's answers as the row ends, before the next row writes)
    buffer = onp.zeros(2)

    def f(x, s):
        buffer[0] = float(s) if x > s else -float(s)
        return buffer

    xs, ss = R.normal(size=3), R.normal(size=4)
    want = onp.stack([onp.stack([f(x, s) for x in xs]) for s in ss])  # (the loop of loops)
    buffer[:] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        got = cr.vmap(cr.vmap(f, in_axes=(0, None)), in_axes=(None, 0))(xs, ss)
    onp.testing.assert_array_equal(got, want)


def test_nested_vmaps_run_one_batch_of_both_vmaps_examples(without_deadlines):
    # (the inner call inside the outer's batched run is one call on the product batch, its
    # decisions split as any batch's; before, a batch of batches, whose decisions differing
    # along both vmaps made the outer run its examples one by one)
    seen = collections.deque()  # (a deque: state vmap does not watch)

    def decide(x, y):
        seen.append((type(x), getattr(x, "_size", None), type(getattr(x, "_value", x))))
        return x * y if x > y else x - y

    a, b = R.normal(size=6), R.normal(size=5)
    nested = cr.vmap(cr.vmap(decide, in_axes=(None, 0)), in_axes=(0, None))
    want = onp.array([[decide(x, y) for y in b] for x in a])
    seen.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        got = nested(a, b)
    onp.testing.assert_array_equal(got, want)
    # (outer example 0 alone, then the product batch of the 5 others by 5: its examples 0
    # and 1 alone, then the 23 others)
    assert (batched.BatchedArray, 23, onp.ndarray) in seen
    assert all(kind is not batched.BatchedArray or size <= 30 and value is onp.ndarray
               for kind, size, value in seen)


@pytest.mark.parametrize("in_axes, out_axes", [(0, 0), (-1, 1), (1, -1)])
def test_a_product_batch_answers_along_the_inner_out_axes(in_axes, out_axes):
    xs = R.normal(size=(4, 3, 2))  # (the outer maps axis 2, the inner in_axes of the rest)

    def f(x, s):
        return np.outer(x, x) * s if np.sum(x) > 0 else np.outer(x, x) - s

    inner = cr.vmap(f, in_axes=(in_axes, None), out_axes=out_axes)
    nested = cr.vmap(inner, in_axes=(2, 0))
    ss = R.normal(size=2)
    want = onp.stack([
        onp.moveaxis(onp.stack([f(x, s) for x in onp.moveaxis(xs[:, :, j], in_axes, 0)]),
                     0, out_axes) for j, s in enumerate(ss)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        for _ in range(2):
            onp.testing.assert_array_equal(nested(xs, ss), want)


def test_a_nested_function_closing_over_the_outer_batch_answers_as_the_loop():
    # (its arguments make one product batch, the value it closes over does not: the
    # outer run stops and runs its examples one by one)
    xs, ys, zs = R.normal(size=(5, 3)), R.normal(size=4), R.normal(size=4)

    def outer(y, z):
        def inner(x, w):
            return x * y + w if y > 0 else x - w
        return cr.vmap(inner, in_axes=(0, None))(xs, z)

    want = onp.stack([onp.stack([x * y + z if y > 0 else x - z for x in xs])
                      for y, z in zip(ys, zs)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        mapped = cr.vmap(outer)
        for _ in range(2):
            onp.testing.assert_array_equal(mapped(ys, zs), want)


def test_a_product_batch_draws_as_the_loop_of_loops():
    a, b = R.normal(size=3), R.normal(size=4)
    nested = cr.vmap(cr.vmap(lambda x, y: x * y + np.random.normal(), in_axes=(None, 0)),
                     in_axes=(0, None))
    for _ in range(2):
        np.random.seed(5)
        got = nested(a, b)
        np.random.seed(5)
        want = onp.array([[x * y + onp.random.normal() for y in b] for x in a])
        onp.testing.assert_array_equal(got, want)


def test_a_list_the_function_returns_and_changes_again_is_stacked_as_the_loop_ends():
    kept = [1.0, 2.0, 3.0]

    def f(x):
        kept[0] = float(np.sum(x))  # (a Python float of each example: the loop runs it)
        return kept

    xs = onp.arange(12.0).reshape(4, 3)
    for _ in range(2):
        answers = [f(x) for x in xs]  # one list, four times: its last change in every row
        want = [onp.stack([a[i] for a in answers]) for i in range(3)]  # (stacked leaf by leaf)
        kept[:] = [1.0, 2.0, 3.0]
        got = cr.vmap(f)(xs)
        assert type(got) is list and len(got) == 3
        assert all(onp.array_equal(g, w) for g, w in zip(got, want)), (got, want)
        kept[:] = [1.0, 2.0, 3.0]
