"""Taylor mode (chainrule.jet and what is built on it) against independent references:
nested forward mode (chainrule.jvp) at every spec case, mpmath to order 20, Hessians,
JAX's jet where it has the rule."""

from __future__ import annotations

import fnmatch
import importlib
import pkgutil
import warnings
from math import factorial

import numpy as onp
import pytest
from tests.test_rule_columns import own_primitives  # (imports every rule-registering module)

import chainrule
import chainrule.extend
import chainrule.numpy as np
from chainrule import _specs as specs
from chainrule._core.pytree import tree_flatten
from chainrule._core.reverse import Recording
from chainrule._core.rule_table import rule_table

ORDER = 4


def _spec_cases():
    cases = []
    for info in sorted(pkgutil.iter_modules(specs.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{specs.__name__}.{info.name}")
        cases.extend(c for c in getattr(module, "CASES", []) if "fwd" in c.modes and c.argnums)
    return cases


SPEC_CASES = _spec_cases()


def _curve_coefficients(args, argnums, order, seed=0):
    """Random normalized coefficients c_1..c_order per moved argument (dtype of the arg)."""
    rng = onp.random.default_rng(seed)
    out = []
    for i in argnums:
        x = onp.asarray(args[i])
        terms = []
        for _ in range(order):
            c = rng.uniform(-1, 1, size=x.shape)
            if x.dtype.kind == "c":
                c = c + 1j * rng.uniform(-1, 1, size=x.shape)
            terms.append(onp.asarray(c, dtype=x.dtype))
        out.append(terms)
    return out


def _nested_jvp_derivatives(g, order):
    """[g(0), g'(0), ..., g^(order)(0)] by nesting chainrule.jvp in the float t."""
    derivatives = [g(0.0)]
    h = g
    for _ in range(order):
        h = (lambda inner: lambda t: chainrule.jvp(inner, (t,), (1.0,))[1])(h)
        derivatives.append(h(0.0))
    return derivatives


def _moved(args, argnums, coefficients, t):
    """args with args[argnums[i]] moved to x + sum_j c_j t^j."""
    args = list(args)
    for i, terms in zip(argnums, coefficients):
        value, power = args[i], t
        for c in terms:
            value = value + c * power
            power = power * t
        args[i] = value
    return args


def _assert_close(got, want, dtype_kind_small: bool, what: str):
    got_leaves, _ = tree_flatten(got)
    want_leaves, _ = tree_flatten(want)
    assert len(got_leaves) == len(want_leaves), what
    for g, w in zip(got_leaves, want_leaves):
        g, w = onp.asarray(g), onp.asarray(w)
        assert g.shape == w.shape, what
        scale = max(1.0, float(onp.max(onp.abs(w[onp.isfinite(w)]), initial=0.0)))
        rtol = 2e-3 if dtype_kind_small else 1e-9
        onp.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=what)


@pytest.mark.parametrize("case", SPEC_CASES, ids=[c.id for c in SPEC_CASES])
def test_jet_equals_nested_jvp_at_every_spec_case(case):
    """The meta-test: for every primitive with a JVP, at its spec cases, the first ORDER
    derivatives of t -> f(x(t)) along a curve moving every differentiated argument equal
    nested forward mode's, whatever kind of Taylor rule the primitive has."""
    coefficients = _curve_coefficients(case.args, case.argnums, ORDER)
    primals = [case.args[i] for i in case.argnums]
    # jet's terms are derivatives: term j = c_j * j!
    series = [[c * factorial(j + 1) for j, c in enumerate(terms)] for terms in coefficients]

    def f(*moved):
        args = list(case.args)
        for i, value in zip(case.argnums, moved):
            args[i] = value
        return case.fun(*args, **case.kwargs)

    value, terms = chainrule.jet(f, primals, series)
    want = _nested_jvp_derivatives(
        lambda t: case.fun(*_moved(case.args, case.argnums, coefficients, t), **case.kwargs),
        ORDER)
    small = any(onp.asarray(a).dtype in (onp.float32, onp.complex64) for a in case.args)
    _assert_close(value, want[0], small, "value")
    # each output leaf is replaced by the list of its ORDER terms
    flat_terms = tree_flatten(terms)[0]
    for j in range(1, ORDER + 1):
        got_j = flat_terms[j - 1::ORDER]
        _assert_close(got_j, tree_flatten(want[j])[0], small, f"derivative {j}")


def _sparse_cases():
    import scipy.sparse as sp

    from chainrule.scipy import sparse as csp
    a = sp.csr_matrix(onp.array([[4.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 5.0]]))
    return [
        ("sparse products (stored_values, with_values, to_dense, both matmul sides)",
         lambda x: np.sum(np.sin(csp.stored_values(csp.with_values(a, x))))
         + np.sum(np.sin(csp.matmul(csp.with_values(a, x), x[:3])) + csp.matmul(x[:3], a) ** 2)
         + np.sum(csp.with_values(a, x).toarray() ** 2)),
        ("sparse solve", lambda x: np.sum(csp.linalg.spsolve(
            csp.with_values(a, 3.0 + x), np.exp(x[:3])) ** 2)),
        ("sparse expm_multiply", lambda x: np.sum(np.sin(csp.linalg.expm_multiply(
            csp.with_values(a, 0.1 * x), x[:3])))),
    ]


def _tuple_parts(z):
    """Both parts of a primitive's tuple answer (the backward pass adds containers)."""
    sign, logabs = np.linalg.slogdet(np.reshape(z[:4], (2, 2)) + 3 * np.eye(2))
    return sign * logabs ** 2 + np.sum(np.sin(z[::2]) * z[:3])


def _minimized(x):
    from chainrule.scipy import optimize
    return optimize.minimize(lambda z, a: np.sum((z - a) ** 4 + z ** 2), onp.zeros(1),
                             args=(x[0],), tol=1e-13)


def _extra_cases():
    """Functions whose primitives no forward spec case reaches (solvers, the backward
    pass's own primitives, copies, sparse matrices): (name, f of a vector of 6)."""
    import copy

    from chainrule.misc.fixed_points import fixed_point
    from chainrule.numpy.buffers import _ufunc_where
    from chainrule.scipy import optimize
    from chainrule.scipy.integrate import odeint, quad, solve_ivp

    decay = onp.array([0.0, 0.5])
    return [
        ("copy.copy", lambda x: np.sin(copy.copy(x)) * x),
        # (what jit stages for exp(x, out=o, where=m) where nothing differentiates; under
        # jet the composite runs instead, so the primitive is called here itself)
        ("jit's where= into out= (_ufunc_where)", lambda x: _ufunc_where(
            np.exp, (), onp.arange(6) % 2 == 0, onp.full(6, -1.0), x * x)),
        ("grad under jet (the backward pass's primitives, a tuple's parts)",
         lambda x: chainrule.grad(_tuple_parts)(x)),
        ("odeint", lambda x: odeint(lambda y, t, a: -a * y, x[:2], decay, (x[2],))[-1]),
        ("solve_ivp", lambda x: solve_ivp(lambda t, y, a: -a * y, (0.0, 0.5), x[:2],
                                          args=(x[2],), rtol=1e-11, atol=1e-13).y[:, -1]),
        ("quad", lambda x: quad(lambda t, a: np.sin(a * t), 0.0, x[0], args=(x[1],))[0]),
        ("fixed_point", lambda x: fixed_point(lambda a: lambda z: 0.5 * (z + a / z), x[0] + 2.0,
                                              1.0, lambda u, w: abs(u - w), 1e-14)),
        ("root (implicit)", lambda x: optimize.root(
            lambda z, a: z ** 3 + z - a, onp.array([0.5]), args=(x[0],), tol=1e-13).x),
        ("minimize (optimum and result fields)", lambda x: _minimized(x).fun
         + np.sum(_minimized(x).jac)),
    ] + _sparse_cases()


EXTRA_CASES = _extra_cases()
EXTRA_X = onp.array([0.7, 1.3, 0.4, -0.3, 0.9, 0.2])


@pytest.mark.parametrize("name, f", EXTRA_CASES, ids=[c[0] for c in EXTRA_CASES])
def test_jet_equals_nested_jvp_beyond_the_spec_cases(name, f):
    """The meta-test's complement: jet of the primitives no forward spec case reaches."""
    order = 3
    v = onp.linspace(-0.5, 0.5, EXTRA_X.size)
    _, terms = chainrule.jet(f, (EXTRA_X,), ([v] + [onp.zeros_like(v)] * (order - 1),))
    want = _nested_jvp_derivatives(lambda t: f(EXTRA_X + v * t), order)
    for j in range(order):
        _assert_close(terms[j], want[j + 1], False, f"{name}: derivative {j + 1}")


# the primitives with a JVP that neither the spec cases nor EXTRA_CASES pass through jet,
# and why (each must stay unreached: the test below fails for a stale line)
NOT_REACHED = {
    "chainrule._transforms.colouring.substitute": "inside sparse Hessians' recovery only",
    "chainrule.tensor._graph.hook_point": "runs a Tensor's gradient hooks; the identity",
    # the explain command line's piecewise-constant functions (zero JVPs, so zero series)
    "chainrule.explain._expr.*": "tests/test_explain_students.py",
}


def test_the_meta_tests_reach_every_primitive_with_a_jvp():
    """Exact coverage: every primitive with a JVP (so a Taylor rule, closed-form or the
    generic nested JVP) is pushed through jet by a spec case or an extra case above."""
    reached = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in SPEC_CASES:
            for argnum in case.argnums:
                def with_arg(x, case=case, argnum=argnum):
                    args = list(case.args)
                    args[argnum] = x
                    return case.fun(*args, **case.kwargs)
                reached.update(node.fun for node in Recording(
                    with_arg, case.args[argnum], keep_everything=True).order())
        for _, f in EXTRA_CASES:
            # (under an outer jvp too: the extra cases' backward passes run their own)
            record = Recording(f, EXTRA_X, keep_everything=True)
            reached.update(node.fun for node in record.order())
            chainrule.jvp(lambda x, f=f: reached.update(node.fun for node in Recording(
                f, x, keep_everything=True).order()) or 0.0, (EXTRA_X,), (EXTRA_X,))

    def name(f):
        return f"{f.__module__}.{getattr(f, '__qualname__', f.__name__)}"
    unreached = {name(f) for f in own_primitives()
                 if rule_table[f].jvp is not None and f not in reached}
    for pattern in NOT_REACHED:
        matched = fnmatch.filter(unreached, pattern)
        assert matched, f"{pattern} is reached now: remove its line from NOT_REACHED"
        unreached -= set(matched)
    assert not unreached, f"no jet meta-test reaches {sorted(unreached)}: add a case"


# ----------------------------------------------------------------------------- mpmath, order 20
mpmath = pytest.importorskip("mpmath", reason="mpmath gives the high-precision references")
special = pytest.importorskip("chainrule.scipy.special")

SCALAR_RECURRENCES = [
    # (name, chainrule function, mpmath function, point)
    ("exp", np.exp, mpmath.exp, 0.3),
    ("exp2", np.exp2, lambda x: mpmath.power(2, x), 0.3),
    ("expm1", np.expm1, mpmath.expm1, 0.3),
    ("log", np.log, mpmath.log, 1.7),
    ("log2", np.log2, lambda x: mpmath.log(x, 2), 1.7),
    ("log10", np.log10, mpmath.log10, 1.7),
    ("log1p", np.log1p, mpmath.log1p, 0.7),
    ("sin", np.sin, mpmath.sin, 0.4),
    ("cos", np.cos, mpmath.cos, 0.4),
    ("tan", np.tan, mpmath.tan, 0.4),
    ("sinh", np.sinh, mpmath.sinh, 0.4),
    ("cosh", np.cosh, mpmath.cosh, 0.4),
    ("tanh", np.tanh, mpmath.tanh, 0.4),
    ("arctan", np.arctan, mpmath.atan, 0.4),
    ("arcsin", np.arcsin, mpmath.asin, 0.4),
    ("arccos", np.arccos, mpmath.acos, 0.4),
    ("arcsinh", np.arcsinh, mpmath.asinh, 0.4),
    ("arctanh", np.arctanh, mpmath.atanh, 0.4),
    ("sqrt", np.sqrt, mpmath.sqrt, 1.3),
    ("cbrt", np.cbrt, mpmath.cbrt, 1.3),
    ("square", np.square, lambda x: x * x, 1.3),
    ("reciprocal", np.reciprocal, lambda x: 1 / x, 1.3),
    ("power 2.5", lambda x: x ** 2.5, lambda x: x ** mpmath.mpf(2.5), 1.3),
    ("power 7", lambda x: x ** 7, lambda x: x ** 7, 1.3),
    ("power -3", lambda x: x ** -3, lambda x: x ** -3, 1.3),
    ("divide", lambda x: np.sin(x) / (1 + x * x), lambda x: mpmath.sin(x) / (1 + x * x), 0.6),
    ("erf", special.erf, mpmath.erf, 0.4),
    ("erfc", special.erfc, mpmath.erfc, 0.4),
    ("ndtr", special.ndtr, mpmath.ncdf, 0.4),
    ("expit", special.expit, lambda x: 1 / (1 + mpmath.exp(-x)), 0.4),
    ("logit", special.logit, lambda x: mpmath.log(x / (1 - x)), 0.3),
    ("gammaln", special.gammaln, mpmath.loggamma, 1.7),
    ("psi (digamma)", special.digamma, mpmath.digamma, 1.7),
    ("composition", lambda x: np.exp(np.sin(x)) * np.tanh(x ** 2) + np.log1p(x),
     lambda x: mpmath.exp(mpmath.sin(x)) * mpmath.tanh(x ** 2) + mpmath.log1p(x), 0.5),
]


@pytest.mark.parametrize("name, fun, reference, x0", SCALAR_RECURRENCES,
                         ids=[c[0] for c in SCALAR_RECURRENCES])
def test_recurrences_to_order_20_against_mpmath(name, fun, reference, x0):
    """Normalized Taylor coefficients of f(x0 + t) to order 20 (factorial_scaled=False)."""
    order = 20
    _, terms = chainrule.jet(fun, (x0,), ([1.0] + [0.0] * (order - 1),), factorial_scaled=False)
    with mpmath.workdps(50):
        want = [float(c) for c in mpmath.taylor(reference, mpmath.mpf(x0), order)]
    got = [float(c) for c in terms]
    scale = max(abs(c) for c in want)
    onp.testing.assert_allclose(got, want[1:], rtol=1e-10, atol=1e-12 * scale, err_msg=name)


def test_every_scalar_recurrence_is_checked_at_order_20():
    """The table above names every elementwise primitive with a recurrence rule."""
    checked = {c[0].split()[0] for c in SCALAR_RECURRENCES}
    recurrences = {getattr(f, "__name__", "") for f, e in rule_table.items()
                   if e.taylor is not None and getattr(e.taylor, "kind", "") == "recurrence"}
    assert recurrences - {"true_divide"} <= checked | {"power", "divide"}, recurrences - checked


# ----------------------------------------------------------------------------- Laplacian, Hessian


def _mlp(d, width=8, seed=0):
    rng = onp.random.default_rng(seed)
    w1, b1 = rng.standard_normal((width, d)) / onp.sqrt(d), rng.standard_normal(width)
    w2 = rng.standard_normal(width)

    def f(x):
        return np.dot(w2, np.tanh(np.dot(w1, x) + b1)) + np.sum(x ** 3) / 6
    return f


@pytest.mark.parametrize("d", [1, 3, 7])
def test_laplacian_and_hessian_diagonal_equal_the_hessians(d):
    f = _mlp(d)
    x = onp.random.default_rng(1).standard_normal(d)
    x_before = x.copy()
    hess = chainrule.hessian(f)(x)
    onp.testing.assert_allclose(chainrule.laplacian(f)(x), onp.trace(hess), rtol=1e-12)
    onp.testing.assert_allclose(chainrule.hessian_diagonal(f)(x), onp.diag(hess), rtol=1e-12)
    assert onp.array_equal(x, x_before)  # inputs are never modified


def test_laplacian_of_matrix_input_and_float32():
    def f(x):
        return np.sum(np.sin(x) * x[::-1, :])
    x = onp.arange(6.0).reshape(2, 3) / 7
    hess = chainrule.hessian(f)(x).reshape(6, 6)
    onp.testing.assert_allclose(chainrule.laplacian(f)(x), onp.trace(hess), rtol=1e-12)
    onp.testing.assert_allclose(chainrule.hessian_diagonal(f)(x), onp.diag(hess).reshape(2, 3),
                                rtol=1e-12)
    x32 = x.astype(onp.float32)
    diag32 = chainrule.hessian_diagonal(f)(x32)
    assert diag32.dtype == onp.float32
    onp.testing.assert_allclose(diag32, onp.diag(hess).reshape(2, 3), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("distribution", ["rademacher", "gaussian"])
def test_stochastic_laplacian_is_unbiased(distribution):
    """STDE: the mean of v^T H v over s directions with E[v v^T] = I; its mean is within
    five standard errors of trace(H) (the variance of one sample known in closed form:
    2 sum_{i != j} H_ij^2 for Rademacher, 2 ||H||_F^2 for Gaussian)."""
    d, samples = 6, 4000
    f = _mlp(d, seed=3)
    x = onp.random.default_rng(2).standard_normal(d)
    hess = chainrule.hessian(f)(x)
    off = hess - onp.diag(onp.diag(hess))
    variance = 2 * onp.sum(off ** 2) if distribution == "rademacher" else 2 * onp.sum(hess ** 2)
    estimate = chainrule.laplacian(f, samples=samples, key=0, distribution=distribution)(x)
    assert abs(estimate - onp.trace(hess)) < 5 * onp.sqrt(variance / samples)
    assert variance > 0  # the test could fail: the estimate is not exact
    # the same key, the same directions: a call is a function of x
    again = chainrule.laplacian(f, samples=samples, key=0, distribution=distribution)(x)
    assert again == estimate


def test_stochastic_laplacian_is_exact_for_a_diagonal_hessian_with_rademacher():
    f = lambda x: np.sum(np.exp(x))  # noqa: E731
    x = onp.linspace(-1, 1, 5)
    got = chainrule.laplacian(f, samples=3, key=7)(x)
    onp.testing.assert_allclose(got, onp.sum(onp.exp(x)), rtol=1e-12)


def test_laplacian_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="scalar output"):
        chainrule.laplacian(np.sin)(onp.ones(3))
    with pytest.raises(TypeError, match="float inputs"):
        chainrule.laplacian(lambda x: np.sum(x))(onp.arange(3))
    with pytest.raises(ValueError, match="samples"):
        chainrule.laplacian(np.sum, samples=0)
    with pytest.raises(ValueError, match="distribution"):
        chainrule.laplacian(np.sum, samples=3, distribution="uniform")


def test_laplacian_nests_under_grad():
    """d/dx of the Laplacian (a third-order quantity) equals finite differences."""
    f = _mlp(3, seed=5)
    x = onp.array([0.3, -0.2, 0.5])
    got = chainrule.grad(chainrule.laplacian(f))(x)
    eps = 1e-5
    want = [(chainrule.laplacian(f)(x + eps * e) - chainrule.laplacian(f)(x - eps * e)) / (2 * eps)
            for e in onp.eye(3)]
    onp.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------------------- taylor_derivatives


def test_taylor_derivatives_of_a_scalar_function():
    got = chainrule.taylor_derivatives(lambda x: np.sin(2 * x), 6)(0.3)
    want = [2 ** n * onp.sin(0.6 + n * onp.pi / 2) for n in range(7)]
    onp.testing.assert_allclose(got, want, rtol=1e-12)
    assert got.shape == (7,)
    # elementwise over an array: every element's derivatives, on a new leading axis
    xs = onp.array([0.0, 0.5])
    got = chainrule.taylor_derivatives(np.exp, 3)(xs)
    onp.testing.assert_allclose(got, onp.tile(onp.exp(xs), (4, 1)), rtol=1e-12)
    onp.testing.assert_allclose(chainrule.taylor_derivatives(np.exp, 0)(0.5), [onp.exp(0.5)])
    with pytest.raises(ValueError, match="order"):
        chainrule.taylor_derivatives(np.exp, -1)


# ----------------------------------------------------------------------------- jet's contract


def test_jet_pytrees_and_factorial_scaling():
    def f(p, y):
        return {"a": p["w"] * np.sin(y), "b": (np.exp(p["v"]),)}
    p = {"w": onp.array([1.0, 2.0]), "v": 0.5}
    y = onp.array([0.1, 0.2])
    dp = [{"w": onp.array([0.5, -1.0]), "v": 1.0}, {"w": onp.zeros(2), "v": 0.0}]
    dy = [onp.ones(2), onp.zeros(2)]
    value, terms = chainrule.jet(f, (p, y), (dp, dy))
    assert set(value) == {"a", "b"} and isinstance(terms["b"], tuple)
    a1, a2 = terms["a"]
    # d/dt (w + 0.5 t)(sin(y + t)) at 0 and its second derivative
    w, dw = p["w"], dp[0]["w"]
    onp.testing.assert_allclose(a1, dw * onp.sin(y) + w * onp.cos(y), rtol=1e-14)
    onp.testing.assert_allclose(a2, 2 * dw * onp.cos(y) - w * onp.sin(y), rtol=1e-14)
    b1, b2 = terms["b"][0]
    onp.testing.assert_allclose([b1, b2], [onp.exp(0.5)] * 2, rtol=1e-14)
    # factorial_scaled=False: plain Taylor coefficients in and out
    _, (c1, c2) = chainrule.jet(np.exp, (0.5,), ([1.0, 0.0],), factorial_scaled=False)
    onp.testing.assert_allclose([c1, c2], [onp.exp(0.5), onp.exp(0.5) / 2], rtol=1e-14)


def test_jet_refusals():
    with pytest.raises(ValueError, match="inconsistent lengths"):
        chainrule.jet(np.multiply, (1.0, 2.0), ([1.0], [1.0, 2.0]))
    with pytest.raises(ValueError, match="one list of terms per primal"):
        chainrule.jet(np.sin, (1.0, 2.0), ([1.0],))
    with pytest.raises(TypeError, match="integer"):
        chainrule.jet(np.sin, (1,), ([1],))
    with pytest.raises(TypeError, match="tuples"):
        chainrule.jet(np.sin, 1.0, [1.0])


def test_jet_edges():
    # an output that does not depend on the input: zero terms, no warning
    value, terms = chainrule.jet(lambda x: onp.ones(2), (1.0,), ([1.0, 1.0],))
    assert onp.array_equal(terms[0], onp.zeros(2)) and onp.array_equal(terms[1], onp.zeros(2))
    # order 0: the value and no terms
    value, terms = chainrule.jet(np.sin, (0.5,), ((),))
    assert terms == [] and value == onp.sin(0.5)
    # empty and size-1 arrays, nan and inf propagate as nested jvp does
    _, (e1,) = chainrule.jet(np.exp, (onp.zeros(0),), ([onp.zeros(0)],))
    assert e1.shape == (0,)
    _, (n1, n2) = chainrule.jet(np.exp, (onp.array([onp.nan]),), ([onp.ones(1), onp.ones(1)],))
    assert onp.isnan(n1).all() and onp.isnan(n2).all()
    # x ** 2 at 0 (squaring, not the recurrence that divides by x): exact
    _, (s1, s2, s3) = chainrule.jet(lambda x: x ** 2, (0.0,), ([1.0, 0.0, 0.0],))
    assert (s1, s2, s3) == (0.0, 2.0, 0.0)
    # x ** 2.5 at 0: the recurrence would divide by 0; the nested JVP gives the finite ones
    _, (r1, r2) = chainrule.jet(lambda x: x ** 2.5, (0.0,), ([1.0, 0.0],))
    assert (r1, r2) == (0.0, 0.0)
    # -0.0 keeps its sign through a linear rule's value
    value, _ = chainrule.jet(np.negative, (0.0,), ([1.0],))
    assert onp.signbit(value) and value == 0


def test_jet_under_jit_and_vmap_equals_eager():
    def series(x, v):
        _, terms = chainrule.jet(lambda z: np.tanh(np.sin(z) * z + 1.0), (x,), ([v, v * 0, v],))
        return np.stack(terms)
    x = onp.linspace(-1, 1, 4)
    v = onp.cos(x)
    eager = series(x, v)
    onp.testing.assert_array_equal(chainrule.jit(series)(x, v), eager)
    onp.testing.assert_array_equal(chainrule.jit(series)(x, v), eager)  # a second call
    xs = onp.stack([x, x + 0.5])
    vs = onp.stack([v, -v])
    batched = chainrule.vmap(series)(xs, vs)
    loop = onp.stack([series(a, b) for a, b in zip(xs, vs)])
    onp.testing.assert_allclose(batched, loop, rtol=1e-14)


def test_a_user_rule_and_the_nested_jvp_fallback():
    @chainrule.primitive
    def cube(x):
        return x ** 3
    chainrule.extend.defjvp(cube, lambda g, ans, x: 3 * x ** 2 * g)
    _, terms = chainrule.jet(cube, (2.0,), ([1.0, 0.0, 0.0],))
    onp.testing.assert_allclose(terms, [12.0, 12.0, 6.0])  # nested JVP, no Taylor rule
    calls = []

    def cube_series(series_in, argnums, ans, args, kwargs, order):
        calls.append(order)
        x = [args[0], *series_in[0]] + [0.0] * 3
        return tuple(sum(x[a] * x[b] * x[n - a - b] for a in range(n + 1)
                         for b in range(n + 1 - a)) for n in range(1, order + 1))
    chainrule.extend.deftaylor(cube, cube_series)
    _, terms = chainrule.jet(cube, (2.0,), ([1.0, 0.0, 0.0],))
    onp.testing.assert_allclose(terms, [12.0, 12.0, 6.0])
    assert calls == [3]


def test_a_primitive_without_a_jvp_is_refused_clearly():
    @chainrule.primitive
    def opaque(x):
        return x * 2
    with pytest.raises(NotImplementedError, match="no JVP rule for .*opaque.*deftaylor"):
        chainrule.jet(opaque, (1.0,), ([1.0],))


# ----------------------------------------------------------------------------- against JAX


jax_cases = [
    ("sin", lambda m: m.sin), ("exp", lambda m: m.exp), ("log", lambda m: m.log),
    ("tanh", lambda m: m.tanh), ("sqrt", lambda m: m.sqrt),
    ("mlp", lambda m: lambda x: m.tanh(m.dot(m.reshape(m.arange(9.0), (3, 3)) / 9, x)) ** 2),
    ("product", lambda m: lambda x: m.sum(x * m.sin(x) / (1.0 + x * x))),
    ("power", lambda m: lambda x: x ** 3.5 + m.cumsum(x)),
]


@pytest.mark.parametrize("name, make", jax_cases, ids=[c[0] for c in jax_cases])
def test_jet_equals_jax_jet(name, make):
    pytest.importorskip("jax", reason="JAX gives the reference jet")
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.experimental import jet as jax_jet
    x = onp.array([0.3, 1.1, 2.0])
    series = [onp.array([1.0, -0.5, 0.25]), onp.array([0.3, 0.1, -0.2]), onp.ones(3)]
    value, terms = chainrule.jet(make(np), (x,), (series,))
    want_value, want_terms = jax_jet.jet(make(jnp), (jnp.asarray(x),),
                                         ([jnp.asarray(s) for s in series],))
    onp.testing.assert_allclose(value, want_value, rtol=1e-12)
    onp.testing.assert_allclose(terms, want_terms, rtol=1e-10, atol=1e-12)


def test_the_nested_jvp_fallback_keeps_a_negative_zero():
    """The fallback evaluates the primitive's JVP at x_0 itself: at x_0 = -0.0 a curve
    written x_0 + c t would be at +0.0 (found by the taylor contract: arctan2 of a rounded
    -0.0 gave pi for -pi)."""
    @chainrule.primitive
    def signed_abs(x):
        return x * onp.copysign(1.0, x)
    chainrule.extend.defjvp(signed_abs, lambda g, ans, x: g * np.copysign(1.0, x))
    _, want = chainrule.jvp(signed_abs, (-0.0,), (1.0,))
    _, (got, second) = chainrule.jet(signed_abs, (-0.0,), ([1.0, 1.0],))
    assert got == want == -1.0 and second == -1.0


def test_float32_stays_float32_through_every_kind_of_rule():
    x = onp.array([0.5, -0.25], dtype=onp.float32)
    for fun in (np.exp, np.reshape_like if hasattr(np, "reshape_like") else np.negative,
                lambda z: np.arctan2(z, 2.0), np.abs, lambda z: z * z):
        _, terms = chainrule.jet(fun, (x,), ([x, x, x],))
        assert all(t.dtype == onp.float32 for t in terms), fun
    _, terms = chainrule.jet(np.abs, (onp.zeros(2, onp.float32),), ([x, x],))
    assert all(t.dtype == onp.float32 for t in terms)


@pytest.mark.parametrize("p", [onp.inf, onp.nan, 0.5, 0, -1, 100, onp.float32(2.0)])
def test_power_with_any_constant_exponent_equals_nested_jvp(p):
    """Whole exponents (up to 64) square, others use the recurrence or nest the JVP; an
    infinite or nan exponent once crashed the rule (int(inf))."""
    x = onp.array([0.7, 1.3])
    curve = [onp.array([1.0, -0.5]), onp.array([0.3, 0.2])]
    _, got = chainrule.jet(lambda z: z ** p, (x,), ([curve[0], 2 * curve[1]],))
    want = _nested_jvp_derivatives(lambda t: _moved((x,), (0,), [curve], t)[0] ** p, 2)
    for j in (1, 2):
        onp.testing.assert_allclose(got[j - 1], want[j], rtol=1e-12, equal_nan=True)


INF = onp.inf
SINGULAR_POINTS = [
    # (function, point, direction, its first three derivatives along t -> point + t v at
    # 0+: the one-sided limits, by hand)
    ("sqrt", np.sqrt, 0.0, 1.0, [INF, -INF, INF]),  # t^(1/2)
    ("cbrt", np.cbrt, 0.0, 1.0, [INF, -INF, INF]),  # t^(1/3): (1/3) t^(-2/3), ...
    ("power 0.5", lambda x: x ** 0.5, 0.0, 1.0, [INF, -INF, INF]),
    ("power 1.5", lambda x: x ** 1.5, 0.0, 1.0, [0.0, INF, -INF]),  # 1.5 t^.5, .75 t^-.5
    ("log", np.log, 0.0, 1.0, [INF, -INF, INF]),  # 1/t, -1/t^2, 2/t^3
    ("log2", np.log2, 0.0, 1.0, [INF, -INF, INF]),
    ("log1p", np.log1p, -1.0, 1.0, [INF, -INF, INF]),
    ("arcsin", np.arcsin, 1.0, -1.0, [-INF, INF, -INF]),  # pi/2 - sqrt(2t) + ...
]


@pytest.mark.parametrize("name, f, x0, v, want", SINGULAR_POINTS,
                         ids=[p[0] for p in SINGULAR_POINTS])
def test_jet_at_a_singular_point_gives_the_one_sided_limits(name, f, x0, v, want):
    """At a point where the function's derivatives blow up (sqrt, log ... at 0), jet's
    terms are the one-sided limits, as nested jvp's, not the nan of a recurrence dividing
    by 0 (or of 0 * inf for the curve's zero terms); in an array, only those elements."""
    with onp.errstate(all="ignore"):
        _, terms = chainrule.jet(f, (x0,), ([v, 0.0, 0.0],))
        onp.testing.assert_array_equal([float(t) for t in terms], want)
        nested = _nested_jvp_derivatives(lambda t: f(x0 + v * t), 3)
        onp.testing.assert_array_equal([float(t) for t in terms], nested[1:])
        away = x0 - 0.5 * v
        xs = onp.array([x0, away])
        _, terms = chainrule.jet(f, (xs,), ([v * onp.ones(2), onp.zeros(2), onp.zeros(2)],))
        _, regular = chainrule.jet(f, (away,), ([v, 0.0, 0.0],))
        onp.testing.assert_array_equal([t[0] for t in terms], want)
        onp.testing.assert_allclose([t[1] for t in terms], regular, rtol=1e-14)


def test_cbrt_at_signed_zeros_gives_the_one_sided_limits_in_every_mode():
    """cbrt's derivatives at 0 are those of x^(1/3) from the side of the zero's sign (as
    JAX's rule, 1/3 ans^-2, gives): at +0 (inf, -inf, inf), at -0 (inf, inf, inf). Its
    rule was 1 / (3 ans^2), whose own derivative is 0 * inf there: (inf, nan, nan)."""
    with onp.errstate(all="ignore"):
        for zero, want in ((0.0, [INF, -INF, INF]), (-0.0, [INF, INF, INF])):
            nested, h = [], np.cbrt
            for _ in range(3):  # (at zero itself: zero + t would be +0)
                h = (lambda inner: lambda x: chainrule.jvp(inner, (x,), (1.0,))[1])(h)
                nested.append(h(zero))
            reverse = [chainrule.grad(np.cbrt)(zero),
                       chainrule.grad(chainrule.grad(np.cbrt))(zero),
                       chainrule.grad(chainrule.grad(chainrule.grad(np.cbrt)))(zero)]
            onp.testing.assert_array_equal(nested, want)
            onp.testing.assert_array_equal(reverse, want)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_a_whole_power_keeps_the_sign_of_a_zero_coefficient(n):
    # (1 + x^2)^n at x = -0.0: the first coefficient is -0.0, as jvp's (a float64
    # coefficient was once taken for a constant and added to 0.0)
    f = lambda x: (1.0 + x * x) ** n  # noqa: E731
    value, (first, second) = chainrule.jet(f, (onp.float64(-0.0),), ([1.0, 0.0],))
    _, tangent = chainrule.jvp(f, (onp.float64(-0.0),), (1.0,))
    assert onp.signbit(first) and onp.signbit(tangent) and first == 0.0
    assert second == 2.0 * n
    jitted = chainrule.jit(lambda x: chainrule.jet(f, (x,), ([1.0, 0.0],))[1][0])
    jitted(0.5)
    assert onp.signbit(jitted(-0.0))
