"""Attack 11: the less attacked transforms (Taylor mode, sparse derivatives, the SciPy
solvers, NumPy as people write it) against their reference semantics: jet = nested jvp =
the Taylor coefficients of the function along a line, hessian = the hand-derived Hessian,
sparse = dense, and jit = eager, vmap = the per-example loop around them."""

from math import factorial

import numpy as onp
import pytest
from numpy.polynomial import polynomial as P

import chainrule as cr
import chainrule.numpy as np

# slices with two or more zeros: a product's second derivative there is the product of
# the other n - 2 entries, not 0 (its first-order rule divided the zeros out)
_ZEROS = [onp.array([0.0, 0.0]), onp.array([0.3, 0.0, 1.2, -0.0]),
          onp.array([0.0, 2.0, 0.0, 0.0, 1.5]), onp.array([0.5, -2.0, 0.0, 3.0])]


def _prod_hessian(x):
    n = x.size
    h = onp.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                h[i, j] = onp.prod(onp.delete(x, [i, j]))
    return h


def _line_derivatives(x, v, order):
    """The derivatives at t = 0 of t -> prod(x + t v), from the polynomial's coefficients."""
    coefficients = onp.array([1.0])
    for a, b in zip(x, v):
        coefficients = P.polymul(coefficients, [a, b])
    coefficients = onp.pad(coefficients, (0, order + 1))
    return [coefficients[k] * factorial(k) for k in range(1, order + 1)]


_PRODUCTS = {
    "prod": lambda x: np.prod(x),
    "cumprod": lambda x: np.cumprod(x)[-1],
    "prod 2d": lambda x: np.prod(np.reshape(x, (1, -1)), axis=1)[0],
    "nanprod": lambda x: np.nanprod(x),
}


@pytest.mark.parametrize("x", _ZEROS, ids=str)
@pytest.mark.parametrize("name", list(_PRODUCTS))
def test_hessian_of_a_product_with_several_zeros_is_the_hand_derived_one(name, x):
    f = _PRODUCTS[name]
    want = _prod_hessian(x)
    onp.testing.assert_allclose(cr.hessian(f)(x), want, atol=1e-15)
    onp.testing.assert_allclose(cr.jacfwd(cr.jacfwd(f))(x), want, atol=1e-15)
    onp.testing.assert_allclose(cr.jacrev(cr.jacrev(f))(x), want, atol=1e-15)


@pytest.mark.parametrize("x", _ZEROS, ids=str)
@pytest.mark.parametrize("name", list(_PRODUCTS))
def test_jet_of_a_product_with_zeros_is_its_polynomial_along_the_line(name, x):
    f = _PRODUCTS[name]
    v = onp.linspace(-1.0, 1.3, x.size)
    order = x.size + 1
    _, terms = cr.jet(f, (x,), ([v] + [onp.zeros_like(x)] * (order - 1),))
    onp.testing.assert_allclose(onp.array(terms, dtype=float), _line_derivatives(x, v, order),
                                rtol=1e-12, atol=1e-12)



_SLICES = onp.array([[0.0, 2.0, 0.0, -1.5], [0.5, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 0.0]])

_ROWS = {  # each a function of the rows of _SLICES: the product of each row
    "prod": lambda x: np.prod(x, axis=1),
    "prod keepdims": lambda x: np.prod(x.T, axis=0, keepdims=True)[0],
    "prod axes": lambda x: np.prod(x[None], axis=(0, 2)),
    "prod initial": lambda x: np.prod(x, axis=-1, initial=1.5) / 1.5,
    "cumprod": lambda x: np.cumprod(x, axis=1)[:, -1],
    "cumprod axis 0": lambda x: np.cumprod(x.T, axis=0)[-1],
    "nancumprod": lambda x: np.nancumprod(x, axis=1)[:, -1],
    "cumprod flat": lambda x: np.stack([np.cumprod(x)[3], np.cumprod(x[1:])[3],
                                        np.cumprod(x[2])[-1]]),
}


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
@pytest.mark.parametrize("name", list(_ROWS))
def test_taylor_terms_of_products_of_rows_with_zeros_are_their_polynomials(name, dtype):
    call = _ROWS[name]
    x = _SLICES.astype(dtype)
    v = onp.linspace(-1.0, 1.0, x.size).reshape(x.shape).astype(dtype)
    order = 5
    series = [v] + [onp.zeros_like(x)] * (order - 1)
    _, terms = cr.jet(call, (x,), (series,))
    want = onp.array([_line_derivatives(r, w, order) for r, w in zip(x.astype(float), v)]).T
    tolerance = 1e-5 if dtype == onp.float32 else 1e-12
    onp.testing.assert_allclose(onp.array(terms, dtype=float), want, rtol=tolerance,
                                atol=tolerance)
    assert all(onp.asarray(term).dtype == dtype for term in terms)
    # jit is eager to the bit
    jitted = cr.jit(lambda x, *s: cr.jet(call, (x,), (list(s),))[1])
    for _ in range(2):
        assert all(onp.array_equal(a, b) for a, b in zip(jitted(x, *series), terms))


