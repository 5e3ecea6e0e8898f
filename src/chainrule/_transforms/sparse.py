"""Sparse Jacobians and Hessians evaluated: the pattern and its colouring are found once
(``chainrule._sparsity``, ``colouring``), then each evaluation at an x is
one sweep per colour (a JVP of ``fun`` along the colour's seed, or a VJP pulling it back)
and a gather of the nonzeros.

A pattern is reused only where it holds (the contract: the sparse derivative equals the
dense one at every x). A global pattern whose record took no decision holds at every x,
for the values ``fun`` reads from outside x as they were (``_Constants`` checks them at
each call and has ``fun`` recorded again where they changed).
A *guarded* one (``Detection``) is checked at each call: ``fun`` is recorded again at x
and the record's ``structure_key`` picks the colouring of that structure, found and kept
on first sight. A local pattern (``local=True``) is found again at each new x, and its
colouring kept while the new pattern lies inside the old one.

With ``staged=True`` the sweeps are staged with ``chainrule.jit``: the first evaluation
traces them and keeps the straight-line NumPy program, later ones only run it (about
twice as fast on the Bratu residual). jit guards Python decisions on traced values and
takes the values ``fun`` reads from globals and closures as constants of the program; the
evaluator's check of those values (``_Constants``) has the sweeps staged again where one
changed.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as _np

from .. import numpy as anp
from .._core import forward as forward_mode
from .._core import reverse
from .._core.pytree import tree_flatten, tree_unflatten
from .._core.tracer import getval, isbox
from .._sparsity.detection import constant_key, gradient, record, recorded_pattern, structure_key
from .._sparsity.patterns import scipy_sparse
from .._sparsity.products import is_sparse_type, with_values
from .._user_code import reach
from .._user_code.lines import user_line_warnings
from .colouring import (
    acyclic_colouring,
    acyclic_recovery,
    colour_columns,
    colour_seeds,
    count_colours,
    direct_recovery,
    star_colouring,
    star_recovery,
    symmetric_pattern,
)

# colourings kept per evaluator for the structures of a guarded record (oldest dropped)
_MAX_STRUCTURES = 16


def _sweep(fun: Callable, forward: bool) -> Callable:
    """``sweep(x, seeds)``: the compressed matrix, one row per seed (J @ seed forward,
    flat over the output leaves; seed @ J reverse, flat over x)."""
    def flat(tree):
        leaves = tree_flatten(tree)[0]
        return anp.concatenate([anp.ravel(leaf) for leaf in leaves])

    if forward:

        def sweep(x, seeds):
            with user_line_warnings():
                push = forward_mode.make_jvp(fun, x)
                return anp.stack([flat(push(seed)[1]) for seed in seeds])

    else:

        def sweep(x, seeds):
            with user_line_warnings():
                pull, out = reverse.make_vjp(fun, x)
                leaves, treedef = tree_flatten(out)
                shapes = [_np.shape(leaf) for leaf in leaves]
                ends = _np.cumsum([0] + [int(_np.prod(s, dtype=int)) for s in shapes])

                def cotangent(seed):  # a seed flat over the output leaves, as the output
                    parts = [seed[a:b].reshape(s)
                             for a, b, s in zip(ends[:-1], ends[1:], shapes)]
                    return tree_unflatten(treedef, parts)

                return anp.stack([anp.ravel(pull(cotangent(s))) for s in seeds])

    return sweep


class _Colouring:
    """One pattern's colouring and the gather that recovers its nonzeros (``recover``: the
    values of ``template``, the pattern's CSR form with sorted indices), with the seeds of
    its sweeps made once per shape; ``name`` says which colouring."""

    __slots__ = ("pattern", "mode", "name", "colours", "n_colours", "recover", "seeds",
                 "template")  # fmt: skip

    def __init__(self, pattern, mode: str, name: str, colours: _np.ndarray, recover: Callable):
        self.pattern, self.mode, self.name = pattern, mode, name
        self.colours, self.recover = colours, recover
        # an empty pattern takes no sweep (its Jacobian is zero)
        self.n_colours = count_colours(colours) if pattern.nnz else 0
        template = scipy_sparse().csr_matrix(pattern, dtype=float)
        template.sort_indices()
        self.template = template
        self.seeds: dict = {}

    def seeds_for(self, shape: tuple):
        seeds = self.seeds.get(shape)
        if seeds is None:
            seeds = self.seeds[shape] = colour_seeds(self.colours, shape, float)
            seeds.flags.writeable = False  # shared by every call
        return seeds


def _point(x) -> _np.ndarray:
    """The value of ``x`` as an array (of a traced ``x``: its value)."""
    try:
        point = _np.asarray(getval(x))
    except TypeError as refused:  # (CuPy's arrays refuse the copy to the host)
        kind = type(getval(x))
        raise TypeError(
            f"sparse Jacobians and Hessians are scipy.sparse matrices of NumPy values, "
            f"evaluated on the host; this x is a {kind.__module__}.{kind.__name__}, whose "
            f"library refuses that copy. Use the dense derivative (jacobian or hessian "
            f"without sparse=True), which runs in x's own array library, or pass a NumPy x "
            f"(for CuPy: cupy.asnumpy(x)) to a function of NumPy arrays. "
            f"(jacobian_sparsity and hessian_sparsity take x as it is.)"
        ) from refused
    if point.dtype == object:
        raise TypeError(
            f"sparse Jacobians and Hessians take one array x, not a {type(x).__name__}: "
            f"for several arrays or a container, differentiate a function of one vector "
            f"(chainrule.misc.flatten(x) gives it and the function rebuilding x)."
        )
    return point


class _Constants:
    """What ``fun`` reads from outside x (closures, globals, defaults, the attributes its
    code names: ``reach.Reach``) and a fingerprint of each array and SciPy sparse matrix
    reached. A record takes those values as constants, and its pattern may read them
    (``np.dot(C, x)`` reads C's zeros, ``x[perm]`` reads perm, ``A @ x`` A's stored
    coordinates), so a pattern found from it holds while they are unchanged: the same
    objects in the same places, with the same fingerprints (``unchanged``), or, where
    one was rebound, an equal value (``equals``)."""

    __slots__ = ("reach", "watched", "fingerprints")

    def __init__(self, fun: Callable):
        self.reach = reach.Reach([fun], complete=True)  # (see Reach: every item, methods' reads)
        self.watched = self.reach.arrays + _watched_values(self.reach)
        self.fingerprints = [constant_key(value) for value in self.watched]

    def unchanged(self) -> bool:
        return self.reach.current() and all(
            constant_key(value) == before
            for value, before in zip(self.watched, self.fingerprints)
        )

    def equals(self, before: _Constants) -> bool:
        """Whether these values, found after ``before``'s changed, equal ``before``'s as
        they were: the same reads in the same order (of the same places, or of equal
        containers in them), each answering the same object or an equal one (an array
        with ``before``'s fingerprint, a number or string with its text, a list or tuple
        whose items are equal in turn). A pattern found for ``before`` then
        holds for these: a global rebound to an equal array is not recorded again."""
        now = dict(zip(map(id, self.watched), self.fingerprints))
        then = dict(zip(map(id, before.watched), before.fingerprints))

        def equal(new, old) -> bool:
            if id(old) in then:  # (the same object too: it may have changed in place)
                # (a sparse matrix's fingerprint is its coordinates, and staged sweeps keep
                # the matrix itself, not a copy: another one, of other values, is not equal)
                return (new is old or not is_sparse_type(type(new))) and now.get(
                    id(new), _MISSING) == then[id(old)]
            if new is old:
                return True
            kind = type(new)
            if kind is not type(old):
                return False
            if kind is list or kind is tuple:  # (their items are a read of their own,
                # where the search went that deep)
                return id(new) in self.reach.searched and id(old) in before.reach.searched
            return kind in _PLAIN and constant_key(new) == constant_key(old)

        return self.reach.same_reads(before.reach, equal)


_MISSING = object()
# immutable values compared by ``constant_key`` (floats by their text: -0.0 is not 0.0)
_PLAIN = frozenset({bool, int, float, complex, str, bytes, type(None), _np.float64,
                    _np.float32, _np.int64, _np.int32, _np.bool_})


def _watched_values(found: reach.Reach) -> list:
    """The SciPy sparse matrices and the arrays of NumPy's subclasses (a memmap, a masked
    array: ``found.arrays`` holds plain arrays only) among the values ``found`` read (a
    matrix is not searched: its arrays are not among ``found.arrays``)."""
    values = [value for _, _, value in found.lookups + found.reads]
    values += [item for value in values if type(value) is tuple for item in value]
    watched = {id(v): v for v in values if is_sparse_type(type(v)) or (
        isinstance(v, _np.ndarray) and type(v) is not _np.ndarray)}
    return list(watched.values())


def _covers(pattern, other) -> bool:
    """Whether every nonzero of ``other`` is one of ``pattern``'s (same shape)."""
    if pattern.shape != other.shape:
        return False
    extra = other.astype(_np.int8) - other.multiply(pattern).astype(_np.int8)
    return extra.count_nonzero() == 0


