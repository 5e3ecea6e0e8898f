"""Differentiable sparse solves under SciPy's names: ``spsolve``, ``splu``, ``cg``,
``gmres``, ``bicgstab`` (with respect to the right-hand side and, through ``data=``, to
the matrix's stored values), and ``expm_multiply`` (the same two; its VJP in the values
is an integral over the Frechet derivative of the exponential, by refined quadrature).

A matrix with traced values is given as a ``scipy.sparse`` matrix ``A`` for the pattern
and ``data``, its values in the order of ``A.tocsr().data`` (for a CSR ``A``, ``A.data``,
sorted or not).
Every solve is one primitive, ``_solve(data, b, system=...)``: VJPs solve the transposed
system once (lam = M^-T g; d b = lam, d data_k = -lam[row_k] x[col_k]); JVPs solve with
the perturbed right-hand side (t_b - dM x). The rules call ``_solve`` again, so every
order works in both modes. A direct solve keeps its LU factors for the transposed and
perturbed solves (SuperLU solves with A^T from A's factors); an iterative one runs the
same method on the transposed system, with the transposed preconditioner.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as _np
import scipy.sparse as _sp
import scipy.sparse.linalg as _spla

from ..._core.rules import defjvp_direct, defsparsity, defvjp_direct
from ..._core.tracer import decided, derivative_free, getval, notrace_primitive, primitive
from ..._sparsity.patterns import columns_pattern
from ..._sparsity.products import SparseMatrixBox, matmul, stored_coordinates, stored_values
from ...numpy import numpy_wrapper as anp

__all__ = ["spsolve", "spsolve_values", "splu", "cg", "gmres", "bicgstab", "expm_multiply"]

_ITERATIVE = {"cg": _spla.cg, "gmres": _spla.gmres, "bicgstab": _spla.bicgstab}


def _as_csr(A, name: str):
    if not _sp.issparse(A):
        raise TypeError(
            f"{name} needs a scipy.sparse matrix, got {type(A).__name__}; for dense "
            f"matrices use chainrule.numpy.linalg.solve."
        )
    # A's own order, sorted or not (data= is read in it; SciPy's tocsr of a CSR matrix is
    # the matrix itself, so A.tocsr().data is A.data)
    return A.tocsr()


class _System:
    """A sparse system M x = b whose values are an argument: M's CSR pattern (value k
    at ``rows[k], cols[k]``), the method and its options, and the LU factors of M once a
    direct solve has computed them (shared with the transposed system)."""

    def __init__(self, indices, indptr, shape, method: str, options: dict, *, M=None):
        self.indices, self.indptr, self.shape = indices, indptr, shape
        self.rows = _np.repeat(_np.arange(shape[0]), _np.diff(indptr))
        self.cols = indices
        self.method, self.options, self.M = method, options, M
        self.trans, self.factors, self.order = False, {}, None
        self._transposed = self._scatter = self._doubled = None

    def __repr__(self) -> str:
        kind = "transposed " if self.trans else ""
        return f"<{kind}{self.method} system {self.shape}, {self.indices.size} stored>"

    def scatter(self):
        """The 0/1 matrix summing value k into row ``rows[k]`` (found once)."""
        if self._scatter is None:
            k = self.rows.size
            self._scatter = _sp.csr_matrix(
                (_np.ones(k), (self.rows, _np.arange(k))), shape=(self.shape[0], k)
            )
        return self._scatter

    def matrix(self, data):
        # copies: a SciPy routine that sorts its matrix's indices in place would otherwise
        # reorder this pattern (and the caller's values) under the values' order
        return _sp.csr_matrix((data, self.indices, self.indptr), shape=self.shape, copy=True)

    def solve(self, data, b, **first):
        """The solution and SciPy's ``info`` (0: converged); ``first``: the user's ``x0``
        and ``callback``, for the first solve only (the derivatives' start at zero)."""
        data = _np.asarray(data)
        b = _np.asarray(b, dtype=_np.result_type(data, b, 1.0))  # SuperLU takes no integers
        if self.method == "lu":
            return self.lu(data).solve(b, trans="T" if self.trans else "N"), 0
        solver = _ITERATIVE[self.method]
        if b.ndim != 1:
            raise ValueError(f"{self.method} takes a right-hand side of one dimension")
        return solver(self.matrix(data), b, M=self.M, **self.options, **first)

    def lu(self, data):
        """SuperLU's factors of M with the values ``data``, kept for later solves with the
        same values (a solve's derivatives). Other values are factorised anew: a program
        chainrule.jit emits runs with the same system and the values of each call."""
        data = _np.asarray(data)
        key = (data.dtype, data.tobytes())
        kept = self.factors.get("lu")
        if kept is None or kept[0] != key:
            kept = self.factors["lu"] = (key, _spla.splu(self.matrix(data).tocsc(), **self.options))
        return kept[1]

    def transposed(self) -> _System:
        """The system M^T x = g: for LU the same factors (SuperLU solves either way);
        otherwise the CSR pattern of M^T and ``order``, where each value of M^T sits in
        ``data``. Found once."""
        if self._transposed is not None:
            return self._transposed
        if self.method == "lu":
            other = _System(self.indices, self.indptr, self.shape, "lu", self.options)
            other.factors, other.trans = self.factors, not self.trans
            other.rows, other.cols = self.cols, self.rows
            other._transposed = self
        else:
            positions = self.matrix(_np.arange(1, self.indices.size + 1, dtype=float)).T.tocsr()
            positions.sort_indices()
            M = None if self.M is None else _spla.aslinearoperator(self.M).T
            other = _System(
                positions.indices, positions.indptr, self.shape[::-1], self.method,
                self.options, M=M,
            )  # fmt: skip
            other.order = positions.data.astype(_np.intp) - 1
        self._transposed = other
        return other

    def doubled(self):
        """The pattern of [[M, E], [0, M]] (E with M's pattern) and ``order``: its values
        are ``concatenate([m, e, m])[order]`` for M's values m and E's e. Found once."""
        if self._doubled is None:
            k = self.indices.size
            part = [self.matrix(_np.arange(1, k + 1, dtype=float) + j * k) for j in range(3)]
            block = _sp.bmat([[part[0], part[1]], [None, part[2]]], format="csr")
            block.sort_indices()
            system = _System(block.indices, block.indptr, block.shape, self.method, self.options)
            self._doubled = system, block.data.astype(_np.intp) - 1
        return self._doubled


@primitive
def _solve(data, b, *, system: _System, report: dict | None = None, **first):
    """M x = b, M with ``system``'s pattern and values ``data``. ``report`` receives
    SciPy's ``info``; without one (the solves of the rules) a failure warns. ``first``:
    the user's ``x0``/``callback`` (the rules solve without them)."""
    x, info = system.solve(data, b, **first)
    if report is not None:
        report["info"] = info
    elif info != 0:
        warnings.warn(
            f"the {system.method} solve of a derivative (with {system!r}) did not "
            f"converge (info={info}): the derivative is inaccurate. Tighten rtol/atol "
            f"or raise maxiter.",
            RuntimeWarning,
            stacklevel=2,
        )
    return _np.asarray(x).reshape(_np.shape(b))


def _transposed_solve(data, g, system: _System):
    other = system.transposed()
    values = data if other.order is None else data[other.order]
    return _solve(values, g, system=other)


def _outer_at_entries(u, v, system: _System):
    """sum_j u[row_k, j] v[col_k, j] for every stored entry k (u, v vectors or matrices)."""
    product = u[system.rows] * v[system.cols]
    return product if _np.ndim(u) == 1 else anp.sum(product, axis=1)


def _values_vjp(g, ans, data, b, *, system, **_):
    return -_outer_at_entries(_transposed_solve(data, g, system), ans, system)


def _values_jvp(t, ans, data, b, *, system, **_):
    # (M + dM) x = b: dx = -M^-1 (dM x); dM x sums t_k x[col_k] into row_k
    spread = t * ans[system.cols] if _np.ndim(ans) == 1 else t[:, None] * ans[system.cols]
    return _solve(data, -matmul(system.scatter(), spread), system=system)


defvjp_direct(
    _solve,
    _values_vjp,
    lambda g, ans, data, b, *, system, **_: _transposed_solve(data, g, system),
)
defjvp_direct(
    _solve,
    _values_jvp,
    lambda t, ans, data, b, *, system, **_: _solve(data, t, system=system),
)


def _columns_of_b(argnum, ans, args, kwargs):
    """x = M^-1 b (and exp(tA) B): column k reads column k of b; the values, all of x."""
    return None if argnum == 0 else columns_pattern(_np.shape(args[1]), _np.shape(ans))


defsparsity(_solve, _columns_of_b)


def _traced_system(A, data, name: str, method: str, options: dict, M=None):
    """A traced sparse ``A`` (differentiated in its stored values): its values in CSR
    order (a gather of ``stored_values(A)`` for other formats; entries of a row stay in
    their stored order) and the system of that pattern."""
    if data is not None:
        raise TypeError(
            f"{name}: A is traced (its values are differentiated) and data= gives its values "
            f"too: pass one of them."
        )
    pattern = getval(A)
    values = anp.ravel(stored_values(A))
    if pattern.format == "csr":
        indices, indptr = pattern.indices, pattern.indptr
    else:
        rows, cols = stored_coordinates(pattern)
        order = _np.argsort(rows, kind="stable")
        indices, values = cols[order], values[order]
        indptr = _np.concatenate([[0], _np.cumsum(_np.bincount(rows, minlength=pattern.shape[0]))])
    return values, _System(_np.array(indices, copy=True), _np.array(indptr, copy=True),
                           pattern.shape, method, options, M=M)  # fmt: skip


def _system(A, data, name: str, method: str, options: dict, M=None):
    if isinstance(A, SparseMatrixBox):
        return _traced_system(A, data, name, method, options, M)
    A = _as_csr(A, name)
    if data is None:
        data = A.data
    elif _np.shape(data) != A.data.shape:
        raise ValueError(
            f"{name}: data has shape {_np.shape(data)}, A stores {A.data.shape} values "
            f"(data are A's values in the order of A.tocsr().data)"
        )
    # the pattern copied: the caller may sort A's indices in place after the solve
    return data, _System(A.indices.copy(), A.indptr.copy(), A.shape, method, options, M=M)


# ----------------------------------------------------------------------------- direct


def spsolve(A, b, permc_spec: str | None = None, *, data=None):
    """``scipy.sparse.linalg.spsolve(A, b)``: ``b`` a vector or a matrix of right-hand
    sides (traced or not); with ``data``, the matrix has ``A``'s pattern and the values
    ``data`` (traced or not). Solved with SuperLU (as SciPy without UMFPACK), whose
    factors the derivatives reuse."""
    options = {} if permc_spec is None else {"permc_spec": permc_spec}
    data, system = _system(A, data, "spsolve", "lu", options)
    return _solve(data, b, system=system)


def spsolve_values(data, A, b):
    """``spsolve(A, b, data=data)``: the solution of M x = b where M has the pattern of
    sparse ``A`` and the stored values ``data`` (CSR order)."""
    return spsolve(A, b, data=data)


class SuperLU:
    """``splu``'s answer: the LU factors of a sparse matrix, computed once, and
    ``solve(b, trans)`` differentiable in ``b`` and in the matrix's values (the ``data``
    given to ``splu``). The factors are those of SciPy's ``SuperLU`` (``.lu``)."""

    def __init__(self, data, system: _System):
        self._data, self._system = data, system
        self.lu = system.lu(getval(data))  # factorised now, as SciPy does
        self.shape, self.nnz = self.lu.shape, self.lu.nnz

    def solve(self, b, trans: str = "N"):
        """The solution of M x = b (``trans='T'`` or ``'H'``: M^T x = b; real values)."""
        if trans not in ("N", "T", "H"):
            raise ValueError(f"trans={trans!r}: choose 'N', 'T' or 'H'")
        if trans == "N":
            return _solve(self._data, b, system=self._system)
        return _transposed_solve(self._data, b, self._system)

    def __repr__(self) -> str:
        return f"<chainrule SuperLU of a {self.shape} matrix, {self.nnz} stored in L and U>"


def splu(A, permc_spec: str | None = None, *, data=None, **options: Any) -> SuperLU:
    """``scipy.sparse.linalg.splu(A)``: an object whose ``solve(b)`` is differentiable in
    ``b`` and, with ``data`` (``A``'s values in CSR order, traced or not), in the values.
    ``options`` go to SciPy's ``splu`` (``diag_pivot_thresh``, ``relax``, ...)."""
    if permc_spec is not None:
        options["permc_spec"] = permc_spec
    data, system = _system(A, data, "splu", "lu", options)
    return SuperLU(data, system)


# ----------------------------------------------------------------------------- iterative


def _iterative(name: str, A, b, x0, M, callback, data, options: dict, **first):
    options = {k: v for k, v in options.items() if v is not None}
    data, system = _system(A, data, name, name, options, M=M)
    if x0 is not None:
        # (a start, not a parameter: under chainrule.jit the program is specialised on it)
        first["x0"] = _np.asarray(decided(x0, getval))
    if callback is not None:
        first["callback"] = callback
    report: dict = {}
    x = _solve(data, b, system=system, report=report, **first)
    return x, _info_of(x, report=report)


@notrace_primitive
def _info_of(x, *, report: dict) -> int:
    """SciPy's ``info`` of the solve that answered ``x``. A function of ``x``, so that
    chainrule.jit reads it at every run (and guards it) instead of keeping the first."""
    return report["info"]


def cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None, data=None):
    """``scipy.sparse.linalg.cg``: ``(x, info)``, differentiable in ``b`` and, with
    ``data``, in the values of symmetric positive definite ``A``. The derivatives solve
    with the same method and tolerances (warning if one of those solves fails)."""
    return _iterative(
        "cg", A, b, x0, M, callback, data, {"rtol": rtol, "atol": atol, "maxiter": maxiter}
    )


