"""Pieces taken out of an array by basic indexing (``x[1:]``) get sparse cotangents.

The backward pass adds each piece into one buffer of the array's cotangent, in place
(``numpy_vspaces.TakenSlices``), instead of an array of zeros per piece added whole; the
gradients must be those per-piece sums, bit for bit: the same additions in the same
order, and where a piece did not reach an element its zeros were added (-0.0 + 0.0 is
+0.0). Each expected value below is that sum written out in NumPy, in the backward pass's
order (the newest use of a value first).
"""

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np

X = onp.array([0.5, -1.25, 2.0, 3.5, -0.75, 1.5, 0.25, -2.0])


def _bits(a):
    a = onp.asarray(a)
    return a.dtype, a.shape, a.tobytes()


def _put(index, piece, shape=(8,), dtype=float):
    """One piece's cotangent as main computed it: zeros with the piece put in."""
    out = onp.zeros(shape, dtype)
    out[index] = piece
    return out


def test_shifted_products_hand_values():
    def f(x):  # ode's stage: x[1:] * y[:-1], and x[:1]
        return np.sum(np.concatenate([x[:1], x[1:] * x[:-1]]) * X)

    # newest first: x[:-1] (cotangent X[1:] * x[1:]), x[1:] (X[1:] * x[:-1]), x[:1] (X[:1])
    expected = _put(slice(None, -1), X[1:] * X[1:]) + _put(slice(1, None), X[1:] * X[:-1]) \
        + _put(slice(None, 1), X[:1])
    assert _bits(cr.grad(f)(X)) == _bits(expected)


def test_many_takes_of_one_array_in_a_loop():
    def f(x, steps=6):
        y = x * 0.5
        for _ in range(steps):
            y = y + np.concatenate([x[:1], x[1:] * y[:-1]]) * 0.25
        return np.sum(y * y)

    eps = 1e-6
    fd = onp.array([(f(X + eps * e) - f(X - eps * e)) / (2 * eps) for e in onp.eye(8)])
    onp.testing.assert_allclose(cr.grad(f)(X), fd, rtol=1e-7, atol=1e-9)
    # reverse mode and forward mode agree
    onp.testing.assert_allclose(cr.grad(f)(X), cr.jacfwd(f)(X), rtol=1e-13)


def test_signed_zeros_as_the_per_piece_sums_give_them():
    neg = -0.0

    def two_takes(x):  # x[2:] is newer: its zeros first, then x[:4]'s piece added
        return np.sum(x[:4] * neg) + np.sum(x[2:] * neg)

    def whole_then_take(x):  # the whole array's cotangent first, a slice's added in place
        return np.sum(x[2:] * neg) + np.sum(x * neg)

    def take_then_whole(x):
        return np.sum(x * neg) + np.sum(x[2:] * neg)

    def every_element_twice(x):
        return np.sum(x[:] * neg) + np.sum(x[::-1] * neg)

    def one_take(x):
        return np.sum(x[1:5] * neg)

    n = onp.full(8, neg)
    assert _bits(cr.grad(two_takes)(X)) == \
        _bits(_put(slice(2, None), n[2:]) + _put(slice(4), n[:4]))
    assert _bits(cr.grad(whole_then_take)(X)) == _bits(n + _put(slice(2, None), n[2:]))
    assert _bits(cr.grad(take_then_whole)(X)) == _bits(_put(slice(2, None), n[2:]) + n)
    assert _bits(cr.grad(every_element_twice)(X)) == _bits(n + n)  # -0.0 everywhere
    assert _bits(cr.grad(one_take)(X)) == _bits(_put(slice(1, 5), n[1:5]))
    # the hand values: +0.0 wherever a piece missed an element
    assert list(onp.signbit(cr.grad(two_takes)(X))) == [False] * 2 + [True] * 2 + [False] * 4
    assert list(onp.signbit(cr.grad(whole_then_take)(X))) == [False] * 2 + [True] * 6


def test_signed_zeros_of_overlapping_windows():
    # nested windows x[i:8-i] times -0.0, then the whole x times w: elements 3 and 4 are
    # reached by every piece (-0.0 stays), the others missed by some (+0.0); the
    # per-piece sums run newest first
    w = onp.array([1.5] + [-0.0] * 7)

    def f(x):
        total = np.sum(x * w)
        for i in range(4):
            total = total + np.sum(x[i:8 - i] * -0.0)
        return total

    expected = _put(slice(3, 5), onp.full(2, -0.0))
    for i in range(2, -1, -1):
        expected = expected + _put(slice(i, 8 - i), onp.full(8 - 2 * i, -0.0))
    expected = expected + w
    assert _bits(cr.grad(f)(X)) == _bits(expected)
    assert list(onp.signbit(expected)) == [False] * 3 + [True] * 2 + [False] * 3


def test_nan_and_inf_pieces():
    def f(x):
        return np.sum(x[1:] * np.array([onp.inf] * 7)) + np.sum(x[:3] * onp.nan) + x[4] * 2.0

    inf7, nan3 = onp.full(7, onp.inf), onp.full(3, onp.nan)
    a = onp.zeros(8)
    a[4] = 2.0
    expected = a + _put(slice(None, 3), nan3) + _put(slice(1, None), inf7)
    assert _bits(cr.grad(f)(X)) == _bits(expected)


