"""chainrule.scipy.integrate: solve_ivp (adjoint and forward sensitivities) for every
SciPy method, quad (Leibniz and the integrand's derivative), odeint to second order,
against closed forms, finite differences of the whole solve and errors."""

from __future__ import annotations

import math
import warnings

import numpy as onp
import pytest

pytest.importorskip("scipy")

import scipy.integrate as si  # noqa: E402
import scipy.linalg as sla  # noqa: E402

import chainrule as cr  # noqa: E402
import chainrule.numpy as np  # noqa: E402
import chainrule.scipy.linalg as cla  # noqa: E402
from chainrule.scipy import integrate  # noqa: E402
from chainrule.scipy.integrate import odeint, quad, solve_ivp  # noqa: E402
from chainrule.scipy.optimize import ClosedOverTracedValueError  # noqa: E402
from chainrule.test_util import check_grads  # noqa: E402

TOL = dict(rtol=1e-10, atol=1e-12)
METHODS = ["RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA"]
BOTH = [cr.jacrev, cr.jacfwd]  # reverse (adjoint) and forward (sensitivities) mode


def central_difference(f, x, eps=1e-6):
    """d f / d x (shaped f's output + x) by central differences of the whole (re-)solve."""
    x = onp.asarray(x, dtype=float)
    steps = eps * onp.eye(x.size).reshape((x.size, *x.shape))
    columns = [(onp.asarray(f(x + s)) - onp.asarray(f(x - s))) / (2 * eps) for s in steps]
    return onp.moveaxis(onp.array(columns), 0, -1).reshape(columns[0].shape + x.shape)


# ----------------------------------------------------------------------------- decay, every method
def decay(t, y, k):
    return -k * y


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("jac", BOTH)
def test_solve_ivp_decay_matches_the_closed_form_and_its_derivatives(method, jac):
    # y(t) = y0 exp(-k (t - t0)): dy/dk = -(t - t0) y, dy/dy0 = exp(-k (t - t0)),
    # dy/dt_eval = -k y, dy/dt0 = k y
    y0, k, t0 = onp.array([1.5, -0.5]), 0.7, 0.2
    t_eval = onp.array([0.5, 1.0, 2.0])

    def solve(y0, k, t0, t_eval):
        tol = dict(rtol=1e-8, atol=1e-10) if method == "RK23" else TOL  # (3rd order: slow)
        return solve_ivp(decay, (t0, 2.0), y0, method=method, t_eval=t_eval, args=(k,), **tol).y

    exact = y0[:, None] * onp.exp(-k * (t_eval - t0))
    atol = 1e-6 if method in ("RK23", "BDF") else 1e-8
    assert onp.allclose(solve(y0, k, t0, t_eval), exact, atol=atol)
    d_y0, d_k, d_t0, d_teval = jac(solve, argnums=(0, 1, 2, 3))(y0, k, t0, t_eval)
    assert onp.allclose(d_k, -(t_eval - t0) * exact, atol=atol)
    assert onp.allclose(
        d_y0, onp.einsum("ij,t->itj", onp.eye(2), onp.exp(-k * (t_eval - t0))), atol=atol
    )
    assert onp.allclose(d_t0, k * exact, atol=atol)
    assert onp.allclose(d_teval, onp.einsum("it,ts->its", -k * exact, onp.eye(3)), atol=atol)


@pytest.mark.parametrize("method", METHODS)
def test_solve_ivp_end_time_without_t_eval_is_traced(method):
    # with no t_eval the output times are the solver's, the last one t_span[1]
    y0, k = onp.array([2.0]), 0.4

    def last(t1):
        sol = solve_ivp(decay, (0.0, t1), y0, method=method, args=(k,), **TOL)
        return sol.y[0, -1] + 0.0 * sol.t[-1]

    t1 = 1.7
    exact = -k * 2.0 * onp.exp(-k * t1)
    tol = 1e-6 if method in ("RK23", "BDF") else 1e-8
    assert cr.grad(last)(t1) == pytest.approx(exact, abs=tol)
    assert cr.deriv(last)(t1) == pytest.approx(exact, abs=tol)


@pytest.mark.parametrize("jac", BOTH)
def test_integrating_backwards_in_time(jac):
    # t_span = (2, 0): y(t) = y0 exp(-k (t - t0)) with t < t0, t_eval and sol(t) decreasing
    k, y0, t0 = 0.7, onp.array([1.5]), 2.0
    t_eval, query = onp.array([1.5, 1.0, 0.2]), onp.array([0.3, 1.9])

    def sol(k, t0, t_eval):
        return solve_ivp(decay, (t0, 0.0), y0, t_eval=t_eval, args=(k,), dense_output=True, **TOL)

    exact = y0[0] * onp.exp(-k * (t_eval - t0))
    d_k, d_t0, d_teval = jac(lambda *a: sol(*a).y[0], argnums=(0, 1, 2))(k, t0, t_eval)
    assert onp.allclose(d_k, -(t_eval - t0) * exact, atol=1e-8)
    assert onp.allclose(d_t0, k * exact, atol=1e-8)
    assert onp.allclose(d_teval, onp.diag(-k * exact), atol=1e-8)
    d_query = jac(lambda k: sol(k, t0, t_eval).sol(query)[0])(k)
    assert onp.allclose(d_query, -(query - t0) * y0[0] * onp.exp(-k * (query - t0)), atol=1e-8)


