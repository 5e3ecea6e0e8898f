"""Star and acyclic colourings of Hessian patterns: colour counts on banded, arrowhead and
random symmetric patterns, the colourings' defining properties checked by brute force,
and recovered Hessians equal to dense ones."""

import itertools

import numpy as onp
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

import chainrule
import chainrule.numpy as np
from chainrule._transforms.colouring import acyclic_colouring, colour_columns, star_colouring

rng = onp.random.default_rng(5)


def banded_pattern(n, half_bandwidth):
    offsets = range(-half_bandwidth, half_bandwidth + 1)
    return sp.diags([onp.ones(n)] * len(offsets), offsets, shape=(n, n), format="csr") != 0


def arrowhead_pattern(n):
    dense = onp.eye(n, dtype=bool)
    dense[0, :] = dense[:, 0] = True
    return sp.csr_matrix(dense)


def random_pattern(n, density, seed):
    r = sp.random(n, n, density=density, random_state=seed, format="csr") != 0
    return ((r + r.T) + sp.identity(n, format="csr")).tocsr() != 0


def edges_of(pattern):
    coo = sp.triu(pattern, 1).tocoo()
    return list(zip(coo.row.tolist(), coo.col.tolist()))


def two_coloured_parts(pattern, colours):
    """For each pair of colours, the subgraph of the edges between them (as CSR)."""
    n = pattern.shape[0]
    for a, b in itertools.combinations(range(colours.max() + 1), 2):
        pairs = [(i, j) for i, j in edges_of(pattern) if {colours[i], colours[j]} == {a, b}]
        if pairs:
            i, j = onp.array(pairs).T
            yield sp.csr_matrix((onp.ones(i.size), (i, j)), shape=(n, n)) != 0


def assert_distance_one(pattern, colours):
    for i, j in edges_of(pattern):
        assert colours[i] != colours[j]


def assert_star(pattern, colours):
    """Every component of a two-coloured subgraph is a star: a tree with at most one
    vertex of degree above one (so no path on four vertices uses two colours)."""
    assert_distance_one(pattern, colours)
    for part in two_coloured_parts(pattern, colours):
        sym = (part + part.T).tocsr()
        degree = onp.diff(sym.indptr)
        _, label = connected_components(sym, directed=False)
        for tree in onp.unique(label[degree > 0]):
            members = label == tree
            assert (degree[members] > 1).sum() <= 1
            assert sym[members][:, members].nnz // 2 == members.sum() - 1


def assert_acyclic(pattern, colours):
    """Every two-coloured subgraph is a forest: edges = vertices - components."""
    assert_distance_one(pattern, colours)
    for part in two_coloured_parts(pattern, colours):
        sym = (part + part.T).tocsr()
        used = onp.diff(sym.indptr) > 0
        n_comp, label = connected_components(sym, directed=False)
        trees = onp.unique(label[used]).size
        assert part.nnz == used.sum() - trees


@pytest.mark.parametrize("half_bandwidth", [1, 2, 3, 5])
def test_banded_patterns_take_bandwidth_plus_one_colours(half_bandwidth):
    pattern = banded_pattern(60, half_bandwidth)
    acyclic, star = acyclic_colouring(pattern), star_colouring(pattern)
    assert acyclic.max() + 1 == half_bandwidth + 1
    assert_acyclic(pattern, acyclic)
    # a star colouring of a band needs 2b + 1, as distance-1 (brute force for b = 2: no
    # star colouring with 4 colours exists on 30 vertices), so it gains nothing here
    assert star.max() + 1 == 2 * half_bandwidth + 1
    assert_star(pattern, star)


def test_arrowhead_takes_two_colours():
    pattern = arrowhead_pattern(30)
    star = star_colouring(pattern)
    assert star.max() + 1 == 2 and colour_columns(pattern).max() + 1 == 30
    assert_star(pattern, star)
    assert acyclic_colouring(pattern).max() + 1 == 2


@pytest.mark.parametrize("seed", range(4))
def test_random_patterns_are_star_and_acyclic(seed):
    pattern = random_pattern(40, 0.06, seed)
    star, acyclic = star_colouring(pattern), acyclic_colouring(pattern)
    assert_star(pattern, star)
    assert_acyclic(pattern, acyclic)
    distance_one = colour_columns(pattern).max() + 1
    assert acyclic.max() <= star.max() and star.max() + 1 <= distance_one + 2


def quadratic_plus_nonlinear(M):
    """sin(u) . (M sin(u)) + sum exp(u): a Hessian with M's pattern plus the diagonal."""
    return lambda u: np.sin(u) @ (M @ np.sin(u)) + np.sum(np.exp(u) * u)


def separable_plus_banded(u):
    # separable, plus couplings at distances 1 and 2: a pentadiagonal Hessian
    return np.sum(u**4) + np.sum(np.sin(u[1:] * u[:-1])) + np.sum((u[2:] - u[:-2]) ** 3)


def arrowhead_objective(u):
    return np.sum(u**3) + u[0] * np.sum(np.sin(u[1:]))


def chain_objective(u):
    return np.sum(np.exp(u[1:] - u[:-1]) ** 2) + np.sum(np.log(u))


OBJECTIVES = [
    ("pentadiagonal", separable_plus_banded, 3),
    ("tridiagonal", chain_objective, 2),
    ("arrowhead", arrowhead_objective, 2),
    ("random", quadratic_plus_nonlinear(random_pattern(30, 0.08, 7).astype(float)), None),
    ("random-scipy", quadratic_plus_nonlinear(random_pattern(30, 0.1, 8).astype(float)), None),
]


