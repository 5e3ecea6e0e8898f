"""``explain(f, *args, check=True)``: what went wrong in a derivative, node by node.

- a finite-difference check of each node's VJP: for random directions u (on one traced
  argument) and w (on the answer), ``<w, J u>`` by central differences of the primitive
  against ``<VJP(w), u>`` from the rule the backward pass uses; a relative error above
  ``TOLERANCE`` flags the node (a wrong custom VJP shows up exactly there);
- the first node whose value (forward) or cotangent (backward) is NaN or infinite while
  what it was made from is finite, with its operands;
- inputs that do not reach the output (no path leads from them to it), told apart
  from inputs whose gradient is exactly zero at this point although the output is computed
  from them (a stationary point such as the minimum of ``sum(w**2)`` at 0);
- per node the size of its adjoint (vanishing or exploding chains) and the bytes of
  arguments and answer it keeps alive for the backward pass.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as _np

from .._core.rule_table import primitive_vjps
from .._core.vspace import dense
from ..numpy.placement import laid_out_like
from . import _format as fmt

TOLERANCE = 1e-4  # relative error above which a node's VJP is flagged
_STEP = 1e-6  # relative finite-difference step
SPREAD = 1e8  # adjoint sizes further apart than this are reported as vanishing/exploding


@dataclasses.dataclass
class NodeCheck:
    name: str
    fd_error: float | None = None  # worst relative error over the node's traced arguments
    flagged: bool = False
    adjoint_norm: float | None = None
    kept_bytes: int = 0


@dataclasses.dataclass
class Origin:
    """Where a NaN or infinity first appeared."""

    name: str
    pass_: str  # "forward" or "backward"
    source: Any
    operands: str
    value: str


@dataclasses.dataclass
class Diagnostics:
    nodes: dict[str, NodeCheck]
    nan_forward: Origin | None
    nan_backward: Origin | None
    unused: list[str]  # the inputs from which no path leads to the output
    zero_gradient: list[str]  # the other inputs whose gradient is exactly zero here
    # where things are: the operations' source lines, and where each input is read
    sources: dict = dataclasses.field(default_factory=dict, repr=False)
    readers: dict = dataclasses.field(default_factory=dict, repr=False)

    def extremes(self) -> tuple[str, str] | None:
        """The operations with the smallest and the largest nonzero adjoint, where they are
        more than ``SPREAD`` apart (a vanishing or exploding chain), else None."""
        sized = [(c.adjoint_norm, c.name) for c in self.nodes.values() if c.adjoint_norm]
        if not sized:
            return None
        low, high = min(sized), max(sized)
        return (low[1], high[1]) if high[0] / low[0] > SPREAD else None

    def _at(self, name: str) -> str:
        source = self.sources.get(name)
        return f" ({source})" if source is not None else ""

    @property
    def flagged(self) -> list[str]:
        return [n.name for n in self.nodes.values() if n.flagged]

    def findings(self) -> list[str]:
        out = []
        for origin in (self.nan_forward, self.nan_backward):
            if origin is not None:
                where = f" at {origin.source}" if origin.source is not None else ""
                out.append(
                    f"first NaN/inf in the {origin.pass_} pass: {origin.name}{where} "
                    f"= {origin.value}, from operands {origin.operands}"
                )
        for name in self.flagged:
            err = self.nodes[name].fd_error
            out.append(
                f"{name}{self._at(name)}: its VJP disagrees with finite differences "
                f"(relative error {err:.2g})"
            )
        ends = self.extremes()
        if ends is not None:
            low, high = (self.nodes[n].adjoint_norm for n in ends)
            out.append(
                f"adjoint sizes span {low:.2g} to {high:.2g}: a vanishing or exploding chain "
                f"(smallest at {ends[0]}{self._at(ends[0])}, largest at {ends[1]}"
                f"{self._at(ends[1])}; see |adjoint| per operation)"
            )
        for name in self.unused:
            out.append(
                f"input {name} does not reach the output: no path in the graph leads from it "
                f"to the output (its gradient is zero{self._read_at(name)})"
            )
        for name in self.zero_gradient:
            out.append(
                f"input {name} has a zero gradient here, though the output is computed from it "
                f"(a stationary point such as the minimum of w**2 at 0, a factor of zero, or a "
                f"vanishing chain{self._read_at(name)})"
            )
        return out

    def _read_at(self, name: str) -> str:
        read = self.readers.get(name, [])
        return f"; read at {', '.join(map(str, read))}" if read else ""


def _finite(x) -> bool:
    try:
        arr = _np.asarray(x)
    except Exception:
        return True
    return arr.dtype.kind not in "fc" or bool(_np.isfinite(arr).all())


def _is_float_array(x) -> bool:
    return isinstance(x, (float, _np.ndarray, _np.floating)) and _np.result_type(x).kind == "f"


def _nbytes(x) -> int:
    return (
        int(x.nbytes)
        if isinstance(x, (_np.ndarray, _np.generic))
        else 8
        if isinstance(x, (float, int, complex))
        else 0
    )


def _shifted(a, step):
    """``a + step`` laid out as ``a``, strides included: the function may read them
    (reshape's order "A", ravel's "K" read x in its memory order). As it is where a's
    memory does not hold each element once (a broadcast axis, a sliding window's
    overlapping rows), so cannot hold ``a + step``."""
    shifted = a + step
    if type(a) is not _np.ndarray:
        return shifted
    out = laid_out_like(a)
    out[...] = shifted
    return out if _np.array_equal(out, shifted, equal_nan=True) else shifted


def _fd_error(node, rng) -> float | None:
    """The worst relative error of the node's VJP against central differences."""
    if not _is_float_array(node.ans) or not primitive_vjps.get(node.fun):
        return None
    w = rng.standard_normal(_np.shape(node.ans))
    try:
        cotangents = primitive_vjps[node.fun](
            w if _np.ndim(node.ans) else float(w), node.argnums, node.ans, node.args, node.kwargs
        )
    except Exception:
        return None
    worst = None
    for argnum, c in zip(node.argnums, cotangents):
        a, c = node.args[argnum], dense(c)  # (a piece's cotangent: the value it stands for)
        if not _is_float_array(a) or c is None:
            continue
        u = rng.standard_normal(_np.shape(a))
        h = _STEP * max(1.0, float(_np.max(_np.abs(a))) if _np.size(a) else 1.0)

        def at(t, argnum=argnum, a=a, u=u):
            args = list(node.args)
            args[argnum] = _shifted(a, t * u)
            return _np.asarray(node.fun(*args, **node.kwargs), dtype=float)

        try:
            fd = float(_np.sum(w * (at(h) - at(-h)))) / (2 * h)
        except Exception:
            continue
        exact = float(_np.sum(_np.asarray(c) * u))
        scale = max(abs(fd), abs(exact), 1e-8)
        err = abs(fd - exact) / scale
        if _np.isfinite(err):
            worst = err if worst is None else max(worst, err)
    return worst


