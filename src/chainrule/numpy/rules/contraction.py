"""Rules for products and contractions (dot, matmul, ...); all are multilinear."""

from __future__ import annotations

from ..._core.rules import def_linear, defvjp_direct
from .. import numpy_wrapper as anp
from ._helpers import match_dtype, unbroadcast


def _dot_vjp_a(g, ans, a, b):
    na, nb = anp.ndim(a), anp.ndim(b)
    if na == 0 or nb == 0:
        return match_dtype(anp.sum(g * b) if na == 0 else g * b, a)
    if nb == 1:
        return match_dtype(anp.expand_dims(g, -1) * b, a)
    # out[i.., j.., m] = sum_k a[i.., k] b[j.., k, m]
    g_axes = list(range(na - 1, na - 1 + nb - 1))
    b_axes = [ax for ax in range(nb) if ax != nb - 2]
    return match_dtype(anp.tensordot(g, b, (g_axes, b_axes)), a)


def _dot_vjp_b(g, ans, a, b):
    na, nb = anp.ndim(a), anp.ndim(b)
    if na == 0 or nb == 0:
        return match_dtype(anp.sum(g * a) if nb == 0 else g * a, b)
    lead = list(range(na - 1))
    out = anp.tensordot(a, g, (lead, lead))  # axes: (k, j.., m) or (k,) when b is 1-D
    return match_dtype(anp.moveaxis(out, 0, nb - 2) if nb > 1 else out, b)


def _matmul_vjp(g, ans, a, b, which):
    a_vec, b_vec = anp.ndim(a) == 1, anp.ndim(b) == 1
    a2 = anp.expand_dims(a, 0) if a_vec else a
    b2 = anp.expand_dims(b, -1) if b_vec else b
    if a_vec:
        g = anp.expand_dims(g, -2 if not b_vec else -1)
    if b_vec:
        g = anp.expand_dims(g, -1)
    if which == 0:
        out = anp.matmul(g, anp.swapaxes(b2, -1, -2))
        out = unbroadcast(out, a2)
        return anp.reshape(out, anp.shape(a)) if a_vec else out
    out = anp.matmul(anp.swapaxes(a2, -1, -2), g)
    out = unbroadcast(out, b2)
    return anp.reshape(out, anp.shape(b)) if b_vec else out


# fmt: off
defvjp_direct(anp.dot,    _dot_vjp_a, _dot_vjp_b)
def_linear(anp.dot)
defvjp_direct(anp.matmul, lambda g, ans, a, b, **k: _matmul_vjp(g, ans, a, b, 0),
                          lambda g, ans, a, b, **k: _matmul_vjp(g, ans, a, b, 1))
def_linear(anp.matmul)
# fmt: on


def _tensordot_axes(axes, na: int, nb: int) -> tuple[list, list]:
    if isinstance(axes, int):
        return list(range(na - axes, na)), list(range(axes))
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, int) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, int) else list(b_axes)
    return [ax % na for ax in a_axes], [ax % nb for ax in b_axes]


def _tensordot_vjp(g, a, b, axes, which):
    """Cotangent of tensordot(a, b, axes) w.r.t. a (which=0) or b (which=1)."""
    na, nb = anp.ndim(a), anp.ndim(b)
    a_axes, b_axes = _tensordot_axes(axes, na, nb)
    a_free = [ax for ax in range(na) if ax not in a_axes]
    b_free = [ax for ax in range(nb) if ax not in b_axes]
    n_afree = len(a_free)
    if which == 0:
        g_axes = list(range(n_afree, n_afree + len(b_free)))
        out = anp.tensordot(g, b, (g_axes, b_free))
        # out's axes: a_free, then b's contracted axes in increasing order
        contracted = [a_axes[b_axes.index(bx)] for bx in sorted(b_axes)]
        order = a_free + contracted
        return match_dtype(anp.transpose(out, [order.index(ax) for ax in range(na)]), a)
    out = anp.tensordot(a, g, (a_free, list(range(n_afree))))
    contracted = [b_axes[a_axes.index(ax)] for ax in sorted(a_axes)]
    order = contracted + b_free
    return match_dtype(anp.transpose(out, [order.index(ax) for ax in range(nb)]), b)


# fmt: off
defvjp_direct(anp.tensordot, lambda g, ans, a, b, axes=2: _tensordot_vjp(g, a, b, axes, 0),
                             lambda g, ans, a, b, axes=2: _tensordot_vjp(g, a, b, axes, 1))
def_linear(anp.tensordot)
# fmt: on
