"""Rules for products and contractions (dot, matmul, einsum ...); all are multilinear.

Being linear in each argument, each JVP is the function applied with one
argument replaced by its tangent (``def_linear``); each VJP contracts the
cotangent with the other arguments. No conjugation: complex gradients follow
autograd's convention (``vdot`` conjugates its first argument, and so does its rule).
"""

from __future__ import annotations

import string

import numpy as _np

from ..._core.rules import (
    def_linear,
    defbatch,
    defjvp_batched,
    deflabel,
    defneutral,
    defnew_array,
    defsparsity,
    defvjp_direct,
    defvjp_whole,
)
from ..._core.tracer import getval
from ..._sparsity.patterns import contraction_pattern
from .. import numpy_wrapper as anp
from ..batched import aligned, example_ndim, example_shape, flat_examples
from ..batching_patterns import shifted_axis
from ..placement import constant_like
from ._helpers import match_dtype, shape_of, unbroadcast


def _dot_vjp_a(g, ans, a, b):
    plain = _plain_product_vjp(g, a, b, 0)
    if plain is not None:
        return plain
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
    plain = _plain_product_vjp(g, a, b, 1)
    if plain is not None:
        return plain
    na, nb = anp.ndim(a), anp.ndim(b)
    if na == 0 or nb == 0:
        return match_dtype(anp.sum(g * a) if nb == 0 else g * a, b)
    lead = list(range(na - 1))
    out = anp.tensordot(a, g, (lead, lead))  # axes: (k, j.., m) or (k,) when b is 1-D
    return match_dtype(anp.moveaxis(out, 0, nb - 2) if nb > 1 else out, b)


def _plain_product_vjp(g, a, b, which):
    """Cotangent of a matrix/vector product (``dot`` and ``matmul`` agree for ndim <= 2).

    The common case of dense layers and Jacobian rows, written without the batch
    and broadcasting bookkeeping of the general rules. None for other operands.
    """
    na, nb = len(shape_of(a)), len(shape_of(b))
    if not (1 <= na <= 2 and 1 <= nb <= 2):
        return None
    if which == 0:
        if nb == 1:
            cotangent = g * b if na == 1 else anp.outer(g, b)
        else:
            cotangent = anp.matmul(b, g) if na == 1 else anp.matmul(g, b.T)
        return match_dtype(cotangent, a)
    if na == 1:
        cotangent = g * a if nb == 1 else anp.outer(a, g)
    else:
        cotangent = anp.matmul(g, a) if nb == 1 else anp.matmul(a.T, g)
    return match_dtype(cotangent, b)


def _matmul_vjp_a(g, ans, a, b, **kwargs):
    # A dense layer: g and b 2-D NumPy arrays means a is 2-D too (a 1-D or stacked a gives
    # a 1-D or stacked g). Done with operators on the arrays, past the primitive wrapper.
    if type(g) is type(b) is _np.ndarray and g.ndim == b.ndim == 2:
        return match_dtype(g @ b.T, a)
    return _matmul_vjp(g, ans, a, b, 0)


def _matmul_vjp_b(g, ans, a, b, **kwargs):
    if type(g) is type(a) is _np.ndarray and g.ndim == a.ndim == 2:
        return match_dtype(a.T @ g, b)
    return _matmul_vjp(g, ans, a, b, 1)


def _matmul_vjp(g, ans, a, b, which):
    plain = _plain_product_vjp(g, a, b, which)
    if plain is not None:
        return plain
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


def _batched_product(t, a, b, which, kwargs):
    """``matmul`` with the batched tangent ``t`` (leading batch axis) in place of argument
    ``which``: one matrix product for the whole batch. Operands of ndim 1 or 2 only;
    None (loop over the batch) otherwise."""
    na, nb = anp.ndim(a), anp.ndim(b)
    if kwargs or not (1 <= na <= 2 and 1 <= nb <= 2):
        return None
    if which == 0:
        return anp.matmul(t, b)  # (k, [m,] n) @ b: the batch axis stays in front
    if nb == 1:
        return anp.matmul(t, anp.transpose(a))  # (k, n) @ a.T: (k, m), or (k,) for 1-D a
    return anp.matmul(a, t)  # a @ (k, n, p) broadcasts over the batch axis


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


