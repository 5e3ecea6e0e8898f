"""Rules for numpy.linalg: VJP and JVP of every decomposition, inverse and norm.

Conventions. Matrices are the last two axes (stacks broadcast as in NumPy);
``_T`` swaps them, ``_H`` also conjugates. Complex inputs follow autograd's
convention: a VJP is the transpose of the JVP for the pairing Re(sum(a * b)), so
holomorphic functions (det, inv, solve, eig ...) use plain transposes, and
functions of the Hermitian part (eigh, cholesky, svd, norm) conjugate where their
JVP does. The degenerate cases (singular matrices, repeated eigenvalues, gauge
freedom of eigenvectors) are described in ``chainrule.numpy.linalg``'s docstring.
Every formula uses wrapped functions, so each rule can itself be differentiated.
"""

from __future__ import annotations

import numpy as _np

from ..._core.rules import (
    defbatch,
    defjvp_batched,
    defjvp_direct,
    deflabel,
    deflayout_by_value,
    defsparsity,
    deftaylor,
    defvjp_direct,
)
from ..._core.tracer import derivative_free, getval, isbox
from ..._sparsity.patterns import batched_pattern, columns_pattern, copy_rule, reduced_pattern
from .. import linalg as la
from .. import numpy_wrapper as anp
from ..batched import example_ndim, flat_examples
from ..batching_patterns import as_is, only_first, shifted_axis
from ..placement import constant_like, index_like, on_host
from ._helpers import (
    broadcast_batched_tangent,
    broadcast_tangent,
    dtype_of,
    keepdims_shape,
    linear,
    match_dtype,
    shape_of,
    unbroadcast,
)

# ----------------------------------------------------------------------------- matrix helpers


def _iscomplex(x) -> bool:
    return dtype_of(x).kind == "c"


def _conj(x):
    return anp.conjugate(x) if _iscomplex(x) else x


def _re(x):
    return anp.real(x) if _iscomplex(x) else x


def _T(x):
    return anp.swapaxes(x, -1, -2)


def _H(x):
    return _conj(_T(x))


def _real_dtype(x):
    return _np.finfo(dtype_of(x)).dtype


def _eye(n: int, like):
    return constant_like(_np.eye(n, dtype=_real_dtype(like)), like)


def _diag(x):
    """The diagonals of a stack of matrices, (..., n, n) -> (..., n)."""
    i = _np.arange(x.shape[-1])
    return x[index_like((..., i, i), x)]


def _diag_embed(v):
    """Diagonal matrices from a stack of vectors, (..., n) -> (..., n, n)."""
    return anp.expand_dims(v, -1) * _eye(v.shape[-1], v)


def _trace(x):
    return anp.sum(_diag(x), axis=-1)


def _mat(x):
    """A scalar per matrix, as a (..., 1, 1) array that broadcasts against the stack."""
    return anp.expand_dims(anp.expand_dims(x, -1), -1)


def _inv_gaps(w):
    """F[..., i, j] = 1 / (w_j - w_i), zero on the diagonal.

    Equal values off the diagonal give inf: eigenvector derivatives do not exist
    there, and the rules say so loudly instead of returning a wrong number.
    """
    gaps = anp.expand_dims(w, -2) - anp.expand_dims(w, -1)
    diagonal = constant_like(_np.eye(w.shape[-1], dtype=bool), w)
    with _np.errstate(divide="ignore"):
        return anp.where(diagonal, 0.0, 1.0 / anp.where(diagonal, 1.0, gaps))


def _is_zero(g) -> bool:
    """Whether a cotangent is zero (the output it belongs to was not used).

    Under chainrule.jit a cotangent may be a value of the staged program (jit of a vjp,
    a gradient weighted by an input): anp.any then asks the program, which guards it."""
    if not on_host(g):
        return False  # elsewhere, finding out needs the host
    gv = derivative_free(g)
    return not (anp.any(gv) if isbox(gv) else _np.any(gv))


def _triangle(n: int, like, uplo: str):
    """The strictly lower ('L') or upper ('U') triangle as a 0/1 mask."""
    ones = _np.ones((n, n))
    mask = _np.tril(ones, -1) if uplo.upper() == "L" else _np.triu(ones, 1)
    return constant_like(mask.astype(_real_dtype(like)), like)


def _hermitian_from(x, uplo: str):
    """The Hermitian matrix LAPACK sees when it reads the ``uplo`` triangle of ``x``."""
    off = x * _triangle(x.shape[-1], x, uplo)
    return off + _H(off) + _re(x) * _eye(x.shape[-1], x)


def _hermitian_from_vjp(g, uplo: str):
    """Transpose of ``_hermitian_from``: the gradient lives in the triangle read."""
    return (g + _H(g)) * _triangle(g.shape[-1], g, uplo) + _re(g) * _eye(g.shape[-1], g)


def _solve_right(x, a):
    """x a^-1, by a solve with the transposes."""
    return _T(la.solve(_T(a), _T(x)))


def _stacked(argnum, ans, args, kwargs):
    """Sparsity of a function of each matrix of a stack: its results read that matrix
    only (the whole of it)."""
    return batched_pattern(shape_of(getval(args[argnum])), ans, 2)


def _per_matrix(fun) -> None:
    """The sparsity and batching columns of a function of the last two axes that NumPy
    maps over the leading ones (inv, det, the decompositions ...)."""
    defsparsity(fun, _stacked)
    defbatch(fun, as_is(fun, 2))


# ----------------------------------------------------------------------------- determinants, inverses
def _det_vjp(g, ans, a):
    return match_dtype(_mat(g * ans) * _T(la.inv(a)), a)


