"""chainrule.jit rolls repeated structure (a Python loop traced once per iteration, and
its backward pass) back into loops of the emitted program: the program is shorter, and
answers exactly what eager evaluation answers."""

from __future__ import annotations

import contextlib
import re
import sys
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrule as cr
import chainrule.numpy as np
from test_fuzz_programs import SHAPES, inputs, programs, run
from test_jit_specs import SELECTED, _check, _scalar

roll_module = sys.modules["chainrule.jit._roll"]
emit_module = sys.modules["chainrule.jit._emit"]


@pytest.fixture(autouse=True, scope="module", params=["folded", "instructions only"])
def folding(request):
    """The module runs twice: loops found in the record before lowering (``_fold``), and
    found among the instructions only (``_roll``; what runs where the fold refuses)."""
    saved = emit_module.node_runs
    if request.param != "folded":
        emit_module.node_runs = lambda *args: []
    try:
        yield request.param
    finally:
        emit_module.node_runs = saved


@contextlib.contextmanager
def rolling_everything():
    """Roll every run of two iterations or more (the default keeps short runs straight)."""
    saved = roll_module.MIN_REPEATS, roll_module.MIN_INSTRUCTIONS
    roll_module.MIN_REPEATS, roll_module.MIN_INSTRUCTIONS = 2, 2
    try:
        yield
    finally:
        roll_module.MIN_REPEATS, roll_module.MIN_INSTRUCTIONS = saved


@pytest.fixture
def roll_everything():
    with rolling_everything():
        yield


def _bits(a, b):
    a, b = onp.asarray(a), onp.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes(), (a, b)


def _same_tree(got, want):
    got_leaves, got_def = cr.tree_flatten(got)
    want_leaves, want_def = cr.tree_flatten(want)
    assert got_def == want_def
    for a, b in zip(got_leaves, want_leaves):
        _bits(a, b)


def chain(x, steps=300):
    for _ in range(steps):
        x = np.sin(x) * x + 0.5
    return x


def test_a_long_scalar_chain_becomes_two_loops():
    g = cr.jit(cr.grad(chain))
    lowered = g.lower(0.7)
    source = lowered.source
    assert source.count("for i in range(") == 2  # the forward pass and the backward pass
    assert lowered.n_lines < 60  # (straight, the program had some 2700 lines)
    assert lowered.n_calls >= 8 * 290  # each run still makes every call
    for x in (0.7, -0.3, 1.9, 0.0):
        _bits(g(x), cr.grad(chain)(x))
    # a float program that meets an error reruns exactly, on NumPy scalars
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _bits(g(onp.inf), cr.grad(chain)(onp.inf))
    assert g.cache_info().misses == 1


def rnn_loss(params, xs, target):
    w_in, w_h, b, w_out = params
    h = np.zeros((xs.shape[1], w_h.shape[0]))
    for t in range(xs.shape[0]):  # xs[t]: a constant index that changes every iteration
        h = np.tanh(xs[t] @ w_in + h @ w_h + b)
    return np.mean((h @ w_out - target) ** 2)


def _rnn_data(seed, steps=12):
    rng = onp.random.default_rng(seed)
    params = (rng.standard_normal((3, 5)), rng.standard_normal((5, 5)) * 0.5,
              rng.standard_normal(5), rng.standard_normal((5, 1)))
    return params, rng.standard_normal((steps, 4, 3)), rng.standard_normal((4, 1))


def test_an_rnn_gradient_rolls_and_reuses_memory_inside_the_loop():
    vg = cr.jit(cr.value_and_grad(rnn_loss))
    source = vg.lower(*_rnn_data(0)).source
    assert "for i in range(" in source
    body = [line for line in source.splitlines() if line.startswith("        ")]
    assert any("out=" in line for line in body)  # in-place writes survive in the loop
    assert any(line.strip().startswith("del ") for line in body)
    for seed in (0, 1, 2):
        args = _rnn_data(seed)
        _same_tree(vg(*args), cr.value_and_grad(rnn_loss)(*args))
    assert vg.cache_info().misses == 1


