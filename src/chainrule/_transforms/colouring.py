"""Colourings of a pattern's columns, and the recovery of the derivative's entries from
the compressed sweeps (one sweep per colour).

A Jacobian's columns take a distance-1 colouring (``colour_columns``: two columns that
share a row differ), and each entry is read directly from its column's sweep
(``direct_recovery``). A symmetric (Hessian) pattern can do with fewer colours by using
the symmetry, and its entries are recovered from ``B[c] = H @ seed_c``. The pattern is
read as a graph: vertex i for row/column i, an edge i - j for each
off-diagonal nonzero. Both colourings are distance-1 (neighbours differ), so a diagonal
entry is read directly, ``H[i, i] = B[colour(i), i]``.

* **Star** (every path on four vertices uses three colours): each off-diagonal entry is
  read directly from one sweep. With two colours c, d the edges form stars; of an edge
  i - j one end has no other neighbour of the other end's colour, and that end's
  compressed value is the entry. Arrowhead patterns take 2 colours (distance-1: n).
* **Acyclic** (every cycle uses three colours): the edges of two colours form a forest,
  and the entries are recovered by substitution: each vertex i and neighbouring colour d
  give the equation ``B[d, i] = sum of H[i, j] over neighbours j of colour d``; on a tree
  they determine every edge once one equation per tree is left out (a tree has one edge
  fewer than vertices). Banded patterns of half-bandwidth b take b + 1 colours (star and
  distance-1: 2b + 1), at the price of values computed by sums along the trees' paths
  (rounding errors add up along them).

Both are greedy in the natural order, which keeps banded patterns at the counts above.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as _np

from .._core.rules import defjvp_direct, defvjp_direct
from .._core.tracer import primitive
from .._sparsity.patterns import scipy_sparse


def colour_columns(pattern) -> _np.ndarray:
    """A greedy distance-1 colouring of the columns of ``pattern``: two columns sharing a
    row get different colours, so one sweep per colour recovers every column (columns
    taken in order of decreasing count, which keeps the colour count low)."""
    sp = scipy_sparse()
    csc = sp.csc_matrix(pattern, dtype=bool)
    banded = _band_colouring(csc)
    if banded is not None:
        return banded
    graph = (csc.T @ csc).tocsr()  # columns that meet in some row
    n = graph.shape[0]
    colours = _np.full(n, -1, dtype=_np.intp)
    # plain Python lists: this loop runs once per column, numpy scalars would dominate it
    indptr, indices = graph.indptr.tolist(), graph.indices.tolist()
    order = _np.argsort(-_np.diff(csc.indptr), kind="stable").tolist()
    colour = [-1] * n
    mark = [-1] * (n + 1)  # mark[c] == j: colour c is taken next to column j
    for j in order:
        for k in indices[indptr[j] : indptr[j + 1]]:
            c = colour[k]
            if c >= 0:
                mark[c] = j
        c = 0
        while mark[c] == j:
            c += 1
        colour[j] = c
    colours = _np.asarray(colour, dtype=_np.intp)
    return colours



def _band_colouring(pattern):
    """``j mod w`` for the columns of a pattern whose nonzeros lie within a band of w
    diagonals, when some row fills the band (no colouring has fewer colours than a row
    has nonzeros, so this one is optimal, and found without the greedy loop); else None.
    Two columns closer than w may share a row; two further apart never do."""
    coo = pattern.tocoo()
    if coo.nnz == 0:
        return None
    offset = coo.col.astype(_np.intp) - coo.row
    width = int(offset.max() - offset.min()) + 1
    if int(_np.diff(pattern.tocsr().indptr).max()) != width:
        return None
    return _np.arange(pattern.shape[1], dtype=_np.intp) % width



def colour_seeds(colours: _np.ndarray, shape: tuple, dtype) -> _np.ndarray:
    """One seed per colour: the sum of the basis vectors of that colour's columns."""
    count = int(colours.max()) + 1 if colours.size else 0
    seeds = _np.zeros((count, colours.size), dtype=dtype)
    seeds[colours, _np.arange(colours.size)] = 1
    return seeds.reshape((count,) + tuple(shape))



def direct_recovery(pattern, colours: _np.ndarray, by_rows: bool) -> Callable:
    """A function giving ``pattern``'s nonzeros (in the order of its CSR form with sorted
    indices) read from the compressed sweeps: ``compressed[c]`` is J @ seed_c (forward;
    flat over rows) or seed_c @ J (reverse; flat over columns). Where each nonzero is read
    is found once, here; a call is one gather (traced where ``compressed`` is)."""
    sp = scipy_sparse()
    csr = sp.csr_matrix(pattern)
    csr.sort_indices()
    rows = _np.repeat(_np.arange(csr.shape[0]), _np.diff(csr.indptr))
    cols = csr.indices
    if by_rows:
        flat = colours[rows] * csr.shape[1] + cols
    else:
        flat = colours[cols] * csr.shape[0] + rows

    def recover(compressed: _np.ndarray):
        return _np.ravel(compressed)[flat]

    return recover



