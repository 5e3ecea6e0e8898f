"""Specs for numpy.linalg: decompositions on real, complex, stacked and float32 input.

Matrices are well conditioned (``general``: a + 3I, ``spd``: b b^H + nI). Outputs with
gauge freedom (complex eigen/singular vectors, LAPACK's completions) are checked
through gauge-invariant functions of them; real vectors are checked directly
(their sign is locally constant).
"""

import numpy as onp

import chainrule.numpy as np

from . import Case, make

la, ola = np.linalg, onp.linalg
C = onp.complex128


def general(shape, dtype=onp.float64, seed=0):
    return (make(shape, dtype, -1.0, 1.0, seed) + 3 * onp.eye(shape[-1])).astype(dtype)


def spd(shape, dtype=onp.float64, seed=0):
    b = make(shape, dtype, -1.0, 1.0, seed)
    return (b @ onp.conj(onp.swapaxes(b, -1, -2)) + shape[-1] * onp.eye(shape[-1])).astype(dtype)


def real_spectrum(n=3, seed=0):
    """A non-symmetric real matrix with distinct real eigenvalues."""
    return onp.diag(onp.arange(1.0, n + 1)) + 0.2 * make((n, n), seed=seed)


def rotation_spectrum():
    """A real matrix with a complex-conjugate pair of eigenvalues."""
    return onp.array([[1.0, -2.0, 0.3], [2.0, 1.0, 0.1], [0.2, -0.4, 3.0]])


def indefinite():
    """A symmetric matrix with eigenvalues of both signs (distinct in absolute value)."""
    q = onp.linalg.qr(make((3, 3), seed=9))[0]
    return q @ onp.diag([3.0, -1.0, 0.5]) @ q.T


def cases_for(name, fun, ref, inputs, argnums=(0,), order=2, **kwargs):
    return [Case(name, fun, args, kwargs, argnums=argnums, ref=ref, order=order)
            for args in inputs]


def both(f):
    """(chainrule version, NumPy version) of a function written against a namespace."""
    return (lambda *a, **k: f(np, *a, **k)), (lambda *a, **k: f(onp, *a, **k))


eigh_vectors, eigh_vectors_ref = both(lambda xp, a, **k: flat_of(xp, *xp.linalg.eigh(a, **k)))
eigh_gauge, eigh_gauge_ref = both(
    lambda xp, a: flat_of(xp, *_projectors(xp, *xp.linalg.eigh(a))))
eigh_of_sum, eigh_of_sum_ref = both(
    lambda xp, a: flat_of(xp, *xp.linalg.eigh(a + xp.swapaxes(a, -1, -2))))
eig_vectors, eig_vectors_ref = both(lambda xp, a: flat_of(xp, *xp.linalg.eig(a)))
eig_gauge, eig_gauge_ref = both(
    lambda xp, a: flat_of(xp, xp.linalg.eig(a)[0], xp.abs(xp.linalg.eig(a)[1]) ** 2))
svd_all, svd_all_ref = both(lambda xp, a, **k: flat_of(xp, *xp.linalg.svd(a, **k)))
svd_gauge, svd_gauge_ref = both(lambda xp, a: flat_of(xp, *_svd_invariants(xp, a)))
qr_all, qr_all_ref = both(lambda xp, a, **k: flat_of(xp, *xp.linalg.qr(a, **k)))
qr_gauge, qr_gauge_ref = both(lambda xp, a, **k: flat_of(xp, *_qr_invariants(xp, a, **k)))
slogdet_all, slogdet_all_ref = both(lambda xp, a: flat_of(xp, *xp.linalg.slogdet(a)))


def flat_of(xp, *parts):
    return xp.concatenate([xp.ravel(p) for p in parts])


def _projectors(xp, w, v):
    """w and V diag(sin w) V^H: independent of the eigenvectors' phases."""
    vh = xp.conj(xp.swapaxes(v, -1, -2))
    return w, (v * xp.sin(w)[..., None, :]) @ vh


def _qr_invariants(xp, a, mode):
    """Q1, R and the projector onto the completion (independent of its basis)."""
    q, r = xp.linalg.qr(a, mode=mode)
    k = a.shape[-1]
    q1, q2 = q[..., :, :k], q[..., :, k:]
    return xp.abs(q1) ** 2, xp.abs(r) ** 2, q2 @ xp.conj(xp.swapaxes(q2, -1, -2))


def _svd_invariants(xp, a):
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return s, (u * xp.cos(s)[..., None, :]) @ vh, xp.abs(u) ** 2, xp.abs(vh) ** 2


tall, wide, square = make((4, 3)), make((3, 4), seed=1), general((3, 3))
b_vec, b_mat = make((3,), seed=2), make((3, 2), seed=3)

