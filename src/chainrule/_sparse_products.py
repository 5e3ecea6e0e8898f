"""Products of a ``scipy.sparse`` matrix and a dense array, each possibly traced (a traced
sparse matrix: ``_sparse_arguments``).

They sit below ``chainrule.numpy`` so that a traced array's ``@`` can use them
(``A @ x``, ``A.T @ x``, ``x @ A`` with ``A`` sparse) without importing
``chainrule.scipy``; ``chainrule.scipy.sparse.matmul`` is the same function. SciPy is
imported when a product is first computed, never at import.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as _np

from ._core.rules import defjvp_batched, defjvp_direct, defsparsity, defvjp_direct
from ._core.tracer import getval, primitive
from ._sparse import _sp, map_pattern, shapes_only
from ._sparse_arguments import SparseMatrixBox, is_sparse_type, stored_coordinates, with_values


def _check_sparse(A, where: str) -> None:
    if not is_sparse_type(type(getval(A))):
        raise TypeError(
            f"chainrule.scipy.sparse.matmul needs a scipy.sparse matrix as its {where} "
            f"operand, got {type(A).__name__}; use chainrule.numpy.matmul for dense ones."
        )


@primitive
def _sparse_dense(A, x):
    return _np.asarray(A @ x)


@primitive
def _dense_sparse(x, A):
    x = _np.asarray(x)
    # x @ A as (A.T @ x.T).T: a sparse matrix on the left keeps the result an ndarray
    return _np.asarray(A.T @ x.T).T


def matmul(a, b):
    """``a @ b`` where exactly one of the two is a ``scipy.sparse`` matrix and the other a
    dense array of one or two dimensions (either traced or not)."""
    if is_sparse_type(type(getval(a))):
        return _sparse_dense(a, b)
    _check_sparse(b, "second")
    return _dense_sparse(a, b)


def _at_entries(A, u, v):
    """The matrix of ``A``'s pattern holding, at stored entry k = (r, c), the sum over j of
    u[r, j] v[c, j] (u, v vectors or matrices): the derivative of sum(u * (A v)) in A's
    stored values."""
    from .numpy import numpy_wrapper as anp  # (chainrule.numpy imports this module)

    pattern = getval(A)
    rows, cols = stored_coordinates(pattern)
    product = u[rows] * v[cols]
    values = product if _np.ndim(u) == 1 else anp.sum(product, axis=1)
    return with_values(pattern, anp.reshape(values, _np.shape(pattern.data)))


def _transpose(x):
    from .numpy import numpy_wrapper as anp

    return anp.transpose(x)


defvjp_direct(_sparse_dense, lambda g, ans, A, x: _at_entries(A, g, x),
              lambda g, ans, A, x: _sparse_dense(A.T, g))  # fmt: skip
defjvp_direct(_sparse_dense, lambda t, ans, A, x: _sparse_dense(t, x),
              lambda t, ans, A, x: _sparse_dense(A, t))  # fmt: skip
defvjp_direct(_dense_sparse, lambda g, ans, x, A: _dense_sparse(g, A.T),
              lambda g, ans, x, A: _at_entries(A, _transpose(x), _transpose(g)))  # fmt: skip
defjvp_direct(_dense_sparse, lambda t, ans, x, A: _dense_sparse(t, A),
              lambda t, ans, x, A: _dense_sparse(x, t))  # fmt: skip
# a batch of tangents (leading axis) of a vector x: one sparse product for the batch
defjvp_batched(
    _sparse_dense, None, lambda t, ans, A, x: _dense_sparse(t, A.T) if _np.ndim(x) == 1 else None
)
defjvp_batched(
    _dense_sparse, lambda t, ans, x, A: _dense_sparse(t, A) if _np.ndim(x) == 1 else None
)


def _kron_identity(matrix, k: int, left: bool):
    sp = _sp()
    eye = sp.identity(k, dtype=bool, format="csr")
    pair = (eye, matrix) if left else (matrix, eye)
    return sp.kron(*pair, format="csr").astype(bool)


def _pattern_of(A):
    coo = _sp().coo_matrix(A)
    return map_pattern(coo.row, coo.col, coo.shape)


def _sparse_dense_pattern(argnum, ans, args, kwargs):
    A, x = args
    if argnum == 0:
        return None  # (in A's values: each output reads a row's, left to dense)
    pattern = _pattern_of(A)  # out[i] depends on x[l] where A[i, l] is stored
    return pattern if _np.ndim(x) == 1 else _kron_identity(pattern, _np.shape(x)[1], False)


def _dense_sparse_pattern(argnum, ans, args, kwargs):
    x, A = args
    if argnum == 1:
        return None
    pattern = _pattern_of(A).T.tocsr()  # out[j] depends on x[l] where A[l, j] is stored
    return pattern if _np.ndim(x) == 1 else _kron_identity(pattern, _np.shape(x)[0], True)


# (a traced A's pattern is fixed: its values are what changes)
defsparsity(_sparse_dense, shapes_only(_sparse_dense_pattern))
defsparsity(_dense_sparse, shapes_only(_dense_sparse_pattern))


# ----------------------------------------------------------------------------- operators
# A traced array's ``@`` asks this table for the product with an operand of a given type:
# ``matmul`` for SciPy's sparse classes, None (the ordinary product) for every other type.

_product_by_type: dict[type, Callable | None] = {}


def product_with(other) -> Callable | None:
    """The product rule for ``box @ other`` / ``other @ box``, or None for NumPy's."""
    kind = type(other)
    try:
        return _product_by_type[kind]
    except KeyError:
        sparse = is_sparse_type(kind) or kind is SparseMatrixBox
        rule = _product_by_type[kind] = matmul if sparse else None
        return rule


def called_by_sparse_dispatch(frame) -> bool:
    """Whether ``frame`` is SciPy's sparse ``@`` dispatch converting its other operand
    with ``numpy.asanyarray``: a traced operand then answers a 0-d object array, on which
    SciPy returns NotImplemented and Python asks the box's ``__rmatmul__`` (the way SciPy
    leaves a product to the other type). An ``spmatrix`` ``*`` (a matrix product there)
    comes the same way and is refused: the box's ``__rmul__`` would multiply elementwise."""
    if frame.f_code.co_name not in ("_matmul_dispatch", "_rmatmul_dispatch") or not str(
        frame.f_globals.get("__name__", "")
    ).startswith("scipy.sparse"):
        return False
    if frame.f_back is not None and frame.f_back.f_code.co_name in ("__mul__", "__rmul__"):
        raise TypeError(
            "A * x with a scipy.sparse matrix A (spmatrix) is a matrix product, which "
            "chainrule takes only as A @ x (or chainrule.scipy.sparse.matmul(A, x)) for a "
            "traced x: write A @ x."
        )
    return True
