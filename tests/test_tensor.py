"""The Tensor front end: the seed examples with exact values, backward semantics,
grad modes, create_graph, and composition with the functional transforms."""

import threading

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import Tensor, enable_grad, no_grad
from chainrule.tensor import FreedGraphError


# ----------------------------------------------------------------------------- seed examples
def test_seed_product_sum():
    x = Tensor(3)
    y = Tensor(10)
    z = x * x + x * y
    z.backward()
    assert x.grad.item() == 16.0
    assert y.grad.item() == 3.0
    assert z.item() == 39.0


def test_seed_sum_times_sum():
    a = Tensor(2)
    b = Tensor(3)
    e = (a + b) * (b + 1)
    e.backward()
    assert (a.grad.item(), b.grad.item()) == (4.0, 9.0)


def test_seed_shifted_square():
    x = Tensor(5)
    ((x + 3) * x).backward()
    assert x.grad.item() == 13.0


def test_seed_log_product_sin():
    x, y = Tensor(2.0), Tensor(5.0)
    f = cnp.log(x) + x * y + cnp.sin(y)
    f.backward()
    assert x.grad.item() == pytest.approx(1 / 2 + 5)
    assert y.grad.item() == pytest.approx(2 + np.cos(5))
    assert f.item() == pytest.approx(np.log(2) + 10 + np.sin(5))


def test_numpy_functions_and_python_numbers_on_both_sides():
    x = Tensor(np.array([1.0, 2.0, 3.0]))
    y = 2.0 - np.sin(x) / 4 + np.array([1.0, 1.0, 1.0]) * x**2
    assert isinstance(y, Tensor)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -np.cos([1, 2, 3]) / 4 + 2 * np.array([1, 2, 3]))


# ----------------------------------------------------------------------------- values and dtypes
def test_python_ints_and_bools_become_float64():
    assert Tensor(3).dtype == np.float64
    assert Tensor(True).dtype == np.float64
    assert Tensor([1, 2]).dtype == np.float64
    assert Tensor(3).requires_grad and Tensor(3).is_leaf


def test_integer_arrays_stay_integer_and_never_require_grad():
    i = Tensor(np.array([1, 2, 3]))
    assert i.dtype == np.int64 and not i.requires_grad
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        i.requires_grad = True
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        Tensor(np.array([1, 2, 3]), requires_grad=True)  # as torch.tensor(..., requires_grad=True)
    assert not Tensor(np.array([1.0]), requires_grad=False).requires_grad
    x = Tensor(np.array([1.0, 2.0, 3.0]))
    (x * i).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])


def test_float32_gradient_stays_float32():
    x = Tensor(np.array([1.0, 2.0], dtype=np.float32))
    (x * 3.0).sum().backward()
    assert x.grad.dtype == np.float32


def test_attributes_indexing_and_methods():
    x = Tensor(np.arange(6.0).reshape(2, 3))
    assert (x.shape, x.ndim, x.size(), x.numel(), len(x)) == ((2, 3), 2, (2, 3), 6, 2)
    assert x.T.shape == (3, 2) and x.reshape(3, 2).shape == (3, 2)
    assert x.value is x.data and isinstance(x.numpy(), np.ndarray)
    assert x.sum().item() == 15.0 and x.mean().item() == 2.5
    assert [row.shape for row in x] == [(3,), (3,)]
    loss = x[1, 1:].sum() + x[0].sum() * 2
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2, 2, 2], [0, 1, 1]])


