"""chainrule.scipy.signal: n-d convolution with derivatives w.r.t. both inputs.

``convolve(A, B, axes=None, dot_axes=((), ()), mode="full")`` is SciPy's
``scipy.signal.convolve`` when ``axes`` and ``dot_axes`` are left out, and
autograd's generalization otherwise: ``axes = (axes_A, axes_B)`` are convolved
pairwise, ``dot_axes = (dot_A, dot_B)`` are summed over pairwise (a tensor
contraction), and the remaining axes are kept. The output's axes are A's kept
axes, then B's kept axes, then the convolved axes. ``mode`` is "full", "valid"
or "same" (as long as A along each convolved axis).

All of it is one primitive, ``convolve_canonical``, on inputs whose axes are
ordered (kept, dotted, convolved); its VJP is the same convolution applied to
the cotangent and a flipped input, so every order works.
"""

from __future__ import annotations

import numpy as _np
import scipy.signal as _ss

from .._core.rules import def_linear, defsparsity, defvjp_direct
from .._core.tracer import primitive
from .._sparsity.patterns import convolution_band as _convolution_band
from .._sparsity.patterns import scipy_sparse
from ..numpy import _namespace
from ..numpy import numpy_wrapper as anp

_namespace.install(globals(), _ss)  # SciPy's names; those defined below win


@primitive
def convolve_canonical(A, B, n_keep_a: int, n_keep_b: int, n_dot: int):
    """Full convolution of A (keep_a, dot, conv) with B (keep_b, dot, conv).

    The output's axes are (keep_a, keep_b, conv).
    """
    A, B = _np.asarray(A), _np.asarray(B)
    if n_keep_a == n_keep_b == n_dot == 0:
        return _ss.convolve(A, B, mode="full")
    n_conv = A.ndim - n_keep_a - n_dot
    win = B.shape[B.ndim - n_conv:]
    pads = [(0, 0)] * (n_keep_a + n_dot) + [(w - 1, w - 1) for w in win]
    conv_axes = tuple(range(A.ndim - n_conv, A.ndim))
    windows = _np.lib.stride_tricks.sliding_window_view(_np.pad(A, pads), win, axis=conv_axes)
    b_flip = B[(Ellipsis,) + (slice(None, None, -1),) * n_conv]
    # windows: (keep_a, dot, out_conv, win); contract dot and win with B's dot and conv
    w_axes = list(range(n_keep_a, n_keep_a + n_dot)) + list(range(A.ndim, A.ndim + n_conv))
    b_axes = list(range(n_keep_b, B.ndim))
    out = _np.tensordot(windows, b_flip, (w_axes, b_axes))  # (keep_a, out_conv, keep_b)
    return _np.moveaxis(out, list(range(n_keep_a + n_conv, out.ndim)),
                        list(range(n_keep_a, n_keep_a + n_keep_b)))


def _flip_last(x, n: int):
    return x[(Ellipsis,) + (slice(None, None, -1),) * n]


def _slice_last(x, starts, sizes):
    n = len(starts)
    return x[(Ellipsis,) + tuple(slice(s, s + m) for s, m in zip(starts, sizes))] if n else x


def _cycle(x, first: int, second: int):
    """Swap two leading groups of axes: (first, second, rest) -> (second, first, rest)."""
    order = list(range(first, first + second)) + list(range(first)) + list(
        range(first + second, anp.ndim(x)))
    return anp.transpose(x, order)


def _conv_sizes(x, n_conv: int):
    return anp.shape(x)[anp.ndim(x) - n_conv:]


def _vjp_a(g, ans, A, B, n_keep_a, n_keep_b, n_dot):
    n_conv = anp.ndim(B) - n_keep_b - n_dot
    b_flip = _flip_last(_cycle(B, n_keep_b, n_dot), n_conv)      # (dot, keep_b, conv)
    full = convolve_canonical(g, b_flip, n_keep_a, n_dot, n_keep_b)  # (keep_a, dot, conv)
    nb = _conv_sizes(B, n_conv)
    return _slice_last(full, [m - 1 for m in nb], _conv_sizes(A, n_conv))


def _vjp_b(g, ans, A, B, n_keep_a, n_keep_b, n_dot):
    n_conv = anp.ndim(A) - n_keep_a - n_dot
    a_flip = _flip_last(_cycle(A, n_keep_a, n_dot), n_conv)      # (dot, keep_a, conv)
    g_t = _cycle(g, n_keep_a, n_keep_b)                          # (keep_b, keep_a, conv)
    full = convolve_canonical(g_t, a_flip, n_keep_b, n_dot, n_keep_a)
    na = _conv_sizes(A, n_conv)
    return _slice_last(full, [m - 1 for m in na], _conv_sizes(B, n_conv))


