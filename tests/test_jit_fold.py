"""chainrule.jit folds loops found in the record (``jit/_fold.py``): three iterations of a
loop are lowered to instructions, the others read the loop's values. Where a later
iteration might not lower like the first ones the fold is refused, and every program
answers eager evaluation's bits."""

from __future__ import annotations

import contextlib
import gc
import re
import sys
import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from test_jit_roll import _same_tree

emit_module = sys.modules["chainrule.jit._emit"]


@contextlib.contextmanager
def watched():
    """Records each fold's outcome (True: made) and the number of nodes lowered."""
    seen = {"folds": [], "lowered": 0}
    fold, walk = emit_module.fold, emit_module._walk

    def spy_fold(*args):
        made = fold(*args)
        seen["folds"].append(made)
        return made

    def spy_walk(*args):
        for node in walk(*args):
            seen["lowered"] += 1
            yield node

    emit_module.fold, emit_module._walk = spy_fold, spy_walk
    try:
        yield seen
    finally:
        emit_module.fold, emit_module._walk = fold, walk


def _check(f, *inputs_list):
    """jit(f) against f, bit for bit, on each tuple of inputs."""
    jf = cr.jit(f)
    for inputs in inputs_list:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _same_tree(jf(*inputs), f(*inputs))
    return jf


def chain(x, steps=300):
    for _ in range(steps):
        x = np.sin(x) * x + 0.5
    return x


def test_a_long_chain_lowers_three_iterations_of_each_pass():
    g = cr.grad(chain)
    with watched() as seen:
        lowered = cr.jit(g).lower(0.7)
    assert seen["folds"] == [True, True]  # the forward pass and the backward pass
    # the record holds some 2,400 nodes; lowered: iterations 0-2 of each pass, the rest
    assert seen["lowered"] < 60
    assert lowered.n_calls >= 8 * 295  # each loop still makes every call
    assert lowered.source.count("for i in range(") == 2
    _check(g, (0.7,), (-0.3,), (1.9,), (0.0,), (-0.0,), (onp.inf,), (onp.nan,))


def test_values_computed_in_every_iteration_from_values_before_the_loop_are_shared():
    def f(x, c):
        for _ in range(40):
            x = x * np.cos(c) + np.sin(c)
        return x

    with watched() as seen:
        source = cr.jit(cr.grad(f, argnum=(0, 1))).lower(0.3, 0.8).source
    assert True in seen["folds"]
    in_loops = [line for line in source.splitlines() if line.startswith(" " * 12)]
    assert in_loops and not any("# cos" in line or "# sin" in line for line in in_loops)
    _check(cr.grad(f, argnum=(0, 1)), (0.3, 0.8), (-1.5, 2.0), (0.0, -0.0))


def test_a_constant_per_iteration_is_read_from_a_tuple():
    def f(x):
        for t in range(30):
            x = np.sin(x) * 0.5 + float(t)
        for t in range(30):
            x = x * 0.25 + t
        return x

    with watched() as seen:
        source = cr.jit(cr.grad(f)).lower(0.3).source
    assert seen["folds"].count(True) >= 2
    assert re.search(r"c\d+\[i\]", source)
    _check(cr.grad(f), (0.3,), (-2.0,), (1e300,))


def test_constants_that_decide_the_code_are_never_folded_one_per_iteration():
    # x * 1.0 is x (no instruction) where the layouts agree; x * 2.0 is a product
    def f(x):
        for t in range(60):
            x = np.sin(x) * (1.0 if t % 3 else 2.0)
        return x

    def signed_zeros(x):  # 0.0 and -0.0 are two constants: arctan2(+-0.0, -1) is +-pi
        for t in range(60):
            x = np.arctan2(0.0 if t % 2 else -0.0, x - 2.0)
        return x

    def axes(a):  # moveaxis's code is the permutation its axes make
        for t in range(60):
            a = np.moveaxis(np.sin(a), 0 if t < 3 else 1, 2) * 1.1
        return a

    with watched() as seen:
        cr.jit(signed_zeros).lower(-1.0)
    assert seen["folds"] == [True]  # (a constant per iteration)
    _check(f, (0.4,), (-1.2,))
    _check(cr.grad(f), (0.4,), (-1.2,))
    _check(signed_zeros, (-1.0,), (-0.0,), (2.0,), (onp.array([-1.0, 0.0, 1.0]),))
    _check(cr.grad(signed_zeros), (-1.0,), (0.5,))
    a = onp.arange(8.0).reshape(2, 2, 2) / 5
    _check(axes, (a,), (-a,))
    _check(cr.grad(lambda a: np.sum(axes(a) * onp.arange(8.0).reshape(2, 2, 2))), (a,))


