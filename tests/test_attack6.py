"""The hostile user, session 6: Taylor mode, the Tensor front end, the debug tools and
explain, sparse derivatives with buffers, the SciPy solvers. Each test is a silent wrong
answer (or an unclear error) found by attacking, checked against the reference semantics:
jet == nested jvp, laplacian == trace of the Hessian, jit == eager, vmap == the loop,
Tensor == PyTorch."""

from __future__ import annotations

import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule import Tensor


def _value(t):
    return onp.asarray(t.value if isinstance(t, Tensor) else t)


# --------------------------------------------------------------------- Taylor mode


@pytest.mark.parametrize("requires_grad", [False, True])
def test_jet_of_a_tensor_function_gives_a_list_of_tensors(requires_grad):
    # The series of a Tensor output was one Tensor around a Python list (holding boxes of
    # the Tensor's graph when x requires grad): it printed as an error and its terms could
    # not be backpropagated. JAX's layout: the output's leaf (the Tensor) becomes the list
    # of its terms, each a Tensor.
    x = Tensor(onp.array([1.0, 2.0]), requires_grad=requires_grad)
    y, terms = cr.jet(lambda t: (t ** 3).sum(), (x,), ([onp.ones(2), onp.zeros(2)],))
    assert isinstance(terms, list) and len(terms) == 2
    assert all(isinstance(term, Tensor) for term in terms)
    # along v = ones: f' = 3 sum x^2, f'' = 6 sum x
    assert float(_value(y)) == 9.0
    assert [float(_value(term)) for term in terms] == [15.0, 18.0]
    repr(terms)
    if requires_grad:
        terms[1].backward()  # d/dx of 6 sum(x) is 6
        assert onp.array_equal(_value(x.grad), [6.0, 6.0])


def test_jet_of_a_dict_with_a_tensor_keeps_the_dict_of_term_lists():
    x = Tensor(onp.array([1.0, 2.0]), requires_grad=False)
    out, terms = cr.jet(lambda t: {"t": t * 2.0, "a": [np.sum(t ** 2)]}, (x,),
                        ([onp.ones(2)],))
    assert list(terms) == ["t", "a"]
    assert isinstance(terms["t"], list) and isinstance(terms["t"][0], Tensor)
    assert onp.array_equal(_value(terms["t"][0]), [2.0, 2.0])
    assert isinstance(terms["a"][0][0], Tensor) and float(_value(terms["a"][0][0])) == 6.0


