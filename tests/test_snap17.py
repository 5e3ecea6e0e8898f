"""A gradient's large constant arrays: kept by reference, read-only while grad runs.

A recorded call must not see a constant array change after it used it (a buffer refilled in
a loop, ``e[:] = 0; e[i] = 1``): small constants are copied. Where the function reaches an
array of at least ``numpy_vspaces.SNAPSHOT_COPY_MAX`` bytes, grad makes every array it
reaches read-only for the call and keeps the large ones themselves; a function that writes
into one is run again, copying, from the Python state and random generators it started
with. A function's first gradient copies (it finds whether the function meets large
arrays at all: a gradient of small arrays pays no search), its next ones hold. Values are
checked against hand-derived derivatives; every flag is checked afterwards. (The threshold
is lowered to the test arrays' size, but in one test.)
"""

from __future__ import annotations

import gc
import itertools
import threading
import time
import tracemalloc

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import (
    elementwise_grad,
    grad,
    grad_and_aux,
    hessian,
    jacobian,
    jit,
    make_vjp,
    value_and_grad,
)
from chainrule._user_code import reach
from chainrule.numpy import numpy_vspaces

_VIEW = None  # (a global view, set by a test)
N = 64  # elements of the test buffers (the threshold is lowered to their size below)
DEFAULT_THRESHOLD = numpy_vspaces.SNAPSHOT_COPY_MAX


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch):
    monkeypatch.setattr(numpy_vspaces, "SNAPSHOT_COPY_MAX", 8 * N)
    monkeypatch.setattr(reach, "_LARGE_CODES", {})  # (each test's functions met anew)


def basis_loss(e):
    """sum_i (i + 1) x_i^2 written with one buffer refilled as each basis vector."""

    def f(x):
        terms = []
        for i, weight in enumerate((1.0, 2.0, 3.0)):
            e.fill(0.0)  # (the buffer is written after its last use)
            e[i] = 1.0
            terms.append(weight * np.dot(x, e) ** 2)
        return terms[0] + terms[1] + terms[2]

    return f


def basis_case():
    """A buffer, basis_loss of it, a point and the gradient there."""
    e = onp.zeros(N)
    x = onp.linspace(1.0, 2.0, N)
    weights = onp.zeros(N)
    weights[:3] = [1.0, 2.0, 3.0]
    return e, basis_loss(e), x, 2 * x * weights


def flags(*arrays):
    return [a.flags.writeable for a in arrays]


# ------------------------------------------------------------------- writes after the use
def test_a_buffer_refilled_in_a_loop():
    e, f, x, expected = basis_case()
    for _ in range(2):  # (twice: a second call of the same function)
        assert onp.array_equal(grad(f)(x), expected)
        assert flags(e) == [True]
        assert onp.array_equal(e[:4], [0.0, 0.0, 1.0, 0.0])  # the last fill, the user's
    assert onp.array_equal(hessian(f)(x), onp.diag(expected / x))
    assert flags(e) == [True]


def written_after_use(c, target):
    """f(x) = sum(x * c) + sum(x * c'), c' being c with c[0] = 5 written through target."""

    def f(x):
        y = x * c
        target()[0] = 5.0
        return np.sum(y + x * c)

    return f


def expected_after_write(c0):
    c1 = c0.copy()
    c1[0] = 5.0
    return c0 + c1


@pytest.mark.parametrize("through", ["array", "closure", "global", "attribute", "argument",
                                     "local", "base"])
def test_a_constant_written_after_its_use(through):
    global _VIEW
    c0 = onp.linspace(1.0, 2.0, N)
    c = c0.copy()
    view = c[:]  # a writeable view made before the call
    holder = type("Holder", (), {})()
    holder.view = view
    _VIEW = view
    x = onp.linspace(-1.0, 1.0, N)
    calls = []  # (Python state the function reaches: as it was before the run again)
    runs = itertools.count()  # (state the search does not know: counts both runs)

    if through == "argument":
        def f(x, v):
            calls.append(next(runs))
            y = x * c
            v[0] = 5.0
            return np.sum(y + x * c)
        gradient = lambda: grad(f)(x, view)  # noqa: E731
    elif through == "local":
        def f(x):
            calls.append(next(runs))
            v = c[:]  # made inside the call, before the use
            y = x * c
            v[0] = 5.0
            return np.sum(y + x * c)
        gradient = lambda: grad(f)(x)  # noqa: E731
    else:
        target = {"array": lambda: c, "closure": lambda: view, "global": lambda: _VIEW,
                  "attribute": lambda: holder.view, "base": lambda: view.base}[through]
        g = written_after_use(view if through == "base" else c, target)

        def f(x):
            calls.append(next(runs))
            return g(x)
        gradient = lambda: grad(f)(x)  # noqa: E731
    for _ in range(3):
        c[:] = c0
        assert onp.array_equal(gradient(), expected_after_write(c0))
        assert c[0] == 5.0 and flags(c, view) == [True, True]
    # the first call copies; the second holds c, whose write is refused: the list as it
    # was, the function runs again copying; the third copies (a function found writing)
    assert calls == [0, 2, 3] and next(runs) == 4
    _VIEW = None


