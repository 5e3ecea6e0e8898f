"""The one place chainrule finds the user's line (``_user_code.lines.user_frame``), used by
the warnings it re-issues, explain's sources and jit's notices (issue 36, the house)."""

import sys

import numpy as onp
import pytest

from chainrule._user_code.lines import user_frame


def test_the_users_frame_is_the_first_outside_chainrule_and_numpy():
    here = sys._getframe()
    assert user_frame(here) == (here, 0)
    # called back by NumPy (apply_along_axis, in numpy/lib): NumPy's frames are passed over
    found = []
    onp.apply_along_axis(lambda row: found.append(user_frame(sys._getframe(1))) or row, 0,
                         onp.ones(2))
    frame, passed = found[0]
    assert frame is here and passed >= 1
    assert user_frame(None) == (None, 0)


def test_the_transforms_error_settings_follow_the_callers_each_call():
    # (the settings a transform runs in are made once per caller's settings: each call
    # must still follow the caller's settings of the moment, and leave them as they were)
    import warnings

    import pytest

    import chainrule
    import chainrule.numpy as np

    def log_of(x):
        return np.log(x)

    g = chainrule.grad(log_of)
    before = (onp.geterr(), onp.geterrcall())
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert g(0.0) == onp.inf
        # log(0) on the way forward, 1 / 0 on the way back
        assert [(w.category, w.filename) for w in caught] == [(RuntimeWarning, __file__)] * 2
        with onp.errstate(divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("error")
            assert g(0.0) == onp.inf
        with onp.errstate(divide="raise"), pytest.raises(FloatingPointError):
            g(0.0)
        assert (onp.geterr(), onp.geterrcall()) == before
        with pytest.raises(TypeError):  # an error inside: the settings are given back
            g(onp.ones(2))
        assert (onp.geterr(), onp.geterrcall()) == before
    calls = []
    with onp.errstate(divide="call", call=lambda kind, flag: calls.append(kind)):
        g(0.0)
        g(0.0)
    assert calls == ["divide by zero"] * 4  # forward and back, twice


def test_numpy_1s_errstate_way_gives_the_same_warnings(monkeypatch):
    # (NumPy 1.26 has no settings object to set: np.errstate each call, as before)
    import warnings

    import chainrule
    import chainrule.numpy as np
    from chainrule._user_code import lines

    def log_of(x):
        return np.log(x)

    def warned():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert chainrule.grad(log_of)(0.0) == onp.inf
        return [(w.category, str(w.message), w.filename) for w in caught]

    fast = warned()
    monkeypatch.setattr(lines, "user_line_warnings", lines._errstate_at_user_line)
    assert warned() == fast and len(fast) == 2 and {w[2] for w in fast} == {__file__}
    with onp.errstate(divide="ignore"):
        assert warned() == []


# "Output seems independent of input." (autograd's warning) names the line that called
# the transform, from every entry point: a fixed stacklevel in the engine named
# chainrule's own lines (options.py, lines.py, functional.py ...) from most of them.
_X = onp.ones(2)


def _constant(x):
    return 1.0


def _constant_array(x):
    return onp.ones(2)


def _entry_points():
    import chainrule as cr
    import chainrule.core
    import chainrule.tracer

    return [
        lambda: cr.grad(_constant)(1.0),
        lambda: cr.value_and_grad(_constant)(1.0),
        lambda: cr.elementwise_grad(_constant_array)(_X),
        lambda: cr.jacobian(_constant_array)(_X),
        lambda: cr.hessian(_constant)(_X),
        lambda: cr.vjp(_constant_array, _X),
        lambda: cr.make_vjp(_constant_array)(_X),
        lambda: cr.jvp(_constant_array, (_X,), (_X,)),
        lambda: cr.make_jvp(_constant_array)(_X)(_X),
        lambda: cr.deriv(_constant)(1.0),
        lambda: cr.grad_and_aux(lambda x: (1.0, 2))(1.0),
        lambda: cr.jacrev(_constant_array)(_X),
        lambda: cr.jacfwd(_constant_array)(_X),
        lambda: cr.holomorphic_grad(lambda z: 1.0 + 0j)(1.0 + 0j),
        lambda: cr.vector_jacobian_product(_constant_array)(_X, _X),
        lambda: cr.hessian_vector_product(_constant)(_X, _X),
        lambda: cr.grad(cr.checkpoint(_constant))(1.0),
        lambda: cr.jit(cr.grad(_constant))(1.0),
        lambda: cr.grad(lambda x: cr.grad(_constant)(x) * x)(1.0),  # (nested: the inner)
        lambda: chainrule.tracer.trace(chainrule.core.VJPNode.new_root(), _constant, 1.0),
    ]


@pytest.mark.parametrize("k", range(len(_entry_points())))
def test_output_independent_of_input_names_the_users_line_from_every_entry_point(k):
    import warnings

    call = _entry_points()[k]
    for _ in range(2):  # (jit: the trace, then the program's replay)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        found = [(w.filename, w.lineno) for w in caught
                 if str(w.message) == "Output seems independent of input."]
        assert found and set(found) == {(__file__, call.__code__.co_firstlineno)}


def test_values_remembered_per_error_state_follow_every_change():
    # (_user_code.errstate: a value derived from NumPy's settings, computed once per
    # settings object; a context that sets derived settings and puts the caller's back)
    from chainrule._user_code.errstate import derived_settings, remembered

    computed = []

    def under(modes):
        computed.append(modes["under"])
        return modes["under"]

    value = remembered(under)
    raising = derived_settings(lambda modes: {k: "raise" for k in modes})
    before = onp.geterr()
    for _ in range(2):
        assert value() == before["under"]
        with onp.errstate(under="warn"):
            assert value() == "warn"
            with raising():
                assert onp.geterr() == dict.fromkeys(before, "raise") and value() == "raise"
            assert onp.geterr()["under"] == "warn" and value() == "warn"
        assert value() == before["under"] and onp.geterr() == before
    # (once per settings object: the caller's once; np.errstate makes a new one at each
    # entry, and the raising one is made from it)
    assert computed == [before["under"], "warn", "raise", "warn", "raise"]