def test_solve_ivp_untraced_call_is_scipys_own():
    ours = solve_ivp(decay, (0.0, 1.0), [1.0, 2.0], args=(0.3,), dense_output=True)
    theirs = si.solve_ivp(decay, (0.0, 1.0), [1.0, 2.0], args=(0.3,), dense_output=True)
    assert onp.array_equal(ours.t, theirs.t) and onp.array_equal(ours.y, theirs.y)
    assert onp.array_equal(ours.sol(0.37), theirs.sol(0.37))


def test_solve_ivp_traced_values_equal_scipys():
    # the forward solve is SciPy's: tracing changes no number
    k = 0.3
    theirs = si.solve_ivp(decay, (0.0, 1.0), [1.0, 2.0], method="DOP853", args=(k,))

    def check(k):
        ours = solve_ivp(decay, (0.0, 1.0), [1.0, 2.0], method="DOP853", args=(k,))
        assert onp.array_equal(cr.stop_gradient(ours.y), theirs.y)
        assert onp.array_equal(ours.t, theirs.t)
        return ours.y[0, -1]

    cr.grad(check)(k)


# ----------------------------------------------------------------------------- linear system
@pytest.mark.parametrize("jac", BOTH)
def test_linear_system_matches_the_matrix_exponential(jac):
    # y' = A y: y(t) = expm(A t) y0, differentiated through chainrule's expm
    rng = onp.random.default_rng(3)
    A = rng.normal(size=(3, 3)) * 0.5
    y0 = rng.normal(size=3)
    t_eval = onp.array([0.3, 1.1])

    def solved(A, y0):
        return solve_ivp(
            lambda t, y, A: A @ y, (0.0, 1.1), y0, t_eval=t_eval, args=(A,), method="DOP853", **TOL
        ).y

    def exact(A, y0):
        return np.stack([cla.expm(A * t) @ y0 for t in t_eval], axis=1)

    assert onp.allclose(solved(A, y0), exact(A, y0), atol=1e-9)
    assert onp.allclose(solved(A, y0), onp.stack([sla.expm(A * t) @ y0 for t in t_eval], 1))
    for got, want in zip(
        jac(solved, argnums=(0, 1))(A, y0), cr.jacrev(exact, argnums=(0, 1))(A, y0)
    ):
        assert onp.allclose(got, want, atol=1e-8)


# ----------------------------------------------------------------------------- Lotka-Volterra
def lotka_volterra(t, y, theta):
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    return np.array([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])


LV_THETA = onp.array([1.1, 0.4, 0.9, 0.3])
LV_Y0 = onp.array([1.2, 0.8])
LV_T = onp.linspace(0.5, 5.5, 8)


def lv_loss(theta, y0, t_eval, method="DOP853"):
    sol = solve_ivp(
        lotka_volterra,
        (0.0, 6.0),
        y0,
        method=method,
        t_eval=t_eval,
        args=(theta,),
        rtol=1e-10,
        atol=1e-10,
    )
    return np.sum(sol.y[0] ** 2) + np.sum(np.sin(sol.y[1]))


@pytest.mark.parametrize("method", ["DOP853", "RK45", "LSODA"])
def test_lotka_volterra_gradients_match_finite_differences_of_the_solve(method):
    args = (LV_THETA, LV_Y0, LV_T)
    for argnum in range(3):

        def partial(x, argnum=argnum):
            full = list(args)
            full[argnum] = x
            return lv_loss(*full, method=method)

        fd = central_difference(partial, args[argnum])
        rev = cr.grad(partial)(args[argnum])
        _, fwd = cr.jvp(partial, (args[argnum],), (onp.ones_like(args[argnum]),))
        assert onp.allclose(rev, fd, rtol=1e-5, atol=1e-6), (argnum, rev, fd)
        assert fwd == pytest.approx(onp.sum(fd), rel=1e-5, abs=1e-6)


def test_lotka_volterra_check_grads_both_modes():
    check_grads(
        lambda theta, y0, t_eval: lv_loss(theta, y0, t_eval),
        argnum=(0, 1, 2),
        modes=["fwd", "rev"],
        order=1,
    )(LV_THETA, LV_Y0, LV_T)


@pytest.mark.parametrize("method", ["Radau", "BDF", "LSODA"])
def test_stiff_linear_system_with_the_implicit_methods(method):
    # eigenvalues -1 and -1000: y(T) = expm(A T) y0, the adjoint is as stiff as the solve
    base = onp.array([[-1.0, 0.0], [0.0, -1000.0]])
    mix = onp.array([[1.0, 0.5], [-0.3, 1.0]])
    A = mix @ base @ onp.linalg.inv(mix)
    y0 = onp.array([1.0, -2.0])

    def solved(scale, y0):
        sol = solve_ivp(
            lambda t, y, s: s * (A @ y),
            (0.0, 2.0),
            y0,
            method=method,
            t_eval=[0.01, 2.0],
            args=(scale,),
            rtol=1e-8,
            atol=1e-12,
        )
        return sol.y

    def exact(scale, y0):
        return np.stack([cla.expm(A * (scale * t)) @ y0 for t in (0.01, 2.0)], axis=1)

    assert onp.allclose(solved(1.0, y0), exact(1.0, y0), rtol=1e-6, atol=1e-10)
    for jac in BOTH:
        for got, want in zip(
            jac(solved, argnums=(0, 1))(1.0, y0), cr.jacrev(exact, argnums=(0, 1))(1.0, y0)
        ):
            assert onp.allclose(got, want, rtol=1e-5, atol=1e-8)


