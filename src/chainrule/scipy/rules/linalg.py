"""Rules for scipy.linalg: one block per primitive, its columns side by side.

Notation: x the solution, ``T`` the matrix transpose, ``outer(u, v) = u v^T``
(vectors or matrices of columns). All rules call the primitives themselves, so
every order works.
"""

from __future__ import annotations

import numpy as _np
import scipy

from ..._core.rules import defbatch, defjvp_direct, deflayout_by_value, defsparsity, defvjp_direct
from ..._sparsity.patterns import batched_pattern, columns_pattern, dense_rule
from ...numpy import numpy_wrapper as anp
from ...numpy.batched import example_ndim
from ...numpy.batching_patterns import as_is
from ...numpy.rules._helpers import shape_of
from .. import linalg as la
from ..linalg import T, tri_mask


def _outer(u, v):
    if anp.ndim(u) == 1:
        return anp.expand_dims(u, -1) * v
    return anp.matmul(u, T(v))


def _is_transposed(trans) -> bool:
    return trans not in (0, "N")


# ----------------------------------------------------------------------------- solve_triangular
def _st_mask(a, lower, unit_diagonal):
    n = shape_of(a)[-1]
    return tri_mask(n, lower, -1 if unit_diagonal else 0)


def _st_vjp_b(g, ans, a, b, trans=0, lower=False, unit_diagonal=False, **k):
    return la.solve_triangular(a, g, trans=0 if _is_transposed(trans) else 1, lower=lower,
                               unit_diagonal=unit_diagonal)


def _st_vjp_a(g, ans, a, b, trans=0, lower=False, unit_diagonal=False, **k):
    bbar = _st_vjp_b(g, ans, a, b, trans, lower, unit_diagonal)
    abar = _outer(ans, bbar) if _is_transposed(trans) else _outer(bbar, ans)
    return -abar * _st_mask(a, lower, unit_diagonal)


def _st_jvp_a(t, ans, a, b, trans=0, lower=False, unit_diagonal=False, **k):
    ta = t * _st_mask(a, lower, unit_diagonal)
    ta = T(ta) if _is_transposed(trans) else ta
    return -la.solve_triangular(a, anp.matmul(ta, ans), trans=trans, lower=lower,
                                unit_diagonal=unit_diagonal)


# ----------------------------------------------------------------------------- solve, banded
def _solve_vjp_b(g, ans, a, b, transposed=False):
    return la.solve_general(a, g, transposed=not transposed)


def _solve_vjp_a(g, ans, a, b, transposed=False):
    bbar = _solve_vjp_b(g, ans, a, b, transposed)
    return -(_outer(ans, bbar) if transposed else _outer(bbar, ans))


def _solve_jvp_a(t, ans, a, b, transposed=False):
    return -la.solve_general(a, anp.matmul(T(t) if transposed else t, ans), transposed=transposed)


def _band_index(n: int, l: int, u: int):
    """For each band entry (r, j): the row i = r - u + j it holds, and whether it exists."""
    r, j = _np.meshgrid(_np.arange(l + u + 1), _np.arange(n), indexing="ij")
    i = r - u + j
    valid = (i >= 0) & (i < n)
    return _np.clip(i, 0, n - 1), j, valid


def band_to_dense(ab, l: int, u: int):
    n = shape_of(ab)[-1]
    i, j = _np.meshgrid(_np.arange(n), _np.arange(n), indexing="ij")
    r = u + i - j
    valid = (r >= 0) & (r <= l + u)
    return ab[_np.clip(r, 0, l + u), j] * valid


def dense_to_band(A, l: int, u: int):
    i, j, valid = _band_index(shape_of(A)[-1], l, u)
    return A[i, j] * valid


def _banded_vjp_b(g, ans, lu, ab, b, **k):
    l, u = lu
    ab_t = dense_to_band(T(band_to_dense(ab, l, u)), u, l)
    return la.solve_banded((u, l), ab_t, g)


def _banded_vjp_ab(g, ans, lu, ab, b, **k):
    return -dense_to_band(_outer(_banded_vjp_b(g, ans, lu, ab, b), ans), *lu)


def _banded_jvp_ab(t, ans, lu, ab, b, **k):
    return -la.solve_banded(lu, ab, anp.matmul(band_to_dense(t, *lu), ans))


