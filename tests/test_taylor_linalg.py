"""Closed-form Taylor rules of numpy.linalg (inv, solve, cholesky, det, slogdet) against
nested forward mode (orders 1-6, 1e-12 relative), mpmath's matrix functions at 50 digits
(order 10), stacked and complex matrices, and under jit, vmap and the Laplacian."""

from __future__ import annotations

from math import factorial

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule._core.pytree import tree_flatten
from chainrule._core.rule_table import rule_table
from chainrule.numpy import linalg as la

CLOSED_FORM = [la.inv, la.solve, la.cholesky, la.det, la.slogdet_tuple]


def _spd(rng, n, *stack, complex_=False):
    m = rng.standard_normal((*stack, n, n))
    if complex_:
        m = m + 1j * rng.standard_normal((*stack, n, n))
    return m @ onp.conj(onp.swapaxes(m, -1, -2)) + n * onp.eye(n)


def _general(rng, n, *stack, complex_=False):
    m = rng.standard_normal((*stack, n, n)) + 3 * onp.eye(n)
    return m + 1j * rng.standard_normal((*stack, n, n)) if complex_ else m


def _terms(rng, x, order):
    x = onp.asarray(x)
    terms = [rng.standard_normal(x.shape) for _ in range(order)]
    if x.dtype.kind == "c":
        terms = [t + 1j * rng.standard_normal(x.shape) for t in terms]
    return [t.astype(x.dtype) for t in terms]


def _nested_jvp(f, primals, coefficients, order):
    """Derivatives 1..order of t -> f(x(t)), x_i(t) = x_i + sum_j c_ij t^j, by nested jvp."""
    def along(t):
        moved = []
        for x, terms in zip(primals, coefficients):
            power = t
            for c in terms:
                x = x + c * power
                power = power * t
            moved.append(x)
        return f(*moved)

    out, h = [], along
    for _ in range(order):
        h = (lambda inner: lambda t: chainrule.jvp(inner, (t,), (1.0,))[1])(h)
        out.append(h(0.0))
    return out


def _assert_close(got, want, rtol, what, dtype=None):
    """``got`` equals ``want`` to ``rtol``, leaf by leaf, with want's dtype or ``dtype``."""
    got, want = tree_flatten(got)[0], tree_flatten(want)[0]
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        g, w = onp.asarray(g), onp.asarray(w)
        assert g.shape == w.shape and g.dtype == (dtype or w.dtype), what
        scale = max(1.0, float(onp.max(onp.abs(w), initial=0.0)))
        onp.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=what)


def _problems():
    rng = onp.random.default_rng(7)
    b1, b2 = rng.standard_normal(3), rng.standard_normal((3, 2))
    out = []
    for complex_ in (False, True):
        kind = "complex" if complex_ else "real"
        spd, spd_stack = _spd(rng, 3, complex_=complex_), _spd(rng, 3, 2, complex_=complex_)
        gen, gen_stack = _general(rng, 3, complex_=complex_), _general(rng, 3, 2,
                                                                        complex_=complex_)
        out += [
            (f"inv {kind}", la.inv, (gen,)),
            (f"inv stacked {kind}", la.inv, (gen_stack,)),
            (f"det {kind}", la.det, (gen,)),
            (f"det stacked {kind}", la.det, (gen_stack,)),
            (f"slogdet {kind}", la.slogdet, (gen,)),
            (f"slogdet negative {kind}", la.slogdet, (-spd,)),
            (f"slogdet stacked {kind}", la.slogdet, (gen_stack,)),
            (f"solve vector {kind}", la.solve, (gen, b1.astype(gen.dtype))),
            (f"solve matrix {kind}", la.solve, (gen, b2.astype(gen.dtype))),
            (f"solve stacked {kind}", la.solve, (gen_stack, b1.astype(gen.dtype))),
            (f"cholesky {kind}", la.cholesky, (spd,)),
            (f"cholesky stacked {kind}", la.cholesky, (spd_stack,)),
            (f"cholesky upper {kind}", lambda a: la.cholesky(a, upper=True), (spd,)),
        ]
    out.append(("inv float32", la.inv, (_general(rng, 3).astype(onp.float32),)))
    fixed = _general(rng, 3)
    out.append(("solve a only", lambda a: la.solve(a, b2), (fixed,)))
    out.append(("solve b only", lambda b: la.solve(fixed, b), (b2,)))
    return out


PROBLEMS = _problems()


@pytest.mark.parametrize("name, f, primals", PROBLEMS, ids=[p[0] for p in PROBLEMS])
def test_linalg_taylor_rules_equal_nested_jvp_to_order_6(name, f, primals):
    order = 6
    rng = onp.random.default_rng(1)
    coefficients = [_terms(rng, x, order) for x in primals]
    series = [[c * factorial(j + 1) for j, c in enumerate(terms)] for terms in coefficients]
    value, terms = chainrule.jet(f, primals, series)
    _assert_close(value, f(*primals), 0, "value")
    want = _nested_jvp(f, primals, coefficients, order)
    small = any(onp.asarray(x).dtype == onp.float32 for x in primals)
    flat = tree_flatten(terms)[0]
    for j in range(order):
        # (nested jvp moves along a float64 t, which promotes float32; jet keeps it)
        _assert_close(flat[j::order], tree_flatten(want[j])[0], 2e-4 if small else 1e-12,
                      f"{name}: derivative {j + 1}", onp.float32 if small else None)


