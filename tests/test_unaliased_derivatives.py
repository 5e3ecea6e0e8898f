"""A pullback's or pushforward's answers are arrays of their own.

autograd's ``make_vjp(lambda x: x)(x)[0](g)`` answers the caller's ``g`` itself (its
backward pass starts from ``(g, False)``, "not ours to write into", and hands it back
untouched); JAX's arrays cannot be written into, so an alias is never seen there.
chainrule answers NumPy arrays, which can: its rule is that an output never aliases an
input unless NumPy's own function would answer a view, and a pullback is not one. So
neither the caller's cotangent or tangent, nor a view of it, nor one array for two
arguments, is answered (``_transforms/fresh.py``); the values are the derivatives'.
"""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np


def _bits(a):
    a = onp.asarray(a)
    return a.dtype.str, a.shape, a.tobytes()


def _apart(answers, *given):
    """No array among ``answers`` shares memory with another or with one of ``given``."""
    arrays = [a for a in answers if isinstance(a, onp.ndarray)]
    for i, a in enumerate(arrays):
        for b in arrays[i + 1:] + [g for g in given if isinstance(g, onp.ndarray)]:
            assert not onp.shares_memory(a, b)


G = onp.array([0.5, -0.0, onp.nan])


@pytest.mark.parametrize("g", [G, onp.array(-0.0), onp.ones(0), G.reshape(3, 1)])
def test_vjp_of_the_identity_answers_a_copy_of_the_cotangent(g):
    x = onp.ones_like(g)
    for _ in range(2):
        out, pullback = cr.vjp(lambda x: x, x)
        (got,) = pullback(g)
        assert out is x  # (the function's own answer: the identity answers its argument)
        assert got is not g and _bits(got) == _bits(g)
        _apart([got], g)
        pull, ans = cr.make_vjp(lambda x: x)(x)
        got = pull(g)
        assert _bits(got) == _bits(g)
        _apart([got], g)
        got = cr.vector_jacobian_product(lambda x: x)(x, g)
        assert _bits(got) == _bits(g)
        _apart([got], g)


def test_vjp_through_rules_that_pass_the_cotangent_on_or_view_it():
    x, y = onp.ones(3), onp.ones(3)
    a, b = cr.vjp(lambda x, y: x + y, x, y)[1](G)  # (add's rule: g itself, to both)
    assert _bits(a) == _bits(G) and _bits(b) == _bits(G)
    _apart([a, b], G)
    (r,) = cr.vjp(lambda x: x.reshape(3), x.reshape(3, 1))[1](G)  # (a view of g)
    assert _bits(r) == _bits(G.reshape(3, 1))
    _apart([r], G)
    (r,) = cr.vjp(lambda x: x.T, onp.ones((3, 2)))[1](onp.arange(6.0).reshape(2, 3))
    assert _bits(r) == _bits(onp.arange(6.0).reshape(2, 3).T)
    tup = cr.vjp(lambda x: (x, {"k": x[:2]}), x)[1]((G, {"k": G[1:]}))
    assert _bits(tup[0]) == _bits(onp.array([0.5, onp.nan, onp.nan]))  # (g + padded g[1:])
    _apart(list(tup), G)


def test_jvp_of_the_identity_answers_a_copy_of_the_tangent():
    x = onp.ones(3)
    for _ in range(2):
        out, t = cr.jvp(lambda x: x, (x,), (G,))
        assert out is x and _bits(t) == _bits(G)
        _apart([t], G)
        out, t = cr.make_jvp(lambda x: x)(x)(G)
        assert _bits(t) == _bits(G)
        _apart([t], G)
        out, t = cr.jvp(lambda x, y: (x, y.reshape(3, 1)), (x, x), (G, G))
        assert _bits(t[0]) == _bits(G) and _bits(t[1]) == _bits(G.reshape(3, 1))
        _apart(list(t), G)
    assert cr.jvp(lambda x: x, (2.0,), (-0.0,))[1] == 0.0  # (a Python float: as it was)


