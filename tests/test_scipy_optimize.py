"""chainrule.scipy.optimize: implicit derivatives of SciPy's solvers against closed forms,
finite differences of the re-solved problem and each other, in both modes and to order 2."""

from __future__ import annotations

import warnings

import numpy as onp
import pytest
import scipy.optimize as sopt

import chainrule.numpy as np
from chainrule import grad, hessian, jacfwd, jacobian, jvp
from chainrule.extend import Box
from chainrule.scipy import optimize as so
from chainrule.test_util import check_grads

RNG = onp.random.default_rng(7)
A4 = RNG.normal(size=(4, 4))
A4 = A4 @ A4.T + 4.0 * onp.eye(4)  # SPD: the quadratic has one minimum
B4 = RNG.normal(size=4)


def quadratic(x, b, a=A4):
    return 0.5 * np.dot(x, np.dot(a, x)) - np.dot(b, x)


def central_difference(f, x, eps=1e-5):
    """The Jacobian of ``f`` at ``x`` by central differences of whole solves."""
    x = onp.asarray(x, dtype=float)
    cols = []
    for i in range(x.size):
        e = onp.zeros(x.size)
        e[i] = eps
        e = e.reshape(x.shape)
        plus = onp.asarray(f(x + e), dtype=float)
        minus = onp.asarray(f(x - e), dtype=float)
        cols.append(((plus - minus) / (2 * eps)).ravel())
    return onp.stack(cols, axis=-1)


# ----------------------------------------------------------------------------- minimize
TIGHT = {
    "Nelder-Mead": {"xatol": 1e-12, "fatol": 1e-14, "maxiter": 20000, "maxfev": 20000},
    "Powell": {"xtol": 1e-12, "ftol": 1e-14},
    "CG": {"gtol": 1e-10},
    "BFGS": {"gtol": 1e-10},
    "L-BFGS-B": {"gtol": 1e-12, "ftol": 1e-15},
    "TNC": {"gtol": 1e-12, "xtol": 1e-12},
    "Newton-CG": {"xtol": 1e-12},
    "trust-ncg": {"gtol": 1e-10},
    "trust-krylov": {"gtol": 1e-10},
    "trust-exact": {"gtol": 1e-10},
    "dogleg": {"gtol": 1e-10},
    "SLSQP": {"ftol": 1e-14},
    "COBYLA": {"tol": 1e-7, "maxiter": 20000},
    "trust-constr": {"gtol": 1e-12, "xtol": 1e-14},
}


@pytest.mark.parametrize("method", list(TIGHT))
def test_minimize_quadratic_closed_form_every_method(method):
    # x* = A^{-1} b, so dx*/db = A^{-1}; at a less tight solution the derivative is
    # still exact here (the Hessian is constant), so this checks the plumbing per method
    def argmin(b):
        return so.minimize(
            quadratic, onp.zeros(4), args=(b,), method=method, options=TIGHT[method]
        ).x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # trust-constr's / COBYLA's own chatter
        x = argmin(B4)
        rev = jacobian(argmin)(B4)
        fwd = jacfwd(argmin)(B4)
    assert onp.allclose(x, onp.linalg.solve(A4, B4), atol=1e-5)
    assert onp.allclose(rev, onp.linalg.inv(A4), rtol=1e-10, atol=1e-12)
    assert onp.allclose(fwd, onp.linalg.inv(A4), rtol=1e-10, atol=1e-12)


def ridge_logistic(w, lam, X, y):
    z = np.dot(X, w)
    return np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * lam * np.dot(w, w)


X_LOG = RNG.normal(size=(30, 5))
Y_LOG = (RNG.uniform(size=30) < 0.5).astype(float)


def logistic_argmin(lam, X=X_LOG, solver="auto"):
    # trust-exact solves to |grad| ~ 1e-12 (so finite differences of re-solves are exact
    # to ~1e-7), though it reports a failure to improve: the residual check accepts that
    return so.minimize(
        ridge_logistic,
        onp.zeros(5),
        args=(lam, X, Y_LOG),
        method="trust-exact",
        options={"gtol": 1e-13},
        implicit_solver=solver,
    ).x


def test_minimize_ridge_logistic_matches_hand_derived_and_resolves():
    lam = 0.7
    w = onp.asarray(logistic_argmin(lam))
    # hand-derived: grad = X^T(sigmoid(Xw) - y) + lam w = 0, so dw/dlam = -H^{-1} w with
    # H = X^T diag(p(1-p)) X + lam I
    p = 1.0 / (1.0 + onp.exp(-X_LOG @ w))
    hess = X_LOG.T @ (X_LOG * (p * (1 - p))[:, None]) + lam * onp.eye(5)
    by_hand = -onp.linalg.solve(hess, w)
    rev = jacobian(logistic_argmin)(lam)
    _, fwd = jvp(logistic_argmin, (lam,), (1.0,))
    fd = central_difference(logistic_argmin, onp.array(lam))[:, 0]
    assert onp.allclose(rev, by_hand, rtol=1e-8, atol=1e-12)
    assert onp.allclose(fwd, by_hand, rtol=1e-8, atol=1e-12)
    assert onp.allclose(rev, fd, rtol=1e-5, atol=1e-8)


def test_minimize_derivative_wrt_data_matrix_against_finite_differences():
    X = X_LOG[:8, :3]

    def argmin_of_x(xs):
        return so.minimize(
            ridge_logistic,
            onp.zeros(3),
            args=(0.5, xs, Y_LOG[:8]),
            method="trust-exact",
            options={"gtol": 1e-13},
        ).x

    jac = jacobian(argmin_of_x)(X).reshape(3, -1)
    fd = central_difference(argmin_of_x, X)
    assert onp.allclose(jac, fd, rtol=1e-5, atol=1e-7)
    assert onp.allclose(jacfwd(argmin_of_x)(X).reshape(3, -1), jac, rtol=1e-10, atol=1e-13)


def test_minimize_second_order_both_modes():
    # a scalar of the argmin, twice differentiated: reverse-over-reverse, forward-over-reverse
    def loss(lam):
        return np.sum(logistic_argmin(lam) ** 2)

    check_grads(loss, modes=["fwd", "rev"], order=2)(0.7)
    h_rev = grad(grad(loss))(0.7)
    h_fwd = jacfwd(grad(loss))(0.7)
    fd = (grad(loss)(0.7 + 1e-5) - grad(loss)(0.7 - 1e-5)) / 2e-5
    assert onp.allclose(h_rev, fd, rtol=1e-5)
    assert onp.allclose(h_fwd, h_rev, rtol=1e-9)


def test_minimize_pytree_args_and_result_fields():
    params = {"b": B4, "scale": 2.0}
    before = {k: onp.copy(v) for k, v in params.items()}

    def objective(x, p):
        return p["scale"] * quadratic(x, p["b"])

    def argmin(p):
        return so.minimize(objective, onp.zeros(4), args=(p,), options={"gtol": 1e-10}).x

    g = grad(lambda p: np.sum(argmin(p)))(params)
    # x* = A^{-1} b whatever the scale: d/db sum = 1^T A^{-1}, d/dscale = 0
    assert onp.allclose(g["b"], onp.linalg.solve(A4, onp.ones(4)), rtol=1e-9)
    assert abs(g["scale"]) < 1e-9
    assert all(onp.array_equal(before[k], params[k]) for k in params)
    g32 = grad(lambda b: np.sum(argmin({"b": b, "scale": 2.0})))(B4.astype(onp.float32))
    assert g32.dtype == onp.float32  # cotangents keep the input's dtype
    res = so.minimize(objective, onp.zeros(4), args=(params,))
    ref = sopt.minimize(lambda x: 2.0 * (0.5 * x @ A4 @ x - B4 @ x), onp.zeros(4))
    assert isinstance(res, sopt.OptimizeResult) and res.success
    assert onp.allclose(res.x, ref.x, atol=1e-5) and type(res.fun) is not type(None)


