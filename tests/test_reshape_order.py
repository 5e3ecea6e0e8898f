"""reshape/ravel with order "A" and ravel with order "K": NumPy reads x in an order set by
x's memory layout (Fortran-contiguous, its strides), while tangents and cotangents are laid
out in C order. Every mode must read x's layout: checked against finite differences taken
in x's own layout, jvp . v == v . grad, sparse == dense, vmap == the loop, jit == eager."""

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule.numpy.rules.shape import _moved, read_order


def _base(shape):
    return onp.arange(1.0, 1.0 + float(onp.prod(shape))).reshape(shape) ** 1.3


LAYOUTS = {  # name -> a view of a fresh array (x[i] += h keeps the layout)
    "C": lambda: _base((2, 3, 4)),
    "F": lambda: onp.asfortranarray(_base((2, 3, 4))),
    "transposed": lambda: _base((2, 3, 4)).transpose(2, 0, 1),
    "reversed": lambda: _base((2, 3, 4))[::-1, :, ::-2],
    "F sliced": lambda: onp.asfortranarray(_base((2, 5, 4)))[:, 1:4, ::2],
    "F 2-d": lambda: onp.asfortranarray(_base((3, 2))),
    "1-d reversed": lambda: _base((5,))[::-1],
    "0-d": lambda: onp.array(1.7),
    "empty F": lambda: onp.asfortranarray(onp.zeros((0, 3))),
}

def _pairs(x):
    """A shape for x's elements other than its own: rows of 2 where they make some."""
    return (-1, 2) if onp.size(x) % 2 == 0 and onp.size(x) else (-1,)


FUNS = {
    "reshape A": lambda x: np.reshape(x, _pairs(x), order="A"),
    "ravel A": lambda x: np.ravel(x, order="A"),
    "ravel K": lambda x: np.ravel(x, order="K"),
    "ravel k": lambda x: np.ravel(x, "k"),
    "method reshape A": lambda x: (x * 1.0).reshape(onp.shape(x)[::-1], order="A"),
    "method flatten K": lambda x: np.transpose(x * 1.0).flatten(order="K"),
    "method ravel A": lambda x: np.transpose(x).ravel(order="A"),
}


def _finite_differences(f, x, h=1e-6):
    """Central differences of scalar ``f`` at ``x``, each x[i] moved in place, so the
    points keep x's layout (the order NumPy reads them in)."""
    g = onp.zeros(x.shape)
    for i in onp.ndindex(x.shape):
        x0 = x[i]
        x[i] = x0 + h
        up = f(x)
        x[i] = x0 - h
        down = f(x)
        x[i] = x0
        g[i] = (up - down) / (2 * h)
    return g


def _weights(fun, x):
    return onp.cos(onp.arange(onp.size(fun(x)))).reshape(onp.shape(fun(x)))


RANDOM_LAYOUTS = []
_rng = onp.random.default_rng(15)
for _ in range(300):
    nd = int(_rng.integers(0, 4))
    shape = tuple(int(n) for n in _rng.integers(1, 4, nd))
    v = _base(shape).transpose(_rng.permutation(nd))
    v = v[tuple(slice(None, None, int(_rng.choice([1, -1, 2, -2]))) for _ in range(nd))]
    if nd and _rng.random() < 0.3:  # a broadcast axis (stride 0)
        ax = int(_rng.integers(0, nd + 1))
        v = onp.broadcast_to(onp.expand_dims(v, ax),
                             v.shape[:ax] + (int(_rng.integers(1, 4)),) + v.shape[ax:])
    RANDOM_LAYOUTS.append(v)


@pytest.mark.parametrize("order", ["A", "K", "F", "C", None])
def test_the_order_read_from_the_layout_is_numpys(order):
    # the map the rules apply to a C-laid tangent, on a C copy of x, gives NumPy's answer
    for x in RANDOM_LAYOUTS + [f() for f in LAYOUTS.values()]:
        c = onp.ascontiguousarray(x)
        assert _moved(c, x, (-1,), order).tolist() == onp.ravel(x, order=order).tolist()
        if order != "K":
            shape = onp.shape(x)[::-1]
            assert _moved(c, x, shape, order).tolist() == onp.reshape(x, shape, order).tolist()
    assert read_order(onp.asfortranarray(onp.ones((2, 3))), "A") == "F"
    assert read_order(onp.ones(3), "A") == "C"  # both C and F contiguous: NumPy takes C
    assert read_order([[1.0, 2.0]], "A") == "C"