def test_an_operand_per_iteration_that_coincides_early_is_not_taken_for_one_value():
    # iterations 0-2 read w in both calls (one sin: shared), the later ones x * k in one
    def f(x):
        w = x * 1.5
        ys = [w, w, w] + [x * (k + 2.0) for k in range(3, 30)]
        acc = x * 0.0
        for t in range(30):
            acc = acc + np.sin(ys[t]) * np.sin(w)
        return acc

    with watched() as seen:
        cr.jit(f).lower(0.3)
    assert False in seen["folds"] or not seen["folds"]
    _check(f, (0.3,), (-1.1,))
    _check(cr.grad(f), (0.3,), (-1.1,))


def test_loops_with_guards_growing_shapes_or_changing_keywords_are_not_folded():
    def guarded(x):
        for _ in range(30):
            x = x * 0.9 if x > 0.2 else x * 1.3 + 0.05
        return x

    def growing(x):
        for _ in range(12):
            x = np.concatenate([x, np.sin(x[-1:]) * 0.5])
        return np.sum(x * x)

    def keywords(m):
        acc = 0.0
        for t in range(12):
            acc = acc + np.sum(np.sin(m) * m, axis=t % 2)[0]
        return acc

    _check(guarded, (0.9,), (0.1,), (-0.5,))
    _check(cr.grad(guarded), (0.9,), (0.1,))
    x = onp.linspace(-1.0, 1.0, 3)
    _check(growing, (x,), (x * 2,))
    _check(cr.grad(growing), (x,), (x * 2,))
    m = onp.arange(12.0).reshape(3, 4) / 7
    _check(keywords, (m,), (-m,))
    _check(cr.grad(keywords), (m,), (-m,))


def test_many_inputs_in_a_row_are_inputs():
    def total(*xs):
        acc = 0.0
        for x in xs:
            acc = acc + np.sin(x) * x
        return acc

    args = tuple(onp.float64(v) for v in onp.linspace(-1.0, 1.0, 60))
    _check(total, args, tuple(a * 2 for a in args))
    _check(cr.grad(total, argnum=tuple(range(60))), args)


def test_nested_loops_and_arrays():
    def f(W, x):
        for _ in range(6):
            for _ in range(5):
                x = np.tanh(W @ x) + 0.1 * x
            x = x / np.sqrt(np.sum(x * x))
        return np.sum(x)

    rng = onp.random.default_rng(0)
    W, x = rng.standard_normal((4, 4)) / 2, rng.standard_normal(4)
    with watched() as seen:
        cr.jit(cr.grad(f, argnum=(0, 1))).lower(W, x)
    assert True in seen["folds"]
    _check(cr.grad(f, argnum=(0, 1)), (W, x), (-W, 2 * x))
    _check(cr.jit(cr.hessian(lambda v: f(W, v))), (x,))


@pytest.mark.parametrize("steps", [3, 4, 5, 6, 7, 50])
def test_loops_near_the_fold_threshold(steps):
    f = cr.grad(lambda x: chain(x, steps))
    _check(f, (0.7,), (-0.2,))
    _check(cr.jit(cr.hessian(lambda x: chain(x, steps))), (0.7,))


