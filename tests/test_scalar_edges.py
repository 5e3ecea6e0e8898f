"""A Python float is differentiated exactly as the same value as np.float64 and as a
1-element array: bit for bit, warnings included (issue 16).

Every spec case whose differentiated arguments are float64 scalars is evaluated at edge
points (signed zeros, +-1, +-inf, nan, the ends of the float range, a negative base) in
both modes, with the point given three ways. Python floats used to reach the rules as
Python floats, whose arithmetic raises (``1 / 0.0``) or turns complex (``(-4.0) ** 0.5``)
where NumPy gives inf or nan with a warning.
"""

from __future__ import annotations

import math
import warnings

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import elementwise_grad, grad, jvp
from test_rule_specs import CASES

EDGES = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e308, -1e308, 1e-308, -4.0]



def _is_float_scalar(a) -> bool:
    return onp.shape(a) == () and onp.result_type(a) == onp.float64


# Cases with a differentiated float64 scalar argument (the others may be arrays).
SCALAR_CASES = [c for c in CASES
                if any(_is_float_scalar(c.args[i]) for i in c.argnums)
                and "fwd" in c.modes and "rev" in c.modes]


def _ids(cases):
    seen = {}
    ids = []
    for c in cases:
        seen[c.id] = seen.get(c.id, 0) + 1
        ids.append(c.id if seen[c.id] == 1 else f"{c.id}#{seen[c.id]}")
    return ids


def _outcome(compute):
    """(value as a float64 array or the exception's type, the warnings' categories)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = onp.asarray(compute(), dtype=onp.float64).reshape(-1)
        except Exception as error:  # the same error must come from every form
            value = type(error)
    return value, {w.category for w in caught if w.category is not UserWarning}


def _same(a, b) -> bool:
    (va, wa), (vb, wb) = a, b
    if isinstance(va, type) or isinstance(vb, type):
        return va is vb and wa == wb
    # the sign of a zero counts; the sign bit of a nan carries no meaning
    bits_equal = onp.array_equal(va, vb, equal_nan=True) and \
        onp.array_equal(onp.signbit(va) & ~onp.isnan(va), onp.signbit(vb) & ~onp.isnan(vb))
    return bits_equal and wa == wb


def _forms(case, argnum, edge):
    """The case's arguments with argument ``argnum`` at ``edge``, as Python floats, as
    np.float64 and, for a ufunc, with the differentiated one as a 1-element array."""
    as_float = [float(a) if _is_float_scalar(a) else a for a in case.args]
    as_float[argnum] = edge
    as_f64 = [onp.float64(a) if isinstance(a, float) else a for a in as_float]
    if not isinstance(case.ref, onp.ufunc):  # full(shape, x), sum(x)...: scalars only
        return as_float, as_f64
    as_array = list(as_float)
    as_array[argnum] = onp.array([edge])
    return as_float, as_f64, as_array


def _derivatives(case, argnum, args, tangent):
    """(elementwise_grad, jvp) outcomes of the case in argument ``argnum`` at ``args``."""
    def fun(x):
        return case.fun(*args[:argnum], x, *args[argnum + 1:], **case.kwargs)

    x = args[argnum]
    return (_outcome(lambda: elementwise_grad(fun)(x)),
            _outcome(lambda: jvp(fun, (x,), (tangent,))[1]))


@pytest.mark.parametrize("case", SCALAR_CASES, ids=_ids(SCALAR_CASES))
def test_python_float_derivative_equals_float64_and_array_bit_for_bit(case):
    assert SCALAR_CASES, "no scalar spec cases found"
    mismatches = []
    for argnum in (i for i in case.argnums if _is_float_scalar(case.args[i])):
        for edge in EDGES:
            forms = _forms(case, argnum, edge)
            tangents = (1.0, onp.float64(1.0), onp.ones(1))
            outcomes = [_derivatives(case, argnum, a, t) for a, t in zip(forms, tangents)]
            for mode in (0, 1):
                first, *others = (o[mode] for o in outcomes)
                if not all(_same(first, other) for other in others):
                    mismatches.append(f"{('grad', 'jvp')[mode]} in argument {argnum} at "
                                      f"{edge!r}: " + ", ".join(str(o[mode]) for o in outcomes))
    assert not mismatches, "\n".join(mismatches)


def test_the_property_covers_the_functions_the_issue_names():
    names = {c.name for c in SCALAR_CASES}
    for name in ("log", "log1p", "log2", "log10", "arcsin", "arccos", "arctanh", "sqrt",
                 "power", "arctan2", "divide", "mod", "exp", "reciprocal"):
        assert name in names, name


@pytest.mark.parametrize("fun, x, expected, category", [
    (np.log, 0.0, math.inf, RuntimeWarning),                    # was ZeroDivisionError
    (lambda x: x / 0.0, 2.0, math.inf, RuntimeWarning),         # was ZeroDivisionError
    (lambda x: x ** 3.0, 1e200, math.inf, RuntimeWarning),      # was OverflowError
    (lambda x: x ** 0.5, -4.0, math.nan, RuntimeWarning),       # was 1.53e-17, silently
    (lambda x: np.power(x, 1.5), -4.0, math.nan, RuntimeWarning),
    (lambda x: np.mod(1.0, x), 0.0, None, RuntimeWarning),
    (lambda x: np.arctan2(x, 0.0), 0.0, math.nan, RuntimeWarning),
])
def test_the_issues_examples_follow_numpy(fun, x, expected, category):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = grad(fun)(x)
    assert any(issubclass(w.category, category) for w in caught)
    if expected is not None:
        assert onp.array_equal(value, expected, equal_nan=True)
    assert _same(_outcome(lambda: grad(fun)(x)), _outcome(lambda: grad(fun)(onp.float64(x))))


@pytest.mark.parametrize("x", [0.0, -0.0, 2.0, -3.0])
def test_abs_has_a_zero_second_derivative_everywhere_it_is_real(x):
    """|x|'s derivative is x / |x| (0 at 0, the sign of a zero kept); its derivative is 0,
    at 0 too (x / where(|x|, |x|, 1) gave grad(grad(abs))(0) = 1, so laplacian(sum(abs))
    at 0 was the dimension). Under jit(grad) changing signs compile once."""
    import chainrule as cr
    import chainrule.numpy as cnp

    want = onp.copysign(onp.sign(x), x)
    got = cr.grad(cnp.abs)(x)
    assert got == want and onp.signbit(got) == onp.signbit(want)
    assert cr.grad(cr.grad(cnp.abs))(x) == 0.0
    assert cr.jvp(cr.grad(cnp.abs), (x,), (1.0,))[1] == 0.0
    assert list(cr.taylor_derivatives(cnp.abs, 2)(x)) == [abs(x), want, 0.0]
    assert cr.laplacian(lambda v: cnp.sum(cnp.abs(v)))(onp.full(3, x)) == 0.0
    g = cr.jit(cr.grad(lambda v: cnp.sum(cnp.abs(v))))
    for v in (onp.array([x, 1.0, -2.0]), onp.array([-1.0, x, 3.0]), onp.array([x, x, -x])):
        assert onp.array_equal(g(v), cr.grad(lambda v: cnp.sum(cnp.abs(v)))(v))
    assert g.cache_info().misses == 1