CASES = [
    # ------------------------------------------------------------------ det, slogdet, inv
    *cases_for("det", la.det, ola.det, [(square,), (general((2, 3, 3)),), (general((3, 3), C),),
                                         (general((3, 3), onp.float32),)]),
    *cases_for("slogdet", slogdet_all, slogdet_all_ref,
               [(square,), (general((2, 3, 3), seed=1),), (general((3, 3), C),),
                (-general((3, 3)),)]),
    *cases_for("inv", la.inv, ola.inv, [(square,), (general((2, 3, 3)),), (general((3, 3), C),),
                                         (general((3, 3), onp.float32),)]),
    *cases_for("matrix_transpose", la.matrix_transpose, ola.matrix_transpose,
               [(make((2, 3, 4)),), (make((3, 2), C),)]),
    # ------------------------------------------------------------------ solve
    *cases_for("solve", la.solve, ola.solve, argnums=(0, 1), inputs=[
        (square, b_vec), (square, b_mat), (general((2, 3, 3)), b_vec),
        (general((2, 3, 3)), make((2, 3, 2))), (square, make((2, 3, 1))),
        (general((3, 3), C), make((3,), C))]),
    # ------------------------------------------------------------------ matrix_power
    *[Case("matrix_power", la.matrix_power, (general((3, 3)) / 3, n), ref=ola.matrix_power)
      for n in (0, 1, 3, -2)],
    Case("matrix_power", la.matrix_power, (general((2, 3, 3), C) / 3, 2), ref=ola.matrix_power),
    # ------------------------------------------------------------------ cholesky
    *cases_for("cholesky", la.cholesky, ola.cholesky,
               [(spd((3, 3)),), (spd((2, 3, 3)),), (spd((3, 3), C),), (spd((3, 3), onp.float32),)]),
    *cases_for("cholesky", la.cholesky, ola.cholesky, [(spd((3, 3)),), (spd((3, 3), C),)],
               upper=True),
    # ------------------------------------------------------------------ eigh, eigvalsh
    *cases_for("eigh", eigh_vectors, eigh_vectors_ref, [(spd((3, 3)),), (spd((2, 3, 3)),)]),
    *cases_for("eigh", eigh_vectors, eigh_vectors_ref, [(spd((3, 3)),)], UPLO="U"),
    *cases_for("eigh", eigh_of_sum, eigh_of_sum_ref, [(make((3, 3)),)]),
    *cases_for("eigh", eigh_gauge, eigh_gauge_ref, [(spd((3, 3), C),), (spd((2, 3, 3), C),)]),
    *cases_for("eigvalsh", la.eigvalsh, ola.eigvalsh,
               [(spd((3, 3)),), (spd((2, 3, 3)),), (spd((3, 3), C),)]),
    *cases_for("eigvalsh", la.eigvalsh, ola.eigvalsh, [(spd((3, 3)),)], UPLO="U"),
    *cases_for("eigh", eigh_vectors, eigh_vectors_ref, [(spd((3, 3), onp.float32),)]),
    *cases_for("qr", qr_all, qr_all_ref, [(make((4, 3), onp.float32),)]),
    # ------------------------------------------------------------------ eig, eigvals
    *cases_for("eig", eig_vectors, eig_vectors_ref,
               [(real_spectrum(),), (onp.stack([real_spectrum(), real_spectrum(seed=1)]),)]),
    *cases_for("eig", eig_gauge, eig_gauge_ref,
               [(rotation_spectrum(),), (general((3, 3), C),)]),
    *cases_for("eigvals", la.eigvals, ola.eigvals,
               [(real_spectrum(),), (rotation_spectrum(),), (general((2, 3, 3), C),)]),
    # ------------------------------------------------------------------ svd
    *cases_for("svd", svd_all, svd_all_ref, [(tall,), (wide,), (square,), (make((2, 4, 3)),)],
               full_matrices=False),
    *cases_for("svd", svd_all, svd_all_ref, [(tall,), (wide,), (make((2, 3, 4)),)]),
    *cases_for("svd", svd_gauge, svd_gauge_ref, [(make((4, 3), C),), (make((3, 4), C),),
                                                 (make((2, 3, 3), C),)]),
    *cases_for("svd", la.svd, ola.svd, [(tall,), (make((3, 4), C),)], compute_uv=False),
    *cases_for("svd", svd_all, svd_all_ref, [(spd((3, 3)),), (indefinite(),)], hermitian=True),
    *cases_for("svd", svd_all, svd_all_ref, [(make((4, 3), onp.float32),)], full_matrices=False),
    # ------------------------------------------------------------------ qr
    *cases_for("qr", qr_all, qr_all_ref, [(tall,), (wide,), (square,), (make((2, 4, 3)),),
                                          (make((4, 3), C),), (make((3, 4), C),)]),
    *cases_for("qr", qr_all, qr_all_ref, [(wide,), (square,), (tall,), (make((2, 4, 3)),)],
               mode="complete"),
    *cases_for("qr", qr_gauge, qr_gauge_ref, [(make((5, 3)),), (make((5, 3), C),)],
               mode="complete"),
    *cases_for("qr", la.qr, ola.qr, [(tall,), (make((3, 4), C),)], mode="r"),
    # ------------------------------------------------------------------ pinv, lstsq
    *cases_for("pinv", la.pinv, ola.pinv, [(tall,), (wide,), (make((2, 4, 3)),),
                                           (make((3, 4), C),)]),
    *cases_for("pinv", la.pinv, ola.pinv, [(spd((3, 3)),), (spd((3, 3), C),), (indefinite(),)],
               hermitian=True),
    Case("lstsq", lambda a, b: la.lstsq(a, b)[0], (make((4, 3)), make((4,), seed=4)),
         argnums=(0, 1), ref=lambda a, b: ola.lstsq(a, b)[0]),
    Case("lstsq", lambda a, b: flat_of(np, *[p for p in la.lstsq(a, b) if onp.ndim(p)]),
         (make((4, 3)), make((4, 2), seed=4)), argnums=(0, 1),
         ref=lambda a, b: flat_of(onp, *[p for p in ola.lstsq(a, b) if onp.ndim(p)])),
    Case("lstsq", lambda a, b: la.lstsq(a, b)[0], (make((3, 4), C), make((3,), C, seed=4)),
         argnums=(0, 1), ref=lambda a, b: ola.lstsq(a, b)[0]),
    # ------------------------------------------------------------------ compositions
    Case("multi_dot", lambda a, b, c: la.multi_dot([a, b, c]),
         (make((3,)), make((3, 4), seed=1), make((4, 2), seed=2)), argnums=(0, 1, 2),
         ref=lambda a, b, c: ola.multi_dot([a, b, c])),
    Case("svdvals", la.svdvals, (make((2, 4, 3)),), ref=ola.svdvals),
    *[Case("cond", la.cond, (general((3, 3)),), dict(p=p), ref=ola.cond)
      for p in (None, -2, "fro", 1, -onp.inf)],
    Case("vecdot", la.vecdot, (make((2, 3), C), make((3,), C, seed=1)), argnums=(0, 1),
         ref=ola.vecdot),
    Case("matmul", la.matmul, (make((2, 3, 4)), make((4, 2), seed=1)), argnums=(0, 1),
         ref=ola.matmul),
    Case("tensorinv", la.tensorinv, (general((6, 6)).reshape(2, 3, 6),), dict(ind=2),
         ref=ola.tensorinv),
    Case("tensorsolve", la.tensorsolve, (general((6, 6)).reshape(2, 3, 2, 3), make((2, 3))),
         argnums=(0, 1), ref=ola.tensorsolve),
    Case("tensorsolve", la.tensorsolve, (general((6, 6)).reshape(2, 3, 2, 3), make((3, 2))),
         dict(axes=(0, 1)), argnums=(0, 1), ref=ola.tensorsolve),
]

