"""fix16: the known wrong behaviours left open by the last session. Reference semantics:
jit ≡ eager (values to the bit, the warnings and the lines they name), laplacian ≡ the sum
of per-direction jets (and what they tell under NumPy's error state)."""

import inspect
import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno


def _told(call, *args):
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        call(*args)
    return [(m.category, str(m.message), m.filename, m.lineno) for m in told]


# ------------------------------------------------------------------ replayed warnings' lines
def _constant(x):
    return 2.0


def _warns_itself(x):
    warnings.warn("the function's own", stacklevel=1)
    return np.sum(x * 2.0)


@pytest.mark.parametrize("fun", [_constant, _warns_itself])
def test_jit_names_the_lines_eager_names_on_every_call(fun):
    # a transform's notice names each call's line (here _told's, for both); the function's
    # own warning its own line
    f = cr.grad(fun)
    jitted = cr.jit(f)
    x = onp.arange(3.0)
    for _ in range(3):
        assert _told(jitted, x) == _told(f, x)


def test_jit_replay_names_the_calling_line_from_two_places():
    jitted = cr.jit(cr.grad(_constant))
    x = onp.ones(2)
    lines = []
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        for _ in range(2):
            jitted(x); lines.append(_line())  # noqa: E702
            jitted(x)
            lines.append(_line() - 1)
    assert [m.lineno for m in told] == lines
    assert {m.filename for m in told} == {__file__}