def test_comparisons_return_boolean_tensors():
    """As in PyTorch: ``(pred == y).float().mean()``, masks indexing, .any(dim), & | ~."""
    x = Tensor(np.array([1.0, 2.0, 3.0]))
    y = Tensor(np.array([1.0, 0.0, 3.0]))
    mask = x > 1.5
    assert type(mask) is Tensor and mask.dtype == np.bool_ and not mask.requires_grad
    assert mask.tolist() == [False, True, True]
    accuracy = (x == y).float().mean()
    assert type(accuracy) is Tensor and accuracy.dtype == np.float32
    assert accuracy.item() == np.float32(2 / 3)
    assert (x != y).sum().item() == 1 and (x != y).sum().dtype == np.int64
    assert x[mask].tolist() == [2.0, 3.0] and x[mask].requires_grad
    assert (~mask).tolist() == [True, False, False]
    assert ((x > 1) & (x < 3)).tolist() == [False, True, False]
    assert ((x < 2) | (x > 2)).tolist() == [True, False, True]
    assert ((x < 2) ^ (x < 3)).tolist() == [False, True, False]
    assert (True & mask).tolist() == [False, True, True]
    two_d = Tensor(np.array([[1.0, -2.0], [0.0, 3.0]]))
    assert (two_d > 0).any(dim=1).tolist() == [True, True]
    assert (two_d > 0).all(dim=0).tolist() == [False, False]
    assert (two_d > 0).any(1, keepdim=True).shape == (2, 1)
    # a NumPy array on the left, and NumPy's own comparison functions, give them too
    assert type(np.array([0.0, 2.0, 2.0]) < x) is Tensor
    assert (np.array([0.0, 2.0, 2.0]) < x).tolist() == [True, False, True]
    assert np.less(x, 2.0).tolist() == [True, False, False]
    scalar = Tensor(2.0) == 2.0
    assert type(scalar) is Tensor and bool(scalar) and scalar.item() is True
    assert type(np.argmax(x)) is np.int64  # index facts stay plain NumPy
    # a mask times a Tensor is differentiated as a constant factor
    (x * mask).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0]


def test_repr_shows_value_grad_and_node():
    x = Tensor(3.0)
    y = x * x
    assert repr(x) == "Tensor(3.0, requires_grad=True)"
    assert repr(y) == "Tensor(9.0, grad_fn=<multiply>)"
    y.backward()
    assert repr(x) == "Tensor(3.0, requires_grad=True, grad=6.0)"
    assert y.grad_fn.name == "multiply"  # still named after its graph was freed
    assert x.grad_fn is None and x.is_leaf


def test_grad_fn_names_the_node():
    x = Tensor(np.array([1.0, 2.0]))
    y = np.exp(x).sum()
    assert y.grad_fn.name == "sum" and not y.is_leaf
    assert y.grad_fn.parents[0].name == "exp"


def test_detach_and_item():
    x = Tensor(2.0)
    d = (x * x).detach()
    assert not d.requires_grad and d.is_leaf and d.item() == 4.0 and float(d) == 4.0
    with pytest.raises(RuntimeError, match="does not depend"):
        d.backward()


# ----------------------------------------------------------------------------- backward
def test_gradients_accumulate_until_cleared():
    x = Tensor(3.0)
    (x * x).backward()
    (x * x).backward()
    assert x.grad.item() == 12.0
    x.grad = None
    (x * 5).backward()
    assert x.grad.item() == 5.0


def test_second_backward_through_freed_graph_raises():
    x = Tensor(2.0)
    y = x * x
    y.backward()
    with pytest.raises(FreedGraphError, match="retain_graph=True"):
        y.backward()


def test_retain_graph_keeps_the_graph():
    x = Tensor(2.0)
    y = x**3
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == 24.0


def test_non_scalar_backward_needs_gradient():
    x = Tensor(np.array([1.0, 2.0, 3.0]))
    y = x * x
    with pytest.raises(RuntimeError, match="has shape \\(3,\\)"):
        y.backward()
    with pytest.raises(ValueError, match="must match"):
        y.backward(np.ones(2))
    y.backward(np.array([1.0, 0.0, -1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, -6.0])


def test_backward_reaches_only_requires_grad_leaves():
    x = Tensor(2.0)
    c = Tensor(4.0, requires_grad=False)
    (x * c).backward()
    assert x.grad.item() == 4.0 and c.grad is None


def test_broadcasting_is_undone():
    w = Tensor(np.ones(3))
    b = Tensor(0.5)
    (np.ones((4, 3)) * w + b).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, 4.0, 4.0])
    assert b.grad.item() == 12.0


# ----------------------------------------------------------------------------- create_graph
def test_create_graph_gives_second_derivative():
    x = Tensor(2.0)
    (x**3).backward(create_graph=True)
    g = x.grad
    assert g.item() == 12.0 and g.requires_grad
    x.grad = None
    g.backward()
    assert x.grad.item() == 12.0  # d2/dx2 x^3 = 6x


def test_create_graph_accumulates_like_pytorch():
    x = Tensor(2.0)
    (x**3).backward(create_graph=True)
    x.grad.backward()  # x.grad (12) + d(x.grad)/dx (12)
    assert x.grad.item() == 24.0


