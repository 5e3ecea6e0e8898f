"""chainrule.numpy.linalg: NumPy's linear algebra with derivatives.

Every NumPy name is here. The names in DIFFERENTIABLE are primitives (rules in
``rules/linalg.py``) or thin wrappers over primitives:

* Functions that return several arrays (eigh, eig, svd, slogdet, qr) are primitives
  returning a plain tuple, which the tracer boxes as a SequenceBox; the public
  function repacks it into NumPy's named tuple (``res.eigenvalues``, ``res.U`` ...),
  so both ``w, v = eigh(a)`` and attribute access work on traced values.
  ``fun.primitive`` is the primitive behind such a wrapper.
* multi_dot, tensorsolve and tensorinv are compositions of primitives (their
  derivatives, of every order, follow from those). lstsq is one primitive, so its
  residuals and singular values are LAPACK's; its rank is a plain integer.

Degenerate cases, documented once here:
* Singular matrices: det, slogdet, inv, solve, matrix_power (n < 0) need an
  invertible matrix for their derivatives (LinAlgError otherwise); pinv and lstsq
  differentiate the pseudo-inverse at constant rank.
* Repeated eigenvalues / singular values: the derivative of a function that treats
  a repeated group symmetrically (sum(w), sum(w**2), log det ...) is exact there; one
  member of the group alone has only one-sided directional derivatives. (Use eigvalsh,
  eigvals or svd(compute_uv=False) when only the values are needed.) Eigenvector
  (singular vector) derivatives do not exist there: they come out inf/nan instead of
  a wrong number, unless the vectors are unused.
  Zero singular values likewise make the derivative of U, Vh of a non-square matrix
  infinite.
* Gauge freedom: eigenvectors and singular vectors are defined up to sign (real)
  or phase (complex). The derivatives keep each vector's norm and, for complex
  values, add no phase rotation (``Im(v^H dv) = 0``); NumPy/LAPACK fix phases by
  their own convention, so only gauge-invariant functions (|v|^2, v v^H,
  U diag(s) Vh ...) of complex eigenvectors match finite differences.
* eigh, eigvalsh, cholesky, and svd/pinv with hermitian=True read one triangle
  (as LAPACK does), so their gradient lives in that triangle: it is the gradient of
  the function NumPy computes, also for non-symmetric input.
* svd(full_matrices=True) of a non-square matrix: the extra columns of U (rows
  of Vh) are any orthonormal completion; their derivative is the one that keeps them
  orthogonal to the rest with no rotation among themselves.
* qr: modes 'reduced', 'complete' and 'r'; 'raw' has no derivative. The extra
  columns of 'complete' Q for tall matrices are a completion like svd's (above).
* norm/vector_norm/matrix_norm: ord=0 has zero gradient; max/min based ords (inf,
  -inf, 1, -1 for matrices) split the gradient equally between ties; at x = 0 the
  gradient is 0.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as _np
import numpy.linalg as _npla

from .._core.tracer import decided, getval, isbox, notrace_primitive, primitive
from . import _namespace
from . import numpy_wrapper as _anp

DIFFERENTIABLE = """
    det slogdet inv pinv solve cholesky eigh eig eigvals eigvalsh svd norm qr lstsq
    matrix_power multi_dot tensorsolve tensorinv matrix_norm vector_norm matrix_transpose
