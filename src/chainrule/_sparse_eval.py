"""Sparse Jacobians and Hessians evaluated: the pattern and its colouring are found once
(``_sparse``, ``_sparse_symmetric``), then each evaluation at an x is one sweep per
colour (a JVP of ``fun`` along the colour's seed, or a VJP pulling it back) and a gather
of the nonzeros.

With ``staged=True`` the sweeps are staged with ``chainrule.jit``: the first evaluation
traces them and keeps the straight-line NumPy program, later ones only run it (about
twice as fast on the Bratu residual). jit guards Python decisions on traced values, but
it takes the values ``fun`` reads from globals and closures at the first call as
constants: the reason staging is asked for, not the default.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as _np

from ._sparse import (
    _seeds,
    _sp,
    colour_columns,
    count_colours,
    direct_recovery,
    gradient,
    hessian_sparsity,
    jacobian_sparsity,
)
from ._sparse_symmetric import (
    acyclic_colouring,
    acyclic_recovery,
    star_colouring,
    star_recovery,
    symmetric_pattern,
)


def _sweep(fun: Callable, forward: bool) -> Callable:
    """``sweep(x, seeds)``: the compressed matrix, one row per seed (J @ seed forward,
    flat over the outputs; seed @ J reverse, flat over x)."""
    from . import numpy as cnp  # the layers above this one: imported on first use
    from ._core.pytree import tree_flatten
    from ._jaxlike import jvp, vjp

    def flat(tree):
        leaves = tree_flatten(tree)[0]
        return cnp.concatenate([cnp.ravel(leaf) for leaf in leaves])

    if forward:

        def sweep(x, seeds):
            return cnp.stack([flat(jvp(fun, (x,), (seed,))[1]) for seed in seeds])

    else:

        def sweep(x, seeds):
            out, pull = vjp(fun, x)
            if len(tree_flatten(out)[0]) != 1:
                raise NotImplementedError("reverse-mode sparse Jacobians take one output array")
            shape = _np.shape(out)
            return cnp.stack([cnp.ravel(pull(cnp.reshape(s, shape))[0]) for s in seeds])

    return sweep


class SparseJacobian:
    """The sparse Jacobian of ``fun`` (one array in, any arrays out, flattened): its
    pattern and colouring found once at ``x``, then evaluated at any x by
    ``self(x)`` in one sweep per colour, forward (columns) or reverse (rows), whichever
    needs fewer. ``pattern`` is boolean CSR; ``self(x)`` returns a float CSR matrix with
    the same pattern (explicit zeros where the value happens to be zero).
    ``staged=True``: run the sweeps as a ``chainrule.jit`` program (faster; the values
    ``fun`` reads from globals and closures are fixed at the first call)."""

    def __init__(
        self, fun: Callable, x: Any, local: bool = False, pattern=None, staged: bool = False
    ):
        self.fun, self.staged = fun, staged
        self.pattern = (
            jacobian_sparsity(fun, x, local)
            if pattern is None
            else _sp().csr_matrix(pattern, dtype=bool)
        )
        column_colours = colour_columns(self.pattern)
        row_colours = colour_columns(self.pattern.T)
        n_col, n_row = count_colours(column_colours), count_colours(row_colours)
        self.mode = "forward" if n_col <= n_row else "reverse"
        self.colours = column_colours if self.mode == "forward" else row_colours
        self.n_colours = n_col if self.mode == "forward" else n_row
        self._recover = direct_recovery(self.pattern, self.colours, self.mode == "reverse")
        self._seeds: dict = {}  # seed shape -> the seeds, made once
        self._sweep = None

    def _seeds_for(self, shape: tuple):
        seeds = self._seeds.get(shape)
        if seeds is None:
            seeds = self._seeds[shape] = _seeds(self.colours, shape, float)
            seeds.flags.writeable = False  # shared by every call
        return seeds

    def _compressed(self, x):
        """One row per colour: J @ seed (forward, flat over the outputs) or seed @ J
        (reverse, flat over x)."""
        forward = self.mode == "forward"
        if self._sweep is None:
            self._sweep = _sweep(self.fun, forward)
            if self.staged:
                from .jit import jit

                self._sweep = jit(self._sweep)
        seeds = self._seeds_for(x.shape if forward else (self.pattern.shape[0],))
        if not self.staged:
            return _np.asarray(self._sweep(x, seeds))
        with warnings.catch_warnings():
            # the sweep's own index maps (positions of slices and concatenations) are
            # constants of the program by design: jit's advice to pass them in does not
            # apply here (staged=True is documented to fix what fun reads at the first call)
            warnings.filterwarnings("ignore", "chainrule.jit: .* bakes in arrays", UserWarning)
            return _np.asarray(self._sweep(x, seeds))

    def __call__(self, x: Any):
        x = _np.asarray(x)
        if _np.iscomplexobj(x):
            raise TypeError(
                "sparse Jacobians take real inputs; split a complex x into "
                "its real and imaginary parts."
            )
        n_out = self.pattern.shape[0]
        if x.size != self.pattern.shape[1]:
            raise ValueError(
                f"the pattern is {self.pattern.shape}, for an x of {self.pattern.shape[1]} "
                f"elements; this x has {x.size}: make a new SparseJacobian."
            )
        if self.n_colours == 0:
            return _sp().csr_matrix(self.pattern.shape)
        compressed = self._compressed(x)
        expected = (self.n_colours, n_out if self.mode == "forward" else x.size)
        if compressed.shape != expected:
            raise ValueError(
                f"the pattern is {self.pattern.shape}, the Jacobian at this x has "
                f"{compressed.shape[1] if self.mode == 'forward' else n_out} rows: make a "
                f"new SparseJacobian."
            )
        return self._recover(compressed)


class SparseHessian(SparseJacobian):
    """The sparse Hessian of scalar ``fun``: the sparse Jacobian of its gradient, found
    forward over reverse (one forward sweep per colour through the gradient).

    ``colouring`` uses the symmetry (``_sparse_symmetric``): ``"star"`` (each entry read
    directly from one sweep), ``"acyclic"`` (fewer colours on banded patterns, entries
    recovered by substitution), ``"distance-1"`` (columns, as a Jacobian), or
    ``"auto"`` (the default): the star colouring, unless the acyclic one needs fewer
    colours. ``self.colouring`` is the one used."""

    def __init__(
        self,
        fun: Callable,
        x: Any,
        local: bool = False,
        pattern=None,
        colouring: str = "auto",
        staged: bool = False,
    ):
        if colouring not in ("auto", "star", "acyclic", "distance-1"):
            raise ValueError(
                f"colouring={colouring!r}: choose 'auto', 'star', 'acyclic' or 'distance-1'."
            )
        self.objective, self.staged = fun, staged
        pattern = hessian_sparsity(fun, x, local) if pattern is None else pattern
        pattern = symmetric_pattern(pattern)  # a Hessian is symmetric
        self.fun, self.pattern, self.mode = gradient(fun), pattern, "forward"
        candidates = {}
        if colouring in ("auto", "star"):
            candidates["star"] = star_colouring(pattern)
        if colouring in ("auto", "acyclic"):
            candidates["acyclic"] = acyclic_colouring(pattern)
        if colouring == "distance-1":
            candidates["distance-1"] = colour_columns(pattern)
        # the first of the fewest: star before acyclic, which sums along paths
        self.colouring = min(candidates, key=lambda name: count_colours(candidates[name]))
        self.colours = candidates[self.colouring]
        self.n_colours = count_colours(self.colours)
        if self.colouring == "star":
            self._recover = star_recovery(pattern, self.colours)
        elif self.colouring == "acyclic":
            self._recover = acyclic_recovery(pattern, self.colours)
        else:
            self._recover = direct_recovery(pattern, self.colours, by_rows=False)
        self._seeds, self._sweep = {}, None


def sparse_jacobian(fun: Callable, x: Any, local: bool = False):
    """The Jacobian of ``fun`` at array ``x`` as a ``scipy.sparse`` CSR matrix (flattened
    outputs by flattened inputs), from one sweep per colour of its sparsity pattern. To
    evaluate at many points, make a ``SparseJacobian(fun, x)`` once and call it."""
    return SparseJacobian(fun, x, local)(x)


def sparse_hessian(fun: Callable, x: Any, local: bool = False):
    """The Hessian of scalar ``fun`` at array ``x`` as a ``scipy.sparse`` CSR matrix.
    Reusable form: ``SparseHessian(fun, x)``."""
    return SparseHessian(fun, x, local)(x)


def sparse_transform(fun: Callable, hessian: bool, argnum, has_aux: bool) -> Callable:
    """``jacobian(fun, sparse=True)`` / ``hessian(fun, sparse=True)``: a function of x
    giving the CSR matrix; the pattern and colouring are found on the first call and
    reused for every x of the same shape and dtype (global patterns hold at every x)."""
    if argnum not in (None, 0) or has_aux:
        raise NotImplementedError(
            "sparse=True differentiates a function of one array argument (argnum 0) "
            "without has_aux; close over the other arguments (lambda x: fun(x, *rest))."
        )
    kind = SparseHessian if hessian else SparseJacobian
    cache: dict = {}

    def sparse_derivative(x):
        x = _np.asarray(x)
        key = (x.shape, x.dtype)
        evaluator = cache.get(key)
        if evaluator is None:
            evaluator = cache[key] = kind(fun, x)
        return evaluator(x)

    sparse_derivative.cache = cache  # the SparseJacobian/SparseHessian objects, by shape
    return sparse_derivative
