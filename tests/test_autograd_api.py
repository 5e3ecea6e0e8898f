"""autograd compatibility: every name autograd's users import exists at the same path,
and autograd-style programs give hand-checked numbers."""

from __future__ import annotations

import importlib
import warnings

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule import (
    checkpoint,
    deriv,
    elementwise_grad,
    grad,
    grad_and_aux,
    grad_named,
    hessian,
    hessian_tensor_product,
    hessian_vector_product,
    holomorphic_grad,
    jacobian,
    make_ggnvp,
    make_hvp,
    make_jvp,
    make_vjp,
    multigrad_dict,
    tensor_jacobian_product,
    value_and_grad,
    vector_jacobian_product,
)

# module path -> names (from autograd-api.md)
PUBLIC = {
    "chainrule": """grad elementwise_grad value_and_grad grad_and_aux jacobian hessian
        hessian_tensor_product hessian_vector_product make_hvp make_ggnvp make_vjp make_jvp
        tensor_jacobian_product vector_jacobian_product deriv holomorphic_grad grad_named
        multigrad_dict checkpoint primitive tuple list dict isinstance type""",
    "chainrule.numpy": "c_ r_ row_stack linalg fft random ndarray float64 pi newaxis",
    "chainrule.numpy.linalg": "det inv solve norm",
    "chainrule.numpy.fft": "fft ifft",
    "chainrule.numpy.random": "RandomState randn rand seed choice randint uniform gamma",
    "chainrule.numpy.numpy_boxes": "ArrayBox",
    "chainrule.numpy.numpy_vspaces": "ArrayVSpace ComplexArrayVSpace",
    "chainrule.extend": """primitive notrace_primitive defvjp defvjp_argnum defvjp_argnums
        defjvp defjvp_argnum defjvp_argnums def_linear vspace VSpace Box SparseObject""",
    "chainrule.test_util": "check_grads check_vjp check_jvp check_equivalent combo_check "
                           "scalar_close",
    "chainrule.builtins": "tuple list dict isinstance type SequenceBox DictBox",
    "chainrule.misc": "flatten const_graph optimizers fixed_points",
    "chainrule.misc.flatten": "flatten flatten_func",
    "chainrule.misc.optimizers": "sgd rmsprop adam",
    "chainrule.misc.fixed_points": "fixed_point",
    "chainrule.misc.tracers": "const_graph",
    # internal modules user code reaches into anyway
    "chainrule.core": """make_vjp make_jvp primitive vspace primitive_vjps primitive_jvps
        VJPNode JVPNode backward_pass defvjp defjvp""",
    "chainrule.tracer": "trace Node Box isbox getval new_box primitive notrace_primitive",
    "chainrule.util": "quick_grad_check func subvals",
    "chainrule.wrap_util": "unary_to_nary",
}
# autograd names chainrule.numpy adds to NumPy's own
EXTRA_NUMPY = {("chainrule.numpy", "make_diagonal"), ("chainrule.numpy", "__version__"),
               ("chainrule.numpy", "shape")}
SCIPY = {
    "chainrule.scipy.special": """beta betaln betainc gamma gammaln gammasgn rgamma digamma
        psi polygamma multigammaln gammainc gammaincc erf erfc erfinv erfcinv expit logit
        logsumexp i0 i1 iv ive j0 j1 jn y0 y1 yn""",
    "chainrule.scipy.stats": "norm t multivariate_normal dirichlet gamma beta chi2 poisson",
    "chainrule.scipy.linalg": "sqrtm solve_sylvester solve_triangular solve_banded",
    "chainrule.scipy.signal": "convolve",
    "chainrule.scipy.integrate": "odeint",
}


def _pairs(table):
    return [(mod, name) for mod, names in table.items() for name in names.split()]


@pytest.mark.parametrize("module, name", _pairs(PUBLIC) + sorted(EXTRA_NUMPY))
def test_public_name_importable(module, name):
    assert hasattr(importlib.import_module(module), name), f"{module}.{name} is missing"


@pytest.mark.parametrize("module", ["numpy", "numpy.linalg", "numpy.fft"])
def test_every_numpy_function_and_constant_is_there(module):
    import types

    ours, theirs = importlib.import_module(f"chainrule.{module}"), importlib.import_module(module)
    missing = [name for name in dir(theirs) if not name.startswith("_")
               and not isinstance(getattr(theirs, name), types.ModuleType)
               and not hasattr(ours, name) and ("chainrule." + module, name) not in EXTRA_NUMPY]
    assert missing == []


