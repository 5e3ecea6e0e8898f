"""chainrule.scipy.sparse: ``scipy.sparse`` matrices as constant operands of traced
products, and differentiable sparse solves (``linalg``).

``matmul(A, x)`` / ``matmul(x, A)`` take one ``scipy.sparse`` matrix or array (CSR, CSC,
COO ...; ``sparray`` and ``spmatrix``) as a constant and a dense, possibly traced, array:
VJP ``A.T @ g`` (or ``g @ A.T``), JVP ``A @ t``, and the pattern of ``A`` for sparsity
detection. The operator does the same: ``A @ x``, ``A.T @ x`` and ``x @ A`` with a traced
``x`` call ``matmul``.
"""

from __future__ import annotations

from ..._sparse_products import matmul
from . import linalg

__all__ = ["matmul", "linalg"]
