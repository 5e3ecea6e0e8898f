"""scipy.stats.multivariate_normal with derivatives w.r.t. x, mean and cov.

``cov`` may be a matrix, a vector (the diagonal) or a scalar, as in SciPy. It is
factored with a Cholesky decomposition that reads its lower triangle.
"""

import numpy as _np

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


def logpdf(x, mean=None, cov=1, allow_singular=False):
    """``scipy.stats.multivariate_normal.logpdf``."""
    x, mean, cov = as_array(x), as_array(mean), as_array(cov)
    d = _dim(mean, cov)
    chol = sla.cholesky(_cov_matrix(cov, d), lower=True)
    # in one dimension, each entry of a vector x is a point (SciPy's convention)
    batch = anp.shape(x) if d == 1 and anp.ndim(x) <= 1 else anp.shape(x)[:-1]
    dev = x if mean is None else x - anp.reshape(mean, (d,))
    z = sla.solve_triangular(chol, anp.transpose(anp.reshape(dev, (-1, d))), lower=True)
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