def test_a_constant_only_read_is_read_only_during_the_call_and_not_copied(monkeypatch):
    monkeypatch.setattr(numpy_vspaces, "SNAPSHOT_COPY_MAX", DEFAULT_THRESHOLD)
    X = onp.random.default_rng(0).standard_normal((2000, 300))  # 4.8 MB, over the threshold
    assert X.nbytes >= DEFAULT_THRESHOLD
    row = X[0]  # a view made before the call
    seen = []

    def loss(w):
        out = np.sum(np.tanh(X @ w))
        seen.append(flags(X, row))
        return out

    w = onp.linspace(-0.1, 0.1, 300)
    w0 = w.copy()
    expected = X.T @ (1 - onp.tanh(X @ w) ** 2)
    assert onp.allclose(value_and_grad(loss)(w)[1], expected, rtol=1e-12, atol=1e-12)
    gc.collect()
    tracemalloc.start()
    try:
        value, g = value_and_grad(loss)(w)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert onp.allclose(g, expected, rtol=1e-12, atol=1e-12)
    assert seen == [[True, True], [False, False]]  # (copied, then read-only while grad ran)
    assert flags(X, row) == [True, True] and onp.array_equal(w, w0)
    assert peak < X.nbytes  # (a copy of X would count X.nbytes)


# ------------------------------------------------------------------- windows and flags
def test_nested_gradients():
    c = onp.linspace(0.5, 1.5, N)
    x = onp.linspace(-1.0, 1.0, N)
    seen = []

    def f(x):
        out = np.sum(np.sin(x) * c)
        seen.append(flags(c))
        return out

    for _ in range(2):
        h = hessian(f)(x)  # (jacobian of grad: the inner gradient holds c from its second)
        assert onp.allclose(h, onp.diag(-onp.sin(x) * c), rtol=1e-13, atol=1e-15)
        assert flags(c) == [True]
    assert seen == [[True], [False]]
    # grad of grad: the inner gradient keeps the outer window's arrays, read-only until
    # the outer call ends
    seen.clear()
    inner = grad(f)
    outer = grad(lambda x: np.sum(inner(x) * c))
    for _ in range(2):
        assert onp.allclose(outer(x), -onp.sin(x) * c * c, rtol=1e-13)
        assert flags(c) == [True]
    assert seen == [[False], [False]]  # (the outer's first call copies, f's gradient holds
    #                                    c in a window of its own; then in the outer's)


class Interrupt(BaseException):
    pass


@pytest.mark.parametrize("error", [ValueError("mine"), TypeError("mine"), Interrupt()])
def test_flags_restored_when_the_function_raises(error):
    c = onp.linspace(0.5, 1.5, N)
    view = c[1:]
    seen = []

    def f(x):
        y = np.sum(x * c)
        seen.append(flags(c, view))
        if len(seen) > 1:
            raise error
        return y

    assert onp.array_equal(grad(f)(onp.ones(N)), c)
    with pytest.raises(type(error)):
        grad(f)(onp.ones(N))
    assert seen == [[True, True], [False, False]]  # (raised once: not a write into c)
    assert flags(c, view) == [True, True]


def test_an_array_already_read_only_stays_read_only():
    c = onp.linspace(0.5, 1.5, N)
    c.flags.writeable = False
    x = onp.ones(N)
    assert onp.array_equal(grad(lambda x: np.sum(x * c))(x), c)
    assert flags(c) == [False]


def test_a_writeable_view_of_a_read_only_base_is_copied_and_stays_writeable():
    base = onp.linspace(0.5, 1.5, N + 1).copy()  # (linspace's answer is a view)
    c = base[1:]
    base.flags.writeable = False  # (NumPy could not make c writeable again: it is copied)
    seen = []

    def f(x):
        y = x * c
        seen.append(flags(c))
        c[0] = 7.0
        return np.sum(y)

    assert onp.array_equal(grad(f)(onp.ones(N)), onp.linspace(0.5, 1.5, N + 1)[1:])
    assert seen == [[True]] and flags(base, c) == [False, True]


