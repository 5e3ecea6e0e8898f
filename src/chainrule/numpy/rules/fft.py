"""Rules for numpy.fft. Every transform is real-linear: the JVP is the transform of
the tangent and the VJP its transpose for the pairing Re(sum(a * b)).

The DFT matrix is symmetric, so fft and ifft are their own transposes; zero padding
and cropping to ``n``/``s`` transpose into each other; rfft is a cropped fft of a
real input, irfft a weighted, padded ifft whose output keeps the real part, and
hfft/ihfft are conjugated irfft/rfft with the normalization direction swapped.
"""

from __future__ import annotations

import inspect

import numpy as _np

from ..._core.rules import (
    defbatch,
    defjvp_batched,
    defjvp_direct,
    defsparsity,
    deftaylor_linear,
    defvjp_direct,
)
from ..._sparsity.patterns import along_axes_pattern, copy_rule
from .. import fft as afft
from .. import numpy_wrapper as anp
from ..batched import example_ndim
from ..batching_patterns import along_axis, only_first, over_axes, shifted_axis
from ..placement import constant_like
from ._helpers import batch_shifted_axis, dtype_of, match_dtype

_SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _fit(x, axis: int, n: int):
    """``x`` cropped or zero-padded to length ``n`` along ``axis``."""
    m = x.shape[axis]
    if m > n:
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, n)
        return x[tuple(index)]
    if m < n:
        shape = list(x.shape)
        shape[axis] = n - m
        return anp.concatenate([x, constant_like(_np.zeros(shape, dtype=dtype_of(x)), x)],
                               axis=axis)
    return x


def _fit_all(x, axes, shape):
    for ax in axes:
        x = _fit(x, ax, shape[ax])
    return x


def _axes_and_sizes(shape, s, axes, default_axes=None, inverse_real=False):
    """Normalized axes and transform lengths, as numpy.fft reads ``s`` and ``axes``."""
    ndim = len(shape)
    if axes is None:
        if s is not None:
            axes = range(ndim - len(s), ndim)
        else:
            axes = range(ndim) if default_axes is None else default_axes
    axes = [ax % ndim for ax in axes]
    if s is None:
        s = [shape[ax] for ax in axes]
        if inverse_real:
            s[-1] = 2 * (shape[axes[-1]] - 1)
    return axes, list(s)


# ----------------------------------------------------------------------------- 1-D pieces
def _complex_vjp(transform):
    def vjp(g, ans, x, n=None, axis=-1, norm=None, out=None):
        return match_dtype(_fit(transform(g, axis=axis, norm=norm), axis, x.shape[axis]), x)
    return vjp


def _rfft_transpose(g, axis, n, length, norm):
    """Transpose of rfft with length ``n`` applied to an input of ``length`` (complex)."""
    return _fit(afft.fft(_fit(g, axis, n), axis=axis, norm=norm), axis, length)


def _irfft_transpose(g, axis, n, length, norm):
    """Transpose of irfft(a, n) for ``a`` of ``length`` along ``axis``.

    irfft(a) = Re(ifft(pad(w * a))), where w is 1 for the zero (and, n even, the
    Nyquist) frequency, whose imaginary parts irfft ignores, and 2 elsewhere.
    """
    half = n // 2 + 1
    w = _np.full(half, 2.0, dtype=_np.finfo(dtype_of(g)).dtype)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    w = constant_like(w.reshape((-1,) + (1,) * (g.ndim - 1 - axis % g.ndim)), g)
    return _fit(_fit(afft.ifft(g, axis=axis, norm=norm), axis, half) * w, axis, length)


def _rfft_vjp(g, ans, x, n=None, axis=-1, norm=None, out=None):
    n = x.shape[axis] if n is None else n
    return match_dtype(_rfft_transpose(g, axis, n, x.shape[axis], norm), x)


def _irfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    n = 2 * (a.shape[axis] - 1) if n is None else n
    return match_dtype(_irfft_transpose(g, axis, n, a.shape[axis], norm), a)


def _hfft_vjp(g, ans, a, n=None, axis=-1, norm=None, out=None):
    n = 2 * (a.shape[axis] - 1) if n is None else n
    return match_dtype(anp.conjugate(_irfft_transpose(g, axis, n, a.shape[axis], _SWAPPED[norm])), a)


def _ihfft_vjp(g, ans, x, n=None, axis=-1, norm=None, out=None):
    n = x.shape[axis] if n is None else n
    return match_dtype(_rfft_transpose(anp.conjugate(g), axis, n, x.shape[axis], _SWAPPED[norm]), x)


# ----------------------------------------------------------------------------- n-D pieces
def _complex_nd_vjp(transform, default_axes=None):
    def vjp(g, ans, x, s=None, axes=None, norm=None, out=None):
        axes, _ = _axes_and_sizes(x.shape, s, axes, default_axes)
        return match_dtype(_fit_all(transform(g, axes=axes, norm=norm), axes, x.shape), x)
    return vjp


def _rfftn_vjp_for(default_axes):
    def vjp(g, ans, x, s=None, axes=None, norm=None, out=None):
        axes, sizes = _axes_and_sizes(x.shape, s, axes, default_axes)
        if len(axes) > 1:
            g = _fit_all(afft.fftn(g, axes=axes[:-1], norm=norm), axes[:-1], x.shape)
        return match_dtype(_rfft_transpose(g, axes[-1], sizes[-1], x.shape[axes[-1]], norm), x)
    return vjp


def _irfftn_vjp_for(default_axes):
    def vjp(g, ans, a, s=None, axes=None, norm=None, out=None):
        axes, sizes = _axes_and_sizes(a.shape, s, axes, default_axes, inverse_real=True)
        g = _irfft_transpose(g, axes[-1], sizes[-1], a.shape[axes[-1]], norm)
        if len(axes) > 1:
            g = _fit_all(afft.ifftn(g, axes=axes[:-1], norm=norm), axes[:-1], a.shape)
        return match_dtype(g, a)
    return vjp