def test_hessian_and_jacobian_of_a_loop(roll_everything):
    def f(x):
        for k in range(6):
            x = np.tanh(x * (1.0 + 0.1 * k)) + np.sum(x**2) * 0.01
        return x

    def scalar(x):
        return np.sum(f(x) ** 2)

    rng = onp.random.default_rng(3)
    for transform, fun in ((cr.hessian, scalar), (cr.jacobian, f), (cr.jacfwd, f)):
        jitted = cr.jit(transform(fun))
        assert "for i in range(" in jitted.lower(rng.standard_normal(4)).source
        for _ in range(3):
            x = rng.standard_normal(4)
            _bits(jitted(x), transform(fun)(x))


def test_a_value_carried_past_its_own_update_is_copied(roll_everything):
    def f(x):
        s = x * 0.5
        for _ in range(8):
            t = np.sin(x)
            x = x * s + 1.0  # s: the previous iteration's t, which this one has remade
            s = t
        return x

    g = cr.jit(cr.grad(f))
    source = g.lower(0.3).source
    assert "p0 = " in source  # the copy of the previous iteration's value
    for x in (0.3, -0.8, 1.1):
        _bits(g(x), cr.grad(f)(x))


def test_every_iterate_as_an_output_reads_the_loops_list(roll_everything):
    def f(x):
        out = []
        for _ in range(6):
            x = np.cos(x) * x
            out.append(x)
        return out

    jf = cr.jit(f)
    x = onp.linspace(-1, 1, 5)
    assert "s0[1], s0[2], s0[3]" in jf.lower(x).source  # the iterates the loop kept
    for scale in (1.0, 0.5, -2.0):
        _same_tree(jf(x * scale), f(x * scale))


def test_guards_inside_a_rolled_loop_retrace_when_the_trip_count_changes(roll_everything):
    def f(x):
        while x < 10.0:  # a guard per iteration
            x = x * 1.5 + np.sin(x)
        return x

    g = cr.jit(cr.grad(f), max_variants=20)
    for x in (0.5, 0.6, 2.0, 0.5, 9.0, 0.01):
        _bits(g(x), cr.grad(f)(x))
    info = g.cache_info()
    assert info.hits >= 1 and info.variants >= 3


def test_shapes_that_grow_in_the_loop(roll_everything):
    def f(x):
        acc = x[:1]
        for k in range(1, 5):
            acc = np.concatenate([acc, np.sin(acc[-1:]) * x[k]])
        return np.sum(acc**2)

    g = cr.jit(cr.grad(f))
    for seed in (0, 1):
        x = onp.random.default_rng(seed).standard_normal(5)
        _bits(g(x), cr.grad(f)(x))