# ----------------------------------------------------------------------------- inner, outer, vdot
def _inner_vjp(g, ans, a, b, which):
    if anp.ndim(a) == 0 or anp.ndim(b) == 0:  # inner is then a product
        return unbroadcast(g * (b if which == 0 else a), a if which == 0 else b)
    return _tensordot_vjp(g, a, b, ([anp.ndim(a) - 1], [anp.ndim(b) - 1]), which)


def _outer_vjp(g, ans, a, b, which):
    g = anp.reshape(g, (_np.size(getval(a)), _np.size(getval(b))))
    if which == 0:
        return match_dtype(anp.reshape(anp.dot(g, anp.ravel(b)), shape_of(a)), a)
    return match_dtype(anp.reshape(anp.dot(anp.ravel(a), g), shape_of(b)), b)


# ----------------------------------------------------------------------------- einsum
def _einsum_spec(args) -> tuple[list[str], str, list[int]]:
    """Explicit subscripts of an einsum call: (input subscripts, output, operand argnums).

    Ellipses become letters and an implicit output is made explicit, so the
    rule only deals with plain letters. Accepts the string and sublist forms.
    """
    if isinstance(args[0], str):
        spec = args[0].replace(" ", "")
        argnums = list(range(1, len(args)))
        ins, arrow, out = spec.partition("->")
        ins = ins.split(",")
        explicit = bool(arrow)
    else:
        argnums = list(range(0, len(args) - (len(args) % 2 == 1), 2))
        letters = string.ascii_letters

        def sub(lst):
            return "".join("..." if s is Ellipsis else letters[s] for s in lst)

        ins = [sub(args[i + 1]) for i in argnums]
        explicit = len(args) % 2 == 1
        out = sub(args[-1]) if explicit else ""
    ndims = [_np.ndim(getval(args[i])) for i in argnums]
    used = set("".join(ins))
    free = [c for c in string.ascii_letters if c not in used]
    n_ell = max([nd - len(s.replace("...", "")) for s, nd in zip(ins, ndims) if "..." in s],
                default=0)
    ell = "".join(free[:n_ell])
    if not explicit:
        counts = {c: "".join(ins).count(c) for c in used if c != "."}
        out = ("..." if n_ell else "") + "".join(sorted(c for c, k in counts.items() if k == 1))
    ins = [s.replace("...", ell[n_ell - (nd - len(s.replace("...", ""))):] if n_ell else "")
           if "..." in s else s for s, nd in zip(ins, ndims)]
    out = out.replace("...", ell)
    return ins, out, argnums


def _einsum_vjp(g, argnum, args, kwargs):
    ins, out, argnums = _einsum_spec(args)
    k = argnums.index(argnum)
    mine = ins[k]
    x = args[argnum]
    x_shape = shape_of(x)
    others = [(ins[j], args[i]) for j, i in enumerate(argnums) if j != k]
    available = set(out).union(*(s for s, _ in others))
    uniq = "".join(dict.fromkeys(mine))
    sizes = {c: x_shape[mine.index(c)] for c in uniq}
    target = "".join(c for c in uniq if c in available)
    spec = ",".join([s for s, _ in others] + [out]) + "->" + target
    r = anp.einsum(spec, *[v for _, v in others], g, **kwargs)
    # letters summed only inside this operand get the cotangent broadcast along them
    r = anp.reshape(r, tuple(shape_of(r)[target.index(c)] if c in target else 1 for c in uniq))
    shrink = tuple(i for i, c in enumerate(uniq) if sizes[c] == 1 and shape_of(r)[i] != 1)
    if shrink:
        r = anp.sum(r, axis=shrink, keepdims=True)
    r = anp.broadcast_to(r, tuple(sizes[c] for c in uniq))
    if len(uniq) < len(mine):  # repeated letters ('ii'): put r on the diagonal
        fresh = iter(c for c in string.ascii_letters if c not in set(mine))
        seen, renamed, eyes = set(), [], []
        for c in mine:
            if c in seen:
                c2 = next(fresh)
                eye = _np.eye(sizes[c], dtype=_np.result_type(getval(r)))
                eyes.append((c + c2, constant_like(eye, r)))
                c = c2
            seen.add(c)
            renamed.append(c)
        r = anp.einsum(",".join([uniq] + [s for s, _ in eyes]) + "->" + "".join(renamed),
                       r, *[e for _, e in eyes])
    return match_dtype(r, x)


