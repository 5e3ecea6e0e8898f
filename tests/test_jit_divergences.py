"""chainrule.jit where it used to differ from eager evaluation: a staged tuple answered
per example under vmap, masks given by keyword, vmap's ``out_axes=None`` check, and the
plain (integer, bool, string) fields of solver results. Each jitted answer is compared
with eager evaluation bit for bit, over inputs that change between calls."""

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


# ----------------------------------------------------------------------------- vmap tuples
def test_jitted_hessian_through_eigh_equals_eager():
    # jacobian's batched forward pass runs eigh's JVP once per example; under jit its
    # answers are staged tuples (SequenceBox), which the per-example stacking must unpack
    h = cr.hessian(lambda a: np.sum(np.linalg.eigh(a)[0] ** 3))
    jitted = cr.jit(h)
    rng = onp.random.default_rng(0)
    for _ in range(3):
        m = rng.normal(size=(3, 3))
        a = m + m.T
        _bits(jitted(a), h(a))


def test_jitted_jacobian_of_a_tuple_answering_primitive_equals_eager():
    f = cr.jacobian(lambda a: np.linalg.eigh(a)[1][:, 0] * np.linalg.eigh(a)[0][0])
    jitted = cr.jit(f)
    for a in (onp.diag([1.0, 2.0, 3.0]) + 0.1, onp.diag([3.0, 1.0, 2.0]) + 0.2):
        _bits(jitted(a), f(a))


# ----------------------------------------------------------------------------- keyword masks
X_VALUES = [onp.array(v) for v in (
    [0.3, -1.2, 2.0, 0.7],
    [-0.3, 1.2, -2.0, 0.9],
    [1.0, 1.0, -3.0, -0.2],
)]

KEYWORD_MASKS = {
    "mean where": lambda x: np.mean(x**2, where=x > 0),
    "mean where axis": lambda x: np.sum(np.mean(x.reshape(2, 2) ** 3, axis=1,
                                                where=x.reshape(2, 2) < 1.0)),
    "sum where": lambda x: np.sum(np.sin(x), where=x > 0),
    "max where initial": lambda x: np.max(x, where=x < 1.0, initial=-10.0),
    "min where initial": lambda x: np.min(x * 2.0, where=np.isfinite(x) & (x > -1.0),
                                          initial=10.0),
    "mean where not": lambda x: np.mean(np.exp(x), where=~(x > 0)),
}


@pytest.mark.parametrize("name", sorted(KEYWORD_MASKS))
def test_jitted_masks_given_by_keyword_follow_the_values(name):
    f = KEYWORD_MASKS[name]
    for transform in (lambda f: f, cr.grad, cr.hessian):
        g = transform(f)
        jitted = cr.jit(g, max_variants=50)
        for x in X_VALUES + X_VALUES[::-1]:
            _bits(jitted(x), g(x))


def test_jitted_mask_given_by_keyword_to_a_notrace_function_follows_the_values():
    f = lambda x: np.sum(x) * np.all(x > -1.5, where=x < 1.0)  # noqa: E731
    jitted = cr.jit(cr.grad(f), max_variants=50)
    for x in X_VALUES + X_VALUES[::-1]:
        _bits(jitted(x), cr.grad(f)(x))


def test_jitted_integer_values_given_by_keyword_follow_the_values():
    # a staged boolean or integer value is guarded by value, as a mask is (and as a
    # boolean or integer argument of the jitted function is part of its signature)
    f = lambda x: np.mean(x**2, where=np.where(x > 0, 1, 0) == np.where(x < 1, 1, 1))  # noqa: E731
    g = lambda x: np.mean(x**2, where=np.where(x > 0, True, False))  # noqa: E731
    for transform in (lambda f: f, cr.grad):
        for h in (transform(f), transform(g)):
            jitted = cr.jit(h, max_variants=50)
            for x in X_VALUES + X_VALUES[::-1]:
                _bits(jitted(x), h(x))


# ----------------------------------------------------------------------------- vmap out_axes
def test_jitted_vmap_out_axes_none_checks_every_call():
    f = cr.vmap(lambda x: np.maximum(x[0], 0.0), out_axes=None)
    jitted = cr.jit(f)
    same = onp.array([[-1.0, 2.0], [-2.0, 3.0]])  # every example answers 0
    _bits(jitted(same), f(same))
    differ = onp.array([[1.0, 2.0], [2.0, 3.0]])
    for call in (f, jitted):
        with pytest.raises(ValueError, match="out_axes is None"):
            call(differ)
    _bits(jitted(same), f(same))


def test_jitted_vmap_out_axes_none_checks_every_call_per_example():
    # (a function vmap runs once per example: its own per-example stacking)
    def per_example(x):
        if x[1] > 0:  # a decision on the example: vmap splits the batch
            return np.maximum(x[0], 0.0)
        return np.maximum(x[0], 0.0) * 1.0

    f = cr.vmap(per_example, out_axes=None)
    jitted = cr.jit(f, max_variants=50)
    same = onp.array([[-1.0, 2.0], [-2.0, -3.0]])
    _bits(jitted(same), f(same))
    differ = onp.array([[1.0, 2.0], [2.0, -3.0]])
    for call in (f, jitted):
        with pytest.raises(ValueError, match="out_axes is None"):
            call(differ)
    _bits(jitted(same), f(same))


