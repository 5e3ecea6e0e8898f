"""What JAX and autograd users type by habit: argnums=, has_aux=, jvp's tuples, warnings at
their own line, and errors that name the output when the output is the problem."""

import warnings

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import (
    deriv,
    elementwise_grad,
    grad,
    grad_and_aux,
    hessian,
    hessian_tensor_product,
    holomorphic_grad,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    make_hvp,
    make_jvp,
    make_vjp,
    tensor_jacobian_product,
    value_and_grad,
    vjp,
)
from chainrule._core.tracer import isbox

X = onp.array([0.3, -1.2, 2.0])
Y = onp.array([1.5, 0.4])


def f(x, y):
    """A scalar of two arrays: sum(sin(x) * x0) * sum(y ** 2) + x . x / y0."""
    return np.sum(np.sin(x) * x[0]) * np.sum(y**2) + np.dot(x, x) / y[0]


def df_dx(x, y):  # by hand
    q = onp.sum(y**2)
    ds = onp.cos(x) * x[0]
    ds[0] += onp.sum(onp.sin(x))
    return ds * q + 2 * x / y[0]


def df_dy(x, y):
    s = onp.sum(onp.sin(x) * x[0])
    d = 2 * s * y
    d[0] -= onp.dot(x, x) / y[0] ** 2
    return d


def numeric_grad(fun, x, eps=1e-6):
    """Central differences of a scalar function of one array."""
    out = onp.zeros_like(x)
    for i in range(x.size):
        step = onp.zeros_like(x)
        step.flat[i] = eps
        out.flat[i] = (fun(x + step) - fun(x - step)) / (2 * eps)
    return out


def close(a, b, tol=1e-6):
    onp.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- argnums
def test_the_hand_derivatives_match_finite_differences():
    close(df_dx(X, Y), numeric_grad(lambda x: f(x, Y), X))
    close(df_dy(X, Y), numeric_grad(lambda y: f(X, y), Y))


def test_argnums_is_argnum():
    close(grad(f, argnums=1)(X, Y), df_dy(X, Y))
    close(grad(f, argnums=1)(X, Y), grad(f, 1)(X, Y))
    close(grad(f, argnums=-1)(X, Y), df_dy(X, Y))
    gx, gy = grad(f, argnums=(0, 1))(X, Y)
    close(gx, df_dx(X, Y))
    close(gy, df_dy(X, Y))


def test_argnums_sequence_gives_a_tuple_of_gradients():
    for nums in [(0, 1), [0, 1], (1, 0)]:
        grads = grad(f, argnums=nums)(X, Y)
        assert isinstance(grads, tuple) and len(grads) == 2
        expected = {0: df_dx(X, Y), 1: df_dy(X, Y)}
        for num, g in zip(nums, grads):
            close(g, expected[num])
    (only,) = grad(f, argnums=(1,))(X, Y)
    close(only, df_dy(X, Y))


def test_value_and_grad_jacobian_hessian_take_argnums():
    value, g = value_and_grad(f, argnums=1)(X, Y)
    assert value == pytest.approx(float(f(X, Y)))
    close(g, df_dy(X, Y))
    J = jacobian(lambda x, y: x * np.sum(y), argnums=1)(X, Y)
    close(J, onp.outer(X, onp.ones(2)))
    H = hessian(lambda x, y: np.sum(x**3) * y[0], argnums=0)(X, Y)
    close(H, onp.diag(6 * X * Y[0]))


def test_hessian_with_a_tuple_of_argnums_is_nested_as_jax():
    # H[i][j] = d2f / d(arg i) d(arg j), shaped arg_i.shape + arg_j.shape
    H = hessian(f, argnums=(0, 1))(X, Y)
    assert isinstance(H, tuple) and all(isinstance(row, tuple) for row in H)
    assert [[block.shape for block in row] for row in H] == [[(3, 3), (3, 2)], [(2, 3), (2, 2)]]
    close(H[0][1], numeric_grad_rows(lambda y: df_dx(X, y), Y), tol=1e-5)
    close(H[1][0], numeric_grad_rows(lambda x: df_dy(x, Y), X), tol=1e-5)
    close(H[1][1], numeric_grad_rows(lambda y: df_dy(X, y), Y), tol=1e-5)
    close(H[0][1], H[1][0].T)


