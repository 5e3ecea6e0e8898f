"""jit ≡ eager for a ufunc's where= into out= (the long run's cases 8,285 and 10,267).

NumPy's loops for an array of negative strides (``x[::-1]``) are not its SIMD loops, and
their last bits differ for exp, log, tanh's kin: a jitted call must call NumPy as the
eager call does, not a composite on new arrays.
"""

import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule.jit import JitWarning
from chainrule.numpy.buffers import _ufunc_where
from chainrule.test_util import check_grads

RNG = onp.random.default_rng(12)


def _reversed(a):
    return onp.ascontiguousarray(a[::-1])[::-1]


@pytest.mark.parametrize("ufunc", [np.exp, np.expm1, np.log1p, np.cbrt, np.sinh, np.arcsinh])
@pytest.mark.parametrize("layout", ["reversed input", "reversed output", "contiguous"])
def test_where_into_out_is_eager_bit_for_bit(ufunc, layout):
    def f(x):
        o = np.full(len(x), -0.0)
        into = o[::-1] if layout == "reversed output" else o
        ufunc(x, out=into, where=x > 0.1)
        return o * 1.0

    jf = cr.jit(f)
    for _ in range(3):
        x = RNG.normal(size=257) * 2.0
        if layout == "reversed input":
            x = _reversed(x)
        want = f(x.copy())
        for got in (jf(x.copy()), jf(x.copy())):
            assert got.tobytes() == want.tobytes()


def test_where_into_a_0d_out_under_jit():
    def f(x):
        o = np.zeros(())
        np.exp(x[0], out=o, where=x[0] > 0)
        return o * x

    jf = cr.jit(f)
    for x in (onp.array([0.5, 2.0]), onp.array([-0.5, 2.0]), onp.array([0.7, 1.0])):
        assert jf(x).tobytes() == f(x).tobytes()


def test_where_into_out_with_two_arguments_and_a_float32_out():
    def f(x):
        o = np.full(len(x), 3.0, dtype=np.float32)
        np.divide(1.0, x[::-1], out=o, where=x[::-1] != 0)
        return o

    jf = cr.jit(f)
    for x in (onp.array([0.5, 0.0, -2.0, 3.0]), onp.array([0.0, 1e-300, -0.0, onp.nan])):
        with onp.errstate(all="ignore"):
            want = f(x)
        assert jf(x).tobytes() == want.tobytes() and jf(x).dtype == onp.float32


def test_the_staged_call_has_the_composites_derivatives():
    # _ufunc_where gives the value; its derivative rules are the composite's
    mask = onp.array([True, False, True, True])
    old = onp.array([1.0, 2.0, 3.0, 4.0])
    x = onp.array([0.3, -1.0, 2.0, 0.5])
    check_grads(lambda x, o: _ufunc_where(np.tanh, (), mask, o, x), modes=["fwd", "rev"],
                order=2)(x, old)
    check_grads(lambda x, y: _ufunc_where(np.divide, (), mask, old, x, y), modes=["fwd", "rev"],
                order=2)(x, x + 1.0)
    g = cr.grad(lambda x: np.sum(_ufunc_where(np.exp, (), mask, old, x)))(x)
    assert onp.array_equal(g, onp.where(mask, onp.exp(x), 0.0))


def _laid_out(a, layout):
    if layout == "strided":
        b = onp.zeros(2 * a.size)
        b[::2] = a
        return b[::2]
    return _reversed(a) if layout == "reversed" else a.copy()


@pytest.mark.parametrize("layout", ["contiguous", "strided", "reversed"])
@pytest.mark.parametrize("view", ["flip", "slice", "reshape", "ravel", "itself"])
def test_a_view_of_a_written_argument_is_the_callers_as_eagerly(layout, view):
    # (the long run's cases 9,553, 66,973, 91,433, 92,746: x written, then x[::-1] returned)
    make = {"flip": np.flip, "slice": lambda x: x[1::2], "reshape": lambda x: x.reshape(2, 3),
            "ravel": lambda x: x.ravel(), "itself": lambda x: x}[view]

    def f(x):
        x[::2] = x[::2] * 0.25
        v = make(x)
        return v, {"b": v, "c": x}

    jf = cr.jit(f)
    for k in range(3):
        base = RNG.normal(size=6)
        xe, xj = _laid_out(base, layout), _laid_out(base, layout)
        want, got = f(xe), jf(xj)
        assert onp.array_equal(xe, xj)
        assert got[0] is got[1]["b"] and got[1]["c"] is xj
        assert onp.shares_memory(got[0], xj) == onp.shares_memory(want[0], xe), (k, view)
        assert got[0].tobytes() == want[0].tobytes()
        assert got[0].strides == want[0].strides


def test_setting_a_traced_arrays_shape_is_numpys_reshape_in_place():
    def f(x):
        y = x * 2.0
        y.shape = (2, 3)
        return np.sum(np.sin(y), axis=0)

    x = onp.arange(6.0) / 7.0
    want = onp.sin(2 * x).reshape(2, 3).sum(axis=0)
    jf = cr.jit(f)
    for _ in range(2):
        assert jf(x).tobytes() == f(x).tobytes() and onp.allclose(f(x), want)
    assert onp.allclose(cr.grad(lambda x: np.sum(f(x)))(x), 2 * onp.cos(2 * x))

    def strided(x):
        y = (x * 2.0)[::2]
        y.shape = (3, 1)
        return np.sum(y)

    with pytest.raises(TypeError, match=r"x = x.reshape\(s\)"):
        cr.grad(strided)(x)

    def incompatible(x):
        y = np.outer(x, x)[:, :2]
        y.shape = (12,)
        return np.sum(y)

    for g in (incompatible, cr.grad(incompatible)):
        with pytest.raises(AttributeError, match="Incompatible shape for in-place"):
            g(x)


