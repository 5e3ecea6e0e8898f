"""vmap's choice between a batched run and the loop: values are the loop's either way.

Which path ran is observed by counting the calls of the mapped function (a batched run
calls it once for the whole batch; the loop once per example), never by timing.
``batched_runs_first`` (the contract's switch) makes every call start batched.
"""

import collections

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule._transforms.vmap import batched_runs_first


def _counted(fun):
    calls = collections.deque()  # (state vmap does not watch: a list would make it loop)

    def counted(*args):
        calls.append(1)
        return fun(*args)

    return counted, calls


def _loop(fun, xs, s):
    return onp.stack([fun(x.copy(), s) for x in xs])


def _cheap(x, s):
    return np.sin(x) * s + np.sum(x)


@pytest.mark.parametrize("size", [1, 2, 3])
def test_a_small_batch_of_a_cheap_function_runs_as_the_loop(size):
    xs = onp.random.default_rng(size).normal(size=(size, 4))
    counted, calls = _counted(_cheap)
    mapped = cr.vmap(counted, in_axes=(0, None))
    for call in range(1, 9):
        calls.clear()
        onp.testing.assert_array_equal(mapped(xs, 0.5), _loop(_cheap, xs, 0.5))
        if call == 1 or size < 3:  # (never a batched run: the loop at once)
            assert len(calls) == size
        elif call == 2:  # a trial: example 0 alone, then one batched run of the rest (if in
            assert len(calls) in (size, 2, size + 1)  # time; stopped: the rest one by one)
        else:  # (batched where the trial's run cost less than the loop, else the loop)
            assert len(calls) in (size, 1, 2, size + 1)


def test_a_small_batch_that_batches_well_runs_batched_after_a_trial(monkeypatch):
    from chainrule._transforms import vmap as vmap_module

    # (no deadline: the trial's run ends whatever the machine's load)
    monkeypatch.setattr(vmap_module._Call, "_deadline", lambda self, left: None)
    xs = onp.random.default_rng(4).normal(size=(4, 3))
    counted, calls = _counted(_cheap)
    mapped = cr.vmap(counted, in_axes=(0, None))
    mapped(xs, 0.5)
    calls.clear()
    mapped(xs, 0.5)  # the trial: example 0 alone, then the others in one batched run
    assert len(calls) == 2
    memory = _memory_of(mapped)
    assert len(memory.run_costs) == 1  # the trial's run, kept
    memory.run_costs[next(iter(memory.run_costs))] = 1.0  # (as a run that cost one example)
    memory.loop_calls = 0  # (the trial's call, with example 0 alone, may back off once)
    calls.clear()
    onp.testing.assert_array_equal(mapped(xs, 0.5), _loop(_cheap, xs, 0.5))
    assert len(calls) == 1  # batched (its run's cost kept again: for this cheap function,
    # several examples' time, after which the loop answers again)


@pytest.mark.parametrize("size", [1, 2, 5])
def test_batched_runs_first_runs_the_batch_once(size):
    xs = onp.random.default_rng(size).normal(size=(size, 4))
    counted, calls = _counted(_cheap)
    with batched_runs_first():
        got = cr.vmap(counted, in_axes=(0, None))(xs, 0.5)
    assert len(calls) == 1
    onp.testing.assert_allclose(got, _loop(_cheap, xs, 0.5), rtol=1e-15, atol=0)


def test_batched_runs_first_still_splits_on_a_decision():
    def decide(x, s):
        return np.sin(x) if np.sum(x) > 0 else np.cos(x) * s

    xs = onp.array([[1.0, 2.0], [-1.0, -2.0], [3.0, 0.5]])
    with batched_runs_first():
        got = cr.vmap(decide, in_axes=(0, None))(xs, 2.0)
    onp.testing.assert_array_equal(got, _loop(decide, xs, 2.0))