# The issue's stiff problem: y' = (S0 + theta S1) y, a transient of rate 1000 in y2 at the
# start, and theta coupling y2 into y1; d(w . y(T))/dtheta by the Frechet derivative of expm.
STIFF_S0 = onp.array([[-1.0, 0.0], [1.0, -1000.0]])
STIFF_S1 = onp.array([[0.0, 1.0], [0.0, 0.0]])


@pytest.mark.parametrize("method", ["RK45", "DOP853", "Radau", "BDF", "LSODA"])
def test_adjoint_parameter_gradient_of_a_stiff_system_is_as_accurate_as_the_solve(method):
    # the backward steps resolve y's transient too (controlling lambda's error alone, BDF
    # and LSODA were off by 2e-3 and 3e-4 relative at rtol = atol = 1e-10)
    y0, w, theta = onp.array([1.0, 1.0]), onp.array([1.0, 1.0]), 0.5

    def loss(theta):
        sol = solve_ivp(lambda t, y, th: np.dot(STIFF_S0 + th * STIFF_S1, y), (0.0, 1.0), y0,
                        method=method, args=(theta,), t_eval=[1.0], rtol=1e-10, atol=1e-10)
        return np.dot(w, sol.y[:, -1])

    a = STIFF_S0 + theta * STIFF_S1
    exact = w @ sla.expm_frechet(a, STIFF_S1, compute_expm=False) @ y0
    assert cr.grad(loss)(theta) == pytest.approx(exact, rel=1e-7)


def robertson(t, y, k):
    return np.stack([-k[0] * y[0] + k[1] * y[1] * y[2],
                     k[0] * y[0] - k[1] * y[1] * y[2] - k[2] * y[1] ** 2,
                     k[2] * y[1] ** 2])


@pytest.mark.parametrize("method", ["BDF", "LSODA"])
def test_adjoint_of_robertsons_problem_agrees_with_forward_sensitivities(method):
    # rates over nine orders of magnitude, output at three times: the adjoint (reverse) and
    # the sensitivities (forward) agree to the solve's accuracy, and the backward solve
    # finishes at the tolerances that suit y (with mu's error controlled at atol = 1e-14,
    # BDF and LSODA stopped: "required step size is less than spacing between numbers")
    k = onp.array([0.04, 1e4, 3e7])

    def loss(k):
        sol = solve_ivp(robertson, (0.0, 40.0), onp.array([1.0, 0.0, 0.0]), method=method,
                        t_eval=[0.4, 4.0, 40.0], args=(k,), rtol=1e-10, atol=1e-14)
        return np.sum(onp.array([1.0, 1e4, 1.0]) * sol.y[:, -1]) + np.sum(sol.y[1])

    reverse, forward = cr.grad(loss)(k), cr.jacfwd(loss)(k)
    assert onp.allclose(reverse, forward, rtol=1e-6, atol=0.0)


# ----------------------------------------------------------------------------- closures and args
def test_closed_over_values_and_defaults_get_the_same_gradient_as_args():
    def by_args(k, y0):
        return solve_ivp(decay, (0.0, 1.0), y0, args=(k,), **TOL).y[:, -1]

    def by_closure(k, y0):
        return solve_ivp(lambda t, y: -k * y, (0.0, 1.0), y0, **TOL).y[:, -1]

    def by_default(k, y0):
        return solve_ivp(lambda t, y, k=k: -k * y, (0.0, 1.0), y0, **TOL).y[:, -1]

    def by_container(k, y0):
        params = {"k": k, "name": "decay"}
        sol = solve_ivp(lambda t, y, p: -p["k"] * y, (0.0, 1.0), y0, args=(params,), **TOL)
        return sol.y[:, -1]

    k, y0 = 0.6, onp.array([1.0, 3.0])
    want = [-onp.exp(-k) * y0, onp.exp(-k) * onp.eye(2)]  # d/dk, d/dy0 of y0 exp(-k)
    for f in (by_args, by_closure, by_default, by_container):
        for jac in BOTH:
            got = jac(f, argnums=(0, 1))(k, y0)
            assert onp.allclose(got[0], want[0], atol=1e-9) and onp.allclose(got[1], want[1])


def test_closure_state_that_is_not_traced_stays_the_users():
    calls = []

    def y_end(k):
        def rhs(t, y):
            calls.append(t)  # a closure cell without traced values: shared, not copied
            return -k * y

        return solve_ivp(rhs, (0.0, 1.0), [1.0], **TOL).y[0, -1]

    assert cr.grad(y_end)(0.5) == pytest.approx(-onp.exp(-0.5), rel=1e-8)
    assert len(calls) > 10