def numeric_grad_rows(vector_fun, x, eps=1e-6):
    """The Jacobian of a vector function by central differences, output axis first."""
    columns = []
    for i in range(x.size):
        step = onp.zeros_like(x)
        step[i] = eps
        columns.append((vector_fun(x + step) - vector_fun(x - step)) / (2 * eps))
    return onp.stack(columns, axis=-1)


@pytest.mark.parametrize("jac", [jacobian, jacfwd, jacrev])
def test_jacobian_of_a_container_output_nests_output_then_input(jac):
    out = jac(lambda x: {"a": x**2, "b": (np.sum(x), x[0] * x)})(X)
    close(out["a"], onp.diag(2 * X))
    close(out["b"][0], onp.ones(3))
    expected = onp.diag(onp.full(3, X[0]))
    expected[:, 0] += X
    close(out["b"][1], expected)


@pytest.mark.parametrize(
    "transform",
    [
        grad,
        value_and_grad,
        jacobian,
        hessian,
        elementwise_grad,
        make_vjp,
        make_jvp,
        deriv,
        holomorphic_grad,
        grad_and_aux,
        make_hvp,
        hessian_tensor_product,
        tensor_jacobian_product,
    ],
)
def test_argnum_and_argnums_together_are_refused(transform):
    with pytest.raises(TypeError, match=r"both argnum=0 and argnums=1"):
        transform(f, 0, argnums=1)(X, Y)


@pytest.mark.parametrize(
    "transform", [make_vjp, make_jvp, deriv, make_hvp, grad_and_aux, elementwise_grad]
)
def test_argnums_works_on_the_other_argnum_transforms(transform):
    def g(scale, x):
        return (
            (np.sum(np.sin(x) * scale), "aux")
            if transform is grad_and_aux
            else np.sum(np.sin(x) * scale)
        )

    by_argnum = transform(g, 1)(2.0, X)
    by_argnums = transform(g, argnums=1)(2.0, X)
    if transform is make_vjp:
        close(by_argnums[0](1.0), 2.0 * onp.cos(X))
        close(by_argnums[0](1.0), by_argnum[0](1.0))
    elif transform is make_jvp:
        close(by_argnums(onp.ones(3))[1], 2.0 * onp.sum(onp.cos(X)))
    elif transform is make_hvp:
        close(by_argnums[0](onp.ones(3)), -2.0 * onp.sin(X))
    elif transform is grad_and_aux:
        close(by_argnums[0], 2.0 * onp.cos(X))
        assert by_argnums[1] == "aux"
    else:  # deriv: along ones; elementwise_grad: the gradient of a scalar
        expected = 2.0 * onp.sum(onp.cos(X)) if transform is deriv else 2.0 * onp.cos(X)
        close(by_argnums, expected)
        close(by_argnum, expected)


def test_product_transforms_take_argnums():
    g = lambda scale, x: np.sum(x**3) * scale
    close(hessian_tensor_product(g, argnums=1)(2.0, X, onp.ones(3)), 12.0 * X)
    close(tensor_jacobian_product(np.multiply, argnums=1)(2.0, X, onp.ones(3)), [2.0] * 3)


def test_holomorphic_grad_takes_argnums():
    z = 1.0 + 2.0j
    assert holomorphic_grad(lambda a, z: a * z**2, argnums=1)(3.0, z) == pytest.approx(6 * z)


# ----------------------------------------------------------------------------- has_aux
def loss_and_aux(x, y):
    loss = f(x, y)
    return loss, {"loss": loss, "x0": x[0] * 2.0, "note": "kept as is"}


def assert_plain_aux(aux, x=X, y=Y):
    assert not isbox(aux["loss"]) and not isbox(aux["x0"])
    assert aux["loss"] == pytest.approx(float(f(x, y)))
    assert aux["x0"] == pytest.approx(2.0 * x[0])
    assert aux["note"] == "kept as is"


def test_grad_has_aux():
    g, aux = grad(loss_and_aux, has_aux=True)(X, Y)
    close(g, df_dx(X, Y))
    assert_plain_aux(aux)
    (gx, gy), aux = grad(loss_and_aux, argnums=(0, 1), has_aux=True)(X, Y)
    close(gy, df_dy(X, Y))
    assert_plain_aux(aux)


def test_value_and_grad_has_aux_is_value_aux_then_grad():
    (value, aux), g = value_and_grad(loss_and_aux, argnums=1, has_aux=True)(X, Y)
    assert value == pytest.approx(float(f(X, Y))) and not isbox(value)
    close(g, df_dy(X, Y))
    assert_plain_aux(aux)