# ----------------------------------------------------------------------------- solver fields
# Counts, flags and messages of a solver's result are plain values no program value holds:
# read inside a jitted function, each is a guarded decision (a changed value retraces).
def _field_cases():
    from chainrule.scipy import optimize as so

    def quartic(x, p):
        return np.sum((x**2 - p) ** 2)

    def minimize(p, x0):
        res = so.minimize(quartic, x0, args=(p,))
        return res.x, res.nit, res.nfev, res.njev, res.success, res.status, res.message

    def minimize_dict(p, x0):
        res = so.minimize(quartic, x0, args=(p,))
        plain = dict(res)
        return plain["nit"], res.get("nfev"), [v for k, v in res.items() if k == "status"]

    def least_squares(p, x0):
        res = so.least_squares(lambda x, p: x**3 - p, onp.clip(x0, 0.1, 1.4), args=(p,),
                               bounds=(0.0, 1.5))
        return res.x, res.nfev, res.njev, res.status, res.message, res.active_mask, res.optimality

    def root(p, x0):
        res = so.root(lambda x, p: x**3 - p, x0, args=(p,))
        return res.x, res.nfev, res.success, res.status, res.message

    def root_scalar(p, x0):
        r = so.root_scalar(lambda x, p: x**3 - p[0], args=(p,), x0=x0[0],
                           fprime=lambda x, p: 3 * x**2, method="newton")
        return r.root, r.iterations, r.function_calls, r.converged, r.flag

    def brentq(p, x0):
        x, r = so.brentq(lambda x, p: x**3 - p[0], -5.0 + x0[0], 10.0, args=(p,),
                         full_output=True)
        return x, r.root, r.iterations, r.function_calls, r.converged, r.flag

    def newton(p, x0):
        x, r = so.newton(lambda x, p: x**3 - p[0], x0[0], args=(p,), full_output=True)
        return x, r.root, r.iterations, r.function_calls, r.converged

    def newton_arrays(p, x0):
        return so.newton(lambda x, p: x**3 - p, x0, args=(p,), full_output=True)

    def minimize_scalar(p, x0):
        res = so.minimize_scalar(lambda x, p: (x - p[0]) ** 2 + x**4, bounds=(-3.0, x0[0]),
                                 method="bounded", args=(p,))
        return res.x, res.nfev, res.nit, res.success, res.status, res.message

    # (the start is guarded by value: p alone changes, and with it the counts)
    x0 = onp.array([0.9, 1.1])
    inputs = [(onp.array([1.0, 2.0]), x0), (onp.array([7.0, 0.2]), x0),
              (onp.array([30.0, 5.0]), x0)]
    return {name: (f, inputs) for name, f in locals().items() if callable(f) and
            name not in ("quartic",)}


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, (str, bool, int)) or a is None:
        assert type(a) is type(b) and a == b, (a, b)
    else:
        _bits(a, b)


@pytest.mark.parametrize("name", sorted(_field_cases()))
def test_jitted_solver_counts_flags_and_messages_are_each_calls(name):
    f, inputs = _field_cases()[name]
    jitted = cr.jit(f, max_variants=50)
    for args in inputs + inputs[::-1]:
        _same(jitted(*args), f(*args))


def test_jitted_solver_fields_not_read_do_not_retrace():
    from chainrule.scipy import optimize as so

    def f(p):
        return so.minimize(lambda x, p: np.sum((x**2 - p) ** 2), onp.ones(2), args=(p,)).x

    jitted = cr.jit(f)
    counts = set()
    for p in ([1.0, 2.0], [3.0, 0.5], [9.0, 4.0]):  # nit and nfev change, unread
        _bits(jitted(onp.array(p)), f(onp.array(p)))
        counts.add(so.minimize(lambda x, p: np.sum((x**2 - p) ** 2), onp.ones(2),
                               args=(onp.array(p),)).nfev)
    assert len(counts) > 1 and jitted.cache_info().variants == 1


def test_jitted_count_that_changes_every_call_runs_eagerly_with_jit_warning():
    from chainrule.scipy import optimize as so

    def f(p):
        res = so.minimize(lambda x, p: np.sum((x - p) ** 4), onp.zeros(2), args=(p,))
        return res.x, res.nfev

    jitted = cr.jit(f, max_variants=2)
    with pytest.warns(UserWarning, match="chainrule.jit"):
        for p in (1.0, 2.0, 4.0, 8.0):
            _same(jitted(onp.array([p, -p])), f(onp.array([p, -p])))