def test_msort_where_numpy_has_it():
    assert hasattr(np, "msort") == hasattr(onp, "msort")


@pytest.mark.parametrize("module, name", _pairs(SCIPY))
def test_scipy_name_importable(module, name):
    pytest.importorskip("scipy")
    pytest.importorskip("chainrule.scipy", reason="chainrule.scipy not built yet")
    assert hasattr(importlib.import_module(module), name), f"{module}.{name} is missing"


# ----------------------------------------------------------------------------- transforms
def test_grad_with_argnum_tuple():
    def f(x, y):
        return x**2 * y + np.sin(y)

    dx, dy = grad(f, (0, 1))(2.0, 3.0)
    assert dx == pytest.approx(12.0)                     # 2 x y
    assert dy == pytest.approx(4.0 + onp.cos(3.0))       # x^2 + cos y
    assert grad(f, 1)(2.0, 3.0) == pytest.approx(dy)


def test_grad_passes_keyword_arguments_through():
    f = lambda x, scale=1.0: scale * x**3
    assert grad(f)(2.0, scale=5.0) == pytest.approx(60.0)


def test_value_and_grad():
    value, g = value_and_grad(lambda x: np.sum(x**3))(onp.array([1.0, 2.0]))
    assert value == 9.0
    onp.testing.assert_allclose(g, [3.0, 12.0])


def test_grad_and_aux():
    def f(x):
        return x**2, {"half": x / 2, "label": "ok"}

    g, aux = grad_and_aux(f)(3.0)
    assert g == pytest.approx(6.0)
    assert aux["half"] == 1.5 and not chainrule.tracer.isbox(aux["half"])
    assert aux["label"] == "ok"


def test_jacobian_of_vector_function():
    f = lambda x: np.array([x[0] * x[1], np.sin(x[0]), x[1] ** 2])
    x = onp.array([0.5, 2.0])
    onp.testing.assert_allclose(jacobian(f)(x), [[2.0, 0.5], [onp.cos(0.5), 0.0], [0.0, 4.0]])


def test_jacobian_with_argnum_tuple_and_pytree_input():
    f = lambda x, y: x * y[0] + y[1]
    x, y0, y1 = onp.array([1.0, 2.0]), onp.array([3.0, 4.0]), 0.5
    jx, (jy0, jy1) = jacobian(f, (0, 1))(x, (y0, y1))
    onp.testing.assert_allclose(jx, onp.diag(y0))
    onp.testing.assert_allclose(jy0, onp.diag(x))
    onp.testing.assert_allclose(jy1, [1.0, 1.0])
    onp.testing.assert_allclose(jacobian(f)(x, (y0, y1)), onp.diag(y0))


def test_hessian():
    f = lambda x: x[0] ** 2 * x[1] + x[1] ** 3
    x = onp.array([1.5, -2.0])
    onp.testing.assert_allclose(hessian(f)(x), [[-4.0, 3.0], [3.0, -12.0]])


def test_hessian_products():
    f = lambda x: np.sum(x**3) + x[0] * x[1]
    x, v = onp.array([1.0, 2.0]), onp.array([0.5, -1.0])
    H = onp.array([[6.0, 1.0], [1.0, 12.0]])
    onp.testing.assert_allclose(hessian_tensor_product(f)(x, v), H @ v)
    onp.testing.assert_allclose(hessian_vector_product(f)(x, v), H @ v)
    hvp, g = make_hvp(f)(x)
    onp.testing.assert_allclose(g, [3.0 + 2.0, 12.0 + 1.0])
    onp.testing.assert_allclose(hvp(v), H @ v)
    onp.testing.assert_allclose(hvp(onp.array([1.0, 0.0])), H[:, 0])


def test_hessian_tensor_product_contracts_matrix_argument():
    A = onp.array([[1.0, 2.0], [3.0, 4.0]])
    f = lambda X: np.sum(np.sin(X))
    V = onp.array([[1.0, 0.0], [2.0, 1.0]])
    onp.testing.assert_allclose(hessian_tensor_product(f)(A, V), -onp.sin(A) * V)


