"""``scipy.sparse`` matrices meeting traced values: products of a sparse matrix and a dense
array, each possibly traced, and a sparse matrix as a traced value.

The products sit below ``chainrule.numpy`` so that a traced array's ``@`` can use them
(``A @ x``, ``A.T @ x``, ``x @ A`` with ``A`` sparse) without importing
``chainrule.scipy``; ``chainrule.scipy.sparse.matmul`` is the same function.

A sparse matrix being differentiated (``grad(lambda A: np.sum((A @ x) ** 2))(A)``) is
traced in its stored values: its vector space is that of its ``data`` (``SparseVSpace``),
its derivative a matrix of its format and pattern holding the derivatives of its stored
values (one per stored entry, duplicates included). A traced sparse matrix is a
``SparseMatrixBox``; what can be done with it goes through ``stored_values(A)`` (its
``data``, a traced array), ``with_values(A, data)`` (a matrix of ``A``'s pattern holding
``data``) and the products, which differentiate in ``A`` too; the solves of
``chainrule.scipy.sparse.linalg`` read a traced ``A`` through ``stored_values``. CSR, CSC,
COO and BSR matrices and arrays take part; other formats are refused with the
conversion to make. SciPy is imported when a sparse value first appears, never at import.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as _np

from .._core.rules import (
    defjvp_batched,
    defjvp_direct,
    defsparsity,
    deftaylor,
    deftaylor_linear,
    defvjp_direct,
)
from .._core.taylor import make_multilinear_taylor
from .._core.tracer import Box, box_fallbacks, getval, primitive
from .._core.vspace import VSpace, container_box_adders, vspace_fallbacks
from .patterns import map_pattern, scipy_sparse, shapes_only

_FORMATS = ("csr", "csc", "coo", "bsr")


def is_sparse_type(kind: type) -> bool:
    """Whether ``kind`` is a SciPy sparse matrix or array class (read off its module, so
    that asking does not import SciPy)."""
    return kind.__module__.startswith("scipy.sparse") and hasattr(kind, "tocsr")


def _checked(A):
    if getattr(A, "format", None) not in _FORMATS:
        raise TypeError(
            f"chainrule differentiates sparse matrices in the formats {', '.join(_FORMATS)} "
            f"(their stored values are one array); this one is {A.format}: convert it "
            f"first, e.g. A.tocsr()."
        )
    return A


def like(A, data):
    """A matrix of ``A``'s class, shape and pattern (its stored entries, in their order)
    holding ``data``; its index arrays are copies (an answer never aliases ``A``)."""
    data = _np.reshape(data, _np.shape(A.data))
    if A.format == "coo":
        return type(A)((data, (A.row.copy(), A.col.copy())), shape=A.shape)
    return type(A)((data, A.indices.copy(), A.indptr.copy()), shape=A.shape)


def stored_coordinates(A) -> tuple[_np.ndarray, _np.ndarray]:
    """The row and column of each stored value, in the order of ``A.data.ravel()``."""
    if A.format == "coo":
        return _np.asarray(A.row, dtype=_np.intp), _np.asarray(A.col, dtype=_np.intp)
    counts = _np.diff(A.indptr)
    major = _np.repeat(_np.arange(counts.size), counts)
    minor = _np.asarray(A.indices, dtype=_np.intp)
    if A.format == "csr":
        return major, minor
    if A.format == "csc":
        return minor, major
    r, c = A.blocksize  # bsr: block (major, minor) holds an r x c block, row-major
    rows = (major[:, None, None] * r + _np.arange(r)[None, :, None]) + _np.zeros((1, 1, c), int)
    cols = (minor[:, None, None] * c + _np.arange(c)[None, None, :]) + _np.zeros((1, r, 1), int)
    return rows.ravel(), cols.ravel()


# ----------------------------------------------------------------------------- primitives
@primitive
def stored_values(A):
    """``A``'s stored values (a copy of ``A.data``): traced where ``A`` is."""
    return _np.array(_checked(A).data, copy=True)


@primitive
def with_values(A, data):
    """The matrix of ``A``'s pattern holding ``data`` (``A.data``'s shape and order)."""
    return like(_checked(A), data)


@primitive
def to_dense(A):
    """``A.toarray()``, traced where ``A`` is."""
    return A.toarray()


def transposed(A):
    """``A.T``, traced where ``A`` is: SciPy's transpose of ``A``'s pattern holding
    ``A``'s values where it puts them (found by transposing their positions)."""
    pattern = getval(A)
    size = int(pattern.data.size)
    moved = like(pattern, _np.arange(1, size + 1)).T
    order = _np.ravel(moved.data).astype(_np.intp) - 1
    return with_values(moved, stored_values(A).ravel()[order])


