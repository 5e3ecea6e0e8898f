"""eager16: grad's one memory block, its seed by the output's type, one-leaf shortcuts."""

from __future__ import annotations

import gc

import numpy
import pytest

import chainrule
import chainrule.numpy as np
from chainrule._core import heap, reverse
from chainrule._core.vspace import vspace


def lse(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def softmax(x):
    e = numpy.exp(x - x.max())
    return e / e.sum()


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32])
def test_lse_gradient_is_softmax_called_twice_with_ties_and_signed_zeros(dtype):
    g = chainrule.grad(lse)
    for x in (numpy.array([0.5, -1.0, 2.0], dtype=dtype),
              numpy.array([-0.0, 0.0, -0.0], dtype=dtype),  # ties at the max, -0.0
              numpy.array([3.0, 3.0, 1.0], dtype=dtype)):
        expected = softmax(x.astype(float))
        for _ in range(2):
            got = g(x)
            assert got.dtype == dtype and got.shape == x.shape
            numpy.testing.assert_allclose(got, expected, rtol=1e-6 if dtype is numpy.float32
                                          else 1e-14)
    assert numpy.isnan(g(numpy.array([1.0, numpy.nan]))).all()


def test_the_seed_by_type_gives_what_the_outputs_space_gives():
    # Python float, float64, float32 outputs (the seeds by type) and a float16 one (the
    # general path): the gradient's type and value as the output's space's ones() gives
    cases = [(lambda x: x * 3.0, 2.0),
             (lambda x: np.sin(x), numpy.float64(0.5)),
             (lambda x: np.sin(x), numpy.float32(0.5)),
             (lambda x: np.sum(x * x), numpy.array([1.0, -2.0], dtype=numpy.float32)),
             (lambda x: np.sum(x * x), numpy.array([1.0, -2.0], dtype=numpy.float16))]
    for f, x in cases:
        vjp, ans = chainrule.make_vjp(f)(x)
        expected = vjp(vspace(ans).ones())
        for _ in range(2):
            got = chainrule.grad(f)(x)
            assert type(got) is type(expected)
            assert numpy.asarray(got).dtype == numpy.asarray(expected).dtype
            numpy.testing.assert_array_equal(got, expected)
    assert chainrule.grad(lambda x: x * 3.0)(2.0) == 3.0
    assert type(chainrule.grad(lambda x: x * x)(-0.0)) is numpy.float64
    assert numpy.signbit(chainrule.grad(lambda x: x * x)(-0.0))  # 2 * -0.0


def test_outputs_that_are_not_real_scalars_are_still_refused():
    for f, what in ((lambda x: x * 2.0, "shape"), (lambda x: (x, x), "container"),
                    (lambda x: x * 1j, "complex")):
        with pytest.raises(TypeError, match=what):
            chainrule.grad(f)(numpy.ones(2) if what == "shape" else 1.0)
    with pytest.raises(TypeError, match="returned None"), pytest.warns(UserWarning):
        chainrule.grad(lambda x: None)(1.0)


def test_nested_pytrees_aux_and_argnums_through_the_shortcuts():
    f = lambda x: x ** 3  # noqa: E731
    assert chainrule.grad(chainrule.grad(f))(2.0) == 12.0
    assert chainrule.grad(chainrule.grad(chainrule.grad(f)))(2.0) == 6.0
    d = chainrule.grad(lambda p: p["a"] * p["b"])({"a": 2.0, "b": 3.0})
    assert d == {"a": 3.0, "b": 2.0}
    t = chainrule.grad(lambda a, b: a * np.sin(b), argnum=(0, 1))(2.0, 0.0)
    assert t == (0.0, 2.0)
    g, aux = chainrule.grad(lambda x: (np.sum(x ** 2), "aux"), has_aux=True)(numpy.ones(2))
    assert (g == 2.0).all() and aux == "aux"
    h = chainrule.hessian(lse)(numpy.array([0.0, 1.0]))
    s = softmax(numpy.array([0.0, 1.0]))
    numpy.testing.assert_allclose(h, numpy.diag(s) - numpy.outer(s, s), rtol=1e-12)
    # a cotangent given as a container for a one-leaf output is refused as before
    vjp, _ = chainrule.make_vjp(np.sin)(1.0)
    with pytest.raises(ValueError, match="structure"):
        vjp((1.0, 2.0))