def gmres(
    A, b, x0=None, *, rtol=1e-5, atol=0.0, restart=None, maxiter=None, M=None,
    callback=None, callback_type=None, data=None,
):  # fmt: skip
    """``scipy.sparse.linalg.gmres``: ``(x, info)``, differentiable in ``b`` and, with
    ``data``, in ``A``'s values (as ``cg``)."""
    options = {"rtol": rtol, "atol": atol, "restart": restart, "maxiter": maxiter}
    first = {} if callback_type is None else {"callback_type": callback_type}
    return _iterative("gmres", A, b, x0, M, callback, data, options, **first)


def bicgstab(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None, data=None):
    """``scipy.sparse.linalg.bicgstab``: ``(x, info)``, differentiable in ``b`` and, with
    ``data``, in ``A``'s values (as ``cg``)."""
    return _iterative(
        "bicgstab", A, b, x0, M, callback, data, {"rtol": rtol, "atol": atol, "maxiter": maxiter}
    )


# ----------------------------------------------------------------------------- expm_multiply

# The gradient with respect to A's values is an integral in s (below); Gauss-Legendre
# rules of 8, 16, ... nodes until two successive estimates agree to _EXPM_RTOL.
_EXPM_RTOL = 1e-12
_EXPM_MAX_NODES = 2048
_EPS = _np.finfo(float).eps