def _linear(fun, vjp, sparsity, batch):
    """A transform's entry: linear in its array (JVP: the transform of the tangent; Taylor:
    the transform of each coefficient), with its VJP, sparsity and batching rules."""
    defvjp_direct(fun, vjp)
    defjvp_direct(fun, lambda g, ans, x, *args, **kwargs: fun(g, *args, **kwargs))
    defjvp_batched(fun, _batched(fun))
    defsparsity(fun, sparsity)
    defbatch(fun, batch)
    deftaylor_linear(fun)


def _batched(fun):
    """The batched JVP of a transform: the transform of the batched tangent over the same
    axes of each tangent, written as axes of the batch (the default "every axis" is every
    axis but the batch axis)."""
    signature = inspect.signature(fun.fun)
    first, axes_name = next(iter(signature.parameters)), (
        "axis" if "axis" in signature.parameters else "axes")

    def rule(t, ans, x, *args, **kwargs):
        params = signature.bind(x, *args, **kwargs).arguments
        del params[first]
        axes = params.get(axes_name, signature.parameters[axes_name].default)
        if axes is None and params.get("s") is not None:  # the last len(s) axes
            axes = tuple(range(-len(params["s"]), 0))
        params[axes_name] = batch_shifted_axis(
            axes if axes is None or isinstance(axes, int) else tuple(axes), _np.ndim(x))
        return fun(t, **params)

    return rule


# ----------------------------------------------------------------------------- sparsity
# (chainrule._sparsity.patterns) A transform reads whole lines along its axes; the shifts copy.
def _along_axes(fun):
    signature = inspect.signature(fun.fun)

    def rule(argnum, ans, args, kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        params, ndim = bound.arguments, _np.ndim(args[0])
        if "axis" in params:
            axes = (params["axis"],)
        elif params.get("axes") is not None:
            axes = params["axes"]
        elif params.get("s") is not None:
            axes = range(ndim - len(params["s"]), ndim)
        else:
            axes = range(ndim)
        return along_axes_pattern(_np.shape(args[0]), _np.shape(ans), axes)

    return rule


def _shifts_copy(fun):
    return copy_rule(fun.fun, only=(0,))


# ----------------------------------------------------------------------------- batching
# (``chainrule.vmap``; the patterns are ``chainrule.numpy.batching_patterns``')
def _shift_axes_batch(fun):
    """fftshift/ifftshift: ``axes`` (default None: all of an example's)."""

    def rule(values, batched, kwargs):
        if not only_first(batched):
            return NotImplemented
        ndim = example_ndim(values[0], True)
        axes = values[1] if len(values) > 1 else kwargs.get("axes")
        axes = tuple(range(1, ndim + 1)) if axes is None else shifted_axis(axes, ndim)
        return fun(values[0], axes)

    return rule


# fmt: off
# ----------------------------------------------------------------------------- the table
_linear(afft.fft,       _complex_vjp(afft.fft),
        _along_axes(afft.fft), along_axis(afft.fft, "loop"))
_linear(afft.ifft,      _complex_vjp(afft.ifft),
        _along_axes(afft.ifft), along_axis(afft.ifft, "loop"))
_linear(afft.fft2,      _complex_nd_vjp(afft.fftn, (-2, -1)),
        _along_axes(afft.fft2), over_axes(afft.fft2, (-2, -1)))
_linear(afft.ifft2,     _complex_nd_vjp(afft.ifftn, (-2, -1)),
        _along_axes(afft.ifft2), over_axes(afft.ifft2, (-2, -1)))
_linear(afft.fftn,      _complex_nd_vjp(afft.fftn),
        _along_axes(afft.fftn), over_axes(afft.fftn, None))
_linear(afft.ifftn,     _complex_nd_vjp(afft.ifftn),
        _along_axes(afft.ifftn), over_axes(afft.ifftn, None))
_linear(afft.rfft,      _rfft_vjp,
        _along_axes(afft.rfft), along_axis(afft.rfft, "loop"))
_linear(afft.irfft,     _irfft_vjp,
        _along_axes(afft.irfft), along_axis(afft.irfft, "loop"))
_linear(afft.hfft,      _hfft_vjp,
        _along_axes(afft.hfft), along_axis(afft.hfft, "loop"))
_linear(afft.ihfft,     _ihfft_vjp,
        _along_axes(afft.ihfft), along_axis(afft.ihfft, "loop"))
_linear(afft.rfft2,     _rfftn_vjp_for((-2, -1)),
        _along_axes(afft.rfft2), over_axes(afft.rfft2, (-2, -1)))
_linear(afft.irfft2,    _irfftn_vjp_for((-2, -1)),
        _along_axes(afft.irfft2), over_axes(afft.irfft2, (-2, -1)))
_linear(afft.rfftn,     _rfftn_vjp_for(None),
        _along_axes(afft.rfftn), over_axes(afft.rfftn, None))
_linear(afft.irfftn,    _irfftn_vjp_for(None),
        _along_axes(afft.irfftn), over_axes(afft.irfftn, None))
_linear(afft.fftshift,  lambda g, ans, x, axes=None: afft.ifftshift(g, axes=axes),
        _shifts_copy(afft.fftshift), _shift_axes_batch(afft.fftshift))
_linear(afft.ifftshift, lambda g, ans, x, axes=None: afft.fftshift(g, axes=axes),
        _shifts_copy(afft.ifftshift), _shift_axes_batch(afft.ifftshift))
# fmt: on