@pytest.mark.parametrize("name", ["prod", "cumprod", "nancumprod"])
def test_per_row_hessians_of_products_with_zeros_are_the_loops(name):
    f = lambda r: _ROWS[name](r[None])[0]  # noqa: E731
    loop = onp.stack([cr.hessian(f)(r) for r in _SLICES])
    onp.testing.assert_allclose(loop, [_prod_hessian(r) for r in _SLICES], atol=1e-15)
    assert onp.array_equal(cr.vmap(cr.hessian(f))(_SLICES), loop)
    assert onp.array_equal(cr.jit(cr.hessian(f))(_SLICES[1]), loop[1])


# ----------------------------------------------------------------------------- x.real = v
def _buffer_parts(x):
    z = np.ones(x.size, dtype=complex) * (0.5 - 2j)
    z.real = x ** 2
    z.imag = np.sin(x)
    w = np.ones(x.size)
    w.real = x * 3.0  # a real array's real part is the array itself
    return np.sum(np.abs(z) ** 2) + np.sum(w * x)


def _traced_parts(x):
    y = x * (1.0 + 1.0j)
    y.real = x ** 3
    y.imag = y.imag * 2.0
    r = x * 1.0
    r.real = np.cos(x)
    return np.sum(np.abs(y) ** 2) + np.sum(r)


def _numpy_parts(x, traced):
    if traced:
        y = x * (1.0 + 1.0j)
        y.real, y.imag = x ** 3, x * 2.0
        return onp.sum(onp.abs(y) ** 2) + onp.sum(onp.cos(x))
    return onp.sum(x ** 4 + onp.sin(x) ** 2) + onp.sum(3.0 * x * x)


@pytest.mark.parametrize("traced", [False, True], ids=["buffer", "traced array"])
def test_assigning_the_real_and_imaginary_parts_is_numpys_under_every_transform(traced):
    f = _traced_parts if traced else _buffer_parts
    x = onp.array([0.3, -1.2, 0.0, 2.0])
    assert f(x) == pytest.approx(_numpy_parts(x, traced), rel=1e-14)
    h = 1e-6
    fd = [(_numpy_parts(x + h * e, traced) - _numpy_parts(x - h * e, traced)) / (2 * h)
          for e in onp.eye(x.size)]
    g = cr.grad(f)(x)
    onp.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-7)
    jitted = cr.jit(cr.grad(f))
    assert onp.array_equal(jitted(x), g) and onp.array_equal(jitted(x[::-1]), cr.grad(f)(x[::-1]))
    xs = onp.stack([x, -x, x * 0.5])
    assert onp.array_equal(cr.vmap(cr.grad(f))(xs), onp.stack([cr.grad(f)(r) for r in xs]))


def test_the_imaginary_part_of_a_real_array_cannot_be_set_as_in_numpy():
    def f(x, make):
        y = make(x)
        y.imag = x
        return np.sum(y)

    for make in (lambda x: np.ones(x.size), lambda x: x * 1.0):
        with pytest.raises(TypeError, match="does not have imaginary part"):
            cr.grad(f)(onp.ones(2), make)


def test_setting_the_real_part_through_a_view_of_a_traced_array_is_refused():
    def f(x):
        y = np.reshape(x * (1.0 + 0.0j), (2, 2))
        row = y[0]
        row.real = x[:2]
        return np.sum(np.abs(y))

    with pytest.raises(TypeError, match="view of another traced array"):
        cr.grad(f)(onp.ones(4))


