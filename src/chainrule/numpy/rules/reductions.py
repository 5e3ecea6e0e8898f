"""Rules for reductions and scans.

Selections (max, min, ptp, median, percentile, quantile and their nan forms) are
locally a weighted sum ``sum(W * x, axis)`` with constant weights W, so one pair of
rules serves them all. Ties: an order statistic's weight is shared equally among
all elements equal to it (``max([1, 3, 3])`` sends 0.5 to each 3; the median of
``[1, 2, 2, 5]`` sends 0.5 to each 2). NaNs get no gradient in the nan functions.

prod, cumprod and their nan forms are exact at every order with any zeros: without
zeros their rules divide by x; with zeros they are written with multiplications only
(products of the entries before and after each one, running products as a scan), whose
own derivatives are exact again.
"""

from __future__ import annotations

import math

import numpy as _np

from ..._core.rules import (
    defbatch,
    defjvp_batched,
    defjvp_direct,
    defnew_array,
    defreduction,
    defsilent,
    defsparsity,
    deftakes_masks,
    deftaylor_linear,
    defvjp_direct,
)
from ..._core.tracer import derivative_free, getval, isbox
from ..._sparsity.patterns import (
    _lines,
    contraction_pattern,
    cumulative_pattern,
    first_position,
    map_pattern,
    reduced_pattern,
    reduction_pattern,
    scipy_sparse,
    shapes_only,
)
from .. import numpy_wrapper as anp
from ..batched import example_ndim
from ..batching_patterns import along_axis, named_axes
from ..numpy_boxes import array_astype
from ..placement import SCALAR_TYPES, constant_like, index_like, on_host
from ._helpers import (
    NUMPY_SCALARS,
    batch_shifted_axis,
    dtype_of,
    expand_to,
    keepdims_shape,
    keeps_dims,
    linear,
    match_dtype,
    reduced_count,
    shape_of,
    zero_mask,
)


def _given(value) -> bool:
    return value is not None and value is not _np._NoValue


def _unsupported(name: str, **options) -> None:
    for option, value in options.items():
        if _given(value):
            raise NotImplementedError(
                f"chainrule has no derivative for numpy.{name} with {option}={value!r}: leave "
                f"{option} out, or compute the result from differentiable pieces (e.g. with "
                f"chainrule.numpy.where)."
            )


def _axes(ndim: int, axis) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and ndim:  # (the common call, without NumPy's ndim)
        return (axis % ndim,)
    axes = (axis,) if _np.ndim(axis) == 0 else tuple(axis)
    return tuple(sorted(a % ndim for a in axes)) if ndim else ()


def _real_dtype(x):
    return _np.finfo(dtype_of(x)).dtype if dtype_of(x).kind in "fc" else _np.dtype(float)


def _kept(value, x, axis, keepdims):
    """A reduction's (raw) answer reshaped to broadcast against ``x``."""
    if keeps_dims(keepdims):
        return value
    shape = keepdims_shape(shape_of(x), axis)
    # (an ndarray's own method: numpy.reshape's Python layer costs as much as the reshape)
    return value.reshape(shape) if type(value) is _np.ndarray else _np.reshape(value, shape)


# ----------------------------------------------------------------------------- weighted sums
# A selection's answer is sum(W * x) over the reduced axes, W of shape q_shape + x.shape.


def _weights_vjp(g, x, weights, axis, keepdims):
    if type(g) in SCALAR_TYPES and type(weights) is _np.ndarray and type(x) is _np.ndarray \
            and weights.shape == x.shape and (
                weights.dtype.kind == "b" or getattr(g, "dtype", None) == weights.dtype):
        # one number's cotangent (max(x)): g times the weights as they are, the bits of
        # the reshape to 1 x ... x 1 below without NumPy's ndim/shape/reshape layers (the
        # dtypes agree, or bool weights: a number then promotes as its array would)
        return match_dtype(g * weights, x)
    if type(g) is _np.ndarray and type(weights) is _np.ndarray and type(x) is _np.ndarray \
            and weights.shape == x.shape:
        # an answer's cotangent per answer (max(x, axis=1)): the reshape and product below
        # by the ndarray's own methods, without NumPy's ndim/shape/reshape layers
        return match_dtype(g.reshape(keepdims_shape(x.shape, axis)) * weights, x)
    q_ndim = _np.ndim(weights) - _np.ndim(getval(x))
    q_shape = _np.shape(weights)[:q_ndim]
    g = anp.reshape(g, q_shape + keepdims_shape(shape_of(x), axis))
    out = g * weights
    return match_dtype(anp.sum(out, axis=tuple(range(q_ndim))) if q_ndim else out, x)


def _weights_jvp(t, ans, x, weights, axis):
    q_ndim = _np.ndim(weights) - _np.ndim(getval(x))
    axes = tuple(q_ndim + a for a in _axes(_np.ndim(getval(x)), axis))
    return match_dtype(anp.reshape(anp.sum(t * weights, axis=axes), shape_of(ans)), ans)


def _selection(fun, weights, jvp_rule=None, vjp_rule=None):
    """Rules for ``fun(x, ...)`` with weights ``weights(ans, x, ...) -> (W, axis, keepdims)``
    (``jvp_rule``, ``vjp_rule``: rules of their own, in place of the weighted sums)."""

    def vjp(g, ans, x, *args, **kwargs):
        w, axis, keepdims = weights(ans, x, *args, **kwargs)
        return _weights_vjp(g, x, w, axis, keepdims)

    def jvp(t, ans, x, *args, **kwargs):
        w, axis, _ = weights(ans, x, *args, **kwargs)
        return _weights_jvp(t, ans, x, w, axis)

    defvjp_direct(fun, vjp if vjp_rule is None else vjp_rule)
    defjvp_direct(fun, jvp if jvp_rule is None else jvp_rule)


def _share_equal(mask, axis):
    """``mask`` divided by its count over ``axis``: ties share one unit of weight."""
    count = _np.sum(mask, axis=axis, keepdims=True)
    return mask / _np.maximum(count, 1)


def _extreme_mask(ans, x, axis, keepdims, initial, where):
    """``(mask, alone)``: where ``x`` equals its extreme ``ans``, and whether each answer
    is exactly one element's (no tie, no nan answer, no ``initial`` or ``where``; a real
    ``x``: see ``_extreme_jvp``)."""
    xv, av = derivative_free(x), derivative_free(ans)
    # (a number, the answer over every axis, compares with x as it is: no reshape)
    same = type(av) in NUMPY_SCALARS and av.dtype == dtype_of(xv)  # (as its array compares)
    mask = xv == (av if same else _kept(av, xv, axis, keepdims))
    if _given(where):
        return mask & where, False
    if _given(initial) or dtype_of(xv).kind != "f":  # (the answer may be ``initial``)
        return mask, False
    # An answer that is not nan is one of its elements, so each answer has at least one
    # True in the mask; as many Trues as answers then means exactly one each (a count and
    # an isnan over the answers cost less than the count per answer that ties need).
    if isbox(xv):  # a staged value (chainrule.jit): the program decides, and jit guards
        return mask, bool(anp.count_nonzero(mask) == anp.size(av)) and \
            not bool(anp.any(anp.isnan(av)))
    if type(xv) is not _np.ndarray:  # (a duck array: the shared weights, always right)
        return mask, False
    # (a number is nan where it differs from itself: NumPy's isnan(...).any() of a number
    # costs 2.5 µs, the comparison a few ns)
    nan = av != av if same else _np.isnan(av).any()
    return mask, _np.count_nonzero(mask) == av.size and not nan