def _same_point(x: _np.ndarray, y: _np.ndarray | None) -> bool:
    return y is not None and x.shape == y.shape and x.dtype == y.dtype and (
        x.tobytes() == y.tobytes()
    )


class SparseJacobian:
    """The sparse Jacobian of ``fun`` (one array in, any arrays out, flattened): its
    pattern and colouring found once at ``x``, then evaluated at any x by ``self(x)`` in
    one sweep per colour, forward (columns) or reverse (rows), whichever needs fewer
    (``mode="forward"`` or ``"reverse"`` forces one). ``pattern`` is boolean CSR;
    ``self(x)`` returns a float CSR matrix with the same pattern (explicit zeros where
    the value happens to be zero).

    The pattern is reused where it holds: everywhere, unless finding it took Python
    decisions on values computed from x (then ``fun`` is recorded at each x and each
    structure gets its own pattern, ``guarded_by`` says why); with ``local=True`` it is
    found again at each new x. Values ``fun`` reads from outside x (closures, globals) are
    constants of a pattern: where one changed since, ``fun`` is recorded again at that call
    (``_Constants``). ``staged=True``: run the sweeps as a ``chainrule.jit`` program
    (faster; as correct as jit, and staged again where a value ``fun`` reads from outside x
    changed). A traced ``x`` (under jit, or inside another derivative) gives a traced
    matrix."""

    def __init__(
        self,
        fun: Callable,
        x: Any,
        local: bool = False,
        pattern=None,
        staged: bool = False,
        mode: str = "auto",
    ):
        if mode not in ("auto", "forward", "reverse"):
            raise ValueError(f"mode={mode!r}: choose 'auto', 'forward' or 'reverse'.")
        self.fun, self.staged, self._mode = fun, staged, mode
        self._start(fun, x, local, pattern)

    # -------------------------------------------------------------- patterns
    def _start(self, detected: Callable, x, local: bool, pattern) -> None:
        """Find the pattern of the Jacobian of ``detected`` at ``x`` (or take ``pattern``)
        and its colouring."""
        self.local, self._detected = local and pattern is None, detected
        self._guarded, self._point, self.guarded_by = False, None, ""
        self._given = pattern is not None
        self._constants = _Constants(detected)
        self._structures: OrderedDict = OrderedDict()  # structure key -> _Colouring
        self._sweeps: dict = {}  # mode -> the sweep function (staged or not)
        if pattern is not None:
            self._current = self._colouring(scipy_sparse().csr_matrix(pattern, dtype=bool))
            return
        x = _point(x)  # (found at the value of a traced x)
        recording, detection = record(detected, x)
        self._current = self._colouring(recorded_pattern(recording, self.local))
        if self.local:
            self._point = _np.array(x, copy=True)
        elif detection.guarded:
            self._guarded, self.guarded_by = True, detection.reason
            self._structures[structure_key(recording)] = self._current

    def _colouring(self, pattern) -> _Colouring:
        """Columns (forward sweeps) or rows (reverse), whichever takes fewer colours."""
        candidates = {}
        if self._mode != "reverse":
            candidates["forward"] = colour_columns(pattern)
        if self._mode != "forward":
            candidates["reverse"] = colour_columns(pattern.T)
        mode = min(candidates, key=lambda m: count_colours(candidates[m]))  # (forward first)
        colours = candidates[mode]
        recover = direct_recovery(pattern, colours, by_rows=mode == "reverse")
        return _Colouring(pattern, mode, "distance-1", colours, recover)

    def _colouring_at(self, x: _np.ndarray) -> _Colouring:
        """The colouring of a pattern that holds at ``x`` (and for ``fun``'s constants as
        they are now: see ``_Constants``)."""
        if self._constants.unchanged():
            return self._found_at(x, False)
        # The values as they are now are taken before fun is recorded with them, and kept
        # only once a pattern is found from that record: where the record raises (fun
        # fails at this x with the new values), the next call must see the change again
        # rather than reuse the pattern of the old values.
        constants = _Constants(self._detected)
        changed = not constants.equals(self._constants)  # (not where rebound to equals)
        if changed:
            self._sweeps.clear()  # (staged sweeps hold the old values as constants)
        colouring = self._found_at(x, changed)
        self._constants = constants
        return colouring

    def _found_at(self, x: _np.ndarray, changed: bool) -> _Colouring:
        """``_colouring_at``'s pattern, ``changed``: whether ``fun``'s constants changed
        since the current pattern was found."""
        if self._given:  # (a pattern given: the caller's word that it holds)
            return self._current
        if self._guarded:  # (the structure key holds the record's constants)
            return self._colouring_of(*record(self._detected, x))
        if not changed and (not self.local or _same_point(x, self._point)):
            return self._current
        recording, detection = record(self._detected, x)
        if self.local:
            pattern = recorded_pattern(recording, True)
            if not _covers(self._current.pattern, pattern):
                self._current = self._colouring(pattern)
            self._point = _np.array(x, copy=True)
            return self._current
        return self._colouring_of(recording, detection)

    def _colouring_of(self, recording, detection) -> _Colouring:
        """The colouring of a global pattern of ``recording``, kept per structure (a
        constant changed may have sent ``fun`` down a guarded path: it stays guarded)."""
        if detection.guarded and not self._guarded:
            self._guarded, self.guarded_by = True, detection.reason
        key = structure_key(recording)
        colouring = self._structures.get(key)
        if colouring is None:
            pattern = recorded_pattern(recording, False)
            # (another structure with the pattern of the last: a float() read from x, say)
            if not _covers(self._current.pattern, pattern):
                self._current = self._colouring(pattern)
            colouring = self._structures[key] = self._current
            if len(self._structures) > _MAX_STRUCTURES:
                self._structures.popitem(last=False)
        else:
            self._structures.move_to_end(key)
        self._current = colouring
        return colouring

    # the colouring used last (at construction: the one found at x)
    pattern = property(lambda self: self._current.pattern)
    mode = property(lambda self: self._current.mode)
    colours = property(lambda self: self._current.colours)
    n_colours = property(lambda self: self._current.n_colours)

    # -------------------------------------------------------------- evaluation
    def _compressed(self, x, colouring: _Colouring):
        """One row per colour: J @ seed (forward, flat over the outputs) or seed @ J
        (reverse, flat over x); traced where ``x`` is."""
        forward = colouring.mode == "forward"
        sweep = self._sweeps.get(colouring.mode)
        if sweep is None:
            sweep = _sweep(self.fun, forward)
            if self.staged:
                from ..jit import jit

                sweep = jit(sweep)
            self._sweeps[colouring.mode] = sweep
        seeds = colouring.seeds_for(_np.shape(x) if forward else (colouring.pattern.shape[0],))
        if not self.staged:
            return sweep(x, seeds)
        with warnings.catch_warnings():
            # the sweep's own index maps (positions of slices and concatenations) are
            # constants of the program by design: jit's advice to pass them in does not
            # apply here (the evaluator stages the sweeps again where fun's constants change)
            warnings.filterwarnings("ignore", "chainrule.jit: .* bakes in arrays", UserWarning)
            return sweep(x, seeds)

    def __call__(self, x: Any):
        """The Jacobian at ``x``, a ``scipy.sparse`` CSR matrix. A traced ``x`` (under
        ``chainrule.jit``, or an outer derivative) gives a traced matrix: the pattern is
        found at its value, the sweeps and the gather of the nonzeros are traced."""
        point = _point(x)
        if _np.iscomplexobj(point):
            raise TypeError(
                "sparse Jacobians take real inputs; split a complex x into "
                "its real and imaginary parts."
            )
        if point.dtype == _np.float16:
            raise TypeError(
                "sparse Jacobians of a float16 x: scipy.sparse holds no float16 values (its "
                "matrices would fail on use); give x as float32 (x.astype(numpy.float32)), "
                "or use the dense derivative."
            )
        n_in = self._current.pattern.shape[1]
        if point.size != n_in:
            raise ValueError(
                f"the pattern is {self._current.pattern.shape}, for an x of {n_in} "
                f"elements; this x has {point.size}: make a new SparseJacobian."
            )
        colouring = self._colouring_at(point)
        if colouring.n_colours == 0:
            self.fun(point)  # (no sweep to run: fun is still called, and raises where it does)
            return scipy_sparse().csr_matrix(colouring.pattern.shape)
        compressed = self._compressed(x if isbox(x) else point, colouring)
        n_out = colouring.pattern.shape[0]
        expected = (colouring.n_colours, n_out if colouring.mode == "forward" else point.size)
        if _np.shape(compressed) != expected:
            raise ValueError(
                f"the pattern is {colouring.pattern.shape}, the Jacobian at this x has "
                f"{_np.shape(compressed)[1] if colouring.mode == 'forward' else n_out} rows: "
                f"make a new SparseJacobian."
            )
        return with_values(colouring.template, colouring.recover(compressed))