@pytest.mark.parametrize("solver", ["solve_ivp", "odeint"])
def test_a_right_hand_side_that_returns_a_list(solver):
    # y'' = -k y, y(0) = 1, y'(0) = 0: y(1) = cos(sqrt(k)), dy(1)/dk = -sin(sqrt(k)) / (2 sqrt(k))
    def y_end(k):
        if solver == "solve_ivp":
            return solve_ivp(lambda t, y: [y[1], -k * y[0]], (0.0, 1.0), [1.0, 0.0], **TOL).y[0, -1]
        ys = odeint(lambda y, t: [y[1], -k * y[0]], onp.array([1.0, 0.0]), [0.0, 1.0], **TOL)
        return ys[-1, 0]

    k = 2.0
    exact = -onp.sin(onp.sqrt(k)) / (2 * onp.sqrt(k))
    assert cr.grad(y_end)(k) == pytest.approx(exact, rel=1e-7)
    assert cr.deriv(y_end)(k) == pytest.approx(exact, rel=1e-7)


class Model:
    def __init__(self, k):
        self.k = k

    def rhs(self, t, y):
        return -self.k * y


@pytest.mark.parametrize("solver", ["solve_ivp", "odeint", "quad"])
def test_a_traced_value_hidden_in_an_object_raises_naming_args(solver):
    calls = {
        "solve_ivp": lambda m: solve_ivp(m.rhs, (0.0, 1.0), [1.0]).y[0, -1],
        "odeint": lambda m: odeint(lambda y, t: m.rhs(t, y), onp.array([1.0]), [0.0, 1.0])[-1, 0],
        "quad": lambda m: quad(lambda x: m.rhs(0.0, x), 0.0, 1.0)[0],
    }
    with pytest.raises(ClosedOverTracedValueError, match="args="):
        cr.grad(lambda k: calls[solver](Model(k)))(0.5)


def test_odeint_closure_is_differentiated_to_second_order():
    # y(T) = y0 exp(-k T) with k closed over: d/dk = -T y, d2/dk2 = T^2 y
    t = onp.array([0.0, 1.3])

    def y_end(k):
        return odeint(lambda y, s: -k * y, onp.array([2.0]), t, rtol=1e-10, atol=1e-10)[-1, 0]

    k = 0.8
    assert cr.grad(y_end)(k) == pytest.approx(-1.3 * 2.0 * onp.exp(-k * 1.3), rel=1e-7)
    assert cr.grad(cr.grad(y_end))(k) == pytest.approx(1.69 * 2.0 * onp.exp(-k * 1.3), rel=1e-6)


# ----------------------------------------------------------------------------- dense output
@pytest.mark.parametrize("jac", BOTH)
def test_dense_output_is_scipys_interpolant_with_derivatives(jac):
    k, y0 = 0.9, onp.array([1.0, 2.0])
    query = onp.array([1.7, 0.3, 1.1])  # unsorted on purpose
    theirs = si.solve_ivp(decay, (0.0, 2.0), y0, args=(k,), dense_output=True, **TOL).sol

    def dense(k, query):
        return solve_ivp(decay, (0.0, 2.0), y0, args=(k,), dense_output=True, **TOL).sol(query)

    assert onp.array_equal(dense(k, query), theirs(query))
    d_k, d_query = jac(dense, argnums=(0, 1))(k, query)
    exact = y0[:, None] * onp.exp(-k * query)
    assert onp.allclose(d_k, -query * exact, atol=1e-8)
    assert onp.allclose(d_query, onp.einsum("it,ts->its", -k * exact, onp.eye(3)), atol=1e-8)
    scalar = cr.grad(lambda k: dense(k, 0.5)[1])(k)
    assert scalar == pytest.approx(-0.5 * 2.0 * onp.exp(-k * 0.5), abs=1e-8)


# ----------------------------------------------------------------------------- second order
def test_solve_ivp_second_derivatives_in_every_mode_combination():
    # y(T) = y0 exp(-k T): d2y/dk2 = T^2 y0 exp(-k T)
    def y_end(k):
        return solve_ivp(decay, (0.0, 1.2), [1.5], args=(k,), method="DOP853", **TOL).y[0, -1]

    k = 0.7
    exact = 1.44 * 1.5 * onp.exp(-k * 1.2)
    for outer in (cr.grad, cr.deriv):
        for inner in (cr.grad, cr.deriv):
            assert outer(inner(y_end))(k) == pytest.approx(exact, rel=1e-6)


def test_solve_ivp_lotka_volterra_check_grads_to_second_order():
    # second order re-solves y with the adjoint (differentiable), first order uses checkpoints
    def loss(theta, y0):
        sol = solve_ivp(
            lotka_volterra,
            (0.0, 1.5),
            y0,
            method="DOP853",
            t_eval=[0.7, 1.5],
            args=(theta,),
            rtol=1e-10,
            atol=1e-10,
        )
        return np.sum(sol.y**2)

    check_grads(loss, argnum=(0, 1), modes=["fwd", "rev"], order=2)(LV_THETA, LV_Y0)