def test_fold_keys_are_equal_exactly_for_calls_of_one_form(monkeypatch):
    """A staging node's key (numbered as the trace records it) is one number for calls of
    one function with the same traced positions, number of arguments and answer type, and
    a different number where any of these differs, also after the bounded table empties."""
    staging = sys.modules["chainrule.jit._staging"]
    x = staging.StagingNode.new_root(0.5, 0)

    def node(fun, args, argnums, ans):
        return staging.StagingNode(ans, fun, list(args), {}, argnums, (x,) * len(argnums))

    f64 = onp.float64
    first = node(np.sin, [0.5], (0,), f64(0.47))
    again = node(np.sin, [0.25], (0,), f64(0.24))
    others = [
        node(np.sin, [onp.ones(2)], (0,), onp.ones(2)),  # an array answer
        node(np.cos, [0.5], (0,), f64(0.87)),  # another function
        node(np.multiply, [0.5, 2.0], (0,), f64(1.0)),  # a constant second argument
        node(np.multiply, [2.0, 0.5], (1,), f64(1.0)),  # ... or first
        node(np.multiply, [0.5, 0.5], (0, 1), f64(0.25)),  # both traced
        node(np.sum, [onp.ones(2), 0], (0,), f64(2.0)),  # two arguments
        node(np.sum, [onp.ones(2), 0, None], (0,), f64(2.0)),  # three
        node(np.sum, [onp.ones(2)], (0,), f64(2.0)),  # one
    ]
    keys = [first.key] + [o.key for o in others]
    assert again.key == first.key
    assert len(set(keys)) == len(keys)
    # the table keeps functions alive, so it is emptied when it grows: numbers are new
    # then (equal calls after it agree again), never one an earlier key had
    monkeypatch.setattr(staging, "_MAX_FUNCTIONS", 1)
    later = node(np.sin, [0.5], (0,), f64(0.47))
    assert later.key == first.key  # (found: nothing new, nothing emptied)
    fresh = node(np.tan, [0.5], (0,), f64(0.55))
    assert len(staging._key_numbers) == 1  # (emptied, then the new key)
    after = [node(np.sin, [0.5], (0,), f64(0.47)), node(np.sin, [0.5], (0,), f64(0.47))]
    assert after[0].key == after[1].key
    assert after[0].key not in keys + [fresh.key]


def _starts_by_definition(keys, candidates, stretch):
    """run_starts' answer position by position: p is a start where, for one of the next
    ``candidates`` positions q holding keys[p], keys[p + t] == keys[q + t] for every t
    below stretch(q - p), q + t inside the record."""
    n, starts = len(keys), []
    for p in range(n):
        qs = [q for q in range(p + 1, n) if keys[q] == keys[p]][:candidates]
        for q in qs:
            need = int(stretch(onp.array([q - p]))[0])
            if all(q + t < n and keys[p + t] == keys[q + t] for t in range(1, need)):
                starts.append(p)
                break
    return starts


def _walk(after, n: int, skips) -> list[int]:
    """The places a caller tries: the first start at its place or later, then on from a
    place past it (``skips``: how far past, as a run it found would take it)."""
    tried, i = [], 0
    while (i := after(i)) < n:
        tried.append(i)
        i += 1 + int(skips[len(tried) % len(skips)])
    return tried


@pytest.mark.parametrize("seed", range(4))
def test_run_starts_are_those_of_the_definition(seed):
    # loops (periods many pairs share, settled in one pass), loops with noise, and noise;
    # asked of the whole record, of a window of it, and window by window as a caller
    # walks the record (``Starts``)
    from chainrule._core.repeats import Starts, next_same, run_starts
    rng = onp.random.default_rng(seed)
    for _ in range(150):
        k = int(rng.integers(1, 6))
        body = rng.integers(0, k, int(rng.integers(1, 12)))
        keys = onp.concatenate([rng.integers(0, k, int(rng.integers(0, 10))),
                                onp.tile(body, int(rng.integers(1, 40))),
                                rng.integers(0, k, int(rng.integers(0, 20)))])
        if rng.random() < 0.3:
            keys = rng.integers(0, k, len(keys))
        keys = keys.tolist()
        candidates = int(rng.integers(1, 17))
        factor, least = int(rng.integers(0, 4)), int(rng.integers(1, 60))
        stretch = lambda period, f=factor, m=least: onp.maximum(f * period, m)  # noqa: E731
        want = _starts_by_definition(keys, candidates, stretch)
        nxt = next_same(keys)
        assert run_starts(keys, nxt, candidates, stretch) == want
        lo = int(rng.integers(0, len(keys) + 1))
        hi = int(rng.integers(lo, len(keys) + 1))
        assert run_starts(keys, nxt, candidates, stretch, lo, hi) == \
            [p for p in want if lo <= p < hi]
        skips = rng.integers(0, 30, 8) * (rng.random(8) < 0.5)
        starts = Starts(keys, nxt, candidates, stretch, width=int(rng.integers(1, 50)))
        ends = want + [len(keys)]
        by_definition = _walk(lambda i, e=ends: next((p for p in e if p >= i), e[-1]),
                              len(keys), skips)
        assert _walk(starts.after, len(keys), skips) == by_definition


