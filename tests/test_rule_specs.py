"""Every wrapped function, from the spec tables: primal equals NumPy's, and the
derivatives pass check_grads in both modes to the case's order."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as onp
import pytest

from chainrule import _specs as specs
from chainrule.test_util import check_grads


def _all_cases():
    cases = []
    for info in sorted(pkgutil.iter_modules(specs.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{specs.__name__}.{info.name}")
        cases.extend(getattr(module, "CASES", []))
    return cases


CASES = _all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case):
    if case.ref is not None:
        got = case.fun(*case.args, **case.kwargs)
        want = case.ref(*case.args, **case.kwargs)
        onp.testing.assert_allclose(got, want, rtol=1e-6 if onp.result_type(want).itemsize > 4
                                    else 1e-5)
        assert onp.result_type(got) == onp.result_type(want)
    for argnum in case.argnums:
        check_grads(lambda *a: case.fun(*a, **case.kwargs), argnum, case.modes,
                    case.order)(*case.args)