def _slogdet_jvp(g, ans, a):
    sign, _ = ans
    t = _trace(la.solve(a, g))
    d_sign = sign * (1j * anp.imag(t)) if _iscomplex(sign) else _np.zeros_like(getval(sign))
    return d_sign, _re(t)


def _slogdet_vjp(g, ans, a):
    g_sign, g_log = g
    sign, _ = ans
    c = g_log + 1j * anp.imag(g_sign * sign) if _iscomplex(sign) else g_log
    return match_dtype(_mat(c) * _T(la.inv(a)), a)


# Taylor rules (normalized coefficients, ``chainrule._core.taylor``), O(order^2) products:
# Y = A^-1 from A Y = I; det and slogdet from q = d/dt log det A = tr(A^-1 A').
def _inverse_series(inverse, a_terms, order: int) -> list:
    """Y_1..Y_order of A(t)^-1 from A Y = I: Y_j = -Y_0 sum_{i=1..j} A_i Y_{j-i}
    (``inverse`` is Y_0, ``a_terms`` A_1, A_2 ...)."""
    y = [inverse]
    for j in range(1, order + 1):
        total = a_terms[0] @ y[j - 1]
        for i in range(2, j + 1):
            total = total + a_terms[i - 1] @ y[j - i]
        y.append(-(inverse @ total))
    return y[1:]


def _inv_taylor(series_in, argnums, ans, args, kwargs, order):
    return tuple(_inverse_series(ans, series_in[0], order))


def _log_det_slope_series(a, a_terms, order: int) -> list:
    """q_0..q_{order-1}, the coefficients of q(t) = tr(A(t)^-1 A'(t)), the derivative of
    log det A(t): q_m = sum_{i=0..m} (m - i + 1) tr(Y_i A_{m-i+1}), Y the inverse's series."""
    inverse = la.inv(a)
    y = [inverse, *_inverse_series(inverse, a_terms, order - 1)]
    q = []
    for m in range(order):
        total = 0.0
        for i in range(m + 1):
            # tr(Y A) without the product: the sum of Y * A^T (no conjugate: holomorphic)
            total = total + (m - i + 1) * anp.sum(y[i] * _T(a_terms[m - i]), axis=(-2, -1))
        q.append(total)
    return q


def _exp_integral_series(y0, q, order: int) -> list:
    """y_1..y_order of y with y' = y q (y_0 = ``y0``, ``q`` q's coefficients):
    y_j = sum_{i=0..j-1} y_i q_{j-1-i} / j."""
    y = [y0]
    for j in range(1, order + 1):
        total = y[0] * q[j - 1]
        for i in range(1, j):
            total = total + y[i] * q[j - 1 - i]
        y.append(total / j)
    return y[1:]


def _det_taylor(series_in, argnums, ans, args, kwargs, order):
    """det' = det q."""
    q = _log_det_slope_series(args[0], series_in[0], order)
    return tuple(_exp_integral_series(ans, q, order))


def _slogdet_taylor(series_in, argnums, ans, args, kwargs, order):
    """log|det|' = Re q; the sign of a complex det turns as sign' = sign i Im(q) (a real
    sign is constant)."""
    sign, _ = ans
    q = _log_det_slope_series(args[0], series_in[0], order)
    logs = [_re(q[j - 1]) / j for j in range(1, order + 1)]
    if _iscomplex(sign):
        signs = _exp_integral_series(sign, [1j * anp.imag(c) for c in q], order)
    else:
        signs = [_np.zeros_like(getval(sign))] * order
    return tuple(zip(signs, logs))


# fmt: off
# (batched JVPs, a leading batch axis on the tangent: the same products and solves
# broadcast over it)
defvjp_direct(la.det,           _det_vjp)
defjvp_direct(la.det,                  lambda g, ans, a: ans * _trace(la.solve(a, g)))
defjvp_batched(la.det,          lambda g, ans, a: ans * _trace(la.solve(a, g)))
deftaylor(la.det,               _det_taylor)
_per_matrix(la.det)
defvjp_direct(la.slogdet_tuple, _slogdet_vjp)
defjvp_direct(la.slogdet_tuple,        _slogdet_jvp)
deftaylor(la.slogdet_tuple,     _slogdet_taylor)
_per_matrix(la.slogdet_tuple)
defvjp_direct(la.inv,           lambda g, ans, a: match_dtype(-_T(ans) @ g @ _T(ans), a))
defjvp_direct(la.inv,                  lambda g, ans, a: -ans @ g @ ans)
defjvp_batched(la.inv,          lambda g, ans, a: -ans @ g @ ans)
deftaylor(la.inv,               _inv_taylor)
_per_matrix(la.inv)
linear(la.matrix_transpose,     lambda g, ans, x: la.matrix_transpose(g))
defsparsity(la.matrix_transpose, copy_rule(la.matrix_transpose.fun, only=(0,)))
defbatch(la.matrix_transpose,   as_is(la.matrix_transpose, 2))
# fmt: on


# ----------------------------------------------------------------------------- solve
def _as_matrix(b, x):
    """``x`` as a stack of matrices: a 1-D right-hand side ``b`` means a column."""
    return anp.expand_dims(x, -1) if anp.ndim(b) == 1 else x


def _from_matrix(b, x):
    return x[..., 0] if anp.ndim(b) == 1 else x


def _solve_vjp_b_full(g, a, b):
    return la.solve(_T(a), _as_matrix(b, g))


def _solve_vjp_a(g, ans, a, b):
    return unbroadcast(-_solve_vjp_b_full(g, a, b) @ _T(_as_matrix(b, ans)), a)


def _solve_vjp_b(g, ans, a, b):
    return unbroadcast(_from_matrix(b, _solve_vjp_b_full(g, a, b)), b)


