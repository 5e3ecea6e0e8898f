"""chainrule.jit on derivatives whose rules read input values (which operand of a
maximum won, where a reduction's extreme is, which entries are zero or nan): a later call
with other values must not reuse the trace's answers. Each jitted derivative is compared
with eager evaluation, bit for bit, over inputs that change those decisions."""

from __future__ import annotations

import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np


def _bits(a, b):
    a, b = onp.asarray(a), onp.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes(), (a, b)


CASES = {
    "maximum": lambda x: np.sum(np.maximum(x, 0.0) * x),
    "minimum": lambda x: np.sum(np.minimum(x, x[::-1])),
    "fmax": lambda x: np.sum(np.fmax(x, 0.1)),
    "clip": lambda x: np.sum(np.clip(x, -0.5, 0.5) ** 2),
    "max": lambda x: np.max(x) * 2.0,
    "min axis": lambda x: np.sum(np.min(x.reshape(2, 3), axis=1)),
    "ptp": lambda x: np.ptp(x),
    "median": lambda x: np.median(x),
    "nansum": lambda x: np.nansum(np.where(x > 1.0, np.nan, x) * x),
    "prod": lambda x: np.prod(np.where(x > 0.5, 0.0, x)),
    "norm inf": lambda x: np.linalg.norm(x, np.inf),
    "norm 1": lambda x: np.linalg.norm(x, 1),
    "norm 2": lambda x: np.linalg.norm(np.where(x > 0, x, 0.0)),
    "matrix norm 1": lambda x: np.linalg.norm(x.reshape(2, 3), 1),
    "sinc": lambda x: np.sum(np.sinc(np.where(x > 0, x, 0.0))),
    "sort": lambda x: np.sum(np.sort(x) * np.arange(6.0)),
    "unique": lambda x: np.sum(np.unique(np.round(x)) ** 2) + np.sum(x),
    "piecewise": lambda x: np.sum(np.piecewise(x, [x < 0, x >= 0], [np.sin, lambda v: v**2])),
    "interp": lambda x: np.sum(np.interp(x, onp.array([-1.0, 0.0, 1.0]),
                                         onp.array([0.0, 2.0, 1.0]))),
    "astype int": lambda x: np.sum(x * (x > 0).astype(int)),
    "asarray bool": lambda x: np.sum(x * onp.asarray(x > 0.5, dtype=bool)),
}

INPUTS = [onp.array(v) for v in (
    [0.3, -1.2, 2.0, 0.7, -0.1, 1.5],
    [-0.3, 1.2, -2.0, 0.9, 0.1, -1.5],
    [1.0, 1.0, -3.0, 0.2, 0.6, 0.0],
    [2.5, -0.4, 0.45, -0.6, 0.8, 0.55],
)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_jitted_derivatives_follow_the_values(name):
    f = CASES[name]
    for transform in (cr.grad, cr.hessian):
        jitted = cr.jit(transform(f), max_variants=50)
        for x in INPUTS + INPUTS[::-1]:
            _bits(jitted(x), transform(f)(x))


def test_jitted_jacobian_of_sort_follows_the_order():
    f = lambda x: np.sort(x) ** 2
    j = cr.jit(cr.jacobian(f))
    for x in INPUTS + INPUTS[::-1]:
        _bits(j(x), cr.jacobian(f)(x))


def test_plain_answers_of_linalg_follow_the_values():
    rank = cr.jit(lambda a, b: np.linalg.lstsq(a, b)[2])
    full = onp.eye(3)
    low = onp.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 1.0]])
    b = onp.ones(3)
    for a in (full, low, full):
        assert rank(a, b) == onp.linalg.lstsq(a, b)[2]


# ----------------------------------------------------------------------------- zero cotangents
# The VJPs of eigh, eig and svd skip the eigenvector (singular vector) terms when their
# cotangent is zero (an unused output): under chainrule.jit a cotangent may be an input
# of the program (jit of a vjp, or a gradient weighted by an input), so that decision
# must follow its value.
_SYM = onp.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 3.0]])
_GEN = onp.array([[2.0, 0.3, 0.1], [0.5, 1.0, 0.2], [0.1, 0.7, 3.0]])
_TALL = onp.array([[2.0, 0.3], [0.5, 1.0], [0.1, 0.7]])