def test_odeint_lotka_volterra_hessian_matches_finite_differences_of_its_gradient():
    t = onp.linspace(0.0, 1.5, 3)

    def loss(theta):
        ys = odeint(
            lambda y, s, th: lotka_volterra(s, y, th),
            LV_Y0,
            t,
            args=(theta,),
            rtol=1e-11,
            atol=1e-11,
        )
        return np.sum(ys**2)

    hessian = cr.hessian(loss)(LV_THETA)
    fd = central_difference(cr.grad(loss), LV_THETA, eps=1e-5)
    assert onp.allclose(hessian, fd, rtol=1e-5, atol=1e-6)
    assert onp.allclose(hessian, hessian.T, rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------------------- staged dynamics
@pytest.fixture
def stagings(monkeypatch):
    """Every Staged the solves make, to read whether it ran compiled or fell back."""
    made = []
    original = integrate.Staged.__init__

    def spy(self, fun):
        original(self, fun)
        made.append(self)

    monkeypatch.setattr(integrate.Staged, "__init__", spy)
    return made


def _unstaged(monkeypatch, f, *args):
    """``f(*args)`` with the derivative dynamics traced eagerly at every step."""
    with monkeypatch.context() as m:
        m.setattr(integrate, "Staged", lambda fun: fun)
        return f(*args)


def test_adjoint_and_sensitivity_dynamics_run_compiled(stagings, monkeypatch):
    rev = cr.grad(lv_loss)(LV_THETA, LV_Y0, LV_T)
    _, fwd = cr.jvp(lambda th: lv_loss(th, LV_Y0, LV_T), (LV_THETA,), (onp.ones(4),))
    assert len(stagings) == 2
    assert all(s.programs and not s.refused for s in stagings)
    # the same steps as the eager dynamics, so the same numbers
    assert onp.allclose(
        rev, _unstaged(monkeypatch, cr.grad(lv_loss), LV_THETA, LV_Y0, LV_T), rtol=1e-12, atol=1e-14
    )
    eager = _unstaged(
        monkeypatch, cr.jvp, lambda th: lv_loss(th, LV_Y0, LV_T), (LV_THETA,), (onp.ones(4),)
    )[1]
    assert fwd == pytest.approx(eager, rel=1e-12)
    assert onp.allclose(
        rev, central_difference(lambda th: lv_loss(th, LV_Y0, LV_T), LV_THETA), rtol=1e-5, atol=1e-6
    )


def _switched(t, y, k):
    if t < 1.0:  # a Python decision on t: one compiled variant per branch
        return -k * y
    return -k * y * t


def _forced(t, y, k):
    return -k * y + math.sin(t)  # float(t): a guard that fails at every new t


def _argmax_of_a_list(t, y, k):
    i = np.argmax([y[0], y[1]])  # jit cannot stage traced values inside a list
    return -k * y * (1.0 + 0.0 * y[i])


@pytest.mark.parametrize(
    "rhs, refused",
    [(_switched, ""), (_forced, "guards failed"), (_argmax_of_a_list, "StagingError")],
)
@pytest.mark.parametrize("jac", BOTH)
def test_dynamics_that_cannot_be_staged_fall_back_to_tracing(
    stagings, monkeypatch, rhs, refused, jac
):
    t_eval = onp.array([0.5, 1.5, 2.0])

    def solve(k):
        return solve_ivp(rhs, (0.0, 2.0), [1.0, 0.5], t_eval=t_eval, args=(k,), **TOL).y

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = jac(solve)(0.7)
    assert not [w for w in caught if "chainrule.jit" in str(w.message)]
    used = [s for s in stagings if s.signature is not None or s.refused]
    assert used and all(refused in s.refused for s in used)
    if not refused:
        assert all(len(s.programs) == 2 for s in used)
    assert onp.allclose(got, _unstaged(monkeypatch, jac(solve), 0.7), rtol=1e-12, atol=1e-14)
    if rhs is _switched:  # y = y0 exp(-k t), then y(1) exp(-k (t^2 - 1) / 2)
        exponent = onp.where(t_eval < 1.0, -t_eval, -1.0 - (t_eval**2 - 1.0) / 2)
        exact = onp.outer([1.0, 0.5], exponent * onp.exp(0.7 * exponent))
        assert onp.allclose(got, exact, rtol=1e-8, atol=1e-10)
    else:
        assert onp.allclose(got, central_difference(solve, 0.7), rtol=1e-6, atol=1e-7)


# ----------------------------------------------------------------------------- errors
def test_plain_events_are_scipys():
    def hit(t, y, k):
        return y[0] - 0.5

    sol = solve_ivp(decay, (0.0, 2.0), [1.0], args=(0.7,), events=hit, **TOL)
    theirs = si.solve_ivp(decay, (0.0, 2.0), [1.0], args=(0.7,), events=hit, **TOL)
    assert sol.t_events[0][0] == pytest.approx(onp.log(2.0) / 0.7, rel=1e-8)
    assert onp.array_equal(sol.t_events[0], theirs.t_events[0])
    assert onp.array_equal(sol.y_events[0], theirs.y_events[0])


# ----------------------------------------------------------------------------- events
def _crossing_time(k, y0, c, **kwargs):
    # y = y0 exp(-k t) reaches c at t* = log(y0 / c) / k
    def level(t, y, k):
        return y[0] - c  # c closed over, k in args

    sol = solve_ivp(decay, (0.0, 5.0), np.stack([y0]), args=(k,), events=level, **TOL, **kwargs)
    return sol.t_events[0][0]


@pytest.mark.parametrize("jac", BOTH)
def test_event_time_matches_the_closed_form_in_args_y0_and_closure(jac):
    k, y0, c = 0.7, 1.0, 0.5
    got = jac(_crossing_time, argnums=(0, 1, 2))(k, y0, c)
    exact = [-onp.log(y0 / c) / k**2, 1 / (k * y0), -1 / (k * c)]
    assert onp.allclose(got, exact, rtol=1e-8)
    assert _crossing_time(k, y0, c) == pytest.approx(onp.log(y0 / c) / k, rel=1e-10)


def test_event_time_second_derivative():
    # d^2 t*/dk^2 = 2 log(y0 / c) / k^3
    for d2 in (cr.grad(cr.grad(_crossing_time)), cr.deriv(cr.grad(_crossing_time))):
        assert d2(0.7, 1.0, 0.5) == pytest.approx(2 * onp.log(2.0) / 0.7**3, rel=1e-6)


def _lv_crossings(theta, y0):
    """Every time the prey falls through 1.0 (direction -1), and the state then."""

    def prey_low(t, y, theta):
        return y[0] - 1.0

    prey_low.direction = -1.0
    sol = solve_ivp(
        lotka_volterra, (0.0, 12.0), y0, args=(theta,), events=prey_low, rtol=1e-10, atol=1e-10
    )
    return np.concatenate([sol.t_events[0], np.ravel(sol.y_events[0])])


def test_lotka_volterra_event_times_and_states_match_finite_differences_of_the_solve():
    out = _lv_crossings(LV_THETA, LV_Y0)
    assert len(out) == 3 * 2  # two crossings: their times, then (prey, predator) at each
    assert onp.allclose(out[2::2], 1.0, atol=1e-9)  # the prey is at the level there
    # directional: one JVP and one VJP against differences of the re-solve along v
    rng = onp.random.default_rng(5)
    for argnum, x in ((0, LV_THETA), (1, LV_Y0)):
        f = (
            (lambda th: _lv_crossings(th, LV_Y0))
            if argnum == 0
            else (lambda y0: _lv_crossings(LV_THETA, y0))
        )
        v, u = rng.normal(size=x.size), rng.normal(size=out.size)
        fd = (f(x + 1e-6 * v) - f(x - 1e-6 * v)) / 2e-6
        assert onp.allclose(cr.jvp(f, (x,), (v,))[1], fd, rtol=1e-5, atol=1e-6), argnum
        assert cr.vjp(f, x)[1](u)[0] @ v == pytest.approx(u @ fd, rel=1e-5, abs=1e-6)


def test_a_terminal_event_ends_t_and_y_at_the_traced_event_time():
    def half(t, y, k):
        return y[0] - 0.5

    half.terminal = True

    def solve(k, t_eval=None):
        sol = solve_ivp(decay, (0.0, 5.0), [1.0, 2.0], args=(k,), events=half, t_eval=t_eval, **TOL)
        assert sol.status == 1
        return sol

    k = 0.7
    t_star = onp.log(2.0) / k
    assert cr.grad(lambda k: solve(k).t[-1])(k) == pytest.approx(-t_star / k, rel=1e-8)
    # y(t*) = (0.5, 1.0) whatever k: its derivative is zero
    assert onp.allclose(cr.jacobian(lambda k: solve(k).y[:, -1])(k), 0.0, atol=1e-8)
    # with t_eval, the points after t* are not reached; those before keep their derivative
    t_eval = onp.array([0.25, 0.5, 2.0, 3.0])
    sol = solve(k, t_eval)
    assert onp.array_equal(sol.t, t_eval[:2])
    got = cr.jacfwd(lambda k: solve(k, t_eval).y[1])(k)
    assert onp.allclose(got, -t_eval[:2] * 2.0 * onp.exp(-k * t_eval[:2]), rtol=1e-8)


def test_a_parameter_only_in_an_event_functions_closure_is_differentiated():
    # y = exp(-t) reaches k at t* = -log k: dt*/dk = -1/k (raised "cannot be converted")
    def t_star(k):
        def reached(t, y):
            return y[0] - k

        reached.terminal = True
        sol = solve_ivp(lambda t, y: -y, (0.0, 5.0), [1.0], events=reached, rtol=1e-11,
                        atol=1e-13)
        return sol.t_events[0][0], sol.y_events[0][0, 0], sol.t[-1]

    for d in BOTH:
        d_t, d_y, d_end = d(t_star)(0.5)
        assert d_t == pytest.approx(-2.0, rel=1e-7) and d_end == pytest.approx(-2.0, rel=1e-7)
        assert d_y == pytest.approx(1.0, rel=1e-7)  # y(t*) = k


def test_traced_event_states_are_scipys():
    # y_events of a traced call are SciPy's numbers, bit for bit (they were solved again to
    # t*: the stored inputs never matched, [t0, t*] counted as two leaves; 1e-10 apart here)
    def events(k, module):
        def crossing(t, y):
            return y[0] - 0.6

        sol = module.solve_ivp(lambda t, y: -k * y * (1.0 + 0.5 * np.sin(t)), (0.0, 2.0),
                               onp.array([1.5, -0.5]), method="RK23", events=crossing,
                               rtol=1e-8, atol=1e-10)
        return sol.t_events[0], sol.y_events[0]

    plain = events(0.9873988217633234, si)
    traced = cr.jvp(lambda k: events(k, integrate)[1], (0.9873988217633234,), (1.0,))[0]
    assert onp.array_equal(traced, plain[1])


@pytest.mark.parametrize("jac", BOTH)
def test_output_times_all_at_t0(jac):
    # y at t0 is y0: dy/dy0 = I, dy/dk = 0, dy/dt0 = -f (the start moves, t_eval stays),
    # in both modes (forward mode raised IndexError)
    def at_start(y0, k, t0):
        sol = solve_ivp(lambda t, y, k: -k * y, (t0, 1.0), y0, t_eval=[0.0], args=(k,))
        return sol.y[:, 0]

    y0, k = onp.array([1.0, 2.0]), 3.0
    d_y0, d_k, d_t0 = jac(at_start, argnums=(0, 1, 2))(y0, k, 0.0)
    assert onp.allclose(d_y0, onp.eye(2)) and onp.allclose(d_k, 0.0)
    assert onp.allclose(d_t0, k * y0)
    # an empty interval: SciPy answers y = [] for t_eval = [t0]; the derivative of nothing
    empty = lambda y0: np.sum(solve_ivp(lambda t, y: -y, (0.0, 0.0), y0, t_eval=[0.0]).y)
    assert onp.allclose(jac(empty)(y0), 0.0)
    span = lambda y0: solve_ivp(lambda t, y: -y, (0.0, 0.0), y0).y[:, -1]
    assert onp.allclose(jac(span)(y0), onp.eye(2))


def test_a_failed_forward_solve_refuses_derivatives():
    # y' = y^2 from y(0) = 1 blows up at t = 1: SciPy reports failure, no derivative exists
    def blow_up(k):
        sol = solve_ivp(lambda t, y: k * y**2, (0.0, 2.0), [1.0])
        theirs = si.solve_ivp(lambda t, y: y**2, (0.0, 2.0), [1.0])
        assert not sol.success and sol.message == theirs.message
        assert onp.array_equal(cr.stop_gradient(sol.t), theirs.t)
        assert onp.array_equal(cr.stop_gradient(sol.y), theirs.y)
        return sol.y[0, -1]

    with pytest.raises(RuntimeError, match="forward solve failed"):
        cr.grad(blow_up)(1.0)
    with pytest.raises(RuntimeError, match="forward solve failed"):
        cr.deriv(blow_up)(1.0)


def test_solve_ivp_inputs_are_not_modified():
    y0, t_eval, theta = LV_Y0.copy(), LV_T.copy(), LV_THETA.copy()
    cr.grad(lv_loss, argnum=(0, 1, 2))(theta, y0, t_eval)
    assert onp.array_equal(y0, LV_Y0) and onp.array_equal(t_eval, LV_T)
    assert onp.array_equal(theta, LV_THETA)


# ----------------------------------------------------------------------------- quad
@pytest.mark.parametrize("jac", BOTH)
def test_quad_of_theta_x_squared_matches_the_closed_form(jac):
    # F = theta (b^3 - a^3) / 3: dF/dtheta = (b^3 - a^3) / 3, dF/da = -theta a^2, dF/db = theta b^2
    def integral(theta, a, b):
        return quad(lambda x, th: th * x**2, a, b, args=(theta,))[0]

    theta, a, b = 2.5, -0.5, 1.5
    assert integral(theta, a, b) == pytest.approx(theta * (b**3 - a**3) / 3, rel=1e-12)
    got = jac(integral, argnums=(0, 1, 2))(theta, a, b)
    want = ((b**3 - a**3) / 3, -theta * a**2, theta * b**2)
    assert onp.allclose(got, want, rtol=1e-10)


def test_quad_with_a_vector_parameter_and_an_infinite_limit():
    # the integral of exp(-c x) (1 + w x) over [0, inf) = 1/c + w/c^2
    def integral(params):
        return quad(lambda x: np.exp(-params[0] * x) * (1 + params[1] * x), 0.0, onp.inf)[0]

    p = onp.array([1.3, 0.4])
    c, w = p
    assert integral(p) == pytest.approx(1 / c + w / c**2, rel=1e-9)
    want = onp.array([-1 / c**2 - 2 * w / c**3, 1 / c**2])
    assert onp.allclose(cr.grad(integral)(p), want, rtol=1e-8)
    assert onp.allclose(cr.jacfwd(integral)(p), want, rtol=1e-8)
    assert onp.allclose(cr.grad(integral)(p), central_difference(integral, p), rtol=1e-6)


def test_quad_second_order_when_the_limit_and_the_integrand_share_theta():
    # F(theta) = the integral of sin(theta x) over [0, theta] = (1 - cos(theta^2)) / theta
    def integral(theta):
        return quad(lambda x: np.sin(theta * x), 0.0, theta)[0]

    def closed(theta):
        return (1 - onp.cos(theta**2)) / theta

    theta = 1.3
    first = 2 * onp.sin(theta**2) - closed(theta) / theta
    second = (
        4 * theta * onp.cos(theta**2) - 2 * onp.sin(theta**2) / theta + 2 * closed(theta) / theta**2
    )
    assert cr.grad(integral)(theta) == pytest.approx(first, rel=1e-9)
    assert cr.deriv(integral)(theta) == pytest.approx(first, rel=1e-9)
    for outer in (cr.grad, cr.deriv):
        for inner in (cr.grad, cr.deriv):
            assert outer(inner(integral))(theta) == pytest.approx(second, rel=1e-7)
    check_grads(integral, modes=["fwd", "rev"], order=2)(theta)


def test_quad_breakpoints_only_guide_the_integral():
    # traced points= (as SciPy users pass the kink of their integrand) are read as values:
    # the integral does not move with them. I(c) = (1 - cos 2c) / c
    integral = lambda c: quad(lambda x: np.sin(c * x), 0.0, 2.0, points=[c])[0]
    exact = 2 * onp.sin(2.0) - (1 - onp.cos(2.0))
    for d in (cr.grad, cr.jacfwd):
        assert d(integral)(1.0) == pytest.approx(exact, rel=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (independent of p)
        assert cr.grad(lambda p: quad(np.sin, 0.0, 2.0, points=np.stack([p]))[0])(1.0) == 0.0
    # a traced weight parameter changes the integral: refused, naming it
    with pytest.raises(TypeError, match="wvar= is traced"):
        cr.grad(lambda w: quad(lambda x: x, 0.0, 2.0, weight="cos", wvar=w)[0])(1.0)


def test_quad_errors_name_the_problem():
    with pytest.raises(ValueError, match="infinite limit"):
        cr.grad(lambda b: quad(lambda x: np.exp(-x), 0.0, b)[0])(onp.inf)
    with pytest.raises(TypeError, match="weight"):
        cr.grad(lambda k: quad(lambda x: k * x, 0.0, 1.0, weight="cos", wvar=2.0)[0])(1.0)
    assert quad(lambda x: x, 0.0, 2.0) == si.quad(lambda x: x, 0.0, 2.0)


# ----------------------------------------------------------------------------- Tensor front end
def test_tensors_as_inputs_give_tensors_and_their_grads():
    # y(1) = y0 exp(-k): d/dk = -y(1), d/dy0 = exp(-k); quad's Leibniz term and parameter
    k, y0 = cr.Tensor(0.5), cr.Tensor(onp.array([2.0]))
    sol = solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), y0, args=(k,), **TOL)
    assert isinstance(sol.y, cr.Tensor)
    sol.y[0, -1].backward()
    assert float(k.grad) == pytest.approx(-2.0 * onp.exp(-0.5), rel=1e-8)
    assert onp.allclose(y0.grad.detach().numpy(), [onp.exp(-0.5)], rtol=1e-8)

    theta, b = cr.Tensor(2.0), cr.Tensor(1.5)
    value = quad(lambda x: theta * x**2, 0.0, b)[0]  # theta closed over
    assert isinstance(value, cr.Tensor)
    value.backward()
    assert float(theta.grad) == pytest.approx(1.5**3 / 3, rel=1e-10)
    assert float(b.grad) == pytest.approx(2.0 * 1.5**2, rel=1e-10)


