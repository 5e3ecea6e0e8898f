"""The fixed-seed CI slice of every contract (``python -m tests.contracts`` runs more).

Each contract module sets ``CI_CASES``, its share of the slice (the whole slice stays
under a minute); a failure prints the generated program, its arguments and the
differences, which reproduce with ``python -m tests.contracts --only NAME --start I
--programs 1``.
"""

from __future__ import annotations

import pytest

from . import contracts
from ._runner import run

CONTRACTS = contracts()


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_contract_holds_on_the_ci_slice(name):
    module = CONTRACTS[name]
    report = run(module, getattr(module, "CI_CASES", 100), seed=0, max_failures=3)
    assert not report.failures, report.summary() + "\n\n" + "\n\n".join(
        str(f) for f in report.failures)
    assert report.cases == getattr(module, "CI_CASES", 100)


def test_the_harness_catches_a_planted_error(monkeypatch):
    """The modes contract fails when cos's VJP is off by 0.1%."""
    import chainrule.numpy as np
    from chainrule._core.rule_table import primitive_vjps

    rule = primitive_vjps[np.cos]
    monkeypatch.setitem(primitive_vjps, np.cos, lambda *a, **k: _scaled(rule(*a, **k)))
    report = run(CONTRACTS["modes"], 200, seed=0, max_failures=1)
    assert report.failures, "a VJP off by 0.1% went unnoticed for 200 programs"


def _scaled(vjp):
    return lambda g: vjp(g) * 1.001


def test_the_solvers_contract_catches_a_planted_error(monkeypatch):
    """The solvers contract fails when implicit derivatives are off by 0.1%."""
    from chainrule.scipy.optimize import _implicit_system

    solve = _implicit_system._linear_solve
    monkeypatch.setattr(_implicit_system, "_linear_solve", lambda *a, **k: solve(*a, **k) * 1.001)
    report = run(CONTRACTS["solvers"], 20, seed=0, max_failures=1)
    assert report.failures, "an implicit derivative off by 0.1% went unnoticed for 20 cases"


def test_the_taylor_contract_catches_an_error_jet_shares_with_nested_jvp(monkeypatch):
    """The taylor contract fails when prod's rules (which jet and nested jvp both use)
    are off by 0.1%: its central differences along the curve see it."""
    from chainrule.numpy.rules import reductions

    others = reductions._prod_others
    monkeypatch.setattr(reductions, "_prod_others", lambda *a, **k: others(*a, **k) * 1.001)
    report = run(CONTRACTS["taylor"], 200, seed=0, max_failures=1)
    assert report.failures, "prod's derivative off by 0.1% went unnoticed for 200 cases"


def test_the_vmap_contract_catches_an_error_below_its_conditioning_allowance(monkeypatch):
    """The vmap contract compares programs with contractions to 1e-12, or to how far the
    loop's answers move when x moves by one unit in the last place: a mapped answer off by
    1e-9 (relative) is still caught, the allowance being for ill-conditioned programs."""
    import numpy as onp

    import chainrule
    from chainrule._core.pytree import tree_map

    vmap = chainrule.vmap

    def off(*a, **k):
        mapped = vmap(*a, **k)
        return lambda *args: tree_map(
            lambda v: v * (1 + 1e-9) if onp.asarray(v).dtype.kind == "f" else v, mapped(*args))

    monkeypatch.setattr(chainrule, "vmap", off)
    report = run(CONTRACTS["vmap"], 300, seed=0, max_failures=300)
    from .vmap import _CONTRACTIONS, _KERNELS

    toleranced = [f for f in report.failures
                  if any(op in str(f) for op in _CONTRACTIONS + _KERNELS)]
    assert toleranced, "answers off by 1e-9 went unnoticed in 300 programs compared to 1e-12"