def _extreme_shares(mask, alone, x, axis):
    if alone:
        return mask  # (a boolean mask multiplies as the weights 1 and 0)
    return _share_equal(mask, axis).astype(_real_dtype(derivative_free(x)), copy=False)


def _extreme_weights(ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    mask, alone = _extreme_mask(ans, x, axis, keepdims, initial, where)
    return _extreme_shares(mask, alone, x, axis), axis, keepdims


def _extreme_jvp(t, ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    """An extreme's tangent where each answer is one element's: that element's tangent,
    taken at its position (at 1000 x 10, a fifth of the product with the weights and its
    sum over the axis, which ties need)."""
    mask, alone = _extreme_mask(ans, x, axis, keepdims, initial, where)
    ndim = len(shape_of(x))
    axes = _axes(ndim, axis)
    if not alone or 1 < len(axes) < ndim or not axes and ndim:  # (axis=(): no reduction)
        return _weights_jvp(t, ans, x, _extreme_shares(mask, alone, x, axis), axis)
    if isbox(mask):
        # Staged (chainrule.jit), a position read from the mask would be guarded, so each
        # new position would trace again: a sum over the axis instead, of the tangent where
        # the mask holds and 0.0 elsewhere, which is the taken tangent + 0.0 bit for bit
        # (NumPy's sums start from +0.0: a -0.0 alone sums to 0.0). An array answer is laid
        # out in C order, as take's is (the sum keeps t's layout: a batch of tangents
        # whose batch axis is innermost, hessian's, would be summed over later in another
        # order, another last bit); a number stays one (ascontiguousarray answers 1-d).
        taken = anp.sum(anp.where(mask, t, 0.0), axis=axes)
        if len(axes) < ndim:
            taken = anp.ascontiguousarray(taken)
        return match_dtype(anp.reshape(taken, shape_of(ans)), ans)
    if len(axes) == ndim:  # every axis: one answer, a NumPy scalar (keepdims: 1 x ... x 1)
        at = mask.argmax()
    else:
        if axes[0] != ndim - 1:  # the reduced axis last: the positions row after row
            t, mask = anp.moveaxis(t, axes[0], -1), _np.moveaxis(mask, axes[0], -1)
        at = mask.ravel().nonzero()[0]  # (flatnonzero, without NumPy's Python layers)
    # (+ 0.0: a picked -0.0 is 0.0, as in the sum above and the weighted sum of ties; an
    # ndarray's own methods, as in _kept)
    if type(t) is _np.ndarray:
        return match_dtype((t.take(at) + 0.0).reshape(shape_of(ans)), ans)
    return match_dtype(anp.reshape(anp.take(t, at) + 0.0, shape_of(ans)), ans)


_REAL_SCALARS = frozenset([_np.float64, _np.float32])
_INF = float("inf")
_NEGATIVE_ZEROS_SIZE = 4096  # (-0.0s copied from these: 32 kB and 16 kB, read-only)
_NEGATIVE_ZEROS = {_np.dtype(t): _np.full(_NEGATIVE_ZEROS_SIZE, -0.0, t) for t in _REAL_SCALARS}
for _zeros in _NEGATIVE_ZEROS.values():
    _zeros.flags.writeable = False


def _extreme_vjp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    """An extreme's VJP: ``_weights_vjp`` of its weights, but for the common call (max(x) of
    lse: a number's answer, one element's, of a C-ordered real array, with a finite
    cotangent of its dtype) a one-hot array, the bits of the general path's ``g * mask``
    (g at the element, ``g * 0.0`` elsewhere: -0.0 for a negative g) without the product's
    cast of the mask and the general path's tests (3.7 -> 2 µs at 2,500)."""
    if type(x) is _np.ndarray and type(ans) in _REAL_SCALARS and type(g) is type(ans) and \
            ans.dtype is x.dtype and initial is None and where is None and ans == ans and \
            -_INF < g < _INF and x.flags.c_contiguous and x.ndim:
        # (a nan answer, ``initial``, ``where``, an inf g (inf * 0.0 is nan, with NumPy's
        # warning), a 0-d x (a number's answer): the general path)
        mask = x == ans  # (_extreme_mask's, for this call)
        if _np.count_nonzero(mask) == 1:
            size = x.size
            if math.copysign(1.0, g) >= 0.0:
                hot = _np.zeros(size, g.dtype)
            elif size <= _NEGATIVE_ZEROS_SIZE:  # (a copy costs a third of fill's loop)
                hot = _NEGATIVE_ZEROS[g.dtype][:size].copy()
            else:
                hot = _np.empty(size, g.dtype)
                hot.fill(-0.0)
            hot[mask.argmax()] = g  # (C order, as the mask's and x's)
            return hot if x.ndim == 1 else hot.reshape(x.shape)
    mask, alone = _extreme_mask(ans, x, axis, keepdims, initial, where)
    return _weights_vjp(g, x, _extreme_shares(mask, alone, x, axis), axis, keepdims)


def _ptp_weights(ans, x, axis=None, out=None, keepdims=False):
    xv = derivative_free(x)
    top = _share_equal(xv == _np.max(xv, axis=axis, keepdims=True), axis)
    bottom = _share_equal(xv == _np.min(xv, axis=axis, keepdims=True), axis)
    return (top - bottom).astype(_real_dtype(xv), copy=False), axis, keepdims


def _quantile_weights(x, q, axis, method, ignore_nan):
    """Weights of shape ``q.shape + x.shape`` such that the quantiles are ``sum(W * x)``."""
    xv = derivative_free(x)
    xv = xv if hasattr(xv, "ndim") else _np.asarray(xv)
    q = anp.asarray(q, float)  # (a Dask or CuPy q stays in its library: numpy_wrapper)
    axes = _axes(xv.ndim, axis)
    kept_axes = [a for a in range(xv.ndim) if a not in axes]
    moved = _np.transpose(xv, kept_axes + list(axes))
    kept_shape = moved.shape[: len(kept_axes)]
    rows = moved.reshape(kept_shape + (-1,))
    n = rows.shape[-1]
    count = _np.sum(~_np.isnan(rows), axis=-1) if ignore_nan else \
        constant_like(_np.full(kept_shape, n), xv)
    ordered = _np.sort(rows, axis=-1)  # nans sort last
    qs = constant_like(q.reshape((-1,) + (1,) * len(kept_shape)), xv)
    pos = qs * _np.maximum(count - 1, 0)
    if method in ("linear", "midpoint"):
        lo, hi = _np.floor(pos), _np.ceil(pos)
        frac = pos - lo if method == "linear" else _np.where(hi > lo, 0.5, 0.0)
    elif method in ("lower", "higher", "nearest"):
        pick = {"lower": _np.floor, "higher": _np.ceil, "nearest": _np.around}[method](pos)
        lo = hi = pick
        frac = _np.zeros_like(pos)
    else:
        raise NotImplementedError(
            f"chainrule differentiates quantiles with method linear, lower, higher, nearest "
            f"or midpoint, not {method!r}."
        )

    def share(index):
        index = _np.broadcast_to(index, frac.shape).astype(int)[..., None]
        value = _np.take_along_axis(_np.broadcast_to(ordered, frac.shape + (n,)), index, -1)
        return _share_equal(rows == value, -1)

    w = (1 - frac)[..., None] * share(lo) + frac[..., None] * share(hi)
    w = w * (count > 0)[..., None]
    w = w.reshape(q.shape + kept_shape + tuple(xv.shape[a] for a in axes))
    q_ndim = q.ndim
    w = _np.moveaxis(w, list(range(q_ndim, w.ndim)), [q_ndim + a for a in kept_axes + list(axes)])
    return w.astype(_real_dtype(xv))


def _quantile_rule(scale, ignore_nan):
    def weights(ans, x, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
        _unsupported("quantile", weights=weights, overwrite_input=overwrite_input or None)
        return _quantile_weights(x, anp.asarray(q) / scale, axis, method, ignore_nan), axis, \
            keepdims

    return weights


def _median_rule(ignore_nan):
    def weights(ans, x, axis=None, out=None, overwrite_input=False, keepdims=False):
        _unsupported("median", overwrite_input=overwrite_input or None)  # x is reordered
        return _quantile_weights(x, 0.5, axis, "linear", ignore_nan), axis, keepdims

    return weights


# ----------------------------------------------------------------------------- sums and means


def _sum_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
             where=None):
    g = expand_to(g, x, axis, keepdims)
    if _given(where):
        g = anp.where(where, g, anp.zeros_like(g))
    return match_dtype(g, x)


def _sum_jvp(t, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
             where=None):
    # ``initial`` is a constant offset: it has no tangent
    if type(t) is _np.ndarray and not _given(where):  # (what numpy.sum calls, past its layer)
        return _np.add.reduce(t, axis, dtype, keepdims=keeps_dims(keepdims))
    return anp.sum(t, axis, dtype, keepdims=keepdims, **({"where": where} if _given(where) else {}))


def _mean_count(x, axis, where):
    if _given(where):
        mask = _np.broadcast_to(where, shape_of(x))
        return _np.sum(mask, axis=axis, keepdims=True)
    return reduced_count(shape_of(x), axis)


def _mean_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    g = _sum_vjp(g, ans, x, axis, keepdims=keepdims, where=where) / _mean_count(x, axis, where)
    return match_dtype(g, x)


def _mean_jvp(t, ans, x, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    return anp.mean(t, axis, dtype, keepdims=keepdims, **({"where": where} if _given(where) else {}))


def _not_nan(x):
    return ~_np.isnan(derivative_free(x))


def _nansum_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                where=None):
    _unsupported("nansum", where=where)
    g = expand_to(g, x, axis, keepdims)
    return match_dtype(anp.where(_not_nan(x), g, anp.zeros_like(g)), x)


def _nansum_jvp(t, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                where=None):
    t = anp.where(_not_nan(x), t, anp.zeros_like(t))
    return match_dtype(anp.sum(t, axis, dtype, keepdims=keepdims), ans)


def _nanmean_weights(ans, x, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _unsupported("nanmean", where=where)
    return _share_equal(_not_nan(x), axis).astype(_real_dtype(x)), axis, keepdims


# ----------------------------------------------------------------------------- products


def _prod_others(x, axis, keepdims, ans, initial=None):
    """The product of every other element of each reduced slice, zeros included."""
    zero, any_zero = zero_mask(x)
    kept = ans if keeps_dims(keepdims) else anp.reshape(ans, keepdims_shape(shape_of(x), axis))
    if not any_zero:
        return kept / x
    # (ans / x would divide the zeros out, and a mask of them is a constant to the next
    # derivative: with two zeros in a slice the second derivative came out 0)
    shape = shape_of(x)
    axes = tuple(range(len(shape))) if axis is None else tuple(
        a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis))
    ends = tuple(range(len(shape) - len(axes), len(shape)))
    moved = anp.moveaxis(x, axes, ends)
    rows = anp.reshape(moved, (*shape_of(moved)[:len(shape) - len(axes)], -1))
    before = _exclusive_cumprod(rows, -1)
    after = anp.flip(_exclusive_cumprod(anp.flip(rows, -1), -1), -1)
    others = anp.moveaxis(anp.reshape(before * after, shape_of(moved)), ends, axes)
    if _given(initial):
        others = others * initial
    # a slice without zeros keeps ans / x, as where no slice has one: the same bits
    # whichever slices it is reduced with (a vmap's batch, jit's other calls)
    divided = kept / anp.where(zero, 1.0, x)
    return anp.where(anp.any(zero, axis=axes, keepdims=True), others, divided)


def _prod_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
              where=None):
    _unsupported("prod", where=where)
    return match_dtype(expand_to(g, x, axis, keepdims) * _prod_others(x, axis, keepdims, ans,
                                                                      initial), x)


def _prod_jvp(t, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
              where=None):
    others = _prod_others(x, axis, keepdims, ans, initial)
    return match_dtype(anp.sum(t * others, axis=axis, keepdims=keepdims), ans)


def _nan_as_one(x):
    nan = ~_not_nan(x)
    # (for Dask/CuPy, "any nan" would need the host: the where is taken without asking)
    return anp.where(nan, 1.0, x) if not on_host(nan) or nan.any() else x


def _nanprod_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                 where=None):
    _unsupported("nanprod", where=where)
    g = _prod_vjp(g, ans, _nan_as_one(x), axis, keepdims=keepdims, initial=initial)
    return match_dtype(anp.where(_not_nan(x), g, anp.zeros_like(g)), x)


