"""chainrule.jit's emitted calls: intermediate arrays written in place (``out=``) where
they die, never an input nor an array a view still reads, equal to eager to the last bit."""

from __future__ import annotations

import re
import warnings

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


# ---------------------------------------------------------------- calls and signatures
def test_nested_arguments_reach_the_program_in_order():
    from collections import namedtuple
    from dataclasses import dataclass

    Pair = namedtuple("Pair", "a b")

    @dataclass
    class Box3:
        u: object
        v: object

    def f(p, n, scale=1.0, *, opts):
        total = p["w"] * opts["k"] + np.sum(p["pair"].b) * n
        return {"t": total * scale, "box": Box3(p["pair"].a ** 2, p["list"][1] - p["list"][0])}

    rng = onp.random.default_rng(5)
    p = {"w": rng.normal(size=3), "pair": Pair(0.5, rng.normal(size=2)),
         "list": [rng.normal(size=3), None, 2.0][::2], "z": None}
    g = cr.jit(f, static_argnames="opts")
    for scale in (2.0, 3.0):
        got = g(p, 3, scale, opts=_Hashable(k=1.5))
        want = f(p, 3, scale, opts=_Hashable(k=1.5))
        _bits(got["t"], want["t"])
        _bits(got["box"].u, want["box"].u)
        _bits(got["box"].v, want["box"].v)
    assert g.cache_info().misses == 1 and g.cache_info().hits == 1


class _Hashable(dict):
    def __hash__(self):
        return hash(tuple(sorted(self.items())))


def test_direct_calls_equal_numpy_wrappers():
    rng = onp.random.default_rng(6)
    x = rng.normal(size=(3, 4, 2))

    def f(x):
        return (
            np.sum(x, axis=(0, 2), keepdims=True),
            np.sum(x, 1, None, None, True),
            np.max(x, axis=1, initial=-5.0),
            np.min(x),
            np.prod(x, axis=-1),
            np.transpose(x, (2, 0, 1)),
            np.transpose(x),
            np.reshape(x, (4, 6), order="F"),
            np.moveaxis(x, 0, -1),
            np.moveaxis(x, (0, 1), (2, 0)),
            x[1:, ::2],
            np.tanh(x) + np.sin(x) * 2.0,
        )

    g = cr.jit(f)
    for _ in range(2):
        for got, want in zip(g(x), f(x)):
            _bits(got, want)
            assert onp.asarray(got).strides == onp.asarray(want).strides
    source = g.lower(x).source
    assert ".transpose((1, 2, 0))" in source and ".reshape(" in source  # no NumPy wrapper


def test_products_with_the_identity_basis_are_copies_where_that_is_exact():
    """A Hessian's forward sweep multiplies by the identity basis: the program copies the
    other operand instead, unless an entry is inf, nan or zero (then I @ M may not be M: it
    computes the product, as eager does)."""
    import warnings

    def f(x, a):
        return np.sum(np.tanh(a @ x)) + 0.5 * np.sum(x * x)

    h = cr.jit(cr.hessian(f))
    rng = onp.random.default_rng(0)
    a, x = rng.standard_normal((6, 6)), rng.standard_normal(6)
    assert "by the identity" in h.lower(x, a).source
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a2 in (a, -a, a * -0.0, onp.where(a > 1, onp.inf, a), onp.where(a > 1, onp.nan, a),
                   onp.where(a > 0.5, -0.0, a)):
            _bits(h(x, a2), cr.hessian(f)(x, a2))
    assert h.cache_info().misses == 1


def _clipped(x):
    v1 = np.minimum(x * 2.0, x)
    v2 = np.maximum(v1 * 3.0, 0.0)
    return 1 / (1 + np.exp(-v2 * 1.0))


def test_a_plain_ufunc_call_takes_out_by_position_but_max_and_min_by_keyword():
    # (jitd15: NumPy parses a positional out faster, but deprecates it for maximum and
    # minimum, which would warn where eager evaluation does not)
    jf = cr.jit(_clipped)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for v in (onp.arange(5.0), -onp.arange(5.0), onp.array([onp.nan, -0.0, onp.inf]),
                  onp.arange(5.0, dtype=onp.float32), onp.arange(5.0)):
            got, want = jf(v), _clipped(v)
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    lowered = jf.lower(onp.arange(5.0))
    compiled = lowered.compiled
    assert ", out=" in compiled  # (maximum and minimum's)
    assert re.search(r"= f\d+\((v\d+), \1\)", compiled)  # (exp's, negative's ...)
    assert not re.search(r"np\.\w+\((v\d+), \1\)", lowered.source)  # (shown as out=)
    assert "(1, " not in compiled and "(1.0, " in compiled  # (the int as a float)