def _cotangents(like, zero_parts):
    """Cotangents shaped like ``like`` (a tuple of answers): the parts in ``zero_parts``
    zero, the others nonzero."""
    return tuple(
        onp.zeros_like(part) if i in zero_parts
        else (onp.arange(part.size).reshape(part.shape) / part.size + 0.5).astype(part.dtype)
        for i, part in enumerate(like)
    )


DECOMPOSITIONS = {
    "eigh": (np.linalg.eigh, _SYM),
    "eig": (np.linalg.eig, _GEN),
    "svd reduced": (lambda a: np.linalg.svd(a, full_matrices=False), _TALL),
    "svd full": (np.linalg.svd, _TALL),
    "svd square": (np.linalg.svd, _GEN),
}


@pytest.mark.parametrize("name", sorted(DECOMPOSITIONS))
def test_jitted_vjps_of_decompositions_follow_zero_cotangents(name):
    fun, a = DECOMPOSITIONS[name]
    answers = tuple(onp.asarray(v) for v in fun(a))
    n = len(answers)
    # (the first call decides what the program computes: a zero cotangent first)
    patterns = [set(range(1, n)), set(), {0}, {n - 1}, set(), {1}, set(range(1, n))]
    vjp = lambda a, *g: cr.vjp(fun, a)[1](g)[0]  # noqa: E731
    jitted = cr.jit(vjp, max_variants=50)
    for zero_parts in patterns + patterns[::-1]:
        g = _cotangents(answers, zero_parts)
        _bits(jitted(a, *g), vjp(a, *g))


@pytest.mark.parametrize("name", ["eigh", "svd reduced"])
def test_jitted_gradients_weighted_by_an_input_follow_its_zeros(name):
    fun, a = DECOMPOSITIONS[name]
    f = lambda a, c: np.sum(fun(a)[-1] * c) + np.sum(fun(a)[-2])  # noqa: E731
    c_shape = onp.shape(fun(a)[-1])
    second = lambda f: cr.grad(lambda a, c: np.sum(cr.grad(f)(a, c) ** 2), 1)  # noqa: E731
    for transform in (cr.grad, second):
        g = transform(f)
        jitted = cr.jit(g, max_variants=50)
        for c in (onp.zeros(c_shape), onp.ones(c_shape), onp.zeros(c_shape)):
            _bits(jitted(a, c), g(a, c))


# ----------------------------------------------------------------------------- multivariate normal
def test_jitted_degenerate_normal_follows_the_support_and_the_rank():
    from chainrule.scipy.stats import multivariate_normal as mvn

    mean = onp.zeros(2)
    singular = onp.array([[1.0, 1.0], [1.0, 1.0]])
    on, off = onp.array([0.5, 0.5]), onp.array([0.5, -0.5])
    density = lambda x: mvn.logpdf(x, mean, singular, allow_singular=True)  # noqa: E731
    for f in (density, cr.grad(density)):
        jitted = cr.jit(f)
        for x in (on, off, on):
            _bits(jitted(x), f(x))
    # a covariance given to the jitted function: singular or not, as eager decides
    density = lambda x, cov: mvn.logpdf(x, mean, cov, allow_singular=True)  # noqa: E731
    jitted = cr.jit(density)
    for cov in (onp.eye(2), singular, 2 * onp.eye(2), singular):
        _bits(jitted(on, cov), density(on, cov))
    with pytest.raises(ValueError, match="singular cov"):
        cr.jit(cr.grad(density, 1))(on, singular)


# ----------------------------------------------------------------------------- solver rules
def test_jitted_gradient_of_expm_multiply_refines_as_eager_does():
    # the reverse rule in A's values refines a quadrature until two rules agree: how many
    # nodes that takes depends on A's values
    import scipy.sparse as sp

    from chainrule.scipy.sparse import linalg as spla

    a = sp.csr_matrix(onp.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.5], [0.0, 0.2, -1.0]]))
    f = lambda d: np.sum(spla.expm_multiply(a, onp.ones(3), data=d) ** 2)  # noqa: E731
    jitted = cr.jit(cr.grad(f))
    for scale in (0.1, 8.0, 0.1, 3.0):
        _bits(jitted(a.data * scale), cr.grad(f)(a.data * scale))