def test_two_dimensional_ellipsis_and_new_axes():
    A = X.reshape(2, 4)

    def f(a):
        return np.sum(a[:, 1:] * a[1, None, :3]) + np.sum(a[..., 0] ** 3) + np.sum(a[None, 0] * 2.0)

    expected = _put((slice(None), 0), 3 * A[:, 0] ** 2, (2, 4)) \
        + _put((1, slice(None, 3)), onp.sum(A[:, 1:], axis=0), (2, 4)) \
        + _put((slice(None), slice(1, None)), onp.broadcast_to(A[1, None, :3], (2, 3)), (2, 4))
    expected = _put((None, 0), onp.full((1, 4), 2.0), (2, 4)) + expected
    onp.testing.assert_allclose(cr.grad(f)(A), expected, rtol=1e-15)


def test_float32_stays_float32_and_complex_keeps_its_path():
    x32 = X.astype(onp.float32)

    def f(x):
        return np.sum(x[1:] * x[:-1]) + np.sum(x[::2])

    g = cr.grad(f)(x32)
    assert g.dtype == onp.float32
    onp.testing.assert_allclose(g, cr.grad(f)(X), rtol=1e-6)
    z = X + 1j * X[::-1]

    def h(x):
        return np.real(np.sum(x[1:] * np.conj(x[:-1])))

    gz = cr.grad(h)(z)
    eps = 1e-6
    fd = onp.array([(h(z + eps * e) - h(z - eps * e)) / (2 * eps) for e in onp.eye(8)]) \
        + 1j * onp.array([(h(z + 1j * eps * e) - h(z - 1j * eps * e)) / (2 * eps)
                          for e in onp.eye(8)])
    onp.testing.assert_allclose(gz, onp.conj(fd), rtol=1e-7, atol=1e-9)


def test_caller_cotangent_not_written_into():
    def f(x):  # the identity hands the caller's cotangent to x; the slice is added after
        return x + np.sum(x[1:] * 3.0)

    v = onp.arange(8.0)
    kept = v.copy()
    (gx,) = cr.vjp(f, X)[1](v)
    assert _bits(v) == _bits(kept)
    assert _bits(gx) == _bits(v + _put(slice(1, None), onp.full(7, 3.0 * v.sum())))
    assert gx is not v


def test_scalar_and_integer_array_indices_keep_their_path():
    def f(x):
        return x[3] * x[-1] + np.sum(x[onp.array([1, 1, 2])] ** 2) + np.sum(x[x > 0])

    expected = onp.zeros(8)
    expected[3] += X[-1]
    expected[-1] += X[3]
    expected[1] += 4 * X[1]
    expected[2] += 2 * X[2]
    expected += X > 0
    onp.testing.assert_allclose(cr.grad(f)(X), expected, rtol=1e-15)


def f_higher(x):
    return np.sum(x[1:] ** 3 * x[:-1]) + np.sum(np.sin(x[::2]))


def test_hessian_jacobian_and_transforms_through_slices():
    # hand Hessian of sum(x[i+1]^3 x[i]) + sum(sin(x[2j]))
    h = onp.zeros((8, 8))
    for i in range(7):
        h[i + 1, i + 1] += 6 * X[i + 1] * X[i]
        h[i, i + 1] += 3 * X[i + 1] ** 2
        h[i + 1, i] += 3 * X[i + 1] ** 2
    for j in range(0, 8, 2):
        h[j, j] -= onp.sin(X[j])
    onp.testing.assert_allclose(cr.hessian(f_higher)(X), h, rtol=1e-13)
    jac = cr.jacobian(lambda x: x[1:] * x[:-1])(X)
    onp.testing.assert_allclose(jac, onp.eye(8)[1:] * X[:-1, None] + onp.eye(8)[:-1] * X[1:, None])
    g = cr.grad(f_higher)
    for x in (X, -X, onp.zeros(8), onp.full(8, -0.0)):
        assert _bits(cr.jit(g)(x)) == _bits(g(x))
    batch = onp.stack([X, -X, X * 2])
    assert _bits(cr.vmap(g)(batch)) == _bits(onp.stack([g(x) for x in batch]))
    assert _bits(cr.grad(cr.checkpoint(f_higher))(X)) == _bits(g(X))


@pytest.mark.parametrize("shape", [(0,), (3, 0)])
def test_empty_arrays(shape):
    x = onp.zeros(shape)

    def f(x):
        return np.sum(x[1:] * 2.0) + np.sum(x[..., :1])

    assert _bits(cr.grad(f)(x)) == _bits(onp.zeros(shape) if shape == (0,) else
                                         _put((slice(1, None),), onp.full((2, 0), 2.0), shape))


def test_explain_and_its_checks_read_pieces_as_arrays():
    # explain's adjoint trace and its finite-difference checks call the rules themselves
    def f(x):
        return np.sum(x[1:] * x[:-1]) + np.sum(x[::2] * -0.0)

    report = cr.explain(f, X, check=True)
    (g,) = report.gradient
    assert _bits(g) == _bits(cr.grad(f)(X))
    checks = [c for c in report.diagnostics.nodes.values() if c.fd_error is not None]
    assert len(checks) == 8 and all(c.fd_error < 1e-6 for c in checks)
    assert "x[1:]" in str(report) or "v1" in str(report)
