"""Batched forward sweeps of a recorded graph (the Jacobian's columns all at once) equal
forward mode run once per column, for every spec case: every batched JVP rule (elementwise, add,
subtract, matmul, the reductions sum/mean/cumsum, the reshaping and indexing functions and
the selections) and the one-at-a-time fallback of the others are checked here."""

from __future__ import annotations

import warnings

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import hessian, jacfwd, jacobian, tree_flatten
from chainrule._core.forward import make_jvp
from chainrule._core.reverse import Recording
from chainrule._core.rule_table import batched_jvps
from chainrule.numpy.batched import jvp_over_batch
from test_rule_specs import CASES


def _real_forward_cases():
    for case in CASES:
        if "fwd" not in case.modes or not case.argnums:
            continue
        x = case.args[case.argnums[0]]
        if onp.iscomplexobj(x) or any(onp.iscomplexobj(a) for a in case.args):
            continue
        if onp.size(x) == 0:
            continue
        yield case


FORWARD_CASES = list(_real_forward_cases())


@pytest.mark.parametrize("case", FORWARD_CASES, ids=[c.id for c in FORWARD_CASES])
def test_batched_sweep_equals_forward_mode_per_column(case):
    i = case.argnums[0]
    args = list(case.args)

    def f(x):
        return case.fun(*args[:i], x, *args[i + 1:], **case.kwargs)

    x = args[i]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recording = Recording(f, x, keep_everything=True)
        if not recording.can_push_forward() or not recording.ends:
            pytest.skip("no traced output, or a primitive without a JVP rule")
        n = onp.size(x)
        basis = onp.eye(n, dtype=onp.result_type(x)).reshape((n,) + onp.shape(x))
        batched = recording.push_forward_batched([basis], n, np.stack, jvp_over_batch)
        jvp = make_jvp(f, x)  # the reference: forward mode, one pass per column
        columns = [tree_flatten(jvp(basis[k] if onp.ndim(x) else basis[k][()])[1])[0]
                   for k in range(n)]
    for leaf, (i, _) in enumerate(recording.ends):
        want = onp.stack([onp.asarray(column[i]) for column in columns])
        got = batched[i]
        assert onp.shape(got) == want.shape, f"output leaf {leaf}"
        assert onp.result_type(got) == want.dtype  # float32 stays float32
        onp.testing.assert_allclose(got, want, atol=1e-12,
                                    rtol=1e-10 if want.dtype == onp.float64 else 1e-5)

def test_the_batched_rules_cover_the_common_primitives():
    from chainrule.numpy.numpy_boxes import array_getitem

    for fun in (np.add, np.subtract, np.multiply, np.divide, np.power, np.matmul, np.tanh,
                np.exp, np.sin, np.sum, np.mean, np.cumsum, np.reshape, np.transpose,
                np.ravel, np.moveaxis, array_getitem, np.flip, np.roll, np.tile, np.sort):
        assert fun in batched_jvps


def test_jacobian_and_hessian_by_batched_sweeps_match_hand_derived():
    rng = onp.random.default_rng(1)
    A, B = rng.standard_normal((6, 6)), rng.standard_normal((9, 4))
    x, z = rng.standard_normal(6), rng.standard_normal(4)
    t = onp.tanh(B @ z)
    onp.testing.assert_allclose(jacobian(lambda z: np.tanh(B @ z))(z),
                                (1 - t * t)[:, None] * B, rtol=1e-12)
    s = onp.tanh(A @ x)
    exact = A.T @ ((-2 * s * (1 - s * s))[:, None] * A) + onp.eye(6)
    f = lambda x: np.sum(np.tanh(A @ x)) + 0.5 * np.sum(x * x)
    onp.testing.assert_allclose(hessian(f)(x), exact, rtol=1e-10, atol=1e-12)
    # a second-order nesting through the batched path: the Jacobian of a Jacobian
    onp.testing.assert_allclose(jacobian(jacobian(lambda z: np.sin(B @ z)))(z),
                                jacfwd(jacfwd(lambda z: np.sin(B @ z)))(z), rtol=1e-10)


def test_jacobian_of_an_empty_input_is_an_empty_block():
    J = jacobian(lambda x: np.sum(x) + np.ones(3))(onp.zeros(0))
    assert J.shape == (3, 0)