def _operands(node, variables) -> str:
    named = {i: variables[p].name for i, p in zip(node.argnums, node.parents)}
    return ", ".join(
        f"{named.get(i, f'arg{i}')} = {fmt.summary(a)}"
        for i, a in enumerate(node.args)
        if isinstance(a, (int, float, complex, _np.ndarray, _np.number))
    )


def diagnose(lazy) -> Diagnostics:
    """Check every node of a recording (``_trace._Lazy``): its VJP, NaN/inf, its adjoint."""
    nodes, variables, visits = lazy.nodes, lazy.variables, lazy.backward()
    with _np.errstate(all="ignore"):  # NaN and inf are what this looks for: it reports them
        return _diagnose(nodes, variables, visits)


def _diagnose(nodes, variables: dict, visits) -> Diagnostics:
    rng = _np.random.default_rng(0)
    checks: dict[str, NodeCheck] = {}
    nan_forward = None
    for node in sorted(nodes, key=lambda n: n.seq):
        var = variables[node]
        check = NodeCheck(var.name)
        checks[var.name] = check
        if node.fun is None:
            continue
        check.kept_bytes = _nbytes(node.ans) + sum(_nbytes(a) for a in node.args)
        if nan_forward is None and not _finite(node.ans) and all(_finite(a) for a in node.args):
            nan_forward = Origin(
                var.name, "forward", var.source, _operands(node, variables), fmt.summary(node.ans)
            )
        if _finite(node.ans) and all(_finite(a) for a in node.args):
            check.fd_error = _fd_error(node, rng)
            check.flagged = check.fd_error is not None and check.fd_error > TOLERANCE
    by_name = {variables[n].name: n for n in nodes}
    nan_backward = None
    for visit in visits:
        checks[visit.name].adjoint_norm = float(_np.linalg.norm(_np.ravel(visit.adjoint)))
        if nan_backward is None and _finite(visit.adjoint):
            for c in visit.contributions:
                if not _finite(c.value):
                    node = by_name[visit.name]
                    nan_backward = Origin(
                        visit.name,
                        "backward",
                        variables[node].source,
                        _operands(node, variables),
                        f"cotangent {fmt.summary(c.value)} for {c.parent}",
                    )
                    break
    unused, zero_gradient = [], []
    for node in nodes:
        if node.fun is None:
            var = variables[node]
            if var.adjoint is None:  # the backward pass never reached it
                unused.append(var.name)
            elif not _np.any(_np.asarray(var.adjoint)):
                zero_gradient.append(var.name)
    sources = {variables[n].name: n.source for n in nodes if n.source is not None}
    readers: dict = {}
    for node in nodes:  # the lines that read each unused input
        for parent in node.parents:
            name = variables[parent].name
            if (name in unused or name in zero_gradient) and node.source is not None:
                lines = readers.setdefault(name, [])
                if node.source not in lines:
                    lines.append(node.source)
    return Diagnostics(
        checks, nan_forward, nan_backward, unused, zero_gradient, sources, readers
    )
