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