def test_a_large_batch_runs_batched(monkeypatch):
    from chainrule._transforms import vmap as vmap_module

    # (no deadline: on a loaded machine a pause may stop a run, and the call back off)
    monkeypatch.setattr(vmap_module._Call, "_deadline", lambda self, left: None)
    xs = onp.random.default_rng(0).normal(size=(512, 64))
    counted, calls = _counted(_cheap)
    mapped = cr.vmap(counted, in_axes=(0, None))
    mapped(xs, 0.5)  # (the first call runs examples 0 and 1 alone, then the rest batched)
    assert len(calls) == 3
    calls.clear()
    memory = _memory_of(mapped)
    memory.loop_calls = 0  # (had the first call cost more than the loop, it backed off)
    onp.testing.assert_allclose(mapped(xs, 0.5), _loop(_cheap, xs, 0.5), rtol=1e-13)
    assert len(calls) == 1


def _memory_of(mapped):
    """What a mapped function keeps from call to call (its ``_Memory``)."""
    from chainrule._transforms import vmap as vmap_module

    call = mapped._vmap_as_the_loop[1].call
    return next(cell.cell_contents for cell in call.__closure__
                if type(cell.cell_contents) is vmap_module._Memory)


def _view_then_write(x, s):
    v = x * 1.0
    tail = v[1:]  # a view of v, taken before v is written
    v -= x * s
    return np.sum(tail[:1] * v)


@pytest.mark.parametrize("jitted", [False, True])
def test_a_view_taken_before_an_in_place_write_sees_it_batched(jitted):
    # jit(vmap(f)) batched wrote v -= ... as a new value and left `tail` reading the old
    # one (the contract's case 2229 of seed 0, found once calls ran batched first)
    xs = onp.array([[1.0, 2.0, 3.0], [4.0, -5.0, 6.0]])
    want = _loop(_view_then_write, xs, 0.25)
    mapped = cr.vmap(_view_then_write, in_axes=(0, None))
    with batched_runs_first():
        got = (cr.jit(mapped) if jitted else mapped)(xs, 0.25)
    onp.testing.assert_allclose(got, want, rtol=1e-15)
    # (hand-derived: tail[0] after the write is x1 * (1 - s))
    onp.testing.assert_allclose(want, [(x[1] * 0.75) * (x * 0.75).sum() for x in xs])


def test_a_function_mapped_anew_each_call_draws_as_the_loop():
    # vmap(f)(xs) in a loop maps f anew each time: what f reaches (its generator) is
    # found again from the kept search, and a rebound generator is seen
    import numpy.random as npr

    state = {"rng": npr.default_rng(3)}

    def noisy(x, s):
        return np.sin(x) + s * state["rng"].normal(size=x.shape)

    xs = onp.random.default_rng(1).normal(size=(8, 3))
    for seed in (5, 5, 9):
        state["rng"] = npr.default_rng(seed)
        got = cr.vmap(noisy, in_axes=(0, None))(xs, 0.5)
        state["rng"] = npr.default_rng(seed)
        onp.testing.assert_array_equal(got, _loop(noisy, xs, 0.5))


def test_the_kept_search_does_not_keep_the_function_alive():
    import gc
    import weakref

    from chainrule._user_code import reach

    def make():
        weights = onp.ones(4)

        def f(x, scale=weights):
            return x * scale

        return f

    f = make()
    assert reach.reached_from(f) is reach.reached_from(f)  # (kept while its reads hold)
    assert [a.shape for a in reach.reached_from(f).arrays] == [(4,)]
    alive = weakref.ref(f)
    del f
    gc.collect()
    assert alive() is None


def test_a_mapped_function_is_freed_without_the_garbage_collector():
    # it held itself (to tell a functools.wraps copy from itself): every mapped function
    # made per call was a cycle, and the collector's passes made a nested vmap made per
    # call cost twice its loop
    import gc
    import weakref

    def f(x):
        return x * 2.0

    gc.disable()
    try:
        mapped = cr.vmap(cr.vmap(f))
        onp.testing.assert_array_equal(mapped(onp.ones((2, 3, 4))), 2.0 * onp.ones((2, 3, 4)))
        alive = weakref.ref(mapped)
        del mapped
        assert alive() is None
    finally:
        gc.enable()


