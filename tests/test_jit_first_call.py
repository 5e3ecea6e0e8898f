"""What jit's first call does (issue 32): folding finds the same runs whether it tries
places one by one or finds the possible starts of the whole record at once; an emitted
program leaves no reference cycles (its record is freed by reference counting, not by the
cycle collector); a program is compiled when it first runs, and later calls call the
compiled function itself. Every jitted call answers eager evaluation's bits."""

from __future__ import annotations

import gc
import sys
import threading
import types
import warnings
import weakref

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule.jit import JitWarning
from test_jit_roll import _same_tree

emit_module = sys.modules["chainrule.jit._emit"]
jit_module = sys.modules["chainrule.jit"]
fold_module = sys.modules["chainrule.jit._fold"]


def chain(x, steps=300):
    for _ in range(steps):
        x = np.sin(x) * x + 0.5
    return x


def chain_with_straight_code(x):
    for _ in range(60):
        x = np.cos(x) * x - 0.25
    for k in range(40):  # straight code: a different constant each time
        x = x * (1.0 + k / 1000.0) + np.tanh(x) * k
    for _ in range(60):
        x = np.sin(np.sin(x)) + x * 0.5  # (a body that repeats a call)
    return x


def nested(W, x):
    for _ in range(6):
        for _ in range(8):
            x = np.tanh(W @ x) + x
        x = x / np.sum(x * x)
    return np.sum(x)


def split_loop(params, x):
    total = 0.0
    for _ in range(40):
        a, b, c, d = np.split(params, 4)
        x = np.tanh(x * a + b) * c + d
        total = total + np.sum(x)
    return total