def _is_grid(options: dict) -> bool:
    # SciPy's rule: any of these asks for the results at a grid of times
    return any(k in options for k in ("start", "stop", "num", "endpoint"))


def _times(options: dict):
    return _np.linspace(
        options.get("start", 0.0),
        options.get("stop", 1.0),
        options.get("num", 50),
        endpoint=options.get("endpoint", True),
    )


@primitive
def _expm_multiply(A, B, *, system: _System | None = None, **options):
    """exp(t A) B. ``A``: a constant matrix (sparse, dense or a linear operator), or,
    with ``system``, the stored values of a matrix with ``system``'s pattern."""
    if system is not None:
        A = system.matrix(_np.asarray(A))
    return _spla.expm_multiply(A, _np.asarray(B), **options)


def expm_multiply(
    A, B, start=None, stop=None, num=None, endpoint=None, traceA=None, *, data=None
):  # fmt: skip
    """``scipy.sparse.linalg.expm_multiply(A, B)``: exp(t A) B (at one time, or at a grid
    of times with ``start``/``stop``/``num``/``endpoint``), differentiable in ``B`` (a
    vector or matrix, traced or not). ``A``: sparse, dense or a linear operator, constant;
    or, with ``data`` (sparse ``A``'s values in the order of ``A.tocsr().data``, traced or
    not), the matrix with ``A``'s pattern and those values,
    differentiable in them. Derivatives in B: exp(t A^T) g (summed over the time points)
    and the product with the tangent. In the values: the JVP is exact (the top half of the
    exponential of the block matrix [[A, dA], [0, A]] applied to [0; B]); the VJP is the
    Frechet adjoint L(A^T, g B^T) read at the stored entries, an integral over s in [0, 1]
    of (e^(sA^T) g)_i (e^((1-s)A) B)_j, by Gauss-Legendre rules refined until two agree
    to 1e-12 (a RuntimeError if they do not)."""
    options = {
        "start": start, "stop": stop, "num": num, "endpoint": endpoint, "traceA": traceA,
    }  # fmt: skip
    options = {k: _plain_option(k, v) for k, v in options.items() if v is not None}
    if data is None and not isinstance(A, SparseMatrixBox):
        return _expm_multiply(A, B, **options)
    data, system = _system(A, data, "expm_multiply", "expm_multiply", {})
    return _expm_multiply(data, B, system=system, **options)


