"""jit of grad and jvp on every spec case of the rule tables: the compiled program (the
second call, which runs only the emitted code) equals eager evaluation to the last bit."""

from __future__ import annotations

import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule import tree_flatten
from test_rule_specs import CASES


def _float64(case) -> bool:
    return all(
        onp.result_type(a) == onp.float64 for i, a in enumerate(case.args) if i in case.argnums
    )


SELECTED = [c for c in CASES if c.argnums and _float64(c)]


def _assert_same(got, want):
    got_leaves, got_def = tree_flatten(got)
    want_leaves, want_def = tree_flatten(want)
    assert got_def == want_def
    for g, w in zip(got_leaves, want_leaves):
        assert type(g) is type(w) or onp.shape(g) == onp.shape(w) == ()
        onp.testing.assert_array_equal(g, w, strict=False)
        assert onp.asarray(g).tobytes() == onp.asarray(w).tobytes()  # bit for bit


def _scalar(case):
    def f(*args):
        leaves = tree_flatten(case.fun(*args, **case.kwargs))[0]
        return sum(np.sum(np.real(leaf) * 0.5 + np.imag(leaf)) for leaf in leaves)

    return f


def _nudged(args):
    """The same shapes and dtypes, other values (float arrays scaled by 1.03)."""
    return tuple(
        a * 1.03 if isinstance(a, (float, onp.ndarray)) and onp.asarray(a).dtype.kind == "f" else a
        for a in args
    )


def _check(make, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = make()(*args)
        jitted = cr.jit(make())
        first = jitted(*args)
        second = jitted(*args)
        other = _nudged(args)
        third, want_other = jitted(*other), make()(*other)
    _assert_same(first, want)
    _assert_same(second, want)
    _assert_same(third, want_other)  # the program is not specialised on the values
    assert jitted.cache_info().hits >= 1  # (a guard on a floor or a mask may retrace)


@pytest.mark.parametrize("case", SELECTED, ids=[c.id for c in SELECTED])
def test_jit_grad_and_jvp_equal_eager(case):
    for argnum in case.argnums:
        _check(lambda a=argnum: cr.grad(_scalar(case), a), case.args)

        def jvp_of(*args, argnum=argnum):
            t = onp.ones_like(args[argnum]) * 0.75
            fun = lambda x, a=argnum: case.fun(*args[:a], x, *args[a + 1 :], **case.kwargs)
            return cr.jvp(fun, (args[argnum],), (t,))

        _check(lambda: jvp_of, case.args)


SECOND_ORDER = [c for c in SELECTED if c.order >= 2][::7]


@pytest.mark.parametrize("case", SECOND_ORDER, ids=[c.id for c in SECOND_ORDER])
def test_jit_hessian_equals_eager(case):
    argnum = case.argnums[0]
    _check(lambda: cr.hessian(_scalar(case), argnum), case.args)