def _einsum_vjps(g, argnums, ans, args, kwargs):
    return tuple(_einsum_vjp(g, i, args, kwargs) for i in argnums)


# ----------------------------------------------------------------------------- kron, cross
def _kron_vjp(g, ans, a, b, which):
    nd = max(anp.ndim(a), anp.ndim(b))
    sa = (1,) * (nd - anp.ndim(a)) + shape_of(a)
    sb = (1,) * (nd - anp.ndim(b)) + shape_of(b)
    la, lb = string.ascii_letters[:nd], string.ascii_letters[nd:2 * nd]
    g = anp.reshape(g, tuple(n for pair in zip(sa, sb) for n in pair))
    g_sub = "".join(i + j for i, j in zip(la, lb))
    if which == 0:
        r = anp.einsum(f"{g_sub},{lb}->{la}", g, anp.reshape(b, sb))
        return match_dtype(anp.reshape(r, shape_of(a)), a)
    r = anp.einsum(f"{g_sub},{la}->{lb}", g, anp.reshape(a, sa))
    return match_dtype(anp.reshape(r, shape_of(b)), b)


def _as_3vectors(v, axis):
    """``v`` with its vector axis last and zero-padded to length 3."""
    v = anp.moveaxis(v, axis, -1)
    if shape_of(v)[-1] == 2:
        v = anp.concatenate([v, anp.zeros_like(getval(v)[..., :1])], axis=-1)
    return v


def _cross_vjp(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, which=0):
    if axis is not None:
        axisa = axisb = axisc = axis
    a3, b3 = _as_3vectors(a, axisa), _as_3vectors(b, axisb)
    if anp.ndim(ans) == anp.ndim(a3) - 1 and shape_of(a)[axisa] == 2 == shape_of(b)[axisb]:
        g3 = anp.stack([anp.zeros_like(getval(g)), anp.zeros_like(getval(g)), g], axis=-1)
    else:
        g3 = _as_3vectors(g, axisc)
    mine, vec_axis = (a, axisa) if which == 0 else (b, axisb)
    # <g, a x b> = <a, b x g> = <b, g x a>
    r = anp.cross(b3, g3) if which == 0 else anp.cross(g3, a3)
    r = r[..., :shape_of(mine)[vec_axis]]
    mine_last = anp.moveaxis(mine, vec_axis, -1)
    r = unbroadcast(r, mine_last)
    return anp.moveaxis(r, -1, vec_axis)


# ----------------------------------------------------------------------------- sparsity
# Each product as einsum letters (chainrule._sparsity.patterns.contraction_pattern): an output element
# depends on the elements of an operand that share its letters where the other operands
# may be nonzero (a traced one: anywhere, unless the pattern is local).


def _letters(n: int, start: int = 0) -> str:
    return string.ascii_letters[start:start + n]


def _dot_terms(args, kwargs, ans):
    na, nb = anp.ndim(args[0]), anp.ndim(args[1])
    if na == 0 or nb == 0:  # a product by a scalar
        each = _letters(max(na, nb))
        return [each if na else "", each if nb else ""], each
    lead, k = _letters(na - 1), _letters(1, 50)
    if nb == 1:
        return [lead + k, k], lead
    # out[i.., j.., m] = sum_k a[i.., k] b[j.., k, m]
    rest, m = _letters(nb - 2, 20), _letters(1, 51)
    return [lead + k, rest + k + m], lead + rest + m