@pytest.mark.parametrize("jac", [jacobian, jacfwd, jacrev])
def test_jacobians_have_aux(jac):
    J, aux = jac(lambda x: (np.sin(x) * x[1], {"max": np.max(x)}), has_aux=True)(X)
    expected = onp.diag(onp.cos(X) * X[1])
    expected[:, 1] += onp.sin(X)
    close(J, expected)
    assert aux["max"] == 2.0 and not isbox(aux["max"])


def test_hessian_and_elementwise_grad_have_aux():
    H, aux = hessian(lambda x: (np.sum(x**3), x * 2.0), has_aux=True)(X)
    close(H, onp.diag(6 * X))
    close(aux, 2 * X)
    assert not isbox(aux)
    g, aux = elementwise_grad(lambda x: (x**2, "a"), has_aux=True)(X)
    close(g, 2 * X)
    assert aux == "a"


def test_an_enclosing_transform_still_traces_aux():
    # aux = x * y * y at x = 1: d/dy of y**2 is 2y (JAX gives 4.0 at y = 2 too)
    outer = grad(lambda y: grad(lambda x: (x * y, x * y * y), has_aux=True)(1.0)[1])
    assert outer(2.0) == pytest.approx(4.0)
    inner_grad = grad(lambda y: grad(lambda x: (x * y * y, 0.0), has_aux=True)(1.0)[0])
    assert inner_grad(2.0) == pytest.approx(4.0)


def test_has_aux_needs_a_pair():
    with pytest.raises(TypeError, match=r"has_aux=True: .* must return a pair \(output, aux\)"):
        grad(lambda x: x**2, has_aux=True)(3.0)
    with pytest.raises(TypeError, match=r"must return a pair"):
        jacfwd(lambda x: (x, x, x), has_aux=True)(X)


def test_has_aux_keeps_names_and_docs():
    def loss(x):
        return x**2, None

    assert grad(loss, has_aux=True).__name__ == "grad_of_loss_wrt_argnum_0"
    assert jacrev(loss, has_aux=True).__name__ == "loss"


# ----------------------------------------------------------------------------- jvp
def test_jvp_refuses_primals_not_in_a_tuple():
    x = onp.array([0.5, 1.0])
    with pytest.raises(TypeError, match=r"primals and tangents must be tuples .*ndarray"):
        jvp(np.sin, x, onp.ones(2))
    with pytest.raises(TypeError, match=r"must be tuples .*got float and float"):
        jvp(np.sin, 0.5, 1.0)
    value, tangent = jvp(np.sin, (x,), (onp.ones(2),))
    close(tangent, onp.cos(x))
    value, tangent = jvp(lambda a, b: a * b, [2.0, 3.0], [1.0, 0.0])
    assert (value, tangent) == (6.0, 3.0)


def test_jvp_and_vjp_have_aux():
    def fun(x, y):
        return np.sin(x) * y[0], {"y1": y[1] * 3.0}

    out, tangent, aux = jvp(fun, (X, Y), (onp.ones(3), onp.zeros(2)), has_aux=True)
    close(out, onp.sin(X) * Y[0])
    close(tangent, onp.cos(X) * Y[0])
    assert aux["y1"] == pytest.approx(Y[1] * 3.0) and not isbox(aux["y1"])
    out, pull, aux = vjp(fun, X, Y, has_aux=True)
    gx, gy = pull(onp.ones(3))
    close(gx, onp.cos(X) * Y[0])
    close(gy, [onp.sum(onp.sin(X)), 0.0])
    assert aux["y1"] == pytest.approx(Y[1] * 3.0) and not isbox(aux["y1"])


# ----------------------------------------------------------------------------- outputs
@pytest.mark.filterwarnings("ignore:Output seems independent")
@pytest.mark.parametrize(
    "fun, dtype",
    [
        (lambda x: np.sum(x > 0), "int64"),
        (lambda x: np.argmax(x), "int64"),
        (lambda x: np.any(x > 0), "bool"),
    ],
)
@pytest.mark.parametrize("transform", [grad, value_and_grad])
def test_an_integer_output_is_named_as_the_output(transform, fun, dtype):
    with pytest.raises(
        TypeError, match=rf"output is not differentiable: it has dtype {dtype}"
    ) as err:
        transform(fun)(X)
    assert "with respect to" not in str(err.value)