def _sparse_system():
    import scipy.sparse as sp

    return sp.csr_matrix(onp.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]]))


def test_jitted_sparse_solves_factorise_the_values_of_each_call():
    # the LU factors are kept for the derivatives of the same solve, not for other values
    from chainrule.scipy.sparse import linalg as spla

    a, b = _sparse_system(), onp.array([1.0, -2.0, 0.5])
    solves = {
        "spsolve": lambda d, b: spla.spsolve(a, b, data=d),
        "splu": lambda d, b: spla.splu(a, data=d).solve(b, "T"),
        "grad": cr.grad(lambda d, b: np.sum(spla.spsolve(a, b, data=d) ** 2)),
        "grad b": cr.grad(lambda d, b: np.sum(spla.spsolve(a, b, data=d) ** 2), 1),
    }
    for f in solves.values():
        jitted = cr.jit(f)
        for d in (a.data, 2.0 * a.data, a.data, a.data + 1.0):
            _bits(jitted(d, b), f(d, b))


def test_jitted_iterative_solves_start_where_asked():
    from chainrule.scipy.sparse import linalg as spla

    a, b = _sparse_system(), onp.array([1.0, -2.0, 0.5])
    f = lambda x0, b: spla.cg(a, b, x0=x0)[0]  # noqa: E731
    jitted = cr.jit(f)
    for x0 in (onp.zeros(3), onp.ones(3), onp.zeros(3)):
        _bits(jitted(x0, b), f(x0, b))


# ----------------------------------------------------------------------------- optimize
# A solver's start, bracket and bounds, and the bounds active at its solution, decide
# which solution it finds and how that solution moves: given to a jitted function, they
# must be those of each call.
def _solver_cases():
    from chainrule.scipy import optimize as so

    def quartic(x, p):
        return np.sum((x**2 - p) ** 2)

    def bowl(x, p):
        return np.sum((x - p) ** 2)

    return {
        "minimize x0": (
            lambda p, x0: np.sum(so.minimize(quartic, x0, args=(p,)).x),
            [(onp.array([1.0, 2.0]), onp.array([0.5, 0.5])),
             (onp.array([1.0, 2.0]), onp.array([-0.5, 0.5]))]),
        "minimize bounds": (
            lambda p, lo: np.sum(so.minimize(bowl, onp.zeros(2), args=(p,),
                                             bounds=[(lo, 5.0), (lo, 5.0)]).x),
            [(onp.array([1.0, 2.0]), -1.0), (onp.array([1.0, 2.0]), 1.5)]),
        "minimize active set": (
            lambda p: np.sum(so.minimize(bowl, onp.ones(2), args=(p,), bounds=[(0.0, 5.0)] * 2).x
                             * onp.array([1.0, 2.0])),
            [(onp.array([1.0, 2.0]),), (onp.array([-1.0, 2.0]),), (onp.array([1.0, 7.0]),)]),
        "minimize_scalar bounded": (
            lambda a: so.minimize_scalar(lambda x, a: (x - a) ** 2, bounds=(0.0, 2.0),
                                         method="bounded", args=(a,)).x,
            [(1.0,), (3.0,), (-1.0,)]),
        "least_squares active set": (
            lambda p: np.sum(so.least_squares(lambda x, p: x - p, onp.ones(2), args=(p,),
                                              bounds=(0.0, 5.0)).x * onp.array([1.0, 2.0])),
            [(onp.array([1.0, 2.0]),), (onp.array([-1.0, 2.0]),)]),
        "root x0": (
            lambda t, x0: so.root(lambda x, t: x**2 - t, x0, args=(t,)).x[0],
            [(4.0, onp.ones(1)), (4.0, -onp.ones(1))]),
        "newton x0": (
            lambda t, x0: so.newton(lambda x, t: x**2 - t, x0, args=(t,)),
            [(4.0, 1.0), (4.0, -1.0)]),
        "brentq bracket": (
            lambda t, a: so.brentq(lambda x, t: x**2 - t, a, a + 3.0, args=(t,)),
            [(4.0, 0.5), (4.0, -3.5)]),
        "root_scalar x0": (
            lambda t, x0: so.root_scalar(lambda x, t: x**2 - t, args=(t,), x0=x0,
                                         fprime=lambda x, t: 2 * x, method="newton").root,
            [(4.0, 1.0), (4.0, -1.0)]),
        "fixed_point x0": (
            lambda t, x0: so.fixed_point(lambda x, t: t / x ** 2 * 0.0 + 0.5 * (x + t / x), x0,
                                         args=(t,)),
            [(4.0, 1.0), (4.0, -1.0)]),
    }


