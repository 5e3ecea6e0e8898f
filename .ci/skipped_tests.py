"""A pytest plugin for .ci/run: appends the node id of every skipped test, and of every test
module skipped whole, to the file that $CI_SKIPPED_FILE names. It changes no outcome; CI
reruns those tests once the optional peers (PyTorch, Graphviz, Chromium) are installed."""

from __future__ import annotations

import os


def _record(nodeid: str) -> None:
    with open(os.environ["CI_SKIPPED_FILE"], "a", encoding="utf-8") as out:
        out.write(nodeid + "\n")


def pytest_runtest_logreport(report) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _record(report.nodeid)


def pytest_collectreport(report) -> None:
    if report.skipped:  # a module-level pytest.importorskip skips the whole module
        _record(report.nodeid)
