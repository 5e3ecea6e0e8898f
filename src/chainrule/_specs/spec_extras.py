"""Specs for the names that are not one NumPy function: autograd's extras, the functional
update forms, methods, and numpy.linalg's aliases of top-level functions."""

import numpy as onp

import chainrule.numpy as np

from . import Case, make

X = make((2, 3), seed=3)
V = make((3,), seed=4)

CASES = [
    Case("make_diagonal", lambda d: np.make_diagonal(d, 0, -1, -2), (make((2, 3)),)),
    Case("index_update", lambda x, v: np.index_update(x, (0, slice(1, 3)), v),
         (X, make((2,), seed=5)), argnums=(0, 1)),
    Case("index_add", lambda x, v: np.index_add(x, ([0, 0, 1], [2, 2, 0]), v),
         (X, make((3,), seed=6)), argnums=(0, 1)),
    Case("concat", lambda x, y: np.concat([x, y], axis=1), (X, make((2, 2))),
         argnums=(0, 1), ref=lambda x, y: onp.concat([x, y], axis=1)),
    Case("astype", lambda x: np.real(x.astype(onp.complex128) * (1 + 2j))
         * x.astype(onp.longdouble).astype(float), (X,)),
    Case("indexing", lambda x: x[1, ::-1] * x[:, [0, 0, 2]].sum(), (X,)),
    Case("linalg.cross", np.linalg.cross, (make((2, 3), seed=7), V), argnums=(0, 1),
         ref=onp.linalg.cross),
    Case("linalg.diagonal", np.linalg.diagonal, (make((2, 3, 3), seed=8),),
         ref=onp.linalg.diagonal),
    Case("linalg.matmul", np.linalg.matmul, (X, make((3, 2), seed=9)), argnums=(0, 1),
         ref=onp.linalg.matmul),
    Case("linalg.outer", np.linalg.outer, (V, make((2,), seed=10)), argnums=(0, 1),
         ref=onp.linalg.outer),
    Case("linalg.tensordot", np.linalg.tensordot, (X, make((3, 2), seed=11)), {"axes": 1},
         argnums=(0, 1), ref=onp.linalg.tensordot),
    Case("linalg.trace", np.linalg.trace, (make((2, 3, 3), seed=12),), ref=onp.linalg.trace),
]

_P = make((7,), seed=13)
CASES += [
    Case("piecewise", lambda x: np.piecewise(x, [x < 0, x >= 1], [lambda v: v**2, np.sin,
                                                                  lambda v: 3 * v]),
         (_P,), ref=lambda x: onp.piecewise(x, [x < 0, x >= 1], [lambda v: v**2, onp.sin,
                                                                   lambda v: 3 * v])),
    Case("piecewise", lambda x: np.piecewise(x, x > 0.5, [np.exp, 0.25]), (_P,),
         ref=lambda x: onp.piecewise(x, x > 0.5, [onp.exp, 0.25]), label="constant"),
]

CASES += [
    Case("unique", np.unique, (make((6,), seed=14),), ref=onp.unique),
    Case("unique", lambda x: np.unique(x, axis=0), (make((3, 2), seed=15),),
         ref=lambda x: onp.unique(x, axis=0), label="axis"),
]
