"""The report object ``explain`` returns, and its renderings."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as _np

from . import _fold, _graph, _tables
from . import _format as fmt
from ._notation import check_names, fits, to_ascii
from ._trace import Traces, Variable, record


class Report:
    """The evaluation, forward tangent and reverse adjoint traces of one call of ``f``.

    Attributes: ``inputs`` and ``steps`` (Variables in evaluation order), ``outputs``
    ((name, variable name, value) per output leaf), ``value`` (f's result),
    ``forward_wrt`` (the input the tangent trace differentiates by), ``backward``
    (Visits in backward-pass order, each with its Contributions), ``gradient``
    (shaped like the arguments, as a tuple), ``forward_order`` and ``backward_order``.
    ``output`` is the output's name: y, or f (then g, h, out) if an input is named y.
    ``str(report)`` gives the text tables; ``markdown()``, ``dot()``, ``mermaid()``,
    ``svg()`` and ``html()`` the other renderings. ``ascii``: True writes every rendering
    in ASCII notation (x1_bar, dv1/dx1, see ``chainrule.explain._notation``), False never;
    None (the default) writes the text tables in ASCII where ``sys.stdout`` cannot encode
    the Unicode ones.
    """

    def __init__(
        self,
        traces: Traces,
        digits: int = 3,
        max_rows: int | None = 400,
        max_nodes: int = 120,
        title: str = "",
        ascii: bool | None = None,
    ):
        self.inputs: list[Variable] = traces.inputs
        self.steps: list[Variable] = traces.steps
        self.outputs = traces.outputs
        self.value = traces.value
        self.forward_wrt = traces.forward_wrt
        self.output: str = traces.output
        self._lazy = traces.lazy
        self._check = traces.check
        self._diagnostics = None
        self._folds: list | None = None
        self._fan_in: dict[str, int] | None = None
        self._ancestors: set[str] | None = None
        self.ascii = ascii
        self.digits = digits
        self.max_rows = max_rows
        self.max_nodes = max_nodes
        self.title = title or self._default_title()
        self._by_name = {v.name: v for v in self.inputs + self.steps}
        self._program: Callable[[], str] | None = None  # explain sets it: makes report.code
        self._code: str | None = None

    # ------------------------------------------------------------------ computed when read
    @property
    def backward(self) -> list:
        """The Visits of the backward pass, in the order it runs (run when first read)."""
        return self._lazy.backward()

    @property
    def gradient(self) -> tuple:
        """The gradient, shaped like the arguments (a tuple)."""
        return self._lazy.gradient()

    @property
    def notes(self) -> list[str]:
        """Derivatives that could not be computed (no rule), and why."""
        self._lazy.backward()
        return self._lazy.forward_notes() + self._lazy.backward_notes

    @property
    def diagnostics(self):
        """explain(check=True): the ``_check.Diagnostics`` (None without check)."""
        if self._check and self._diagnostics is None:
            from ._check import diagnose  # only explain(check=True) pays for it

            self._diagnostics = diagnose(self._lazy)
        return self._diagnostics

    @property
    def taylor(self) -> int:
        """The order of the Taylor coefficients the evaluation trace shows (0: none)."""
        return self._lazy.taylor_order

    @property
    def code(self) -> str | None:
        """The straight-line program ``chainrule.jit`` emits for the value and gradient of
        the explained call, each line's comment naming the user's line it comes from
        (``@ file.py:12``; ``(adjoint)`` on the lines of the backward pass). None for a
        report of a Tensor graph. Staged when first read; raises ``StagingError`` where
        jit cannot stage the function."""
        if self._code is None and self._program is not None:
            self._code = self._program()
        return self._code

    def _code_section(self) -> tuple[str, str] | None:
        """(title, program) for the Markdown and HTML pages, or None: no function to stage,
        or more operations than ``max_rows`` (the program is then as long: read
        ``report.code``)."""
        if self._program is None or (self.max_rows is not None and len(self.steps) > self.max_rows):
            return None
        try:
            code = self.code
        except Exception as error:  # noqa: BLE001 - the page says why instead
            code = f"# chainrule.jit cannot stage this function: {error}"
        return "Derivative program (chainrule.jit, value and gradient)", code

    @property
    def fan_in(self) -> dict[str, int]:
        """How many contributions each variable's adjoint sums."""
        if self._fan_in is None:
            self._fan_in = {}
            for visit in self.backward:
                for c in visit.contributions:
                    self._fan_in[c.parent] = self._fan_in.get(c.parent, 0) + 1
        return self._fan_in

    @property
    def ancestors(self) -> set[str]:
        """The variables the output depends on (every operation, and the inputs it reads)."""
        if self._ancestors is None:
            variables = self._lazy.variables
            self._ancestors = {v.name for v in self.steps} | {
                variables[n].name for n in self._lazy.order if n.fun is None
            }
        return self._ancestors

    # ------------------------------------------------------------------ access
    def var(self, name: str) -> Variable:
        return self._by_name[name]

    @property
    def variables(self) -> list[Variable]:
        return self.inputs + self.steps

    @property
    def forward_order(self) -> list[str]:
        return [v.name for v in self.variables if v.name in self.ancestors]

    @property
    def backward_order(self) -> list[str]:
        return [visit.name for visit in self.backward]

    def by_line(self) -> dict:
        """The operations grouped by the user's source line that made them: {Source: [names]},
        in order of first appearance (operations made inside chainrule itself are left out)."""
        groups: dict = {}
        for v in self.steps:
            if v.source is not None:
                groups.setdefault(v.source, []).append(v.name)
        return groups

    def folds(self) -> list:
        """The operations with a source line in the order they ran, as ``_fold.Block``s: a
        loop (the same lines in the same order, N times in a row) is one block with
        ``repeats`` N and the operations of each iteration in ``names``."""
        if self._folds is None:
            self._folds = _fold.fold(self.steps)
        return self._folds

    def grad_of(self, var: Variable) -> Any:
        if var.adjoint is not None:
            return var.adjoint
        return _np.zeros_like(var.value)

    def show(self, x) -> str:
        return fmt.value(x, self.digits)

    def show_opt(self, x) -> str:
        return "(not computed)" if x is None else self.show(x)

    def _default_title(self) -> str:
        at = ", ".join(f"{v.name} = {fmt.brief(v.value)}" for v in self.inputs)
        call = f"f({', '.join(v.name for v in self.inputs)}) at {at}"
        if self.output == "f":  # an input is named y: "f(y) at y = 2", not "f = f(y)"
            return call
        outs = ", ".join(name for name, _, _ in self.outputs) or self.output
        return f"{outs} = {call}"

    # ------------------------------------------------------------------ renderings
    def notation(self, ascii: bool | None = None) -> Callable[[str], str]:
        """What turns a Unicode string into the one shown: ``to_ascii`` in ASCII notation
        (``ascii``, default ``self.ascii is True``), else the identity."""
        if not (self.ascii is True if ascii is None else ascii):
            return str
        check_names([v.name for v in self.variables] + [self.output])
        return to_ascii

    def tables(self, ascii: bool | None = None, page: int = 1) -> list[_tables.Table]:
        """The tables; the per-operation ones show page ``page`` of ``max_rows`` rows."""
        with _tables.quiet():
            tables = [
                _tables.evaluation(self, page),
                _tables.forward(self, page),
                _tables.backward(self, page),
                _tables.order(self),
                _tables.gradient(self),
            ]
            lines = _tables.source_lines(self)
            if lines is not None:
                tables.append(lines)
            if self.diagnostics is not None:
                tables.append(_tables.diagnostics(self, page))
        spell = self.notation(ascii)
        if spell is str:
            return tables
        return [
            _tables.Table(
                spell(t.title),
                [spell(h) for h in t.headers],
                [[spell(c) for c in row] for row in t.rows],
                spell(t.note),
            )
            for t in tables
        ]

    def table(self, title: str, page: int = 1) -> _tables.Table:
        """One of ``tables()`` by its title ("Source lines", "Checks", "Gradient", ...)."""
        for table in self.tables(page=page):
            if table.title == title:
                return table
        titles = ", ".join(t.title for t in self.tables(page=page))
        raise KeyError(f"no table {title!r} in this report; it has {titles}.")

    def text(self, page: int = 1) -> str:
        """The text tables (page ``page`` of the long ones); in ASCII notation where
        ``ascii`` says so (see the class)."""
        out = self._text(self.ascii is True, page)
        if self.ascii is None and not fits(out, sys.stdout):
            out = self._text(True, page)
        return out

    def _text(self, ascii: bool, page: int = 1) -> str:
        spell = self.notation(ascii)
        parts = [spell(f"chainrule.explain: {self.title}"), ""]
        for table in self.tables(ascii, page):
            parts += [table.text(), ""]
        parts += [spell(f"note: {n}") for n in self.notes]
        return "\n".join(parts).rstrip() + "\n"

    def markdown(self, page: int = 1) -> str:
        spell = self.notation()
        parts = [_tables.md_escape(spell(f"## chainrule.explain: {self.title}")), ""]
        for table in self.tables(page=page):
            parts += [table.markdown(), ""]
        code = self._code_section()
        if code is not None:
            parts += [f"### {code[0]}", "", "```python", code[1].rstrip(), "```", ""]
        parts += [f"> note: {_tables.md_escape(spell(n))}" for n in self.notes]
        return "\n".join(parts).rstrip() + "\n"

    def dot(self) -> str:
        return _graph.dot(self)

    def mermaid(self) -> str:
        return _graph.mermaid(self)

    def svg(self) -> str:
        """The graph drawn by Graphviz's ``dot`` program (raises GraphvizNotFound without it)."""
        return _graph.svg(self.dot())

    def html(self, page: int = 1) -> str:
        """One self-contained page: the graph, the tables and a backward-pass stepper."""
        return _graph.html(self, page=page)

    def render(self, format: str) -> str:
        renderers = {
            "text": self.text,
            "markdown": self.markdown,
            "dot": self.dot,
            "mermaid": self.mermaid,
            "svg": self.svg,
            "html": self.html,
        }
        if format not in renderers:
            raise ValueError(f"Unknown format {format!r}: choose one of {', '.join(renderers)}.")
        return renderers[format]()

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        grads = ", ".join(f"{v.name}: {fmt.brief(self.grad_of(v))}" for v in self.inputs)
        return f"<explain report: {self.title}; {len(self.steps)} operations; gradient {grads}>"

    def _repr_html_(self) -> str:
        return _graph.html(self, fragment=True)

    def _repr_svg_(self) -> str | None:
        try:
            return self.svg()
        except _graph.GraphvizNotFound:
            return None

    def _repr_markdown_(self) -> str:
        return self.markdown()


def _is_tensor(x) -> bool:
    tensor = sys.modules.get("chainrule.tensor._tensor")  # loaded if any Tensor exists
    return tensor is not None and isinstance(x, tensor.Tensor)


def explain(
    f: Callable | Any,
    *args,
    wrt: str | int | None = None,
    digits: int = 3,
    max_rows: int | None = 400,
    max_nodes: int = 120,
    ascii: bool | None = None,
    check: bool = False,
    taylor: int = 0,
) -> Report:
    """Trace ``f(*args)`` and explain its derivative the way textbooks do.

    Every number comes from chainrule's own rules: the evaluation trace
    (v_i = op(...) = value, with each edge's local partial derivative), the forward
    tangent trace seeded on input ``wrt`` (a parameter name or position; default the
    first), and the reverse adjoint trace in the order the backward pass runs, with
    each contribution and running sum. Inputs are named after ``f``'s parameters.

    ``digits`` sets the decimals shown; tables longer than ``max_rows`` and graphs
    larger than ``max_nodes`` are shortened (the report itself keeps every row).
    The output is called y, or f if an input is named y. ``ascii=True`` writes every
    rendering in ASCII notation (x1_bar for x̄1, x1_dot for ẋ1, dv1/dx1 for ∂v1/∂x1);
    the default, None, does so for the text tables where ``sys.stdout`` cannot encode
    Unicode (a cp1252 or ASCII terminal); False never does.

    Every operation knows the user's source line that made it (``Variable.source``,
    ``report.by_line()``): the "Source lines" table groups operations by line and folds
    loops into one block "× N", the graphs box each line's operations and fold loops too.
    ``check=True`` adds the "Checks" table (``report.diagnostics``): each node's VJP
    against finite differences (flagged above a relative error of 1e-4), the first NaN/inf
    in either pass with its operands, inputs that do not reach the output (no path) and
    inputs whose gradient is exactly zero here (a stationary point), adjoint sizes and the
    bytes each node keeps. ``report.code`` is the program ``chainrule.jit``
    emits for the value and gradient, its lines marked with the user's lines.

    ``taylor=k`` adds to the evaluation trace each value's Taylor coefficients up to
    order k (``Variable.taylor``) as input ``wrt`` moves along x(t) = x + t, the others
    fixed: v(t) = v + v_1 t + ... + v_k t^k, v_j the j-th derivative along t over j!, each
    from its primitive's Taylor rule as ``chainrule.jet`` computes them.

    The report is built from the recording alone: local partials, tangents and adjoints
    are computed when a table, graph or check first reads them, and the per-operation
    tables show one page of ``max_rows`` rows (``report.text(page=2)``), so a report of
    a 100,000-operation program builds in about the time ``grad`` takes.

    ``f`` may also be a ``chainrule.Tensor`` after a forward pass (``explain(loss)``, as
    torchviz's ``make_dot(loss)``): the report is that of the graph it recorded, its inputs
    the leaf Tensors, named as in the calling code.

    >>> import chainrule.numpy as np
    >>> report = explain(lambda x1, x2: np.log(x1) + x1 * x2 - np.sin(x2), 2.0, 5.0)
    >>> print(report)  # doctest: +SKIP
    """
    if not isinstance(taylor, int) or isinstance(taylor, bool) or taylor < 0:
        raise ValueError(f"explain's taylor is the order of the Taylor series to show, a "
                         f"whole number >= 0 (0: none); got {taylor!r}.")
    if _is_tensor(f):
        if args:
            raise TypeError(
                "explain(tensor) takes the Tensor alone: its graph holds the inputs "
                f"(got {len(args)} more argument{'s' if len(args) > 1 else ''})."
            )
        from ._tensor import record_tensor

        traces = record_tensor(f, sys._getframe(1), wrt, check=check)
    else:
        traces = record(f, args, wrt, check=check)
    report = Report(
        traces,
        digits=digits,
        max_rows=max_rows,
        max_nodes=max_nodes,
        ascii=ascii,
    )
    traces.lazy.taylor_order = taylor
    if not _is_tensor(f):
        from ._code import adjoint_program

        report._program = lambda: adjoint_program(f, args)
    return report