def test_tensor_jacobian_product():
    f = lambda x: np.array([x[0] * x[1], x[0] + 3 * x[1]])
    x, v = onp.array([2.0, 5.0]), onp.array([1.0, -1.0])
    J = onp.array([[5.0, 2.0], [1.0, 3.0]])
    onp.testing.assert_allclose(tensor_jacobian_product(f)(x, v), v @ J)
    onp.testing.assert_allclose(vector_jacobian_product(f)(x, v), v @ J)


def test_make_vjp_and_make_jvp():
    f = lambda x: np.sin(x) * 2.0
    vjp, ans = make_vjp(f)(onp.array([0.0, 1.0]))
    onp.testing.assert_allclose(ans, 2 * onp.sin([0.0, 1.0]))
    onp.testing.assert_allclose(vjp(onp.array([1.0, 3.0])), [2.0, 6 * onp.cos(1.0)])
    ans, tangent = make_jvp(f)(onp.array([0.0, 1.0]))(onp.array([1.0, 3.0]))
    onp.testing.assert_allclose(tangent, [2.0, 6 * onp.cos(1.0)])


def test_make_ggnvp():
    # f(x) = (x0^2, x0 x1), g(y) = sum(y^2): GGN = J^T (2 I) J
    f = lambda x: np.array([x[0] ** 2, x[0] * x[1]])
    g = lambda y: np.sum(y**2)
    x, v = onp.array([1.5, -0.5]), onp.array([1.0, 2.0])
    J = onp.array([[2 * x[0], 0.0], [x[1], x[0]]])
    onp.testing.assert_allclose(make_ggnvp(f, g)(x)(v), J.T @ (2 * J @ v))
    # autograd's default g is half the sum of squares: the Gauss-Newton product J^T J v
    onp.testing.assert_allclose(make_ggnvp(f)(x)(v), J.T @ J @ v)
    onp.testing.assert_allclose(make_ggnvp(f)(x)(v), [7.75, 3.75])


def test_deriv_and_elementwise_grad():
    assert deriv(np.sin)(0.5) == pytest.approx(onp.cos(0.5))
    x = onp.linspace(-2.0, 2.0, 5)
    onp.testing.assert_allclose(deriv(np.tanh)(x), 1 - onp.tanh(x) ** 2)
    onp.testing.assert_allclose(elementwise_grad(np.tanh)(x), 1 - onp.tanh(x) ** 2)
    t = onp.tanh(x)  # d2/dx2 tanh = -2 t (1 - t^2)
    onp.testing.assert_allclose(elementwise_grad(elementwise_grad(np.tanh))(x),
                                -2 * t * (1 - t**2))


def test_holomorphic_grad():
    assert holomorphic_grad(lambda z: z**2)(1.0 + 2.0j) == pytest.approx(2.0 + 4.0j)
    z = 0.3 - 0.7j
    assert holomorphic_grad(np.exp)(z) == pytest.approx(onp.exp(z))
    with pytest.warns(UserWarning, match="not complex"):
        holomorphic_grad(lambda x: x**2)(1.0)


def test_grad_named_and_multigrad_dict():
    def f(x, y, z=1.0):
        return x * y**2 + z

    assert grad_named(f, "y")(2.0, 3.0) == pytest.approx(12.0)
    grads = multigrad_dict(f)(2.0, 3.0, z=4.0)
    assert list(grads) == ["x", "y", "z"]
    assert grads["x"] == pytest.approx(9.0)
    assert grads["y"] == pytest.approx(12.0)
    assert grads["z"] == pytest.approx(1.0)


def test_checkpoint():
    inner = checkpoint(lambda x: np.sin(x) ** 2)
    f = lambda x: np.sum(inner(x) * x)
    x = onp.array([0.3, 1.2])
    # d/dx [x sin^2 x] = sin^2 x + 2 x sin x cos x
    onp.testing.assert_allclose(grad(f)(x), onp.sin(x) ** 2 + 2 * x * onp.sin(x) * onp.cos(x))
    onp.testing.assert_allclose(deriv(inner)(x), 2 * onp.sin(x) * onp.cos(x))


