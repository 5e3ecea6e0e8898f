"""scipy.stats.multivariate_normal with derivatives w.r.t. x, mean and cov.

``cov`` may be a matrix, a vector (the diagonal) or a scalar, as in SciPy. It is
factored with a Cholesky decomposition that reads its lower triangle.
"""

import numpy as _np

from ..._core.tracer import decided, derivative_free, getval
from ...numpy import linalg as alinalg
from ...numpy import numpy_wrapper as anp
from .. import linalg as sla
from ._family import as_array


def _dim(mean, cov) -> int:
    """The dimension as SciPy infers it: from the mean if given, else from cov."""
    if mean is not None:
        return int(_np.size(mean))
    return anp.shape(cov)[-1] if anp.ndim(cov) > 0 else 1


def _cov_matrix(cov, d: int):
    if anp.ndim(cov) == 2:
        return cov
    return anp.expand_dims(cov, -1) * _np.eye(d) if anp.ndim(cov) == 1 else cov * _np.eye(d)


def _logdet_chol(chol, d: int):
    idx = _np.arange(d)
    return 2 * anp.sum(anp.log(chol[idx, idx]))


def _singular_factor(cov_matrix):
    """SciPy's factor of a singular covariance, from its eigendecomposition:
    (U with U U^T = pinv(cov), log pseudo-determinant, rank, null-space basis V, tolerance).
    Eigenvalues at or below SciPy's cutoff count as zero."""
    s, u = _np.linalg.eigh(cov_matrix)
    factor = {"f": 1e3, "d": 1e6}[s.dtype.char.lower()]
    eps = factor * _np.finfo(s.dtype).eps * _np.max(_np.abs(s))
    if _np.min(s) < -eps:
        raise ValueError("multivariate_normal: cov must be symmetric positive semidefinite.")
    kept = s > eps
    return (u[:, kept] / _np.sqrt(s[kept]), _np.sum(_np.log(s[kept])), int(_np.sum(kept)),
            u[:, ~kept], 1e3 * eps)


def _is_singular(cov_matrix) -> bool:
    # chainrule's functions on the value: under chainrule.jit the program computes the
    # answer and guards it (a cov given to the jitted function may be singular or not)
    s = alinalg.eigvalsh(derivative_free(cov_matrix))
    return bool(anp.min(s) <= 1e6 * _np.finfo(s.dtype).eps * anp.max(anp.abs(s)))


def logpdf(x, mean=None, cov=1, allow_singular=False):
    """``scipy.stats.multivariate_normal.logpdf``.

    With ``allow_singular`` and a singular ``cov`` it is SciPy's degenerate density
    (pseudo-inverse and pseudo-determinant; -inf off the support), differentiable
    w.r.t. x and mean; not w.r.t. such a cov, whose rank a perturbation changes."""
    x, mean, cov = as_array(x), as_array(mean), as_array(cov)
    d = _dim(mean, cov)
    # in one dimension, each entry of a vector x is a point (SciPy's convention)
    batch = anp.shape(x) if d == 1 and anp.ndim(x) <= 1 else anp.shape(x)[:-1]
    dev = x if mean is None else x - anp.reshape(mean, (d,))
    dev = anp.reshape(dev, (-1, d))
    cov_matrix = _cov_matrix(cov, d)
    if allow_singular and _is_singular(cov_matrix):
        if derivative_free(cov) is not cov:  # (a derivative trace's; jit's alone is fine)
            raise ValueError(
                "multivariate_normal.logpdf has no derivative w.r.t. a singular cov (a "
                "perturbation changes its rank, and the density with it): pass cov as a "
                "constant, or make it positive definite to differentiate it.")
        # (a constant of the density; under chainrule.jit a guarded value of the program)
        plain_cov = _np.asarray(decided(cov_matrix, getval), dtype=float)
        u, log_pdet, rank, null, tol = _singular_factor(plain_cov)
        maha = anp.reshape(anp.sum(anp.dot(dev, u) ** 2, axis=1), batch)
        out = -0.5 * (rank * _np.log(2 * _np.pi) + log_pdet + maha)
        # (x's value: under chainrule.jit the program's, so the support follows x)
        distance = alinalg.norm(derivative_free(dev) @ null, axis=-1)
        off_support = anp.reshape(distance, batch) >= tol
        return anp.where(off_support, -_np.inf, out) if anp.any(off_support) else out
    chol = sla.cholesky(cov_matrix, lower=True)
    z = sla.solve_triangular(chol, anp.transpose(dev), lower=True)
    maha = anp.reshape(anp.sum(z * z, axis=0), batch)
    return -0.5 * (d * _np.log(2 * _np.pi) + _logdet_chol(chol, d) + maha)


def pdf(x, mean=None, cov=1, allow_singular=False):
    """``scipy.stats.multivariate_normal.pdf``."""
    return anp.exp(logpdf(x, mean, cov, allow_singular))


def entropy(mean=None, cov=1):
    """``scipy.stats.multivariate_normal.entropy``."""
    mean, cov = as_array(mean), as_array(cov)
    d = _dim(mean, cov)
    chol = sla.cholesky(_cov_matrix(cov, d), lower=True)
    return 0.5 * (d * (1 + _np.log(2 * _np.pi)) + _logdet_chol(chol, d))
