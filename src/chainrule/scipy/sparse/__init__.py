"""chainrule.scipy.sparse: ``scipy.sparse`` matrices as operands of traced products, as
differentiable arguments, and differentiable sparse solves (``linalg``).

``matmul(A, x)`` / ``matmul(x, A)`` take one ``scipy.sparse`` matrix or array (CSR, CSC,
COO ...; ``sparray`` and ``spmatrix``) and a dense array, either traced: VJPs ``A.T @ g``
(or ``g @ A.T``) and, in ``A``, a matrix of ``A``'s pattern holding the derivatives of its
stored values; JVPs ``A @ t`` and ``dA @ x``; ``A``'s pattern for sparsity detection. The
operator does the same: ``A @ x``, ``A.T @ x`` and ``x @ A`` call ``matmul``.

A sparse matrix being differentiated (``grad(f)(A)``) is traced in its stored values:
``stored_values(A)`` is a traced copy of ``A.data``, ``with_values(A, data)`` the matrix
of ``A``'s pattern holding ``data``.
"""

from __future__ import annotations

from ..._sparsity.products import matmul, stored_values, with_values
from . import linalg

__all__ = ["matmul", "stored_values", "with_values", "linalg"]
