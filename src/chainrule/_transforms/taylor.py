"""Taylor mode transforms: ``jet`` (JAX's signature and meaning), and what is built on it:
``taylor_derivatives``, ``hessian_diagonal`` and ``laplacian`` (exact, or the stochastic
estimator). The trace itself is ``chainrule._core.taylor``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import wraps
from math import factorial
from typing import Any

import numpy as _np

from .. import numpy as anp
from .._core.pytree import LEAF, TreeDef, flatten_matching, tree_flatten, tree_map, tree_unflatten
from .._core.taylor import collapsed_trace, taylor_trace
from .._core.tracer import decided, front_ends, live_trace_ids
from .._core.vspace import dense, vspace
from .._user_code.errstate import Deferred
from ..numpy.batched import BatchedArray, BatchSplit, BatchTrace, BatchUnsupported, over_batch
from ..numpy.placement import constant_like, numpy_values
from ..numpy.taylor_patterns import all_finite
from .vmap import vmap


def _scale(value, factor: float):
    return value if factor == 1 else vspace(value).scalar_mul(value, factor)


def jet(fun: Callable, primals: Sequence, series: Sequence,
        factorial_scaled: bool = True) -> tuple[Any, Any]:
    """Taylor mode: push truncated Taylor series through ``fun``, as
    ``jax.experimental.jet.jet``.

    ``primals`` holds one value per positional argument of ``fun`` and ``series`` one
    list per argument of its k terms (every argument the same k): argument i moves along
    ``x_i(t) = primals[i] + sum_j series[i][j-1] t^j / j!`` (``factorial_scaled=True``, the
    default: term j is the j-th derivative) or ``+ series[i][j-1] t^j`` (False: plain Taylor
    coefficients). Returns ``(fun(*primals), series_out)``, ``series_out`` shaped like the
    output with each leaf replaced by the list of its k terms (derivatives of t ->
    fun(x(t)) at 0, or their Taylor coefficients), in one pass: O(k^2) per primitive with a
    closed-form rule, O(2^k) for the others (nested forward mode). Arguments may be pytrees
    (then each term is a pytree like its primal).

    >>> import chainrule.numpy as np
    >>> y, (d1, d2) = jet(np.sin, (0.5 ** 3,), ((3 * 0.5 ** 2, 6 * 0.5),))
    >>> print(round(float(d1), 6), round(float(d2), 6))  # sin(z^3)'s derivatives at 0.5
    0.744148 2.906464
    """
    if not isinstance(primals, tuple | list) or not isinstance(series, tuple | list):
        raise TypeError("jet takes primals and series as tuples (or lists): one primal, and "
                        "one list of terms, per positional argument of fun.")
    if len(primals) != len(series):
        raise ValueError(f"jet got {len(primals)} primals but {len(series)} series: pass one "
                         f"list of terms per primal.")
    orders = {len(terms) for terms in series}
    if len(orders) > 1:
        raise ValueError("jet terms have inconsistent lengths for different arguments: every "
                         "argument's series needs the same number of terms (the order).")
    order = orders.pop() if orders else 0
    leaves, leaf_series, defs = [], [], []
    for primal, terms in zip(primals, series):
        primal_leaves, treedef = tree_flatten(primal)
        for leaf in primal_leaves:
            vspace(leaf)  # integers are refused with a clear message
        per_term = [flatten_matching(term, treedef, "series term", "primal") for term in terms]
        for n in range(len(primal_leaves)):
            leaf_series.append(tuple(_scale(per_term[j][n], 1 / factorial(j + 1)
                                            if factorial_scaled else 1)
                                     for j in range(order)))
        leaves.extend(primal_leaves)
        defs.append((treedef, len(primal_leaves)))

    def rebuild(boxes):
        args, start = [], 0
        for treedef, count in defs:
            args.append(tree_unflatten(treedef, boxes[start:start + count]))
            start += count
        return tuple(args)

    values, out_def, out_series = taylor_trace(lambda args: fun(*args), leaves, leaf_series,
                                               rebuild)
    terms = [[_scale(c, factorial(j + 1) if factorial_scaled else 1) for j, c in enumerate(s)]
             for s in out_series]
    return tree_unflatten(out_def, values), _terms_tree(out_def, iter(terms))


def _terms_tree(treedef: TreeDef, term_lists: Iterator) -> Any:
    """The output's structure with each leaf replaced by the list of its terms (JAX's
    layout). A front end's object holding one value (a Tensor) counts as a leaf: it is
    replaced by the list of its terms, each such an object, not one object around a list."""
    if treedef.kind is None:
        return next(term_lists)
    if treedef.kind in front_ends and treedef.children == (LEAF,):
        return [tree_unflatten(treedef, [term]) for term in next(term_lists)]
    children = [_terms_tree(child, term_lists) for child in treedef.children]
    return tree_unflatten(treedef._replace(children=(LEAF,) * len(children)), children)


def taylor_derivatives(fun: Callable, order: int) -> Callable:
    """``taylor_derivatives(f, k)(x)``: f(x), f'(x), ..., f^(k)(x) stacked on a new leading
    axis, in one Taylor pass. ``x`` is a float or an array, moved along the direction of
    all ones (for a function applied elementwise: every element's derivatives at once).

    >>> import chainrule.numpy as np
    >>> print(taylor_derivatives(np.exp, 4)(0.0))
    [1. 1. 1. 1. 1.]
    """
    if not isinstance(order, int) or order < 0:
        raise ValueError(f"taylor_derivatives needs a whole order >= 0, not {order!r}.")

    @wraps(fun)
    def derivatives(x):
        ones = anp.ones_like(x) if order else None
        zeros = anp.zeros_like(x)
        value, terms = jet(fun, (x,), ([ones] + [zeros] * (order - 1),) if order else ((),))
        return anp.stack([value, *terms])

    return derivatives


def _second_terms(fun: Callable, x, directions):
    """For each row v of ``directions``: v^T H v, H the Hessian of scalar ``fun`` at x (twice
    the second Taylor coefficient along v), in one vectorized Taylor pass."""
    shape = anp.shape(x)

    def along(v):
        v = anp.reshape(v, shape)
        _, (_, second) = jet(fun, (x,), ([v, anp.zeros_like(v)],))
        _check_scalar(second)
        return second

    return vmap(along)(directions)


def _check_scalar(output) -> None:
    if anp.ndim(output) != 0:
        raise ValueError(f"laplacian and hessian_diagonal take a function with a scalar "
                         f"output; this one answers shape {anp.shape(output)}.")


class _Basis:
    """The first coefficients of a collapsed pass along the coordinate directions, kept
    unmaterialised (the d x d identity would be the pass's largest value): along
    direction i, ``scale[i] * e_i``, ``scale`` shaped like one direction (None: all
    ones, the Laplacian's seed). An elementwise function keeps this form (its slope
    joins the scale) and a linear map with a smaller output turns it into the map's
    columns; anything else reads it as the batch it stands for."""

    __slots__ = ("shape", "dtype", "scale")

    def __init__(self, shape: tuple, dtype, scale=None):
        self.shape, self.dtype, self.scale = shape, dtype, scale


def _dense_cotangent(cotangent, basis: _Basis, like):
    """A VJP's answer as a value shaped like one direction (None is zero, in ``like``'s
    array library)."""
    if cotangent is None:
        return constant_like(_np.zeros(basis.shape, basis.dtype), like)
    return dense(cotangent)


class _Directions:
    """The directions of a collapsed Taylor pass: the examples of one batch, the first
    coefficients a ``BatchedArray`` of it or a ``_Basis``; the constants it makes (an
    identity, ones) are made in the array library of ``like``, the point x (CuPy refuses
    NumPy operands: ``placement.constant_like``)."""

    __slots__ = ("trace", "scaled", "like")

    def __init__(self, trace: BatchTrace, like, scaled: bool = False):
        self.trace, self.like, self.scaled = trace, like, scaled

    def _constant(self, value: _np.ndarray):
        return constant_like(value, self.like)

    def _ours(self, value) -> bool:
        return isinstance(value, BatchedArray) and value._trace is self.trace

    def dense(self, firsts: list) -> list:
        """``firsts`` with each ``_Basis`` made the batch it stands for."""
        return [self._dense(first) for first in firsts]

    def _dense(self, first):
        if not isinstance(first, _Basis):
            return first
        identity = self._constant(_np.eye(self.trace.size, dtype=first.dtype))
        batch = identity if first.scale is None else identity * anp.ravel(first.scale)
        return BatchedArray(anp.reshape(batch, (self.trace.size, *first.shape)), self.trace)

    def image(self, linear: Callable, transpose: Callable | None, firsts: list, ans):
        """``linear(*firsts)``, shaped like ``ans``; of one ``_Basis`` with a smaller
        output, the columns of the map's matrix, scaled: the rows of its ``transpose``
        (one batched call on the output's basis), so that the identity never exists."""
        (basis,) = firsts if len(firsts) == 1 else (None,)
        size = self.trace.size
        out = anp.size(ans) if hasattr(ans, "shape") else size  # (not a tuple of arrays)
        rows = None
        if (isinstance(basis, _Basis) and transpose is not None and out < size
                and anp.issubdtype(basis.dtype, anp.floating)
                and anp.issubdtype(anp.result_type(ans), anp.floating)):
            output_basis = self._constant(_np.eye(out, dtype=anp.result_type(ans)))
            rows = over_batch(lambda g: _dense_cotangent(transpose(g), basis, self.like),
                              anp.reshape(output_basis, (out, *anp.shape(ans))), out)
        if rows is None:
            return linear(*self.dense(firsts))
        columns = anp.transpose(anp.reshape(rows, (out, size)))
        if basis.scale is not None:
            columns = columns * anp.reshape(basis.scale, (size, 1))
        return BatchedArray(anp.reshape(columns, (size, *anp.shape(ans))), self.trace)

    def times(self, factor, first):
        """``factor * first`` along every direction (``factor`` the same for all)."""
        if isinstance(first, _Basis):
            scale = factor if first.scale is None else factor * first.scale
            if (anp.shape(scale) == first.shape
                    and anp.result_type(scale) == first.dtype):
                return _Basis(first.shape, first.dtype, scale)
            first = self._dense(first)
        if not self._ours(first) or isinstance(factor, BatchedArray):
            return factor * first
        batch = first._value
        # (the batch axis leads: line up the example's axes with factor's, right-aligned)
        extra = anp.ndim(factor) - (anp.ndim(batch) - 1)
        if extra > 0:
            batch = anp.reshape(batch, (self.trace.size,) + (1,) * extra + anp.shape(batch)[1:])
        return BatchedArray(anp.multiply(factor, batch), self.trace)

    def total_of_squares(self, first):
        """The sum over the directions of ``first * first``."""
        if isinstance(first, _Basis):
            return (self._constant(_np.ones(first.shape, first.dtype)) if first.scale is None
                    else first.scale * first.scale)
        if not self._ours(first):
            return first * first * self.trace.size
        return anp.sum(first._value * first._value, axis=0)

    def scale(self, first):
        """None (an elementwise rule runs along the unit curve), or in a ``scaled`` pass,
        the largest size of ``first``'s coefficient over the directions, per element (shaped
        like one direction): a scale to divide by, so 1 where that is not finite, 0, or too
        small for its reciprocal to be finite (below the dtype's smallest normal)."""
        if not self.scaled:
            return None
        if isinstance(first, _Basis):
            if first.scale is None:
                return self._constant(_np.ones(first.shape, first.dtype))
            size = anp.abs(first.scale)
        elif not self._ours(first):
            size = anp.abs(first)
        elif self.trace.size == 0:
            return self._constant(_np.ones(anp.shape(first._value)[1:],
                                           anp.result_type(first._value)))
        else:
            size = anp.max(anp.abs(first._value), axis=0)
        usable = (size >= _np.finfo(anp.result_type(size)).tiny) & anp.isfinite(size)
        return anp.where(usable, size, anp.ones_like(size))

    def total(self, value):
        """``value`` (one per direction) summed over the directions."""
        return tree_map(self._total, value)

    def _total(self, leaf):
        if isinstance(leaf, BatchedArray) and leaf._trace is self.trace:
            return anp.sum(leaf._value, axis=0)
        return leaf * self.trace.size  # the same along every direction


def _summed_second_terms(fun: Callable, x, count: int, first_of: Callable):
    """The sum over the ``count`` directions v of v^T H v, H the Hessian of scalar ``fun``
    at x, in one collapsed Taylor pass: the value once, the first coefficients batched over
    the directions (``first_of(trace)``: a ``BatchedArray`` of that trace, or a
    ``_Basis``), one summed second coefficient. ``first_of(None)`` gives the directions as
    rows of an array (for ``_second_terms``, where the pass cannot run on the batch)."""
    # (a pass's floating-point errors are told only with its answer: Deferred)
    with Deferred() as errors:
        total = _collapsed_pass(fun, x, count, first_of, False)
    if total is None:
        # a Python decision on a direction's coefficients, or something that cannot run on
        # the batch: each direction's series apart (vmap of jet) sorts that out (and tells)
        return anp.sum(_second_terms(fun, x, first_of(None)))
    if not numpy_values(total):
        # (a GPU or lazy array is not looked at: take the rescued answer where the first
        # is not finite, element by element; floating-point errors are NumPy's alone)
        again = _collapsed_pass(fun, x, count, first_of, True)
        return total if again is None else anp.where(anp.isfinite(total), total, again)
    if not decided(total, all_finite):
        # an elementwise rule's f' or f''/2 along the unit curve may have overflowed where
        # the directions' own coefficients keep the answer finite (CollapsedTaylorNode.
        # _elementwise): run again along curves of their size (a pole stays infinite, and
        # the first pass's errors are told with it)
        with Deferred() as errors_again:
            again = _collapsed_pass(fun, x, count, first_of, True)
        if again is not None and decided(again, all_finite):
            errors_again.tell()
            return again
    errors.tell()
    return total


def _collapsed_pass(fun: Callable, x, count: int, first_of: Callable, scaled: bool):
    """``_summed_second_terms``' collapsed pass (``scaled``: see ``_Directions.scale``), or
    None where a direction's coefficients must be seen apart."""
    trace = BatchTrace(count, quiet=True)
    live_trace_ids.add(trace.id)
    try:
        values, _, derived = collapsed_trace(fun, x, first_of(trace),
                                             _Directions(trace, x, scaled))
    except (Exception, BatchSplit, BatchUnsupported):  # (not KeyboardInterrupt)
        if trace.signal is None:
            raise
    finally:
        live_trace_ids.discard(trace.id)
    if trace.signal is not None:
        return None
    if len(values) != 1:
        raise ValueError(f"laplacian takes a function with a scalar output; this one answers "
                         f"{len(values)} values.")
    _check_scalar(values[0])
    second = derived[0][1]
    if second is None:  # (the output does not depend on x, or only linearly)
        return vspace(values[0]).zeros()
    return 2.0 * second


def _as_float_array(x):
    given = x
    x = anp.asarray(x)
    dtype = anp.result_type(x)
    if dtype.kind == "O":
        raise TypeError(f"laplacian and hessian_diagonal take one float array x (or a float); "
                        f"got a {type(given).__name__}. For several inputs, concatenate them "
                        f"into one array and split it inside the function.")
    if anp.issubdtype(dtype, anp.complexfloating):
        # (the basis directions would be the real units only: half a Laplacian in the
        # real and imaginary parts, and not the complex second derivative either)
        raise TypeError(f"laplacian and hessian_diagonal differentiate real inputs; got "
                        f"dtype {dtype}. For a function of complex z, pass its real and "
                        f"imaginary parts as one real array: f(u[0] + 1j * u[1]).")
    if not anp.issubdtype(dtype, anp.inexact):
        raise TypeError(f"laplacian and hessian_diagonal differentiate float inputs; got dtype "
                        f"{dtype}. Pass x.astype(float).")
    return x


def hessian_diagonal(fun: Callable) -> Callable:
    """``hessian_diagonal(f)(x)``: the diagonal of the Hessian of scalar ``f`` at ``x``,
    shaped like ``x`` (one Taylor pass of second order along each basis direction,
    vectorized; no Hessian is formed).

    >>> import chainrule.numpy as np
    >>> print(hessian_diagonal(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0])))
    [ 6. 12.]
    """

    @wraps(fun)
    def diagonal(x):
        x = _as_float_array(x)
        n = anp.size(x)
        basis = constant_like(_np.eye(n, dtype=anp.result_type(x)), x)
        return anp.reshape(_second_terms(fun, x, basis), anp.shape(x))

    return diagonal


def laplacian(fun: Callable, samples: int | None = None, key: Any = None,
              distribution: str = "rademacher") -> Callable:
    """``laplacian(f)(x)``: the trace of the Hessian of scalar ``f`` at ``x`` (the sum of
    its second derivatives along each coordinate), in collapsed Taylor mode: one pass of
    second order that carries the value once, the first coefficients along the x.size
    basis directions as one batch, and one second coefficient summed over them.

    With ``samples=s``, the stochastic Taylor derivative estimator (STDE): the mean of
    v^T H v over s random directions with E[v v^T] = I (``distribution`` "rademacher", the
    default, or "gaussian"), drawn from ``numpy.random.default_rng(key)`` (without a key,
    seeded from NumPy's global generator at each call) and pushed the same way; unbiased,
    cost s directions instead of x.size.

    >>> import chainrule.numpy as np
    >>> print(laplacian(lambda x: np.sum(x ** 2) / 2)(np.zeros(3)))
    3.0
    """
    if samples is not None and (not isinstance(samples, int) or isinstance(samples, bool)
                                or samples < 1):
        raise ValueError(f"laplacian's samples must be a whole number >= 1, not {samples!r}.")
    if distribution not in ("rademacher", "gaussian"):
        raise ValueError(f"laplacian's distribution is 'rademacher' or 'gaussian', not "
                         f"{distribution!r}.")

    # Without a key, each call seeds its directions from NumPy's global generator (not
    # fresh entropy): a draw that jit and vmap see (they look for the generators a function
    # reaches, its closure included), so jit(laplacian(f, samples=s)) draws anew at each
    # call and vmap of it draws per example, as eager calls do; numpy.random.seed repeats
    # a run.
    seeds = _np.random.mtrand._rand if key is None else None

    @wraps(fun)
    def trace(x):
        x = _as_float_array(x)
        n = anp.size(x)
        dtype = anp.result_type(x)
        if samples is None:
            def basis(trace):
                if trace is None:
                    return constant_like(_np.eye(n, dtype=dtype), x)
                return _Basis(anp.shape(x), dtype)

            return _summed_second_terms(fun, x, n, basis)
        rng = _np.random.default_rng(key if seeds is None else
                                     seeds.randint(2**63, dtype=_np.uint64))
        if distribution == "rademacher":
            directions = rng.choice([-1.0, 1.0], size=(samples, n)).astype(dtype)
        else:
            directions = rng.standard_normal((samples, n)).astype(dtype)
        directions = constant_like(directions, x)

        def drawn(trace):
            if trace is None:
                return directions
            return BatchedArray(anp.reshape(directions, (samples, *anp.shape(x))), trace)

        return _summed_second_terms(fun, x, samples, drawn) / samples

    return trace