@pytest.mark.parametrize("colouring", ["auto", "star", "acyclic", "distance-1"])
@pytest.mark.parametrize("name,fun,colours", OBJECTIVES, ids=[o[0] for o in OBJECTIVES])
def test_recovered_hessians_equal_dense(name, fun, colours, colouring):
    x = rng.random(30) + 0.5
    dense = chainrule.hessian(fun)(x)
    hess = chainrule.SparseHessian(fun, x, colouring=colouring)
    assert hess.colouring == (colouring if colouring != "auto" else hess.colouring)
    onp.testing.assert_array_equal(hess.pattern.toarray(), dense != 0)
    for point in (x, rng.random(30) + 0.5):  # reused at a new point
        values = hess(point)
        assert values.format == "csr"
        expected = chainrule.hessian(fun)(point)
        onp.testing.assert_allclose(values.toarray(), expected, rtol=1e-12, atol=1e-12)
    if colours is not None and colouring == "auto":
        assert hess.n_colours == colours


def test_auto_takes_the_fewest_colours():
    x = rng.random(30) + 0.5
    assert chainrule.SparseHessian(separable_plus_banded, x).colouring == "acyclic"
    assert chainrule.SparseHessian(arrowhead_objective, x).colouring == "star"
    counts = {
        c: chainrule.SparseHessian(OBJECTIVES[3][1], x, colouring=c).n_colours
        for c in ("auto", "star", "acyclic", "distance-1")
    }
    assert counts["auto"] == min(counts.values())


def test_unknown_colouring_is_refused():
    with pytest.raises(ValueError, match="'star', 'acyclic'"):
        chainrule.SparseHessian(chain_objective, onp.ones(4), colouring="greedy")


def test_a_band_with_holes_takes_the_greedy_loops():
    # a pentadiagonal pattern with some couplings missing: no full band, so the greedy
    # colourings run (a full band is coloured i mod (b + 1) / i mod (2b + 1) directly)
    dense = banded_pattern(40, 2).toarray()
    for i in (3, 10, 11, 25):
        dense[i, i + 2] = dense[i + 2, i] = False
    pattern = sp.csr_matrix(dense)
    acyclic, star = acyclic_colouring(pattern), star_colouring(pattern)
    assert_acyclic(pattern, acyclic)
    assert_star(pattern, star)
    assert acyclic.max() + 1 <= 3 < star.max() + 1


def test_columns_of_a_band_are_coloured_modulo_its_width():
    offsets = [-2, -1, 0, 1, 2, 3]
    full = sp.diags([1.0] * 6, offsets, shape=(30, 30), format="csr") != 0
    onp.testing.assert_array_equal(colour_columns(full), onp.arange(30) % 6)
    # rows with holes: the greedy loop, which needs fewer than the band's width here
    holes = sp.diags([1.0] * 4, [-2, 0, 1, 3], shape=(30, 30), format="csr") != 0
    for pattern, most in ((full, 6), (holes, 5)):
        colours = colour_columns(pattern)
        assert colours.max() + 1 <= most
        dense = pattern.toarray()
        for c in range(colours.max() + 1):
            assert dense[:, colours == c].sum(axis=1).max() <= 1


def test_staged_hessians_equal_unstaged_ones():
    x = rng.random(30) + 0.5
    staged = chainrule.SparseHessian(separable_plus_banded, x, staged=True)
    eager = chainrule.SparseHessian(separable_plus_banded, x)
    for point in (x, rng.random(30) + 0.5):
        onp.testing.assert_allclose(
            staged(point).toarray(), eager(point).toarray(), rtol=1e-14, atol=1e-14
        )


def test_hessian_of_a_form_with_a_scipy_sparse_constant():
    # u . (A u) with A a scipy.sparse constant (the operator): Hessian A + A^T + diag(exp)
    A = sp.random(30, 30, density=0.05, random_state=3, format="csr")
    fun = lambda u: u @ (A @ u) + np.sum(np.exp(u))  # noqa: E731
    x = rng.random(30)
    expected = (A + A.T).toarray() + onp.diag(onp.exp(x))  # hand-derived
    pattern = chainrule.hessian_sparsity(fun, x).toarray()
    onp.testing.assert_array_equal(pattern, expected != 0)
    for colouring in ("star", "acyclic"):
        values = chainrule.SparseHessian(fun, x, colouring=colouring)(x).toarray()
        onp.testing.assert_allclose(values, expected, rtol=1e-13, atol=1e-13)


def test_the_acyclic_substitution_is_differentiable():
    # a sweep traced by an outer trace (jit, a derivative) is recovered through this solve
    from scipy.sparse.linalg import splu

    from chainrule._transforms.colouring import substitute
    from chainrule.test_util import check_grads

    M = sp.csc_matrix(onp.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 4.0]]))
    factors, b = splu(M), onp.array([1.0, -2.0, 0.5])
    onp.testing.assert_allclose(substitute(b, factors), onp.linalg.solve(M.toarray(), b))
    onp.testing.assert_allclose(substitute(b, factors, "T"), onp.linalg.solve(M.toarray().T, b))
    check_grads(lambda v: substitute(v, factors) ** 2, modes=["fwd", "rev"], order=2)(b)