def _buffer_reshaped_constant(x):  # a buffer of constants (np.round's), reshaped
    v = np.round(x * 10.0) * 1.0
    v.shape = (len(x), 1)
    return np.sum(v * x, axis=0)


def _buffer_reshaped_after_a_traced_write(x):
    v = np.zeros(4)
    v[1:] = x[:-1] * 2.0
    v.shape = (2, 2)
    v[0, 0] = np.sin(x[3])
    return v.ravel() * x


def _view_reshaped_then_base_written(x):
    b = np.zeros(8)
    w = b[::2]
    w.shape = (2, 2)
    b[::2] = x * 3.0
    return w.ravel() + b[1::2] + np.sum(w, axis=0).repeat(2)


def _view_of_a_traced_base_reshaped_and_written(x):
    b = np.zeros(8)
    b[:] = np.concatenate([x, x * x])
    w = b[4:]
    w.shape = (2, 2)
    w[1] = np.cos(x[:2])
    return b * 1.0


def _base_reshaped_under_its_view(x):
    b = np.zeros(4)
    w = b[1:3]
    b.shape = (2, 2)
    b[...] = np.reshape(x * x, (2, 2))
    return w * 1.0


@pytest.mark.parametrize("f", [_buffer_reshaped_constant, _buffer_reshaped_after_a_traced_write,
                               _view_reshaped_then_base_written,
                               _view_of_a_traced_base_reshaped_and_written,
                               _base_reshaped_under_its_view])
def test_setting_a_buffers_shape_is_numpys_reshape_in_place(f):
    # arrays chainrule.numpy makes under a trace (buffers) said "property 'shape' of
    # 'Buffer' object has no setter" (the modes contract's v.shape = ... statements)
    x = onp.array([0.5, -1.0, 2.0, -0.3])
    want = f(x.copy())
    eps = 1e-6
    differences = onp.stack([(f(x + eps * e) - f(x - eps * e)) / (2 * eps)
                             for e in onp.eye(4)], axis=-1)
    jf, jac = cr.jit(f), cr.jacobian(f)
    for _ in range(2):
        assert jf(x.copy()).tobytes() == want.tobytes()
        onp.testing.assert_allclose(jac(x), differences, atol=1e-6)
    onp.testing.assert_allclose(cr.vmap(f)(onp.stack([x, -x])), onp.stack([want, f(-x)]))

    def incompatible(x):
        v = np.zeros(4)
        v[0] = x[0]
        t = v[::2]
        t.shape = (3,)
        return v

    for g in (incompatible, cr.grad(lambda x: np.sum(incompatible(x)))):
        with pytest.raises(ValueError, match="cannot reshape array of size 2"):
            g(x)


@pytest.mark.parametrize("write", ["copyto", "put", "putmask", "place", "put_along_axis"])
def test_numpys_write_functions_take_traced_values_as_setitem_does(write):
    # into a NumPy array: eager evaluation under jit (as a[i] = x), grad's clear error (it
    # said "no derivative rule for numpy.copyto"); into a traced array: the traced write
    calls = {
        "copyto": lambda a, v: onp.copyto(a, v[:3]),
        "put": lambda a, v: onp.put(a, [0, 2], v[:2]),
        "putmask": lambda a, v: onp.putmask(a, onp.array([True, False, True]), v[:3]),
        "place": lambda a, v: onp.place(a, onp.array([True, False, True]), v[:2]),
        "put_along_axis": lambda a, v: onp.put_along_axis(a, onp.array([2]), v[:1], 0),
    }

    def into_numpy(x):
        a = onp.zeros(3)
        calls[write](a, x * 2.0)
        return a * x[3:]

    def into_traced(x):
        a = x[3:] * 1.0
        calls[write](a, x * 2.0)
        return a * x[3:]

    x = onp.arange(6.0) + 1.0
    for f in (into_numpy, into_traced):
        jf = cr.jit(f)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitWarning)
            for k in range(3):
                assert jf(x + k).tobytes() == f(x + k).tobytes()
    with pytest.raises(TypeError, match="writing a traced value into a NumPy array"):
        cr.grad(lambda x: np.sum(into_numpy(x)))(x)
    g = cr.grad(lambda x: np.sum(into_traced(x)))(x)
    eps = 1e-6
    fd = [(onp.sum(into_traced(x + eps * e)) - onp.sum(into_traced(x - eps * e))) / (2 * eps)
          for e in onp.eye(6)]
    assert onp.allclose(g, fd, atol=1e-6)


@pytest.mark.parametrize("view", ["flip", "reversed slice", "split"])
def test_a_view_of_a_written_buffer_is_laid_out_as_numpys_under_a_trace(view):
    # (the modes contract's case 55,549: np.flip of a buffer written by exp(where=) was a
    # contiguous gather under grad, and arctan2's loop for it rounds otherwise than for
    # NumPy's view of negative strides: value_and_grad's value 1 ulp off the plain call)
    take = {"flip": np.flip, "reversed slice": lambda o: o[::-1],
            "split": lambda o: np.split(o[::-1], 2)[1]}[view]

    def f(x):
        o = np.full(len(x), 0.25)
        np.exp(x, out=o, where=x > 0.1)
        v = take(o)
        return np.expm1(v) + np.arctan2(v, 1.5 + v * v) + np.cbrt(v)

    x = RNG.normal(size=4096)
    primal, tangent = cr.jvp(f, (x,), (onp.ones(4096),))
    assert primal.tobytes() == f(x).tobytes()
    eps = 1e-6
    assert onp.allclose(tangent, (f(x + eps) - f(x - eps)) / (2 * eps), rtol=1e-5, atol=1e-6)
