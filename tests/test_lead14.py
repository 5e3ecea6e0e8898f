"""The lead's fixes of the fourteenth session (issue 37's speed work and the harness)."""

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np


def _written_view_twice(x, s):
    # an array made under the trace (a buffer), written by out=, a view of it answered
    # under two keys: eagerly one array object twice
    o = np.zeros(3)
    np.divide(x, x + s, out=o, where=x != 0)
    v = o[::-1]
    return {"b": v, "c": v, "d": [v, o]}


@pytest.mark.parametrize("wrap", ["jit", "jit_of_jit", "grad_values"])
def test_one_buffer_answered_twice_is_one_array_twice(wrap):
    # (the jit contract's case 6926 at seed 2: "eagerly the same array, jitted share memory")
    x = onp.array([-0.5, 0.0, 2.0])
    want = _written_view_twice(x, 1.0)
    assert want["b"] is want["c"]
    if wrap == "grad_values":
        got = cr.value_and_grad(lambda x, s: np.sum(_written_view_twice(x, s)["b"]))(x, 1.0)[0]
        assert got == onp.sum(want["b"])
        return
    f = cr.jit(_written_view_twice) if wrap == "jit" else cr.jit(cr.jit(_written_view_twice))
    for k in range(3):  # the trace, the program's first run, a cached call
        got = f(x + k, 1.0)
        expected = _written_view_twice(x + k, 1.0)
        assert got["b"] is got["c"] is got["d"][0]
        assert got["d"][1] is not got["b"] and onp.shares_memory(got["d"][1], got["b"])
        onp.testing.assert_array_equal(got["b"], expected["b"])
        onp.testing.assert_array_equal(got["d"][1], expected["d"][1])


def _tiled_buffer_program(x, s):
    # the jit contract's case 42248 at seed 0 (a reversed-layout x, s a Python float)
    v1 = (x > 0) * x
    v2 = v1 * s
    b3 = np.fix(v1 * 10.0) + s
    b3 = onp.tile(b3, 1)
    b3[-1] = np.sum(v2)
    v4 = b3 * v1
    return np.sum(np.roll(v4, 1)) + np.dot(v4, v4)


def test_a_broadcast_read_with_a_python_number_is_emitted():
    # jit's emitter asked a Python number (a staged scalar operand of the ufunc reading a
    # broadcast_to) for its shape: AttributeError at the program's first run
    g = cr.grad(_tiled_buffer_program)
    jg = cr.jit(g)
    calls = [(onp.array([-0.28, 3.49, -0.75]), 2.33), (onp.array([-1.04, 1.2, -0.29]), -1.63),
             (onp.array([-0.28, 3.49, -0.75]), 2.33)]
    for x, s in calls:
        x = x[::-1].copy()[::-1]  # (reversed, as the case's layout)
        want = g(x, onp.float64(s))
        got = jg(x, s)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    # and by hand: d/dx of sum(roll(v4)) + v4.v4 with v4 = b3 * v1
    x = onp.array([-1.04, 1.2, -0.29])
    b3 = onp.fix(onp.maximum(x, 0) * 10.0) + -1.63
    b3[-1] = onp.sum(onp.maximum(x, 0) * -1.63)
    v1 = (x > 0) * x
    v4 = b3 * v1
    want = (x > 0) * (b3 * (1.0 + 2.0 * v4))
    # (b3[-1] = s * sum(v1) depends on every x_i > 0)
    want += (x > 0) * -1.63 * v1[-1] * (1.0 + 2.0 * v4[-1])
    onp.testing.assert_allclose(jg(x, -1.63), want, rtol=1e-12)


def _sorted_then_arctan2(x):
    x.sort()  # (in place: eagerly x keeps its own strides, here reversed)
    return np.arctan2(x, 1.5 + x * x)


@pytest.mark.parametrize("how", ["jit", "value_and_grad"])
def test_a_reversed_argument_written_in_place_keeps_its_layout(how):
    # NumPy's float32 arctan2 rounds a reversed array's elements otherwise than its
    # contiguous copy's (the jit contract's case 707 at seed 1414 and 2,726 at seed 5151):
    # a traced in-place write must leave the value laid out as NumPy leaves it
    rng = onp.random.default_rng(0)
    differ = 0
    for _ in range(200):
        a = (rng.standard_normal(4) * 2).astype(onp.float32)
        want = _sorted_then_arctan2(a.copy()[::-1])
        differ += want.tobytes() != _sorted_then_arctan2(a.copy()).tobytes()
        x = a.copy()[::-1]
        if how == "jit":
            with pytest.warns(cr.jit.JitWarning, match="writes into its argument"):
                got = cr.jit(_sorted_then_arctan2)(x)  # (the first call: the trace's values)
            assert got.tobytes() == want.tobytes()
        else:
            value, grad = cr.value_and_grad(lambda x: np.sum(_sorted_then_arctan2(x)))(x)
            assert onp.asarray(value).tobytes() == onp.sum(want).tobytes()
            t = onp.sort(a).astype(float)  # d/dx arctan2(x, 1.5 + x^2) at the sorted x
            dt = (1.5 + t * t - 2 * t * t) / ((1.5 + t * t) ** 2 + t * t)
            back = onp.empty_like(dt)
            back[onp.argsort(a[::-1], kind="stable")] = dt
            onp.testing.assert_allclose(grad, back, rtol=1e-5, atol=1e-7)  # (float32)
    assert differ  # (this NumPy's loops do round otherwise: the test tests something)