@pytest.mark.parametrize("name", sorted(_solver_cases()))
def test_jitted_solvers_follow_starts_bounds_and_active_sets(name):
    f, inputs = _solver_cases()[name]
    for transform in (lambda f: f, cr.grad):
        g = transform(f)
        jitted = cr.jit(g, max_variants=50)
        for args in inputs + inputs[::-1]:
            _bits(jitted(*args), g(*args))


def test_jitted_implicit_derivative_refuses_a_singular_system_as_eager_does():
    from chainrule.scipy import optimize as so

    def f(t, s):
        x = so.root(lambda x, t, s: np.stack([x[0] - t, s * (x[1] - 1.0)]), onp.zeros(2),
                    args=(t, s)).x
        return np.sum(x)

    g = cr.grad(f)
    jitted = cr.jit(g)
    _bits(jitted(2.0, 1.0), g(2.0, 1.0))
    for call in (g, jitted):  # dF/dx = diag(1, s): singular to working precision
        with pytest.raises(so.SingularSystemError):
            call(2.0, 1e-17)
    _bits(jitted(3.0, 1.0), g(3.0, 1.0))


def test_jitted_implicit_derivative_refuses_an_unconverged_solve_as_eager_does():
    from chainrule.scipy import optimize as so

    def f(t):
        return so.root(lambda x, t: x**3 - t, onp.ones(1), args=(t,),
                       options={"maxfev": 8}).x[0]

    g = cr.grad(f)
    jitted = cr.jit(g)
    _bits(jitted(1.0), g(1.0))  # x0 is the root
    for call in (g, jitted):  # far from x0: not converged in 8 evaluations
        with pytest.raises(so.NotConvergedError):
            call(1000.0)
    _bits(jitted(1.0), g(1.0))


def test_jitted_dense_output_follows_the_order_of_the_times_asked():
    from chainrule.scipy import integrate

    def f(k, t):
        sol = integrate.solve_ivp(lambda t, y, k: -k * y, (0.0, 2.0), onp.array([1.0]),
                                  args=(k,), t_eval=onp.array([2.0]), dense_output=True)
        return sol.sol(t)

    jitted = cr.jit(f)
    for t in ([0.5, 1.0], [1.0, 0.5], [0.5, 1.0]):  # (it failed on the second order)
        _bits(jitted(0.7, onp.array(t)), f(0.7, onp.array(t)))
    # other times: the program reads the interpolant at them, as eager evaluation does
    t = onp.array([1.5, 0.2])
    _bits(jitted(0.7, t), f(0.7, t))
    assert onp.allclose(jitted(0.7, t), onp.exp(-0.7 * t), rtol=1e-3)


def test_jitted_adjoint_solves_every_interval_between_the_times_asked():
    # the adjoint skips an interval of length zero (t_eval[0] == t0): a decision on values
    from chainrule.scipy import integrate

    def f(k, t_eval):
        sol = integrate.solve_ivp(lambda t, y, k: -k * y, (0.0, 2.0), onp.array([1.0]),
                                  args=(k,), t_eval=t_eval, rtol=1e-10, atol=1e-12)
        return np.sum(sol.y * onp.array([1.0, 2.0]))

    g = cr.grad(f)
    jitted = cr.jit(g)
    jitted(0.7, onp.array([0.0, 1.0]))
    t_eval = onp.array([0.5, 1.0])
    exact = -(0.5 * onp.exp(-0.35) + 2.0 * onp.exp(-0.7))
    assert jitted(0.7, t_eval) == pytest.approx(exact, rel=1e-8)
    assert g(0.7, t_eval) == pytest.approx(exact, rel=1e-8)