def _nanprod_jvp(t, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                 where=None):
    t = anp.where(_not_nan(x), t, anp.zeros_like(t))
    return _prod_jvp(t, ans, _nan_as_one(x), axis, keepdims=keepdims, initial=initial)


# ----------------------------------------------------------------------------- variances


def _centered(x, axis, ignore_nan):
    """``x`` minus its mean over ``axis`` (zero at nans) and the count of each slice."""
    if not ignore_nan:
        return x - anp.mean(x, axis=axis, keepdims=True), reduced_count(shape_of(x), axis)
    keep = _not_nan(x)
    centered = x - anp.nanmean(x, axis=axis, keepdims=True)
    return anp.where(keep, centered, 0.0), _np.sum(keep, axis=axis, keepdims=True)


def _var_derivative(x, axis, ddof, ignore_nan):
    """D with d var = Re(sum(D * dx)) over ``axis``: 2 conj(x - mean) / (n - ddof)."""
    centered, count = _centered(x, axis, ignore_nan)
    if dtype_of(x).kind == "c":
        centered = anp.conj(centered)
    return centered * 2.0 / (count - ddof)


def _variance(name, ignore_nan, root):
    """VJP and JVP of var/std (``root``) or their nan forms."""

    def options(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
                mean=None, correction=None):
        _unsupported(name, where=where, mean=mean)
        return axis, ddof if not _given(correction) else correction, keepdims

    def vjp(g, ans, x, *args, **kwargs):
        axis, ddof, keepdims = options(x, *args, **kwargs)
        if root:
            g = g / _twice_std(ans)
        d = _var_derivative(x, axis, ddof, ignore_nan)
        return match_dtype(expand_to(g, x, axis, keepdims) * d, x)

    def jvp(t, ans, x, *args, **kwargs):
        axis, ddof, keepdims = options(x, *args, **kwargs)
        d = _var_derivative(x, axis, ddof, ignore_nan)
        out = match_dtype(anp.sum(t * d, axis=axis, keepdims=keepdims), ans)
        return out / _twice_std(ans) if root else out

    return vjp, jvp