def _matmul_terms(args, kwargs, ans):
    na, nb = anp.ndim(args[0]), anp.ndim(args[1])
    if kwargs or na == 0 or nb == 0:
        return None
    batch = _letters(max(na, nb, 2) - 2)
    ta = "k" if na == 1 else batch[len(batch) - (na - 2):] + "ik"
    tb = "k" if nb == 1 else batch[len(batch) - (nb - 2):] + "kj"
    return [ta, tb], batch + ("i" if na > 1 else "") + ("j" if nb > 1 else "")


def _tensordot_terms(args, kwargs, ans):
    na, nb = anp.ndim(args[0]), anp.ndim(args[1])
    axes = args[2] if len(args) > 2 else kwargs.get("axes", 2)
    a_axes, b_axes = _tensordot_axes(axes, na, nb)
    ta = _letters(na)
    tb = "".join(ta[a_axes[b_axes.index(i)]] if i in b_axes else c
                 for i, c in enumerate(_letters(nb, 26)))
    return [ta, tb], "".join(ta[i] for i in range(na) if i not in a_axes) + "".join(
        tb[i] for i in range(nb) if i not in b_axes)


def _inner_terms(args, kwargs, ans):
    na, nb = anp.ndim(args[0]), anp.ndim(args[1])
    if na == 0 or nb == 0:
        return _dot_terms(args, kwargs, ans)
    lead, rest = _letters(na - 1), _letters(nb - 1, 20)
    return [lead + "z", rest + "z"], lead + rest


def _flat_shapes(args, ans):
    return [(int(_np.size(getval(args[0]))),), (int(_np.size(getval(args[1]))),)]


def _einsum_terms(args, kwargs, ans):
    ins, out, argnums = _einsum_spec(args)
    return ins, out, argnums


def _kron_terms(args, kwargs, ans):
    nd = max(anp.ndim(args[0]), anp.ndim(args[1]))
    la, lb = _letters(nd), _letters(nd, 26)
    return [la, lb], "".join(i + j for i, j in zip(la, lb))


def _kron_shapes(args):
    nd = max(anp.ndim(args[0]), anp.ndim(args[1]))
    sa, sb = ((1,) * (nd - anp.ndim(x)) + shape_of(x) for x in args[:2])
    return [sa, sb], tuple(n for pair in zip(sa, sb) for n in pair)


_LEVI_CIVITA = _np.zeros((3, 3, 3), dtype=bool)
_LEVI_CIVITA[[0, 1, 2, 0, 2, 1], [1, 2, 0, 2, 1, 0], [2, 0, 1, 1, 0, 2]] = True


def _contraction(terms_of, shapes_of=None):
    """A sparsity rule from ``terms_of(args, kwargs, ans) -> (terms, out[, argnums])`` (None:
    dense); ``shapes_of(args) -> (operand shapes, output shape)`` where they differ from
    the arguments' and the answer's (flattened or reshaped operands)."""

    def rule(argnum, ans, args, kwargs, traced=(), local=False):
        found = terms_of(args, kwargs, ans)
        if found is None:
            return None
        terms, out = found[0], found[1]
        positions = found[2] if len(found) > 2 else list(range(len(terms)))
        if shapes_of is None:
            shapes, out_shape = [shape_of(getval(args[i])) for i in positions], shape_of(ans)
        else:
            shapes, out_shape = shapes_of(args, ans)
        masks = [None if i == argnum or (i in traced and not local)
                 else _np.asarray(getval(args[i])) != 0 for i in positions]
        return contraction_pattern(terms, out, shapes, out_shape, positions.index(argnum), masks)

    rule.wants_traced = True  # it reads a traced factor's zeros only when local
    return rule


