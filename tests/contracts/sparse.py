"""sparse: a sparse Jacobian or Hessian equals the dense one at every x it is called with.

For a generated program ``f(x, s)`` (``s`` fixed per case), one sparse evaluator is made at
the first point and called at four points whose values take other branches, as a user
reuses one: ``jacobian(f, sparse=True)``, ``SparseJacobian`` (staged, forced modes, local
patterns), ``hessian(f, sparse=True)`` or ``SparseHessian`` (star, acyclic, distance-1).
At each point its CSR matrix must equal the dense ``jacobian``/``hessian`` of the same
function (``toarray()``, rows the flattened outputs), or both must raise the same
exception. Where the dense derivative refuses a construct clearly (float() of a traced
value), the sparse one raises too, or gives the zero matrix of an empty pattern (x reaches
the output through round or sign only: its detection reads the float() as a decision and
runs no traced sweep); where only the sparse one refuses (a primitive without a JVP rule,
for the forward sweeps), the case counts as refused clearly.

Tolerance. The sweeps compute J @ (a sum of basis vectors) where the dense Jacobian pushes
or pulls one basis vector at a time, possibly in the other mode: the same products,
summed in another order (a dot product's terms, reverse against forward), and an acyclic
Hessian adds entries along the paths of its colouring's trees (a zero of the dense Hessian
can come back as -1.1e-16). An entry may therefore differ from the dense one by rounding,
relative to the terms it sums rather than to itself (an entry of 1e-4 that is the
difference of terms near 1 differs in its 13th digit): the contract allows ``64 eps``
times the largest magnitude among the dense matrix, ``x`` and ``f(x)`` (64 units in the
last place of the largest number the terms are made of, as far as the program shows
them); 0.0 and -0.0 count as equal. Points where the dense
derivative or the program's value is not finite are not compared: a nan or inf met by one
column of a colour reaches the other columns of that colour through 0 * inf (the dense
sweeps keep it in its own column), which the contract does not promise to reproduce.

Constants. The programs also read globals whose values a pattern reads (``W``'s zeros in
``np.dot(onp.diag(W), a)``, the permutation ``P`` in ``a[P]``, the stored entries of the
sparse matrix ``S``), and before some points those globals change, in place or rebound,
as a user changes a parameter between calls, or are rebound to an equal value (``P`` at
times to a list of its indices): the evaluator made at the first point must still equal
the dense derivative of the function as it is now.
"""

from __future__ import annotations

import dataclasses

import numpy as onp
import scipy.sparse as sp

import chainrule
from chainrule._core.pytree import tree_leaves

from . import _programs as programs
from ._compare import Outcome
from ._programs import Program, Template
from ._runner import Refusal

NAME = "sparse"
CI_CASES = 100  # cases of the fixed-seed slice tests/contracts/test_contracts.py runs

# Programs are pure functions of x (closures written inside f, random draws and edge values
# are left out: a sparse evaluator calls f more than once per point, see the docstring)
HAZARDS = {"nonsmooth", "branch", "loop", "index", "mask", "stop_gradient", "tuple_answer",
           "convert", "signed_zero", "nested", "inplace", "raise", "try_except", "structure"}
# staged=True runs the sweeps as a chainrule.jit program, as correct as jit (whose own
# contract covers signed zeros, exceptions, conversions and nested derivatives: issue 32)
STAGED_HAZARDS = {"nonsmooth", "branch", "loop", "index", "mask", "stop_gradient", "structure"}
KINDS = ("jacobian", "SparseJacobian", "hessian", "SparseHessian")
TOLERANCE = 64 * onp.finfo(float).eps

# statements whose Jacobians are structurally sparse, by the rules of issue 34 (item 8),
# and selections computed from x (argmax, argsort, boolean masks)
_STRUCTURE = (
    "np.diff({a}, prepend={b}[:1])", "np.diff({a}, n=2, append={b}[-2:])",
    "np.convolve({a}, [1.0, -2.0, 1.0], 'same')", "np.gradient({a}) * {b}",
    "np.dot(2.0, {a}) + np.dot({b}, {s})", "S @ {a}", "{a} @ S + {b}",
    "np.einsum('i,i->i', {a}, {b})", "np.diag({a}) @ {b}", "np.diag(np.outer({a}, {b}))",
    "{a} * {b}[np.argmax({c})]", "{a}[np.argsort({b})] * {c}", "np.take({a}, np.argsort({b}))",
    "{a} * np.sum({b}[{c} > 0])", "np.cumsum({a}[::-1])[::-1] * {b}", "np.roll({a}, -1) * {b}",
    "np.where({a} > {b}, {a}, {b} * {b})", "np.kron({a}[:1], {b})", "np.sort({a}) - {b}",
    "np.concatenate([{a}[{a} > 0], {b}])[:n]", "np.maximum({a}, {b}[::-1])",
)


def _structure(g) -> None:
    expr = g.pick(_STRUCTURE).format(a=g.vec(), b=g.vec(), c=g.vec(), s=g.scal())
    g.emit(f"{g.new_vec()} = {expr}")


