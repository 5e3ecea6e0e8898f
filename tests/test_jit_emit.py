"""chainrule.jit's emitted calls: intermediate arrays written in place (``out=``) where
they die, never an input nor an array a view still reads, equal to eager to the last bit."""

from __future__ import annotations

import numpy as onp

import chainrule as cr
import chainrule.numpy as np


def _bits(a, b):
    a, b = onp.asarray(a), onp.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes()

def test_dying_intermediates_are_reused_without_touching_inputs_or_views():
    rng = onp.random.default_rng(3)
    w, x = rng.normal(size=(4, 4)), rng.normal(size=(6, 4))
    w0, x0 = w.copy(), x.copy()

    def f(w, x):
        a = np.tanh(x @ w + 1.0)
        t = a.T  # a view of a, read after a's last use by name
        b = (1.0 - a * a) * 3.0
        return np.sum(b) + np.sum(t @ x)

    g = cr.jit(cr.value_and_grad(f, argnum=(0, 1)))
    for _ in range(3):
        (v, (gw, gx)), (ve, (gwe, gxe)) = g(w, x), cr.value_and_grad(f, argnum=(0, 1))(w, x)
        _bits(v, ve)
        _bits(gw, gwe)
        _bits(gx, gxe)
    onp.testing.assert_array_equal(w, w0)
    onp.testing.assert_array_equal(x, x0)
    source = g.lower(w, x).source
    assert "out=" in source  # some answer reuses a dying operand's memory
    view_of = {line.split(" = ")[1].split(".")[0] for line in source.splitlines()
               if ".transpose(" in line}
    for line in source.splitlines():
        for name in view_of:
            assert f"out={name})" not in line  # never into an array a view still reads