def _solve_jvp_a(g, ans, a, b):
    return broadcast_tangent(-_from_matrix(b, la.solve(a, g @ _as_matrix(b, ans))), ans)


def _solve_columns(a, rhs):
    """``solve(a, rhs[i])`` for every i of a batch of (n, k) right-hand sides, with one
    factorisation of ``a`` (NumPy's broadcasting would factorise it once per item)."""
    batch, n, k = anp.shape(rhs)
    flat = anp.reshape(anp.moveaxis(rhs, 0, 1), (n, batch * k))
    return anp.moveaxis(anp.reshape(la.solve(a, flat), (n, batch, k)), 1, 0)


def _solve_batched_a(g, ans, a, b):
    if anp.ndim(a) != 2 or anp.ndim(b) > 2:  # stacked systems: the caller loops
        return None
    x = _from_matrix(b, _solve_columns(a, g @ _as_matrix(b, ans)))
    return broadcast_batched_tangent(-x, ans)


def _solve_batched_b(g, ans, a, b):
    if anp.ndim(a) != 2 or anp.ndim(b) > 2:
        return None
    return broadcast_batched_tangent(_from_matrix(b, _solve_columns(a, _as_matrix(b, g))), ans)


def _solve_taylor(series_in, argnums, ans, args, kwargs, order):
    """X = A^-1 B from A X = B: X_j = A_0^-1 (B_j - sum_{i=1..j} A_i X_{j-i})."""
    a, b = args
    a_terms = series_in[argnums.index(0)] if 0 in argnums else ()
    b_terms = series_in[argnums.index(1)] if 1 in argnums else ()
    x = [_as_matrix(b, ans)]
    for j in range(1, order + 1):
        total = _as_matrix(b, b_terms[j - 1]) if b_terms else None
        for i in range(1, j + 1 if a_terms else 1):
            term = a_terms[i - 1] @ x[j - i]
            total = -term if total is None else total - term
        x.append(la.solve(a, total))
    return tuple(broadcast_tangent(_from_matrix(b, c), ans) for c in x[1:])


def _solve_pattern(argnum, ans, args, kwargs):
    """a: each matrix of the stack whole; b: each column of the answer reads b's column."""
    if argnum == 0:
        return _stacked(argnum, ans, args, kwargs)
    return columns_pattern(shape_of(getval(args[1])), shape_of(ans))


def _solve_batch(values, batched, kwargs):
    """solve(a, b): b of one example a vector, or a stack of matrices like a's (NumPy 2
    reads only a 1-D b as a vector, so a batch of vectors is made one of one-column
    matrices); the batched operands' stacking axes are padded to a common rank."""
    (a, b), (batched_a, batched_b) = values, batched
    nd_a, nd_b = example_ndim(a, batched_a), example_ndim(b, batched_b)
    if kwargs or nd_a < 2:
        return NotImplemented
    if not batched_a and nd_a == 2 and nd_b <= 2:
        # one matrix for the whole batch: one factorization, the examples as its columns
        shape = _np.shape(b)
        columns = anp.reshape(anp.moveaxis(b, 0, 1), (shape[1], shape[0] * int(_np.prod(shape[2:]))))
        out = anp.reshape(la.solve(a, columns), (shape[1], shape[0]) + shape[2:])
        return anp.moveaxis(out, 1, 0)
    vector = nd_b == 1
    if vector:
        b, nd_b = anp.expand_dims(b, -1), 2
    lead = max(nd_a, nd_b) - 2
    if batched_a and nd_a - 2 < lead:
        a = anp.expand_dims(a, tuple(range(1, 1 + lead - (nd_a - 2))))
    if batched_b and nd_b - 2 < lead:
        b = anp.expand_dims(b, tuple(range(1, 1 + lead - (nd_b - 2))))
    out = la.solve(a, b)
    return anp.squeeze(out, -1) if vector else out


# fmt: off
defvjp_direct(la.solve, _solve_vjp_a, _solve_vjp_b)
defjvp_direct(la.solve,        _solve_jvp_a, lambda g, ans, a, b: broadcast_tangent(la.solve(a, g), ans))
defjvp_batched(la.solve, _solve_batched_a, _solve_batched_b)
deftaylor(la.solve,     _solve_taylor)
defsparsity(la.solve,   _solve_pattern)
defbatch(la.solve,      _solve_batch)
# fmt: on


# ----------------------------------------------------------------------------- matrix_power
def _power_terms(a, n):
    """(base, m, powers): a^n = base^m with m >= 0, and base^0 .. base^(m-1)."""
    base, m = (la.inv(a), -n) if n < 0 else (a, n)
    powers = [_np.broadcast_to(_eye(a.shape[-1], a), a.shape).astype(dtype_of(a))]
    for _ in range(m - 1):
        powers.append(powers[-1] @ base)
    return base, m, powers


def _matrix_power_jvp(g, ans, a, n):
    base, m, powers = _power_terms(a, n)
    if m == 0:
        return _np.zeros_like(getval(ans))
    if n < 0:
        g = -base @ g @ base
    return sum(powers[i] @ g @ powers[m - 1 - i] for i in range(m))


def _matrix_power_vjp(g, ans, a, n):
    base, m, powers = _power_terms(a, n)
    if m == 0:
        return _np.zeros_like(getval(a))
    out = sum(_T(powers[i]) @ g @ _T(powers[m - 1 - i]) for i in range(m))
    if n < 0:
        out = -_T(base) @ out @ _T(base)
    return match_dtype(out, a)


# fmt: off
defvjp_direct(la.matrix_power, _matrix_power_vjp)
defjvp_direct(la.matrix_power,        _matrix_power_jvp)
_per_matrix(la.matrix_power)
# fmt: on