def _shape_branch(g) -> None:
    """A branch on the length of a selection by a mask from x, which reaches no output."""
    a, b = g.vec(), g.vec()
    select = g.pick((f"np.extract({a} > 0, {b})", f"np.compress({a} > 0, {b})",
                     f"{b}[{a} > 0]", f"np.repeat({b}, ({a} > 0) * 1 + 1)",
                     f"np.delete({b}, {a} > 0)"))
    v = g.name()
    g.emit(f"if len({select}) > {int(g.rng.integers(1, g.n))}:",
           f"    {v} = {_unary_of(g)}", "else:", f"    {v} = np.roll({g.vec()}, 1) * 3.0")
    g.vecs.append(v)


def _unary_of(g) -> str:
    return g.pick(("np.sin({a})", "{a} * {a}", "{a}[::-1]")).format(a=g.vec())


def _constant_read(g) -> None:
    """A global whose values a pattern reads (changed between points, see ``Case``)."""
    a, b = g.vec(), g.vec()
    expr = g.pick((f"np.dot(onp.diag(W), {a})", f"W * {a} + {b}[0]", f"{a}[P] * {b}",
                   f"np.take({a}, P[::-1]) + {b}", f"np.dot(onp.diag(W)[P], {a})"))
    g.emit(f"{g.new_vec()} = {expr}")


EXTRA = (Template("structure", _structure, 2.0), Template("structure", _shape_branch, 0.5),
         Template("structure", _constant_read, 1.0))


def _constants(rng: onp.random.Generator, n: int) -> dict:
    """Values for the globals W (with zeros), P (a permutation) and S (a sparse band)."""
    w = rng.standard_normal(n) * (rng.random(n) < 0.5)
    offset = int(rng.integers(1, n))
    band = sp.diags([rng.standard_normal(n - offset), rng.standard_normal(n)], [offset, 0],
                    format="csr")
    return {"W": w, "P": rng.permutation(n), "S": band}


@dataclasses.dataclass
class Case:
    program: Program
    s: object
    points: list
    kind: str
    options: dict
    initial: dict  # the globals W, P, S at the first point
    changes: list  # per point: (name, new value, "in place" or "rebound") made before it

    def __str__(self) -> str:
        changes = "".join(f"\n# before point {i}: {name} {how} to {_shown(value)}"
                          for i, made in enumerate(self.changes) for name, value, how in made)
        start = ", ".join(f"{k} = {_shown(v)}" for k, v in self.initial.items())
        return (f"{self.program}\n# s = {self.s!r}; {start}\n# {self.kind}({self.options}) "
                f"made at the first point, called at {[p.tolist() for p in self.points]!r}"
                f"{changes}")

    def set_globals(self, i: int) -> None:
        """The globals as they are at point ``i`` (the first point's values, then the
        changes before each point up to ``i``; in place where the change is)."""
        ns = self.program.namespace
        if i == 0:
            for name, value in self.initial.items():
                ns[name] = value.copy()
            return
        for name, value, how in self.changes[i]:
            if how == "in place" and type(ns[name]) is list:  # (P rebound to a list)
                ns[name][:] = [int(i) for i in value]
            elif how == "in place" and not sp.issparse(value):
                ns[name][...] = value
            else:
                ns[name] = value.copy()


def _shown(value) -> str:
    if type(value) is list:
        return f"the list {value!r}"
    if sp.issparse(value):
        coo = value.tocoo()
        return f"sparse {coo.shape} at {list(zip(coo.row.tolist(), coo.col.tolist()))}"
    return repr(value.tolist())


def generate(rng: onp.random.Generator) -> Case:
    kind = KINDS[int(rng.integers(len(KINDS)))]
    hessian = kind in ("hessian", "SparseHessian")
    n = int(rng.integers(3, 9))
    staged = kind == "SparseJacobian" and rng.random() < 0.3
    hazards = STAGED_HAZARDS if staged else HAZARDS
    hazards = hazards | ({"tree_out"} if not hessian and rng.random() < 0.2 else set())
    initial = _constants(rng, n)
    program = programs.generate(rng, hazards, output="scalar" if hessian else "any", n=n,
                                dtype="float64", extra=EXTRA, namespace=dict(initial))
    inputs = program.inputs(rng, 4, edges=False)
    options: dict = {}
    if kind == "SparseJacobian":
        options = {"staged": staged, "local": bool(rng.random() < 0.2),
                   "mode": str(rng.choice(["auto", "forward", "reverse"]))}
    elif kind == "SparseHessian":
        options = {"colouring": str(rng.choice(["auto", "star", "acyclic", "distance-1"])),
                   "local": bool(rng.random() < 0.2)}
    changes: list = [[]]
    for _ in inputs[1:]:
        made = []
        if rng.random() < 0.4:
            new = _constants(rng, n)
            for name in new:
                if rng.random() < 0.5:
                    made.append((name, new[name], str(rng.choice(["in place", "rebound"]))))
        changes.append(made)
    _add_equal_rebindings(onp.random.default_rng(rng.integers(2**32)), initial, changes)
    return Case(program, inputs[0][1], [x for x, _ in inputs], kind, options, initial, changes)