def split_loop(params, x):
    total = 0.0
    for _ in range(40):
        a, b, c, d = np.split(params, 4)  # a list answer; its pieces' cotangents are too
        x = np.tanh(x * a + b) * c + d
        total = total + np.sum(x)
    return total


def test_loops_over_split_pieces_fold_forward_and_backward():
    g = cr.grad(split_loop, argnum=(0, 1))
    p, x = onp.linspace(-1.0, 1.0, 12), onp.array([0.5, -0.25, 2.0])
    with watched() as seen:
        lowered = cr.jit(g).lower(p, x)
    # the backward pass's iterations answer lists (the untaken pieces, added up) and
    # read shapes, vector spaces and small arrays made again from the constant seed
    assert seen["folds"].count(True) == 2
    assert lowered.source.count("for i in range(") == 2
    p2 = p.copy()
    p2[[0, 5]] = -0.0, onp.nan
    _check(g, (p, x), (-p, x * 0.0), (p2, -x), (p * 1e200, x))


def test_equal_constants_per_iteration_fold_and_a_different_one_ends_the_run():
    # other arrays of one value in each iteration are one constant; one whose bits differ
    # (-0.0 against 0.0) is not, and the answer keeps its sign
    scales = [onp.array([2.0, 0.0, 3.0]) for _ in range(40)]
    scales[25] = onp.array([2.0, -0.0, 3.0])

    def f(x):
        for t in range(40):
            x = np.sin(x) * scales[t] + 1.0
        return x * scales[25]  # (-0.0 where x is positive)

    with watched() as seen:
        cr.jit(f).lower(onp.ones(3))
    assert True in seen["folds"]
    _check(f, (onp.ones(3),), (-onp.ones(3),), (onp.array([0.5, -0.0, onp.inf]),))
    _check(cr.grad(lambda x: np.sum(f(x))), (onp.ones(3),), (onp.array([0.5, -0.0, 2.0]),))


def sequence_loop(seq, w):
    total = 0.0
    for t in range(seq.shape[0] - 1):
        h = np.tanh(seq[t] * w)  # seq[t] is the previous step's seq[t + 1]: one call
        total = total + np.sum(seq[t + 1] * h)
    return total


def test_a_call_that_repeats_the_previous_iterations_folds_as_a_carry():
    g = cr.grad(sequence_loop, argnum=(0, 1))
    seq, w = onp.linspace(-2.0, 2.0, 40 * 3).reshape(40, 3), onp.array([0.5, -1.0, 2.0])
    with watched() as seen:
        cr.jit(sequence_loop).lower(seq, w)
        cr.jit(g).lower(seq, w)
    assert seen["folds"][:2] == [True, True]  # the function, the gradient's forward pass
    _check(sequence_loop, (seq, w), (-seq, w * 0.0))
    _check(g, (seq, w), (seq * -0.0, -w))


def test_a_call_that_repeats_the_previous_iteration_only_at_first_is_not_folded_so():
    def f(seq, w):
        total = 0.0
        for t in range(30):  # seq[t] is the previous step's second row only for t <= 2
            h = np.tanh(seq[t] * w)
            total = total + np.sum(seq[t + 1 if t < 2 else t + 5] * h)
        return total

    seq, w = onp.linspace(-2.0, 2.0, 40 * 3).reshape(40, 3), onp.array([0.5, -1.0, 2.0])
    with watched() as seen:
        cr.jit(f).lower(seq, w)
    assert True not in seen["folds"]
    _check(f, (seq, w), (-seq, w))
    _check(cr.grad(f, argnum=(0, 1)), (seq, w))



def pieces_loop(xs):
    total = 0.0
    for x in xs:
        total = total + np.sum(np.tanh(x * 0.5) * x)
    return total