def _cross_pattern(argnum, ans, args, kwargs, traced=(), local=False):
    """out_i = eps_ijk a_j b_k over the last axes (3-vectors, broadcast); else dense."""
    a, b = getval(args[0]), getval(args[1])
    if len(args) > 2 or kwargs or shape_of(a)[-1:] != (3,) or shape_of(b)[-1:] != (3,):
        return None
    batch = _letters(len(shape_of(ans)) - 1)
    terms = [batch[len(batch) - (anp.ndim(a) - 1):] + "j",
             batch[len(batch) - (anp.ndim(b) - 1):] + "k", "ijk"]  # fmt: skip
    masks = [None if i == argnum or (i in traced and not local) else _np.asarray(v) != 0
             for i, v in enumerate((a, b))] + [_LEVI_CIVITA]  # fmt: skip
    return contraction_pattern(terms, batch + "i", [shape_of(a), shape_of(b), (3, 3, 3)],
                               shape_of(ans), argnum, masks)  # fmt: skip


_cross_pattern.wants_traced = True

# ----------------------------------------------------------------------------- batching rules
# (``chainrule.vmap``; the patterns they share are ``chainrule.numpy.batching_patterns``')
def _matmul_batch(values, batched, kwargs):
    """matmul on operands of any rank: 1-D operands made matrices (and the added axis
    squeezed after), then the batched operand's example axes padded to the other's rank."""
    if len(values) != 2 or kwargs:
        return NotImplemented
    (a, b), (batched_a, batched_b) = values, batched
    nd_a, nd_b = example_ndim(a, batched_a), example_ndim(b, batched_b)
    if nd_a == 0 or nd_b == 0:
        return NotImplemented  # NumPy refuses scalars; let the loop raise its error
    # A batch times one matrix is one product of a tall matrix (one BLAS call; a stack of
    # small products would be one call per example)
    if batched_a and not batched_b and nd_b == 2:
        if nd_a == 1:
            return anp.matmul(a, b)
        shape = _np.shape(a)
        out = anp.matmul(anp.reshape(a, (-1, shape[-1])), b)
        return anp.reshape(out, shape[:-1] + (_np.shape(b)[-1],))
    if batched_b and not batched_a and nd_a <= 2 and nd_b == 1:
        return anp.matmul(b, a) if nd_a == 1 else anp.matmul(b, anp.transpose(a))
    if nd_a == 1:
        a = anp.expand_dims(a, -2)
    if nd_b == 1:
        b = anp.expand_dims(b, -1)
    rank = max(nd_a, nd_b, 2)
    if batched_a and max(nd_a, 2) < rank:
        a = anp.expand_dims(a, tuple(range(1, 1 + rank - max(nd_a, 2))))
    if batched_b and max(nd_b, 2) < rank:
        b = anp.expand_dims(b, tuple(range(1, 1 + rank - max(nd_b, 2))))
    out = anp.matmul(a, b)
    if nd_b == 1:
        out = anp.squeeze(out, -1)
    if nd_a == 1:
        out = anp.squeeze(out, -1 if nd_b == 1 else -2)
    return out


def _dot_batch(values, batched, kwargs):
    nds = [example_ndim(v, b) for v, b in zip(values, batched)]
    if len(values) != 2 or kwargs or max(nds) > 2:
        return NotImplemented
    if min(nds) == 0:
        return anp.multiply(*aligned(values, batched))
    return _matmul_batch(values, batched, kwargs)


def _inner_batch(values, batched, kwargs):
    """inner contracts the last axes: the answer's axes are a's others, then b's."""
    (a, b), (batched_a, batched_b) = values, batched
    nd_a, nd_b = example_ndim(a, batched_a), example_ndim(b, batched_b)
    if max(nd_a, nd_b) <= 1:
        return _dot_batch(values, batched, kwargs)
    if (batched_a and batched_b) or min(nd_a, nd_b) == 0:
        return NotImplemented
    out = anp.inner(a, b)
    return out if batched_a else anp.moveaxis(out, nd_a - 1, 0)


