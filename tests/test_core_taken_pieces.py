"""Elements taken out of a traced container (``sequence_take``) get sparse cotangents.

The backward pass sums each take's piece into its slot and builds the container's
cotangent once (``containers.TakenPieces``); the gradients must be those of one container
of zeros per take summed list by list, bit for bit (signed zeros and dtypes included).
"""

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule._core import vspace as vspace_module
from chainrule.extend import defvjp, primitive


def _bits(a):
    a = onp.asarray(a)
    return a.dtype, a.shape, a.tobytes()


X = onp.array([0.5, -1.25, 2.0, 3.5, -0.75, 1.5, 0.25, -2.0])


def test_list_taken_several_times_hand_values():
    def f(x):
        p = np.split(x, 4)  # a traced list of 4 pieces of 2
        return np.sum(p[0] * p[1]) + np.sum(p[-1] * 2.0) + np.sum(p[0] ** 2) + np.sum(p[1])

    a, b, d = X[0:2], X[2:4], X[6:8]
    expected = onp.concatenate([b + 2 * a, a + 1.0, onp.zeros(2), 2.0 + 0 * d])
    assert _bits(cr.grad(f)(X)) == _bits(expected)


def test_unpacked_in_a_loop_like_lstm():
    def f(x):
        total = 0.0
        for t in range(3):
            w0, w1, w2, w3 = np.split(x, 4)
            total = total + np.sum(np.tanh(w0 * w1) * t) + np.sum(w2 * w3)
        return total

    w0, w1, w2, w3 = onp.split(X, 4)
    sech2 = 1 - onp.tanh(w0 * w1) ** 2
    expected = onp.concatenate([3 * sech2 * w1, 3 * sech2 * w0, 3 * w3, 3 * w2])
    onp.testing.assert_allclose(cr.grad(f)(X), expected, rtol=1e-13)


def test_signed_zeros_as_the_per_take_sums_give_them():
    def only_one_take(x):
        return np.sum(np.split(x, 2)[0] * -0.0)

    def one_slot_twice(x):
        p = np.split(x, 2)
        return np.sum(p[0] * -0.0) + np.sum(p[0] * -0.0)

    def two_slots(x):
        p = np.split(x, 2)
        return np.sum(p[0] * -0.0) + np.sum(p[1] * 1.0)

    neg, pos = onp.full(4, -0.0), onp.zeros(4)
    # one take: its piece itself; a slot every take reached: the pieces' sum (-0 + -0);
    # a slot that missed a take: zeros added (-0 + 0 = +0), as the per-take zeros did
    assert _bits(cr.grad(only_one_take)(X)) == _bits(onp.concatenate([neg, pos]))
    assert _bits(cr.grad(one_slot_twice)(X)) == _bits(onp.concatenate([neg, pos]))
    assert _bits(cr.grad(two_slots)(X)) == _bits(onp.concatenate([pos, onp.ones(4)]))


def test_grad_of_grad_through_takes():
    def f(x):
        p = np.split(x, 4)
        return np.sum(p[0] ** 3) + np.sum(p[0] * p[2]) + np.sum(np.sin(p[-1]))

    def g(x):
        return np.sum(cr.grad(f)(x) ** 2)

    h = cr.hessian(f)(X)
    expected = 2 * h @ cr.grad(f)(X)
    onp.testing.assert_allclose(cr.grad(g)(X), expected, rtol=1e-13)
    a, d = X[0:2], X[6:8]
    onp.testing.assert_allclose(onp.diag(h)[[0, 1, 6, 7]],
                                onp.concatenate([6 * a, -onp.sin(d)]), rtol=1e-13)
    assert h[0, 4] == h[4, 0] == 1.0 and onp.diag(h)[4] == 0.0


def test_jvp_and_jit_unaffected():
    def f(x):
        p = np.split(x, 4)
        return np.sum(p[1] * p[1]) + np.sum(p[-3] * p[3])

    t = onp.arange(8.0)
    b, d = X[2:4], X[6:8]
    _, tangent = cr.make_jvp(f)(X)(t)
    assert tangent == pytest.approx(onp.sum(2 * b * t[2:4] + d * t[2:4] + b * t[6:8]))
    assert _bits(cr.jit(cr.grad(f))(X)) == _bits(cr.grad(f)(X))


def test_tuple_and_dict_answers_of_a_primitive():
    @primitive
    def parts(x):
        return (2.0 * x, x ** 2, -x)

    defvjp(parts, lambda ans, x: lambda g: 2.0 * g[0] + 2.0 * x * g[1] - g[2])

    @primitive
    def named(x):
        return {"double": 2.0 * x, "square": x ** 2}

    defvjp(named, lambda ans, x: lambda g: 2.0 * g["double"] + 2.0 * x * g["square"])

    def f(x):
        t, d = parts(x), named(x)
        return t[0] * t[-2] + t[1] * 3.0 + d["square"] * d["double"] + d["square"]

    x = 1.5  # f = 2x^3 + 3x^2 + 2x^3 + x^2: f' = 12x^2 + 8x
    assert cr.grad(f)(x) == pytest.approx(12 * x ** 2 + 8 * x, rel=1e-14)
    assert cr.grad(cr.grad(f))(x) == pytest.approx(24 * x + 8, rel=1e-14)


def test_the_container_cotangent_is_built_once(monkeypatch):
    built = []
    zeros = vspace_module.ContainerVSpace.zeros

    def counting_zeros(self):
        built.append(self)
        return zeros(self)

    monkeypatch.setattr(vspace_module.ContainerVSpace, "zeros", counting_zeros)

    def f(x):
        p = np.split(x, 4)
        return sum(np.sum(p[i % 4] * i) for i in range(12))

    onp.testing.assert_array_equal(cr.grad(f)(X), onp.repeat([12.0, 15, 18, 21], 2))
    assert len(built) == 1  # one per container node, not one per take (12)


def test_explain_adds_the_pieces_as_containers():
    # explain's adjoint trace calls the rules itself: the pieces reach it as the list
    def f(x):
        a, b = np.split(x, 2)
        return np.sum(a * b) + np.sum(a * 2.0)

    (g,) = cr.explain(f, X).gradient
    a, b = X[:4], X[4:]
    assert _bits(g) == _bits(onp.concatenate([b + 2.0, a]))