# ----------------------------------------------------------------------------- bounds
def bounded_argmin(objective, b):
    """argmin over 0 <= x0, x3 <= 1 and |x1|, |x2| <= 5 by L-BFGS-B, solved tightly."""
    bounds = [(0.0, 1.0), (-5.0, 5.0), (-5.0, 5.0), (0.0, 1.0)]
    return so.minimize(
        objective,
        onp.full(4, 0.5),
        args=(b,),
        method="L-BFGS-B",
        bounds=bounds,
        options={"gtol": 1e-12, "ftol": 1e-15},
    ).x


def test_minimize_bounds_active_set_zero_and_reduced_system():
    # the unconstrained minimum has x0 < 0 and x3 > 1: both are pinned at the bounds
    b = onp.array([-9.0, 0.5, 0.3, 9.0])
    argmin = lambda b: bounded_argmin(quadratic, b)

    x = onp.asarray(argmin(b))
    assert x[0] == 0.0 and x[3] == 1.0
    free, pinned = [1, 2], [0, 3]
    # free coordinates solve A_ff x_f = b_f - A_fp x_p: dx_f/db_f = A_ff^{-1}
    expected = onp.zeros((4, 4))
    expected[onp.ix_(free, free)] = onp.linalg.inv(A4[onp.ix_(free, free)])
    assert onp.allclose(
        x[free],
        onp.linalg.solve(A4[onp.ix_(free, free)], b[free] - A4[onp.ix_(free, pinned)] @ x[pinned]),
    )
    assert onp.allclose(jacobian(argmin)(b), expected, atol=1e-10)
    assert onp.allclose(jacfwd(argmin)(b), expected, atol=1e-10)
    # (the objective is quadratic: a wide step is exact, and L-BFGS-B's ~1e-11 noise small)
    assert onp.allclose(jacobian(argmin)(b), central_difference(argmin, b, 1e-3), atol=1e-6)


def test_minimize_bounds_second_order():
    # a non-quadratic objective with two coordinates pinned: the Hessian of sum(x^3) in b
    # by reverse-over-reverse and forward-over-reverse, and by differences of the gradient
    argmin = lambda b: bounded_argmin(lambda x, b: quadratic(x, b) + 0.05 * np.sum(x**4), b)

    b = onp.array([-9.0, 0.5, 0.3, 9.0])
    g = grad(lambda b: np.sum(argmin(b) ** 3))
    h_rev, h_fwd = jacobian(g)(b), jacfwd(g)(b)
    assert onp.allclose(h_rev, h_fwd, rtol=1e-9, atol=1e-12)
    assert onp.allclose(h_rev[[0, 3]], 0.0) and onp.allclose(h_rev[:, [0, 3]], 0.0)
    assert onp.allclose(h_rev, central_difference(g, b, eps=1e-4), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("method", ["TNC", "trust-constr", "Powell", "Nelder-Mead"])
def test_minimize_bounds_other_methods(method):
    def argmin(c):
        return so.minimize(
            lambda x, c: np.sum((x - c) ** 2) + 0.1 * x[0] * x[1],
            onp.array([0.3, 0.6]),
            args=(c,),
            method=method,
            bounds=[(0.0, 1.0), (0.0, 1.0)],
            options=TIGHT[method],
        ).x

    # (from (0.5, 0.5) SciPy's Nelder-Mead stops at the wrong corner (0, 1); start elsewhere)

    c = onp.array([0.4, 3.0])  # x1 pinned at 1; x0 = 0.4 - 0.05 x1, so dx0/dc0 = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jac = jacobian(argmin)(c)
    assert onp.allclose(jac, [[1.0, 0.0], [0.0, 0.0]], atol=1e-9)


def test_minimize_optimum_derivative_at_the_corrected_point_where_powell_stops_short():
    # (the solvers contract's case 1759) Powell stops ~7.6e-5 short in x1 of the minimum with
    # x0 held at its upper bound u: the envelope theorem's d fun/d theta, taken at Powell's
    # x, was 3.4e-4 off. Closed form: x1 = c1 - a10/a11 (u - c0) is free (its bound, which
    # moves with theta, is near but inactive), fun = 0.5 s (u - c0)^2 with the Schur
    # complement s = a00 - a01^2/a11, so d fun/d theta = -s (u - c0) v0.
    a = onp.array([[1.4140853106307016, 0.9000617589472416],
                   [0.9000617589472416, 4.7833780142338576]])
    c_at_0 = onp.array([-1.3251743845909625, 0.49025290214285827])
    v = onp.array([0.6693843426922086, 0.8184220375698278])
    upper = -2.096781179476679

    def objective(x, theta):
        c = c_at_0 + v * theta[0]
        return 0.5 * np.dot(x - c, np.dot(a, x - c))

    def optimum(theta):
        moving = -0.45170708322548436 + 0.8862440435289425 * (theta[0] + 1.1504891242977486)
        return so.minimize(
            objective, onp.array([-2.8525749399088656, 0.14205832541680108]), args=(theta,),
            method="Powell", bounds=[(None, upper), (moving, None)],
            options={"xtol": 1e-13, "ftol": 1e-15, "maxiter": 20000},
        ).fun

    theta = onp.array([-1.1504891242977486])
    schur = a[0, 0] - a[0, 1] ** 2 / a[1, 1]
    expected = -schur * (upper - (c_at_0[0] + v[0] * theta[0])) * v[0]
    assert onp.allclose(grad(optimum)(theta), expected, rtol=1e-6, atol=1e-9)
    assert onp.allclose(jacfwd(optimum)(theta), expected, rtol=1e-6, atol=1e-9)


# ----------------------------------------------------------------------------- matrix-free
def test_matrix_free_agrees_with_dense_both_modes_and_second_order():
    def argmin(b, solver):
        return so.minimize(
            quadratic,
            onp.zeros(4),
            args=(b,),
            method="BFGS",
            options={"gtol": 1e-10},
            implicit_solver=solver,
        ).x

    dense = onp.linalg.inv(A4)
    for solver in ("cg", "gmres"):
        assert onp.allclose(jacobian(argmin)(B4, solver), dense, rtol=1e-9, atol=1e-11)
        assert onp.allclose(jacfwd(argmin)(B4, solver), dense, rtol=1e-9, atol=1e-11)
    check_grads(
        lambda lam: np.sum(logistic_argmin(lam, solver="gmres") ** 3), modes=["fwd", "rev"], order=2
    )(0.7)


def test_large_problem_goes_matrix_free_by_default(monkeypatch):
    calls = []
    cg = so._spla.cg
    monkeypatch.setattr(so._spla, "cg", lambda *a, **k: calls.append(1) or cg(*a, **k))
    n = so.DENSE_LIMIT + 50
    d = onp.linspace(1.0, 3.0, n)

    def argmin(c):
        return so.minimize(
            lambda x, c: np.sum(d * (x - c) ** 2 + 0.25 * x**4),
            onp.zeros(n),
            args=(c,),
            method="L-BFGS-B",
            options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 1000},
        ).x

    c = onp.linspace(-1.0, 1.0, n)
    x = onp.asarray(argmin(c))
    # separable: 2 d (x - c) + x^3 = 0 -> dx/dc = 2 d / (2 d + 3 x^2), diagonal
    expected = 2 * d / (2 * d + 3 * x**2)
    g = grad(lambda c: np.sum(argmin(c)))(c)
    assert onp.allclose(g, expected, rtol=1e-8)
    assert calls  # the Hessian was never formed: conjugate gradients on Hessian-vector products