def count_colours(colours: _np.ndarray) -> int:
    return int(colours.max()) + 1 if colours.size else 0



def symmetric_pattern(pattern):
    """``pattern`` or its transpose, as boolean CSR with sorted indices."""
    sp = scipy_sparse()

    matrix = sp.csr_matrix(pattern, dtype=bool)
    matrix = (matrix + matrix.T).tocsr()
    matrix.sort_indices()
    return matrix


def _adjacency(pattern) -> tuple[list, list]:
    """Neighbour lists (CSR ``indptr``/``indices`` as Python lists) without the diagonal."""
    sp = scipy_sparse()

    coo = sp.coo_matrix(pattern)
    off = coo.row != coo.col
    graph = sp.csr_matrix(
        (_np.ones(int(off.sum()), dtype=bool), (coo.row[off], coo.col[off])), shape=coo.shape
    )
    graph.sort_indices()
    # plain Python lists: the greedy loops run per vertex, NumPy scalars would dominate
    return graph.indptr.tolist(), graph.indices.tolist()


def _full_band(pattern) -> int | None:
    """The half-bandwidth b of a pattern that holds every entry with |i - j| <= b (and
    none beyond), else None."""
    sp = scipy_sparse()

    coo = sp.coo_matrix(pattern)
    n = pattern.shape[0]
    if coo.nnz == 0:
        return None
    b = int(_np.abs(coo.col.astype(_np.intp) - coo.row).max())
    return b if coo.nnz == n * (2 * b + 1) - b * (b + 1) else None


def star_colouring(pattern) -> _np.ndarray:
    """A greedy star colouring of symmetric ``pattern`` (Gebremedhin, Manne and Pothen's
    algorithm; ``count[(x, c)]`` holds how many neighbours of x have colour c, so the
    test for a two-coloured path on four vertices is one look-up). A full band of
    half-bandwidth b takes ``i mod (2b + 1)`` (vertices within distance two differ),
    the greedy's answer, without the loop."""
    b = _full_band(pattern)
    if b is not None:
        return _np.arange(pattern.shape[0], dtype=_np.intp) % (2 * b + 1)
    indptr, indices = _adjacency(pattern)
    n = len(indptr) - 1
    colour = [-1] * n
    mark = [-1] * (n + 1)  # mark[c] == v: colour c is forbidden for v
    count: dict = {}
    for v in range(n):
        neighbours = indices[indptr[v] : indptr[v + 1]]
        for w in neighbours:
            cw = colour[w]
            if cw >= 0:
                mark[cw] = v
            for x in indices[indptr[w] : indptr[w + 1]]:
                cx = colour[x]
                if cx < 0 or x == v:
                    continue
                # v - w - x: x's colour on v would two-colour the path (with w
                # uncoloured, whatever it becomes), or x - w plus x - y (colour(y) ==
                # colour(w)) would make v - w - x - y two-coloured
                if cw < 0 or count.get((x, cw), 0) > 1:
                    mark[cx] = v
        c = 0
        while mark[c] == v:
            c += 1
        colour[v] = c
        for w in neighbours:
            count[(w, c)] = count.get((w, c), 0) + 1
    return _np.asarray(colour, dtype=_np.intp)


def acyclic_colouring(pattern) -> _np.ndarray:
    """A greedy acyclic colouring of symmetric ``pattern``: each vertex takes the smallest
    colour c that no neighbour has and that closes no cycle in a two-coloured forest.
    Colouring v with c joins, in the forest of colours (c, d), all neighbours of v of
    colour d; that closes a cycle when two of them are already in one tree, which a
    union-find per colour pair (keys ``(c, d, vertex)``) tells. A full band of
    half-bandwidth b takes ``i mod (b + 1)``, without the loop: optimal (b + 1 vertices
    in a row form a clique), and acyclic (two colours' vertices form paths)."""
    b = _full_band(pattern)
    if b is not None:
        return _np.arange(pattern.shape[0], dtype=_np.intp) % (b + 1)
    indptr, indices = _adjacency(pattern)
    n = len(indptr) - 1
    colour = [-1] * n
    parent: dict = {}

    def find(key):
        root = key
        while root in parent:
            root = parent[root]
        while key != root:  # path compression
            up = parent[key]
            parent[key] = root
            key = up
        return root

    def closes_cycle(v, c, coloured) -> bool:
        seen = set()
        for w in coloured:
            d = colour[w]
            root = find((min(c, d), max(c, d), w))
            if root in seen:
                return True
            seen.add(root)
        return False

    for v in range(n):
        coloured = [w for w in indices[indptr[v] : indptr[v + 1]] if colour[w] >= 0]
        taken = {colour[w] for w in coloured}
        c = 0
        while c in taken or closes_cycle(v, c, coloured):
            c += 1
        colour[v] = c
        for w in coloured:
            d = colour[w]
            pair = (min(c, d), max(c, d))
            mine, theirs = find(pair + (v,)), find(pair + (w,))
            if mine != theirs:
                parent[mine] = theirs
    return _np.asarray(colour, dtype=_np.intp)