def test_gradients_of_two_arguments_are_two_arrays():
    x, y = onp.array([1.0, 2.0]), onp.array([3.0, 4.0])
    for transform in (lambda f: cr.grad(f, argnum=(0, 1)),
                      lambda f: cr.value_and_grad(f, argnum=(0, 1)),
                      lambda f: cr.elementwise_grad(f, argnum=(0, 1))):
        got = transform(lambda x, y: np.sum(x + y))(x, y)
        a, b = got[1] if isinstance(got[1], tuple) else got
        assert _bits(a) == _bits(onp.ones(2)) and _bits(b) == _bits(onp.ones(2))
        _apart([a, b], x, y)
    g = cr.grad(lambda p: np.sum(p["a"] + p["b"]))({"a": x, "b": y})
    assert _bits(g["a"]) == _bits(onp.ones(2)) == _bits(g["b"])
    _apart([g["a"], g["b"]])
    g, aux = cr.grad_and_aux(lambda x, y: (np.sum(x - y), 7), argnum=(0, 1))(x, y)
    assert _bits(g[0]) == _bits(onp.ones(2)) and _bits(g[1]) == _bits(-onp.ones(2))


def test_nested_and_traced_answers_are_untouched():
    # (under grad the pullback's answers are traced values: passed on as they are)
    def inner(x):
        (r,) = cr.vjp(lambda z: z * 1.0, x)[1](x)
        return np.sum(r * x)

    assert cr.grad(inner)(onp.array([1.0, 2.0])).tolist() == [2.0, 4.0]
    assert cr.grad(inner)(3.0) == 6.0


def test_tensor_backward_gives_each_leaf_a_grad_of_its_own():
    g = onp.array([0.5, -0.0, 2.0])
    t = cr.Tensor(onp.ones(3))
    t.backward(g)
    assert _bits(t.grad.numpy()) == _bits(g)
    _apart([t.grad.numpy()], g)
    t, u = cr.Tensor(onp.ones(3)), cr.Tensor(onp.ones(3))
    (t + u).backward(g)
    assert _bits(t.grad.numpy()) == _bits(g) == _bits(u.grad.numpy())
    _apart([t.grad.numpy(), u.grad.numpy()], g)
    t = cr.Tensor(onp.ones((3, 1)))
    t.reshape(3).backward(g)
    assert _bits(t.grad.numpy()) == _bits(g.reshape(3, 1))
    _apart([t.grad.numpy()], g)
    t.reshape(3).backward(g)  # (accumulated: a sum, its own)
    assert _bits(t.grad.numpy()) == _bits(2 * g.reshape(3, 1))


def test_one_answer_that_is_a_leaf_of_a_given_tree():
    x = onp.ones(3)
    h = onp.arange(3.0)
    (r,) = cr.vjp(lambda x: (x * 2.0, x), x)[1]((onp.zeros(3), h))
    assert _bits(r) == _bits(h)
    _apart([r], h)
    (r,) = cr.vjp(lambda x: {"a": x}, x)[1]({"a": h})
    assert _bits(r) == _bits(h)
    _apart([r], h)


def test_jit_of_a_pullback_answers_a_fresh_array_as_eager():
    # (traced, the pullback's answer is the staged input itself: copied by the primitive,
    # so the program copies it as eager evaluation does)
    g = onp.array([0.5, -0.0, onp.nan])
    for f in (lambda g: cr.vjp(lambda x: x, onp.ones(3))[1](g)[0],
              lambda g: cr.vjp(lambda x: x.reshape(3, 1), onp.ones(3))[1](g.reshape(3, 1))[0],
              lambda g: cr.jvp(lambda x: x, (onp.ones(3),), (g,))[1]):
        jf = cr.jit(f)
        for _ in range(3):  # (the trace, the program's first run, its later runs)
            got, want = jf(g), f(g)
            assert _bits(got) == _bits(want) == _bits(g)
            _apart([got], g)
    assert cr.grad(lambda x: np.sum(cr.vjp(lambda z: z, x)[1](x)[0] * x))(
        onp.array([1.0, -2.0])).tolist() == [2.0, -4.0]