# ----------------------------------------------------------------------------- roots
def cube_root(t, method="hybr"):
    return so.root(lambda x, t: x**3 - t, onp.ones(1), args=(t,), method=method, tol=1e-14).x[0]


@pytest.mark.parametrize("method", ["hybr", "lm", "krylov", "df-sane"])
def test_root_cube_root_closed_form(method):
    # x = t^(1/3): dx/dt = t^(-2/3) / 3, d2x/dt2 = -2/9 t^(-5/3)
    t = 8.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert abs(grad(cube_root)(t, method) - t ** (-2 / 3) / 3) < 1e-9
        assert abs(jvp(lambda t: cube_root(t, method), (t,), (1.0,))[1] - 1 / 12) < 1e-9
    assert abs(grad(grad(cube_root))(t) + 2 / 9 * t ** (-5 / 3)) < 1e-10
    assert abs(jacfwd(grad(cube_root))(t) + 2 / 9 * t ** (-5 / 3)) < 1e-10


def test_root_vector_system_against_finite_differences_and_check_grads():
    def solution(theta):
        def residual(x, th):
            return np.stack([x[0] ** 2 + x[1] - th[0], x[0] - np.sin(x[1]) * th[1] - 0.2])

        return so.root(residual, onp.array([1.0, 0.5]), args=(theta,), tol=1e-14).x

    theta = onp.array([2.0, 0.8])
    jac = jacobian(solution)(theta)
    assert onp.allclose(jac, central_difference(solution, theta), rtol=1e-6, atol=1e-8)
    check_grads(lambda th: np.sum(solution(th) ** 2), modes=["fwd", "rev"], order=2)(theta)


@pytest.mark.parametrize("method", ["hybr", "krylov"])
def test_root_shapes_follow_scipy(method):
    # MINPACK (hybr, lm) flattens x0 and calls fun with flat x; the others keep x0's shape
    t = onp.full((2, 2), 4.0)
    shape = (4,) if method == "hybr" else (2, 2)
    sqrt = lambda t: (
        so.root(
            lambda x, t: x**2 - np.reshape(t, shape),
            onp.ones((2, 2)),
            args=(t,),
            method=method,
            tol=1e-12,
        ).x
    )
    ref = sopt.root(
        lambda x: x**2 - onp.reshape(t, shape), onp.ones((2, 2)), method=method, tol=1e-12
    )
    assert sqrt(t).shape == ref.x.shape == shape and onp.allclose(sqrt(t), 2.0)
    g = grad(lambda t: np.sum(sqrt(t)))(t)
    assert onp.allclose(g, 0.25)  # d sqrt(t)/dt = 1/(2 sqrt t)


@pytest.mark.parametrize("solver", [so.brentq, so.brenth, so.bisect, so.ridder, so.toms748])
def test_bracketing_solvers_closed_form_and_second_order(solver):
    def f(t):
        return solver(lambda x, t: x**3 - t, 0.0, 5.0, args=(t,), xtol=1e-14)

    assert abs(f(8.0) - 2.0) < 1e-12
    assert abs(grad(f)(8.0) - 1 / 12) < 1e-10
    assert abs(grad(grad(f))(8.0) + 2 / 9 * 8.0 ** (-5 / 3)) < 1e-10
    x, r = solver(lambda x, t: x**3 - t, 0.0, 5.0, args=(8.0,), full_output=True)
    assert r.converged and abs(r.root - 2.0) < 1e-10


def test_newton_scalar_and_array_and_root_scalar():
    f = lambda t: so.newton(lambda x, t: x**3 - t, 1.0, args=(t,), tol=1e-14)
    assert abs(grad(f)(8.0) - 1 / 12) < 1e-10
    assert abs(grad(grad(f))(8.0) + 2 / 9 * 8.0 ** (-5 / 3)) < 1e-10
    t = onp.array([8.0, 27.0, 1.0])
    fa = lambda t: so.newton(lambda x, t: x**3 - t, onp.ones(3), args=(t,), tol=1e-14)
    assert onp.allclose(jacobian(fa)(t), onp.diag(t ** (-2 / 3) / 3), atol=1e-10)
    assert onp.allclose(jacfwd(fa)(t), onp.diag(t ** (-2 / 3) / 3), atol=1e-10)
    for kw in ({"bracket": [0.0, 5.0]}, {"x0": 1.0, "fprime": lambda x, t: 3 * x**2}):
        rs = lambda t, kw=kw: (
            so.root_scalar(lambda x, t: x**3 - t, args=(t,), xtol=1e-14, **kw).root
        )
        assert abs(grad(rs)(8.0) - 1 / 12) < 1e-10
        check_grads(rs, modes=["fwd", "rev"], order=2)(8.0)


# ----------------------------------------------------------------------------- fixed_point
def test_fixed_point_closed_form_and_check_grads():
    # x = sqrt(t + x): x^2 - x - t = 0, x = (1 + sqrt(1 + 4t))/2, dx/dt = 1/sqrt(1 + 4t)
    fp = lambda t: so.fixed_point(lambda x, t: np.sqrt(t + x), 1.0, args=(t,), xtol=1e-14)
    t = 2.0
    assert abs(fp(t) - (1 + onp.sqrt(1 + 4 * t)) / 2) < 1e-12
    assert abs(grad(fp)(t) - 1 / onp.sqrt(1 + 4 * t)) < 1e-10
    check_grads(fp, modes=["fwd", "rev"], order=2)(t)
    fpa = lambda t: so.fixed_point(lambda x, t: np.cos(x) * t, onp.zeros(3), args=(t,), xtol=1e-14)
    tv = onp.array([0.3, 0.5, 0.7])
    x = onp.asarray(fpa(tv))
    # x = t cos x: dx/dt = cos x / (1 + t sin x)
    assert onp.allclose(jacobian(fpa)(tv), onp.diag(onp.cos(x) / (1 + tv * onp.sin(x))))


# ----------------------------------------------------------------------------- least squares
X_LS = RNG.normal(size=(12, 3))
Y_LS = RNG.normal(size=12)


def regression(X, y, **kw):
    return so.least_squares(
        lambda w, X, y: np.dot(X, w) - y,
        onp.zeros(3),
        args=(X, y),
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
        **kw,
    ).x


def test_least_squares_linear_regression_closed_form_in_y_and_x():
    # x* = (X^T X)^{-1} X^T y: dx*/dy = pinv(X); in X against autograd on the closed form
    import autograd
    import autograd.numpy as anp

    assert onp.allclose(
        jacobian(lambda y: regression(X_LS, y))(Y_LS), onp.linalg.pinv(X_LS), atol=1e-10
    )
    assert onp.allclose(
        jacfwd(lambda y: regression(X_LS, y))(Y_LS), onp.linalg.pinv(X_LS), atol=1e-10
    )
    closed = lambda X: anp.linalg.solve(X.T @ X, X.T @ Y_LS)
    expected = autograd.jacobian(closed)(X_LS)
    assert onp.allclose(jacobian(lambda X: regression(X, Y_LS))(X_LS), expected, atol=1e-9)
    assert onp.allclose(jacfwd(lambda X: regression(X, Y_LS))(X_LS), expected, atol=1e-9)