def test_one_example_is_its_own_copy_and_stacks_as_the_loop():
    # one example is cut from the batch alone (not the batch copied); its answer stacked
    # alone: the loop's values, dtype and layout, and the caller's array unchanged
    xs = onp.asfortranarray(onp.arange(6.0).reshape(1, 2, 3))

    def f(x):
        x += 1.0  # (writes into its example)
        return x.T

    before = xs.copy()
    for axis in (0, 2):
        out = cr.vmap(f, in_axes=axis)(xs if axis == 0 else onp.moveaxis(xs, 0, 2))
        onp.testing.assert_array_equal(out, onp.stack([f(x.copy()) for x in before]))
        assert out.flags.c_contiguous and out.dtype == before.dtype
    onp.testing.assert_array_equal(xs, before)


@pytest.mark.parametrize("fresh", [False, True])
def test_a_loop_of_loops_draws_and_answers_as_the_loop_of_loops(fresh):
    # the rows of a loop of loops share one reading of their arguments and the NumPy
    # scalars of a vector mapped in every row; what the mapped function reaches is searched
    # from the function it maps (a nested vmap made anew per call included)
    state = {}

    def decide(x, y):
        noise = state["rng"].normal()
        return x * y + noise if x > y else x - y - noise

    def both():
        return cr.vmap(cr.vmap(decide, in_axes=(None, 0)), in_axes=(0, None))

    r = onp.random.default_rng(1)
    a, b = r.normal(size=12), r.normal(size=9)
    kept = both()
    for seed in range(4):  # (calls run as the loop, and later ones batched or split)
        state["rng"] = onp.random.default_rng(seed)
        want = onp.array([[decide(x, y) for y in b] for x in a])
        state["rng"] = onp.random.default_rng(seed)
        got = (both() if fresh else kept)(a, b)
        onp.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_the_rows_of_a_loop_of_loops_read_alike_only_where_they_are():
    from chainrule._transforms import vmap as vmap_module

    def f(x, s):
        return x * s

    as_the_loop = vmap_module._example_function(cr.vmap(f, in_axes=(0, None)))
    call = as_the_loop.call((onp.ones((3, 2)), 2.0), {})
    twin = call.twin((onp.zeros((3, 2)), 5.0))
    assert twin is not None and twin.size == 3 and twin.leaves[1] == 5.0
    for other in [(onp.ones((4, 2)), 2.0), (onp.ones((3, 2), dtype=onp.float32), 2.0),
                  (onp.ones((3, 2)), onp.float64(2.0)), (onp.ones((3, 2)),)]:
        assert call.twin(other) is None  # (its own reading: another batch, dtype or tree)


def test_examples_run_alone_out_of_order_answer_in_the_loops_order():
    # a batch that splits into many groups: examples measured alone from the largest group
    # first, the rest one by one: their answers (dicts, in the function's key order, of an
    # array and a Python int) are put back in the loop's order and stacked once
    def f(x):
        k = int(abs(float(x[0])) * 7) % 5
        for _ in range(k):
            x = np.sin(x)
        return {"z": x * k, "a": k}

    xs = onp.random.default_rng(3).normal(size=(64, 4))
    mapped = cr.vmap(f)
    for _ in range(3):
        got = mapped(xs)
        want = [f(x.copy()) for x in xs]
        assert list(got) == ["z", "a"]
        onp.testing.assert_array_equal(got["z"], onp.stack([w["z"] for w in want]))
        onp.testing.assert_array_equal(got["a"], onp.array([w["a"] for w in want]))


def test_an_empty_inner_batch_run_as_the_loop_draws_nothing():
    # the inner vmap of an outer batch run as the loop answered an empty batch from a
    # stand-in example that drew from the function's generator (the loop draws nothing)
    rng = onp.random.default_rng(0)

    def noisy(x, s):
        return x * s + rng.normal()

    before = rng.bit_generator.state
    inner = cr.vmap(noisy, in_axes=(0, None))
    out = cr.vmap(inner, in_axes=(None, 0))(onp.zeros((0, 3)), onp.array([1.0, 2.0]))
    assert out.shape == (2, 0, 3)
    assert rng.bit_generator.state == before


