"""autograd's API surface beyond the NumPy namespace (issue 17): the names of the wrapped
modules, check_grads' messages, the deprecated registration methods, the tensor-Jacobian
product, complex vector spaces, xarray, logsumexp's sign, and what autograd's examples
need (a user VSpace, odeint with traced args, flattening order)."""

import importlib
import types
import warnings

import numpy as onp
import pytest
import scipy.special
import scipy.stats

import chainrule as cr
import chainrule.numpy as np
from chainrule import extend
from chainrule.test_util import GradientCheckError, check_grads

RNG = onp.random.default_rng(17)


# ----------------------------------------------------------------------------- public names
def _public(module) -> set:
    return {name for name in dir(module) if not name.startswith("_")}


def _wrapped_module_pairs():
    """(path under autograd/chainrule, the NumPy/SciPy module autograd wraps there)."""
    pairs = [("numpy", onp), ("numpy.linalg", onp.linalg), ("numpy.fft", onp.fft),
             ("numpy.random", onp.random)]
    for name in ("special", "stats", "linalg", "signal", "integrate", "misc"):
        pairs.append((f"scipy.{name}", f"scipy.{name}"))
    ag_stats = importlib.import_module("autograd.scipy.stats")
    for name in sorted(_public(ag_stats)):
        if isinstance(getattr(ag_stats, name), types.ModuleType):
            pairs.append((f"scipy.stats.{name}", getattr(scipy.stats, name)))
    return pairs


def test_every_wrapped_name_autograd_exposes_exists_in_chainrule():
    pytest.importorskip("autograd")
    missing = {}
    compared = 0
    for path, original in _wrapped_module_pairs():
        try:
            ag_module = importlib.import_module(f"autograd.{path}")
        except ImportError:  # autograd has no scipy.misc any more
            continue
        if isinstance(original, str):
            original = importlib.import_module(original)
        cr_module = importlib.import_module(f"chainrule.{path}")
        # autograd's modules also hold their own helpers (grad_eig, unbroadcast_f...):
        # only the names NumPy/SciPy give them are the API
        names = _public(ag_module) & _public(original)
        compared += len(names)
        lacking = sorted(names - _public(cr_module))
        if lacking:
            missing[path] = lacking
    assert not missing, f"names autograd exposes that chainrule lacks: {missing}"
    assert compared > 700  # numpy alone gives ~470: the comparison really ran


def test_numpy_random_has_numpys_names_beyond_all():
    import chainrule.numpy.random as cr_random

    assert _public(onp.random) <= _public(cr_random)
    assert cr_random.get_bit_generator is onp.random.get_bit_generator
    assert cr_random.set_bit_generator is onp.random.set_bit_generator


def test_dirichlet_rvs_samples_as_scipy_and_refuses_a_traced_alpha():
    from chainrule.scipy.stats import dirichlet

    alpha = onp.array([1.5, 2.0, 3.0])
    onp.testing.assert_array_equal(dirichlet.rvs(alpha, size=4, random_state=3),
                                   scipy.stats.dirichlet.rvs(alpha, size=4, random_state=3))
    with pytest.raises(TypeError, match="traced value"):
        cr.grad(lambda a: np.sum(dirichlet.rvs(a, random_state=0)))(alpha)


# ----------------------------------------------------------------------------- check_grads
def _sin_with_wrong(mode: str, order: int):
    """sin whose derivative in ``mode`` is off by 1% at first order, or only at second."""

    @cr.primitive
    def foo(x):
        return onp.sin(x)

    first = 1.01 if order == 1 else 1.0
    cos = np.cos if order == 1 else _bad_cos
    extend.defvjp(foo, lambda ans, x: lambda g: g * (first if mode == "rev" else 1.0) * cos(x))
    extend.defjvp(foo, lambda g, ans, x: g * (first if mode == "fwd" else 1.0) * cos(x))
    return foo


@cr.primitive
def _bad_cos(x):
    return onp.cos(x)


# the derivative of cos is -sin: 5% too large, so only second derivatives are wrong
extend.defvjp(_bad_cos, lambda ans, x: lambda g: -1.05 * g * np.sin(x))
extend.defjvp(_bad_cos, lambda g, ans, x: -1.05 * g * np.sin(x))


