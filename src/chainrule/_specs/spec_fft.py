"""Specs for numpy.fft: every transform with n/s (crop and pad), axis/axes and norm,
on real, complex and float32 input. All are linear, so order 2 checks the rules'
own derivatives (the transposed transforms)."""

import itertools

import numpy as onp

import chainrule.numpy as np

from . import Case, make

C = onp.complex128
NORMS = (None, "ortho", "forward")


def cases(name, inputs, kwargs_list):
    fun, ref = getattr(np.fft, name), getattr(onp.fft, name)
    return [Case(name, fun, (x,), kw, ref=ref) for x, kw in itertools.product(inputs, kwargs_list)]


vec_r, vec_c = make((6,)), make((6,), C, seed=1)
mat_r, mat_c = make((4, 5), seed=2), make((4, 5), C, seed=3)
cube_r, cube_c = make((2, 3, 4), seed=4), make((2, 3, 4), C, seed=5)
half_c = make((4, 4), C, seed=6)  # a half spectrum (for irfft, hfft)

CASES = [
    # ------------------------------------------------------------------ complex 1-D
    *cases(
        "fft",
        [vec_r, vec_c, mat_c],
        [{}, dict(n=4), dict(n=8, axis=0), *({"norm": n} for n in NORMS)],
    ),
    *cases(
        "ifft", [vec_c, mat_r], [{}, dict(n=3, norm="ortho"), dict(n=7, axis=0, norm="forward")]
    ),
    *cases("fft", [make((6,), onp.float32), make((6,), onp.complex64)], [{}]),
    # ------------------------------------------------------------------ complex n-D
    *cases("fft2", [mat_r, cube_c], [{}, dict(s=(3, 6)), dict(axes=(0, -1), norm="ortho")]),
    *cases("ifft2", [mat_c], [{}, dict(s=(5, 3), norm="forward")]),
    *cases(
        "fftn", [cube_r, cube_c], [{}, dict(axes=(0, 2)), dict(s=(4, 2), axes=(2, 0), norm="ortho")]
    ),
    *cases("ifftn", [cube_c], [{}, dict(s=(3, 5), axes=(1, 2)), dict(axes=(1,), norm="forward")]),
    # ------------------------------------------------------------------ real 1-D
    *cases(
        "rfft", [vec_r, mat_r], [{}, dict(n=5), dict(n=8, axis=0), *({"norm": n} for n in NORMS)]
    ),
    *cases("rfft", [make((6,), onp.float32)], [{}]),
    *cases(
        "irfft",
        [half_c],
        [{}, dict(n=7), dict(n=4, axis=0), dict(n=9, norm="ortho"), dict(norm="forward")],
    ),
    *cases(
        "hfft", [half_c], [{}, dict(n=7), dict(n=5, axis=0, norm="ortho"), dict(norm="forward")]
    ),
    *cases(
        "ihfft",
        [vec_r, mat_r],
        [{}, dict(n=5), dict(n=8, axis=0, norm="ortho"), dict(norm="forward")],
    ),
    # ------------------------------------------------------------------ real n-D
    *cases("rfft2", [mat_r, cube_r], [{}, dict(s=(3, 6)), dict(axes=(0, 1), norm="ortho")]),
    *cases(
        "irfft2", [half_c, make((2, 3, 4), C, seed=7)], [{}, dict(s=(5, 5)), dict(norm="forward")]
    ),
    *cases("rfftn", [cube_r], [{}, dict(axes=(0, 2)), dict(s=(3, 5), axes=(2, 1), norm="ortho")]),
    *cases(
        "irfftn",
        [make((2, 3, 4), C, seed=8)],
        [
            {},
            dict(axes=(1, 0)),
            dict(s=(2, 4, 7), axes=(0, 1, 2)),
            dict(s=(4, 3), axes=(0, 2), norm="ortho"),
        ],
    ),
    # ------------------------------------------------------------------ shifts
    *cases("fftshift", [vec_r, cube_c], [{}]),
    *cases("fftshift", [cube_c], [dict(axes=1), dict(axes=(0, 2))]),
    *cases("ifftshift", [make((5,)), cube_r], [{}, dict(axes=-1)]),
    *cases("ifftshift", [cube_r], [dict(axes=(0, 1))]),
]