def star_recovery(pattern, colours: _np.ndarray):
    """The Hessian's values on symmetric ``pattern`` (in the order of its CSR form, sorted)
    from ``compressed[c] = H @ seed_c`` (flat), read directly (star colouring): a function
    of ``compressed``, the index arrays found once."""
    sp = scipy_sparse()

    csr = sp.csr_matrix(pattern)
    csr.sort_indices()
    coo = csr.tocoo()
    rows, cols = coo.row, coo.col
    k = int(colours.max()) + 1 if colours.size else 1
    off = rows != cols
    # how many neighbours of each vertex have each colour
    count = _np.bincount(rows[off] * k + colours[cols[off]], minlength=pattern.shape[0] * k)
    # H[i, j] is B[colour(j), i] when j is i's only neighbour of its colour, else
    # B[colour(i), j] (then i is j's only neighbour of colour(i)); diagonal: B[colour(i), i]
    alone = (count[rows * k + colours[cols]] == 1) | ~off
    flat = _np.where(
        alone, colours[cols] * pattern.shape[0] + rows, colours[rows] * pattern.shape[0] + cols
    )

    def recover(compressed: _np.ndarray):
        return _np.ravel(compressed)[flat]

    return recover


def acyclic_recovery(pattern, colours: _np.ndarray):
    """The Hessian's values on symmetric ``pattern`` (in the order of its CSR form, sorted)
    from ``compressed[c] = H @ seed_c`` (flat), by substitution on the two-coloured trees
    (acyclic colouring): a function of ``compressed`` that solves with the trees'
    incidence matrix, one equation per tree left out, factorised once here."""
    from scipy.sparse.csgraph import connected_components  # (SciPy: on first use)
    from scipy.sparse.linalg import splu

    sp = scipy_sparse()

    n = pattern.shape[0]
    csr = sp.csr_matrix(pattern)
    csr.sort_indices()
    if csr.nnz == 0:  # (nothing to recover: SciPy's fancy indexing of no entries is sparse)
        return lambda compressed: _np.zeros(0)
    coo = csr.tocoo()
    rows, cols = coo.row, coo.col
    k = int(colours.max()) + 1 if colours.size else 1
    upper = rows < cols
    i, j = rows[upper], cols[upper]
    m = i.size
    # where each stored entry's value comes from: edge e (its upper-triangle number) or,
    # on the diagonal, m + the flat index of B[colour(i), i]
    edge_of = sp.csr_matrix((_np.arange(m) + 1, (i, j)), shape=pattern.shape)
    edge_of = edge_of + edge_of.T
    source = _np.asarray(edge_of[rows, cols]).ravel() - 1
    diagonal = rows == cols
    source[diagonal] = m + colours[rows[diagonal]] * n + rows[diagonal]
    factors, take = None, None
    if m:
        # equation (vertex v, colour d) is numbered v * k + d; edge i - j appears in
        # equations (i, colour(j)) and (j, colour(i))
        ends = _np.concatenate([i * k + colours[j], j * k + colours[i]])
        equations, where = _np.unique(ends, return_inverse=True)
        incidence = sp.csr_matrix(
            (_np.ones(2 * m), (where, _np.tile(_np.arange(m), 2))), shape=(equations.size, m)
        )
        link = sp.csr_matrix(
            (_np.ones(m, dtype=bool), (where[:m], where[m:])), shape=(equations.size,) * 2
        )
        _, tree = connected_components(link, directed=False)
        keep = _np.ones(equations.size, dtype=bool)
        keep[_np.unique(tree, return_index=True)[1]] = False  # one equation per tree
        if int(keep.sum()) != m:
            raise ValueError("the colouring is not acyclic: use a star colouring")
        factors = splu(incidence[keep].tocsc())
        take = (equations % k * n + equations // k)[keep]  # B[d, v] of each equation

    def recover(compressed: _np.ndarray):
        flat = _np.ravel(compressed)
        edges = substitute(flat[take], factors) if m else _np.zeros(0)
        return _np.concatenate([edges, flat])[source]

    return recover


@primitive
def substitute(values, factors, trans: str = "N"):
    """The edges of the two-coloured trees from their equations' values: a solve with the
    factorised incidence matrix (``trans="T"``: its transpose). Linear in ``values``, so a
    sweep traced by an outer trace (chainrule.jit, a derivative) is recovered too."""
    return factors.solve(_np.asarray(values, dtype=float), trans=trans)


_OTHER = {"N": "T", "T": "N"}
defvjp_direct(substitute, lambda g, ans, v, factors, trans="N":
              substitute(g, factors, _OTHER[trans]))  # fmt: skip
defjvp_direct(substitute, lambda t, ans, v, factors, trans="N": substitute(t, factors, trans))
