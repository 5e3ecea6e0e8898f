"""chainrule.jit with masks: comparisons whose boolean arrays feed only elementwise
functions and ``where`` are values of the program (one variant for any input), and are
guarded by value where their values decide a shape (boolean indexing) or a Python branch."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np


def _bits(a, b):
    a, b = onp.asarray(a), onp.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes()


def _inputs(n=25, size=9, seed=0):
    rng = onp.random.default_rng(seed)
    return [rng.normal(size=size) for _ in range(n)]


def leaky(x):
    return np.sum(np.where(x > 0, x, 0.1 * x))


def combined(x):
    inside = (x < 1) & (x > -1)
    return np.sum(x * (x > 0) + np.where(inside, x**2, 0.0) + np.where(~inside, np.abs(x), 0.0)
                  + (x >= 0.5).astype(float) * np.sin(x))


@pytest.mark.parametrize("f", [leaky, combined])
def test_changing_masks_compile_once_and_match_eager(f):
    g = cr.jit(cr.grad(f))
    xs = _inputs()
    masks = {(x > 0).tobytes() for x in xs}
    assert len(masks) > 10  # the masks really change from call to call
    for x in xs:
        _bits(g(x), cr.grad(f)(x))
    info = g.cache_info()
    assert (info.misses, info.variants, info.hits, info.eager) == (1, 1, len(xs) - 1, 0)
    assert "MISS" not in g.lower(xs[0]).source  # no guard: the mask is computed
    # the derivative by hand, for leaky: 1 where x > 0, else 0.1
    if f is leaky:
        for x in xs:
            onp.testing.assert_array_equal(g(x), onp.where(x > 0, 1.0, 0.1))


def test_masks_under_hessian_and_value_and_grad():
    f = lambda x: np.sum(np.where(x > 0, x**3, -x**2))
    h = cr.jit(cr.hessian(f))
    vg = cr.jit(cr.value_and_grad(f))
    for x in _inputs(10, 5, seed=1):
        _bits(h(x), cr.hessian(f)(x))
        for a, b in zip(vg(x), cr.value_and_grad(f)(x)):
            _bits(a, b)
        onp.testing.assert_allclose(onp.diag(h(x)), onp.where(x > 0, 6 * x, -2.0))
    assert h.cache_info().variants == 1 and vg.cache_info().variants == 1


def test_a_returned_mask_is_computed_each_call():
    f = cr.jit(lambda x: (x > 0, np.where(x > 0, x, 0.0)))
    for x in _inputs(5):
        m, y = f(x)
        assert m.dtype == bool
        onp.testing.assert_array_equal(m, x > 0)
        onp.testing.assert_array_equal(y, onp.where(x > 0, x, 0.0))
    assert f.cache_info().variants == 1


def test_boolean_indexing_is_guarded_by_value():
    f = lambda x: np.sum(x[x > 0] ** 2)
    g = cr.jit(cr.grad(f), max_variants=100)
    xs = _inputs(6)
    for x in xs + xs:
        _bits(g(x), cr.grad(f)(x))
        onp.testing.assert_allclose(g(x), onp.where(x > 0, 2 * x, 0.0))
    info = g.cache_info()
    assert info.variants == len({(x > 0).tobytes() for x in xs})  # one per mask, reused
    assert "MISS" in g.lower(xs[0]).source


def test_python_decisions_on_masks_are_guarded():
    def f(x):
        if np.any(x > 2):
            return np.sum(np.where(x > 2, x, 0.0) ** 2)
        return np.sum(np.sin(x))

    g = cr.jit(cr.grad(f))
    xs = [onp.array([0.5, 3.0]), onp.array([0.5, 1.0]), onp.array([4.0, 1.0]),
          onp.array([-1.0, 0.0])]
    for x in xs:
        _bits(g(x), cr.grad(f)(x))
    assert g.cache_info().variants == 2  # one per branch; the where's mask is a value


def test_iterating_over_a_mask_specialises_on_it():
    def f(x):
        total = 0.0
        for keep, v in zip(x > 0, x):
            if keep:
                total = total + v**2
        return total

    g = cr.jit(cr.grad(f))
    for x in [onp.array([1.0, -2.0, 3.0]), onp.array([-1.0, 2.0, 3.0]),
              onp.array([2.0, -1.0, 0.5])]:
        _bits(g(x), cr.grad(f)(x))
    assert g.cache_info().variants == 2

