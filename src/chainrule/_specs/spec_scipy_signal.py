"""Specs for chainrule.scipy.signal.convolve: SciPy's modes in 1-d to 3-d, and
autograd's axes/dot_axes form (checked against an explicit sum)."""

import numpy as onp

from . import Case, make

try:
    import scipy.signal as ssg

    import chainrule.scipy.signal as sg
except ImportError:  # SciPy is optional: no cases without it
    ssg = None


def _convolve_loops(A, B):
    """Reference for axes=([2], [0]), dot_axes=([1], [1]): sum_d conv(A[i, d], B[:, d, j])."""
    out = onp.zeros((A.shape[0], B.shape[2], A.shape[2] + B.shape[0] - 1))
    for i in range(A.shape[0]):
        for j in range(B.shape[2]):
            for d in range(A.shape[1]):
                out[i, j] += onp.convolve(A[i, d], B[:, d, j])
    return out


def _cases():
    cases = []
    for sa, sb in [((6,), (3,)), ((3,), (5,)), ((4, 5), (2, 3)), ((3, 3, 2), (2, 2, 2))]:
        for mode in ("full", "valid", "same"):
            cases.append(Case("signal.convolve", sg.convolve, (make(sa, seed=1), make(sb, seed=2)),
                              dict(mode=mode), argnums=(0, 1), ref=ssg.convolve))
    A, B = make((3, 2, 5), seed=3), make((3, 2, 2), seed=4)
    cases.append(Case("signal.convolve",
                      lambda a, b: sg.convolve(a, b, axes=([2], [0]), dot_axes=([1], [1])),
                      (A, B), argnums=(0, 1), ref=_convolve_loops, label="dot_axes"))
    for mode in ("valid", "same"):
        cases.append(Case("signal.convolve",
                          lambda a, b, mode=mode: sg.convolve(a, b, axes=([2], [0]),
                                                              dot_axes=([1], [1]), mode=mode),
                          (A, B), argnums=(0, 1), label=f"dot_axes-{mode}"))
    cases.append(Case("signal.convolve", lambda a, b: sg.convolve(a, b, axes=([1, 2], [0, 1])),
                      (make((2, 3, 4), seed=5), make((2, 2), seed=6)), argnums=(0, 1),
                      label="batched"))
    return cases


CASES = [] if ssg is None else _cases()