def test_jitted_derivative_in_a_limit_of_quad_refuses_an_infinite_one_as_eager_does():
    from chainrule.scipy import integrate

    g = cr.grad(lambda b: integrate.quad(lambda x: np.exp(-x), 0.0, b)[0])
    jitted = cr.jit(g)
    _bits(jitted(1.0), g(1.0))
    for call in (g, jitted):
        with pytest.raises(ValueError, match="infinite limit"):
            call(onp.inf)


def test_jitted_solvers_report_each_calls_error_estimate_and_optimum():
    # (plain numbers of the solve besides its solution: they were the first call's)
    from chainrule.scipy import integrate
    from chainrule.scipy import optimize as so

    def integral(k):
        return integrate.quad(lambda x, k: np.exp(-k * x**2), 0.0, 3.0, args=(k,))

    def optimum(p):
        res = so.minimize(lambda x, p: np.sum((x - p) ** 2) + p[0] ** 2, onp.zeros(2), args=(p,))
        return res.x, res.fun, res.jac

    for f, inputs in ((integral, (0.5, 2.0, 0.5)),
                      (optimum, (onp.array([1.0, 2.0]), onp.array([-1.0, 3.0])))):
        jitted = cr.jit(f)
        for x in inputs:
            for a, b in zip(jitted(x), f(x)):
                _bits(a, b)


# ----------------------------------------------------------------------------- divmod
# divmod of a traced value raised TypeError (Python's divmod: "unsupported operand";
# numpy.divmod: "no derivative rule"): it is a primitive of two answers, NumPy's own.
_DIVIDENDS = onp.array([3.5, -3.5, 0.0, -0.0, 7.0, -7.0, onp.inf, -onp.inf, onp.nan, 1e308,
                        5e-324])
_DIVMODS = {
    "divmod": lambda x, y: divmod(x, y),
    "rdivmod": lambda x, y: divmod(y, x),
    "np.divmod": lambda x, y: np.divmod(x, y),
    "numpy's divmod": lambda x, y: onp.divmod(x, y),
    "of a NumPy scalar": lambda x, y: divmod(x[1], y),  # (NumPy's scalar arithmetic)
}


def _with_warnings(f, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answer = f(*args)
    return answer, [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("name", sorted(_DIVMODS))
def test_jitted_divmod_is_numpys_at_edge_values(name):
    f = _DIVMODS[name]
    jitted = cr.jit(f)
    for y in (3.0, -3.0, 0.0, -0.0, onp.inf, onp.nan, 0.5, 3.0):
        for _ in range(2):
            (q, r), heard = _with_warnings(jitted, _DIVIDENDS, y)
            (q0, r0), heard0 = _with_warnings(f, _DIVIDENDS, y)
            _bits(q, q0)
            _bits(r, r0)
            assert type(q) is type(q0) and heard == heard0


def test_divmod_derivatives_are_floor_divides_and_remainders():
    x, y = onp.array([3.5, -2.2, 7.1]), onp.array([3.0, 1.5, -2.0])
    both = lambda x, y: np.sum(divmod(x, y)[0] + divmod(x, y)[1] ** 2)
    alone = lambda x, y: np.sum(np.floor_divide(x, y) + np.remainder(x, y) ** 2)
    for got, want in zip(cr.grad(both, (0, 1))(x, y), cr.grad(alone, (0, 1))(x, y)):
        onp.testing.assert_array_equal(got, want)
    _, (dq, dr) = cr.jvp(lambda y: np.divmod(x, y), (y,), (onp.ones(3),))
    onp.testing.assert_array_equal(dq, 0.0)
    onp.testing.assert_array_equal(dr, -onp.floor(x / y))
    onp.testing.assert_array_equal(cr.jit(cr.grad(both))(x, y), cr.grad(alone)(x, y))
    q, r = cr.vmap(lambda x: divmod(x, 2.0))(x)
    onp.testing.assert_array_equal(q, onp.floor_divide(x, 2.0))
    onp.testing.assert_array_equal(r, onp.remainder(x, 2.0))
