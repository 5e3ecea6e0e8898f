"""Specs for products and contractions: dot, matmul, inner, outer, vdot, tensordot, einsum,
kron, cross."""

import warnings

import numpy as onp

import chainrule.numpy as np

from . import Case, make

C = onp.complex128


def pair(name, fun, ref, a, b, dtype=onp.float64, argnums=(0, 1), **kwargs):
    return Case(name, fun, (make(a, dtype, seed=1), make(b, dtype, seed=2)), kwargs,
                argnums=argnums, ref=ref)


def ein(spec, *shapes, dtype=onp.float64):
    args = tuple(make(s, dtype, seed=i) for i, s in enumerate(shapes))
    return Case("einsum", lambda *ops: np.einsum(spec, *ops), args,
                argnums=tuple(range(len(shapes))), ref=lambda *ops: onp.einsum(spec, *ops),
                label=spec.replace("->", "_to_").replace("...", "E").replace(",", "_"))


def _numpy_crosses(a, b) -> bool:
    """Whether this NumPy takes vectors of these shapes in cross: NumPy 2.5 refuses
    2-element vectors (deprecated since 2.0), so those cases exist only where it takes them."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            onp.cross(onp.ones(a), onp.ones(b))
    except ValueError:
        return False
    return True


CASES = [
    *[pair("dot", np.dot, onp.dot, a, b) for a, b in
      [((), (3,)), ((2, 3), ()), ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)),
       ((2, 3), (4, 3, 2))]],
    pair("dot", np.dot, onp.dot, (2, 3), (3,), dtype=C),
    pair("dot", np.dot, onp.dot, (2, 3), (3, 2), dtype=onp.float32),
    *[pair("matmul", np.matmul, onp.matmul, a, b) for a, b in
      [((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((2, 2, 3), (3, 4)),
       ((2, 1, 2, 3), (3, 3, 2)), ((3,), (2, 3, 2))]],
    pair("matmul", np.matmul, onp.matmul, (2, 3), (3, 2), dtype=C),
    *[pair("inner", np.inner, onp.inner, a, b) for a, b in
      [((), (3,)), ((3,), (3,)), ((2, 3), (3,)), ((2, 3), (4, 3))]],
    *[pair("outer", np.outer, onp.outer, a, b) for a, b in
      [((3,), (2,)), ((2, 2), (3,)), ((), (2,))]],
    *[pair("vdot", np.vdot, onp.vdot, a, b) for a, b in [((3,), (3,)), ((2, 3), (3, 2))]],
    pair("vdot", np.vdot, onp.vdot, (3,), (3,), dtype=C),
    pair("tensordot", np.tensordot, onp.tensordot, (2, 3, 4), (3, 4, 2)),
    pair("tensordot", np.tensordot, onp.tensordot, (2, 3), (3, 4), axes=1),
    pair("tensordot", np.tensordot, onp.tensordot, (2, 3, 4), (4, 2), axes=([0, 2], [1, 0])),
    pair("tensordot", np.tensordot, onp.tensordot, (2, 3), (4,), axes=0),
    ein("ij,jk->ik", (2, 3), (3, 4)),
    ein("ij,jk", (2, 3), (3, 4)),
    ein("ba,ac", (2, 3), (3, 4)),
    ein("ii->i", (3, 3)),
    ein("ii", (3, 3)),
    ein("iji->j", (2, 3, 2)),
    ein("ij->", (2, 3)),
    ein("ij->ji", (2, 3)),
    ein("i,i->", (3,), (3,)),
    ein("i,j->ij", (3,), (2,)),
    ein("ij,j->i", (2, 3), (1,)),
    ein("ij,ij,ij->i", (2, 3), (2, 3), (2, 3)),
    ein("...ij,...jk->...ik", (2, 2, 3), (3, 2)),
    ein("...i,...i", (2, 3), (2, 3)),
    ein("i...->...", (2, 3, 2)),
    ein("ijk,jl->ikl", (2, 3, 2), (3, 2)),
    ein("ij,jk->ik", (2, 3), (3, 2), dtype=C),
    Case("einsum", lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]),
         (make((2, 3)), make((3, 4))), argnums=(0, 1),
         ref=lambda a, b: onp.einsum(a, [0, 1], b, [1, 2], [0, 2]), label="sublist"),
    Case("einsum", lambda a: np.einsum(a, [Ellipsis, 0, 0]),
         (make((2, 3, 3)),), ref=lambda a: onp.einsum(a, [Ellipsis, 0, 0]), label="sublist-ell"),
    *[pair("kron", np.kron, onp.kron, a, b) for a, b in
      [((2,), (3,)), ((2, 2), (2, 3)), ((2,), (2, 2)), ((2, 1, 2), (2, 2))]],
    *[pair("cross", np.cross, onp.cross, a, b) for a, b in
      [((3,), (3,)), ((2, 3), (3,)), ((2,), (2,)), ((2, 2), (2, 3)), ((4, 3), (4, 3))]
      if _numpy_crosses(a, b)],
    pair("cross", np.cross, onp.cross, (3, 2), (3, 2), axis=0),
    pair("cross", np.cross, onp.cross, (3, 2), (2, 3), axisa=0, axisb=1, axisc=0),
    pair("cross", np.cross, onp.cross, (3,), (3,), dtype=C),
]