def _outer_batch(values, batched, kwargs):
    if len(values) != 2 or kwargs:
        return NotImplemented
    (a, b), (batched_a, batched_b) = values, batched
    a = anp.expand_dims(flat_examples(a), 2) if batched_a else anp.reshape(a, (-1, 1))
    b = anp.expand_dims(flat_examples(b), 1) if batched_b else anp.reshape(b, (1, -1))
    return anp.multiply(a, b)


def _einsum_batch(values, batched, kwargs):
    """A new letter for the batch, first in each batched operand and in the answer."""
    if not isinstance(values[0], str) or batched[0]:
        return NotImplemented
    spec = values[0].replace(" ", "")
    ins, arrow, out = spec.partition("->")
    ins = ins.split(",")
    if not arrow:  # NumPy's implicit answer: broadcast axes, then letters used once
        joined = "".join(ins).replace(".", "")
        out = ("..." if "..." in spec else "") + "".join(
            sorted(c for c in set(joined) if joined.count(c) == 1))
    letter = next((c for c in string.ascii_letters if c not in spec), None)
    if letter is None:
        return NotImplemented  # (every letter taken: each example's einsum is one)
    ins = [letter + s if b else s for s, b in zip(ins, batched[1:])]
    return anp.einsum(",".join(ins) + "->" + letter + out, *values[1:], **kwargs)


def _kron_batch(values, batched, kwargs):
    """kron as NumPy computes it: each operand's axes interleaved with the other's (the
    shorter padded in front), the product, then each pair of axes merged."""
    if len(values) != 2 or kwargs:
        return NotImplemented
    (a, b), (batched_a, batched_b) = values, batched
    shape_a, shape_b = example_shape(a, batched_a), example_shape(b, batched_b)
    rank = max(len(shape_a), len(shape_b))
    shape_a = (1,) * (rank - len(shape_a)) + shape_a
    shape_b = (1,) * (rank - len(shape_b)) + shape_b
    lead_a = (_np.shape(a)[0],) if batched_a else (1,)
    lead_b = (_np.shape(b)[0],) if batched_b else (1,)
    a = anp.reshape(a, lead_a + tuple(n for size in shape_a for n in (size, 1)))
    b = anp.reshape(b, lead_b + tuple(n for size in shape_b for n in (1, size)))
    product = anp.multiply(a, b)
    return anp.reshape(product, _np.shape(product)[:1] + tuple(
        m * n for m, n in zip(shape_a, shape_b)))


def _tensordot_batch(values, batched, kwargs):
    (a, b), (batched_a, batched_b) = values[:2], batched[:2]
    axes = values[2] if len(values) > 2 else kwargs.get("axes", 2)
    if batched_a == batched_b:
        return NotImplemented
    nd_a, nd_b = example_ndim(a, batched_a), example_ndim(b, batched_b)
    if isinstance(axes, (int, _np.integer)):
        axes = (list(range(nd_a - axes, nd_a)), list(range(axes)))
    axes_a, axes_b = ([axes[0]] if isinstance(axes[0], int) else list(axes[0]),
                      [axes[1]] if isinstance(axes[1], int) else list(axes[1]))
    if batched_a:
        return anp.tensordot(a, b, (list(shifted_axis(axes_a, nd_a)), axes_b))
    out = anp.tensordot(a, b, (axes_a, list(shifted_axis(axes_b, nd_b))))
    return anp.moveaxis(out, nd_a - len(axes_a), 0)


def _vdot_batch(values, batched, kwargs):
    a, b = (flat_examples(v) if f else anp.ravel(v)
            for v, f in zip(values, batched))
    return anp.sum(anp.conj(a) * b, axis=-1)