def _convolution_pattern(argnum, ans, A, B, n_keep_a, n_keep_b, n_dot):
    """Output (keep_a, keep_b, o) reads A (keep_a, dot, m) for every dot index where, on
    each convolved axis, 0 <= o - m < B's length there (and B alike): a Kronecker product
    of one factor per group of axes."""
    sp = scipy_sparse()
    own, other = (A, B) if argnum == 0 else (B, A)
    n_keep_own = n_keep_a if argnum == 0 else n_keep_b
    shape, other_shape = _np.shape(own), _np.shape(other)
    n_conv = len(shape) - n_keep_own - n_dot
    keep_a, keep_b = _np.shape(A)[:n_keep_a], _np.shape(B)[:n_keep_b]
    dot = int(_np.prod(shape[n_keep_own:n_keep_own + n_dot], dtype=int))
    a_size, b_size = int(_np.prod(keep_a, dtype=int)), int(_np.prod(keep_b, dtype=int))
    if argnum == 0:  # rows keep_a x keep_b, columns keep_a x dot
        factors = [sp.identity(a_size, dtype=bool), _np.ones((b_size, dot), dtype=bool)]
    else:  # rows keep_a x keep_b, columns keep_b x dot
        factors = [_np.ones((a_size, 1), dtype=bool), sp.identity(b_size, dtype=bool),
                   _np.ones((1, dot), dtype=bool)]  # fmt: skip
    for n, m in zip(shape[len(shape) - n_conv:], other_shape[len(other_shape) - n_conv:]):
        factors.append(_convolution_band(n + m - 1, n, m, 0))
    pattern = factors[0]
    for factor in factors[1:]:
        pattern = sp.kron(pattern, factor, format="csr")
    return sp.csr_matrix(pattern, dtype=bool)


# fmt: off
defvjp_direct(convolve_canonical, _vjp_a, _vjp_b)
def_linear(convolve_canonical)
defsparsity(convolve_canonical, lambda argnum, ans, args, kwargs:
            _convolution_pattern(argnum, ans, *args, **kwargs))
# fmt: on


def _as_axes(axes, ndim: int) -> list[int]:
    return [a % ndim for a in axes]


def _reorder(x, order: list[int]):
    return x if order == sorted(order) else anp.transpose(x, order)


def convolve(A, B, axes=None, dot_axes=((), ()), mode="full"):
    """``scipy.signal.convolve`` (and autograd's axes/dot_axes form), differentiable."""
    na, nb = anp.ndim(A), anp.ndim(B)
    if axes is None:
        if na != nb:
            raise ValueError(f"convolve: A has {na} axes and B has {nb}; they must match, or "
                             f"pass axes=(axes_A, axes_B) to choose the convolved axes.")
        axes = (list(range(na)), list(range(nb)))
    conv_a, conv_b = _as_axes(axes[0], na), _as_axes(axes[1], nb)
    dot_a, dot_b = _as_axes(dot_axes[0], na), _as_axes(dot_axes[1], nb)
    if len(conv_a) != len(conv_b) or len(dot_a) != len(dot_b):
        raise ValueError("convolve: axes and dot_axes must pair as many axes of A as of B.")
    keep_a = [i for i in range(na) if i not in conv_a and i not in dot_a]
    keep_b = [i for i in range(nb) if i not in conv_b and i not in dot_b]
    full = convolve_canonical(_reorder(A, keep_a + dot_a + conv_a),
                              _reorder(B, keep_b + dot_b + conv_b),
                              len(keep_a), len(keep_b), len(dot_a))
    sizes_a = [anp.shape(A)[i] for i in conv_a]
    sizes_b = [anp.shape(B)[i] for i in conv_b]
    if mode == "full":
        return full
    if mode == "valid":
        return _slice_last(full, [min(p, q) - 1 for p, q in zip(sizes_a, sizes_b)],
                           [abs(p - q) + 1 for p, q in zip(sizes_a, sizes_b)])
    if mode == "same":
        return _slice_last(full, [(q - 1) // 2 for q in sizes_b], sizes_a)
    raise ValueError(f"convolve: mode must be 'full', 'valid' or 'same', not {mode!r}.")