class SparseHessian(SparseJacobian):
    """The sparse Hessian of scalar ``fun``: the sparse Jacobian of its gradient, found
    forward over reverse (one forward sweep per colour through the gradient).

    ``colouring`` uses the symmetry (see the ``colouring`` module): ``"star"`` (each entry read
    directly from one sweep), ``"acyclic"`` (fewer colours on banded patterns, entries
    recovered by substitution), ``"distance-1"`` (columns, as a Jacobian), or
    ``"auto"`` (the default): the star colouring, unless the acyclic one needs fewer
    colours. ``self.colouring`` is the one used. Patterns are reused as by
    ``SparseJacobian``."""

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
        self.objective, self.staged, self._mode = fun, staged, "forward"
        self._asked = colouring
        self.fun = gradient(fun)
        self._start(self.fun, x, local, pattern)

    colouring = property(lambda self: self._current.name)

    def _colouring(self, pattern) -> _Colouring:
        pattern = symmetric_pattern(pattern)  # a Hessian is symmetric
        candidates = {}
        if self._asked in ("auto", "star"):
            candidates["star"] = star_colouring(pattern)
        if self._asked in ("auto", "acyclic"):
            candidates["acyclic"] = acyclic_colouring(pattern)
        if self._asked == "distance-1":
            candidates["distance-1"] = colour_columns(pattern)
        # the first of the fewest: star before acyclic, which sums along paths
        name = min(candidates, key=lambda n: count_colours(candidates[n]))
        colours = candidates[name]
        if name == "star":
            recover = star_recovery(pattern, colours)
        elif name == "acyclic":
            recover = acyclic_recovery(pattern, colours)
        else:
            recover = direct_recovery(pattern, colours, by_rows=False)
        return _Colouring(pattern, "forward", name, colours, recover)


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
    reused for every x of the same shape and dtype where they hold (see
    ``SparseJacobian``)."""
    if argnum not in (None, 0) or has_aux:
        raise NotImplementedError(
            "sparse=True differentiates a function of one array argument (argnum 0) "
            "without has_aux; close over the other arguments (lambda x: fun(x, *rest))."
        )
    kind = SparseHessian if hessian else SparseJacobian
    cache: dict = {}

    def sparse_derivative(x):
        point = _point(x)
        key = (point.shape, point.dtype)
        evaluator = cache.get(key)
        if evaluator is None:
            evaluator = cache[key] = kind(fun, point)
        return evaluator(x if isbox(x) else point)

    sparse_derivative.cache = cache  # the SparseJacobian/SparseHessian objects, by shape
    return sparse_derivative