# ----------------------------------------------------------------------------- odeint
def _blow_up(a):
    """y' = a y^2, y(0) = 1 on [0, 2]: the solution 1 / (1 - a t) blows up at 1 / a."""
    from chainrule.scipy import integrate

    ys = integrate.odeint(lambda y, s, a: a * y ** 2, np.array([1.0]),
                          onp.array([0.0, 1.0, 2.0]), args=(a,), rtol=1e-10, atol=1e-10)
    return ys[-1, 0]


@pytest.mark.parametrize("transform", [cr.grad, cr.jacfwd, cr.hessian,
                                       lambda f: cr.jit(cr.grad(f))],
                         ids=["grad", "jacfwd", "hessian", "jit grad"])
def test_a_derivative_of_a_failed_odeint_raises_and_of_a_solved_one_is_exact(transform):
    # a = 0.3: no blow-up before t = 2, y(2) = 1 / (1 - 2a): dy/da = 2 / (1 - 2a)^2,
    # d2y/da2 = 8 / (1 - 2a)^3
    want = 125.0 if transform is cr.hessian else 12.5
    d = transform(_blow_up)
    assert d(0.3) == pytest.approx(want, rel=1e-6)
    with pytest.warns(Warning, match="Excess work"):  # (SciPy's, for the forward solve)
        with pytest.raises(RuntimeError, match="forward solve failed .*Excess work"):
            d(0.7)  # blows up at t = 1.43: LSODA answers what it reached, not a solution
    assert d(0.3) == pytest.approx(want, rel=1e-6)  # (a jitted program: replayed)


def test_a_failed_odeint_answers_scipys_values_with_its_warning():
    import scipy.integrate as si

    with pytest.warns(Warning, match="Excess work"):
        got = _blow_up(0.7)
    with pytest.warns(Warning, match="Excess work"):
        want = si.odeint(lambda y, s: 0.7 * y ** 2, [1.0], [0.0, 1.0, 2.0], rtol=1e-10,
                         atol=1e-10)[-1, 0]
    assert got == want


def test_per_example_derivatives_of_odeint_raise_where_one_example_fails_as_the_loop():
    xs = onp.array([0.3, 0.7])
    with pytest.warns(Warning), pytest.raises(RuntimeError, match="forward solve failed"):
        [cr.grad(_blow_up)(a) for a in xs]
    with pytest.warns(Warning), pytest.raises(RuntimeError, match="forward solve failed"):
        cr.vmap(cr.grad(_blow_up))(xs)


# ----------------------------------------------------------------------------- out= and where=
_MASK = onp.array([True, False, True, False])
_CELLS = onp.array([[True, False], [False, True]])


def _reductions_into_buffers(x, numpy):
    """Reductions with where= (the elements they read) written into out= arrays made by
    ``numpy`` (chainrule.numpy under a trace: buffers)."""
    m = numpy.reshape(x, (2, 2))
    whole, rows, columns, mean, top = (numpy.zeros(()), numpy.zeros(2), numpy.zeros(2),
                                       numpy.zeros(()), numpy.zeros(2))
    numpy.sum(x, out=whole, where=_MASK)
    numpy.sum(m, axis=1, out=rows, where=_CELLS)
    numpy.sum(m, axis=1, out=columns, where=onp.array([True, False]))
    numpy.mean(x, out=mean, where=_MASK)
    numpy.max(m, axis=0, out=top, where=onp.array([True, False]), initial=-10.0)
    return (whole + numpy.sum(rows * [1.0, 10.0]) + numpy.sum(columns * [100.0, 1000.0])
            + mean * 1e4 + numpy.sum(top * [1e5, 1e6]))