defvjp_direct(stored_values, lambda g, ans, A: with_values(getval(A), g))
defjvp_direct(stored_values, lambda t, ans, A: stored_values(t))
defvjp_direct(with_values, None, lambda g, ans, A, data: _reshaped(stored_values(g), data))
defjvp_direct(with_values, None, lambda t, ans, A, data: with_values(A, t))
defvjp_direct(to_dense, lambda g, ans, A: with_values(getval(A), _gathered_values(g, A)))
defjvp_direct(to_dense, lambda t, ans, A: to_dense(t))
# (Taylor mode: linear maps of each coefficient; the nested JVP would scale a sparse matrix
# by the traced t, which a plain scipy.sparse matrix cannot hold)
for _linear in (stored_values, with_values, to_dense):
    deftaylor_linear(_linear)


# (The rules compute with the values' own methods and operators, traced or not: this
# module sits below chainrule.numpy, whose boxes use it.)
def _reshaped(values, like_value):
    return values.reshape(_np.shape(getval(like_value)))


def _gathered_values(g, A):
    """A dense cotangent read at ``A``'s stored entries (duplicates read it each)."""
    rows, cols = stored_coordinates(getval(A))
    return g[rows, cols].reshape(_np.shape(getval(A).data))


# ----------------------------------------------------------------------------- the box
class SparseMatrixBox(Box):
    """A traced ``scipy.sparse`` matrix: products (``@``, ``dot``), ``.T``, ``toarray()``,
    scaling by a number, sums with a matrix of the same pattern, and the solves of
    ``chainrule.scipy.sparse.linalg``."""

    __slots__ = ()
    __array_ufunc__ = None  # ndarray @ box: NumPy steps aside, __rmatmul__ answers

    shape = property(lambda self: getval(self).shape)
    ndim = property(lambda self: 2)
    nnz = property(lambda self: getval(self).nnz)
    dtype = property(lambda self: getval(self).dtype)
    format = property(lambda self: getval(self).format)
    T = property(lambda self: transposed(self))

    def transpose(self, axes=None):
        if axes not in (None, (1, 0), [1, 0]):
            raise ValueError("a sparse matrix transposes its two axes only")
        return transposed(self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    dot = __matmul__

    def toarray(self):
        return to_dense(self)

    def tocsr(self):
        if self.format != "csr":
            raise TypeError(_UNSUPPORTED.format(what=f"tocsr() of a traced {self.format} matrix"))
        return self

    def __mul__(self, other):
        if _is_number(other):
            return with_values(getval(self), stored_values(self) * other)
        raise TypeError(_UNSUPPORTED.format(what="A * array (for a product, A @ x)"))

    def __rmul__(self, other):
        return self.__mul__(other)

    def __truediv__(self, other):
        if _is_number(other):
            return with_values(getval(self), stored_values(self) / other)
        raise TypeError(_UNSUPPORTED.format(what="A / array"))

    def __neg__(self):
        return with_values(getval(self), -stored_values(self))

    def __add__(self, other):
        return _same_pattern_sum(self, other, 1.0)

    def __radd__(self, other):
        return _same_pattern_sum(other, self, 1.0)

    def __sub__(self, other):
        return _same_pattern_sum(self, other, -1.0)

    def __rsub__(self, other):
        return _same_pattern_sum(other, self, -1.0)

    def __getattr__(self, name):
        raise AttributeError(_UNSUPPORTED.format(what=f"A.{name}"))


_UNSUPPORTED = (
    "{what}: chainrule differentiates these operations of a traced scipy.sparse matrix A: "
    "A @ x, x @ A, A.dot(x), A.T, A.toarray(), A * number, A / number, -A, A + B with B of "
    "A's pattern, and the solves of chainrule.scipy.sparse.linalg. For others, compute "
    "with chainrule.scipy.sparse.stored_values(A) (a traced copy of A.data) and "
    "with_values(A, data) (a matrix of A's pattern)."
)


def _is_number(x) -> bool:
    return _np.ndim(getval(x)) == 0 and not is_sparse_type(type(getval(x)))


def _same_pattern(A, B) -> bool:
    if A.format != B.format or A.shape != B.shape or A.data.shape != B.data.shape:
        return False
    rows_a, cols_a = stored_coordinates(A)
    rows_b, cols_b = stored_coordinates(B)
    return bool(_np.array_equal(rows_a, rows_b) and _np.array_equal(cols_a, cols_b))


def _same_pattern_sum(a, b, sign: float):
    """``a + sign * b`` for two matrices of one pattern (stored entries in one order)."""
    if not (is_sparse_type(type(getval(a))) and is_sparse_type(type(getval(b)))) or not (
        _same_pattern(getval(a), getval(b))
    ):
        raise TypeError(_UNSUPPORTED.format(what="A + B of another pattern or a dense B"))
    return with_values(getval(a), stored_values(a) + sign * stored_values(b))


# ----------------------------------------------------------------------------- vector space
class SparseVSpace(VSpace):
    """The stored values of sparse matrices of one pattern: a cotangent or tangent is a
    matrix of that pattern (``like``), added and scaled value by value."""

    __slots__ = ("template",)

    def __init__(self, value):
        self.template = _checked(value)
        if _np.result_type(value.dtype).kind not in "fc":
            raise TypeError(
                f"Can't differentiate with respect to a sparse matrix of dtype {value.dtype}: "
                f"convert it to floats first (A.astype(float))."
            )

    size = property(lambda self: int(self.template.data.size))
    shape = property(lambda self: self.template.data.shape)
    iscomplex = property(lambda self: self.template.dtype.kind == "c")

    def _key(self):
        t = self.template
        return (type(t), t.shape, t.data.shape, t.dtype)

    def _like(self, data):
        return like(self.template, data)

    def zeros(self):
        return self._like(_np.zeros_like(self.template.data))

    def ones(self):
        return self._like(_np.ones_like(self.template.data))

    def standard_basis(self):
        for i in range(self.size):
            data = _np.zeros(self.size, dtype=self.template.dtype)
            data[i] = 1
            yield self._like(data)

    def randn(self, rng=None):
        rng = _np.random if rng is None else rng
        return self._like(rng.standard_normal(self.template.data.shape))

    def _add(self, x, y):
        return add_sparse(x, y)

    def _scalar_mul(self, x, a):
        return self._like(getval(x).data * a) if not isinstance(x, Box) else x * a

    def _inner_prod(self, x, y):
        return _np.real(_np.vdot(getval(x).data, getval(y).data))

    def _covector(self, x):
        return self._like(_np.conj(x.data))

    def flatten(self, x):
        return _np.ravel(getval(x).data).copy()

    def unflatten(self, flat):
        return self._like(flat)


def add_sparse(x, y):
    """Two matrices of one pattern added value by value (SciPy's ``+`` would merge
    duplicates and drop explicit zeros: another pattern)."""
    if isinstance(x, Box) or isinstance(y, Box):
        return _same_pattern_sum(x, y, 1.0)
    return like(x, x.data + y.data)


def _register(value) -> bool:
    """A sparse matrix type meets the tracer or a vector space for the first time: its
    cotangents add value by value (the engine adds with ``add_values``)."""
    kind = type(value)
    if not is_sparse_type(kind):
        return False
    container_box_adders[kind] = add_sparse
    return True


box_fallbacks.append((_register, SparseMatrixBox))
vspace_fallbacks.append((_register, SparseVSpace))
container_box_adders[SparseMatrixBox] = add_sparse


# ----------------------------------------------------------------------------- products
def _check_sparse(A, where: str) -> None:
    if not is_sparse_type(type(getval(A))):
        raise TypeError(
            f"chainrule.scipy.sparse.matmul needs a scipy.sparse matrix as its {where} "
            f"operand, got {type(A).__name__}; use chainrule.numpy.matmul for dense ones."
        )


@primitive
def _sparse_dense(A, x):
    return _np.asarray(A @ x)


@primitive
def _dense_sparse(x, A):
    x = _np.asarray(x)
    # x @ A as (A.T @ x.T).T: a sparse matrix on the left keeps the result an ndarray
    return _np.asarray(A.T @ x.T).T


def matmul(a, b):
    """``a @ b`` where exactly one of the two is a ``scipy.sparse`` matrix and the other a
    dense array of one or two dimensions (either traced or not)."""
    if is_sparse_type(type(getval(a))):
        return _sparse_dense(a, b)
    _check_sparse(b, "second")
    return _dense_sparse(a, b)


def _at_entries(A, u, v):
    """The matrix of ``A``'s pattern holding, at stored entry k = (r, c), the sum over j of
    u[r, j] v[c, j] (u, v vectors or matrices): the derivative of sum(u * (A v)) in A's
    stored values."""
    pattern = getval(A)
    rows, cols = stored_coordinates(pattern)
    product = u[rows] * v[cols]
    values = product if _np.ndim(u) == 1 else product.sum(axis=1)
    return with_values(pattern, values.reshape(_np.shape(pattern.data)))


defvjp_direct(_sparse_dense, lambda g, ans, A, x: _at_entries(A, g, x),
              lambda g, ans, A, x: _sparse_dense(A.T, g))  # fmt: skip
defjvp_direct(_sparse_dense, lambda t, ans, A, x: _sparse_dense(t, x),
              lambda t, ans, A, x: _sparse_dense(A, t))  # fmt: skip
defvjp_direct(_dense_sparse, lambda g, ans, x, A: _dense_sparse(g, A.T),
              lambda g, ans, x, A: _at_entries(A, x.T, g.T))  # fmt: skip
defjvp_direct(_dense_sparse, lambda t, ans, x, A: _dense_sparse(t, A),
              lambda t, ans, x, A: _dense_sparse(x, t))  # fmt: skip
for _product in (_sparse_dense, _dense_sparse):
    deftaylor(_product, make_multilinear_taylor(_product))  # a Cauchy product
# a batch of tangents (leading axis) of a vector x: one sparse product for the batch
defjvp_batched(
    _sparse_dense, None, lambda t, ans, A, x: _dense_sparse(t, A.T) if _np.ndim(x) == 1 else None
)
defjvp_batched(
    _dense_sparse, lambda t, ans, x, A: _dense_sparse(t, A) if _np.ndim(x) == 1 else None
)


def _kron_identity(matrix, k: int, left: bool):
    sp = scipy_sparse()
    eye = sp.identity(k, dtype=bool, format="csr")
    pair = (eye, matrix) if left else (matrix, eye)
    return sp.kron(*pair, format="csr").astype(bool)


def _pattern_of(A):
    coo = scipy_sparse().coo_matrix(A)
    return map_pattern(coo.row, coo.col, coo.shape)


def _sparse_dense_pattern(argnum, ans, args, kwargs):
    A, x = args
    if argnum == 0:
        return None  # (in A's values: each output reads a row's, left to dense)
    pattern = _pattern_of(A)  # out[i] depends on x[l] where A[i, l] is stored
    return pattern if _np.ndim(x) == 1 else _kron_identity(pattern, _np.shape(x)[1], False)


def _dense_sparse_pattern(argnum, ans, args, kwargs):
    x, A = args
    if argnum == 1:
        return None
    pattern = _pattern_of(A).T.tocsr()  # out[j] depends on x[l] where A[l, j] is stored
    return pattern if _np.ndim(x) == 1 else _kron_identity(pattern, _np.shape(x)[0], True)


# (a traced A's pattern is fixed: its values are what changes)
defsparsity(_sparse_dense, shapes_only(_sparse_dense_pattern))
defsparsity(_dense_sparse, shapes_only(_dense_sparse_pattern))


# ----------------------------------------------------------------------------- operators
# A traced array's ``@`` asks this table for the product with an operand of a given type:
# ``matmul`` for SciPy's sparse classes, None (the ordinary product) for every other type.

_product_by_type: dict[type, Callable | None] = {}


def product_with(other) -> Callable | None:
    """The product rule for ``box @ other`` / ``other @ box``, or None for NumPy's."""
    kind = type(other)
    try:
        return _product_by_type[kind]
    except KeyError:
        sparse = is_sparse_type(kind) or kind is SparseMatrixBox
        rule = _product_by_type[kind] = matmul if sparse else None
        return rule


def called_by_sparse_dispatch(frame) -> bool:
    """Whether ``frame`` is SciPy's sparse ``@`` dispatch converting its other operand
    with ``numpy.asanyarray``: a traced operand then answers a 0-d object array, on which
    SciPy returns NotImplemented and Python asks the box's ``__rmatmul__`` (the way SciPy
    leaves a product to the other type). An ``spmatrix`` ``*`` (a matrix product there)
    comes the same way and is refused: the box's ``__rmul__`` would multiply elementwise."""
    if frame.f_code.co_name not in ("_matmul_dispatch", "_rmatmul_dispatch") or not str(
        frame.f_globals.get("__name__", "")
    ).startswith("scipy.sparse"):
        return False
    if frame.f_back is not None and frame.f_back.f_code.co_name in ("__mul__", "__rmul__"):
        raise TypeError(
            "A * x with a scipy.sparse matrix A (spmatrix) is a matrix product, which "
            "chainrule takes only as A @ x (or chainrule.scipy.sparse.matmul(A, x)) for a "
            "traced x: write A @ x."
        )
    return True