@pytest.mark.filterwarnings("ignore:Output seems independent")
def test_a_python_int_output_is_named():
    with pytest.raises(TypeError, match=r"output is not differentiable: it has type int"):
        grad(lambda x: 3)(1.0)


@pytest.mark.filterwarnings("ignore:Output seems independent")
@pytest.mark.parametrize("transform", [grad, value_and_grad, jacobian, elementwise_grad])
def test_a_none_output_is_named(transform):
    def forgot(x):
        np.sum(x**2)

    with pytest.raises(TypeError, match=r"fun returned None; did you forget return\?"):
        transform(forgot)(X)


@pytest.mark.parametrize(
    "container, name",
    [(lambda s: {"loss": s}, "dict"), (lambda s: [s], "list"), (lambda s: (s,), "tuple")],
)
@pytest.mark.parametrize("transform", [grad, value_and_grad])
def test_a_single_entry_container_output_is_refused(transform, container, name):
    with pytest.raises(TypeError, match=rf"requires a real scalar output, .*returned a {name}"):
        transform(lambda x: container(np.sum(x**2)))(X)


def test_a_vector_output_is_still_refused_by_shape():
    with pytest.raises(TypeError, match=r"requires a real scalar output, .*shape \(3,\)"):
        grad(lambda x: x**2)(X)


# ----------------------------------------------------------------------------- warnings
def log_of(x):
    return np.log(x)  # LOG_LINE


def sqrt_of(x):
    return np.sqrt(x) * 2.0  # SQRT_LINE


def line_of(fun, offset=1):
    return fun.__code__.co_firstlineno + offset


def recorded(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def test_warnings_of_the_forward_pass_point_at_the_users_line():
    for run in [
        lambda: grad(log_of)(0.0),
        lambda: deriv(log_of)(0.0),
        lambda: jvp(log_of, (0.0,), (1.0,)),
        lambda: jacfwd(log_of)(onp.zeros(2)),
        lambda: jacobian(log_of)(onp.zeros(2)),
        lambda: make_jvp(log_of)(0.0)(1.0),
    ]:
        warned = recorded(run)
        assert (
            RuntimeWarning,
            "divide by zero encountered in log",
            __file__,
            line_of(log_of),
        ) in warned, warned
    warned = recorded(lambda: grad(sqrt_of)(-1.0))
    assert warned[0] == (
        RuntimeWarning,
        "invalid value encountered in sqrt",
        __file__,
        line_of(sqrt_of),
    )


def test_warnings_of_the_backward_pass_point_at_the_call():
    warned = recorded(lambda: grad(sqrt_of)(0.0))  # 0.5 / sqrt(0) on the way back
    here = line_of(test_warnings_of_the_backward_pass_point_at_the_call)
    assert [w[2:] for w in warned] == [(__file__, here)], warned
    assert warned[0][0] is RuntimeWarning and "divide by zero" in warned[0][1]


def test_warnings_of_a_vjp_called_later_point_at_its_call():
    warned = recorded(lambda: grad(np.log)(0.0))
    here = line_of(test_warnings_of_a_vjp_called_later_point_at_its_call)
    assert {w[2:] for w in warned} == {(__file__, here)}, warned
    pull, _ = make_vjp(sqrt_of)(0.0)
    warned = recorded(lambda: pull(1.0))
    assert [w[2:] for w in warned] == [(__file__, here + 4)], warned
    _, pull = vjp(sqrt_of, 0.0)
    warned = recorded(lambda: pull(1.0))
    assert [w[2:] for w in warned] == [(__file__, here + 7)], warned


def test_numpys_error_settings_still_rule():
    with onp.errstate(divide="ignore"):
        assert recorded(lambda: grad(log_of)(0.0)) == []
    with onp.errstate(divide="raise"), pytest.raises(FloatingPointError):
        grad(log_of)(0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in log"):
            grad(log_of)(0.0)
    calls = []
    with onp.errstate(divide="call", call=lambda kind, flag: calls.append(kind)):
        grad(log_of)(0.0)
    assert calls and set(calls) == {"divide by zero"}
    assert onp.geterr()["divide"] == "warn" and onp.geterrcall() is None


def test_values_are_unchanged_where_numpy_warns():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert grad(log_of)(0.0) == onp.inf
        assert onp.isnan(grad(sqrt_of)(-1.0))


# ----------------------------------------------------------------------------- against JAX
def two_args(npx):
    def fun(x, y):
        return npx.sum(npx.sin(x) * x[0]) * npx.sum(y**2) + npx.dot(x, x) / y[0]

    return fun


def with_aux_of(npx):
    def fun(x, y):
        out = two_args(npx)(x, y)
        return out, {"out": out, "x": x * y[1]}

    return fun


def vector_of(npx):
    def fun(x, y):
        return {"a": x * y[0], "b": (npx.sum(x) * y, npx.tanh(x))}

    return fun


def vector_with_aux_of(npx):
    def fun(x, y):
        return vector_of(npx)(x, y), npx.sum(y)

    return fun


# (chainrule's transform, JAX's, the function, keyword arguments for both)
JAX_CASES = [
    ("grad", "grad", two_args, {"argnums": 1}),
    ("grad", "grad", two_args, {"argnums": (0, 1)}),
    ("grad", "grad", two_args, {"argnums": -1}),
    ("grad", "grad", with_aux_of, {"argnums": (1, 0), "has_aux": True}),
    ("value_and_grad", "value_and_grad", two_args, {"argnums": (0, 1)}),
    ("value_and_grad", "value_and_grad", with_aux_of, {"argnums": 0, "has_aux": True}),
    ("jacobian", "jacrev", vector_of, {"argnums": (0, 1)}),
    ("jacobian", "jacrev", vector_with_aux_of, {"argnums": 1, "has_aux": True}),
    ("jacfwd", "jacfwd", vector_of, {"argnums": (0, 1)}),
    ("jacfwd", "jacfwd", vector_with_aux_of, {"argnums": 0, "has_aux": True}),
    ("jacrev", "jacrev", vector_with_aux_of, {"argnums": (1,), "has_aux": True}),
    ("hessian", "hessian", two_args, {"argnums": (0, 1)}),
    ("hessian", "hessian", two_args, {"argnums": 1}),
    ("hessian", "hessian", with_aux_of, {"argnums": (0, 1), "has_aux": True}),
]


def structure(tree):
    """The containers of a result, leaves as their shapes (JAX arrays and NumPy alike)."""
    if isinstance(tree, (tuple, list)):
        return tuple(structure(t) for t in tree)
    if isinstance(tree, dict):
        return {k: structure(v) for k, v in tree.items()}
    return onp.shape(tree)


def leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in leaves(t)]
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in leaves(tree[k])]
    return [onp.asarray(tree, dtype=float)]