def _add_equal_rebindings(rng: onp.random.Generator, initial: dict, changes: list) -> None:
    """Before some points, a global rebound to a copy of its value then ("rebound
    equal": the evaluator may keep its pattern) or P to a list of the same indices (a
    value of another type: recorded again). Drawn from their own generator after the
    rest, so the cases drawn before these were added are unchanged but for them."""
    current = dict(initial)
    for made in changes[1:]:
        current.update((name, value) for name, value, _ in made)
        if rng.random() < 0.3:
            name = str(rng.choice(sorted(current)))
            value = current[name]
            if name == "P" and rng.random() < 0.5:
                value = current[name] = [int(i) for i in value]
            made.append((name, value, "rebound equal"))


def check(case: Case) -> list[str]:
    p = case.program
    fun = lambda x: p.fn(x, case.s)  # noqa: E731
    hessian = case.kind in ("hessian", "SparseHessian")
    dense_of = chainrule.hessian(fun) if hessian else chainrule.jacobian(fun)
    made: dict = {}

    def sparse_at(x):
        if "evaluator" not in made:  # made at the first point, as a user makes one
            made["evaluator"] = _evaluator(case, fun, x)
        return made["evaluator"](x)

    out: list[str] = []
    for i, x in enumerate(case.points):
        case.set_globals(i)
        dense = Outcome.of(lambda x=x: _flat(dense_of(x), x.size))
        sparse = Outcome.of(lambda x=x: sparse_at(x))
        out += [type(d)(f"at point {i}: {d}") for d in _compare(dense, sparse, fun, x)]
    return out


def _evaluator(case: Case, fun, x):
    if case.kind == "jacobian":
        return chainrule.jacobian(fun, sparse=True)
    if case.kind == "hessian":
        return chainrule.hessian(fun, sparse=True)
    make = chainrule.SparseJacobian if case.kind == "SparseJacobian" else chainrule.SparseHessian
    return make(fun, x, **case.options)


def _flat(dense, n: int) -> onp.ndarray:
    """The dense Jacobian as (flattened outputs) x n: output leaves one after another."""
    return onp.vstack([onp.reshape(onp.asarray(leaf), (-1, n)) for leaf in tree_leaves(dense)])


def _refusal(error: BaseException | None) -> bool:
    """chainrule refusing a construct clearly (as modes' contract reads it: a traced value
    written into a plain NumPy array is NumPy's error, with chainrule's fix chained)."""
    if isinstance(error, ValueError) and "setting an array element with a sequence" in str(
            error):
        return True
    return isinstance(error, (TypeError, NotImplementedError)) and (
        "traced" in str(error) or "rule" in str(error))


def _compare(dense: Outcome, sparse: Outcome, fun, x) -> list[str]:
    if dense.error is not None or sparse.error is not None:
        if dense.error is not None and sparse.error is not None:
            # (where the dense derivative refuses a construct, the sparse one, whose
            # detection reads values as decisions, may run further and meet another error)
            if type(dense.error) is type(sparse.error) or _refusal(dense.error):
                return []
        if dense.error is None and _refusal(sparse.error):
            return [Refusal(f"the sparse evaluator refused: {sparse.error}")]
        if _refusal(dense.error) and sp.issparse(sparse.value) and sparse.value.nnz == 0:
            # a structurally zero derivative (x reaches the output through round, sign ...
            # only): the sparse evaluator runs no traced sweep, so it does not meet the
            # float() the dense derivative refuses; zero is the derivative there
            return []
        return [f"dense {dense!r}; sparse {sparse!r}"]
    value = Outcome.of(lambda: fun(x))
    expected, matrix = dense.value, sparse.value
    if not sp.issparse(matrix) or matrix.format != "csr":
        return [f"the sparse evaluator returned {type(matrix).__name__}, not a CSR matrix"]
    got = matrix.toarray()
    if got.shape != expected.shape:
        return [f"shape {got.shape}, dense {expected.shape}"]
    if value.error is not None or not onp.isfinite(expected).all() or not all(
            onp.isfinite(leaf).all() for leaf in _leaves(value.value)):
        return []
    # (the sums' terms can be larger than the entries they cancel to: x and f(x) bound
    # their magnitude here better than the entries do)
    scale = max(onp.abs(expected).max(initial=0.0), onp.abs(x).max(initial=0.0),
                max(onp.abs(leaf).max(initial=0.0) for leaf in _leaves(value.value)))
    bad = ~(onp.abs(got - expected) <= TOLERANCE * scale)
    if bad.any():
        i, j = (int(k) for k in onp.argwhere(bad)[0])
        return [f"{int(bad.sum())} of {bad.size} entries differ, first ({i}, {j}): sparse "
                f"{got[i, j]!r}, dense {expected[i, j]!r} (tolerance {TOLERANCE:.1e} x "
                f"{scale:.3g})"]
    return []


def _leaves(value) -> list:
    return [onp.asarray(leaf, dtype=complex) for leaf in tree_leaves(value)]