@pytest.mark.parametrize("mode, tag", [("rev", "VJP"), ("fwd", "JVP")])
def test_check_grads_message_has_autograds_phrase_and_the_numbers(mode, tag):
    x = onp.array([0.3, -1.1])
    with pytest.raises(AssertionError, match=rf"\({tag}\) check of foo failed") as info:
        check_grads(_sin_with_wrong(mode, 1), modes=[mode], order=1)(x)
    message = str(info.value)
    assert isinstance(info.value, GradientCheckError)
    assert message.startswith("order 1: ") and "finite differences" in message
    assert "analytic:" in message and "numeric:" in message


@pytest.mark.parametrize("mode, tag, derivative", [("rev", "VJP", "vjp_foo"),
                                                   ("fwd", "JVP", "jvp_foo")])
def test_check_grads_message_names_the_derivative_function_at_order_two(mode, tag, derivative):
    x = onp.array([0.3, -1.1])
    f = _sin_with_wrong(mode, 2)
    check_grads(f, modes=[mode], order=1)(x)  # first derivatives are right
    with pytest.raises(GradientCheckError, match=rf"\({tag}\) check of {derivative} failed"):
        check_grads(f, modes=[mode], order=2)(x)


# ----------------------------------------------------------------------------- deprecated API
def _new_mul():
    from chainrule.core import primitive

    @primitive
    def new_mul(x, y):
        return x * y

    return new_mul


def _grads_of(fun, x, y):
    return cr.grad(lambda a, b: np.sum(fun(a, b) * W), (0, 1))(x, y)


W = RNG.standard_normal((2, 2))
X, Y = RNG.standard_normal((2, 2)), RNG.standard_normal((2, 2))


def test_deprecated_defgrad_registers_staged_vjps_and_warns():
    new_mul = _new_mul()
    with pytest.warns(DeprecationWarning, match="new_mul.defgrad is deprecated"):
        new_mul.defgrad(lambda ans, x, y: lambda g: y * g)
    with pytest.warns(DeprecationWarning):
        new_mul.defgrad(lambda ans, x, y: lambda g: x * g, argnum=1)
    gx, gy = _grads_of(new_mul, X, Y)
    onp.testing.assert_allclose(gx, W * Y)  # d/dx sum(W x y) = W y
    onp.testing.assert_allclose(gy, W * X)
    check_grads(lambda a, b: new_mul(a, b), (0, 1), modes=["rev"])(X, Y)


def test_deprecated_defvjp_passes_vspaces_and_warns():
    new_mul = _new_mul()
    seen = []

    def vjp_x(g, ans, vs, gvs, x, y):
        seen.append((vs, gvs))
        return y * g

    with pytest.warns(DeprecationWarning, match="new_mul.defvjp is deprecated"):
        new_mul.defvjp(vjp_x)
        new_mul.defvjp(lambda g, ans, vs, gvs, x, y: x * g, argnum=1)
    gx, gy = _grads_of(new_mul, X, Y)
    onp.testing.assert_allclose(gx, W * Y)
    onp.testing.assert_allclose(gy, W * X)
    assert seen[0] == (extend.vspace(X), extend.vspace(W))