def _twice_std(std):
    """2 std, the denominator of std's derivative, with 1 where std is 0: there every
    x - mean is 0, and so is the derivative (std is constant over one element; with more,
    0 is std's subgradient at its kink, and what finite differences see)."""
    return 2 * anp.where(std == 0, 1.0, std)


# ----------------------------------------------------------------------------- scans


def _reverse_cumsum(g, axis):
    """sum(g[j] for j >= i) along ``axis`` (``g`` is 1-D when ``axis`` is None)."""
    axis = 0 if axis is None else axis
    return anp.sum(g, axis=axis, keepdims=True) - anp.cumsum(g, axis=axis) + g


def _cumsum_vjp(g, ans, x, axis=None, dtype=None, out=None):
    return match_dtype(anp.reshape(_reverse_cumsum(g, axis), shape_of(x)), x)


def _nancumsum_vjp(g, ans, x, axis=None, dtype=None, out=None):
    g = _cumsum_vjp(g, ans, x, axis)
    return match_dtype(anp.where(_not_nan(x), g, anp.zeros_like(g)), x)


def _nancumsum_jvp(t, ans, x, axis=None, dtype=None, out=None):
    t = anp.where(_not_nan(x), t, anp.zeros_like(t))
    return match_dtype(anp.cumsum(t, axis=axis, dtype=dtype), ans)


def _flat_if(x, axis):
    return anp.reshape(x, (-1,)) if axis is None else x


def _shifted(v, axis, fill: float):
    """``v`` moved one place along ``axis``: ``fill`` first, v's last entry dropped."""
    index = [slice(None)] * anp.ndim(v)
    index[axis] = slice(0, 1)
    first = anp.full_like(getval(v)[tuple(index)], fill)
    index[axis] = slice(0, -1)
    return anp.concatenate([first, v[tuple(index)]], axis=axis)


def _exclusive_cumprod(v, axis):
    """The product of the entries before each one along ``axis`` (1 for the first)."""
    return anp.cumprod(_shifted(v, axis, 1.0), axis=axis)


def _affine_scan(m, b, axis):
    """``c`` with ``c_j = m_j c_(j-1) + b_j`` (``c_0 = b_0``) along ``axis``, by doubling
    (log2 n steps of products and sums, no division: exact at every order at zeros)."""
    n, step = shape_of(b)[axis], 1
    while step < n:
        index = [slice(None)] * anp.ndim(b)
        index[axis] = slice(0, n - step)
        ahead = [slice(None)] * anp.ndim(b)
        ahead[axis] = slice(0, step)
        pad_b = anp.zeros_like(getval(b)[tuple(ahead)])
        b = b + m * anp.concatenate([pad_b, b[tuple(index)]], axis=axis)
        m = m * anp.concatenate([anp.ones_like(pad_b), m[tuple(index)]], axis=axis)
        step *= 2
    return b


# d ans_j / d x_i = ans_(i-1) prod(x_k, i < k <= j): without zeros ans_j / x_i; with zeros
# the tangent is the recurrence d_j = x_j d_(j-1) + ans_(j-1) t_j, and the gradient
# ans_(i-1) c_i with c_i = g_i + x_(i+1) c_(i+1), both as scans
def _cumprod_grad(g, ans, x, axis):
    _, any_zero = zero_mask(x)
    if not any_zero:
        return _reverse_cumsum(g * ans, axis) / x
    reversed_x = anp.flip(x, axis)
    c = _affine_scan(_shifted(reversed_x, axis, 1.0), anp.flip(g, axis), axis)
    return _shifted(ans, axis, 1.0) * anp.flip(c, axis)


def _cumprod_tangent(t, ans, x, axis):
    _, any_zero = zero_mask(x)
    if not any_zero:
        return ans * anp.cumsum(t / x, axis=axis)
    return _affine_scan(x, _shifted(ans, axis, 1.0) * t, axis)


def _cumprod_vjp(g, ans, x, axis=None, dtype=None, out=None):
    grad = _cumprod_grad(g, ans, _flat_if(x, axis), 0 if axis is None else axis)
    return match_dtype(anp.reshape(grad, shape_of(x)), x)


def _cumprod_jvp(t, ans, x, axis=None, dtype=None, out=None):
    flat_t, flat_x = _flat_if(t, axis), _flat_if(x, axis)
    return match_dtype(_cumprod_tangent(flat_t, ans, flat_x, 0 if axis is None else axis), ans)


def _nancumprod_vjp(g, ans, x, axis=None, dtype=None, out=None):
    g = _cumprod_vjp(g, ans, _nan_as_one(x), axis)
    return match_dtype(anp.where(_not_nan(x), g, anp.zeros_like(g)), x)


def _nancumprod_jvp(t, ans, x, axis=None, dtype=None, out=None):
    t = anp.where(_not_nan(x), t, anp.zeros_like(t))
    return _cumprod_jvp(t, ans, _nan_as_one(x), axis)


def _without_initial(v, axis, include_initial):
    """A NumPy 2 cumulative_* result or cotangent without its leading initial value."""
    if not include_initial:
        return v
    index = [slice(None)] * anp.ndim(v)
    index[axis] = slice(1, None)
    return v[tuple(index)]