W = onp.linspace(-0.5, 0.5, 9).reshape(3, 3)
CASES = [
    (cr.grad(chain), (0.7,)),
    (cr.grad(chain_with_straight_code), (0.3,)),
    (cr.hessian(chain_with_straight_code), (0.3,)),
    (cr.grad(nested, argnum=(0, 1)), (W, onp.array([0.5, -0.25, 2.0]))),
    (cr.grad(split_loop, argnum=(0, 1)), (onp.linspace(-1.0, 1.0, 12),
                                          onp.array([0.5, -0.25, 2.0]))),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_folding_finds_the_same_runs_one_by_one_and_all_at_once(case, monkeypatch):
    f, args = CASES[case]
    calls = []
    node_runs = emit_module.node_runs

    def spy(nodes, seqs, guarded):
        calls.append((list(nodes), list(seqs), list(guarded)))
        return node_runs(nodes, seqs, guarded)

    monkeypatch.setattr(emit_module, "node_runs", spy)
    cr.jit(f).lower(*args)
    assert calls

    def runs(tried: int, recorded) -> list:
        monkeypatch.setattr(fold_module, "_TRIED_ONE_BY_ONE", tried)
        return [(r.start, r.period, r.repeats, r.forms) for r in node_runs(*recorded)]

    found = 0
    for recorded in calls:
        all_at_once = runs(0, recorded)
        assert runs(10**9, recorded) == all_at_once  # every place tried one by one
        assert runs(3, recorded) == all_at_once  # a few, then all at once
        found += len(all_at_once)
    assert found  # (each case has loops to fold)
    monkeypatch.undo()
    _same_tree(cr.jit(f)(*args), f(*args))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_first_call_leaves_no_reference_cycles(case):
    f, args = CASES[case]
    jf = cr.jit(f)
    enabled = gc.isenabled()
    gc.disable()  # (else a collection may come in between and find what we look for)
    try:
        gc.collect()
        got = jf(*args)
        assert gc.collect() == 0  # the record, the instructions, the loops: all freed
        _same_tree(jf(*args), got)  # (the second call compiles: no cycles either)
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
    _same_tree(got, f(*args))


def _program(jf):
    (entry,) = jf._cache.values()
    (program,) = entry.variants
    return program


def test_a_program_is_compiled_when_it_first_runs():
    g = cr.jit(cr.grad(chain))
    first = g(0.7)
    program = _program(g)
    assert not isinstance(program.call, types.FunctionType)  # (not compiled yet)
    assert "for i in range(" in g.lower(0.7).source  # (its source is there)
    for x in (0.7, -0.3, 0.0, -0.0, onp.inf, onp.nan):
        _same_tree(g(x), cr.grad(chain)(x))
        # compiled by its first run: later calls call the function itself
        assert isinstance(program.call, types.FunctionType)
    _same_tree(first, cr.grad(chain)(0.7))


def test_a_wrapped_program_compiles_once_and_answers_as_eager():
    def f(x):
        with onp.errstate(over="ignore"):  # (calls made under another state: Quiet)
            y = np.exp(x * 1000.0)
        return np.sum(y * x)

    g = cr.jit(cr.grad(f))
    x = onp.array([0.5, -0.25, 2.0])
    for v in (x, -x, x * 0.0, x + 1.0):
        _same_tree(g(v), cr.grad(f)(v))
    program = _program(g)
    assert not isinstance(program.call, types.FunctionType)  # (the wrapper stays)
    assert program.call.call.fn is not None  # its lazy call compiled once


GLOBAL_RNG = onp.random.default_rng(7)


def _draws(rng):
    def f(x):
        return np.sum(np.sin(x) * rng.standard_normal(3)) + np.sum(
            np.cos(x) * GLOBAL_RNG.standard_normal(3))

    return f


@pytest.mark.parametrize("transform, batched", [
    (cr.grad, False), (cr.hessian, False), (cr.jacobian, False),
    (lambda f: cr.vmap(cr.grad(f)), True)])
def test_generators_reached_through_a_transform_are_read(transform, batched):
    # the transform's wrapper (chainrule's own: its globals are not walked) closes over
    # the user's function, which closes over one generator and names another as a global:
    # jit sees both drawn from, and runs the function eagerly (a new draw each call)
    global GLOBAL_RNG
    x = onp.array([0.5, -0.25, 2.0])
    if batched:
        x = onp.stack([x, 2 * x])
    answers = []
    for staged in (True, False):
        GLOBAL_RNG = onp.random.default_rng(7)
        f = transform(_draws(onp.random.default_rng(3)))
        if staged:
            g = cr.jit(f)
            with pytest.warns(JitWarning, match="draws random numbers"):
                calls = [g(x)]
            calls += [g(x), g(x)]
        else:
            calls = [f(x), f(x), f(x)]
        answers.append(calls)
    for got, want in zip(*answers):
        _same_tree(got, want)


def _write_then_read(a, b):
    a += 1.0
    return b * 2.0


def _set_then_sum(a, b):
    a[0] = 10.0
    return np.sum(b)


@pytest.mark.parametrize("fun, args", [
    (_write_then_read, lambda z: (z, z)), (_set_then_sum, lambda z: (z, z[:1])),
    (_set_then_sum, lambda z: (z, onp.frombuffer(z.data, dtype=z.dtype)[::-1])),
    (lambda p: _set_then_sum(p["a"], p["b"]), lambda z: ({"a": z, "b": z},))])
def test_a_call_of_arguments_that_share_memory_is_eager(fun, args):
    # the trace boxes each argument apart: a write into one was not seen through the
    # other (the first call answered from the old contents, and gave the caller's array
    # the trace's); such a call is eager evaluation's
    start = onp.array([3.0, 1.0])
    jitted = cr.jit(fun)
    for _ in range(2):
        eager_args, jit_args = args(start.copy()), args(start.copy())
        want, got = fun(*eager_args), jitted(*jit_args)
        assert repr(got) == repr(want)
        assert repr(jit_args) == repr(eager_args)


def test_a_function_reading_arguments_that_share_memory_compiles():
    def f(a, b):
        return a * b + 1.0

    jitted = cr.jit(f)
    x, y = onp.array([1.0, -0.0, 3.0]), onp.array([2.0, 5.0, -1.0])
    for args in [(x, x), (x, y), (x, x[::-1]), (y, y)]:
        got = jitted(*args)
        onp.testing.assert_array_equal(got, f(*args))
        assert not onp.shares_memory(got, x) and not onp.shares_memory(got, y)
    assert jitted.cache_info().eager == 0 and jitted.cache_info().hits >= 2  # (a reversed view
    # is a signature of its own: its strides)


def test_a_write_into_an_argument_sharing_memory_draws_as_eager():
    # the trace's answer is put aside for eager evaluation's: the generator is put back
    # first, so the call draws what eager evaluation draws, once
    def f(a, b, rng):
        a += rng.normal(size=a.shape)
        return b * 2.0

    start = onp.array([3.0, 1.0])
    eager_args, jit_args = (start.copy(),) * 2, (start.copy(),) * 2
    want = f(*eager_args, onp.random.default_rng(5))
    rng = onp.random.default_rng(5)
    with pytest.warns(JitWarning, match="shares memory"):
        got = cr.jit(f, static_argnums=2)(*jit_args, rng)
    onp.testing.assert_array_equal(got, want)
    onp.testing.assert_array_equal(jit_args[0], eager_args[0])
    after = onp.random.default_rng(5)
    after.normal(size=2)
    assert rng.bit_generator.state == after.bit_generator.state  # (drawn once)


_SCALE = onp.array([1.0, 2.0])
_LOG: list = []


def _write_argument_then_closure(a, b):
    y = b * _SCALE[0]
    a *= 0.5
    _SCALE[0] = 5.0  # (a closure array the function changes after reading it)
    _LOG.append(float(y[0]))
    return y + b


def test_the_call_made_again_eagerly_makes_its_effects_outside_once():
    # the traced call of arguments sharing memory, made again eagerly, starts from the
    # arrays and the Python state the function reaches as they were before the trace
    for call in (_write_argument_then_closure, cr.jit(_write_argument_then_closure)):
        _SCALE[:] = [1.0, 2.0]
        _LOG.clear()
        a = onp.array([1.0, 3.0])
        onp.testing.assert_array_equal(call(a, a), [1.5, 4.5])
        onp.testing.assert_array_equal(_SCALE, [5.0, 2.0])
        onp.testing.assert_array_equal(a, [0.5, 1.5])
        assert _LOG == [1.0]


def test_a_program_is_emitted_when_it_first_runs():
    # the first call answers from its trace and keeps the record; the second call emits
    # the program (and compiles it), and the record is freed then
    g = cr.jit(cr.grad(chain))
    emitted = []
    emit = emit_module.emit

    def counting_emit(*args, **kwargs):
        emitted.append(args[1])
        return emit(*args, **kwargs)

    emit_module.emit = counting_emit
    try:
        first = g(0.7)
        program = _program(g)
        assert emitted == [] and program.source == "" and program.n_calls == 0
        _same_tree(first, cr.grad(chain)(0.7))
        for x in (-0.3, 0.0, -0.0, onp.nan, 0.7):
            _same_tree(g(x), cr.grad(chain)(x))
    finally:
        emit_module.emit = emit
    assert len(emitted) == 1  # once, at the second call
    assert "for i in range(" in program.source and program.n_calls >= 300
    assert isinstance(program.call, types.FunctionType)  # (compiled at that call too)
    # the program no longer refers to the record (only ``record`` and the call here do)
    record = emitted.pop()
    references = sys.getrefcount(record)
    assert references == 2


def test_a_function_called_once_and_dropped_is_freed_without_the_cycle_collector():
    enabled = gc.isenabled()
    gc.disable()
    try:
        for f, args in CASES:
            gc.collect()
            jf = cr.jit(f)
            _same_tree(jf(*args), f(*args))
            del jf  # (its program, never run, kept the record: freed with it)
            assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


def _float_chain(x):
    return np.sin(x) * 2.0 + x  # (a float program, which calls its exact program past inf)


BIG = onp.linspace(0.0, 1.0, 5000)


@pytest.mark.parametrize("case", range(len(CASES) + 2))
def test_a_compiled_program_is_freed_with_its_function_without_the_cycle_collector(case):
    # (its function was in its own globals: the program, its constants and the functions
    # it calls stayed until the collector ran)
    f, args = (CASES + [(_float_chain, (0.5,)), (lambda x: np.sum(x) * BIG, (onp.ones(3),))]
               )[case]
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        jf = cr.jit(f)
        for xs in (args, args, args if case != len(CASES) else (onp.inf,), args):
            _same_tree(jf(*xs), f(*xs))  # (the second call compiles, the third runs it)
        program = jf._cache[next(iter(jf._cache))].variants[0]
        assert isinstance(program.call, types.FunctionType)
        compiled = weakref.ref(program.call)
        del jf, program
        assert compiled() is None and gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


CONSTANT = onp.array([1.0, -0.0, 2.5])


def test_an_array_constant_the_caller_changes_before_the_second_call():
    # the first call hands the caller the constant itself (as eager evaluation does); the
    # program, emitted later, answers it as the trace read it, as a program emitted at
    # the first call did, and a view of it stays a view of the copy
    def f(x):
        return x * 2.0, CONSTANT, CONSTANT[::-1]

    jf = cr.jit(f)
    x = onp.array([0.5, 1.5, -2.0])
    got = jf(x)
    assert got[1] is CONSTANT
    saved = CONSTANT.copy()
    try:
        CONSTANT[:] = 7.0  # (the caller writes into what it was given)
        for _ in range(2):
            out = jf(x)
            _same_tree(out, (x * 2.0, saved, saved[::-1]))
            assert out[1] is not CONSTANT and onp.shares_memory(out[1], out[2])
    finally:
        CONSTANT[:] = saved


def test_large_constants_are_warned_of_at_the_trace():
    big = onp.arange(200_000.0)  # 1.6 MB, read by a call (a copy the record keeps)

    def f(x):
        return np.sum(x * big)

    jf = cr.jit(f)
    with pytest.warns(JitWarning, match="bakes in arrays"):
        assert jf(2.0) == f(2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitWarning)  # (not again when it is emitted)
        assert jf(3.0) == f(3.0)


def test_a_long_record_kept_is_old_for_the_cycle_collector():
    # kept until the second call emits the program, a long record (some 24,000 calls
    # here) is moved to the oldest generation: the next young collection does not scan
    # it; a process that froze objects of its own keeps them frozen
    def long_chain(x):
        return chain(x, 3000)

    for frozen in (False, True):
        g = cr.jit(cr.grad(long_chain))
        gc.collect()
        if frozen:
            gc.freeze()
        count = gc.get_freeze_count()
        try:
            first = g(0.7)
            young = len(gc.get_objects(0)) + len(gc.get_objects(1))
            assert (young > 20_000) is frozen  # (the record: ~50,000 objects)
            assert gc.get_freeze_count() >= count - 100  # (what the call freed)
        finally:
            if frozen:
                gc.unfreeze()
        want = cr.grad(long_chain)(0.7)
        _same_tree(first, want)
        _same_tree(g(0.7), want)
        _same_tree(g(-0.0), cr.grad(long_chain)(-0.0))


def test_an_emit_pauses_the_cycle_collector_and_restores_it():
    # an emit makes a few objects per recorded call, which the collector's young
    # collections (and a full one, on a long record) would rescan with the whole record:
    # it is paused while the program is made, and left as the caller had it
    seen = []
    emit = emit_module.emit

    def watching_emit(*args, **kwargs):
        seen.append(gc.isenabled())
        return emit(*args, **kwargs)

    enabled = gc.isenabled()
    emit_module.emit = watching_emit
    try:
        for caller_enabled in (True, False):
            (gc.enable if caller_enabled else gc.disable)()
            g = cr.jit(cr.grad(chain))
            _same_tree(g(0.7), cr.grad(chain)(0.7))
            assert seen == []  # (the first call answers from its trace)
            _same_tree(g(-0.0), cr.grad(chain)(-0.0))
            assert seen == [False] and gc.isenabled() is caller_enabled
            seen.clear()
    finally:
        emit_module.emit = emit
        (gc.enable if enabled else gc.disable)()


def test_second_calls_in_threads_emit_once():
    # eight threads make the signature's second call at once: one of them emits the
    # program (an emit marks the record's nodes), the others wait for it
    want = cr.grad(chain)(0.7)
    for _ in range(3):
        g = cr.jit(cr.grad(chain))
        _same_tree(g(0.7), want)
        answers, errors = [], []

        def call(g=g, answers=answers, errors=errors):
            try:
                answers.append(g(0.7))
            except Exception as error:  # noqa: BLE001 (reported below)
                errors.append(error)

        threads = [threading.Thread(target=call) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and len(answers) == 8
        for got in answers:
            _same_tree(got, want)
        assert g.cache_info().variants == 1 and g.cache_info().hits == 8


@pytest.mark.parametrize("case", range(len(CASES)))
def test_lower_pauses_the_collector_and_leaves_no_cycles(case, monkeypatch):
    # lower() traces and emits as a first and second call do: with the cycle collector
    # paused (it would rescan the growing record), and resumed as it was after
    f, args = CASES[case]
    states = []
    record = jit_module.JittedFunction._record

    def spy(self, *a):
        states.append(gc.isenabled())
        return record(self, *a)

    monkeypatch.setattr(jit_module.JittedFunction, "_record", spy)
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        gc.enable()
        source = cr.jit(f).lower(*args).source
        assert states == [False] and gc.isenabled()
        gc.disable()
        assert gc.collect() == 0  # the record and its emitted program: freed
    finally:
        gc.enable() if enabled else gc.disable()
    assert "def " in source
    _same_tree(cr.jit(f)(*args), f(*args))


def test_lower_resumes_the_collector_after_an_error():
    def fails(x):
        if np.sin(x) > 0.0:
            raise ValueError("traced past the guard")
        return x

    enabled = gc.isenabled()
    gc.enable()
    try:
        with pytest.raises(ValueError, match="traced past"):
            cr.jit(fails).lower(0.5)
        assert gc.isenabled()
        gc.disable()
        with pytest.raises(ValueError, match="traced past"):
            cr.jit(fails).lower(0.5)
        assert not gc.isenabled()  # (resumed as it was: off)
    finally:
        gc.enable() if enabled else gc.disable()
    assert "def " in cr.jit(fails).lower(-0.5).source