def test_deprecated_defvjp_is_zero_gives_zero_gradients_and_warns():
    new_mul = _new_mul()
    with pytest.warns(DeprecationWarning, match="defvjp_is_zero is deprecated"):
        new_mul.defvjp_is_zero([0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "output seems independent of input"
        gx, gy = _grads_of(new_mul, X, Y)
    onp.testing.assert_array_equal(gx, onp.zeros((2, 2)))
    onp.testing.assert_array_equal(gy, onp.zeros((2, 2)))


def test_linalg_keeps_autograds_batched_dot():
    a, b = RNG.standard_normal((3, 2, 4)), RNG.standard_normal((3, 4, 5))
    onp.testing.assert_allclose(np.linalg._dot(a, b), onp.matmul(a, b))
    check_grads(np.linalg._dot, (0, 1), order=1)(a, b)


# ----------------------------------------------------------------------------- tjp
def test_tensor_jacobian_product_contracts_the_leading_output_axes():
    fun = lambda a: np.roll(np.sin(a), 1)  # noqa: E731
    a, v = RNG.standard_normal((5, 4, 3)), RNG.standard_normal((5, 4))
    # by hand: roll without an axis shifts the flattened array, out.flat[i] = sin(a.flat[i-1])
    flat_jac = onp.zeros((60, 60))
    for i in range(60):
        flat_jac[i, (i - 1) % 60] = onp.cos(a.flat[(i - 1) % 60])
    jac = flat_jac.reshape(5, 4, 3, 5, 4, 3)
    expected = onp.tensordot(v, jac, axes=2)
    out = cr.tensor_jacobian_product(fun)(a, v)
    assert out.shape == (3, 5, 4, 3)
    onp.testing.assert_allclose(out, expected, atol=1e-12)
    # a full-shape v is the vector-Jacobian product
    v_full = RNG.standard_normal((5, 4, 3))
    onp.testing.assert_allclose(cr.tensor_jacobian_product(fun)(a, v_full),
                                onp.tensordot(v_full, jac, axes=3), atol=1e-12)


# ----------------------------------------------------------------------------- vspaces
def test_complex_ones_is_a_unit_so_deriv_gives_the_complex_derivative():
    # A deliberate divergence (docs/migrating.md): autograd's complex ones() is 1 + 1j, so its
    # deriv(f)(z) is (1 + 1j) f'(z); chainrule's is 1, and deriv gives f'(z).
    vs = extend.vspace(1j * onp.zeros((2, 1)))
    onp.testing.assert_array_equal(vs.ones(), onp.ones((2, 1)))
    assert vs.ones().dtype == onp.complex128
    z = 1.0 + 2.0j
    assert cr.deriv(lambda w: w ** 2)(z) == 2 * z
    assert cr.deriv(lambda w: np.exp(w))(z) == pytest.approx(onp.exp(z), rel=1e-15)
    autograd = pytest.importorskip("autograd")
    assert autograd.deriv(lambda w: w ** 2)(z) == (1 + 1j) * 2 * z  # autograd's, for contrast


# ----------------------------------------------------------------------------- logsumexp
def test_logsumexp_return_sign_gives_the_log_magnitude_of_a_negative_sum_and_its_derivative():
    from chainrule.scipy.special import logsumexp

    a = onp.array([[0.3, -1.2, 0.8], [1.1, 0.2, -0.4]])
    b = onp.array([[1.0, 2.0, -3.5], [-2.0, 0.5, 1.0]])  # row sums of b exp(a): < 0 and < 0
    total = onp.sum(b * onp.exp(a), axis=1)
    assert onp.all(total < 0)
    value, sign = logsumexp(a, axis=1, b=b, return_sign=True)
    expected_value, expected_sign = scipy.special.logsumexp(a, axis=1, b=b, return_sign=True)
    onp.testing.assert_allclose(value, expected_value, rtol=1e-14)
    onp.testing.assert_allclose(value, onp.log(-total), rtol=1e-14)
    onp.testing.assert_array_equal(sign, expected_sign)
    onp.testing.assert_array_equal(sign, [-1.0, -1.0])

    def magnitude(a, b):
        return logsumexp(a, axis=1, b=b, return_sign=True)[0]

    w = onp.array([0.7, -1.3])
    ga, gb = cr.grad(lambda a, b: np.sum(w * magnitude(a, b)), (0, 1))(a, b)
    # by hand: d log|S| / d a_ij = b_ij exp(a_ij) / S_i, d / d b_ij = exp(a_ij) / S_i
    onp.testing.assert_allclose(ga, w[:, None] * b * onp.exp(a) / total[:, None], rtol=1e-12)
    onp.testing.assert_allclose(gb, w[:, None] * onp.exp(a) / total[:, None], rtol=1e-12)
    check_grads(magnitude, (0, 1), modes=["fwd", "rev"], order=2)(a, b)
    # without return_sign a negative sum is nan, as in SciPy
    assert onp.all(onp.isnan(logsumexp(a, axis=1, b=b)))
    assert onp.all(onp.isnan(scipy.special.logsumexp(a, axis=1, b=b)))


# ----------------------------------------------------------------------------- user VSpace
class Coeffs:
    """A vector of named coefficients whose arithmetic goes through its vector space, as
    autograd's extension API allows (its rkhs example does the same)."""

    def __init__(self, coeffs=None):
        self.coeffs = dict(coeffs or {})
        self.vs = CoeffsVSpace(self)

    def __add__(self, other):
        return self.vs.add(self, other)

    def __mul__(self, a):
        return self.vs.scalar_mul(self, a)


class CoeffsBox(extend.Box, Coeffs):
    pass


CoeffsBox.register(Coeffs)


class CoeffsVSpace(extend.VSpace):
    def __init__(self, value):
        pass

    def zeros(self):
        return Coeffs()

    def _add(self, f, g):
        keys = set(f.coeffs) | set(g.coeffs)
        return Coeffs({k: f.coeffs.get(k, 0.0) + g.coeffs.get(k, 0.0) for k in keys})

    def _scalar_mul(self, f, a):
        return Coeffs({k: a * v for k, v in f.coeffs.items()})

    def _inner_prod(self, f, g):
        return sum(v * g.coeffs.get(k, 0.0) for k, v in f.coeffs.items())


CoeffsVSpace.register(Coeffs)


@extend.primitive
def coefficient(f, key):
    return f.coeffs.get(key, 0.0)


extend.defvjp(coefficient, lambda ans, f, key: lambda g: Coeffs({key: 1.0}) * g)


def test_a_user_vspace_overriding_the_underscored_methods_accumulates_gradients():
    targets = {"a": 1.0, "b": -2.0, "c": 0.5}
    f = Coeffs({"a": 0.3, "b": 0.1})

    def loss(f):  # uses f three times: the backward pass adds Coeffs cotangents
        return sum((coefficient(f, k) - y) ** 2 for k, y in targets.items())

    g = cr.grad(loss)(f)
    assert isinstance(g, Coeffs)
    # by hand: d/df_k (f_k - y_k)^2 = 2 (f_k - y_k)
    expected = {k: 2 * (f.coeffs.get(k, 0.0) - y) for k, y in targets.items()}
    assert g.coeffs == pytest.approx(expected, rel=1e-12)
    for k in targets:  # and by central differences
        step = Coeffs({k: 1e-6})
        numeric = (loss(f + step) - loss(f + step * -1.0)) / 2e-6
        assert g.coeffs[k] == pytest.approx(numeric, rel=1e-6)
    vs = extend.vspace(f)
    assert vs.inner_prod(f, g) == pytest.approx(0.3 * expected["a"] + 0.1 * expected["b"])


# ----------------------------------------------------------------------------- dict order
NESTED = {"w": onp.arange(4.0).reshape(2, 2), "b": onp.array([-1.0, 0.5]),
          "layers": [{"z": onp.array([7.0]), "a": onp.array([8.0, 9.0])}]}


def test_flatten_orders_dict_entries_by_sorted_key_as_autograd():
    ag_flatten = pytest.importorskip("autograd.misc.flatten")
    from chainrule.misc.flatten import flatten, flatten_func

    expected, _ = ag_flatten.flatten(NESTED)
    flat, unflatten = flatten(NESTED)
    onp.testing.assert_array_equal(flat, expected)
    # by hand: keys b < layers < w, and inside the layer a < z
    onp.testing.assert_array_equal(flat, [-1.0, 0.5, 8.0, 9.0, 7.0, 0.0, 1.0, 2.0, 3.0])
    rebuilt = unflatten(flat)
    for key in ("w", "b"):
        onp.testing.assert_array_equal(rebuilt[key], NESTED[key])
    onp.testing.assert_array_equal(extend.vspace(NESTED).flatten(NESTED), expected)
    flat_func, _, flat_example = flatten_func(lambda p: np.sum(p["w"] * 2.0), NESTED)
    onp.testing.assert_array_equal(flat_example, expected)
    onp.testing.assert_allclose(cr.grad(flat_func)(flat_example),
                                [0, 0, 0, 0, 0, 2, 2, 2, 2])


def test_optimizers_step_the_same_vector_as_autograds():
    ag_optimizers = pytest.importorskip("autograd.misc.optimizers")
    from chainrule.misc import optimizers

    target = {"w": onp.array([1.0, -2.0]), "b": onp.array([0.5])}

    def gradient(p, i):  # of sum (p - target)^2 * weight, weights that differ per entry
        return {"w": 2 * (p["w"] - target["w"]) * 3.0, "b": 2 * (p["b"] - target["b"])}

    x0 = {"w": onp.zeros(2), "b": onp.zeros(1)}
    seen, ag_seen = [], []
    ours = optimizers.adam(gradient, x0, num_iters=5, step_size=0.1,
                           callback=lambda x, i, g: seen.append(extend.vspace(g).flatten(g)))
    theirs = ag_optimizers.adam(gradient, x0, num_iters=5, step_size=0.1,
                                callback=lambda x, i, g: ag_seen.append(ag_flat(g)))
    for key in x0:
        onp.testing.assert_allclose(ours[key], theirs[key], rtol=1e-14)
    onp.testing.assert_allclose(seen, ag_seen, rtol=1e-14)


def ag_flat(value):
    return importlib.import_module("autograd.misc.flatten").flatten(value)[0]


def test_dicts_with_the_same_keys_line_up_whatever_their_insertion_order():
    from chainrule import tree_map

    a = {"x": 1.0, "y": 2.0}
    b = {"y": 20.0, "x": 10.0}
    assert tree_map(lambda u, v: u + v, a, b) == {"x": 11.0, "y": 22.0}
    # a cotangent dict whose keys come in another order than the output's
    vjp, _ = cr.make_vjp(lambda t: {"p": t, "q": 2.0 * t})(1.0)
    assert vjp({"q": 1.0, "p": 0.0}) == pytest.approx(2.0)  # d(2t)/dt
    assert vjp({"p": 1.0, "q": 0.0}) == pytest.approx(1.0)


# ----------------------------------------------------------------------------- odeint
ODE_TOL = dict(rtol=1e-10, atol=1e-10)


def _decay(y, t, k):
    return -k * y


def test_odeint_second_derivatives_match_the_closed_form_in_every_mode_combination():
    from chainrule.scipy.integrate import odeint

    y0, t_end = 1.5, 1.2
    t = onp.array([0.0, 0.5, t_end])

    def y_end(k):
        return odeint(_decay, onp.array([y0]), t, args=(k,), **ODE_TOL)[-1, 0]

    k = 0.7
    # y(T) = y0 exp(-k T): d2y/dk2 = T^2 y0 exp(-k T)
    exact = t_end ** 2 * y0 * onp.exp(-k * t_end)
    assert cr.grad(cr.grad(y_end))(k) == pytest.approx(exact, rel=1e-6)  # rev over rev
    assert cr.deriv(cr.grad(y_end))(k) == pytest.approx(exact, rel=1e-6)  # fwd over rev
    assert cr.deriv(cr.deriv(y_end))(k) == pytest.approx(exact, rel=1e-6)  # fwd over fwd
    assert cr.grad(cr.deriv(y_end))(k) == pytest.approx(exact, rel=1e-6)  # rev over fwd


def _predator_prey(y, t, params):
    a, b = params["a"], params["b"]
    return np.array([a * y[0] - b[0] * y[0] * y[1],
                     -b[1] * y[1] + 0.3 * y[0] * y[1] * np.sin(t)])


def test_odeint_takes_containers_of_traced_values_in_args_to_second_order():
    from chainrule.scipy.integrate import odeint

    y0, t = onp.array([1.0, 0.8]), onp.linspace(0.0, 1.0, 3)
    params = {"a": 1.1, "b": onp.array([0.4, 0.9])}

    def loss(params, y0, t):
        return np.sum(odeint(_predator_prey, y0, t, (params,), **ODE_TOL) ** 2)

    g = cr.grad(loss)(params, y0, t)
    for key, step_dir in (("a", 1.0), ("b", onp.array([0.3, -0.7]))):
        def along(h, key=key, step_dir=step_dir):
            moved = dict(params, **{key: params[key] + h * step_dir})
            return loss(moved, y0, t)

        numeric = (along(1e-6) - along(-1e-6)) / 2e-6
        assert onp.sum(g[key] * step_dir) == pytest.approx(numeric, rel=1e-5)
    check_grads(lambda b, y0, t: loss({"a": 1.1, "b": b}, y0, t), (0, 1, 2),
                modes=["fwd", "rev"], order=2)(params["b"], y0, t)


# ----------------------------------------------------------------------------- singular mvn
def test_multivariate_normal_with_a_singular_cov_follows_scipy_and_differentiates_x_and_mean():
    from chainrule.scipy.stats import multivariate_normal as mvn

    basis = onp.linalg.qr(RNG.standard_normal((4, 4)))[0]
    cov = basis[:, :2] @ onp.diag([2.0, 0.5]) @ basis[:, :2].T  # rank 2
    mean = RNG.standard_normal(4)
    x = mean + basis[:, :2] @ onp.array([0.3, -0.8])  # on the support
    for fun, sp_fun in ((mvn.logpdf, scipy.stats.multivariate_normal.logpdf),
                        (mvn.pdf, scipy.stats.multivariate_normal.pdf)):
        assert fun(x, mean, cov, allow_singular=True) == pytest.approx(
            sp_fun(x, mean, cov, allow_singular=True), rel=1e-10)
    off = x + basis[:, 3]
    assert mvn.logpdf(off, mean, cov, allow_singular=True) == -onp.inf
    assert scipy.stats.multivariate_normal.logpdf(off, mean, cov, allow_singular=True) == -onp.inf
    # by hand: d/dx = -pinv(cov) (x - mean) = -d/dmean
    gx, gm = cr.grad(lambda x, m: mvn.logpdf(x, m, cov, allow_singular=True), (0, 1))(x, mean)
    expected = -onp.linalg.pinv(cov) @ (x - mean)
    onp.testing.assert_allclose(gx, expected, atol=1e-10)
    onp.testing.assert_allclose(gm, -expected, atol=1e-10)
    # along the support (autograd's test moves x only there): both modes, second order
    along = basis[:, :2]
    check_grads(lambda c, cm: mvn.logpdf(mean + along @ c, mean + along @ cm, cov,
                                         allow_singular=True),
                (0, 1), modes=["fwd", "rev"], order=2)(onp.array([0.3, -0.8]), onp.zeros(2))
    with pytest.raises(ValueError, match="singular cov"):
        cr.grad(lambda c: mvn.logpdf(x, mean, c, allow_singular=True))(cov)


# ----------------------------------------------------------------------------- xarray
def test_ufuncs_with_a_traced_operand_and_an_xarray_dataarray_are_differentiable():
    xr = pytest.importorskip("xarray")
    base = onp.array([0.5, -1.0, 2.0])

    def traced_times_dataarray(x):
        out = x * xr.DataArray(base)  # the traced operand comes first
        assert isinstance(out, xr.DataArray)
        return np.sum(out.data)

    def traced_times_dataarray_holding_traced(x):
        held = xr.DataArray(base) * x
        return np.sum(np.sin(x * held).data)

    x = 1.3
    assert traced_times_dataarray(x) == pytest.approx(onp.sum(x * base))
    assert cr.grad(traced_times_dataarray)(x) == pytest.approx(onp.sum(base))
    # by hand: d/dx sum(sin(x^2 b)) = sum(2 x b cos(x^2 b))
    expected = onp.sum(2 * x * base * onp.cos(x * x * base))
    assert cr.grad(traced_times_dataarray_holding_traced)(x) == pytest.approx(expected)
    for f in (traced_times_dataarray, traced_times_dataarray_holding_traced):
        check_grads(f, modes=["fwd", "rev"], order=2)(x)
    vector = onp.array([0.2, 0.4, -0.1])
    onp.testing.assert_allclose(cr.grad(traced_times_dataarray)(vector), base)