def robust_reference(y, loss):
    """The robust fit solved independently to |grad| ~ 1e-15 (Newton steps with autograd's
    exact derivatives): least_squares stops at |grad| ~ 1e-8, too coarse for differences."""
    import autograd
    import autograd.numpy as anp

    rho = {
        "soft_l1": lambda z: 2 * (anp.sqrt(1 + z) - 1),
        "cauchy": anp.log1p,
        "arctan": anp.arctan,
    }[loss]
    cost = lambda w: 0.5 * 0.25 * anp.sum(rho(((X_LS @ w - y) / 0.5) ** 2))
    w = sopt.least_squares(lambda w: X_LS @ w - y, onp.zeros(3), loss=loss, f_scale=0.5).x
    for _ in range(6):
        w = w - onp.linalg.solve(autograd.hessian(cost)(w), autograd.grad(cost)(w))
    assert onp.max(onp.abs(autograd.grad(cost)(w))) < 1e-13
    return w


def test_least_squares_robust_loss_kwargs_and_second_order():
    def fit(y, loss):
        return so.least_squares(
            lambda w, X, y=None: np.dot(X, w) - y,
            onp.zeros(3),
            loss=loss,
            f_scale=0.5,
            args=(X_LS,),
            kwargs={"y": y},
            xtol=1e-15,
            ftol=1e-15,
            gtol=1e-15,
        ).x

    for loss in ("soft_l1", "cauchy", "arctan"):
        assert onp.allclose(fit(Y_LS, loss), robust_reference(Y_LS, loss), atol=1e-7)
        jac = jacobian(lambda y, loss=loss: fit(y, loss))(Y_LS)
        for v in onp.random.default_rng(1).normal(size=(2, Y_LS.size)):  # directional FD
            plus, minus = (robust_reference(Y_LS + s * 1e-5 * v, loss) for s in (1, -1))
            assert onp.allclose(jac @ v, (plus - minus) / 2e-5, rtol=1e-5, atol=1e-7)
    # order 2: the modes agree; differences of the gradient are as coarse as the solve
    g = lambda y: grad(lambda y: np.sum(fit(y, "soft_l1") ** 2))(y)
    v = onp.linspace(-1.0, 1.0, Y_LS.size)  # Hessian-vector products along v
    hv_fwd = jvp(g, (Y_LS,), (v,))[1]  # forward over reverse
    hv_rev = grad(lambda y: np.dot(g(y), v))(Y_LS)  # reverse over reverse (H symmetric)
    hv_fd = (g(Y_LS + 1e-4 * v) - g(Y_LS - 1e-4 * v)) / 2e-4
    assert onp.allclose(hv_fwd, hv_rev, rtol=1e-9, atol=1e-12)
    assert onp.allclose(hv_rev, hv_fd, rtol=1e-3, atol=1e-3)


def test_least_squares_bounds_active_mask():
    bounds = ([-onp.inf, -onp.inf, 0.0], [onp.inf, onp.inf, onp.inf])
    y = X_LS @ onp.array([1.0, -1.0, -2.0])  # unconstrained w2 = -2 < 0: pinned at 0
    f = lambda y: regression(X_LS, y, bounds=bounds)
    res = so.least_squares(
        lambda w, X, y: np.dot(X, w) - y, onp.zeros(3), args=(X_LS, y), bounds=bounds
    )
    assert res.active_mask[2] == -1
    jac = jacobian(f)(y)
    assert onp.allclose(jac[2], 0.0)
    assert onp.allclose(jac[:2], onp.linalg.pinv(X_LS[:, :2]), atol=1e-9)
    assert onp.allclose(jac, central_difference(f, y), atol=1e-6)


# ----------------------------------------------------------------------------- no tape
def test_traced_evaluations_do_not_grow_with_iterations():
    # The solver's iterations run on plain values: the number of calls that see a traced
    # value is the same whether the solver takes 5 or 500 iterations.
    counts = {}

    def objective(x, lam):
        # lam is traced only in the derivative rules: the solver (and the gradient chainrule
        # hands it) sees plain lam
        key = "traced" if isinstance(lam, Box) else "plain"
        counts[key] = counts.get(key, 0) + 1
        return np.sum((x - 1.0) ** 4) + lam * np.dot(x, x)

    def run(gtol):
        counts.clear()
        grad(
            lambda lam: np.sum(
                so.minimize(
                    objective, onp.full(6, 5.0), args=(lam,), method="CG", options={"gtol": gtol}
                ).x
            )
        )(0.01)
        return dict(counts)

    # (gtol 1e-4: a looser solve of this flat quartic minimum is refused, as too far from
    # the solution to differentiate)
    loose, tight = run(1e-4), run(1e-10)
    assert tight["plain"] > 1.5 * loose["plain"]  # many more iterations
    assert tight["traced"] == loose["traced"]


# ----------------------------------------------------------------------------- errors
# each solver with a parameter t: through args=, and closed over by the function itself
SOLVERS_OF_T = {
    "minimize": (
        lambda f: so.minimize(f[0], onp.zeros(2), **f[1], options={"gtol": 1e-10}).x[0],
        lambda x, t: np.sum((x - t) ** 2 + 0.1 * x**4),
        1.0,
    ),
    "root": (
        lambda f: so.root(f[0], onp.ones(1), **f[1], tol=1e-13).x[0],
        lambda x, t: x**3 - t,
        8.0,
    ),
    "brentq": (lambda f: so.brentq(f[0], 0.0, 5.0, **f[1]), lambda x, t: x**3 - t, 8.0),
    "root_scalar": (
        lambda f: so.root_scalar(f[0], bracket=[0, 5], **f[1]).root,
        lambda x, t: x**3 - t,
        8.0,
    ),
    "newton": (
        lambda f: so.newton(f[0], 1.0, **f[1], fprime=lambda x, *a: 3 * x**2),
        lambda x, t: x**3 - t,
        8.0,
    ),
    "least_squares": (
        lambda f: so.least_squares(f[0], onp.zeros(1), **f[1]).x[0],
        lambda w, t: np.exp(w) - t,
        2.0,
    ),
    "fixed_point": (
        lambda f: so.fixed_point(f[0], 1.0, **f[1], xtol=1e-14),
        lambda x, t: np.sqrt(t + x),
        2.0,
    ),
}


@pytest.mark.parametrize("name", list(SOLVERS_OF_T))
def test_closed_over_traced_value_is_lifted_into_args(name):
    # the closure's traced values become arguments of the solve: the same derivatives, to
    # order 2, as passing them in args=
    solve, residual, t = SOLVERS_OF_T[name]
    by_args = lambda t: solve((residual, {"args": (t,)}))
    closed = lambda t: solve((lambda x: residual(x, t), {}))
    for d in (grad, lambda f: grad(grad(f))):
        assert onp.allclose(d(closed)(t), d(by_args)(t), rtol=1e-10, atol=1e-12)
    assert onp.allclose(jacfwd(closed)(t), grad(by_args)(t), rtol=1e-10)


def test_traced_value_reached_indirectly_is_refused_with_the_fix():
    # t sits in the closure of a helper the objective calls: not liftable, so refused
    def indirect(t):
        def shift(x):
            return x - t

        return so.minimize(lambda x: np.sum(shift(x) ** 2), onp.zeros(2)).x[0]

    with pytest.raises(so.ClosedOverTracedValueError, match="args="):
        grad(indirect)(2.0)


def test_traced_default_arguments_are_lifted_like_closure_cells():
    # x* = t^(1/3): dx*/dt = 1 / (3 t^(2/3)) = 1/12 at t = 8; argmin of |x - t|^2 is t
    cube_root = lambda t: so.brentq(lambda x, s=t: x**3 - s, 0.0, 5.0)
    argmin = lambda t: so.minimize(lambda x, s=t: np.sum((x - s) ** 2), onp.zeros(2)).x[0]
    for d in (grad, jacfwd):
        assert d(cube_root)(8.0) == pytest.approx(1 / 12, rel=1e-10)
        assert d(argmin)(2.0) == pytest.approx(1.0, rel=1e-8)
    assert grad(grad(cube_root))(8.0) == pytest.approx(-2 / 9 * 8.0 ** (-5 / 3), rel=1e-8)