def test_a_reduction_with_where_into_an_out_array_reads_only_those_elements():
    # (where= was taken as the output's mask: the whole sum was computed, then masked, a
    # silently wrong value (31 became 3 for the row sums), or a shape error)
    x = onp.array([1.0, 2.0, 3.0, 4.0])
    want = _reductions_into_buffers(x, onp)
    assert want == 4.0 + 41.0 + 3100.0 + 2e4 + (3e5 - 1e7)
    value, g = cr.value_and_grad(_reductions_into_buffers)(x, np)
    assert value == want
    # d/dx of each term: whole 1,0,1,0; rows 1,0,0,10; columns 100,0,1000,0; mean 0.5e4
    # at 0 and 2; top (column 0's max is x[2]) 1e5 at 2
    onp.testing.assert_array_equal(g, [1 + 1 + 100 + 5e3, 0, 1 + 1000 + 5e3 + 1e5, 10])
    jitted = cr.jit(cr.value_and_grad(_reductions_into_buffers), static_argnums=1)
    for y in (x, x[::-1].copy()):
        (a, b), (c, d) = jitted(y, np), cr.value_and_grad(_reductions_into_buffers)(y, np)
        assert a == c and onp.array_equal(b, d)
    xs = onp.stack([x, x * 2.0, -x])
    assert onp.array_equal(cr.vmap(lambda r: _reductions_into_buffers(r, np))(xs),
                           onp.stack([_reductions_into_buffers(r, onp) for r in xs]))


def _safe_divide(x, numpy):
    d = x - 0.5
    return numpy.sum(numpy.divide(x ** 2, d, out=numpy.zeros_like(x), where=d != 0)
                     + numpy.add(x, 1.0, out=numpy.ones_like(x), where=x > 0.4) * x)


def test_a_ufunc_with_where_has_no_derivative_where_it_computes_nothing():
    # (the divide was computed everywhere and masked after: at d = 0 its rule sent
    # 0 / 0 = nan back, where NumPy computes nothing and the entry is out's constant 0)
    x = onp.array([0.5, -0.3, 1.5, 0.3])
    d = x - 0.5
    with onp.errstate(divide="ignore", invalid="ignore"):
        quotient = onp.where(d != 0, (2 * x * d - x ** 2) / d ** 2, 0.0)
    want = quotient + onp.where(x > 0.4, 2 * x + 1.0, 1.0)
    assert _safe_divide(x, np) == _safe_divide(x, onp)
    onp.testing.assert_allclose(cr.grad(_safe_divide)(x, np), want, rtol=1e-14)
    onp.testing.assert_allclose(cr.jacfwd(_safe_divide)(x, np), want, rtol=1e-14)
    jitted = cr.jit(cr.grad(_safe_divide), static_argnums=1)
    for y in (x, x[::-1].copy(), x):
        assert onp.array_equal(jitted(y, np), cr.grad(_safe_divide)(y, np))
    xs = onp.stack([x, x + 0.25, x[::-1]])
    assert onp.array_equal(cr.vmap(cr.grad(_safe_divide), in_axes=(0, None))(xs, np),
                           onp.stack([cr.grad(_safe_divide)(r, np) for r in xs]))


def _out_of_a_traced_fill(x, numpy):
    o = numpy.full(x.size, numpy.mean(x))  # (a traced fill value: a buffer holding it)
    numpy.sqrt(x, out=o, where=x > 0.5)
    r = numpy.full_like(x, -5.0)
    numpy.tanh(x, out=r, where=x < 0.8)
    return numpy.sum(o * x + r)


def test_out_into_an_array_filled_with_a_traced_value_is_numpys():
    # (np.full(n, traced) and np.full_like(traced, c) were traced arrays, not buffers: out=
    # was refused with "out cannot be passed positionally here. Pass it positionally")
    x = onp.array([0.1, 0.7, 0.3, 0.9])
    assert _out_of_a_traced_fill(x, np) == _out_of_a_traced_fill(x, onp)
    h = 1e-6
    fd = [(_out_of_a_traced_fill(x + h * e, onp) - _out_of_a_traced_fill(x - h * e, onp))
          / (2 * h) for e in onp.eye(4)]
    g = cr.grad(_out_of_a_traced_fill)(x, np)
    onp.testing.assert_allclose(g, fd, rtol=1e-7)
    jitted = cr.jit(cr.grad(_out_of_a_traced_fill), static_argnums=1)
    assert onp.array_equal(jitted(x, np), g) and onp.array_equal(jitted(x, np), g)