@pytest.mark.parametrize("fun", sorted(FUNS))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_gradient_and_jvp_are_the_finite_differences_in_xs_layout(layout, fun):
    x, f = LAYOUTS[layout](), FUNS[fun]
    w = _weights(f, x)
    loss = lambda x: np.sum(f(x) * w)  # noqa: E731
    expected = _finite_differences(lambda x: float(onp.sum(onp.asarray(f(x)) * w)), x)
    g = cr.grad(loss)(x)
    onp.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-7)
    onp.testing.assert_array_equal(cr.grad(loss)(x), g)  # (twice: nothing kept between calls)
    v = onp.sin(onp.arange(x.size) + 1.0).reshape(x.shape)
    out, tangent = cr.jvp(loss, (x,), (v,))
    onp.testing.assert_allclose(tangent, onp.sum(g * v), rtol=1e-12, atol=1e-12)
    # the tangent itself, laid out in C (not x's layout), against the output's differences
    _, t_out = cr.jvp(f, (x,), (onp.array(v, order="C"),))
    x0, h = x.copy(), 1e-6
    x[...] = x0 + h * v  # (in place: x keeps its layout)
    up = onp.array(f(x))
    x[...] = x0 - h * v
    down = onp.array(f(x))
    x[...] = x0
    onp.testing.assert_allclose(t_out, (up - down) / (2 * h), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fun", ["reshape A", "ravel A", "ravel K"])
@pytest.mark.parametrize("layout", ["F", "transposed", "reversed", "F sliced", "C"])
def test_jacobians_dense_sparse_and_forward_agree(layout, fun):
    x, f = LAYOUTS[layout](), FUNS[fun]
    # the dense Jacobian from the VJP's rows, one at a time
    out = onp.asarray(f(x))
    rows = []
    for k in range(out.size):
        e = onp.zeros(out.size)
        e[k] = 1.0
        rows.append(cr.grad(lambda x, e=e: np.sum(f(x) * e.reshape(out.shape)))(x))
    dense = onp.stack(rows).reshape(out.shape + x.shape)
    assert sorted(onp.abs(dense).sum(axis=tuple(range(out.ndim))).ravel()) == [1.0] * x.size
    onp.testing.assert_array_equal(cr.jacobian(f)(x), dense)
    onp.testing.assert_array_equal(cr.jacfwd(f)(x), dense)
    onp.testing.assert_array_equal(cr.jacrev(f)(x), dense)
    flat = dense.reshape(out.size, x.size)  # (the sparse answers' rows and columns)
    onp.testing.assert_array_equal(cr.jacobian(f, sparse=True)(x).toarray(), flat)
    onp.testing.assert_array_equal(cr.jacobian_sparsity(f, x).toarray(), flat != 0)


@pytest.mark.parametrize("fun", ["reshape A", "ravel A", "ravel K"])
@pytest.mark.parametrize("in_axes", [0, 1])
@pytest.mark.parametrize("layout", ["C", "F", "transposed", "reversed"])
def test_vmap_is_the_loop(layout, fun, in_axes):
    x, f = LAYOUTS[layout](), FUNS[fun]
    examples = [x[(slice(None),) * in_axes + (i,)] for i in range(x.shape[in_axes])]  # views
    expected = onp.stack([onp.asarray(f(e)) for e in examples])
    onp.testing.assert_array_equal(cr.vmap(f, in_axes=in_axes)(x), expected)
    loss = lambda x: np.sum(f(x) * onp.arange(1.0, 1.0 + onp.size(f(x))).reshape(  # noqa: E731
        onp.shape(f(x))))
    grads = onp.stack([cr.grad(loss)(e) for e in examples])
    onp.testing.assert_array_equal(cr.vmap(cr.grad(loss), in_axes=in_axes)(x), grads)


@pytest.mark.parametrize("fun", ["reshape A", "ravel A", "ravel K", "method flatten K",
                                 "method ravel A", "method reshape A"])
def test_jit_is_eager_for_each_layout(fun):
    f = FUNS[fun]

    def loss(x):
        y = f(x * 1.5)
        return np.sum(np.sin(y) * onp.arange(1.0, 1.0 + onp.size(y)).reshape(onp.shape(y)))

    jitted, jitted_grad = cr.jit(loss), cr.jit(cr.grad(loss))
    for layout in ["C", "F", "transposed", "C", "reversed", "F"]:
        x = LAYOUTS[layout]()
        assert jitted(x).tobytes() == loss(x).tobytes()
        assert jitted_grad(x).tobytes() == cr.grad(loss)(x).tobytes(), layout
        assert cr.jit(f)(x).tobytes() == onp.asarray(f(x)).tobytes()


@pytest.mark.parametrize("fun", ["reshape A", "ravel A", "ravel K"])
@pytest.mark.parametrize("layout", ["F", "transposed", "reversed"])
def test_second_order_hessian_and_laplacian(layout, fun):
    x, f = LAYOUTS[layout](), FUNS[fun]
    w = _weights(f, x)
    # a cubic in f(x): its Hessian and Laplacian read the order in every pass
    loss = lambda x: np.sum(f(x) ** 3 * w)  # noqa: E731
    hess = cr.hessian(loss)(x)
    for i in onp.ndindex(x.shape):  # each row: differences of the gradient, x[i] moved
        x0 = x[i]
        x[i] = x0 + 1e-5
        up = cr.grad(loss)(x)
        x[i] = x0 - 1e-5
        down = cr.grad(loss)(x)
        x[i] = x0
        onp.testing.assert_allclose(hess[i], (up - down) / 2e-5, rtol=1e-5, atol=1e-6)
    diag = onp.einsum("ii->i", hess.reshape(x.size, x.size))
    onp.testing.assert_allclose(cr.laplacian(loss)(x), diag.sum(), rtol=1e-10)
    # the Hessian-vector product in forward-over-reverse order
    v = onp.cos(onp.arange(x.size)).reshape(x.shape)
    onp.testing.assert_allclose(cr.hessian_vector_product(loss)(x, v),
                                (hess.reshape(x.size, x.size) @ v.ravel()).reshape(x.shape),
                                rtol=1e-10, atol=1e-12)


def test_reshape_with_order_k_raises_numpys_error_in_every_mode():
    x = onp.asfortranarray(_base((2, 3)))
    with pytest.raises(ValueError) as numpy_error:
        onp.reshape(x, (3, 2), order="K")
    f = lambda x: np.sum(np.reshape(x, (3, 2), order="K"))  # noqa: E731
    calls = [(f, x), (cr.grad(f), x), (lambda x: cr.jvp(f, (x,), (x,)), x),
             (cr.vmap(f), onp.stack([x, x])), (cr.jit(f), x), (cr.jit(cr.grad(f)), x),
             (cr.jacobian(f, sparse=True), x), (lambda x: cr.jacobian_sparsity(f, x), x)]
    for call, arg in calls:
        with pytest.raises(ValueError, match=str(numpy_error.value)):
            call(arg)


@pytest.mark.parametrize("fun", ["reshape A", "ravel A", "ravel K"])
@pytest.mark.parametrize("layout", ["F", "transposed", "reversed", "F sliced"])
def test_explains_finite_difference_check_moves_x_in_its_layout(layout, fun):
    # (its differences of x + t u in C order flagged the right VJP as wrong)
    x, f = LAYOUTS[layout](), FUNS[fun]
    w = _weights(f, x)
    report = str(cr.explain(lambda x: np.sum(np.sin(f(x)) * w), x, check=True))
    assert "VJP vs finite differences" in report and "WRONG" not in report


@pytest.mark.parametrize("fun", [
    lambda x: np.reshape(x, (6,), order="F", copy=False),
    lambda x: np.reshape(x, (6,), order="A", copy=False),
    lambda x: x.reshape(6, order="A", copy=False),
    lambda x: x.reshape((3, 2), copy=True),
])
def test_copy_keyword_is_the_primals_alone(fun):
    # a view of a Fortran x (copy=False) is no view of its C-laid tangent: the tangent and
    # cotangent are reshaped without the keyword (the JVP raised ValueError)
    x = onp.asfortranarray(_base((2, 3)))
    w = _weights(fun, x)
    loss = lambda x: np.sum(fun(x) * w)  # noqa: E731
    g = cr.grad(loss)(x)
    onp.testing.assert_allclose(g, _finite_differences(
        lambda x: float(onp.sum(onp.asarray(fun(x)) * w)), x), rtol=1e-6, atol=1e-7)
    v = onp.cos(onp.arange(6.0)).reshape(2, 3)
    onp.testing.assert_allclose(cr.jvp(loss, (x,), (v,))[1], onp.sum(g * v), rtol=1e-12)
    onp.testing.assert_array_equal(cr.jacobian(fun, sparse=True)(x).toarray(),
                                   cr.jacobian(fun)(x).reshape(6, 6))
    with pytest.raises(ValueError, match="Unable to avoid creating a copy"):
        cr.grad(lambda x: np.sum(np.reshape(x, (6,), copy=False)))(x)  # (NumPy's error)