# ----------------------------------------------------------------------------- sylvester, matrix functions
def _sylvester_adjoint(g, a, b):
    return la.solve_sylvester(T(a), T(b), g)


def expm_frechet(A, E):
    """The Frechet derivative of expm at A along E: the top right block of expm([[A, E], [0, A]])."""
    n = shape_of(A)[-1]
    zeros = _np.zeros(shape_of(A))
    block = anp.concatenate([anp.concatenate([A, E], axis=-1),
                             anp.concatenate([zeros, A], axis=-1)], axis=-2)
    return la.expm(block)[..., :n, n:]


# ----------------------------------------------------------------------------- cholesky
def _phi(x):
    """Lower triangle with the diagonal halved."""
    n = shape_of(x)[-1]
    return x * (tri_mask(n, True, -1) + 0.5 * _np.eye(n))


def _chol_vjp(g, L, a):
    # S = L^-T phi(L^T g) L^-1; only its symmetric part matters (a is symmetric)
    w = la.solve_triangular(L, _phi(anp.matmul(T(L), g)), trans=1, lower=True)
    s = T(la.solve_triangular(L, T(w), trans=1, lower=True))
    return 0.5 * (s + T(s))


def _chol_jvp(t, L, a):
    y = la.solve_triangular(L, t, lower=True)
    return anp.matmul(L, _phi(la.solve_triangular(L, T(y), lower=True)))


