"""chainrule.scipy.linalg: SciPy's linear algebra with derivatives.

Primitives (rules in ``chainrule.scipy.rules.linalg``): solve_triangular, solve_general,
solve_banded, solve_sylvester, sqrtm, expm, and the symmetric kernels of
cholesky and eigh. The rest is composed from them: cho_factor/cho_solve and
lu_factor/lu_solve are triangular solves, so their derivatives w.r.t. the
factors and right-hand sides come for free.

Symmetric inputs: like SciPy, ``cholesky`` and ``eigh`` read one triangle of
their matrix (``lower``), and so do their derivatives: the gradient lives on that
triangle (the off-diagonal entries of a symmetric matrix count twice).
``cho_factor`` returns its factor with zeros in the unused triangle (SciPy leaves
arbitrary values there). ``lu_factor``'s pivots are constants; ``solve`` reads
the entries its ``assume_a`` structure says, and so does its derivative.
"""

from __future__ import annotations

import numpy as _np
import scipy.linalg as _sla

from .._core.tracer import notrace_primitive, primitive
from ..numpy import _namespace
from ..numpy import numpy_wrapper as anp

_namespace.install(globals(), _sla)  # SciPy's names; those defined below win


def T(x):
    """Matrix transpose of the last two axes."""
    return anp.swapaxes(x, -1, -2)


# ----------------------------------------------------------------------------- primitives
@primitive
def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    return _sla.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
                                 check_finite=check_finite)


@primitive
def solve_general(a, b, transposed=False):
    """``a^-1 b`` (``a^-T b`` when transposed) for a general square matrix ``a``."""
    return _sla.solve(a, b, transposed=transposed)


@primitive
def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    return _sla.solve_banded(l_and_u, ab, b, check_finite=check_finite)


@primitive
def solve_sylvester(a, b, q):
    return _sla.solve_sylvester(a, b, q)


@primitive
def sqrtm(A):
    return _sla.sqrtm(A)


@primitive
def expm(A):
    return _sla.expm(A)


@primitive
def cholesky_symmetric(a):
    """Lower Cholesky factor of a symmetric matrix given in full."""
    return _sla.cholesky(a, lower=True)


@primitive
def eigh_values(a, b=None):
    """Eigenvalues of the symmetric (generalized, with b) problem, both given in full."""
    return _sla.eigh(a, b, eigvals_only=True)


@primitive
def eigh_vectors(a, b=None):
    return _sla.eigh(a, b)[1]


# ----------------------------------------------------------------------------- composed
def tri_mask(n: int, lower: bool, k: int = 0):
    """Constant mask of the lower (upper) triangle, diagonals from k on (k=-1: strict)."""
    ones = _np.ones((n, n))
    return _np.tril(ones, k) if lower else _np.triu(ones, -k)


def symmetric_from(a, lower: bool):
    """The symmetric matrix whose ``lower`` (or upper) triangle is that of ``a``."""
    n = anp.shape(a)[-1]
    return a * tri_mask(n, lower) + T(a * tri_mask(n, lower, -1))


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cholesky``, differentiable; reads the ``lower`` (or upper) triangle."""
    chol = cholesky_symmetric(symmetric_from(a, lower))
    return chol if lower else T(chol)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cho_factor``; the unused triangle of the factor is zero."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``scipy.linalg.cho_solve``: two triangular solves, differentiable in c and b."""
    c, lower = c_and_lower
    if lower:
        return solve_triangular(c, solve_triangular(c, b, lower=True), trans=1, lower=True)
    return solve_triangular(c, solve_triangular(c, b, trans=1, lower=False), lower=False)


@notrace_primitive
def _pivots(a):
    return _sla.lu_factor(a)[1]


@primitive
def lu_packed(a):
    """The packed L\\U factors of ``lu_factor(a)`` (pivots are constant)."""
    return _sla.lu_factor(a)[0]


def row_permutation(piv):
    """``perm`` with ``a[perm] == L @ U`` from LAPACK's sequential row swaps ``piv``."""
    perm = _np.arange(len(piv))
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def lu_factor(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.lu_factor``: (lu, piv), differentiable in lu."""
    return lu_packed(a), _pivots(a)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """``scipy.linalg.lu_solve``: permutation and two triangular solves."""
    lu, piv = lu_and_piv
    perm = row_permutation(piv)
    if trans in (0, "N"):
        y = solve_triangular(lu, b[perm], lower=True, unit_diagonal=True)
        return solve_triangular(lu, y, lower=False)
    y = solve_triangular(lu, b, trans=1, lower=False)
    z = solve_triangular(lu, y, trans=1, lower=True, unit_diagonal=True)
    return z[_np.argsort(perm)]


_SYMMETRIC = ("sym", "her", "pos", "positive definite", "symmetric", "hermitian")
_TRIANGULAR = {"lower triangular": True, "upper triangular": False}


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """``scipy.linalg.solve``, differentiable in a and b.

    As in SciPy, a symmetric ``assume_a`` reads only the ``lower`` (or upper)
    triangle of ``a``, a triangular one only that triangle, "diagonal" only the
    diagonal; the derivative w.r.t. ``a`` lives on the entries that are read.
    Banded structures are solved as general matrices.
    """
    n = anp.shape(a)[-1]
    if assume_a in _SYMMETRIC:
        a = symmetric_from(a, lower)
    elif assume_a in _TRIANGULAR:
        a = a * tri_mask(n, _TRIANGULAR[assume_a])
    elif assume_a == "diagonal":
        a = a * _np.eye(n)
    return solve_general(a, b, transposed=transposed)


_IGNORED_EIGH_KWARGS = ("overwrite_a", "overwrite_b", "check_finite", "driver")


def eigh(a, b=None, lower=True, eigvals_only=False, **kwargs):
    """``scipy.linalg.eigh`` (standard and generalized), differentiable in a and b.

    Eigenvector derivatives assume distinct eigenvalues. Subsets of eigenvalues
    (``subset_by_index``...) and ``type`` other than 1 are not supported.
    """
    unsupported = set(kwargs) - set(_IGNORED_EIGH_KWARGS)
    if unsupported:
        raise TypeError(f"chainrule.scipy.linalg.eigh does not support "
                        f"{', '.join(sorted(unsupported))}; it differentiates the full "
                        f"decomposition. Call scipy.linalg.eigh on constants for the rest.")
    a = symmetric_from(a, lower)
    b = None if b is None else symmetric_from(b, lower)
    w = eigh_values(a, b)
    return w if eigvals_only else (w, eigh_vectors(a, b))