def test_a_memmap(tmp_path):
    m = onp.memmap(tmp_path / "c.dat", dtype=onp.float64, mode="w+", shape=(N,))
    m[:] = onp.linspace(1.0, 2.0, N)
    c0 = onp.array(m)

    def f(x):
        y = np.sum(x * m)
        m[:] = 100.0
        return y

    for _ in range(2):
        m[:] = c0
        assert onp.array_equal(grad(f)(onp.ones(N)), c0)  # (was 100: the memmap's last)
        assert flags(m) == [True] and onp.all(m == 100.0)


def test_the_same_array_passed_twice():
    c0 = onp.linspace(1.0, 2.0, N)
    c = c0.copy()

    def f(x, a, b):
        y = x * a
        b[0] = 5.0
        return np.sum(y + x * a)

    for _ in range(3):
        c[:] = c0
        assert onp.array_equal(grad(f)(onp.ones(N), c, c), expected_after_write(c0))
        assert flags(c) == [True]
    c[:] = c0
    seen = []

    def g(x, a):  # (the differentiated argument passed again as a constant)
        seen.append(flags(c))
        return np.sum(x * a)

    for _ in range(2):
        assert onp.array_equal(grad(g)(c, c), c0)
        assert flags(c) == [True] and onp.array_equal(c, c0)
    assert seen == [[True], [False]]


def test_other_transforms_keep_copying():
    c = onp.linspace(1.0, 2.0, N)
    seen = []

    def f(x):
        y = x * c
        seen.append(flags(c))
        return np.sum(y)

    for _ in range(2):
        assert onp.array_equal(grad(f)(onp.ones(N)), c)
    assert seen == [[True], [False]]  # (grad holds c from f's second gradient on)
    vjp, _ = make_vjp(f)(onp.ones(N))  # (an open window: the user runs code before vjp)
    c[0] = 9.0
    assert onp.array_equal(vjp(1.0), onp.linspace(1.0, 2.0, N))
    assert onp.array_equal(jacobian(f)(onp.ones(N)), c)
    assert seen == [[True], [False], [True], [True]]


def test_under_jit():
    e, f, x, expected = basis_case()
    jitted = jit(grad(f))
    for _ in range(3):
        assert onp.array_equal(jitted(x), expected)
        assert flags(e) == [True]


def test_threshold_respected():
    c = onp.linspace(1.0, 2.0, N - 1)  # one element under the threshold: copied
    seen = []

    def f(x):
        y = np.sum(x * c)
        seen.append(flags(c))
        return y

    for _ in range(2):
        assert onp.array_equal(grad(f)(onp.ones(N - 1)), c)
    assert seen == [[True], [True]]


def test_an_array_held_by_two_threads_is_writeable_when_both_end():
    c0 = onp.linspace(1.0, 2.0, N)
    c = c0.copy()
    b_used, a_done = threading.Event(), threading.Event()
    answers = {}
    armed = []

    def fa(x):
        y = np.sum(x * c)
        assert not armed or b_used.wait(10)
        return y

    def fb(x):
        y = x * c
        if armed:
            b_used.set()
            assert a_done.wait(10)  # (a's window has closed: c is still b's)
            c[0] = 5.0
        return np.sum(y + x * c)

    assert onp.array_equal(grad(fa)(onp.ones(N)), c0)  # (first gradients: copied)
    assert onp.array_equal(grad(fb)(onp.ones(N)), 2 * c0)
    armed.append(True)

    def run_a():
        answers["a"] = grad(fa)(onp.ones(N))
        a_done.set()

    def run_b():
        answers["b"] = grad(fb)(onp.ones(N))

    threads = [threading.Thread(target=run_a), threading.Thread(target=run_b)]
    threads[0].start()
    while c.flags.writeable and threads[0].is_alive():
        time.sleep(0.001)  # (a holds c first)
    threads[1].start()
    for t in threads:
        t.join(20)
    assert onp.array_equal(answers["a"], c0)
    assert onp.array_equal(answers["b"], expected_after_write(c0))
    assert flags(c) == [True] and c[0] == 5.0


def test_jit_inside_a_gradient_and_a_gradient_inside_jit():
    e, f, x, _ = basis_case()
    jitted = jit(grad(f))
    outer = grad(lambda x: np.sum(jitted(x) * e))  # (e = [0, 0, 1, 0...] after each call)
    for _ in range(3):
        assert onp.array_equal(outer(x), [0.0, 0.0, 6.0] + [0.0] * (N - 3))
        assert flags(e) == [True]


class Refusing(tuple):
    """A tuple the search cannot read (its iteration raises)."""

    def __iter__(self):
        raise RuntimeError("not iterable")