def test_create_graph_mixed_partials():
    x, y = Tensor(1.5), Tensor(-0.5)
    (cnp.sin(x * y) + x * x * y).backward(create_graph=True)
    gx = x.grad
    x.grad = y.grad = None
    gx.backward()
    # d/dy of (y cos(xy) + 2xy) = cos(xy) - xy sin(xy) + 2x
    assert y.grad.item() == pytest.approx(np.cos(-0.75) + 0.75 * np.sin(-0.75) + 3.0)
    # d/dx of the same = -y^2 sin(xy) + 2y
    assert x.grad.item() == pytest.approx(-0.25 * np.sin(-0.75) - 1.0)


def test_third_derivative_by_repeated_create_graph():
    x = Tensor(1.2)
    (x**4).backward(create_graph=True)
    g1 = x.grad
    x.grad = None
    g1.backward(create_graph=True)
    g2 = x.grad
    x.grad = None
    g2.backward()
    assert x.grad.item() == pytest.approx(24 * 1.2)


# ----------------------------------------------------------------------------- grad modes
def test_no_grad_records_nothing_and_enable_grad_restores():
    x = Tensor(2.0)
    with no_grad():
        y = x * x
        with enable_grad():
            z = x * x
        w = x * 3
    assert not y.requires_grad and z.requires_grad and not w.requires_grad
    assert cr.tensor.is_grad_enabled()


def test_no_grad_as_decorator():
    @no_grad()
    def f(t):
        return t * t

    assert not f(Tensor(2.0)).requires_grad


def test_no_grad_is_thread_local():
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def worker():
        with no_grad():
            inside.set()
            release.wait(5)
            seen["worker"] = (Tensor(1.0) * 2).requires_grad

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(5)
    seen["main"] = (Tensor(1.0) * 2).requires_grad  # main thread still records
    release.set()
    thread.join()
    assert seen == {"main": True, "worker": False}


def test_parameter_updates_in_place_under_no_grad():
    w = Tensor(np.array([1.0, 2.0]))
    (w * w).sum().backward()
    with pytest.raises(RuntimeError, match="no_grad"):
        w -= 0.1 * w.grad
    same = w
    with no_grad():
        w -= 0.25 * w.grad
        w[0] = 7.0
    assert w is same and w.is_leaf and w.requires_grad
    np.testing.assert_allclose(w.numpy(), [7.0, 1.0])


# ----------------------------------------------------------------------------- transforms
def test_grad_of_function_that_builds_tensors():
    def f(w):
        t = Tensor(w)
        return (t * t * 3.0).sum()

    np.testing.assert_allclose(cr.grad(f)(np.array([1.0, 2.0])), [6.0, 12.0])


def test_tensor_passed_into_grad_and_jacobian():
    t = Tensor(np.array([1.0, 2.0]), requires_grad=False)
    g = cr.grad(lambda t: (t**3).sum())(t)
    assert isinstance(g, Tensor)
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])
    np.testing.assert_allclose(cr.jacobian(lambda t: t * t)(t).numpy(), np.diag([2.0, 4.0]))


def test_grad_of_tracked_tensor_is_itself_differentiable():
    x = Tensor(np.array([0.5, -1.0]))
    g = cr.grad(lambda t: (t**3).sum())(x)  # 3x^2, recorded on the Tensor graph
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -6.0])


@pytest.mark.parametrize("transform", [cr.jacobian, cr.jacfwd, cr.jacrev])
def test_jacobian_of_a_tensor_that_requires_grad(transform):
    """(issue 33, item 10) It raised "cannot become a plain NumPy array": the derivative,
    a Tensor already, was wrapped in a second Tensor."""
    v = np.array([0.5, 2.0, -1.0])
    x = Tensor(v)
    jac = transform(lambda t: cnp.sin(t) * t)(x)  # diag(cos(v) v + sin(v))
    assert type(jac) is Tensor and type(jac.value) is np.ndarray
    np.testing.assert_allclose(jac.numpy(), np.diag(np.cos(v) * v + np.sin(v)), rtol=1e-14)
    assert "Tensor([[" in repr(jac)
    # recorded on the Tensor graph: d/dx of the trace of the Jacobian
    jac.trace().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(v) - v * np.sin(v), rtol=1e-14)