def _cumulative_sum_vjp(g, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    axis = 0 if axis is None else axis
    return match_dtype(_reverse_cumsum(_without_initial(g, axis, include_initial), axis), x)


def _cumulative_prod_vjp(g, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    axis = 0 if axis is None else axis
    g, ans = (_without_initial(v, axis, include_initial) for v in (g, ans))
    return match_dtype(_cumprod_grad(g, ans, x, axis), x)


def _cumulative_prod_jvp(t, ans, x, *, axis=None, dtype=None, out=None, include_initial=False):
    axis = 0 if axis is None else axis
    tangent = _cumprod_tangent(t, _without_initial(ans, axis, include_initial), x, axis)
    if include_initial:  # the initial 1 is a constant
        index = [slice(None)] * anp.ndim(ans)
        index[axis] = slice(0, 1)
        initial = _np.zeros_like(getval(ans)[tuple(index)])
        tangent = anp.concatenate([initial, tangent], axis=axis)
    return match_dtype(tangent, ans)


# ----------------------------------------------------------------------------- trace


def _trace_vjp(g, ans, x, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    shape = shape_of(x)
    a1, a2 = axis1 % len(shape), axis2 % len(shape)
    diagonal = _np.eye(shape[a1], shape[a2], k=offset, dtype=_real_dtype(x))
    if a1 > a2:
        diagonal = diagonal.T
    mask_shape = [1] * len(shape)
    mask_shape[a1], mask_shape[a2] = shape[a1], shape[a2]
    g = anp.reshape(g, keepdims_shape(shape, (a1, a2)))
    return match_dtype(g * constant_like(diagonal.reshape(mask_shape), x), x)


# ----------------------------------------------------------------------------- average


def _average_weights(x, axis, weights):
    """``weights`` reshaped to broadcast against ``x`` (1-D weights lie along ``axis``)."""
    if weights is None:
        return None
    if _np.ndim(weights) == 1 and _np.ndim(getval(x)) > 1:
        shape = [1] * _np.ndim(getval(x))
        shape[axis % len(shape)] = _np.shape(weights)[0]
        return anp.reshape(weights, tuple(shape))
    return weights


def _average_parts(x, axis, weights, keepdims):
    w = _average_weights(x, axis, weights)
    full = anp.broadcast_to(w, shape_of(x)) if w is not None else None
    total = (anp.sum(full, axis=axis, keepdims=True) if w is not None
             else reduced_count(shape_of(x), axis))
    return w, full, total


def _average_vjp(argnum):
    def vjp(g, ans, x, axis=None, weights=None, returned=False, *, keepdims=False):
        if returned:
            raise NotImplementedError("chainrule differentiates numpy.average with "
                                      "returned=False only; compute the weight sum separately.")
        w, full, total = _average_parts(x, axis, weights, keepdims)
        g = expand_to(g, x, axis, keepdims) / total
        if argnum == 0:
            return match_dtype(g if w is None else g * full, x)
        avg = ans if keeps_dims(keepdims) else anp.reshape(ans, keepdims_shape(shape_of(x), axis))
        grad_full = g * (x - avg)
        axes = tuple(i for i, n in enumerate(shape_of(w)) if n == 1 and shape_of(x)[i] != 1)
        grad = anp.sum(grad_full, axis=axes, keepdims=True) if axes else grad_full
        return match_dtype(anp.reshape(grad, shape_of(weights)), weights)

    return vjp


def _average_jvp(argnum):
    def jvp(t, ans, x, axis=None, weights=None, returned=False, *, keepdims=False):
        if argnum == 0:
            return anp.average(t, axis, weights, keepdims=keepdims)
        w, full, total = _average_parts(x, axis, weights, keepdims)
        tw = anp.broadcast_to(_average_weights(x, axis, t), shape_of(x))
        avg = ans if keeps_dims(keepdims) else anp.reshape(ans, keepdims_shape(shape_of(x), axis))
        out = anp.sum(tw * (x - avg), axis=axis, keepdims=True) / total
        return match_dtype(anp.reshape(out, shape_of(ans)), ans)

    return jvp


# ----------------------------------------------------------------------------- cov, corrcoef
# cov(m, y) is C = Xc Xc^T / (N - ddof) for the centred observation matrix Xc
# (variables in rows); only real inputs and no frequency or analytic weights.


def _cov_options(name, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None,
                 aweights=None, *, dtype=None):
    _unsupported(name, fweights=fweights, aweights=aweights)
    if dtype_of(m).kind == "c" or (y is not None and dtype_of(y).kind == "c"):
        raise NotImplementedError(f"chainrule differentiates numpy.{name} of real data only.")
    return rowvar, (0 if bias else 1) if ddof is None else ddof


def _as_rows(a, rowvar):
    """``a`` as a 2-D array with variables in rows."""
    if anp.ndim(a) < 2:
        return anp.reshape(a, (1, -1))
    return a if rowvar else anp.transpose(a)


def _cov_input(m, y, rowvar):
    x = _as_rows(m, rowvar)
    return x if y is None else anp.concatenate([x, _as_rows(y, rowvar)], axis=0)


def _from_rows(g, a, rowvar, rows):
    """The rows ``rows`` of a cotangent of ``_cov_input``, shaped back like ``a``."""
    g = g[rows]
    if anp.ndim(a) < 2:
        return match_dtype(anp.reshape(g, shape_of(a)), a)
    return match_dtype(g if rowvar else anp.transpose(g), a)


def _cov_input_vjp(gx, argnum, m, y, rowvar):
    n_m = _np.shape(_as_rows(getval(m), rowvar))[0]
    if argnum == 0:
        return _from_rows(gx, m, rowvar, slice(0, n_m))
    return _from_rows(gx, y, rowvar, slice(n_m, None))


def _cov_matrix_vjp(gc, argnum, m, y, rowvar, ddof):
    x = _cov_input(m, y, rowvar)
    n = shape_of(x)[1]
    xc = x - anp.mean(x, axis=1, keepdims=True)
    k = shape_of(x)[0]
    gc = anp.reshape(gc, (k, k))
    gx = anp.matmul(gc + anp.transpose(gc), xc) / (n - ddof)
    return _cov_input_vjp(gx, argnum, m, y, rowvar)


def _cov_matrix_jvp(t, argnum, ans, m, y, rowvar, ddof):
    x = _cov_input(m, y, rowvar)
    tx = _cov_input(t, None if y is None else _np.zeros_like(getval(y)), rowvar) if argnum == 0 \
        else _cov_input(_np.zeros_like(getval(m)), t, rowvar)
    n = shape_of(x)[1]
    xc = x - anp.mean(x, axis=1, keepdims=True)
    tc = tx - anp.mean(tx, axis=1, keepdims=True)
    half = anp.matmul(tc, anp.transpose(xc))
    return anp.reshape((half + anp.transpose(half)) / (n - ddof), shape_of(ans))


def _cov_vjp(argnum):
    def vjp(g, ans, m, *args, **kwargs):
        rowvar, ddof = _cov_options("cov", m, *args, **kwargs)
        y = args[0] if args else kwargs.get("y")
        return _cov_matrix_vjp(g, argnum, m, y, rowvar, ddof)

    return vjp


def _cov_jvp(argnum):
    def jvp(t, ans, m, *args, **kwargs):
        rowvar, ddof = _cov_options("cov", m, *args, **kwargs)
        y = args[0] if args else kwargs.get("y")
        return match_dtype(_cov_matrix_jvp(t, argnum, ans, m, y, rowvar, ddof), ans)

    return jvp


def _corr_parts(ans, m, y, rowvar):
    _cov_options("corrcoef", m, y)
    c = anp.cov(m, y, rowvar)
    k = int(_np.sqrt(_np.size(getval(c))))
    c = anp.reshape(c, (k, k))
    d = c[index_like((_np.arange(k), _np.arange(k)), c)]
    r = anp.reshape(ans, (k, k))
    return d, r, k


def _corrcoef_vjp(argnum):
    # R = C / sqrt(d d^T), d = diag(C): dR = dC / s - R (dd_i / d_i + dd_j / d_j) / 2
    def vjp(g, ans, m, y=None, rowvar=True, *, dtype=None):
        d, r, k = _corr_parts(ans, m, y, rowvar)
        g = anp.reshape(g, (k, k))
        s = anp.sqrt(d[:, None] * d[None, :])
        gr = g * r
        diag = (anp.sum(gr, axis=1) + anp.sum(gr, axis=0)) / (2 * d)
        gc = g / s - constant_like(_np.eye(k), g) * diag[None, :]
        return _cov_matrix_vjp(gc, argnum, m, y, rowvar, 1)

    return vjp


def _corrcoef_jvp(argnum):
    def jvp(t, ans, m, y=None, rowvar=True, *, dtype=None):
        d, r, k = _corr_parts(ans, m, y, rowvar)
        dc = anp.reshape(_cov_matrix_jvp(t, argnum, anp.cov(m, y, rowvar), m, y, rowvar, 1),
                         (k, k))
        dd = dc[index_like((_np.arange(k), _np.arange(k)), dc)] / d
        s = anp.sqrt(d[:, None] * d[None, :])
        dr = dc / s - r * (dd[:, None] + dd[None, :]) / 2
        return match_dtype(anp.reshape(dr, shape_of(ans)), ans)

    return jvp


def _batched_reduction(reduce):
    """The batched JVP of a linear reduction (sum, mean): the reduction of the batched
    tangent over the shifted axes. None where ``where=`` masks it (the caller loops)."""

    def rule(t, ans, x, axis=None, dtype=None, out=None, keepdims=False, *rest, **kwargs):
        if rest or _given(kwargs.get("where")):
            return None
        return match_dtype(reduce(t, batch_shifted_axis(axis, len(shape_of(x))), dtype,
                                  keepdims=keepdims), ans)

    return rule


def _batched_cumsum(t, ans, x, axis=None, dtype=None, out=None):
    batch = shape_of(t)[0]
    if axis is None:  # the flattened argument
        return match_dtype(anp.cumsum(anp.reshape(t, (batch, -1)), axis=1, dtype=dtype), ans)
    return match_dtype(anp.cumsum(t, axis=batch_shifted_axis(axis, len(shape_of(x))), dtype=dtype),
                       ans)


def _average_pattern(argnum, ans, args, kwargs):
    """``average(a, axis, weights)``: a reduction of ``a`` and of weights shaped like it
    (1-D weights along the axis: every output reads all of them)."""
    if (args[3] if len(args) > 3 else kwargs.get("returned")) or (
        argnum == 2 and shape_of(args[2]) != shape_of(args[0])
    ):
        return None
    return reduction_pattern(argnum, ans, args, kwargs)


def _quantile_pattern(argnum, ans, args, kwargs):
    """``quantile(a, q, axis)`` (percentile, nan forms): a reduction along the axis, for
    each q (the answer's leading axes)."""
    a, q = args[0], args[1]
    axis = args[2] if len(args) > 2 else kwargs.get("axis")
    lead = _np.ndim(q)
    kept = shape_of(ans)[lead:]
    per_q = reduced_pattern(shape_of(a), kept, range(_np.ndim(a)) if axis is None else (
        (axis,) if _np.ndim(axis) == 0 else tuple(axis)))
    return None if per_q is None else scipy_sparse().vstack([per_q] * int(_np.size(q)), format="csr")


def _trace_pattern(argnum, ans, args, kwargs):
    """``trace(x, offset, axis1, axis2)``: each output sums one diagonal."""
    x = args[0]
    given = {**dict(zip(("offset", "axis1", "axis2"), args[1:4])), **kwargs}
    offset, axis1, axis2 = given.get("offset", 0), given.get("axis1", 0), given.get("axis2", 1)
    positions = _np.arange(int(_np.size(x))).reshape(shape_of(x))
    diagonal = _np.diagonal(positions, offset, axis1, axis2)  # (..., the diagonal)
    rows = _np.broadcast_to(_np.arange(int(_np.size(ans))).reshape(diagonal.shape[:-1] + (1,)),
                            diagonal.shape)
    return map_pattern(rows, diagonal, (int(_np.size(ans)), int(_np.size(x))))


def _bincount_pattern(argnum, ans, args, kwargs):
    """``bincount(x, weights)``: bin b sums the weights i with x[i] == b."""
    x = _np.ravel(args[0])
    return map_pattern(x, _np.arange(x.size), (int(_np.size(ans)), x.size))


def _cumulative_new_pattern(argnum, ans, args, kwargs):
    """NumPy 2's ``cumulative_sum``/``cumulative_prod(x, axis, ..., include_initial)``: as
    ``cumsum``, the first output of each line a constant when ``include_initial``."""
    x = args[0]
    axis = kwargs.get("axis", args[1] if len(args) > 1 else None)
    if axis is None:
        axis = 0 if _np.ndim(x) <= 1 else None
    if axis is None or not kwargs.get("include_initial", False):
        return cumulative_pattern(0, ans, (x, axis), {})
    lines_in = _lines(shape_of(x), axis)
    lines_out = _lines(shape_of(ans), axis)
    before, upto = _np.tril_indices(lines_in.shape[1])
    return map_pattern(lines_out[:, before + 1], lines_in[:, upto],
                       (int(_np.size(ans)), int(_np.size(x))))


def _covariance_pattern(argnum, ans, args, kwargs):
    """``cov(m)``/``corrcoef(m)`` of variables in rows (columns with ``rowvar=False``):
    output (i, j) reads the observations of variables i and j. Dense with ``y`` or weights."""
    m = args[0]
    if argnum != 0 or _np.ndim(m) != 2 or len(args) > 2 or (
        len(args) > 1 and args[1] is not None
    ) or any(kwargs.get(k) is not None for k in ("y", "fweights", "aweights")):
        return None
    rowvar = kwargs.get("rowvar", True)
    own_i, own_j = ("ik", "jk") if rowvar else ("ki", "kj")
    n = shape_of(ans)
    return (contraction_pattern([own_i], "ij", [shape_of(m)], n, 0, [None])
            + contraction_pattern([own_j], "ij", [shape_of(m)], n, 0, [None])).tocsr()


def _scalar_q_batch(fun):
    """percentile/quantile and kin: an array of q would put its axes before the batch."""
    rule = along_axis(fun, "all")

    def scalar_q(values, batched, kwargs):
        q = values[1] if len(values) > 1 else kwargs.get("q")
        if _np.ndim(q) or kwargs.get("weights") is not None:
            return NotImplemented
        return rule(values, batched, kwargs)

    return scalar_q




def _unweighted_batch(rule):
    def unweighted(values, batched, kwargs):
        if len(values) > 2 or kwargs.get("weights") is not None:
            return NotImplemented
        return rule(values, batched, kwargs)
    return unweighted




def _cov_batch(values, batched, kwargs):
    """cov(m[, y], rowvar, bias, ddof) as NumPy computes it, for a batch of data (weights
    and dtype= are left to the loop)."""
    m, args = values[0], list(values[1:])
    names = ["y", "rowvar", "bias", "ddof", "fweights", "aweights"]
    options = dict(zip(names, args), **kwargs)
    if (any(batched[2:]) or set(options) - {"y", "rowvar", "bias", "ddof"}
            or options.get("fweights") is not None or options.get("aweights") is not None):
        return NotImplemented
    y, rowvar = options.get("y"), options.get("rowvar", True)
    ddof = options.get("ddof")
    ddof = (0 if options.get("bias", False) else 1) if ddof is None else ddof
    batched_y = len(batched) > 1 and batched[1]
    if (ddof != int(ddof) or example_ndim(m, True) > 2
            or y is not None and example_ndim(y, batched_y) > 2):
        return NotImplemented  # (NumPy's errors, from the loop)
    if y is not None and not batched_y:
        y = anp.broadcast_to(y, (_np.shape(m)[0],) + _np.shape(y))
    if _np.result_type(m).kind == "c" or y is not None and _np.result_type(y).kind == "c":
        return NotImplemented  # (chainrule's cov refuses complex data: the loop says so)
    rows = _cov_rows(m, rowvar)
    if y is not None:
        rows = anp.concatenate_args(1, rows, _cov_rows(y, rowvar))
    rows = array_astype(rows, _np.result_type(rows, _np.float64))
    count = _np.shape(rows)[2] - ddof
    centred = rows - anp.mean(rows, axis=2, keepdims=True)
    c = anp.matmul(centred, anp.conj(anp.swapaxes(centred, 1, 2)))
    with _np.errstate(divide="ignore"):
        c = c * _np.true_divide(1, max(count, 0))
    k = _np.shape(c)[1]
    return anp.reshape(c, (_np.shape(c)[0],) + ((k, k) if k != 1 else ()))


def _cov_rows(a, rowvar):
    """A batch of cov's data as rows of variables, as NumPy's ``array(a, ndmin=2)`` and
    transpose do for one example."""
    shape = _np.shape(a)
    if len(shape) < 3:
        return anp.reshape(a, (shape[0], 1, int(_np.prod(shape[1:]))))
    return a if rowvar or shape[1] == 1 else anp.swapaxes(a, 1, 2)


def _bincount_batch(values, batched, kwargs):
    """bincount of each example, one call for all when every example's count has the same
    length (the examples' values offset to their own bins)."""
    x = values[0]
    weights = values[1] if len(values) > 1 else kwargs.get("weights")
    minlength = values[2] if len(values) > 2 else kwargs.get("minlength", 0)
    if (not batched[0] or any(batched[2:]) or _np.ndim(x) != 2
            or _np.result_type(x).kind not in "iu"):
        return NotImplemented  # (NumPy's errors, from the loop)
    size, length = _np.shape(x)[0], minlength
    if _np.size(x):
        lengths = _np.maximum(_np.max(x, axis=1) + 1, minlength)
        if (lengths != lengths[0]).any() or _np.min(x) < 0:
            return NotImplemented  # (answers of different lengths, or NumPy's error)
        length = int(lengths[0])
    if weights is not None and not (len(batched) > 1 and batched[1]):
        weights = anp.broadcast_to(weights, _np.shape(x))
    positions = x + _np.arange(size)[:, None] * length
    counts = anp.bincount(_np.ravel(positions), None if weights is None else
                          anp.ravel(weights), size * length)
    return anp.reshape(counts, (size, length))


# fmt: off
# One block per primitive: its VJP and JVP (or the helper that registers both), batched
# JVP, sparsity pattern, batching rule (``chainrule.numpy.batching_patterns``) and Taylor
# rule (linear: a sum; piecewise linear: a selection, whose weights the value alone fixes).
# ----------------------------------------------------------------------------- sums and means
defvjp_direct(anp.sum,     _sum_vjp, reads=())  # only the input's shape
defjvp_direct(anp.sum,            _sum_jvp)
defjvp_batched(anp.sum,    _batched_reduction(anp.sum))
defsparsity(anp.sum,       reduction_pattern)  # each output on the elements reduced into it
defbatch(anp.sum,          along_axis(anp.sum, "all"))
deftaylor_linear(anp.sum)
defnew_array(anp.sum)      # never a view of its operand (jit)
defreduction(anp.sum,      _np.add)  # on an ndarray: add.reduce (jit calls it)
defsilent(anp.sum,         "one number")  # a sum of one number adds nothing (jit)
deftakes_masks(anp.sum)    # a count of a mask has no shape of its values (jit)
defvjp_direct(anp.mean,    _mean_vjp)
defjvp_direct(anp.mean,           _mean_jvp)
defjvp_batched(anp.mean,   _batched_reduction(anp.mean))
defsparsity(anp.mean,      reduction_pattern)
defbatch(anp.mean,         along_axis(anp.mean, "all"))
deftaylor_linear(anp.mean)
defvjp_direct(anp.nansum,  _nansum_vjp)
defjvp_direct(anp.nansum,         _nansum_jvp)
defsparsity(anp.nansum,    reduction_pattern)
defbatch(anp.nansum,       along_axis(anp.nansum, "all"))
deftaylor_linear(anp.nansum)
_selection(anp.nanmean,    _nanmean_weights)
defsparsity(anp.nanmean,   reduction_pattern)
defbatch(anp.nanmean,      along_axis(anp.nanmean, "all"))
deftaylor_linear(anp.nanmean)
defvjp_direct(anp.average, _average_vjp(0), None, _average_vjp(2), argnums=(0, 1, 2))
defjvp_direct(anp.average,        _average_jvp(0), None, _average_jvp(2), argnums=(0, 1, 2))
defsparsity(anp.average,   shapes_only(_average_pattern, lambda n: (0, 2)))
defbatch(anp.average,      _unweighted_batch(along_axis(anp.average, "all")))
linear(anp.trace,          _trace_vjp)
defsparsity(anp.trace,     _trace_pattern)
defbatch(anp.trace,        named_axes(anp.trace, (2, "axis1", 0), (3, "axis2", 1)))

defvjp_direct(anp.bincount, None, lambda g, ans, x, w, minlength=0: match_dtype(g[x], w))
defjvp_direct(anp.bincount,       None, lambda t, ans, x, w, minlength=0: anp.bincount(x, t, minlength))
defsparsity(anp.bincount,  shapes_only(_bincount_pattern, lambda n: (1,)))
defbatch(anp.bincount,     _bincount_batch)

# ----------------------------------------------------------------------------- products
defvjp_direct(anp.prod,    _prod_vjp)
defjvp_direct(anp.prod,           _prod_jvp)
defsparsity(anp.prod,      reduction_pattern)
defbatch(anp.prod,         along_axis(anp.prod, "all"))
defnew_array(anp.prod)
defreduction(anp.prod,     _np.multiply)
defsilent(anp.prod,        "one number")
defvjp_direct(anp.nanprod, _nanprod_vjp)
defjvp_direct(anp.nanprod,        _nanprod_jvp)
defsparsity(anp.nanprod,   reduction_pattern)
defbatch(anp.nanprod,      along_axis(anp.nanprod, "all"))

# ----------------------------------------------------------------------------- spread
for _fun, _name, _nan, _root in [(anp.var, "var", False, False), (anp.std, "std", False, True),
                                 (anp.nanvar, "nanvar", True, False),
                                 (anp.nanstd, "nanstd", True, True)]:
    _vjp, _jvp = _variance(_name, _nan, _root)
    defvjp_direct(_fun, _vjp)
    defjvp_direct(_fun, _jvp)
    defsparsity(_fun, reduction_pattern)
    defbatch(_fun, along_axis(_fun, "all"))
defvjp_direct(anp.cov,      _cov_vjp(0), _cov_vjp(1))
defjvp_direct(anp.cov,             _cov_jvp(0), _cov_jvp(1))
defsparsity(anp.cov,        _covariance_pattern)
defbatch(anp.cov,           _cov_batch)
defvjp_direct(anp.corrcoef, _corrcoef_vjp(0), _corrcoef_vjp(1))
defjvp_direct(anp.corrcoef,        _corrcoef_jvp(0), _corrcoef_jvp(1))
defsparsity(anp.corrcoef,   _covariance_pattern)

# ----------------------------------------------------------------------------- selections
for _fun in (anp.max, anp.min, anp.amax, anp.amin, anp.nanmax, anp.nanmin):
    _selection(_fun, _extreme_weights, _extreme_jvp, _extreme_vjp)  # (one element's parts)
    defsparsity(_fun, reduction_pattern)
    defbatch(_fun, along_axis(_fun, "all"))
    deftaylor_linear(_fun)
for _fun in (anp.max, anp.min, anp.amax, anp.amin):
    defsilent(_fun, "one number")
for _fun, _ufunc in ((anp.max, _np.maximum), (anp.min, _np.minimum)):
    defnew_array(_fun)
    defreduction(_fun, _ufunc)
for _fun, _weights in ((anp.ptp, _ptp_weights), (anp.median, _median_rule(ignore_nan=False)),
                       (anp.nanmedian, _median_rule(ignore_nan=True))):
    _selection(_fun, _weights)
    defsparsity(_fun, reduction_pattern)
    defbatch(_fun, along_axis(_fun, "all"))
    deftaylor_linear(_fun)
for _fun, _scale, _nan in ((anp.quantile, 1.0, False), (anp.nanquantile, 1.0, True),
                           (anp.percentile, 100.0, False), (anp.nanpercentile, 100.0, True)):
    _selection(_fun, _quantile_rule(_scale, ignore_nan=_nan))
    defsparsity(_fun, shapes_only(_quantile_pattern, first_position))
    defbatch(_fun, _scalar_q_batch(_fun))
    deftaylor_linear(_fun)

# ----------------------------------------------------------------------------- scans
linear(anp.cumsum,         _cumsum_vjp)
defjvp_batched(anp.cumsum, _batched_cumsum)
defsparsity(anp.cumsum,    cumulative_pattern)
defbatch(anp.cumsum,       along_axis(anp.cumsum, "flat"))
defvjp_direct(anp.nancumsum, _nancumsum_vjp)
defjvp_direct(anp.nancumsum,      _nancumsum_jvp)
defsparsity(anp.nancumsum, cumulative_pattern)
defbatch(anp.nancumsum,    along_axis(anp.nancumsum, "flat"))
deftaylor_linear(anp.nancumsum)
defvjp_direct(anp.cumprod, _cumprod_vjp)
defjvp_direct(anp.cumprod,        _cumprod_jvp)
defsparsity(anp.cumprod,   cumulative_pattern)
defbatch(anp.cumprod,      along_axis(anp.cumprod, "flat"))
defvjp_direct(anp.nancumprod, _nancumprod_vjp)
defjvp_direct(anp.nancumprod,     _nancumprod_jvp)
defsparsity(anp.nancumprod, cumulative_pattern)
defbatch(anp.nancumprod,   along_axis(anp.nancumprod, "flat"))
if hasattr(anp, "cumulative_sum"):  # NumPy >= 2.1
    linear(anp.cumulative_sum, _cumulative_sum_vjp)
    defsparsity(anp.cumulative_sum,  shapes_only(_cumulative_new_pattern, first_position))
    defbatch(anp.cumulative_sum, along_axis(anp.cumulative_sum, "flat"))
    defvjp_direct(anp.cumulative_prod, _cumulative_prod_vjp)
    defjvp_direct(anp.cumulative_prod, _cumulative_prod_jvp)
    defsparsity(anp.cumulative_prod, shapes_only(_cumulative_new_pattern, first_position))
    defbatch(anp.cumulative_prod, along_axis(anp.cumulative_prod, "flat"))

# ----------------------------------------------------------------------------- no derivative
# (integer or boolean answers: only their batching rule)
for _name in ("any", "all", "count_nonzero"):
    if _name in anp.namespace:
        defbatch(anp.namespace[_name], along_axis(anp.namespace[_name], "all"))
for _name in ("argmax", "argmin", "nanargmax", "nanargmin"):
    if _name in anp.namespace:
        defbatch(anp.namespace[_name], along_axis(anp.namespace[_name], "flat"))
# fmt: on
