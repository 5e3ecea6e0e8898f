"""Threads: functional transforms in 8 threads equal their serial results in every mode,
and a Tensor graph used from two threads either works or fails clearly.

Python switches threads every 5 ms by default, which hides races; the tests here make
it switch every microsecond while they run.
"""

from __future__ import annotations

import sys
import threading

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import (
    Tensor,
    grad,
    hessian,
    hessian_vector_product,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    make_jvp,
)
from chainrule.extend import defjvp, defvjp, primitive
from chainrule.tensor import FreedGraphError


@pytest.fixture(autouse=True)
def fast_thread_switches():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def in_threads(work, n_threads: int) -> list:
    """Run ``work(k)`` in ``n_threads`` threads started together; results (or the
    exceptions raised) in thread order."""
    results: list = [None] * n_threads
    start = threading.Barrier(n_threads)

    def run(k):
        start.wait()
        try:
            results[k] = work(k)
        except Exception as err:  # noqa: BLE001 - handed back to the test
            results[k] = err

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


# ----------------------------------------------------------------------------- functional

def model(x):
    return np.sum(np.tanh(x) * x ** 2) + np.prod(np.cos(x[:3]))


def vector_model(x):
    return np.sin(x) * np.sum(x ** 2) + np.cumsum(x)


TRANSFORMS = {
    "grad": lambda x: grad(model)(x),
    "jvp": lambda x: jvp(vector_model, (x,), (onp.ones_like(x),))[1],
    "make_jvp": lambda x: make_jvp(model)(x)(onp.cos(x))[1],
    "jacfwd": lambda x: jacfwd(vector_model)(x),
    "jacrev": lambda x: jacrev(vector_model)(x),
    "jacobian": lambda x: jacobian(vector_model)(x),
    "hessian": lambda x: hessian(model)(x),
    "hvp": lambda x: hessian_vector_product(model)(x, onp.sin(x)),
    "jacobian_of_grad": lambda x: jacobian(grad(model))(x),
}


@pytest.mark.parametrize("name", TRANSFORMS)
def test_eight_threads_equal_serial(name):
    transform = TRANSFORMS[name]
    xs = [onp.linspace(-1.0, 1.0, 6) * (k + 1) / 4 for k in range(8)]
    serial = [transform(x) for x in xs]

    def work(k):
        return [transform(xs[k]) for _ in range(5)]

    for k, results in enumerate(in_threads(work, 8)):
        assert not isinstance(results, Exception), results
        for got in results:
            onp.testing.assert_array_equal(got, serial[k])


def test_threads_mixing_tensor_graphs_and_functional_grad():
    xs = [onp.linspace(-1.0, 1.0, 5) + k for k in range(8)]
    serial = [grad(model)(x) for x in xs]

    def work(k):
        out = []
        for i in range(5):
            if (k + i) % 2:
                t = Tensor(xs[k])
                model(t).backward()
                out.append(t.grad.value)
            else:
                out.append(grad(model)(xs[k]))
        return out

    for k, results in enumerate(in_threads(work, 8)):
        assert not isinstance(results, Exception), results
        for got in results:
            onp.testing.assert_allclose(got, serial[k], rtol=1e-14, atol=1e-14)


# ----------------------------------------------------------------------------- Tensor graphs

def test_backward_on_separate_graphs_sharing_a_leaf_loses_nothing():
    n = 300
    x = Tensor(onp.linspace(-1.0, 1.0, 5))

    def work(k):
        for _ in range(n):
            (np.sum(x * 2.0) if k == 0 else np.sum(x ** 2)).backward()

    assert in_threads(work, 2) == [None, None]
    onp.testing.assert_allclose(x.grad.value, n * (2.0 + 2.0 * x.value), rtol=1e-12)


def deep(x, depth=30):
    y = x
    for _ in range(depth):
        y = np.sin(y) * 0.5 + y
    return np.sum(y)


def test_concurrent_backward_on_one_retained_graph_adds_up():
    n = 100
    x = Tensor(onp.linspace(-1.0, 1.0, 5))
    z = deep(x)
    reference = Tensor(x.value)
    deep(reference).backward()

    def work(k):
        for _ in range(n):
            z.backward(retain_graph=True)

    assert in_threads(work, 2) == [None, None]
    onp.testing.assert_allclose(x.grad.value, 2 * n * reference.grad.value, rtol=1e-12)


def test_a_graph_freed_while_a_rule_runs_fails_clearly():
    # Two threads call backward() (no retain_graph) on one graph. Acceptable: both add
    # their gradient, or one raises FreedGraphError. Here thread B is inside the last
    # node's rule while thread A (this one) completes a backward pass that frees the
    # graph; B then finds the node's parents gone and silently adds nothing. (Left to
    # chance, the same race also drops some paths and gives wrong numbers.)
    inside, freed = threading.Event(), threading.Event()

    @primitive
    def gate(x):
        return x * 1.0

    def gate_vjp(ans, x):
        def vjp(g):
            if threading.current_thread().name == "B":
                inside.set()
                freed.wait(5)
            return g
        return vjp

    defvjp(gate, gate_vjp)
    defjvp(gate, lambda g, ans, x: g)
    x = Tensor(onp.array([1.0, 2.0]))
    z = gate(np.sum(x * 3.0))
    errors = []

    def b():
        try:
            z.backward()
        except FreedGraphError as err:
            errors.append(err)

    thread_b = threading.Thread(target=b, name="B")
    thread_b.start()
    inside.wait(5)
    z.backward()  # thread A (this one) frees the graph
    freed.set()
    thread_b.join()
    assert errors or onp.array_equal(x.grad.value, [6.0, 6.0]), x.grad