# ----------------------------------------------------------------------------- cholesky
# A = L L^H from the triangle read; with X = L^-1 dA L^-H, dL = L phi(X), where phi
# keeps the strict lower triangle and half the diagonal. upper=True returns U = L^H.
def _phi(x):
    n = x.shape[-1]
    return x * (_triangle(n, x, "L") + 0.5 * _eye(n, x))


def _cholesky_jvp(g, ans, a, upper=False):
    lower = _H(ans) if upper else ans
    s = _hermitian_from(g, "U" if upper else "L")
    x = la.solve(lower, _H(la.solve(lower, s)))
    d = lower @ _phi(x)
    return _H(d) if upper else d


def _cholesky_vjp(g, ans, a, upper=False):
    lower, g = (_H(ans), _H(g)) if upper else (ans, g)
    x_bar = _phi(_T(lower) @ g)
    s_bar = _T(la.solve(_H(lower), _T(la.solve(_T(lower), x_bar))))
    return match_dtype(_hermitian_from_vjp(s_bar, "U" if upper else "L"), a)


def _cholesky_taylor(series_in, argnums, ans, args, kwargs, order):
    """A = L L^H coefficient by coefficient: L_0 L_j^H + L_j L_0^H = A_j - C_j with
    C_j = sum_{i=1..j-1} L_i L_{j-i}^H, the JVP's equation for the tangent A_j - C_j (C_j
    is Hermitian, so the triangle LAPACK reads gives it back whole)."""
    upper = kwargs.get("upper", False)
    lower = [_H(ans) if upper else ans]
    out = []
    for j in range(1, order + 1):
        g = series_in[0][j - 1]
        for i in range(1, j):
            g = g - lower[i] @ _H(lower[j - i])
        d = _cholesky_jvp(g, ans, *args, **kwargs)
        out.append(d)
        lower.append(_H(d) if upper else d)
    return tuple(out)


# fmt: off
defvjp_direct(la.cholesky, _cholesky_vjp)
defjvp_direct(la.cholesky,        _cholesky_jvp)
deftaylor(la.cholesky,     _cholesky_taylor)
_per_matrix(la.cholesky)
# fmt: on


# ----------------------------------------------------------------------------- eigh, eigvalsh
# With Y = V^H dA V: dw = Re diag(Y), dV = V (F o Y), F from _inv_gaps(w).
def _eigh_jvp(g, ans, a, UPLO="L"):
    w, v = ans
    y = _H(v) @ _hermitian_from(g, UPLO) @ v
    return match_dtype(_re(_diag(y)), w), v @ (_inv_gaps(w) * y)


def _eigh_vjp(g, ans, a, UPLO="L"):
    w, v = ans
    g_w, g_v = g
    inner = _diag_embed(g_w)
    if not _is_zero(g_v):
        inner = inner + _inv_gaps(w) * (_T(v) @ g_v)
    return match_dtype(_hermitian_from_vjp(_conj(v) @ inner @ _T(v), UPLO), a)


def _eigvalsh_jvp(g, ans, a, UPLO="L"):
    _, v = la.eigh(a, UPLO=UPLO)
    return match_dtype(_re(_diag(_H(v) @ _hermitian_from(g, UPLO) @ v)), ans)


def _eigvalsh_vjp(g, ans, a, UPLO="L"):
    _, v = la.eigh(a, UPLO=UPLO)
    s = (_conj(v) * anp.expand_dims(g, -2)) @ _T(v)
    return match_dtype(_hermitian_from_vjp(s, UPLO), a)


# fmt: off
defvjp_direct(la.eigh_tuple, _eigh_vjp)
defjvp_direct(la.eigh_tuple,        _eigh_jvp)
_per_matrix(la.eigh_tuple)
defvjp_direct(la.eigvalsh,   _eigvalsh_vjp)
defjvp_direct(la.eigvalsh,          _eigvalsh_jvp)
_per_matrix(la.eigvalsh)
# fmt: on


# ----------------------------------------------------------------------------- eig, eigvals
# With E = V^-1 dA V: dw = diag(E); dV = V (F o E), then each column's change along
# itself is fixed by NumPy's unit norm: dv_k -= v_k Re(v_k^H dv_k).
def _eig_jvp(g, ans, a):
    w, v = ans
    e = la.solve(v, g @ v)
    dv = v @ (_inv_gaps(w) * e)
    dv = dv - v * _re(anp.sum(_conj(v) * dv, axis=-2, keepdims=True))
    return match_dtype(_diag(e), w), match_dtype(dv, v)


def _eig_vjp(g, ans, a):
    w, v = ans
    g_w, g_v = g
    inner = _diag_embed(g_w)
    if not _is_zero(g_v):
        vt_gv = _T(v) @ g_v
        m = vt_gv - (_T(v) @ _conj(v)) * anp.expand_dims(_re(_diag(vt_gv)), -2)
        inner = inner + _inv_gaps(w) * m
    return match_dtype(la.solve(_T(v), inner @ _T(v)), a)


def _eigvals_jvp(g, ans, a):
    _, v = la.eig(a)
    return match_dtype(_diag(la.solve(v, g @ v)), ans)


def _eigvals_vjp(g, ans, a):
    _, v = la.eig(a)
    return match_dtype(la.solve(_T(v), _diag_embed(g) @ _T(v)), a)


# fmt: off
defvjp_direct(la.eig_tuple, _eig_vjp)
defjvp_direct(la.eig_tuple,        _eig_jvp)
_per_matrix(la.eig_tuple)
deflayout_by_value(la.eig_tuple)  # real where every eigenvalue is
defvjp_direct(la.eigvals,   _eigvals_vjp)
defjvp_direct(la.eigvals,          _eigvals_jvp)
_per_matrix(la.eigvals)
deflayout_by_value(la.eigvals)
# fmt: on