def test_a_list_the_function_keeps_and_answers_again_is_the_loops_after_a_split():
    # groups of a split run batched each read the kept list as their run ended; the loop
    # stacks it after its last example: the call restarts as the loop
    kept = [1.0, 2.0]

    def f(x, s):
        kept[0] = float(np.sum(x))  # (a Python float of each example: the batch splits)
        return kept

    xs = onp.arange(12.0).reshape(4, 3)
    answers = [f(x, 0.0) for x in xs]
    want = [onp.stack([a[i] for a in answers]) for i in range(2)]
    kept[:] = [1.0, 2.0]
    with batched_runs_first():
        got = cr.vmap(f, in_axes=(0, None))(xs, 0.0)
    assert type(got) is list
    for g, w in zip(got, want):
        onp.testing.assert_array_equal(g, w)
    onp.testing.assert_array_equal(want[0], [30.0] * 4)


@pytest.mark.parametrize("out_axes", [-1, 1])
def test_a_small_batch_run_as_the_loop_moves_the_batch_axis_of_every_output(out_axes):
    def f(x, s):
        y = np.sin(x) * s
        return [np.outer(x, x), (y, y), {"b": x * 2.0, "a": np.stack([x, y])}]

    xs = onp.random.default_rng(5).normal(size=(3, 4))
    got = cr.vmap(f, in_axes=(0, None), out_axes=out_axes)(xs, 0.5)
    loop = [f(x, 0.5) for x in xs]
    want = [onp.stack([a[0] for a in loop]), onp.stack([a[1][0] for a in loop]),
            onp.stack([a[2]["b"] for a in loop]), onp.stack([a[2]["a"] for a in loop])]
    leaves = [got[0], got[1][0], got[2]["b"], got[2]["a"]]
    for g, w in zip(leaves, want):
        onp.testing.assert_array_equal(g, onp.moveaxis(w, 0, out_axes))
    assert list(got[2]) == ["b", "a"]  # (the function's key order)
    assert not onp.shares_memory(got[1][0], got[1][1])  # (one answer twice: two stacks)


def test_a_split_batch_of_a_function_that_draws_goes_on_as_the_loop(monkeypatch):
    # after a split, a group's run or an example's out of order that draws would restart
    # the call as the loop: where the function reaches a generator, the loop goes on at
    # once (the call made 13 calls of the function here, 11 now: example 0, the batched
    # run that split, the 9 others in order)
    from chainrule._transforms import vmap as vmap_module

    monkeypatch.setattr(vmap_module._Call, "_deadline", lambda self, left: None)
    rng = onp.random.default_rng(0)

    def noisy(x, s):
        y = np.sin(x) if x[0] > 0 else np.cos(x)  # (decides before it draws)
        return y + s * rng.normal(size=x.shape)

    counted, calls = _counted(noisy)
    xs = onp.random.default_rng(1).normal(size=(10, 3))
    xs[:, 0] = [1.0, -1.0] * 5
    rng = onp.random.default_rng(0)
    want = _loop(noisy, xs, 0.5)
    rng = onp.random.default_rng(0)
    got = cr.vmap(counted, in_axes=(0, None))(xs, 0.5)
    onp.testing.assert_array_equal(got, want)
    assert len(calls) == 11


def test_a_ufunc_with_where_into_a_batched_out_keeps_outs_other_entries():
    # (the long run's cases 6,377 and more: the batched ufunc computed with where= but no
    # out, whose other entries NumPy leaves unwritten, and wrote all of it into out)
    def f(x, s):
        o = np.full(3, s)
        np.sin(x, out=o, where=x > 0.1)
        return o

    xs = onp.array([[-0.02, 0.12, 0.24], [0.5, -0.3, 0.2]], onp.float32)
    s = onp.array([0.25, -1.5])
    want = onp.stack([f(x.copy(), si) for x, si in zip(xs, s)])
    with batched_runs_first():
        got = cr.vmap(f, in_axes=(0, 0))(xs, s)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def _loop_of_loops(f, xs, outer_axis, inner_axis):
    rows = [onp.take(xs, j, axis=outer_axis) for j in range(xs.shape[outer_axis])]
    return onp.stack([onp.stack([f(onp.take(row, i, axis=inner_axis).copy())
                                 for i in range(row.shape[inner_axis])]) for row in rows])