def test_hessian_of_a_tensor_that_requires_grad():
    v = np.array([0.5, 2.0, -1.0])
    x = Tensor(v)
    hess = cr.hessian(lambda t: (t**3).sum() + t[0] * t[1])(x)
    expected = np.diag(6 * v)
    expected[0, 1] = expected[1, 0] = 1.0
    assert type(hess) is Tensor and type(hess.value) is np.ndarray
    np.testing.assert_allclose(hess.numpy(), expected, rtol=1e-14)
    hess.sum().backward()  # the third derivative: d/dx sum(H) = 6
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0, 6.0])
    # twice, and on a Tensor that does not require grad: the same numbers
    again = cr.hessian(lambda t: (t**3).sum() + t[0] * t[1])(Tensor(v, requires_grad=False))
    np.testing.assert_allclose(again.numpy(), expected, rtol=1e-14)
    assert not again.requires_grad


def test_gradient_penalty_through_grad_matches_functional():
    w_value = np.array([[1.0, 2.0], [3.0, 4.0]])
    x0 = np.array([0.5, -0.5])
    w = Tensor(w_value)
    gx = cr.grad(lambda x: cnp.tanh(w @ x).sum())(Tensor(x0, requires_grad=False))
    (gx * gx).sum().backward()

    def penalty(wv):
        return (cr.grad(lambda x: cnp.tanh(wv @ x).sum())(x0) ** 2).sum()

    np.testing.assert_allclose(w.grad.numpy(), cr.grad(penalty)(w_value))


def test_detach_inside_a_transform_cuts_only_the_tensor_graph():
    w = Tensor(np.array([1.0, 2.0]))

    def f(x):
        return (w.detach() * x).sum() + (w * x).detach().sum()

    # detach removes the Tensor trace, not the transform's: both terms depend on x
    np.testing.assert_allclose(np.asarray(cr.stop_gradient(cr.grad(f)(np.ones(2)))), [2.0, 4.0])


def test_numpy_conversion_of_tracked_tensor_is_refused():
    x = Tensor(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="stack"):
        np.array([x, x])
    np.testing.assert_array_equal(np.asarray(x.detach()), [1.0, 2.0])


@pytest.mark.parametrize("form", ["x @ w", "w.T @ x", "Tensor(x) @ w"])
def test_functional_value_meeting_a_tensor(form):
    w = Tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    x0, v = np.array([0.5, -0.5]), np.array([1.0, 2.0])
    product = {
        "x @ w": lambda x, w: x @ w,
        "w.T @ x": lambda x, w: w.T @ x,
        "Tensor(x) @ w": lambda x, w: Tensor(x) @ w,
    }[form]

    def plain(x, wv):
        return cnp.tanh(x @ wv).sum() + (wv[0] * x).sum()

    def mixed(x):
        return cnp.tanh(product(x, w)).sum() + (x * w[0]).sum()

    g = cr.grad(mixed)(x0)
    assert isinstance(g, Tensor) and g.requires_grad  # d/dx depends on w
    np.testing.assert_allclose(g.detach().numpy(), cr.grad(plain)(x0, w.value))
    _, tangent = cr.jvp(mixed, (x0,), (v,))
    _, expected = cr.jvp(lambda x: plain(x, w.value), (x0,), (v,))
    np.testing.assert_allclose(tangent.detach().numpy(), expected)
    with no_grad():
        assert type(cr.grad(mixed)(x0)) is np.ndarray  # w is a constant here
    (g * g).sum().backward()  # a gradient penalty, differentiated with respect to w
    np.testing.assert_allclose(
        w.grad.numpy(), cr.grad(lambda wv: (cr.grad(plain)(x0, wv) ** 2).sum())(w.value)
    )


def test_traced_value_times_tensor_of_itself():
    def f(x):
        t = Tensor(x)  # traced by grad: grad differentiates it, not backward()
        assert not t.requires_grad
        return (x * t).sum()

    np.testing.assert_allclose(cr.grad(f)(np.array([0.5, -1.0])), [1.0, -2.0])
    _, tangent = cr.jvp(f, (np.array([0.5, -1.0]),), (np.ones(2),))
    assert tangent.item() == pytest.approx(-1.0)


def test_tensor_traced_array_times_tensor_keeps_both_parents():
    a, b = Tensor(2.0), Tensor(3.0)
    ta = a._value  # a's Tensor-traced array outside any Tensor, as derivative rules see it
    five = Tensor(5.0, requires_grad=False)
    out = ta * b + ta * five  # the array is on the left: the Tensors come by dispatch
    assert isinstance(out, Tensor)
    out.backward()
    assert (a.grad.item(), b.grad.item()) == (8.0, 2.0)
    assert type(a.grad.value) is np.float64