def test_logistic_regression_program():
    # the classic autograd demo, written here: gradient of the negative log likelihood
    # is X^T (p - t) with p = sigmoid(X w)
    X = onp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30],
                   [0.74, -2.49, 1.39]])
    t = onp.array([1.0, 1.0, 0.0, 1.0])

    def sigmoid(z):
        return 0.5 * (np.tanh(z / 2.0) + 1.0)

    def loss(w):
        p = sigmoid(np.dot(X, w))
        return -np.sum(np.log(p * t + (1 - p) * (1 - t)))

    w = onp.zeros(3)
    p = 1 / (1 + onp.exp(-X @ w))
    onp.testing.assert_allclose(grad(loss)(w), X.T @ (p - t))
    start = loss(w)
    for _ in range(100):
        w = w - 0.1 * grad(loss)(w)
    assert loss(w) < 0.5 * start


def test_dict_parameters_and_python_control_flow():
    def f(params, n):
        acc = 1.0
        for _ in range(n):  # x**n by repeated multiplication
            acc = acc * params["x"]
        return acc + params["y"]["b"] * 2.0

    g = grad(f)({"x": 1.5, "y": {"b": 4.0}}, 4)
    assert g["x"] == pytest.approx(4 * 1.5**3)
    assert g["y"]["b"] == pytest.approx(2.0)


# ----------------------------------------------------------------------------- builtins
def test_builtin_containers_of_traced_values():
    from chainrule import dict as ag_dict
    from chainrule import list as ag_list
    from chainrule import tuple as ag_tuple

    def f(x):
        seq = ag_list([x, x**2]) + ag_list(ag_tuple((x**3,)))
        d = ag_dict(a=seq[1], b=seq[2])
        return d["a"] + d["b"]

    assert grad(f)(2.0) == pytest.approx(2 * 2.0 + 3 * 2.0**2)


def test_isinstance_and_type_see_through_tracing():
    from chainrule import isinstance as ag_isinstance
    from chainrule import type as ag_type
    from chainrule.numpy.numpy_boxes import ArrayBox

    seen = []

    def f(x, expected_type):
        seen.append((ag_isinstance(x, onp.ndarray), ag_isinstance(x, ArrayBox),
                     ag_type(x) is expected_type, ag_isinstance(x, (tuple, float))))
        return np.sum(x)

    grad(f)(onp.ones(2), onp.ndarray)
    # a Python float is traced as np.float64 (a float subclass), so that every rule follows
    # NumPy's semantics at 0, inf and nan: isinstance(x, float) still holds
    grad(f)(2.0, onp.float64)
    assert seen == [(True, True, True, False), (False, True, True, True)]
    assert ag_isinstance([], list) and not ag_isinstance((), list)
    assert ag_type(()) is tuple


def test_sequence_box_from_primitive_returning_tuple():
    from chainrule import isinstance as ag_isinstance
    from chainrule import type as ag_type
    from chainrule.builtins import SequenceBox
    from chainrule.extend import defvjp, primitive

    @primitive
    def split_pair(x):
        return (2.0 * x, x**2)

    defvjp(split_pair, lambda ans, x: lambda g: 2.0 * g[0] + 2.0 * x * g[1])

    def f(x):
        pair = split_pair(x)
        assert ag_isinstance(pair, tuple) and ag_type(pair) is tuple
        assert isinstance(pair, SequenceBox) and len(pair) == 2
        first, second = pair
        return first * 3.0 + second

    assert grad(f)(1.5) == pytest.approx(6.0 + 3.0)


# ----------------------------------------------------------------------------- names and docs
def test_transform_names_and_docs():
    def f(x, y):
        return x * y

    assert grad.__name__ == "grad"
    assert grad.__doc__.strip().startswith("Returns a function which computes the gradient")
    assert grad(f, 1).__name__ == "grad_of_f_wrt_argnum_1"
    assert grad(f).__name__ == "grad_of_f_wrt_argnum_0"
    assert jacobian(f).__name__ == "jacobian_of_f_wrt_argnum_0"
    assert "f" in grad(f, 1).__doc__


