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