# ----------------------------------------------------------------------------- svd
# A = U S V^H (reduced, k = min(m, n)), dP = U^H dA V, F from _inv_gaps(s^2):
#   dS = Re diag(dP)
#   dU = U (F o (dP S + S dP^H) + i Im diag(dP) / S) + (I - U U^H) dA V S^-1
#   dV = V (F o (S dP + dP^H S)) + (I - V V^H) dA^H U S^-1
# The phase term (complex only) keeps U S V^H = A. Full matrices add completions
# U2, V2 with dU2 = -U1 dU1^H U2 (orthogonal to U1, no rotation among themselves).
def _svd_parts(a, ans, full_matrices):
    u, s, vh = ans
    m, n = a.shape[-2:]
    k = min(m, n)
    u1, u2 = (u[..., :, :k], u[..., :, k:]) if full_matrices and m > k else (u, None)
    vh1, vh2 = (vh[..., :k, :], vh[..., k:, :]) if full_matrices and n > k else (vh, None)
    return u1, u2, s, _H(vh1), None if vh2 is None else _H(vh2)


def _svd_jvp(g, ans, a, full_matrices=True, hermitian=False):
    if hermitian:
        g = _hermitian_from(g, "L")
    u, u2, s, v, v2 = _svd_parts(a, ans, full_matrices)
    m, n = a.shape[-2:]
    k = min(m, n)
    s_row = anp.expand_dims(s, -2)
    s_col = anp.expand_dims(s, -1)
    f = _inv_gaps(s * s)
    dp = _H(u) @ g @ v
    ds = _re(_diag(dp))
    du_inner = f * (dp * s_row + s_col * _H(dp))
    if _iscomplex(dp):
        du_inner = du_inner + _diag_embed(1j * anp.imag(_diag(dp)) / s)
    du = u @ du_inner
    dv = v @ (f * (s_col * dp + _H(dp) * s_row))
    if m > k:
        du = du + (g @ v - u @ dp) / s_row
    if n > k:
        dv = dv + (_H(g) @ u - v @ _H(dp)) / s_row
    if u2 is not None:
        du = anp.concatenate([du, -u @ (_H(du) @ u2)], axis=-1)
    if v2 is not None:
        dv = anp.concatenate([dv, -v @ (_H(dv) @ v2)], axis=-1)
    return match_dtype(du, u), match_dtype(ds, s), match_dtype(_H(dv), ans[2])


def _svd_vjp(g, ans, a, full_matrices=True, hermitian=False):
    u, u2, s, v, v2 = _svd_parts(a, ans, full_matrices)
    g_u, g_s, g_vh = g
    m, n = a.shape[-2:]
    k = min(m, n)
    g_v = _H(g_vh)
    if u2 is not None:
        g_u = g_u[..., :, :k] - _conj(u2) @ _H(g_u[..., :, k:]) @ _conj(u)
    if v2 is not None:
        g_v = g_v[..., :, :k] - _conj(v2) @ _H(g_v[..., :, k:]) @ _conj(v)
    s_row = anp.expand_dims(s, -2)
    s_col = anp.expand_dims(s, -1)
    p_bar = _diag_embed(g_s)
    extra = 0.0
    if not _is_zero(g_u):
        ut_gu = _T(u) @ g_u
        r = _inv_gaps(s * s) * ut_gu
        p_bar = p_bar + (r + _H(r)) * s_row
        if _iscomplex(ut_gu):
            p_bar = p_bar + _diag_embed(1j * anp.imag(_diag(ut_gu)) / s)
        if m > k:
            extra = extra + ((g_u - _conj(u) @ ut_gu) / s_row) @ _T(v)
    if not _is_zero(g_v):
        q = _inv_gaps(s * s) * (_T(v) @ g_v)
        p_bar = p_bar + s_col * (q + _H(q))
        if n > k:
            extra = extra + (_conj(u) / s_row) @ (_H(g_v) - (_H(g_v) @ _conj(v)) @ _T(v))
    out = _conj(u) @ p_bar @ _T(v) + extra
    if hermitian:
        out = _hermitian_from_vjp(out, "L")
    return match_dtype(out, a)


def _svd_values_jvp(g, ans, a, hermitian=False):
    u, _, vh = la.svd(a, full_matrices=False, hermitian=hermitian)
    if hermitian:
        g = _hermitian_from(g, "L")
    return match_dtype(_re(_diag(_H(u) @ g @ _H(vh))), ans)


def _svd_values_vjp(g, ans, a, hermitian=False):
    u, _, vh = la.svd(a, full_matrices=False, hermitian=hermitian)
    out = _conj((u * anp.expand_dims(g, -2)) @ vh)
    return match_dtype(_hermitian_from_vjp(out, "L") if hermitian else out, a)


# fmt: off
defvjp_direct(la.svd_tuple,  _svd_vjp)
defjvp_direct(la.svd_tuple,         _svd_jvp)
_per_matrix(la.svd_tuple)
defvjp_direct(la.svd_values, _svd_values_vjp)
defjvp_direct(la.svd_values,        _svd_values_jvp)
_per_matrix(la.svd_values)
# fmt: on