def test_jit_of_stochastic_laplacian_without_key_draws_at_each_call():
    # laplacian(f, samples=s) without a key drew its directions from fresh entropy, which
    # jit cannot see: jit(laplacian(...)) answered the first call's estimate forever, where
    # the eager one draws anew at each call. Seeded from NumPy's global generator, jit sees
    # the draw (the function runs eagerly, with a JitWarning) and a seed repeats a run.
    f = lambda x: np.sum(np.sin(x) * x[0])  # noqa: E731
    x = onp.array([0.3, 0.5, -1.0, 2.0])
    estimate = cr.laplacian(f, samples=2)
    onp.random.seed(5)
    eager = [float(estimate(x)) for _ in range(4)]
    assert len(set(eager)) > 1
    jitted = cr.jit(estimate)
    onp.random.seed(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [float(jitted(x)) for _ in range(4)] == eager
    onp.random.seed(5)
    assert list(cr.vmap(estimate)(onp.stack([x] * 4))) == eager


# ------------------------------------------------------------------ the debug tools


def test_debug_nans_raises_in_a_jitted_function_compiled_before():
    # A program jit compiled outside debug_nans answered nan inside it without raising,
    # where the eager call raises at sqrt's backward pass (jit == eager, exceptions too).
    def norm(x):
        return np.sqrt(np.sum(x ** 2))

    jitted = cr.jit(cr.grad(norm))
    assert onp.allclose(jitted(onp.array([3.0, 4.0])), [0.6, 0.8])
    with onp.errstate(all="ignore"):
        with cr.debug_nans():
            with pytest.raises(FloatingPointError, match="VJP of sqrt"):
                cr.grad(norm)(onp.zeros(2))
            with pytest.raises(FloatingPointError, match="VJP of sqrt"):
                jitted(onp.zeros(2))
            assert onp.allclose(jitted(onp.array([3.0, 4.0])), [0.6, 0.8])
        assert onp.isnan(jitted(onp.zeros(2))).all()  # off again: the compiled program


# ------------------------------------------------------------- NumPy as written


@pytest.mark.parametrize("transform", ["jacobian", "jet", "sparse"])
def test_interp_with_list_points_differentiates(transform):
    # NumPy's interp takes sequences for xp and fp; under any derivative
    # np.interp(x, [0, 1, 2], [0, 1, 4]) raised "only integer scalar arrays can be
    # converted to a scalar index" (a list indexed by the intervals found).
    x = onp.array([0.3, 1.2, 0.7, -1.0, 3.0])

    def f(x):
        return np.interp(x, [0, 1, 2], (0, 1, 4), left=-1.0)

    slopes = onp.array([1.0, 3.0, 1.0, 0.0, 0.0])  # the pieces' slopes; constant outside
    if transform == "jacobian":
        assert onp.array_equal(cr.jacobian(f)(x), onp.diag(slopes))
    elif transform == "sparse":
        assert onp.array_equal(cr.jacobian(f, sparse=True)(x).toarray(), onp.diag(slopes))
    else:
        y, (d1, d2) = cr.jet(f, (x,), ([onp.ones(5), onp.zeros(5)],))
        assert onp.array_equal(y, onp.interp(x, [0, 1, 2], [0, 1, 4], left=-1.0))
        assert onp.array_equal(d1, slopes) and onp.array_equal(d2, onp.zeros(5))


# ------------------------------------------------------------------ clear errors


@pytest.mark.parametrize("case", ["jacrev", "tuple", "holomorphic", "jacfwd"])
def test_complex_jacobians_refused_clearly(case):
    # These raised NumPy's "cannot reshape array of size 8 into shape (2,2)": a complex
    # value's standard basis has two units per element, so the rows (or columns) do not
    # make an output x input matrix. Now a TypeError naming the way that works.
    x, z = onp.array([0.5, 2.0]), onp.array([0.5 + 1j, 2.0])
    transform, f, arg, fix = {
        "jacrev": (cr.jacrev, lambda x: x * (1 + 2j), x, "jacfwd"),
        "tuple": (cr.jacobian, lambda x: (x * (1 + 2j), x ** 2), x, "jacfwd"),
        "holomorphic": (cr.jacobian, lambda z: z ** 2, z, "np.real"),
        "jacfwd": (cr.jacfwd, lambda z: (z ** 2).real, z, "jacrev"),
    }[case]
    with pytest.raises(TypeError, match=fix):
        transform(f)(arg)
    # what works: a complex output of a real input forward, a real output of a complex
    # input in reverse (grad's convention)
    assert onp.array_equal(cr.jacfwd(lambda x: x * (1 + 2j))(x), onp.diag([1 + 2j, 1 + 2j]))
    assert onp.array_equal(cr.jacobian(lambda z: (z ** 2).real)(z), onp.diag(2 * z))


@pytest.mark.parametrize("transform", ["laplacian", "stde", "hessian_diagonal"])
def test_laplacian_of_a_complex_input_refused(transform):
    # The Laplacian of Re(z**3) in the real and imaginary parts is 0 (harmonic); laplacian
    # answered 9.0 at z = [1+1j, 0.5-2j], the second derivatives along the real units
    # only (Re f''(z) summed), silently. Now refused, naming the real-parts way.
    f = lambda z: np.sum(z ** 3).real  # noqa: E731
    z = onp.array([1 + 1j, 0.5 - 2j])
    made = {"laplacian": cr.laplacian(f), "stde": cr.laplacian(f, samples=4, key=0),
            "hessian_diagonal": cr.hessian_diagonal(f)}[transform]
    with pytest.raises(TypeError, match="real and imaginary parts"):
        made(z)
    # the way it names: the Laplacian in (Re z, Im z) of a harmonic function is 0
    parts = onp.stack([z.real, z.imag])
    assert abs(cr.laplacian(lambda u: f(u[0] + 1j * u[1]))(parts)) < 1e-12


def _nested_jvp_terms(f, x, order):
    """f's derivatives of orders 1..order at x along 1, by nested forward mode."""
    def derivative(g):
        return lambda x: cr.jvp(g, (x,), (1.0,))[1]

    terms, g = [], f
    for _ in range(order):
        g = derivative(g)
        terms.append(float(g(x)))
    return terms


@pytest.mark.parametrize("name, f", [
    ("1/x", lambda x: 1.0 / x),
    ("2/x", lambda x: 2.0 / x),
    ("x**-1", lambda x: x ** -1.0),
    ("x**-2", lambda x: x ** -2),
    ("x**-3", lambda x: x ** -3),
])
@pytest.mark.parametrize("x", [0.0, -0.0])
def test_jet_of_a_pole_at_zero_is_nested_jvps_limits(name, f, x):
    # At x = 0 jet gave nan from the second order on (the quotient's and the negative
    # power's recurrences divide by 0), where nested jvp gives the one-sided limits, inf
    # and -inf, as jet already did for reciprocal, sqrt and log.
    with onp.errstate(all="ignore"):
        _, terms = cr.jet(f, (x,), ([1.0, 0.0, 0.0],))
        expected = _nested_jvp_terms(f, x, 3)
    assert all(onp.isinf(expected))
    assert [float(t) for t in terms] == expected


def test_laplacian_arguments_refused_clearly():
    # samples=True passed the check (a bool is an int) and failed deep inside with
    # "an integer is required"; a dict x was told "got dtype object. Pass x.astype(float)".
    f = lambda x: np.sum(x ** 3)  # noqa: E731
    with pytest.raises(ValueError, match="samples must be a whole number >= 1, not True"):
        cr.laplacian(f, samples=True)
    with pytest.raises(TypeError, match="one float array x .*got a dict"):
        cr.laplacian(lambda d: np.sum(d["a"] ** 3))({"a": onp.ones(2)})
    assert cr.laplacian(lambda v: v[0] ** 3 + v[1] ** 2)([1.0, 2.0]) == 8.0  # a list is an array


# ------------------------------------------------------------- Tensor front end


def test_tensor_vmap_of_an_in_place_change_of_the_argument():
    from chainrule.tensor import vmap as tensor_vmap

    def double_in_place(x):
        x.mul_(2.0)
        return x.sum()

    xs = onp.array([[1.0, -2.0], [3.0, 0.5]])
    batch = Tensor(xs.copy(), requires_grad=False)
    try:
        sums = tensor_vmap(double_in_place)(batch)
    except RuntimeError as error:  # refused, as the loop over batch[i] is (attack7)
        assert "changed an argument in place" in str(error)
        assert onp.array_equal(_value(batch), xs)
        return
    assert onp.array_equal(_value(sums), [-2.0, 7.0])
    assert onp.array_equal(_value(batch), 2 * xs)  # torch.func.vmap's batch, changed
