"""The one place chainrule finds the user's line (``_user_code.lines.user_frame``), used by
the warnings it re-issues, explain's sources and jit's notices (issue 36, the house)."""

import sys

import numpy as onp

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