def test_jvp_and_vjp_with_aux_match_jax():
    jax = pytest.importorskip("jax")
    x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        jx, jy = jax.numpy.asarray(X), jax.numpy.asarray(Y)
        fun = vector_with_aux_of(jax.numpy)
        expected_jvp = jax.jvp(fun, (jx, jy), (jx * 0 + 1, jy), has_aux=True)
        out, pull, aux = jax.vjp(fun, jx, jy, has_aux=True)
        expected_vjp = (out, pull(jax.tree_util.tree_map(jax.numpy.ones_like, out)), aux)
        expected = jax.tree_util.tree_map(onp.asarray, (expected_jvp, expected_vjp))
    finally:
        jax.config.update("jax_enable_x64", x64)
    fun = vector_with_aux_of(np)
    got_jvp = jvp(fun, (X, Y), (onp.ones(3), Y), has_aux=True)
    out, pull, aux = vjp(fun, X, Y, has_aux=True)
    from chainrule import tree_map

    got = (got_jvp, (out, pull(tree_map(onp.ones_like, out)), aux))
    assert structure(got) == structure(expected)
    for a, b in zip(leaves(got), leaves(expected)):
        close(a, b, tol=1e-12)


@pytest.mark.parametrize("ours, theirs, make, options", JAX_CASES)
def test_matches_jax_side_by_side(ours, theirs, make, options):
    jax = pytest.importorskip("jax")
    import chainrule

    x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        expected = getattr(jax, theirs)(make(jax.numpy), **options)(
            jax.numpy.asarray(X), jax.numpy.asarray(Y)
        )
        expected = jax.tree_util.tree_map(onp.asarray, expected)
    finally:
        jax.config.update("jax_enable_x64", x64)
    got = getattr(chainrule, ours)(make(np), **options)(X, Y)
    assert structure(got) == structure(expected)
    for a, b in zip(leaves(got), leaves(expected)):
        close(a, b, tol=1e-12)