def test_jitted_unconverged_solve_answers_as_eager_does():
    # (no derivative is taken: eager returns the result with success False, and so must
    # the program; jit(grad) refuses it as grad does, see test_jit_values)
    from chainrule.scipy import optimize as so

    def f(p):
        res = so.minimize(lambda x, p: np.sum((x**2 - p) ** 2), onp.ones(2), args=(p,),
                          options={"maxiter": 3})
        return res.x, res.success, res.status, res.message, res.nit

    jitted = cr.jit(f, max_variants=50)
    for p in ([1.0, 1.01], [30.0, 5.0], [1.0, 1.01]):
        _same(jitted(onp.array(p)), f(onp.array(p)))
    assert f(onp.array([30.0, 5.0]))[1] is False


# ----------------------------------------------------------------------------- solve_ivp
# A program replaying solve_ivp at new inputs redoes SciPy's forward solve as eager
# evaluation does (same end of t_span, options and Jacobian), and its adjoint reads that
# solve's interpolant (checkpoints), as eager's does: the same values bit for bit.
def _ivp_cases():
    from chainrule.scipy import integrate

    def rhs(t, y, k):
        return -k * y * (1.0 + np.sin(t)) + np.array([0.0, 0.1]) * y[::-1]

    y0 = onp.array([1.0, 0.5])
    t_eval = onp.array([0.5, 1.0, 2.2])

    def solve(k, **kw):
        return integrate.solve_ivp(rhs, (0.0, 3.0), y0 * k[1], args=(k[0],), t_eval=t_eval,
                                   **kw)

    def jac(t, y, k):
        return onp.array([[-k * (1.0 + onp.sin(t)), 0.0], [0.1, -k * (1.0 + onp.sin(t))]])

    return {
        "RK45": lambda k: np.sum(solve(k).y ** 2),
        "DOP853 tight": lambda k: np.sum(solve(k, method="DOP853", rtol=1e-9).y),
        "Radau jac": lambda k: np.sum(solve(k, method="Radau", jac=jac).y),
        "BDF first_step": lambda k: np.sum(solve(k, method="BDF", first_step=0.01).y),
        "LSODA": lambda k: np.sum(solve(k, method="LSODA").y),
        "dense": lambda k: np.sum(solve(k, dense_output=True).sol(
            onp.array([2.9, 0.1, 1.7])) * onp.array([[1.0], [3.0]])),
    }


IVP_INPUTS = [onp.array(v) for v in ([0.7, 1.0], [1.3, 0.8], [2.0, 1.5])]


@pytest.mark.parametrize("name", sorted(_ivp_cases()))
def test_jitted_solve_ivp_and_its_adjoint_equal_eager(name):
    f = _ivp_cases()[name]
    for transform in (lambda f: f, cr.grad):
        g = transform(f)
        jitted = cr.jit(g)
        for k in IVP_INPUTS + IVP_INPUTS[::-1]:
            _bits(jitted(k), g(k))
        assert jitted.cache_info().variants == 1


def test_jitted_dense_output_at_new_times_equals_eager():
    from chainrule.scipy import integrate

    def f(k, t):
        sol = integrate.solve_ivp(lambda t, y, k: -k * y, (0.0, 2.0), onp.array([1.0]),
                                  args=(k,), t_eval=onp.array([2.0]), dense_output=True)
        return sol.sol(t)

    for g in (f, cr.grad(lambda k, t: np.sum(f(k, t)))):
        jitted = cr.jit(g)
        for k, t in ((0.7, [0.5, 1.0]), (0.7, [1.5, 0.2]), (1.1, [0.3, 1.9]), (0.7, [0.5, 1.0])):
            _bits(jitted(k, onp.array(t)), g(k, onp.array(t)))


def test_jitted_hessian_of_solve_ivp_equals_eager():
    f = _ivp_cases()["RK45"]
    h = cr.hessian(f)
    jitted = cr.jit(h)
    for k in IVP_INPUTS[:2]:
        _bits(jitted(k), h(k))


def test_jitted_solve_ivp_follows_the_end_of_t_span():
    from chainrule.scipy import integrate

    def f(k, t1):
        sol = integrate.solve_ivp(lambda t, y, k: -k * y * (1.0 + t), (0.0, t1),
                                  onp.array([1.0]), args=(k,), t_eval=onp.array([0.5, 1.0]))
        return sol.y, sol.nfev

    jitted = cr.jit(f)
    for t1 in (1.0, 3.0, 1.0, 7.5):
        _same(jitted(0.7, t1), f(0.7, t1))


def test_jitted_solve_ivp_fields_are_each_calls():
    from chainrule.scipy import integrate

    def f(k):
        sol = integrate.solve_ivp(lambda t, y, k: k * y**2, (0.0, 2.0), onp.array([1.0]),
                                  args=(k,), t_eval=onp.array([0.5, 1.5]))
        return sol.y, sol.t, sol.nfev, sol.njev, sol.nlu, sol.status, sol.success, sol.message

    jitted = cr.jit(f)
    # (k = 1: y blows up at t = 1, the solve fails there and answers one time only)
    for k in (0.3, 0.45, 1.0, 0.3, 1.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _same(jitted(k), f(k))
    assert f(1.0)[6] is False and f(0.3)[2] != f(0.45)[2]
