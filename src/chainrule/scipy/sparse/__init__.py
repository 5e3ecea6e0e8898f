"""chainrule.scipy.sparse: ``scipy.sparse`` matrices as constant operands of traced
products, and differentiable sparse solves (``linalg.spsolve``).

``matmul(A, x)`` / ``matmul(x, A)`` take one ``scipy.sparse`` matrix or array (CSR, CSC,
COO ...; ``sparray`` and ``spmatrix``) as a constant and a dense, possibly traced, array:
VJP ``A.T @ g`` (or ``g @ A.T``), JVP ``A @ t``, and the pattern of ``A`` for sparsity
detection. Write ``matmul(A, x)`` rather than ``A @ x``: SciPy converts the other operand
of ``@`` to a NumPy array first, which a traced value refuses.
"""

from __future__ import annotations

import numpy as _np
import scipy.sparse as _sp

from ..._core.rules import defjvp_batched, defsparsity, defvjp_direct
from ..._core.rules import defjvp_direct as defjvp
from ..._core.tracer import primitive
from ..._sparse import map_pattern
from . import linalg

__all__ = ["matmul", "linalg"]


def _check_constant(A, where: str) -> None:
    if not _sp.issparse(A):
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
    """``a @ b`` where exactly one of the two is a ``scipy.sparse`` matrix (a constant)
    and the other a dense array of one or two dimensions (traced or not)."""
    if _sp.issparse(a):
        _check_constant(a, "first")
        return _sparse_dense(a, b)
    _check_constant(b, "second")
    return _dense_sparse(a, b)


defvjp_direct(_sparse_dense, None, lambda g, ans, A, x: _sparse_dense(A.T, g))
defjvp(_sparse_dense, None, lambda t, ans, A, x: _sparse_dense(A, t))
defvjp_direct(_dense_sparse, lambda g, ans, x, A: _dense_sparse(g, A.T))
defjvp(_dense_sparse, lambda t, ans, x, A: _dense_sparse(t, A))
# a batch of tangents (leading axis) of a vector x: one sparse product for the batch
defjvp_batched(
    _sparse_dense, None, lambda t, ans, A, x: _dense_sparse(t, A.T) if _np.ndim(x) == 1 else None
)
defjvp_batched(
    _dense_sparse, lambda t, ans, x, A: _dense_sparse(t, A) if _np.ndim(x) == 1 else None
)


def _kron_identity(matrix, k: int, left: bool):
    eye = _sp.identity(k, dtype=bool, format="csr")
    pair = (eye, matrix) if left else (matrix, eye)
    return _sp.kron(*pair, format="csr").astype(bool)


def _pattern_of(A):
    coo = _sp.coo_matrix(A)
    return map_pattern(coo.row, coo.col, coo.shape)


def _sparse_dense_pattern(argnum, ans, args, kwargs):
    A, x = args
    pattern = _pattern_of(A)  # out[i] depends on x[l] where A[i, l] is stored
    return pattern if _np.ndim(x) == 1 else _kron_identity(pattern, _np.shape(x)[1], False)


def _dense_sparse_pattern(argnum, ans, args, kwargs):
    x, A = args
    pattern = _pattern_of(A).T.tocsr()  # out[j] depends on x[l] where A[l, j] is stored
    return pattern if _np.ndim(x) == 1 else _kron_identity(pattern, _np.shape(x)[0], True)


defsparsity(_sparse_dense, _sparse_dense_pattern)
defsparsity(_dense_sparse, _dense_sparse_pattern)