def test_an_object_that_refuses_the_search():
    c = onp.linspace(1.0, 2.0, N)
    odd = Refusing((c,))

    def f(x):
        y = x * c
        assert odd is not None  # (a closure variable the search reaches)
        c[0] = 5.0
        return np.sum(y)

    assert onp.array_equal(grad(f)(onp.ones(N)), onp.linspace(1.0, 2.0, N))
    assert flags(c) == [True]


def test_a_write_before_the_refused_one_does_not_reach_the_run_again():
    # (the modes contract's case 520 with every constant held: a small array written
    # after its use, then a large one; the run again must start from the state the call
    # started from, as one plain call does)
    small0, c0 = onp.array([1.0, 2.0, 3.0]), onp.linspace(1.0, 2.0, N)
    small, c = small0.copy(), c0.copy()
    draws = []

    def f(x):
        draws.append(onp.random.standard_normal())  # (the global generator: drawn again)
        y = x[:3] * small
        small[0] = 5.0
        z = x * c
        c[0] = 7.0
        return np.sum(y) + np.sum(z)

    x = onp.linspace(-1.0, 1.0, N)
    onp.random.seed(3)
    expected_draw, next_draw = onp.random.standard_normal(2)
    for _ in range(2):  # (the second call holds c, and every array f reaches is read-only)
        small[:], c[:] = small0, c0
        draws.clear()
        onp.random.seed(3)
        value, g = value_and_grad(f)(x)
        assert value == onp.sum(x[:3] * small0) + onp.sum(x * c0)
        assert onp.array_equal(g, onp.concatenate([small0, onp.zeros(N - 3)]) + c0)
        assert draws == [expected_draw]  # (one draw, the plain call's: the list and the
        #                                  generator as they were before the run again)
        assert small[0] == 5.0 and c[0] == 7.0 and flags(small, c) == [True, True]
    assert onp.random.standard_normal() == next_draw  # (the generator moved on once)


def test_a_method_and_a_callable_object():
    class Model:
        def __init__(self):
            self.data = onp.linspace(1.0, 2.0, N)
            self.seen = []

        def loss(self, w):
            out = np.sum(w * self.data)
            self.seen.append(flags(self.data))
            return out

        __call__ = loss

    for model, fun in ((Model(), "method"), (Model(), "object")):
        f = model.loss if fun == "method" else model
        for _ in range(2):
            assert onp.array_equal(grad(f)(onp.ones(N)), model.data)
            assert flags(model.data) == [True]
        # (held from the method's second gradient on; the object's __call__ is the same
        # code, whose gradients met large arrays: held from its first)
        assert model.seen == ([[True], [False]] if fun == "method" else [[False], [False]])


@pytest.mark.parametrize("owner", [True, False])
def test_a_function_making_a_held_array_writeable_again(owner):
    # (an array owning its memory: NumPy sets its flag back; linspace's answer is a view,
    # whose flag NumPy refuses to set while its base is read-only)
    c = onp.linspace(1.0, 2.0, N).copy() if owner else onp.linspace(1.0, 2.0, N)
    c0 = c.copy()

    def f(x):
        y = np.sum(x * c)
        if not c.flags.writeable:
            c.setflags(write=True)
            c[0] = 9.0
        return y

    assert onp.array_equal(grad(f)(onp.ones(N)), c0)  # (the first gradient copies)
    if owner:  # (the gradient may have read the new value: refused, clearly)
        with pytest.raises(RuntimeError, match="made writeable again"):
            grad(f)(onp.ones(N))
        assert c[0] == 9.0
    else:  # (refused by NumPy, as a write: run again copying)
        assert onp.array_equal(grad(f)(onp.ones(N)), c0)
        assert onp.array_equal(c, c0)
    assert flags(c) == [True]


def test_elementwise_grad_and_grad_and_aux_hold_too():
    c0 = onp.linspace(1.0, 2.0, N)
    c = c0.copy()
    seen = []
    runs = itertools.count()  # (not state the search knows: counts every run)

    def f(x):
        y = x * c
        seen.append(flags(c))
        return y

    def g(x):
        next(runs)
        y = np.sum(x * c)
        c[0] = 5.0  # (written after its use: refused while held, run again copying)
        return y, {"first": 1.0}

    for _ in range(2):
        assert onp.array_equal(elementwise_grad(f)(onp.ones(N)), c0)
    assert seen == [[True], [False]]  # (copied, then held)
    for _ in range(3):
        c[:] = c0
        gradient, aux = grad_and_aux(g)(onp.ones(N))
        assert onp.array_equal(gradient, c0) and aux == {"first": 1.0} and c[0] == 5.0
        assert flags(c) == [True]
    assert next(runs) == 4  # (copied; held, refused, run again copying; copied: a writer)