def _plain_option(name: str, value):
    """A time or trace of ``expm_multiply`` as a plain number: the derivatives are in
    ``B`` and ``A``'s values only (under chainrule.jit, a guarded decision of the program)."""
    plain = derivative_free(value)
    if plain is not value:
        raise TypeError(
            f"expm_multiply is differentiable in B and, with data=, in A's values, not in "
            f"{name}=: pass {name} as a plain number (chainrule.stop_gradient({name}) if it "
            f"is computed from a differentiated value). To differentiate exp(tA) B in t, "
            f"scale A's values by t: expm_multiply(A, B, data=t * A.tocsr().data)."
        )
    return decided(plain, type(getval(plain)))


def _scaled_trace(options: dict, t) -> dict:
    """``traceA`` for a call with t A (or t A^T, whose trace is the same): SciPy estimates
    the trace of a linear operator without it."""
    return {} if "traceA" not in options else {"traceA": t * options["traceA"]}


def _transposed_values(A, system: _System | None):
    """A^T: the constant's transpose, or the values of the transposed pattern (traced)."""
    if system is None:
        return (A.T if hasattr(A, "T") else _spla.aslinearoperator(A).T), None
    other = system.transposed()
    return A[other.order], other


def _expm_vjp(g, ans, A, B, *, system=None, **options):
    AT, other = _transposed_values(A, system)
    if not _is_grid(options):
        return _expm_multiply(AT, g, system=other, **_scaled_trace(options, 1))
    # one result per time point t_i (the leading axis): sum of exp(t_i A^T) g_i
    return sum(_expm_multiply(t * AT, g[i], system=other, **_scaled_trace(options, t))
               for i, t in enumerate(_times(options)))