""".split()

# Single-array primitives: NumPy's own function, recorded when traced.
det = primitive(_npla.det)
inv = primitive(_npla.inv)
pinv = primitive(_npla.pinv)
solve = primitive(_npla.solve)
cholesky = primitive(_npla.cholesky)
eigvals = primitive(_npla.eigvals)
eigvalsh = primitive(_npla.eigvalsh)
norm = primitive(_npla.norm)
matrix_power = primitive(_npla.matrix_power)
if hasattr(_npla, "matrix_norm"):
    matrix_norm = primitive(_npla.matrix_norm)
    vector_norm = primitive(_npla.vector_norm)


def matrix_transpose(x):
    """Swap the last two axes (NumPy 2's ``matrix_transpose``: a view of ``x``)."""
    return _np.swapaxes(x, -1, -2)


matrix_transpose = primitive(matrix_transpose, answers_view=True)
if hasattr(_np, "matrix_transpose"):  # NumPy 2's numpy.matrix_transpose: the same primitive
    _anp.namespace["matrix_transpose"] = matrix_transpose
    _namespace.raw_to_wrapped[_np.matrix_transpose] = matrix_transpose


# autograd's private helpers, which code written for autograd imports from here
T = matrix_transpose


def _dot(a, b):
    """The matrix product of (stacks of) matrices: autograd's ``linalg._dot``."""
    return _anp.matmul(a, b)


# ----------------------------------------------------------------------------- tuple results
def _result_type(name: str, fields: str):
    return getattr(getattr(_npla, "_linalg", None), name, None) or namedtuple(name, fields)


EighResult = _result_type("EighResult", "eigenvalues eigenvectors")
EigResult = _result_type("EigResult", "eigenvalues eigenvectors")
SVDResult = _result_type("SVDResult", "U S Vh")
SlogdetResult = _result_type("SlogdetResult", "sign logabsdet")
QRResult = _result_type("QRResult", "Q R")


@primitive
def eigh_tuple(a, UPLO="L"):
    return tuple(_npla.eigh(a, UPLO=UPLO))


@primitive
def eig_tuple(a):
    return tuple(_npla.eig(a))


@primitive
def slogdet_tuple(a):
    return tuple(_npla.slogdet(a))


def _hermitian_flag(hermitian: bool) -> dict:
    # Passed only when set: CuPy's svd has no such keyword.
    return {"hermitian": True} if hermitian else {}


@primitive
def svd_tuple(a, full_matrices=True, hermitian=False):
    return tuple(_npla.svd(a, full_matrices=full_matrices, compute_uv=True,
                           **_hermitian_flag(hermitian)))


svd_values = primitive(lambda a, hermitian=False: _npla.svd(a, compute_uv=False,
                                                             **_hermitian_flag(hermitian)))
svd_values.__name__ = svd_values.__qualname__ = "svd_values"


@primitive
def qr_tuple(a, mode="reduced"):
    return tuple(_npla.qr(a, mode=mode))


qr_r = primitive(lambda a: _npla.qr(a, mode="r"))
qr_r.__name__ = qr_r.__qualname__ = "qr_r"


def eigh(a, UPLO="L"):
    return EighResult(*eigh_tuple(a, UPLO=UPLO))


def eig(a):
    return EigResult(*eig_tuple(a))


def slogdet(a):
    return SlogdetResult(*slogdet_tuple(a))


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        return svd_values(a, hermitian=hermitian)
    return SVDResult(*svd_tuple(a, full_matrices=full_matrices, hermitian=hermitian))


def qr(a, mode="reduced"):
    if mode == "r":
        return qr_r(a)
    if mode == "raw" and isbox(a):
        raise ValueError("qr(mode='raw') has no derivative: use mode='reduced' or 'complete'.")
    if mode in ("raw", "economic", "full"):
        return _npla.qr(getval(a), mode=mode)
    return QRResult(*qr_tuple(a, mode=mode))


eigh.primitive, eig.primitive, slogdet.primitive = eigh_tuple, eig_tuple, slogdet_tuple
svd.primitive, qr.primitive = svd_tuple, qr_tuple


@primitive
def lstsq_tuple(a, b, rcond=None):
    """``numpy.linalg.lstsq(a, b, rcond)`` itself, as a plain tuple (x, residuals, rank, s):
    every value is LAPACK's (gelsd), also at overflow and nan; x, residuals and s have
    derivatives. The rank is answered as a float (an integer leaf would make the tuple's
    tangent space fail; its cotangent is ignored): ``lstsq`` gives the integer back."""
    x, resids, rank, s = _npla.lstsq(a, b, rcond=rcond)
    return x, resids, rank * 1.0, s


def _lstsq_rank(rank):
    # NumPy's C int (its gufunc's "i"); under vmap a batch of them, as the loop stacks them
    return rank.astype(_np.intc)


def lstsq(a, b, rcond=None):
    """``numpy.linalg.lstsq``: ``(x, residuals, rank, s)``; x, residuals and s differentiable."""
    # (always the primitive: it is also what a vmap batches)
    x, resids, rank, s = lstsq_tuple(a, b, rcond)
    # the rank (which also decides whether there are residuals) is a plain answer: under
    # chainrule.jit a guarded decision on a's values
    return x, resids, decided(rank, _lstsq_rank), s


lstsq.primitive = lstsq_tuple


# ----------------------------------------------------------------------------- compositions
def multi_dot(arrays, *, out=None):
    """``numpy.linalg.multi_dot``; traced chains are multiplied left to right."""
    arrays = list(arrays)
    if not any(isbox(x) for x in arrays):
        return _npla.multi_dot(arrays, out=out)
    if out is not None:
        raise TypeError(
            "multi_dot: an output array (out=) cannot be given with a traced value: NumPy "
            "would write the result into that array, outside what chainrule records, so its "
            "derivative would be lost. Use the returned value instead (y = multi_dot(arrays)); "
            "nothing was written."
        )
    if len(arrays) < 2:
        raise ValueError("multi_dot: expecting at least two arrays.")
    result = arrays[0]
    for x in arrays[1:]:
        result = _anp.dot(result, x)
    return result


def tensorinv(a, ind=2):
    """``numpy.linalg.tensorinv`` as reshape -> inv -> reshape."""
    if not isbox(a):
        return _npla.tensorinv(a, ind=ind)
    shape = _np.shape(a)
    rows = math.prod(shape[:ind])
    return _anp.reshape(inv(_anp.reshape(a, (rows, -1))), shape[ind:] + shape[:ind])


def tensorsolve(a, b, axes=None):
    """``numpy.linalg.tensorsolve`` as (transpose ->) reshape -> solve -> reshape."""
    if not (isbox(a) or isbox(b)):
        return _npla.tensorsolve(a, b, axes=axes)
    ndim = _np.ndim(a)
    if axes is not None:
        order = [k for k in range(ndim) if k not in [ax % ndim for ax in axes]]
        order += [ax % ndim for ax in axes]
        a = _anp.transpose(a, order)
    x_shape = _np.shape(a)[ndim - (ndim - _np.ndim(b)):]
    size = math.prod(x_shape)
    x = solve(_anp.reshape(a, (-1, size)), _anp.ravel(b))
    return _anp.reshape(x, x_shape)


# ----------------------------------------------------------------------------- array-API names
# NumPy 2's linalg versions of top-level functions: the matrix axes are the last two.
def svdvals(x):
    return svd_values(x)


def cond(x, p=None):
    """``numpy.linalg.cond``: through the singular values, or norm(x) * norm(inv(x))."""
    if not isbox(x):
        return _npla.cond(x, p)
    # (NumPy's own computes quietly: an overflow or a singular matrix warns nothing)
    with _np.errstate(all="ignore"):
        if p in (None, 2, -2):
            s = svd_values(x)
            return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
        return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


def vecdot(x1, x2, /, *, axis=-1):
    return _anp.sum(_anp.conjugate(x1) * x2, axis=axis)


def matmul(x1, x2, /):
    return _anp.matmul(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    return _anp.tensordot(x1, x2, axes=axes)


def outer(x1, x2, /):
    return _anp.outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
    return _anp.cross(x1, x2, axis=axis)


def trace(x, /, *, offset=0, dtype=None):
    return _anp.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset=0):
    return _anp.diagonal(x, offset, axis1=-2, axis2=-1)


ARRAY_API = "svdvals cond vecdot matmul tensordot outer cross trace diagonal".split()
NONDIFFERENTIABLE = ["matrix_rank"]
matrix_rank = notrace_primitive(_npla.matrix_rank)

# The rest of numpy.linalg as it is; NumPy's own functions, called on traced values,
# dispatch to the ones here.
_namespace.install(globals(), _npla, dispatch=DIFFERENTIABLE + ARRAY_API + NONDIFFERENTIABLE)