def test_linalg_primitives_have_closed_form_taylor_rules():
    """Not the generic nested-JVP rule (O(2^order) calls of the JVP): the recurrences."""
    for fun in CLOSED_FORM:
        assert rule_table.get(fun).taylor is not None, fun.__name__


# ----------------------------------------------------------------------------- mpmath
mpmath = pytest.importorskip("mpmath", reason="mpmath gives the high-precision references")


def _mp_curve(a0, a1):
    """t -> the mpmath matrix a0 + t a1 (a straight line: its Taylor coefficients are exact
    in jet's input and mpmath differentiates the matrix function along it)."""
    return lambda t: mpmath.matrix(a0.tolist()) + t * mpmath.matrix(a1.tolist())


MP_CASES = [
    ("inv", la.inv, lambda m: mpmath.inverse(m)),
    ("det", la.det, lambda m: mpmath.det(m)),
    ("slogdet", lambda a: la.slogdet(a)[1], lambda m: mpmath.log(abs(mpmath.det(m)))),
    ("solve", lambda a: la.solve(a, onp.array([1.0, -2.0, 0.5])),
     lambda m: mpmath.lu_solve(m, mpmath.matrix([1.0, -2.0, 0.5]))),
    ("cholesky", la.cholesky, lambda m: mpmath.cholesky(m)),
]


@pytest.mark.parametrize("name, f, reference", MP_CASES, ids=[c[0] for c in MP_CASES])
def test_linalg_taylor_coefficients_to_order_10_against_mpmath(name, f, reference):
    order = 10
    rng = onp.random.default_rng(3)
    a0 = _spd(rng, 3)
    a1 = rng.standard_normal((3, 3))
    a1 = (a1 + a1.T) / 2  # (symmetric: cholesky's curve stays in its domain)
    _, terms = chainrule.jet(f, (a0,), ([a1] + [onp.zeros((3, 3))] * (order - 1),),
                             factorial_scaled=False)
    curve = _mp_curve(a0, a1)
    with mpmath.workdps(50):
        value = reference(curve(0))
        entries = [(i, j) for i in range(value.rows) for j in range(value.cols)] \
            if isinstance(value, mpmath.matrix) else [None]
        for entry in entries:
            def scalar(t, entry=entry):
                v = reference(curve(t))
                return v if entry is None else v[entry]
            want = [float(c) for c in mpmath.taylor(scalar, 0, order)[1:]]
            # (mpmath answers a vector as a column)
            got = [float(onp.asarray(c)[() if entry is None else entry[:onp.ndim(c)]])
                   for c in terms]
            scale = max(abs(w) for w in want) or 1.0
            onp.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * scale,
                                        err_msg=f"{name}{entry}")


def _matrix_energy(x):
    """A scalar of a vector through every closed-form rule (an SPD matrix of x)."""
    m = np.reshape(x, (2, 2))
    a = m @ np.swapaxes(m, -1, -2) + 2.0 * np.eye(2)
    sign, logabs = la.slogdet(a)
    return (la.det(a) + np.sum(la.inv(a)) + np.sum(la.solve(a, x[:2])) + sign * logabs
            + np.sum(la.cholesky(a)))


def test_laplacian_and_hessian_diagonal_through_the_linalg_rules():
    """The collapsed pass hands the rules batched first coefficients."""
    x = onp.array([0.3, -1.2, 0.7, 0.4])
    hessian = chainrule.hessian(_matrix_energy)(x)
    onp.testing.assert_allclose(chainrule.laplacian(_matrix_energy)(x), onp.trace(hessian),
                                rtol=1e-12)
    onp.testing.assert_allclose(chainrule.hessian_diagonal(_matrix_energy)(x),
                                onp.diag(hessian), rtol=1e-12)


def test_jet_through_linalg_under_jit_and_vmap_equals_eager():
    def series(x, v):
        _, terms = chainrule.jet(_matrix_energy, (x,), ([v, v * 0, v],))
        return np.stack(terms)
    x = onp.array([0.3, -1.2, 0.7, 0.4])
    v = onp.array([1.0, 0.5, -0.25, 2.0])
    eager = series(x, v)
    onp.testing.assert_array_equal(chainrule.jit(series)(x, v), eager)
    onp.testing.assert_array_equal(chainrule.jit(series)(x + 1, -v), series(x + 1, -v))
    xs, vs = onp.stack([x, x + 0.5]), onp.stack([v, -v])
    onp.testing.assert_allclose(chainrule.vmap(series)(xs, vs),
                                onp.stack([series(a, b) for a, b in zip(xs, vs)]), rtol=1e-13)
