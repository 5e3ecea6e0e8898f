"""Taylor mode (chainrule.jet and what is built on it) against independent references:
nested forward mode (chainrule.jvp) at every spec case, mpmath to order 20, Hessians,
JAX's jet where it has the rule."""

from __future__ import annotations

import importlib
import math
import pkgutil
from math import factorial

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule import _specs as specs
from chainrule._core.pytree import tree_flatten
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