# ---------------------------------------------------------------------- norms
_vec, _mat, _cube = make((5,), seed=5), make((3, 4), seed=6), make((2, 3, 4), seed=7)
CASES += [
    *[Case("norm", la.norm, (_vec,), dict(ord=o), ref=ola.norm)
      for o in (None, 1, 2, onp.inf, -onp.inf, 0, 3, 0.5, -1.5)],
    *[Case("norm", la.norm, (_mat,), dict(ord=o), ref=ola.norm)
      for o in (None, "fro", "nuc", 1, -1, 2, -2, onp.inf, -onp.inf)],
    *[Case("norm", la.norm, (_cube,), dict(ord=o, axis=ax, keepdims=kd), ref=ola.norm)
      for o, ax, kd in [(None, None, False), (None, None, True), (None, 1, False), (3, -1, True),
                        (onp.inf, 0, False), ("fro", (0, 2), True), ("nuc", (2, 1), False),
                        (2, (0, 1), True), (-onp.inf, (-1, 0), False), (1, (1, 2), False)]],
    *[Case("norm", la.norm, (make(s, C, seed=8),), dict(ord=o), ref=ola.norm)
      for s, o in [((4,), None), ((4,), 1), ((4,), onp.inf), ((4,), 3), ((3, 3), "nuc"),
                   ((3, 3), 2), ((3, 3), 1), ((3, 3), "fro"), ((3, 3), -2), ((3, 3), -onp.inf)]],
    Case("norm", la.norm, (make((5,), onp.float32, seed=5),), ref=ola.norm),
    *[Case("vector_norm", la.vector_norm, (_cube,), kw, ref=ola.vector_norm)
      for kw in [{}, dict(ord=1), dict(ord=onp.inf, keepdims=True), dict(axis=(0, 2), ord=3),
                 dict(axis=1, ord=-onp.inf), dict(axis=-1, ord=0)]],
    *[Case("matrix_norm", la.matrix_norm, (_cube,), kw, ref=ola.matrix_norm)
      for kw in [{}, dict(ord="nuc"), dict(ord=2, keepdims=True), dict(ord=-2), dict(ord=1),
                 dict(ord=-onp.inf, keepdims=True)]],
]