def test_not_converged_raises_naming_the_fix():
    def argmin(lam):
        return so.minimize(
            ridge_logistic,
            onp.full(5, 3.0),
            args=(lam, X_LOG, Y_LOG),
            method="BFGS",
            options={"maxiter": 2},
        ).x

    x = argmin(0.7)  # plain values: SciPy's convention (success=False, no error)
    assert x.shape == (5,)
    with pytest.raises(so.NotConvergedError, match="maxiter"):
        grad(lambda lam: np.sum(argmin(lam)))(0.7)
    with pytest.raises(so.NotConvergedError, match="did not converge"):
        grad(
            lambda t: so.root(
                lambda x, t: x**3 - t, onp.ones(1), args=(t,), options={"maxfev": 2}
            ).x[0]
        )(8.0)


def test_singular_implicit_system_raises():
    # f = (x0 + x1 - c)^2: a line of minima, the Hessian is singular
    def argmin(c, solver="auto"):
        return so.minimize(
            lambda x, c: (x[0] + x[1] - c) ** 2, onp.zeros(2), args=(c,), implicit_solver=solver
        ).x

    assert abs(float(onp.sum(argmin(1.0))) - 1.0) < 1e-6
    with pytest.raises(so.SingularSystemError, match="not an isolated"):
        jacobian(argmin)(1.0)
    with pytest.raises(so.SingularSystemError, match="not an isolated"):
        jacfwd(argmin)(1.0)


def test_unsupported_inputs_raise():
    with pytest.raises(NotImplementedError, match="constraints"):
        so.minimize(
            quadratic, onp.zeros(4), args=(B4,), constraints=[{"type": "eq", "fun": lambda x: x[0]}]
        )
    with pytest.raises(ValueError, match="implicit_solver"):
        so.minimize(quadratic, onp.zeros(4), args=(B4,), implicit_solver="lu")


def test_plain_calls_match_scipy_and_hessian_of_a_value_function():
    # without traced values the answers are SciPy's own
    assert so.brentq(lambda x: x**2 - 2, 0, 2) == sopt.brentq(lambda x: x**2 - 2, 0, 2)
    # bilevel: the Hessian of an outer loss through the argmin, against finite differences
    outer = lambda b: np.sum(
        so.minimize(quadratic, onp.zeros(4), args=(b,), options={"gtol": 1e-10}).x ** 2
    )
    h = hessian(outer)(B4)
    a_inv = onp.linalg.inv(A4)
    assert onp.allclose(h, 2 * a_inv.T @ a_inv, rtol=1e-9)


# ----------------------------------------------------------------------------- check_grads
CHECKED = {
    "minimize": (lambda lam: np.sum(logistic_argmin(lam) ** 2), 0.7),
    "root": (lambda t: cube_root(t) ** 2, 8.0),
    "root_scalar": (
        lambda t: so.root_scalar(lambda x, t: x**3 - t, args=(t,), bracket=[0, 5], xtol=1e-14).root,
        8.0,
    ),
    "brentq": (
        lambda t: so.brentq(lambda x, t: np.exp(x) - t * x - 2.0, 0.0, 4.0, args=(t,), xtol=1e-14),
        0.5,
    ),
    "newton": (
        lambda t: so.newton(lambda x, t: np.exp(x) - t * x - 2.0, 1.0, args=(t,), tol=1e-14),
        0.5,
    ),
    "fixed_point": (
        lambda t: so.fixed_point(lambda x, t: np.cos(x) * t, 0.3, args=(t,), xtol=1e-14),
        0.6,
    ),
    "least_squares": (lambda y: np.sum(regression(X_LS, y) ** 2), Y_LS),
}


@pytest.mark.parametrize("name", list(CHECKED))
def test_check_grads_each_public_function(name):
    f, x = CHECKED[name]
    check_grads(f, modes=["fwd", "rev"], order=2)(x)


def test_minimize_user_jac_true_and_hess():
    def value_and_gradient(x, b):
        return quadratic(x, b), np.dot(A4, x) - b

    for kw in (
        {"jac": True},
        {"method": "Newton-CG", "jac": lambda x, b: A4 @ x - b, "hess": lambda x, b: A4},
    ):
        argmin = lambda b, kw=kw: (
            so.minimize(
                value_and_gradient if kw["jac"] is True else quadratic,
                onp.zeros(4),
                args=(b,),
                options={"xtol": 1e-12} if "hess" in kw else {"gtol": 1e-10},
                **kw,
            ).x
        )
        assert onp.allclose(jacobian(argmin)(B4), onp.linalg.inv(A4), atol=1e-10)


def test_least_squares_not_converged_raises():
    with pytest.raises(so.NotConvergedError, match="max_nfev"):
        grad(
            lambda t: so.least_squares(
                lambda w, t: np.exp(w) - t, onp.array([5.0]), args=(t,), max_nfev=1
            ).x[0]
        )(2.0)