def test_assigning_a_tracked_value_into_a_tensor_is_refused():
    buf = Tensor(np.zeros(2), requires_grad=False)
    x = Tensor(1.0)
    with pytest.raises(TypeError, match="drop its gradient"):
        buf[0] = x * 2
    buf[0] = (x * 2).detach()
    np.testing.assert_array_equal(buf.numpy(), [2.0, 0.0])


def test_complex_output_needs_an_explicit_gradient():
    z = Tensor(1.0 + 2.0j)
    with pytest.raises(RuntimeError, match="is complex"):
        (z * z).backward()
    (z * z).real.backward()
    assert z.grad.item() == cr.grad(lambda v: cnp.real(v * v))(1.0 + 2.0j)  # the same engine


def test_transpose_swaps_two_dims_as_in_pytorch():
    # Regression: transpose(0, 1) of a 2-D Tensor used NumPy's transpose(axes) reading
    # and returned the Tensor unchanged.
    a = np.arange(6.0).reshape(2, 3)
    x = Tensor(a)
    y = x.transpose(0, 1)
    np.testing.assert_array_equal(y.numpy(), a.T)
    assert x.transpose(1, 0).shape == (3, 2) and x.transpose(-1, -2).shape == (3, 2)
    b = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(Tensor(b).transpose(0, 2).numpy(), np.swapaxes(b, 0, 2))
    (y * Tensor(np.arange(6.0).reshape(3, 2), requires_grad=False)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(6.0).reshape(3, 2).T)
    # one sequence is NumPy's transpose(axes): (0, 1) keeps the order, as NumPy's
    np.testing.assert_array_equal(x.transpose((0, 1)).numpy(), a)


# ----------------------------------------------------------------------------- NumPy's and
# PyTorch's other spellings of the shape methods: the values NumPy's (or PyTorch's) method
# gives, the gradient the finite differences give
B = np.arange(1.0, 25.0).reshape(2, 3, 4) ** 1.5 / 100
SPELLED = {  # name -> (Tensor method, NumPy's on the array, the input)
    "transpose()": (lambda t: t.transpose(), lambda a: a.transpose(), B),
    "transpose(None)": (lambda t: t.transpose(None), lambda a: a.transpose(None), B),
    "transpose(axes)": (lambda t: t.transpose((2, 0, 1)), lambda a: a.transpose((2, 0, 1)), B),
    "transpose([axes])": (lambda t: t.transpose([1, 2, 0]), lambda a: a.transpose([1, 2, 0]),
                          B),
    "transpose(*axes)": (lambda t: t.transpose(2, 0, 1), lambda a: a.transpose(2, 0, 1), B),
    "transpose(-axes)": (lambda t: t.transpose(-1, 0, -2), lambda a: a.transpose(-1, 0, -2), B),
    "transpose 1-d": (lambda t: t.transpose(0), lambda a: a.transpose(0), B[0, 0]),
    "transpose(dim0=, dim1=)": (lambda t: t.transpose(dim0=0, dim1=2),
                                lambda a: a.swapaxes(0, 2), B),
    "transpose(d0, dim1=)": (lambda t: t.transpose(-1, dim1=1), lambda a: a.swapaxes(-1, 1), B),
    "squeeze(axis=)": (lambda t: t.squeeze(axis=0), lambda a: a.squeeze(axis=0), B[:1, :, 2:3]),
    "squeeze(axis=tuple)": (lambda t: t.squeeze(axis=(0, -1)),
                            lambda a: a.squeeze(axis=(0, -1)), B[:1, :, 2:3]),
    "squeeze(dim=)": (lambda t: t.squeeze(dim=2), lambda a: a.squeeze(axis=2), B[:1, :, 2:3]),
    "permute(dims=)": (lambda t: t.permute(dims=(2, 0, 1)), lambda a: a.transpose(2, 0, 1), B),
    "permute([dims])": (lambda t: t.permute([1, 0, 2]), lambda a: a.transpose(1, 0, 2), B),
}


@pytest.mark.parametrize("name", sorted(SPELLED))
def test_shape_methods_take_numpys_and_pytorchs_spellings_with_derivatives(name):
    method, numpy_method, x = SPELLED[name]
    x = x.copy()
    _check_against_numpy(method, numpy_method, x)
    np.testing.assert_array_equal(x, SPELLED[name][2])  # (the input is unchanged)


