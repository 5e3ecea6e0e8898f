"""The spec tables on the strict CuPy stand-in: every derivative stays a Strict array and
equals NumPy's, in both modes and in Taylor mode (jet's series of order 3 along ones): the
GPU path of issue 8, checked without a GPU.

Runs ``benchmarks/duck_sweep.py strict`` as a test, one test per function and mode, so a
rule that makes a NumPy constant again (``numpy.eye(n)`` mixed with a CuPy array) fails
here. The cases still failing are listed below with the reason.
"""

from __future__ import annotations

import collections
import importlib
import warnings

import numpy as onp
import pytest
from benchmarks.duck_sweep import SPECS, applies, library, outcome

# Case ids (Case.id) not (yet) native and right on Strict, with the reason.
PRIMAL_REFUSED = "the primal itself refuses Strict, as CuPy would (not a rule's doing)"
SKIP = {
    # NumPy's full with a device fill value copies it to the host (CuPy refuses too: a user
    # calls cupy.full); chainrule's asarray and kin dispatch with like=, full could too
    "full[3|float64-row]": PRIMAL_REFUSED,
    "array[3-3|float64-rows]": PRIMAL_REFUSED + ": a NumPy row among Strict ones",
    # the spec passes NumPy arrays or numbers NumPy turns into arrays next to a Strict one
    "sum[2x3|float64|axis=1-where=[ True False  True]]": PRIMAL_REFUSED + ": where= on the host",
    "mean[2x3|float64|axis=0-where=[[ True False  True]\n [ True  True False]]]":
        PRIMAL_REFUSED + ": where= on the host",
    "min[2x3|float64|axis=0-where=[ True False  True]-initial=5.0]":
        PRIMAL_REFUSED + ": where= on the host",
    "interp[5-4|float64]": PRIMAL_REFUSED + ": xp on the host",
    "interp[4|float64-left-right]": PRIMAL_REFUSED + ": xp on the host",
    "hstack[3-s|float64]": PRIMAL_REFUSED + ": a number joined becomes a NumPy array",
    "block[3-s|float64-1d]": PRIMAL_REFUSED + ": a number joined becomes a NumPy array",
    "extract[2x3|float64]": PRIMAL_REFUSED + ": the condition on the host",
    "select[2x3-3|float64]": PRIMAL_REFUSED + ": the conditions on the host",
    "select[3-s|float64-default]": PRIMAL_REFUSED + ": the conditions on the host",
}


def _cases_by_name():
    by_name = collections.defaultdict(list)
    for name in SPECS:
        for case in importlib.import_module("chainrule._specs." + name).CASES:
            first = case.args[0] if case.args else None
            if case.argnums and isinstance(first, onp.ndarray) and first.size:
                by_name[case.name].append(case)
    return by_name


CASES = _cases_by_name()
LIB = library("strict")


@pytest.mark.parametrize("mode", ["rev", "fwd", "taylor"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_derivatives_stay_strict_and_right(name, mode):
    cases = [c for c in CASES[name] if applies(c, mode)]
    checked = 0
    for case in cases:
        if case.id in SKIP:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = outcome(case, LIB, mode)
        assert result == "native and right", f"{case.id} ({mode}): {result}"
        checked += 1
    assert checked or all(c.id in SKIP for c in cases)


def test_the_skip_list_is_current():
    """Every skipped case exists and still fails: a fixed one must leave the list."""
    by_id = {c.id: c for cases in CASES.values() for c in cases}
    assert set(SKIP) <= set(by_id), set(SKIP) - set(by_id)
    for case_id in SKIP:
        case = by_id[case_id]
        with pytest.raises(TypeError), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outcome(case, LIB, case.modes[0])