def test_a_reduction_with_a_where_computed_from_x_under_jit_is_eager():
    # (a traced where= is passed by position, bringing NumPy's no-value keepdims along,
    # which the rules read as True: jit(grad) raised a broadcasting ValueError)
    def f(x):
        m = np.reshape(np.concatenate([x, x]), (2, 3))
        return np.sum(np.sum(m, axis=1, where=x > 0) * onp.array([1.0, 2.0])) + np.sum(
            np.mean(m, axis=0, where=m > 0.1) ** 2)

    for x in (onp.array([0.3, -0.2, 0.5]), onp.array([0.3, 0.2, 0.5])):
        for transform in (cr.grad, cr.hessian):
            assert onp.array_equal(cr.jit(transform(f))(x), transform(f)(x), equal_nan=True)


@pytest.mark.parametrize("name", ["sum", "mean", "cumsum", "prod", "trace", "nansum"])
def test_a_float32_reduction_into_a_float64_out_accumulates_in_float64_as_numpy(name):
    a = onp.random.default_rng(0).standard_normal(200).astype(onp.float32)

    def f(x, numpy):
        x = x.reshape(10, 20) if name == "trace" else x[:12] if name == "prod" else x
        out = numpy.zeros(200 if name == "cumsum" else ())
        getattr(numpy, name)(x, out=out)
        return out

    want = f(a, onp)
    assert onp.array_equal(cr.jit(f, static_argnums=1)(a, np), want)
    assert onp.array_equal(cr.value_and_grad(lambda x: np.sum(f(x, np)))(a)[0], onp.sum(want))


def test_a_ufunc_into_an_out_it_cannot_cast_to_raises_numpys_error_under_jit():
    def f(x, s):
        o = np.full(x.size, s)  # (s = False: a bool array)
        np.tanh(x, out=o, where=x > 0.1)
        return o

    x = onp.array([0.3, -0.2])
    with pytest.raises(TypeError) as eager:
        f(x, False)
    with pytest.raises(TypeError) as jitted:
        cr.jit(f, static_argnums=1)(x, False)
    assert type(jitted.value) is type(eager.value) and str(jitted.value) == str(eager.value)



def test_out_given_a_traced_array_is_refused_saying_so_not_to_pass_it_positionally():
    # (it said "out cannot be passed positionally here. Pass it positionally")
    def f(x):
        y = x * 1.0
        np.multiply(y, y, out=y)
        return np.sum(y)

    for transform in (cr.grad, lambda f: cr.jit(cr.grad(f)), lambda f: cr.vmap(cr.grad(f))):
        with pytest.raises(TypeError, match="multiply with out= a traced array") as error:
            transform(f)(onp.ones((2, 2)))
        assert "positionally" not in str(error.value)


def test_a_cast_error_into_out_with_where_is_numpys_under_jit():
    # (the long run's case 12,490: the ufunc's answer was put together with out's entries
    # first, which promoted float32 to float64, and the cast error then named float64)
    def f(x, s):
        o = np.full(3, s)
        np.exp(x, out=o, where=x > 0.1)
        return np.sum(o)

    x = onp.array([1.1, -0.9, 3.4], dtype=onp.float32)
    messages = []
    for call in (f, cr.jit(f, static_argnums=1)):
        with pytest.raises(TypeError) as raised:
            call(x, 1)
        messages.append(str(raised.value))
    assert messages[0] == messages[1] and "float32" in messages[0]


def test_prod_gradient_of_a_slice_without_zeros_is_the_same_beside_one_with_zeros():
    # (the vmap long run's case 19,385: a batch with a zero somewhere took the product
    # path for every example; an example whose product underflows, without zeros, then got
    # the true product of the others where its own loop, ans / x, gets 0)
    from chainrule._transforms.vmap import batched_runs_first

    xs = onp.array([[0.0, 2.0, 3.0], [1e-300, 1e-300, 2.0], [0.5, -0.0, -0.0]])
    g = cr.grad(lambda x: np.prod(x))
    loop = onp.stack([g(x.copy()) for x in xs])
    with batched_runs_first():
        got = cr.vmap(g)(xs)
    assert got.tobytes() == loop.tobytes()
    # a matrix's rows reduced together answer as each row alone
    rows = cr.grad(lambda x: np.sum(np.prod(x, axis=1)))(xs)
    assert rows.tobytes() == loop.tobytes()
