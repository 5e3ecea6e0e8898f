"""Cases the sparse contract's long run found (seed 0, 29 November, ninth session): the
sparse derivative, made at one point and called at others, against the dense one."""

import numpy as onp

import chainrule as cr
import chainrule.numpy as np

POINTS = [onp.array([0.42, 0.11, -0.16, 0.15, 0.17]),
          onp.array([0.75, -1.49, -1.19, 0.52, -0.60]),
          onp.array([-0.02, 0.23, 0.14, 0.12, 0.05])]


def _reversed_in_the_sweep(x):
    v1 = np.cos(x)
    v2 = np.gradient(v1) * v1
    v4 = v2[::-1]  # (a view, taken before sin: the order the bug needed)
    return np.sin(v2) * v4


def test_staged_sweeps_equal_the_dense_jacobian_at_every_point():
    # case 17,962: the staged forward sweep (a jit program whose loop over the seeds is
    # rolled) wrote, after the loop, into a loop variable whose last iteration had taken a
    # view of it (v2[::-1]): the program read the view afterwards. 0.04 off at a later x.
    sparse = cr.SparseJacobian(_reversed_in_the_sweep, POINTS[0], staged=True, mode="forward")
    for x in POINTS + POINTS:
        dense = onp.asarray(cr.jacobian(_reversed_in_the_sweep)(x))
        assert onp.allclose(sparse(x).toarray(), dense, rtol=1e-14, atol=1e-15)


def _times_a_count(x):
    v2 = np.diag(np.outer(x, x[::-1]))
    v3 = np.repeat(v2[:1], x.size) + x
    idx = np.where(np.arctan2(np.round(v3 * 0.1), -1.0) > 0)[0]
    return np.sum(v3 * len(idx))  # (how many: 0 at the first point, 2 at the second)


def test_a_count_of_indices_computed_from_x_guards_the_pattern():
    # case 8,330: where(c)'s indices (nonzero's) were not a decision to sparsity
    # detection, so the Hessian pattern found where their count was 0 (empty) was reused
    x0 = onp.array([-5.75, -2.62, -6.07, -0.68, 0.76, -4.23, 4.28, 5.62])
    x1 = x0 * 0.3 + 1.0
    sparse = cr.SparseHessian(_times_a_count, x0)
    assert "indices" in sparse.guarded_by
    for x in (x0, x1, x0):
        dense = onp.asarray(cr.hessian(_times_a_count)(x))
        assert onp.array_equal(sparse(x).toarray(), dense)
    assert onp.abs(onp.asarray(cr.hessian(_times_a_count)(x1))).max() > 0  # (not vacuous)