# ----------------------------------------------------------------------------- qr
# A = [X Y] with X the leading k x k block (k = min(m, n)), X = Q R1, Y = Q R2.
# C = Q^H dX R1^-1; Omega = L - L^H + i Im diag(C), L the strict lower part of C:
#   dQ = Q Omega + (I - Q Q^H) dX R1^-1,  dR1 = (C - Omega) R1,  dR2 = Q^H dY - Omega R2.
# mode='complete' with m > n adds a completion Q2 (and zero rows of R), with
# dQ2 = -Q dQ^H Q2 as for svd's completions.
def _qr_jvp_parts(g, a, q, r):
    m, n = a.shape[-2:]
    k = min(m, n)
    r1 = r[..., :, :k]
    dx = g[..., :, :k]
    c = _solve_right(_H(q) @ dx, r1)
    low = c * _triangle(k, c, "L")
    omega = low - _H(low)
    if _iscomplex(c):
        omega = omega + _diag_embed(1j * anp.imag(_diag(c)))
    dq = q @ omega
    if m > k:
        dq = dq + _solve_right(dx - q @ (_H(q) @ dx), r1)
    dr = (c - omega) @ r1
    if n > k:
        dr = anp.concatenate([dr, _H(q) @ g[..., :, k:] - omega @ r[..., :, k:]], axis=-1)
    return match_dtype(dq, q), match_dtype(dr, r)


def _qr_vjp_parts(g_q, g_r, a, q, r):
    m, n = a.shape[-2:]
    k = min(m, n)
    r1 = r[..., :, :k]
    g_r1 = g_r[..., :, :k]
    omega_bar = _T(q) @ g_q - g_r @ _T(r)
    low = (omega_bar - _H(omega_bar)) * _triangle(k, omega_bar, "L")
    c_bar = g_r1 @ _T(r1) + low
    if _iscomplex(omega_bar):
        c_bar = c_bar + _diag_embed(1j * anp.imag(_diag(omega_bar)))
    x_bar = _conj(q) @ c_bar
    if m > k:
        x_bar = x_bar + g_q - _conj(q) @ (_T(q) @ g_q)
    x_bar = _solve_right(x_bar, _T(r1))
    if n > k:
        x_bar = anp.concatenate([x_bar, _conj(q) @ g_r[..., :, k:]], axis=-1)
    return match_dtype(x_bar, a)


def _qr_split(a, q, r):
    """(Q1, Q2 or None, R1 rows): the reduced factors and the completion, if any."""
    k = min(a.shape[-2:])
    if q.shape[-1] == k:
        return q, None, r
    return q[..., :, :k], q[..., :, k:], r[..., :k, :]


def _qr_jvp(g, ans, a, mode="reduced"):
    q, q2, r = _qr_split(a, *ans)
    dq, dr = _qr_jvp_parts(g, a, q, r)
    if q2 is None:
        return dq, dr
    zeros = constant_like(_np.zeros(ans[1].shape[:-2] + (q2.shape[-1], r.shape[-1]),
                                    dtype=dtype_of(ans[1])), ans[1])
    return (anp.concatenate([dq, -q @ (_H(dq) @ q2)], axis=-1),
            anp.concatenate([dr, zeros], axis=-2))


def _qr_vjp(g, ans, a, mode="reduced"):
    q, q2, r = _qr_split(a, *ans)
    g_q, g_r = g
    if q2 is not None:
        k = q.shape[-1]
        g_q = g_q[..., :, :k] - _conj(q2) @ _H(g_q[..., :, k:]) @ _conj(q)
        g_r = g_r[..., :k, :]
    return _qr_vjp_parts(g_q, g_r, a, q, r)


def _qr_r_jvp(g, ans, a):
    return _qr_jvp_parts(g, a, *la.qr(a))[1]


def _qr_r_vjp(g, ans, a):
    q, r = la.qr(a)
    return _qr_vjp_parts(_np.zeros_like(getval(q)), g, a, q, r)


# fmt: off
defvjp_direct(la.qr_tuple, _qr_vjp)
defjvp_direct(la.qr_tuple,        _qr_jvp)
_per_matrix(la.qr_tuple)
defvjp_direct(la.qr_r,     _qr_r_vjp)
defjvp_direct(la.qr_r,            _qr_r_jvp)
_per_matrix(la.qr_r)
# fmt: on


# ----------------------------------------------------------------------------- pinv, lstsq
# For X = A^+ at constant rank:
#   dX = -X dA X + X X^H dA^H (I - A X) + (I - X A) dA^H X^H X
def _pinv_jvp_core(da, a, x):
    m, n = a.shape[-2:]
    xh = _H(x)
    dah = _H(da)
    return (-x @ da @ x + (x @ xh) @ dah @ (_eye(m, a) - a @ x)
            + (_eye(n, a) - x @ a) @ dah @ (xh @ x))


def _pinv_vjp_core(g, a, x):
    m, n = a.shape[-2:]
    gh = _H(g)
    return (-_T(x) @ g @ _T(x) + _conj(_eye(m, a) - a @ x) @ gh @ (_conj(x) @ _T(x))
            + (_T(x) @ _conj(x)) @ gh @ _conj(_eye(n, a) - x @ a))


def _pinv_hermitian(args, kwargs) -> bool:
    return kwargs.get("hermitian", args[1] if len(args) > 1 else False)


def _pinv_jvp(g, ans, a, *args, **kwargs):
    return _pinv_jvp_core(_hermitian_from(g, "L") if _pinv_hermitian(args, kwargs) else g, a, ans)


def _pinv_vjp(g, ans, a, *args, **kwargs):
    out = _pinv_vjp_core(g, a, ans)
    return match_dtype(_hermitian_from_vjp(out, "L") if _pinv_hermitian(args, kwargs) else out, a)


# fmt: off
defvjp_direct(la.pinv,           _pinv_vjp)
defjvp_direct(la.pinv,                  _pinv_jvp)
_per_matrix(la.pinv)
# fmt: on


