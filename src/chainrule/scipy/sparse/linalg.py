"""Differentiable sparse solves: ``spsolve(A, b)`` with respect to ``b`` (``A`` a
constant ``scipy.sparse`` matrix), and ``spsolve_values(data, A, b)`` with respect to the
nonzero values ``data`` of a matrix with ``A``'s pattern, and to ``b``.

VJPs solve the transposed system once (lam = A^-T g; d b = lam, d data_k = -lam[row_k]
x[col_k]); JVPs solve with the perturbed right-hand side (t_b - dA x).
"""

from __future__ import annotations

import numpy as _np
import scipy.sparse as _sp
import scipy.sparse.linalg as _spla

from ..._core.rules import defjvp_direct as defjvp
from ..._core.rules import defvjp_direct
from ..._core.tracer import primitive

__all__ = ["spsolve", "spsolve_values"]


def _as_csr(A):
    if not _sp.issparse(A):
        raise TypeError(
            f"spsolve needs a scipy.sparse matrix, got {type(A).__name__}; for dense "
            f"matrices use chainrule.numpy.linalg.solve."
        )
    return _sp.csr_matrix(A)


def _solve(A, b):
    return _np.asarray(_spla.spsolve(_sp.csc_matrix(A), b)).reshape(_np.shape(b))


@primitive
def _spsolve(A, b):
    return _solve(A, b)


def spsolve(A, b):
    """``scipy.sparse.linalg.spsolve(A, b)`` for a constant sparse ``A`` and a traced or
    constant ``b`` (a vector or a matrix of right-hand sides)."""
    return _spsolve(_as_csr(A), b)


defvjp_direct(_spsolve, None, lambda g, ans, A, b: _spsolve(A.T.tocsr(), g))
defjvp(_spsolve, None, lambda t, ans, A, b: _spsolve(A, t))


@primitive
def _spsolve_values(data, indices, indptr, b):
    return _solve(_sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1,) * 2), b)


def _rows(indptr):
    return _np.repeat(_np.arange(len(indptr) - 1), _np.diff(indptr))


def _matrix(data, indices, indptr):
    return _sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1,) * 2)


def spsolve_values(data, A, b):
    """The solution of M x = b where M has the pattern of sparse ``A`` (its CSR
    ``indices``/``indptr``) and the nonzero values ``data`` (traced or not, in CSR
    order: ``scipy.sparse.csr_matrix(A).data``), ``b`` a vector (traced or not)."""
    A = _as_csr(A)
    A.sort_indices()
    if _np.shape(data) != A.data.shape:
        raise ValueError(f"data has shape {_np.shape(data)}, A stores {A.data.shape} values")
    return _spsolve_values(data, A.indices, A.indptr, b)


def _transposed_solve(data, indices, indptr, g):
    """M^-T g with M^T built from the same values (a traced ``data`` stays traced)."""
    positions = _matrix(_np.arange(1, len(indices) + 1, dtype=float), indices, indptr)
    transposed = positions.T.tocsr()
    transposed.sort_indices()
    order = transposed.data.astype(_np.intp) - 1  # where each value of M^T sits in data
    return _spsolve_values(data[order], transposed.indices, transposed.indptr, g)


def _values_vjp(g, ans, data, indices, indptr, b):
    lam = _transposed_solve(data, indices, indptr, g)
    return -(lam[_rows(indptr)] * ans[indices])


def _values_jvp(t, ans, data, indices, indptr, b):
    # (M + dM) x = b: dx = -M^-1 (dM x), dM holding the tangent values
    product = _np.bincount(
        _rows(indptr), weights=_np.asarray(t) * _np.asarray(ans)[indices], minlength=len(indptr) - 1
    )
    return _spsolve_values(data, indices, indptr, -product)


defvjp_direct(
    _spsolve_values,
    _values_vjp,
    None,
    None,
    lambda g, ans, data, indices, indptr, b: _transposed_solve(data, indices, indptr, g),
)
defjvp(
    _spsolve_values,
    _values_jvp,
    None,
    None,
    lambda t, ans, data, indices, indptr, b: _spsolve_values(data, indices, indptr, t),
)
