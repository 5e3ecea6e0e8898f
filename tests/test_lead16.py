"""The lead's fixes of the sixteenth session (29 November)."""

from __future__ import annotations

import numpy as onp

import chainrule as cr
import chainrule.numpy as np
from chainrule._transforms.vmap import batched_runs_first


def _residual(camera, point):
    # (a per-observation function with a Python decision, as GradBench ba's)
    p = point[:2] * camera[0] + camera[1:3]
    if camera[0] > 0:
        return np.sin(p) * np.sum(point)
    return np.cos(p)


def test_jit_of_vmap_traced_first_stages_the_batched_run_only():
    # a first call of vmap in a process times examples alone before its batched run; under
    # jit's trace those examples were staged as calls of their own (GradBench ba: 8,804
    # staged calls where 2,887 were the batch's, a program too long to compile)
    rng = onp.random.default_rng(3)
    cams, points = rng.normal(size=(40, 3)), rng.normal(size=(40, 3))
    cams[:, 0] = onp.abs(cams[:, 0]) + 0.1

    def jacobian(c, p):
        return cr.vmap(cr.jacobian(_residual, argnum=(0, 1)))(c, p)

    fresh = cr.jit(jacobian).lower(cams, points).source
    with batched_runs_first():
        batched = cr.jit(jacobian).lower(cams, points).source
    assert fresh == batched
    jitted = cr.jit(jacobian)
    loop = [cr.jacobian(_residual, argnum=(0, 1))(c, p) for c, p in zip(cams, points)]
    for _ in range(3):
        got = jitted(cams, points)
        for k in range(2):
            onp.testing.assert_array_equal(got[k], onp.stack([row[k] for row in loop]))