# ----------------------------------------------------------------------------- the entries
# fmt: off
# One block per primitive: its VJP, JVP (``def_linear``: the function of the tangent, and
# the multilinear Taylor rule), batched JVP, label, sparsity pattern and batching rule.
defvjp_direct(anp.dot,       _dot_vjp_a, _dot_vjp_b)
def_linear(anp.dot)
defsparsity(anp.dot,         _contraction(_dot_terms))
defbatch(anp.dot,            _dot_batch)
defnew_array(anp.dot)        # never a view of an operand (jit)
defvjp_direct(anp.matmul,    _matmul_vjp_a, _matmul_vjp_b, reads=(0, 1))  # not the product
def_linear(anp.matmul)
defjvp_batched(anp.matmul,   lambda t, ans, a, b, **k: _batched_product(t, a, b, 0, k),
                             lambda t, ans, a, b, **k: _batched_product(t, a, b, 1, k))
deflabel(anp.matmul,         "{0} @ {1}")  # how explain writes a call
defsparsity(anp.matmul,      _contraction(_matmul_terms))
defbatch(anp.matmul,         _matmul_batch)
defnew_array(anp.matmul)
defneutral(anp.matmul,       "eye")  # I @ m is m where exact: jit copies m
defvjp_direct(anp.tensordot, lambda g, ans, a, b, axes=2: _tensordot_vjp(g, a, b, axes, 0),
                             lambda g, ans, a, b, axes=2: _tensordot_vjp(g, a, b, axes, 1))
def_linear(anp.tensordot)
defsparsity(anp.tensordot,   _contraction(_tensordot_terms))
defbatch(anp.tensordot,      _tensordot_batch)
defvjp_direct(anp.inner,     lambda g, ans, a, b: _inner_vjp(g, ans, a, b, 0),
                             lambda g, ans, a, b: _inner_vjp(g, ans, a, b, 1))
def_linear(anp.inner)
defsparsity(anp.inner,       _contraction(_inner_terms))
defbatch(anp.inner,          _inner_batch)
defvjp_direct(anp.outer,     lambda g, ans, a, b, out=None: _outer_vjp(g, ans, a, b, 0),
                             lambda g, ans, a, b, out=None: _outer_vjp(g, ans, a, b, 1))
def_linear(anp.outer)
defsparsity(anp.outer,       _contraction(lambda args, kwargs, ans: (["i", "j"], "ij"),
                                          lambda args, ans: (_flat_shapes(args, ans), shape_of(ans))))
defbatch(anp.outer,          _outer_batch)
defvjp_direct(anp.vdot,      lambda g, ans, a, b: match_dtype(anp.reshape(anp.conj(g * b), shape_of(a)), a),
                             lambda g, ans, a, b: match_dtype(anp.reshape(g * anp.conj(a), shape_of(b)), b))
def_linear(anp.vdot)
defsparsity(anp.vdot,        _contraction(lambda args, kwargs, ans: (["k", "k"], ""),
                                          lambda args, ans: (_flat_shapes(args, ans), ())))
defbatch(anp.vdot,           _vdot_batch)
defvjp_whole(anp.einsum,     _einsum_vjps)
def_linear(anp.einsum)
defsparsity(anp.einsum,      _contraction(_einsum_terms))
defbatch(anp.einsum,         _einsum_batch)
defvjp_direct(anp.kron,      lambda g, ans, a, b: _kron_vjp(g, ans, a, b, 0),
                             lambda g, ans, a, b: _kron_vjp(g, ans, a, b, 1))
def_linear(anp.kron)
defsparsity(anp.kron,        _contraction(_kron_terms, lambda args, ans: _kron_shapes(args)))
defbatch(anp.kron,           _kron_batch)
defvjp_direct(anp.cross,     lambda g, ans, a, b, *args, **k: _cross_vjp(g, ans, a, b, *args, **k, which=0),
                             lambda g, ans, a, b, *args, **k: _cross_vjp(g, ans, a, b, *args, **k, which=1))
def_linear(anp.cross)
defsparsity(anp.cross,       _cross_pattern)
# fmt: on