def test_shape_methods_refuse_what_neither_numpy_nor_pytorch_takes():
    t = Tensor(np.ones((1, 3, 1)))
    with pytest.raises(ValueError, match="size not equal to one"):
        t.squeeze(axis=1)  # NumPy's keyword, NumPy's error (PyTorch's dim=1 is ignored)
    assert t.squeeze(1).shape == (1, 3, 1) and t.squeeze(dim=1).shape == (1, 3, 1)
    with pytest.raises(TypeError, match="not both"):
        t.squeeze(0, axis=0)
    with pytest.raises(TypeError, match="not both"):
        t.permute(0, 1, 2, dims=(0, 1, 2))
    with pytest.raises(TypeError, match="dim0 and dim1"):
        t.transpose(0, 1, dim1=2)
    with pytest.raises(TypeError, match="dim0 and dim1"):
        t.transpose(axes=(0, 1, 2))
    with pytest.raises(ValueError, match="axes don't match array"):
        t.transpose(0, 1, 2, 0)


# ----------------------------------------------------------------------------- NumPy's order=
ORDERED = {  # Tensor method -> NumPy's own on the array
    "reshape F": (lambda t: t.reshape(3, 2, order="F"), lambda a: a.reshape(3, 2, order="F")),
    "reshape F tuple": (lambda t: t.reshape((2, 3), order="F"),
                        lambda a: a.reshape((2, 3), order="F")),
    "reshape -1 F": (lambda t: t.reshape(-1, order="F"), lambda a: a.reshape(-1, order="F")),
    "reshape shape= A": (lambda t: t.T.reshape(shape=(3, 2), order="A"),
                         lambda a: a.T.reshape((3, 2), order="A")),
    "flatten F": (lambda t: t.flatten("F"), lambda a: a.flatten("F")),
    "flatten order=K": (lambda t: t.T.flatten(order="K"), lambda a: a.T.flatten(order="K")),
    "ravel F": (lambda t: t.ravel(order="F"), lambda a: a.ravel(order="F")),
}


def _check_against_numpy(method, numpy_method, x):
    """The Tensor method's values are NumPy's method's, its gradient (of a weighted sum) the
    central differences, and both modes to second order agree with finite differences."""
    w = np.linspace(-1.0, 2.0, x.size).reshape(numpy_method(x).shape)
    t = Tensor(x)
    out = method(t)
    assert out.numpy().tolist() == numpy_method(x).tolist()
    (out * Tensor(w, requires_grad=False)).sum().backward()
    # central differences of sum(numpy_method(x) * w): linear, so exact up to rounding
    h, fd = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        fd[i] = (np.sum(numpy_method(x + e) * w) - np.sum(numpy_method(x - e) * w)) / (2 * h)
    np.testing.assert_allclose(t.grad.numpy(), fd, rtol=1e-7, atol=1e-9)
    # (and both modes to second order, through the functional transforms)
    from chainrule.test_util import check_grads

    check_grads(lambda x: cnp.sum(method(Tensor(x))._value * w) ** 2, x, modes=("fwd", "rev"),
                order=2)


@pytest.mark.parametrize("name", sorted(ORDERED))
def test_reshape_and_flatten_take_numpys_order_with_derivatives(name):
    method, numpy_method = ORDERED[name]
    _check_against_numpy(method, numpy_method, np.arange(6.0).reshape(2, 3) ** 1.5)


def test_flatten_with_dims_and_an_order_is_refused():
    with pytest.raises(TypeError, match="flattens all dims"):
        Tensor(np.ones((2, 3, 4))).flatten(1, order="F")
    with pytest.raises(TypeError, match="not both"):
        Tensor(np.ones((2, 3))).reshape(3, 2, shape=(3, 2))


@pytest.mark.parametrize("fun", [lambda x: cnp.reshape(x, (3, 2), order="A"),
                                 lambda x: cnp.ravel(x, order="A")])
def test_order_a_of_a_fortran_array_has_the_finite_difference_gradient(fun):
    x = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    w = np.arange(6.0).reshape(np.shape(fun(x)))
    h, fd = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        fd[i] = (np.sum(fun(x + e) * w) - np.sum(fun(x - e) * w)) / (2 * h)
    np.testing.assert_allclose(cr.grad(lambda x: cnp.sum(fun(x) * w))(x), fd, atol=1e-6)
