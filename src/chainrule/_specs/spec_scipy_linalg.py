"""Specs for chainrule.scipy.linalg: primal equals SciPy's, derivatives in both modes.

Symmetric inputs are made from a free matrix inside the case (a a^T + 4 I) so that
finite differences stay on symmetric matrices; eigenvectors are given a sign
convention (first row positive) so that they are continuous.
"""

import numpy as onp

from . import Case, make

try:
    import scipy.linalg as ssl

    import chainrule.numpy as np
    import chainrule.scipy.linalg as la
except ImportError:  # SciPy is optional: no cases without it
    ssl = None


def _spd(a):
    return a @ a.T + 4 * onp.eye(a.shape[-1])


def _canon(v):
    return v * np.sign(v[:1, :])


def _canon_ref(v):
    return v * onp.sign(v[:1, :])


def _cases():
    a = make((4, 4), seed=1)
    well = a + 4 * onp.eye(4)
    b = make((4, 3), seed=2)
    b1 = make((4,), seed=3)
    sym_factor = make((4, 4), seed=4)
    ab = make((4, 5), seed=5)
    ab[2] += 5.0  # (l, u) = (1, 2): the main diagonal is row u
    band_b = make((5, 2), seed=6)
    cases = []
    for lower in (True, False):
        tri = onp.tril(well) if lower else onp.triu(well)
        for trans in (0, 1):
            for rhs in (b, b1):
                kw = dict(trans=trans, lower=lower)
                cases.append(Case("linalg.solve_triangular", la.solve_triangular, (tri, rhs), kw,
                                  argnums=(0, 1), ref=ssl.solve_triangular))
        cases.append(Case("linalg.solve_triangular", la.solve_triangular, (tri, b),
                          dict(lower=lower, unit_diagonal=True), argnums=(0, 1),
                          ref=ssl.solve_triangular))
    for rhs in (b, b1):
        cases.append(Case("linalg.solve", la.solve, (well, rhs), argnums=(0, 1), ref=ssl.solve))
    cases.append(Case("linalg.solve", la.solve, (well, b), dict(transposed=True), argnums=(0, 1),
                      ref=ssl.solve))
    for assume_a, kw in [("pos", {}), ("sym", dict(lower=True)), ("lower triangular", {}),
                         ("diagonal", {})]:
        cases.append(Case("linalg.solve", la.solve, (_spd(sym_factor), b),
                          dict(assume_a=assume_a, **kw), argnums=(0, 1), ref=ssl.solve))
    cases += [
        Case("linalg.solve_banded", lambda ab, b: la.solve_banded((1, 2), ab, b), (ab, band_b),
             argnums=(0, 1), ref=lambda ab, b: ssl.solve_banded((1, 2), ab, b)),
        Case("linalg.solve_banded", lambda ab, b: la.solve_banded((1, 2), ab, b),
             (ab, band_b[:, 0]), argnums=(0, 1), ref=lambda ab, b: ssl.solve_banded((1, 2), ab, b)),
        Case("linalg.solve_sylvester", la.solve_sylvester, (well, well.T - 1.0, b @ b.T),
             argnums=(0, 1, 2), ref=ssl.solve_sylvester),
        Case("linalg.sqrtm", la.sqrtm, (_spd(sym_factor),), ref=ssl.sqrtm),
        Case("linalg.sqrtm", la.sqrtm, (well,), ref=ssl.sqrtm, label="nonsymmetric"),
        Case("linalg.expm", la.expm, (a / 3,), ref=ssl.expm),
        *[Case("linalg.cholesky", la.cholesky, (_spd(sym_factor),), dict(lower=lo),
               ref=ssl.cholesky) for lo in (True, False)],
        *[Case("linalg.cho_solve", lambda s, b, lo=lo: la.cho_solve(la.cho_factor(s, lower=lo), b),
               (_spd(sym_factor), b), argnums=(0, 1), label=f"lower={lo}",
               ref=lambda s, b, lo=lo: ssl.cho_solve(ssl.cho_factor(s, lower=lo), b))
          for lo in (True, False)],
        Case("linalg.lu_factor", lambda a: la.lu_factor(a)[0], (a + 0.5 * onp.eye(4),),
             ref=lambda a: ssl.lu_factor(a)[0]),
        *[Case("linalg.lu_solve", lambda a, b, tr=tr: la.lu_solve(la.lu_factor(a), b, trans=tr),
               (a + 0.5 * onp.eye(4), b), argnums=(0, 1), label=f"trans={tr}",
               ref=lambda a, b, tr=tr: ssl.lu_solve(ssl.lu_factor(a), b, trans=tr))
          for tr in (0, 1)],
        Case("linalg.eigh", lambda a: la.eigh(a)[0], (_spd(sym_factor),),
             ref=lambda a: ssl.eigh(a)[0], label="values"),
        Case("linalg.eigh", lambda a: _canon(la.eigh(a)[1]), (_spd(sym_factor),),
             ref=lambda a: _canon_ref(ssl.eigh(a)[1]), label="vectors"),
        Case("linalg.eigh", lambda a, b: la.eigh(a, b, eigvals_only=True),
             (_spd(sym_factor), _spd(a)), argnums=(0, 1),
             ref=lambda a, b: ssl.eigh(a, b, eigvals_only=True), label="generalized-values"),
        Case("linalg.eigh", lambda a, b: _canon(la.eigh(a, b, lower=False)[1]),
             (_spd(sym_factor), _spd(a)), argnums=(0, 1),
             ref=lambda a, b: _canon_ref(ssl.eigh(a, b, lower=False)[1]),
             label="generalized-vectors"),
    ]
    return cases


CASES = [] if ssl is None else _cases()