# ----------------------------------------------------------------------------- lstsq
# lstsq_tuple answers NumPy's (x, residuals, rank, s). At constant rank, x = A^+ b (pinv's
# derivative, A^+ cut where LAPACK cuts: s <= rcond * s_max); s is svd_values'; the rank
# is an integer (no derivative). residuals = sum |b - A x|^2 over rows (per column of b)
# is there only at full column rank, where A^H (b - A x) = 0: its derivative needs no dx,
#   d residuals = 2 Re sum conj(r) (db - dA x),  r = b - A x  (x the answer).
# Every rule is a sum over the outputs whose cotangents (tangents) are not zero.
def _lstsq_pinv(a, rcond):
    if rcond is None or rcond < 0:  # (LAPACK: a negative rcond means machine precision)
        rcond = _np.finfo(_np.float64).eps * (max(a.shape[-2:]) if rcond is None else 1)
    return la.pinv(a, rcond=rcond)


def _lstsq_residual(ans, a, b):
    """(r, x) as matrices: the residual b - A x of the answer x, and x."""
    x = _as_matrix(b, ans[0])
    return _as_matrix(b, b) - a @ x, x


def _lstsq_jvp_a(g, ans, a, b, rcond=None):
    x, resids, rank, s = ans
    dx = _from_matrix(b, _pinv_jvp_core(g, a, _lstsq_pinv(a, rcond)) @ _as_matrix(b, b))
    d_res = _np.zeros_like(getval(resids))
    if _np.size(d_res):
        r, x_mat = _lstsq_residual(ans, a, b)
        d_res = match_dtype(-2 * anp.sum(_re(_conj(r) * (g @ x_mat)), axis=-2), resids)
    return dx, d_res, _np.zeros_like(getval(rank)), _svd_values_jvp(g, s, a)


def _lstsq_jvp_b(g, ans, a, b, rcond=None):
    x, resids, rank, s = ans
    dx = _lstsq_pinv(a, rcond) @ g
    d_res = _np.zeros_like(getval(resids))
    if _np.size(d_res):
        r, _ = _lstsq_residual(ans, a, b)
        d_res = match_dtype(2 * anp.sum(_re(_conj(r) * _as_matrix(b, g)), axis=-2), resids)
    return dx, d_res, _np.zeros_like(getval(rank)), _np.zeros_like(getval(s))


def _lstsq_vjp_a(g, ans, a, b, rcond=None):
    g_x, g_res, _, g_s = g
    out = _np.zeros_like(getval(a))
    if not _is_zero(g_x):
        g_mat = _as_matrix(b, g_x) @ _T(_as_matrix(b, b))
        out = out + _pinv_vjp_core(g_mat, a, _lstsq_pinv(a, rcond))
    if _np.size(getval(g_res)) and not _is_zero(g_res):
        r, x_mat = _lstsq_residual(ans, a, b)
        out = out - 2 * (_conj(r) * anp.expand_dims(g_res, -2)) @ _T(x_mat)
    if not _is_zero(g_s):
        out = out + _svd_values_vjp(g_s, ans[3], a)
    return match_dtype(out, a)


def _lstsq_vjp_b(g, ans, a, b, rcond=None):
    g_x, g_res, _, _ = g
    out = _np.zeros_like(getval(b))
    if not _is_zero(g_x):
        out = out + _T(_lstsq_pinv(a, rcond)) @ g_x
    if _np.size(getval(g_res)) and not _is_zero(g_res):
        r, _ = _lstsq_residual(ans, a, b)
        out = out + _from_matrix(b, 2 * _conj(r) * anp.expand_dims(g_res, -2))
    return match_dtype(out, b)


def _lstsq_batch(values, batched, kwargs):
    """One LAPACK call per example (NumPy's lstsq takes one matrix), the answers stacked,
    the ranks too. Residuals of different lengths (ranks differ) cannot be stacked: the
    loop then says so, as it does on an empty batch."""
    a, b = values[:2]
    size = anp.shape(a if batched[0] else b)[0]
    answers = [la.lstsq_tuple(a[i] if batched[0] else a, b[i] if batched[1] else b,
                              *values[2:], **kwargs) for i in range(size)]
    if size == 0 or len({anp.shape(ans[1]) for ans in answers}) > 1:
        return NotImplemented
    return tuple(anp.stack([ans[k] for ans in answers]) for k in range(4))


# fmt: off
defvjp_direct(la.lstsq_tuple,    _lstsq_vjp_a, _lstsq_vjp_b)
defjvp_direct(la.lstsq_tuple,           _lstsq_jvp_a, _lstsq_jvp_b)
defsparsity(la.lstsq_tuple,      lambda argnum, ans, args, kwargs: None)
defbatch(la.lstsq_tuple,         _lstsq_batch)
deflabel(la.lstsq_tuple,         "linalg.lstsq({0}, {1})")
# fmt: on


# ----------------------------------------------------------------------------- norms
# A norm is real: with D its derivative "direction" (shaped like x), the VJP is
# g * D and the JVP is Re(sum(D * dx)) over the reduced axes.
def _norm_plan(ndim: int, ord, axis):
    """('vector' | 'matrix', axes, ord) as numpy.linalg.norm reads its arguments."""
    if axis is None:
        if ord is None:
            return "vector", tuple(range(ndim)), 2
        axis = tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(ax % ndim for ax in axes)
    if len(axes) == 1:
        return "vector", axes, 2 if ord is None else ord
    return "matrix", axes, "fro" if ord is None else ord


def _safe_abs(x):
    """(|x| with zeros replaced by 1, the conjugate sign of x) for gradients of |x|."""
    ax = anp.absolute(x)
    zero = derivative_free(ax) == 0
    ax = anp.where(zero, 1.0, ax)
    return ax, _conj(x) / ax