@pytest.mark.parametrize("shared", [True, False])
def test_a_run_ends_where_a_layout_changes(shared, monkeypatch):
    # the items read are of one shape for 24 iterations, another after; an answer's
    # layout is the same object for all the trace's answers of one layout while the trace
    # has few (``_staging._metas``); where it has many, equal layouts are other objects,
    # and folding compares them by value: the same runs either way
    staging = sys.modules["chainrule.jit._staging"]
    if not shared:
        monkeypatch.setattr(staging, "array_meta",
                            lambda a: staging.ArrayMeta(a.shape, a.dtype, a.strides))
    xs = [onp.linspace(-1.0, 1.0, 3) + t for t in range(24)] + \
        [onp.linspace(-1.0, 1.0, 4) - t for t in range(36)]
    g = cr.grad(pieces_loop)
    fold_module = sys.modules["chainrule.jit._fold"]
    found = []

    def node_runs(*args):
        found.extend((r.period, r.repeats) for r in fold_module.node_runs(*args))
        return []  # (the runs are what is checked here: nothing folded)

    monkeypatch.setattr(emit_module, "node_runs", node_runs)
    cr.jit(g).lower(xs)
    # forward: iterations 1-23 (the first stays straight), then the 36 of the other
    # shape; backward: the 36, then the 24
    assert found == [(5, 23), (5, 36), (7, 36), (7, 24)]
    monkeypatch.setattr(emit_module, "node_runs", fold_module.node_runs)
    _check(g, (xs,), ([x * -0.5 for x in xs],))



def _lstm(chars: int, layers: int = 2, bits: int = 4):
    """GradBench's lstm loss: its backward pass reads 43 columns of the forward loop's
    values reversed, each ending with the first iteration's value, straight code."""
    from benchmarks.gradbench import evals

    rng = onp.random.default_rng(chars)
    args = (rng.random((2 * layers, 4 * bits)), rng.random((3, bits)),
            rng.random((2 * layers, bits)), rng.integers(0, 2, (chars, bits)).astype(float))
    return cr.grad(evals.module("lstm").lstm_loss, argnum=(0, 1)), args


def _reads_behind(x):
    ys = []
    for _ in range(40):
        y = np.tanh(x)
        x = y * x + 0.5
        ys.append(y)
    total = x
    for t in range(40):  # (iteration t reads ys[t - 1]: the first item, ys[0], is straight)
        total = np.sin(total) * ys[max(t - 1, 0)]
    return np.sum(total)


STRIDE_CASES = [_lstm(12), _lstm(40, layers=1), _lstm(24, layers=3, bits=2),
                (_reads_behind, (onp.array([0.3, -0.7, 1.2]),)),
                (cr.grad(_reads_behind), (onp.array([0.3, -0.7, 1.2]),))]


@pytest.mark.parametrize("case", range(len(STRIDE_CASES)))
def test_a_column_with_straight_ends_is_a_stride_written_as_its_items_are(case,
                                                                          monkeypatch):
    # A loop that reads another's kept values, but for a first or last item of straight
    # code (a backward pass reads its forward values reversed, ending with the first
    # iteration's): a Stride with a head or tail, no instruction per item; the program is
    # the text the items one by one make, and answers eager evaluation's bits.
    fold_module = sys.modules["chainrule.jit._fold"]
    f, args = STRIDE_CASES[case]
    made = []
    stride = fold_module.Folded.stride

    def spy(self, column):
        found = stride(self, column)
        made.append(found is not None and found.count > 0)
        return found

    monkeypatch.setattr(fold_module.Folded, "stride", spy)
    source = cr.jit(f).lower(*args).source
    assert any(made)
    monkeypatch.setattr(fold_module.Folded, "stride", fold_module.Folded._stride)
    assert cr.jit(f).lower(*args).source == source  # (items one by one)
    monkeypatch.undo()
    jf = cr.jit(f)
    for x in (args, tuple(a * -1.5 for a in args), tuple(a * 0.0 for a in args)):
        want = f(*x)
        _same_tree(jf(*x), want)
        _same_tree(jf(*x), want)  # (the second call runs the emitted program)
    enabled = gc.isenabled()
    gc.disable()
    try:
        jf = cr.jit(f)
        gc.collect()  # (the jitted function dropped above: its program's function and
        # namespace refer to each other, a cycle of _emit's compile, left to the collector)
        jf(*args)
        jf(*args)  # (emitted: the strides' heads and tails are freed with the loops)
        assert gc.collect() == 0
    finally:
        gc.enable() if enabled else gc.disable()