def _expm_values_vjp(g, ans, data, B, *, system, **options):
    if not _is_grid(options):
        return _frechet_adjoint(data, g, B, system)
    # d/dA of exp(t A) B in direction E is L(tA, tE) B: t times the adjoint at tA
    return sum(
        t * _frechet_adjoint(t * data, g[i], B, system)
        for i, t in enumerate(_times(options))
        if t != 0
    )


def _frechet_adjoint(data, g, B, system: _System):
    """L(A^T, g B^T) at A's stored entries: the integral over s in [0, 1] of
    (e^(sA^T) g)[rows] (e^((1-s)A) B)[cols] (summed over B's columns). Gauss-Legendre
    rules of 8, 16, ... nodes until two agree; the products at the nodes step from node
    to node (e^(s' A) = e^((s'-s) A) e^(s A)), about the cost of two exponentials a rule.
    Traced operations only, so that higher orders differentiate the rule."""
    dataT, other = _transposed_values(data, system)
    previous = None
    nodes = 8
    while nodes <= _EXPM_MAX_NODES:
        s, w = _np.polynomial.legendre.leggauss(nodes)
        s, w = (s + 1) / 2, w / 2
        u = _along(dataT, g, s, other)  # e^(s_k A^T) g
        v = _along(data, B, 1 - s[::-1], system)[::-1]  # e^((1-s_k) A) B
        estimate = sum(w[k] * _outer_at_entries(u[k], v[k], system) for k in range(nodes))
        scale = sum(w[k] * _peak(u[k]) * _peak(v[k]) for k in range(nodes))
        if previous is not None:
            change = _peak(derivative_free(estimate) - derivative_free(previous))
            enough = anp.maximum(_EXPM_RTOL * _peak(estimate), 256 * _EPS * scale)
            if change <= enough:  # (under chainrule.jit, a guarded decision of the program)
                return estimate
        previous, nodes = estimate, 2 * nodes
    raise RuntimeError(
        f"expm_multiply: the gradient with respect to A's values (an integral over s of "
        f"e^(sA^T) g e^((1-s)A) B) did not converge to {_EXPM_RTOL:g} with "
        f"{_EXPM_MAX_NODES} Gauss-Legendre nodes: |A| is too large for this rule; "
        f"scale the problem (exp(A) = exp(A/2)^2: two calls of half the norm) or "
        f"differentiate in B only."
    )


