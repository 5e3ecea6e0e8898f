"""The contracts with every constant array held (``SNAPSHOT_COPY_MAX = 0``): grad's window
(reach.Window) opens wherever a program's function reaches an array, its runs again after a
refused write included, which the contracts' small arrays would never reach at the real
threshold. ``PYTHONPATH=src python -m tests.held_contracts --only modes --programs 20000``
(the contracts' own options); prints, after the contracts' summary, how many windows were
asked for, opened and undone (a run again), and how many arrays nodes held.
"""

from __future__ import annotations

import atexit
import runpy
import sys

from chainrule._user_code import reach
from chainrule.numpy import numpy_vspaces

counts = dict.fromkeys(("asked", "opened", "undone", "held"), 0)
_around, _undo, _holds = reach.Window.around.__func__, reach.Window.undo, reach.Window.holds


def _counted_around(cls, fun, x, at_least):
    counts["asked"] += 1
    window = _around(cls, fun, x, at_least)
    counts["opened"] += window is not None
    return window


def _counted_undo(self):
    counts["undone"] += 1
    _undo(self)


def _counted_holds(self, a):
    held = _holds(self, a)
    counts["held"] += held
    return held


if __name__ == "__main__":
    numpy_vspaces.SNAPSHOT_COPY_MAX = 0
    reach.Window.around = classmethod(_counted_around)
    reach.Window.undo = _counted_undo
    reach.Window.holds = _counted_holds
    atexit.register(lambda: print("windows:", counts, file=sys.stderr))
    sys.argv = ["tests.contracts", *sys.argv[1:]]
    runpy.run_module("tests.contracts", run_name="__main__")