def test_module_docstring_examples():
    import doctest

    result = doctest.testmod(so, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted >= 2 and result.failed == 0


def test_tensor_front_end_parameters():
    # Tensor parameters (in args or closed over): the solution is a Tensor; backward reaches them
    from chainrule import Tensor

    t = Tensor(onp.array([1.0, 2.0]))
    res = so.minimize(
        lambda x, t: np.sum((x - t) ** 2 + 0.1 * x**4),
        onp.zeros(2),
        args=(t,),
        options={"gtol": 1e-12},
    )
    assert isinstance(res.x, Tensor) and isinstance(res.fun, Tensor)
    assert isinstance(res.jac, Tensor)
    (res.x**2).sum().backward()
    x = onp.asarray(res.x.detach().numpy())
    # 2 (x - t) + 0.4 x^3 = 0: dx/dt = 1 / (1 + 0.6 x^2); d(sum x^2)/dt = 2 x dx/dt
    assert onp.allclose(onp.asarray(t.grad.numpy()), 2 * x / (1 + 0.6 * x**2), rtol=1e-9)
    # the optimal value, by the envelope theorem: d/dt of min_x |x - t|^2 + 3 sum(t) is 3
    u = Tensor(onp.array([1.0, 2.0]))
    so.minimize(lambda x, u: np.sum((x - u) ** 2) + 3.0 * np.sum(u), onp.zeros(2),
                args=(u,)).fun.backward()
    assert onp.allclose(onp.asarray(u.grad.numpy()), 3.0)
    s = Tensor(8.0)
    root = so.brentq(lambda x: x**3 - s, 0.0, 5.0)
    root.backward()
    assert abs(float(s.grad.numpy()) - 1 / 12) < 1e-10


def test_newton_not_converged_raises():
    with pytest.raises(so.NotConvergedError, match="maxiter"):
        grad(lambda t: so.newton(lambda x, t: x**3 - t, 100.0, args=(t,), maxiter=3, disp=False))(
            8.0
        )


# ----------------------------------------------------------------------------- minimize_scalar
def _parabola(x, a, b, c):
    return b * (x - a) ** 2 + c * x  # x* = a - c / (2 b)


SCALAR_METHODS = [
    ("brent", {}),
    ("golden", {}),
    ("bounded", {"bounds": (-10.0, 10.0), "options": {"xatol": 1e-10}}),
]


@pytest.mark.parametrize("method, extra", SCALAR_METHODS)
def test_minimize_scalar_matches_the_closed_form_to_second_order(method, extra):
    def argmin(p):
        return so.minimize_scalar(_parabola, args=(p[0], p[1], p[2]), method=method, **extra).x

    p = onp.array([1.0, 2.0, 0.6])
    a, b, c = p
    exact = onp.array([1.0, c / (2 * b**2), -1 / (2 * b)])
    exact_hessian = onp.array(
        [[0.0, 0.0, 0.0], [0.0, -c / b**3, 1 / (2 * b**2)], [0.0, 1 / (2 * b**2), 0.0]]
    )
    assert argmin(p) == pytest.approx(a - c / (2 * b), abs=1e-7)
    assert onp.allclose(grad(argmin)(p), exact, rtol=1e-9)
    assert onp.allclose(jacfwd(argmin)(p), exact, rtol=1e-9)
    assert onp.allclose(hessian(argmin)(p), exact_hessian, atol=1e-9)
    assert onp.allclose(jacfwd(grad(argmin))(p), exact_hessian, atol=1e-9)


def test_minimize_scalar_of_a_non_quadratic_matches_finite_differences_of_the_solve():
    def argmin(p):
        f = lambda x: p[0] * np.cosh(x - p[1]) + np.sin(p[2] * x)  # closed over
        return so.minimize_scalar(f, bracket=(-1.0, 0.0, 2.0), tol=1e-12).x

    # (a minimum is located to about sqrt(eps) in x: the differences use a wide step)
    p = onp.array([1.5, 0.3, 0.8])
    fd = central_difference(argmin, p, eps=1e-3)[0]
    assert onp.allclose(grad(argmin)(p), fd, rtol=1e-4, atol=1e-7)
    assert onp.allclose(jacfwd(argmin)(p), fd, rtol=1e-4, atol=1e-7)


def test_minimize_scalar_check_grads():
    # Brent's parabolic steps find a parabola's minimum to rounding, as check_grads' small
    # difference steps need
    argmin = lambda p: so.minimize_scalar(_parabola, args=(p[0], p[1], p[2])).x
    check_grads(argmin, modes=["fwd", "rev"], order=2)(onp.array([1.0, 2.0, 0.6]))


@pytest.mark.parametrize("side", ["lower", "upper"])
def test_bounded_minimum_at_a_bound_moves_with_that_bound(side):
    # the parabola's minimum a - c/(2b) = 0.85 lies outside the bounds: x* is the bound
    lo, hi = (1.2, 3.0) if side == "lower" else (-1.0, 0.5)

    def argmin(q):  # q = (lo, hi, a, b, c)
        bounds = (q[0], q[1])
        return so.minimize_scalar(
            _parabola,
            bounds=bounds,
            args=(q[2], q[3], q[4]),
            method="bounded",
            options={"xatol": 1e-10},
        ).x

    q = onp.array([lo, hi, 1.0, 2.0, 0.6])
    exact = onp.zeros(5)
    exact[0 if side == "lower" else 1] = 1.0
    assert argmin(q) == pytest.approx(lo if side == "lower" else hi, abs=1e-7)
    assert onp.allclose(grad(argmin)(q), exact, atol=1e-12)
    assert onp.allclose(jacfwd(argmin)(q), exact, atol=1e-12)
    assert onp.allclose(central_difference(argmin, q, eps=1e-4)[0], exact, atol=1e-6)


def test_bounded_minimum_just_inside_a_bound_is_interior():
    # x* = 1 - 1e-6 lies inside (hi = 1): f' at the bound points back in, so x* moves with
    # a (dx*/da = 1), not with the bound
    argmin = lambda q: (
        so.minimize_scalar(
            lambda x: (x - q[0]) ** 2,
            bounds=(0.0, q[1]),
            method="bounded",
            options={"xatol": 1e-12},
        ).x
    )
    q = onp.array([1.0 - 1e-6, 1.0])
    assert onp.allclose(grad(argmin)(q), [1.0, 0.0], atol=1e-9)


def test_minimize_scalar_bracket_does_not_move_the_minimum_and_refuses_non_solutions():
    argmin = lambda t: so.minimize_scalar(lambda x: (x - 2.0) ** 2 + t * x, bracket=(t, t + 1)).x
    assert grad(argmin)(0.5) == pytest.approx(-0.5, rel=1e-9)  # only through t * x
    with pytest.raises(so.NotConvergedError, match="minimize_scalar"):
        grad(
            lambda t: (
                so.minimize_scalar(
                    lambda x: np.cosh(x - t),
                    bounds=(-5.0, 5.0),
                    method="bounded",
                    options={"maxiter": 3},
                ).x
            )
        )(1.0)


# ----------------------------------------------------------------------------- traced bounds
def _clipped(u, lo, b):
    # argmin of |x|^2 / 2 - b.x in a box: x* = clip(b, lower, upper)
    bounds = [(lo, u), (lo, u), (None, u), (lo, None)]
    f = lambda x, b: 0.5 * np.sum(x**2) - np.dot(b, x)
    return so.minimize(f, onp.zeros(4), args=(b,), bounds=bounds).x


def test_minimize_at_an_active_bound_moves_with_that_bound():
    b = onp.array([1.0, -2.0, 0.5, 3.0])
    u, lo = 0.8, -1.0  # x* = (0.8, -1.0, 0.5, 3.0): x0 at u, x1 at lo, x2 and x3 free
    assert onp.allclose(_clipped(u, lo, b), [0.8, -1.0, 0.5, 3.0], atol=1e-8)
    by_u, by_lo, by_b = onp.eye(4)[0], onp.eye(4)[1], onp.diag([0.0, 0.0, 1.0, 1.0])
    for jac in (jacobian, jacfwd):
        got = jac(_clipped, (0, 1, 2))(u, lo, b)
        assert onp.allclose(got[0], by_u) and onp.allclose(got[1], by_lo)
        assert onp.allclose(got[2], by_b)  # (x3, bounded below only, is free: d/db3 = 1)
    fd = central_difference(lambda q: _clipped(q[0], q[1], b), onp.array([u, lo]))
    assert onp.allclose(fd, onp.stack([by_u, by_lo], axis=1), atol=1e-6)


# ----------------------------------------------------------------------------- bounds: which hold
# A bound holds x* where its multiplier (the gradient pushing x* out) is clearly positive,
# not where x* is merely near it; a multiplier zero to the solution's precision is refused.
NEAR_BOUND_METHODS = {
    "L-BFGS-B": {"gtol": 1e-12, "ftol": 1e-15},
    "SLSQP": {"ftol": 1e-14},
    "TNC": {"gtol": 1e-12, "xtol": 1e-12},
    "trust-constr": {"gtol": 1e-12, "xtol": 1e-14},
    "Powell": {"xtol": 1e-12, "ftol": 1e-14},
}


def _argmin_above(a, method, lower=1000.0):
    return so.minimize(
        lambda x, a: np.sum((x - a) ** 2),
        onp.array([1001.0]),
        args=(a,),
        method=method,
        bounds=[(lower, None)],
        options=NEAR_BOUND_METHODS[method],
    ).x[0]


@pytest.mark.parametrize("method", list(NEAR_BOUND_METHODS))
def test_interior_minimum_near_a_bound_moves_with_its_parameter(method):
    # x* = a = 1000.0005 is 5e-4 inside the bound 1000 (within 1e-6 (1 + |bound|) of it):
    # the gradient pushes nowhere, so x* is interior and dx*/da = 1 (was 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert grad(_argmin_above)(1000.0005, method) == pytest.approx(1.0, abs=1e-6)
        assert jacfwd(_argmin_above)(1000.0005, method) == pytest.approx(1.0, abs=1e-6)
        # beyond the bound the multiplier is 2 (1000 - a) > 0: held, dx*/da = 0
        assert grad(_argmin_above)(999.9995, method) == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("method", ["L-BFGS-B", "TNC", "SLSQP"])
def test_weakly_active_bound_is_refused(method):
    # a = 1000: x* = 1000 sits on the bound with a zero multiplier; dx*/da is 1 from above
    # and 0 from below, so there is no derivative
    with pytest.raises(so.DegenerateBoundError, match="weakly active"):
        grad(_argmin_above)(1000.0, method)
    with pytest.raises(so.DegenerateBoundError, match=r"x\[0\]"):
        jacfwd(_argmin_above)(1000.0, method)
    assert float(_argmin_above(1000.0, method)) == pytest.approx(1000.0)  # plain: SciPy's


@pytest.mark.parametrize("method", ["trf", "dogbox"])
def test_least_squares_interior_minimum_near_a_bound_moves_and_a_weak_one_is_refused(method):
    def fit(a):
        return so.least_squares(
            lambda w, a: w - a, onp.array([3.0]), args=(a,), bounds=([1.0], [5.0]),
            method=method, xtol=1e-15, ftol=1e-15, gtol=1e-15,
        ).x[0]

    assert grad(fit)(1.0 + 1e-7) == pytest.approx(1.0, abs=1e-9)  # inside by 1e-7: free
    assert grad(fit)(0.5) == pytest.approx(0.0, abs=1e-12)  # held at 1
    with pytest.raises(so.DegenerateBoundError):
        grad(fit)(1.0)


def test_minimize_scalar_weakly_active_bound_is_refused():
    argmin = lambda a: so.minimize_scalar(
        lambda x, a: (x - a) ** 2, bounds=(0.0, 1.0), args=(a,), method="bounded",
        options={"xatol": 1e-12},
    ).x
    assert grad(argmin)(0.5) == pytest.approx(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (held at the bound: x* does not depend on a)
        assert grad(argmin)(1.5) == pytest.approx(0.0)
    with pytest.raises(so.DegenerateBoundError, match="upper bound"):
        grad(argmin)(1.0)


def test_bounds_a_method_ignores_are_ignored_by_the_derivative():
    # BFGS cannot handle bounds: SciPy warns and solves without them, x* = a = 2 outside
    # [0, 1], and the derivative is the unbounded one (was: refused as no solution)
    argmin = lambda a: so.minimize(lambda x, a: np.sum((x - a) ** 2), onp.zeros(1), args=(a,),
                                   method="BFGS", bounds=[(0.0, 1.0)]).x[0]
    with pytest.warns(RuntimeWarning, match="cannot handle bounds"):
        assert argmin(2.0) == pytest.approx(2.0)
    with pytest.warns(RuntimeWarning, match="cannot handle bounds"):
        assert grad(argmin)(2.0) == pytest.approx(1.0)


def test_a_residual_on_the_huber_switch_is_refused():
    # four points, three parameters: the fit settles with residual 2 exactly at f_scale,
    # where rho'' jumps; its derivative depends on the side (central differences at 1e-3,
    # 1e-5 and 1e-6 gave 2.1, -6.0 and 5861 for one entry), so it is refused
    t = onp.linspace(0.0, 1.0, 4)
    design = onp.stack([t**0, t, t**2], axis=1)
    y0 = onp.array([-0.047150949612106724, 1.3743771009252639, -1.218518062616459,
                    -0.5570610908105218])
    dy = onp.array([-0.8247486163856689, -0.4970775069075421, -0.13469302266899433,
                    -0.2439978249586191])

    def fit(th):
        return so.least_squares(
            lambda w, th: np.dot(design, w) + 0.2 * np.tanh(w[0] * t) - (y0 + dy * th),
            onp.zeros(3), args=(th,), method="dogbox", loss="huber", f_scale=0.7,
            xtol=1e-15, ftol=1e-15, gtol=1e-15).x

    theta = 0.07099273987876452
    res = sopt.least_squares(
        lambda w: design @ w + 0.2 * onp.tanh(w[0] * t) - (y0 + dy * theta), onp.zeros(3),
        method="dogbox", loss="huber", f_scale=0.7, xtol=1e-15, ftol=1e-15, gtol=1e-15)
    assert abs(abs(res.fun[2]) / 0.7 - 1.0) < 1e-6  # (on it, to the fit's precision)
    for d in (jacobian, jacfwd):
        with pytest.raises(so.NotDifferentiableError, match="Huber loss switches"):
            d(fit)(theta)
    assert issubclass(so.DegenerateBoundError, so.NotDifferentiableError)


# ----------------------------------------------------------------------------- not solutions
def test_interior_point_result_inside_an_active_bound_is_held():
    # trust-constr stops at x = 0.9996, inside the upper bound 1 that holds x* (the
    # unconstrained minimum a = 2 lies beyond it): dx*/da = 0 (was 1)
    argmin = lambda a: so.minimize(
        lambda x, a: np.sum((x - a) ** 2), onp.array([0.5]), args=(a,),
        method="trust-constr", bounds=[(0.0, 1.0)],
    ).x[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert 0.999 < argmin(2.0) < 1.0
        assert grad(argmin)(2.0) == pytest.approx(0.0, abs=1e-12)
        assert grad(argmin)(2.0 + 1e-3) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    "objective",
    [
        lambda x, a: -a * x[0] ** 2,  # unbounded below: L-BFGS-B "converges" at 1.6e144
        lambda x, a: np.exp(-a * x[0]),  # decreasing to an asymptote: "converges" at 11.6
        lambda x, a: -np.log(1.0 + a * x[0] ** 2),
    ],
)
def test_converged_result_that_is_no_solution_is_refused(objective):
    argmin = lambda a: so.minimize(objective, onp.ones(1), args=(a,), method="L-BFGS-B").x[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(so.NotConvergedError, match="reported success"):
            grad(argmin)(1.0)
        with pytest.raises(so.NotConvergedError, match="not a solution"):
            jacfwd(argmin)(1.0)


def test_precision_loss_advice_says_tightening_does_not_help():
    # a large constant in the objective: BFGS cannot see the decrease it needs below
    # |grad| ~ 5e-6, so gtol=1e-7 ends in "precision loss" 1.6e-6 from the solution
    f = lambda x, a: 1e10 + np.sum(np.cosh(x - a) + 0.1 * (x - a) ** 4 + 0.3 * x[0] * x[1])
    argmin = lambda a, gtol: so.minimize(
        f, onp.zeros(2), args=(a,), method="BFGS", options={"gtol": gtol}
    ).x[0]
    with pytest.raises(so.NotConvergedError, match="will not help") as error:
        grad(argmin)(1.0, 1e-7)
    assert "precision loss" in str(error.value) and "gtol" in str(error.value)
    assert "Tighten" not in str(error.value)
    # the advice works: loosened to what was reached, SciPy reports success
    assert grad(argmin)(1.0, 1e-5) == pytest.approx(0.67021, abs=1e-5)


def test_failed_run_at_a_solution_is_differentiated():
    # BFGS at gtol 1e-10 on a large offset reports precision loss at |grad| 7e-10: a
    # Newton step of 1e-9, a solution to working precision
    f = lambda x, a: 1e6 + np.sum(np.cosh(x - a) + 0.1 * (x - a) ** 4 + 0.3 * x[0] * x[1])
    argmin = lambda a: so.minimize(f, onp.zeros(2), args=(a,), method="BFGS",
                                   options={"gtol": 1e-10}).x[0]
    assert not so.minimize(f, onp.zeros(2), args=(1.0,), options={"gtol": 1e-10}).success
    tight = lambda a: so.minimize(f, onp.zeros(2), args=(a,), method="trust-exact",
                                  options={"gtol": 1e-13}).x[0]
    assert grad(argmin)(1.0) == pytest.approx(grad(tight)(1.0), rel=1e-7)


# ----------------------------------------------------------------------------- result fields
def test_grad_of_the_optimal_value_by_the_envelope_theorem():
    # V(a) = min_x (x - a)^2 + 3a = 3a: dV/da = 3 (was 0.0 with "independent of input")
    value = lambda a: so.minimize(lambda x, a: np.sum((x - a) ** 2) + 3.0 * a, onp.zeros(2),
                                  args=(a,)).fun
    assert grad(value)(1.5) == pytest.approx(3.0, rel=1e-12)
    assert jacfwd(value)(1.5) == pytest.approx(3.0, rel=1e-12)
    # least_squares: cost(y) = 1/2 |r(w*, y)|^2 with r = X w - y: d cost/dy = -r at w*
    cost = lambda y: so.least_squares(lambda w, y: np.dot(X_LS, w) - y, onp.zeros(3),
                                      args=(y,)).cost
    r = X_LS @ onp.linalg.lstsq(X_LS, Y_LS, rcond=None)[0] - Y_LS
    assert onp.allclose(grad(cost)(Y_LS), -r, atol=1e-10)
    assert onp.allclose(jacfwd(cost)(Y_LS), -r, atol=1e-10)


def test_optimal_value_second_order_and_against_re_solving():
    # V(b) = min_x x^T A x / 2 - b^T x + |x|^4 / 4: a non-quadratic value function
    def value(b):
        return so.minimize(lambda x, b: quadratic(x, b) + 0.25 * np.sum(x**2) ** 2,
                           onp.zeros(4), args=(b,), method="trust-exact",
                           options={"gtol": 1e-13}).fun

    g = grad(value)(B4)
    assert onp.allclose(g, central_difference(value, B4, 1e-4)[0], rtol=1e-7, atol=1e-9)
    h = hessian(value)(B4)
    assert onp.allclose(h, central_difference(grad(value), B4, 1e-5), rtol=1e-6, atol=1e-8)
    assert onp.allclose(jacfwd(grad(value))(B4), h, rtol=1e-9, atol=1e-12)


def test_optimal_value_follows_a_traced_bound_that_holds_the_minimum():
    # min over x >= lo of (x - a)^2: V = (lo - a)^2 while lo > a: dV/dlo = 2 (lo - a)
    value = lambda lo, a: so.minimize(lambda x, a: np.sum((x - a) ** 2), onp.array([5.0]),
                                      args=(a,), bounds=[(lo, None)]).fun
    d_lo, d_a = grad(value, argnum=(0, 1))(2.0, 0.5)
    assert d_lo == pytest.approx(3.0, rel=1e-7) and d_a == pytest.approx(-3.0, rel=1e-7)


def test_optimal_value_of_a_flat_valley_is_differentiable():
    # a line of minima: x* has no derivative, V(c) = 2c has one (no linear solve needed)
    solve = lambda c: so.minimize(lambda x, c: (x[0] + x[1] - c) ** 2 + 2.0 * c, onp.zeros(2),
                                  args=(c,))
    assert grad(lambda c: solve(c).fun)(1.0) == pytest.approx(2.0, rel=1e-10)
    with pytest.raises(so.SingularSystemError):
        grad(lambda c: solve(c).x[0])(1.0)


def test_fields_of_a_differentiated_result_are_traced_or_refused():
    def fields(b, method="BFGS"):
        res = so.minimize(quadratic, onp.zeros(4), args=(b,), method=method,
                          options={"gtol": 1e-11})
        return res

    # jac: the gradient at x*, zero along the solution path whatever b
    assert onp.allclose(jacobian(lambda b: fields(b).jac)(B4), 0.0, atol=1e-9)
    # trust-exact's hess: A whatever b; its value is SciPy's
    res = fields(B4, "trust-exact")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (A does not depend on b)
        assert onp.allclose(jacobian(lambda b: fields(b, "trust-exact").hess)(B4), 0.0)
    seen = {}

    def spy(b):
        r = fields(b)
        seen.update(r)
        return np.sum(r.x)

    grad(spy)(B4)
    refused = seen["hess_inv"]
    assert "refused" in repr(refused) and "hess_inv" in repr(refused)
    for use in (lambda: onp.asarray(refused), lambda: refused @ B4, lambda: refused.shape,
                lambda: float(refused), lambda: refused[0], lambda: np.dot(refused, B4)):
        with pytest.raises(TypeError, match="hess_inv"):
            use()
    assert not hasattr(refused, "_repr_html_")  # (protocols probed by getattr's default)
    assert isinstance(seen["nit"], int) and seen["success"] is True  # counts, flags: plain
    assert "refused" in repr(so.OptimizeResult(seen))  # a result still prints
    assert type(res.hess) is onp.ndarray  # (plain calls: SciPy's fields)


def test_least_squares_fields_carry_their_derivatives():
    def fields(y):
        return so.least_squares(lambda w, y: np.dot(X_LS, w) - y, onp.zeros(3), args=(y,),
                                xtol=1e-15, ftol=1e-15, gtol=1e-15)

    # fun = X w* - y = (P - I) y with P = X pinv(X); jac = X whatever y; grad = X^T r = 0
    projection = X_LS @ onp.linalg.pinv(X_LS)
    assert onp.allclose(jacobian(lambda y: fields(y).fun)(Y_LS),
                        projection - onp.eye(Y_LS.size), atol=1e-10)
    assert onp.allclose(jacfwd(lambda y: fields(y).fun)(Y_LS),
                        projection - onp.eye(Y_LS.size), atol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (J = X does not depend on y)
        assert onp.allclose(jacobian(lambda y: fields(y).jac)(Y_LS), 0.0)
    assert onp.allclose(jacobian(lambda y: fields(y).grad)(Y_LS), 0.0, atol=1e-10)


def test_root_residual_field_is_traced():
    # res.fun = F(x*(t), t): traced (its derivative along the solution is 0, not a
    # constant's by accident); fjac, r, qtf (MINPACK's factors) are refused
    seen = {}

    def spy(t):
        res = so.root(lambda x, t: x**3 - t, onp.ones(1), args=(t,), tol=1e-14)
        seen.update(res)
        return res.fun[0]

    assert abs(grad(spy)(8.0)) < 1e-12
    assert isinstance(seen["fun"], Box)
    assert isinstance(seen["fjac"], so.RefusedField) and isinstance(seen["nfev"], int)


# ----------------------------------------------------------------------------- jac=grad(f)
def test_jac_and_hess_made_from_an_objective_closing_over_a_traced_value():
    # how SciPy users write it: the gradient of f passed as jac, f closing over a
    def argmin(a, method, **kw):
        f = lambda x: np.sum((x - a) ** 2 + 0.1 * x**4)
        extra = {k: v(f) for k, v in kw.items()}
        return so.minimize(f, onp.zeros(2), jac=grad(f), method=method,
                           options={"gtol": 1e-12} if method != "Newton-CG" else {"xtol": 1e-12},
                           **extra).x

    a = onp.array([1.0, 2.0])
    x = onp.asarray(argmin(a, "BFGS"))
    expected = onp.diag(1.0 / (1.0 + 0.6 * x**2))  # 2 (x - a) + 0.4 x^3 = 0
    # inside chainrule.jit the closed-over value would stay the first call's: refused
    with pytest.raises(so.ClosedOverTracedValueError, match="chainrule.jit is staging"):
        from chainrule import jit

        jit(lambda a: argmin(a, "BFGS"))(a)
    for method, kw in (("BFGS", {}), ("trust-exact", {"hess": hessian}),
                       ("Newton-CG", {"hessp": lambda f: lambda x, p: hessian(f)(x) @ p})):
        assert onp.allclose(jacobian(argmin)(a, method, **kw), expected, rtol=1e-8)