def _peak(x):
    """max |x| (0 for an empty x), a constant to derivatives; under chainrule.jit a value
    of the program, so that the decisions taken on it are its guarded decisions."""
    return anp.max(anp.abs(derivative_free(x)), initial=0.0)


def _along(data, B, times, system: _System) -> list:
    """e^(t A) B at increasing ``times`` (t_0 > 0), each from the one before."""
    out, last, current = [], 0.0, B
    for t in times:
        current = _expm_multiply((t - last) * data, current, system=system)
        out.append(current)
        last = t
    return out


def _expm_values_jvp(t, ans, data, B, *, system, **options):
    """The top half of exp([[A, dA], [0, A]]) [0; B]: L(A, dA) B (at each time point)."""
    block, order = system.doubled()
    values = anp.concatenate([data, t, data])[order]
    n = system.shape[0]
    below = anp.concatenate([_np.zeros(_np.shape(B)), B], axis=0)
    if "traceA" in options:
        options = {**options, "traceA": 2 * options["traceA"]}  # the block's trace
    out = _expm_multiply(values, below, system=block, **options)
    return out[:, :n] if _is_grid(options) else out[:n]


def _constant_matrix(fun):
    def rule(g, ans, A, B, *, system=None, **options):
        if system is None:
            raise TypeError(
                "expm_multiply is differentiable in the matrix through data= only: pass "
                "a scipy.sparse A for the pattern and data=A.tocsr().data (its values)"
            )
        return fun(g, ans, A, B, system=system, **options)

    return rule


defvjp_direct(_expm_multiply, _constant_matrix(_expm_values_vjp), _expm_vjp)
defjvp_direct(
    _expm_multiply,
    _constant_matrix(_expm_values_jvp),
    lambda t, ans, A, B, **options: _expm_multiply(A, t, **options),
)
defsparsity(_expm_multiply, _columns_of_b)