@pytest.mark.parametrize("shape", [(1, 2, 4), (2, 3, 4), (3, 1, 2)])
@pytest.mark.parametrize("answer", ["scalar", "array", "view", "dtype by row"])
def test_a_loop_of_loops_is_stacked_once_as_the_loop_of_loops_stacks_it(shape, answer):
    # the rows' answers go into one stack as each row ends (scalars of one type, or arrays
    # of one shape and dtype): the loop of loops' values, dtype and shape, in fresh memory
    def f(x):
        if answer == "scalar":
            return np.sum(x) if x[0] > 0 else np.prod(x)
        if answer == "array":
            return np.sin(x) if x[0] > 0 else x * 2.0
        if answer == "view":
            return (x * 3.0)[::-1]
        return x.astype(onp.float32) if x[-1] > 0 else x  # (float64 rows promote)

    xs = onp.random.default_rng(len(shape) + shape[0]).normal(size=shape)
    for outer_axis, inner_axis in [(0, 0), (1, 0), (0, 1)]:
        mapped = cr.vmap(cr.vmap(f, in_axes=inner_axis), in_axes=outer_axis)
        want = _loop_of_loops(f, xs, outer_axis, inner_axis)
        for _ in range(2):
            got = mapped(xs)
            assert got.shape == want.shape and got.dtype == want.dtype
            onp.testing.assert_array_equal(got, want)
            assert not onp.shares_memory(got, xs)


def test_a_loop_of_loops_answering_a_buffer_it_writes_stacks_each_row_as_it_ends():
    buffer = onp.zeros(3)

    def f(x):
        buffer[:] = x  # (each call writes the buffer it answers)
        return buffer

    xs = onp.random.default_rng(2).normal(size=(2, 3, 3))
    want = onp.stack([onp.stack([f(x) for x in row]) for row in xs])  # (rows of last values)
    got = cr.vmap(cr.vmap(f))(xs)
    onp.testing.assert_array_equal(got, want)
    assert not onp.shares_memory(got, buffer)
    onp.testing.assert_array_equal(want[:, 0], xs[:, -1])


def test_a_loop_of_three_loops_whose_rows_answer_scalars_and_arrays():
    # one outer row's inner rows answer scalars (stacked at once), another's arrays: the
    # loop of loops' error (no common shape), not one row left out of a stack
    def g(x):
        return np.sum(x) if x[0] > 0 else x * 1.0

    xs = onp.ones((2, 2, 2, 3))
    xs[1, :, :, 0] = -1.0
    with pytest.raises(ValueError):
        onp.stack([onp.stack([onp.stack([g(xs[i, j, k]) for k in range(2)])
                              for j in range(2)]) for i in range(2)])
    with pytest.raises(ValueError):
        cr.vmap(cr.vmap(cr.vmap(g)))(xs)
    xs[1] = 1.0  # (now every example answers a scalar)
    want = onp.array([[[g(xs[i, j, k]) for k in range(2)] for j in range(2)]
                      for i in range(2)])
    onp.testing.assert_array_equal(cr.vmap(cr.vmap(cr.vmap(g)))(xs), want)


@pytest.mark.parametrize("values", [(onp.float32(1.5), onp.float64(2.25), 1),
                                    (True, 2, 3.0), (1 + 2j, onp.float32(1.0)),
                                    (onp.bool_(True), False)])
def test_scalars_of_other_types_by_example_stack_as_numpy_stacks_them(values):
    def f(i):
        return values[int(i)]

    examples = onp.arange(len(values))
    want = onp.stack([f(i) for i in examples])
    got = cr.vmap(f)(examples)
    assert got.dtype == want.dtype
    onp.testing.assert_array_equal(got, want)