def _extreme_mask(values, axes, largest: bool):
    """1/count where ``values`` attains its max (min) over ``axes``, else 0 (ties share)."""
    values = derivative_free(values)
    target = (_np.max if largest else _np.min)(values, axis=axes, keepdims=True)
    hits = values == target
    return hits / _np.sum(hits, axis=axes, keepdims=True)


def _svd_direction(x, axes, ord):
    """Derivative of the nuclear or spectral norm over the two ``axes``."""
    xm = anp.moveaxis(x, axes, (-2, -1))
    u, _, vh = la.svd(xm, full_matrices=False)
    if ord == 2:
        u, vh = u[..., :, :1], vh[..., :1, :]
    elif ord == -2:
        u, vh = u[..., :, -1:], vh[..., -1:, :]
    return anp.moveaxis(_conj(u @ vh), (-2, -1), axes)


def _norm_direction(x, ans_kept, kind, axes, ord):
    if ord == "nuc" or (kind == "matrix" and ord in (2, -2)):
        return _svd_direction(x, axes, ord)
    ax, sgn = _safe_abs(x)
    if ord in (2, "fro"):
        return _conj(x) / anp.where(derivative_free(ans_kept) == 0, 1.0, ans_kept)
    if kind == "vector":
        if ord == 1:
            return sgn
        if ord in (_np.inf, -_np.inf):
            return _extreme_mask(ax, axes, ord > 0) * sgn
        r = ax / anp.where(derivative_free(ans_kept) == 0, 1.0, ans_kept)
        return r ** (ord - 1) * sgn
    if ord in (1, -1, _np.inf, -_np.inf):
        summed, spread = (axes[0], axes[1]) if ord in (1, -1) else (axes[1], axes[0])
        sums = _np.sum(_np.abs(derivative_free(x)), axis=summed, keepdims=True)
        return _extreme_mask(sums, spread, ord > 0) * sgn
    raise ValueError(f"Invalid norm order {ord!r} for matrices.")


def _norm_rules(fun, plan):
    """VJP and JVP of a norm function whose arguments ``plan`` reads."""

    def parts(ans, x, kwargs):
        kind, axes, ord = plan(anp.ndim(x), kwargs)
        kept = keepdims_shape(anp.shape(x), axes)
        return kind, axes, ord, kept

    def vjp(g, ans, x, *args, **kwargs):
        kwargs.update(zip(("ord", "axis", "keepdims"), args))
        kind, axes, ord, kept = parts(ans, x, kwargs)
        if ord == 0:
            return _np.zeros_like(getval(x))
        direction = _norm_direction(x, anp.reshape(ans, kept), kind, axes, ord)
        return match_dtype(anp.reshape(g, kept) * direction, x)

    def jvp(g, ans, x, *args, **kwargs):
        kwargs.update(zip(("ord", "axis", "keepdims"), args))
        kind, axes, ord, kept = parts(ans, x, kwargs)
        if ord == 0:
            return _np.zeros_like(getval(ans))
        direction = _norm_direction(x, anp.reshape(ans, kept), kind, axes, ord)
        t = _re(anp.sum(direction * g, axis=axes, keepdims=kwargs.get("keepdims", False)))
        return match_dtype(t, ans)

    defvjp_direct(fun, vjp)
    defjvp_direct(fun, jvp)


def _vector_norm_plan(ndim, kw):
    axis = kw.get("axis")
    axes = tuple(range(ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    return "vector", tuple(ax % ndim for ax in axes), kw.get("ord", 2)


def _norm_pattern(plan):
    """Each norm reads the elements it reduces (the axes ``plan`` names)."""

    def rule(argnum, ans, args, kwargs):
        x = getval(args[0])
        kwargs = {**dict(zip(("ord", "axis", "keepdims"), args[1:])), **kwargs}
        return reduced_pattern(shape_of(x), shape_of(ans), plan(anp.ndim(x), kwargs)[1])

    return rule


def _norm_batch(fun):
    """linalg.norm / vector_norm: ``axis=None`` is all of an example's axes (flattened for
    the 2-norm; a vector or matrix norm by the example's rank for other orders)."""

    def rule(values, batched, kwargs):
        if not only_first(batched) or len(values) > 1:
            return NotImplemented
        kwargs = dict(kwargs)
        x, ndim = values[0], example_ndim(values[0], True)
        if kwargs.get("axis") is None:
            if kwargs.get("keepdims"):
                return NotImplemented
            if kwargs.get("ord") is None or fun is not la.norm:
                x, kwargs["axis"] = flat_examples(x), 1
            elif ndim in (1, 2):
                kwargs["axis"] = 1 if ndim == 1 else (1, 2)
            else:
                return NotImplemented
        else:
            kwargs["axis"] = shifted_axis(kwargs["axis"], ndim)
        return fun(x, **kwargs)

    return rule


def _norm_plan_of(ndim, kw):
    return _norm_plan(ndim, kw.get("ord"), kw.get("axis"))


# fmt: off
_norm_rules(la.norm,            _norm_plan_of)
defsparsity(la.norm,            _norm_pattern(_norm_plan_of))
defbatch(la.norm,               _norm_batch(la.norm))
if hasattr(la, "vector_norm"):
    _norm_rules(la.vector_norm, _vector_norm_plan)
    defsparsity(la.vector_norm, _norm_pattern(_vector_norm_plan))
    defbatch(la.vector_norm,    _norm_batch(la.vector_norm))
    _norm_rules(la.matrix_norm, lambda ndim, kw: ("matrix", (ndim - 2, ndim - 1), kw.get("ord", "fro")))
    defsparsity(la.matrix_norm, _norm_pattern(lambda ndim, kw: ("matrix", (ndim - 2, ndim - 1), None)))
    defbatch(la.matrix_norm,    as_is(la.matrix_norm, 2))
# fmt: on