def test_the_one_block_restores_collection_and_propagates_errors():
    def fails(x):
        np.sin(x)
        raise KeyError("inside")

    assert gc.isenabled()
    chainrule.grad(lse)(numpy.ones(3))
    assert gc.isenabled()
    with pytest.raises(KeyError):
        chainrule.grad(fails)(1.0)
    assert gc.isenabled()
    gc.disable()
    try:
        chainrule.grad(lse)(numpy.ones(3))
        assert not gc.isenabled()  # (as the caller had it)
    finally:
        gc.enable()


def test_keep_growth_marks_the_recordings_growth_inside_the_block(monkeypatch):
    kept = []
    monkeypatch.setattr(heap, "_keep", kept.append)
    breaks = iter([100, 160, 150])  # start, after the recording, after the sweep

    class Break:
        @property
        def value(self):
            return next(breaks)

    monkeypatch.setattr(heap, "_heap_break", Break())
    monkeypatch.setattr(heap, "_set", True)
    with heap.graph_memory() as memory:
        memory.keep_growth()  # (the recording's end: 60 bytes grown)
    assert kept == [60]  # the sweep freed some: nothing more kept


def test_a_recording_outside_a_block_still_opens_its_own():
    recording = reverse.Recording(lse, numpy.array([1.0, 2.0]), free=True)
    g = recording.pull_back(1.0)
    numpy.testing.assert_allclose(g, softmax(numpy.array([1.0, 2.0])), rtol=1e-14)
    assert gc.isenabled()


def test_views_of_traced_arrays_and_of_buffers_see_later_writes():
    def f(x):
        y = np.zeros(4)
        y[:] = x  # a buffer under the trace
        v = y[1:3]  # its view
        y[1] = 5.0 * x[0]  # seen by v
        w = x.reshape(2, 2)[0]
        return np.sum(v * v) + np.sum(w ** 3)

    x = numpy.array([1.0, 2.0, 3.0, 4.0])
    step = 1e-6
    fd = [(f(x + step * e) - f(x - step * e)) / (2 * step) for e in numpy.eye(4)]
    for _ in range(2):
        numpy.testing.assert_allclose(chainrule.grad(f)(x), fd, rtol=1e-7)


def test_empty_arrays_python_floats_and_other_branches_called_twice():
    f = lambda x: np.sum(np.where(x > 0, x ** 2, -x))  # noqa: E731
    g = chainrule.grad(f)
    for x, expected in ((numpy.array([]), numpy.array([])),
                        (numpy.array([2.0, -1.0, -0.0]), numpy.array([4.0, -1.0, -1.0])),
                        # (nan in the branch not taken: x ** 2's rule gives 0 * nan)
                        (numpy.array([0.5, numpy.nan]), numpy.array([1.0, numpy.nan]))):
        for _ in range(2):
            got = g(x)
            assert got.shape == x.shape and got.dtype == numpy.float64
            numpy.testing.assert_array_equal(got, expected)
    assert chainrule.grad(lambda x: np.sin(x) * x)(0.0) == 0.0
    assert chainrule.grad(lambda x: np.sin(x) * x)(numpy.pi / 2) == pytest.approx(1.0)


def test_jit_and_vmap_of_the_gradient_agree_with_eager():
    g = chainrule.grad(lse)
    xs = numpy.random.default_rng(16).normal(size=(4, 6))
    xs[1, :3] = -0.0  # ties
    loop = numpy.stack([g(x) for x in xs])
    jitted = chainrule.jit(g)
    for x, row in zip(xs, loop):
        for _ in range(2):
            numpy.testing.assert_array_equal(jitted(x), row)  # jit = eager, bit for bit
    numpy.testing.assert_allclose(chainrule.vmap(g)(xs), loop, rtol=1e-15, atol=0)


def test_x_index_of_traced_arrays_through_getitems_direct_call():
    cols = numpy.array([2, 0, 2])
    f = lambda A: np.sum(A[1][cols] * A[0][1:4])  # noqa: E731
    A = numpy.arange(8.0).reshape(2, 4)
    expected = numpy.zeros((2, 4))
    expected[0, 1:4] = A[1][cols]
    numpy.add.at(expected[1], cols, A[0][1:4])
    for _ in range(2):
        numpy.testing.assert_array_equal(chainrule.grad(f)(A), expected)
        numpy.testing.assert_array_equal(chainrule.jit(chainrule.grad(f))(A), expected)
    # a box as index, a tuple index and a Python list index still take the general path
    h = lambda A: A[0, 1] * A[(1, 2)] + np.sum(A[[0, 1], [3, 3]])  # noqa: E731
    e = numpy.zeros((2, 4))
    e[0, 1], e[1, 2], e[0, 3], e[1, 3] = A[1, 2], A[0, 1], 1.0, 1.0
    numpy.testing.assert_array_equal(chainrule.grad(h)(A), e)