@settings(max_examples=25, deadline=None)
@given(programs(), st.sampled_from(SHAPES), st.sampled_from(SHAPES), st.integers(0, 10**6))
def test_fuzz_programs_in_a_loop_jit_equals_eager(steps, shape_x, shape_y, seed):
    with rolling_everything():
        def f(x, y):
            total = 0.0
            for k in range(4):
                x = run(steps, x * (1.0 + 0.25 * k), y) + x
                total = total + np.sum(x)
            return total

        x, y = inputs(shape_x, shape_y, seed)
        x2, y2 = inputs(shape_x, shape_y, seed + 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for make in (lambda: cr.value_and_grad(f, argnum=(0, 1)), lambda: f):
                jf = cr.jit(make())
                for args in ((x, y), (x2, y2), (x, y)):
                    _same_tree(jf(*args), make()(*args))


LOOPED = SELECTED[::3]


@pytest.mark.parametrize("case", LOOPED, ids=[c.id for c in LOOPED])
def test_every_rule_rolled_in_a_loop_equals_eager(case, roll_everything):
    """Each spec case three times over (its arguments scaled: a constant per iteration),
    its gradient rolled into loops, against eager evaluation."""
    f = _scalar(case)
    argnum = case.argnums[0]

    def looped(*args):
        total = 0.0
        for k in range(3):
            scaled = list(args)
            scaled[argnum] = args[argnum] * (1.0 + 0.125 * k)
            total = total + f(*scaled)
        return total

    _check(lambda: cr.grad(looped, argnum), case.args)


def test_an_accumulator_is_updated_in_place_only_when_its_start_is_free(roll_everything):
    def summed(x):
        acc = np.sin(x)
        for k in range(6):
            acc = acc + np.cos(x * (k + 1.0))
        return acc

    def kept(x):
        acc = start = np.sin(x)
        for k in range(6):
            acc = acc + np.cos(x * (k + 1.0))
        return acc, start * 2.0  # the start is read after the loop: not written into

    def returned(x):
        acc = start = np.sin(x)
        for k in range(6):
            acc = acc + np.cos(x * (k + 1.0))
        return acc, start

    x = onp.linspace(-1.0, 2.0, 7)
    source = cr.jit(summed).lower(x).source
    loop = source[source.index("for i in range("):]
    assert re.search(r"(v\d+) = np\.add\(\1, v\d+, out=\1\)  # add", loop)  # acc += ...
    for f in (summed, kept, returned):
        jf = cr.jit(f)
        for scale in (1.0, -0.5, 3.0):
            x_in = x * scale
            before = x_in.copy()
            _same_tree(jf(x_in), f(x_in))
            _bits(x_in, before)  # inputs are never written


def test_values_read_from_an_earlier_loop_out_of_step_are_slices_of_its_list(folding):
    def f(x):
        a, b = x, x * 0.5
        for _ in range(200):
            a, b = b, a * np.sin(b) + 0.1
        return a + b

    g = cr.jit(cr.grad(f))
    source = g.lower(0.3).source
    # (the tuples of per-iteration operands a loop reads: t0 = (v4, *s0[26::-1], v1,))
    tuples = [line for line in source.splitlines() if re.match(r"\s*t\d+ = \(", line)]
    if folding == "folded":  # the fold's loop starts one iteration later: items in step
        assert not tuples and re.search(r"s\d+\[\d+ - i\]", source)
    else:
        assert tuples and all("*s" in line and len(line) < 80 for line in tuples)
    for x in (0.3, -0.4, 1.2):
        _bits(g(x), cr.grad(f)(x))


def _summed_tanh(w, xs):
    total = 0.0
    for x in xs:
        total = np.tanh(0.5 * total + np.sum(np.tanh(x * w)))
    return total


def _kept_broadcast(x):
    out = []
    for k in range(6):
        b = np.broadcast_to(np.sum(x * (k + 1.0)), x.shape)
        out.append(b * x)  # (a reader that broadcasts b's operand itself)
    return np.stack(out), np.concatenate([b, b])  # (the last b read as it is)


def test_a_spread_cotangent_in_a_loop_is_read_as_its_operand():
    # a sum's cotangent spread to its operand's shape (np.broadcast_to, 2 µs a call on
    # lstm's 14-vectors) is absorbed in a rolled loop where every iteration's is, and
    # kept where one iteration's is read by a call that does not broadcast it (jitd15)
    rng = onp.random.default_rng(20)
    g = cr.grad(_summed_tanh)
    jg = cr.jit(g)
    w, xs = rng.standard_normal(14), rng.standard_normal((40, 14))
    for ww, xx in [(w, xs), (-w, xs * 2.0), (w * 0.0 - 0.0, xs), (w, xs)]:
        _bits(jg(ww, xx), g(ww, xx))
    source = jg.lower(w, xs).source
    assert "for i in range(" in source and "broadcast_to(" not in source
    jk = cr.jit(_kept_broadcast)
    x = rng.standard_normal(5)
    for xx in (x, -x, onp.array([onp.nan, -0.0, 1.0, onp.inf, 2.0]), x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _same_tree(jk(xx), _kept_broadcast(xx))
    assert "broadcast_to(" in jk.lower(x).source