# ----------------------------------------------------------------------------- under jit
def test_jitted_solves_follow_new_inputs():
    # the compiled program replays the solver primitives with new inputs: they solve again
    # as the eager call does (not the values of the traced call), and the adjoint reads
    # that solve's interpolant as the eager one does: the same bits
    def loss(theta):
        return lv_loss(theta, LV_Y0, LV_T)

    value, gradient = cr.jit(loss), cr.jit(cr.grad(loss))
    value(LV_THETA), gradient(LV_THETA)
    moved = LV_THETA * 1.01
    assert value(moved) == loss(moved)  # (before: 2.7 off)
    assert onp.asarray(gradient(moved)).tobytes() == onp.asarray(cr.grad(loss)(moved)).tobytes()

    def area(a):
        return quad(lambda x, a: np.sin(a * x), 0.0, 1.0, args=(a,))[0]

    jitted = cr.jit(area)
    jitted(1.0)
    assert jitted(2.0) == pytest.approx(area(2.0), rel=1e-12)


def test_jit_refuses_solver_chosen_times_and_events():
    from chainrule.jit import StagingError

    def end(k):
        return solve_ivp(decay, (0.0, 1.0), [1.0], args=(k,)).y[0, -1]

    with pytest.raises(StagingError, match="t_eval"):
        cr.jit(end)(0.5)
    with pytest.raises(StagingError, match="events"):
        cr.jit(lambda k: _crossing_time(k, 1.0, 0.5, t_eval=[0.5]))(0.7)