# ----------------------------------------------------------------------------- eigh
def _gaps(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it."""
    n = shape_of(w)[-1]
    eye = _np.eye(n)
    return (1 - eye) / (anp.expand_dims(w, -2) - anp.expand_dims(w, -1) + eye)


def _sandwich(v, m):
    return anp.matmul(anp.matmul(v, m), T(v))


def _inner_diag(v, t):
    """diag(v^T t v) for each eigenvector column."""
    return anp.sum(v * anp.matmul(t, v), axis=-2)


def _eigvec_vjp(g, v, a, b, which):
    w = la.eigh_values(a, b)
    fk = _gaps(w) * anp.matmul(T(v), g)
    if which == 0:
        return _sandwich(v, fk)
    eye = _np.eye(shape_of(w)[-1])
    return _sandwich(v, -fk * anp.expand_dims(w, -2) - 0.5 * eye * anp.matmul(T(v), g))


def _eigvec_jvp(t, v, a, b, which):
    w = la.eigh_values(a, b)
    hat = anp.matmul(anp.matmul(T(v), t), v)
    if which == 0:
        return anp.matmul(v, _gaps(w) * hat)
    eye = _np.eye(shape_of(w)[-1])
    return anp.matmul(v, -_gaps(w) * hat * anp.expand_dims(w, -2) - 0.5 * eye * hat)


def _eigvals_vjp(g, w, a, b, which):
    v = la.eigh_vectors(a, b)
    return anp.matmul(v * anp.expand_dims(g if which == 0 else -g * w, -2), T(v))


# ----------------------------------------------------------------------------- lu_factor
# P a = L U with L unit lower and U upper, packed in one matrix. With
# F = L^-1 P da U^-1: dL = L tril_strict(F), dU = triu(F) U.
def _lu_parts(lu):
    n = shape_of(lu)[-1]
    return lu * tri_mask(n, True, -1) + _np.eye(n), lu * tri_mask(n, False), n


def _lu_jvp(t, lu, a):
    L, U, n = _lu_parts(lu)
    perm = la.row_permutation(la._pivots(a))
    f = la.solve_triangular(lu, t[perm], lower=True, unit_diagonal=True)
    f = T(la.solve_triangular(lu, T(f), trans=1, lower=False))
    return anp.matmul(L, f * tri_mask(n, True, -1)) + anp.matmul(f * tri_mask(n, False), U)


def _lu_vjp(g, lu, a):
    L, U, n = _lu_parts(lu)
    strict, upper = tri_mask(n, True, -1), tri_mask(n, False)
    m = anp.matmul(T(L), g * strict) * strict + anp.matmul(g * upper, T(U)) * upper
    w = la.solve_triangular(lu, m, trans=1, lower=True, unit_diagonal=True)
    abar = T(la.solve_triangular(lu, T(w), lower=False))
    return abar[_np.argsort(la.row_permutation(la._pivots(a)))]


# ----------------------------------------------------------------------------- sparsity
# (chainrule._sparsity.patterns) A solve's column k reads column k of the right-hand side; functions
# of a matrix read all of it (of each matrix of a stack).
def _columns_of(position: int):
    def rule(argnum, ans, args, kwargs):
        if argnum != position:
            return None
        return columns_pattern(shape_of(args[position]), shape_of(ans))

    return rule


def _stacked(argnum, ans, args, kwargs):
    return batched_pattern(shape_of(args[argnum]), ans, 2)


# ----------------------------------------------------------------------------- batching rules
# (``chainrule.vmap``; the patterns are ``chainrule.numpy.batching_patterns``'). SciPy's
# one-matrix linear algebra maps over leading axes from SciPy 1.15 on (cholesky, eigh, sqrtm,
# the solves, lu, Sylvester; expm always did); a batch of right-hand sides against one matrix
# is one solve of many columns with any SciPy. solve_banded runs once per example.
_STACKS = tuple(int(p) for p in scipy.__version__.split(".")[:2]) >= (1, 15)


def _one_matrix_batch(fun):
    rule = as_is(fun, 2)

    def one_matrix(values, batched, kwargs):
        if len(values) > 1 and values[1] is not None:  # eigh's generalized problem
            return NotImplemented
        return rule(values, batched, kwargs)

    return one_matrix


def _solve_batch(fun):
    """solve_triangular / solve_general (a, b, options): one matrix and a batch of
    right-hand sides is one solve of all their columns; a batch of matrices is SciPy's
    stacked solve (b made a stack of one-column matrices where an example's is a vector)."""

    def rule(values, batched, kwargs):
        (a, b), options = values[:2], values[2:]
        nd_a, nd_b = example_ndim(a, batched[0]), example_ndim(b, batched[1])
        if any(batched[2:]) or nd_a != 2 or nd_b not in (1, 2):
            return NotImplemented
        if not batched[0]:
            shape = anp.shape(b)  # (batch, n) or (batch, n, k): the examples' columns
            columns = anp.reshape(anp.moveaxis(b, 0, -1), (shape[1], -1))
            out = fun(a, columns, *options, **kwargs)
            return anp.moveaxis(anp.reshape(out, shape[1:] + shape[:1]), -1, 0)
        if not _STACKS:
            return NotImplemented
        if not batched[1]:
            b = anp.broadcast_to(b, anp.shape(a)[:1] + anp.shape(b))
        if nd_b == 1:
            return anp.squeeze(fun(a, anp.expand_dims(b, -1), *options, **kwargs), -1)
        return fun(a, b, *options, **kwargs)

    return rule


def _sylvester_batch(values, batched, kwargs):
    """solve_sylvester(a, b, q): SciPy's stacked solve, those that are the same for every
    example repeated along the batch."""
    if not _STACKS or kwargs or any(example_ndim(v, f) != 2 for v, f in zip(values, batched)):
        return NotImplemented
    size = next(anp.shape(v)[0] for v, f in zip(values, batched) if f)
    return la.solve_sylvester(*[v if f else anp.broadcast_to(v, (size,) + anp.shape(v))
                                 for v, f in zip(values, batched)])


# ----------------------------------------------------------------------------- the entries
# fmt: off
# One block per primitive: its VJP, JVP, sparsity pattern and batching rule (the functions
# of one matrix have theirs from SciPy 1.15 on, which maps them over stacks).
defvjp_direct(la.solve_triangular, _st_vjp_a, _st_vjp_b)
defjvp_direct(la.solve_triangular,        _st_jvp_a, lambda t, ans, a, b, **k: la.solve_triangular(a, t, **k))
defsparsity(la.solve_triangular,   _columns_of(1))
defbatch(la.solve_triangular,      _solve_batch(la.solve_triangular))
defvjp_direct(la.solve_general,    _solve_vjp_a, _solve_vjp_b)
defjvp_direct(la.solve_general,           _solve_jvp_a, lambda t, ans, a, b, **k: la.solve_general(a, t, **k))
defsparsity(la.solve_general,      _columns_of(1))
defbatch(la.solve_general,         _solve_batch(la.solve_general))
defvjp_direct(la.solve_banded,     None, _banded_vjp_ab, _banded_vjp_b)
defjvp_direct(la.solve_banded,            None, _banded_jvp_ab, lambda t, ans, lu, ab, b, **k: la.solve_banded(lu, ab, t))
defsparsity(la.solve_banded,       _columns_of(2))
defvjp_direct(la.solve_sylvester,  lambda g, ans, a, b, q: -anp.matmul(_sylvester_adjoint(g, a, b), T(ans)),
                                   lambda g, ans, a, b, q: -anp.matmul(T(ans), _sylvester_adjoint(g, a, b)),
                                   lambda g, ans, a, b, q: _sylvester_adjoint(g, a, b))
defjvp_direct(la.solve_sylvester,         lambda t, ans, a, b, q: la.solve_sylvester(a, b, -anp.matmul(t, ans)),
                                   lambda t, ans, a, b, q: la.solve_sylvester(a, b, -anp.matmul(ans, t)),
                                   lambda t, ans, a, b, q: la.solve_sylvester(a, b, t))
defsparsity(la.solve_sylvester,    dense_rule("each entry of X reads all of a, b and q"))
defbatch(la.solve_sylvester,       _sylvester_batch)
defvjp_direct(la.sqrtm,            lambda g, ans, A: la.solve_sylvester(T(ans), T(ans), g))
defjvp_direct(la.sqrtm,                   lambda t, ans, A: la.solve_sylvester(ans, ans, t))
defsparsity(la.sqrtm,              _stacked)
deflayout_by_value(la.sqrtm)  # complex where the matrix has no real square root
if _STACKS:
    defbatch(la.sqrtm,             _one_matrix_batch(la.sqrtm))
defvjp_direct(la.expm,             lambda g, ans, A: expm_frechet(T(A), g))
defjvp_direct(la.expm,                    lambda t, ans, A: expm_frechet(A, t))
defsparsity(la.expm,               _stacked)
defbatch(la.expm,                  as_is(la.expm, 2))
defvjp_direct(la.cholesky_symmetric, lambda g, ans, a: _chol_vjp(g, ans, a))
defjvp_direct(la.cholesky_symmetric,        lambda t, ans, a: _chol_jvp(t, ans, a))
defsparsity(la.cholesky_symmetric, _stacked)
if _STACKS:
    defbatch(la.cholesky_symmetric, _one_matrix_batch(la.cholesky_symmetric))
defvjp_direct(la.eigh_values,        lambda g, ans, a, b=None: _eigvals_vjp(g, ans, a, b, 0),
                                     lambda g, ans, a, b: _eigvals_vjp(g, ans, a, b, 1))
defjvp_direct(la.eigh_values,               lambda t, ans, a, b=None: _inner_diag(la.eigh_vectors(a, b), t),
                                     lambda t, ans, a, b: -ans * _inner_diag(la.eigh_vectors(a, b), t))
defsparsity(la.eigh_values,          dense_rule("each eigenpair reads the whole of a (and b)"))
if _STACKS:
    defbatch(la.eigh_values,         _one_matrix_batch(la.eigh_values))
defvjp_direct(la.eigh_vectors,       lambda g, ans, a, b=None: _eigvec_vjp(g, ans, a, b, 0),
                                     lambda g, ans, a, b: _eigvec_vjp(g, ans, a, b, 1))
defjvp_direct(la.eigh_vectors,              lambda t, ans, a, b=None: _eigvec_jvp(t, ans, a, b, 0),
                                     lambda t, ans, a, b: _eigvec_jvp(t, ans, a, b, 1))
defsparsity(la.eigh_vectors,         dense_rule("each eigenpair reads the whole of a (and b)"))
if _STACKS:
    defbatch(la.eigh_vectors,        _one_matrix_batch(la.eigh_vectors))
defvjp_direct(la.lu_packed,          lambda g, ans, a: _lu_vjp(g, ans, a))
defjvp_direct(la.lu_packed,                 lambda t, ans, a: _lu_jvp(t, ans, a))
defsparsity(la.lu_packed,            _stacked)
if _STACKS:
    defbatch(la.lu_packed,           _one_matrix_batch(la.lu_packed))
# fmt: on