# ----------------------------------------------------------------------------- internals
def test_core_primitive_vjps_pop_gives_clear_error():
    from chainrule.core import primitive_vjps

    rule = primitive_vjps.pop(np.sin)
    try:
        with pytest.raises(NotImplementedError, match=r"no VJP rule for sin"):
            grad(lambda x: np.sin(x) * 2.0)(1.0)
        assert deriv(np.sin)(0.0) == 1.0  # forward mode does not need the VJP
    finally:
        primitive_vjps[np.sin] = rule
    assert grad(np.sin)(0.0) == 1.0


def test_core_primitive_jvps_pop_gives_clear_error():
    from chainrule.core import primitive_jvps

    rule = primitive_jvps.pop(np.cos)
    try:
        with pytest.raises(NotImplementedError, match=r"no JVP rule for cos"):
            deriv(np.cos)(1.0)
    finally:
        primitive_jvps[np.cos] = rule
    assert deriv(np.cos)(0.0) == 0.0


def test_core_make_vjp_make_jvp_are_unary():
    from chainrule import core

    vjp, ans = core.make_vjp(lambda x: x**3, 2.0)
    assert ans == 8.0 and vjp(1.0) == pytest.approx(12.0)
    ans, tangent = core.make_jvp(lambda x: x**3, 2.0)(0.5)
    assert ans == 8.0 and tangent == pytest.approx(6.0)


def test_tracer_trace_with_vjp_node_and_backward_pass():
    from chainrule.core import VJPNode, backward_pass
    from chainrule.tracer import trace

    value, end_node = trace(VJPNode.new_root(), lambda x: np.exp(x) * x, 1.5)
    assert value == pytest.approx(onp.exp(1.5) * 1.5)
    assert backward_pass(1.0, end_node) == pytest.approx(onp.exp(1.5) * 2.5)


def test_tracer_trace_with_jvp_node():
    from chainrule.core import JVPNode
    from chainrule.tracer import trace

    value, end_node = trace(JVPNode.new_root(2.0), lambda x: x**2 + 1.0, 3.0)
    assert value == 10.0 and end_node.g == pytest.approx(12.0)


def test_tracer_trace_independent_output_warns():
    from chainrule.core import VJPNode
    from chainrule.tracer import trace

    with pytest.warns(UserWarning, match="independent"):
        value, node = trace(VJPNode.new_root(), lambda x: 7.0, 1.0)
    assert value == 7.0 and node is None


def test_tracer_boxes():
    from chainrule.tracer import Box, getval, isbox

    seen = []

    def f(x):
        seen.append((isbox(x), isinstance(x, Box), getval(x)))
        return x * 1.0

    grad(f)(2.0)
    assert seen == [(True, True, 2.0)]
    assert not isbox(2.0) and getval(2.0) == 2.0


def test_util_helpers():
    from chainrule.util import func, quick_grad_check, subvals

    def f(x):
        return x

    assert func(f) is f
    assert subvals((1, 2, 3), [(0, "a"), (2, "c")]) == ("a", 2, "c")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quick_grad_check(lambda x, k: np.sum(np.sin(x) * k), onp.ones(3), extra_args=(2.0,),
                         verbose=False)


def test_unary_to_nary_user_transform():
    from chainrule.wrap_util import unary_to_nary

    @unary_to_nary
    def twice(fun, x):
        return 2 * fun(x)

    assert twice(lambda a, b: a - b, 1)(5.0, 3.0) == 4.0
    assert twice(lambda a, b: a - b, 1).__name__ == "twice_of_<lambda>_wrt_argnum_1"


def test_numpy_vspaces():
    from chainrule.extend import vspace
    from chainrule.numpy.numpy_vspaces import ArrayVSpace, ComplexArrayVSpace

    assert type(vspace(onp.ones(3))) is ArrayVSpace
    assert type(vspace(onp.ones(3) * 1j)) is ComplexArrayVSpace
    assert vspace(onp.ones((2, 3), dtype=onp.float32)).zeros().dtype == onp.float32
    assert vspace(onp.ones(3) * 1j).size == 6


def test_core_toposort_takes_one_end_node():
    from chainrule.core import VJPNode, toposort
    from chainrule.tracer import trace

    _, end = trace(VJPNode.new_root(), lambda x: np.sin(x) * np.cos(x), 0.3)
    order = list(toposort(end))
    assert order[0] is end and order[-1].fun is None  # root comes last
    assert [repr(n) for n in order[:1]] == ["<VJPNode multiply>"] and len(order) == 4
