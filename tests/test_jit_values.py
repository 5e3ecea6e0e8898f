"""chainrule.jit on derivatives whose rules read input values (which operand of a
maximum won, where a reduction's extreme is, which entries are zero or nan): a later call
with other values must not reuse the trace's answers. Each jitted derivative is compared
with eager evaluation, bit for bit, over inputs that change those decisions."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np


def _bits(a, b):
    a, b = onp.asarray(a), onp.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes(), (a, b)


CASES = {
    "maximum": lambda x: np.sum(np.maximum(x, 0.0) * x),
    "minimum": lambda x: np.sum(np.minimum(x, x[::-1])),
    "fmax": lambda x: np.sum(np.fmax(x, 0.1)),
    "clip": lambda x: np.sum(np.clip(x, -0.5, 0.5) ** 2),
    "max": lambda x: np.max(x) * 2.0,
    "min axis": lambda x: np.sum(np.min(x.reshape(2, 3), axis=1)),
    "ptp": lambda x: np.ptp(x),
    "median": lambda x: np.median(x),
    "nansum": lambda x: np.nansum(np.where(x > 1.0, np.nan, x) * x),
    "prod": lambda x: np.prod(np.where(x > 0.5, 0.0, x)),
    "norm inf": lambda x: np.linalg.norm(x, np.inf),
    "norm 1": lambda x: np.linalg.norm(x, 1),
    "norm 2": lambda x: np.linalg.norm(np.where(x > 0, x, 0.0)),
    "matrix norm 1": lambda x: np.linalg.norm(x.reshape(2, 3), 1),
    "sinc": lambda x: np.sum(np.sinc(np.where(x > 0, x, 0.0))),
    "sort": lambda x: np.sum(np.sort(x) * np.arange(6.0)),
    "unique": lambda x: np.sum(np.unique(np.round(x)) ** 2) + np.sum(x),
    "piecewise": lambda x: np.sum(np.piecewise(x, [x < 0, x >= 0], [np.sin, lambda v: v**2])),
    "interp": lambda x: np.sum(np.interp(x, onp.array([-1.0, 0.0, 1.0]),
                                         onp.array([0.0, 2.0, 1.0]))),
    "astype int": lambda x: np.sum(x * (x > 0).astype(int)),
    "asarray bool": lambda x: np.sum(x * onp.asarray(x > 0.5, dtype=bool)),
}

INPUTS = [onp.array(v) for v in (
    [0.3, -1.2, 2.0, 0.7, -0.1, 1.5],
    [-0.3, 1.2, -2.0, 0.9, 0.1, -1.5],
    [1.0, 1.0, -3.0, 0.2, 0.6, 0.0],
    [2.5, -0.4, 0.45, -0.6, 0.8, 0.55],
)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_jitted_derivatives_follow_the_values(name):
    f = CASES[name]
    for transform in (cr.grad, cr.hessian):
        jitted = cr.jit(transform(f), max_variants=50)
        for x in INPUTS + INPUTS[::-1]:
            _bits(jitted(x), transform(f)(x))


def test_jitted_jacobian_of_sort_follows_the_order():
    f = lambda x: np.sort(x) ** 2
    j = cr.jit(cr.jacobian(f))
    for x in INPUTS + INPUTS[::-1]:
        _bits(j(x), cr.jacobian(f)(x))


def test_plain_answers_of_linalg_follow_the_values():
    rank = cr.jit(lambda a, b: np.linalg.lstsq(a, b)[2])
    full = onp.eye(3)
    low = onp.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 1.0]])
    b = onp.ones(3)
    for a in (full, low, full):
        assert rank(a, b) == onp.linalg.lstsq(a, b)[2]
