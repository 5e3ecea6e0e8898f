"""The report's tables as rows of cells, shared by the text and Markdown renderings."""

from __future__ import annotations

import contextlib
import os
import re
import unicodedata

import numpy as _np

from .._core.heap import no_cycle_collection
from . import _format as fmt

_SIMPLE = re.compile(r"[^\W\d_]\d*\Z")  # one letter (any alphabet), then digits


def dotted(name: str) -> str:
    """The tangent of ``name``: x1 -> ẋ1 (textbook notation); other names -> dot(name)."""
    return name[0] + "\u0307" + name[1:] if _SIMPLE.match(name) else f"dot({name})"


def barred(name: str) -> str:
    """The adjoint of ``name``: v5 -> v̄5; other names -> bar(name)."""
    return name[0] + "\u0304" + name[1:] if _SIMPLE.match(name) else f"bar({name})"


def width(text: str) -> int:
    return sum(not unicodedata.combining(ch) for ch in text)


class Gap:
    """Stands for the rows left out of a long table (``hint``: how to see them)."""

    def __init__(self, count: int, hint: str = ""):
        self.count = count
        self.hint = hint

    def row(self, columns: int, what: str = "rows") -> list[str]:
        hint = f"; {self.hint}" if self.hint else ""
        return [f"... {self.count} {what} omitted{hint} ..."] + [""] * (columns - 1)


def clip(items: list, limit: int | None) -> list:
    """The first and last ``limit / 2`` items, with a Gap between them if any are left out."""
    if limit is None or len(items) <= limit:
        return list(items)
    head = limit // 2
    tail = limit - head
    return items[:head] + [Gap(len(items) - limit)] + items[len(items) - tail :]


def pages(items: list, limit: int | None) -> int:
    """How many pages of ``limit`` rows ``items`` fill."""
    return 1 if limit is None or len(items) <= limit else -(-len(items) // max(limit, 1))


def page(items: list, limit: int | None, number: int = 1) -> list:
    """Page ``number`` (from 1) of ``items``, ``limit`` per page, with Gaps standing for the
    pages before and after it. Only the rows of one page are computed and written, so a
    table of 100,000 operations costs what one page costs."""
    if limit is None or len(items) <= limit:
        return list(items)
    limit = max(limit, 1)
    pages = -(-len(items) // limit)
    number = min(max(number, 1), pages)
    start, end = (number - 1) * limit, min(number * limit, len(items))
    where = f"page {number} of {pages}, report.text(page=N) shows page N"
    out: list = [Gap(start, where)] if start else []
    out += items[start:end]
    if end < len(items):
        out.append(Gap(len(items) - end, where))
    return out


def md_escape(text: str) -> str:
    """Text that Markdown shows as it is: no table cells split, no emphasis, no HTML."""
    return re.sub(r"([|*_\\`<>\[\]])", r"\\\1", text)


class Table:
    def __init__(self, title: str, headers: list[str], rows: list[list[str]], note: str = ""):
        self.title, self.headers, self.rows, self.note = title, headers, rows, note

    def text(self) -> str:
        rows = self.rows
        cols = len(self.headers)
        widths = [max([width(self.headers[c])] + [width(r[c]) for r in rows]) for c in range(cols)]

        def line(cells):
            padded = [cell + " " * (w - width(cell)) for cell, w in zip(cells, widths)]
            return ("  " + "  ".join(padded)).rstrip()

        out = [self.title, "=" * width(self.title)]
        if self.note:
            out.append(self.note)
        out.append(line(self.headers))
        out.append(line(["-" * w for w in widths]))
        out += [line(r) for r in rows]
        return "\n".join(out)

    def markdown(self) -> str:
        def cell(text):
            return md_escape(text) or " "

        out = [f"### {self.title}", ""]
        if self.note:
            out += [cell(self.note), ""]
        out.append("| " + " | ".join(map(cell, self.headers)) + " |")
        out.append("|" + "---|" * len(self.headers))
        out += ["| " + " | ".join(map(cell, r)) + " |" for r in self.rows]
        return "\n".join(out)

    def html(self) -> str:
        import html

        rows = self.rows
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.headers)
        body = []
        for r in rows:
            cells = "".join(f"<td>{html.escape(c)}</td>" for c in r)
            body.append(f"<tr>{cells}</tr>")
        note = f"<p>{html.escape(self.note)}</p>" if self.note else ""
        return (
            f"<h2>{html.escape(self.title)}</h2>{note}<table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>"
        )


@contextlib.contextmanager
def quiet():
    """Rendering computes the derivatives of the rows it shows: no cycle collection while
    it makes them (the engine's ``no_cycle_collection``), no NumPy warnings (the tables
    show NaN and inf themselves)."""
    with no_cycle_collection(), _np.errstate(all="ignore"):
        yield


def _partials_text(var) -> str:
    note = f" ({var.partial_note})" if var.partial_note else ""
    return ", ".join(
        f"∂{var.name}/∂{p} = {t}{note}" for p, t in zip(var.parents, var.partial_texts)
    )


def evaluation(report, number: int = 1) -> Table:
    order = report.taylor
    rows = [
        v.row(5 + order, "inputs")
        if isinstance(v, Gap)
        else [v.name, "", "", "= " + report.show(v.value), "", *_coefficients(report, v)]
        for v in clip(report.inputs, report.max_rows)
    ]
    for v in page(report.steps, report.max_rows, number):
        if isinstance(v, Gap):
            rows.append(v.row(5 + order, "operations"))
            continue
        rows.append(
            [
                v.name,
                "= " + v.expr,
                "= " + v.expr_values,
                "= " + report.show(v.value),
                _partials_text(v),
                *_coefficients(report, v),
            ]
        )
    last = pages(report.steps, report.max_rows)
    for out_name, var_name, value in report.outputs:
        source = var_name if var_name is not None else "(constant)"
        # (an output's series needs every step before it: on the last page only)
        coefficients = (_coefficients(report, report.var(var_name))
                        if var_name is not None and number >= last else [""] * order)
        rows.append([out_name, "= " + source, "", "= " + report.show(value), "",
                     *coefficients])
    headers = ["", "operation", "with values", "value", "local partials"]
    note = ""
    if order:
        headers += [f"t^{j}" for j in range(1, order + 1)]
        note = (f"Taylor coefficients as {report.forward_wrt} moves along "
                f"{report.forward_wrt}(t) = {report.forward_wrt} + t (the other inputs fixed): "
                f"v(t) = v + v_1 t + v_2 t^2 + ..., column t^j giving v_j (the j-th "
                f"derivative along t, over j!).")
    return Table("Evaluation trace", headers, rows, note)


def _coefficients(report, var) -> list[str]:
    """The cells of ``var``'s Taylor coefficients (none without explain(taylor=k))."""
    if not report.taylor:
        return []
    series = var.taylor
    if series is None:
        return ["(no rule)"] * report.taylor
    return [report.show(c) for c in series]


def forward(report, number: int = 1) -> Table:
    wrt = report.forward_wrt
    seeds = ", ".join(
        f"{dotted(v.name)} = {'1' if v.name == wrt else '0'}" for v in report.inputs[:8]
    ) + (", ..." if len(report.inputs) > 8 else "")
    rows = [
        v.row(4, "inputs")
        if isinstance(v, Gap)
        else [dotted(v.name), "", "", "= " + report.show_opt(v.tangent)]
        for v in clip(report.inputs, report.max_rows)
    ]
    for v in page(report.steps, report.max_rows, number):
        if isinstance(v, Gap):
            rows.append(v.row(4, "operations"))
            continue
        formula = " + ".join(f"∂{v.name}/∂{p}·{dotted(p)}" for p in v.parents)
        terms = []
        for p, partial, text in zip(v.parents, v.partials, v.partial_texts):
            tangent = report.var(p).tangent
            if partial is None or tangent is None or not fmt.is_scalar(tangent):
                terms = []
                break
            terms.append(f"{fmt.paren(text)}·{fmt.paren(report.show(tangent))}")
        rows.append(
            [
                dotted(v.name),
                "= " + formula,
                "= " + " + ".join(terms) if terms else "",
                "= " + report.show_opt(v.tangent),
            ]
        )
    last = pages(report.steps, report.max_rows)
    for out_name, var_name, _ in report.outputs:
        if var_name is not None:
            # the output's tangent needs the whole forward pass: on the last page only
            tangent = report.var(var_name).tangent if number >= last else None
            shown = f"(page {last})" if number < last else report.show_opt(tangent)
            rows.append([dotted(out_name), "= " + dotted(var_name), "", "= " + shown])
    note = (
        f"Tangents with respect to {wrt}: seeds {seeds}"
        + ("" if fmt.is_scalar(report.var(wrt).value) else " (an array of ones)")
        + "."
    )
    return Table("Forward tangent trace", ["", "chain rule", "with values", "tangent"], rows, note)


def backward(report, number: int = 1) -> Table:
    rows = []
    seeds = {var_name: out_name for out_name, var_name, _ in report.outputs if var_name}
    limit = None if report.max_rows is None else report.max_rows // 2
    for item in page(list(enumerate(report.backward, 1)), limit, number):
        if isinstance(item, Gap):
            rows.append(item.row(5, "backward steps"))
            continue
        k, visit = item
        name = visit.name
        source = f" = {barred(seeds[name])}" if name in seeds and len(seeds) == 1 else ""
        done = " (input: its gradient)" if report.var(name).is_input else ""
        rows.append(
            [str(k), f"{barred(name)}{source} = {report.show(visit.adjoint)}{done}", "", "", ""]
        )
        for c in visit.contributions:
            rows.append(
                [
                    "",
                    "",
                    f"{barred(c.parent)} += {barred(c.child)}·∂{c.child}/∂{c.parent}",
                    "= " + contribution_values(report, c),
                    running_sum(report, c),
                ]
            )
    seed_note = (
        f"{barred(report.output)} = 1"
        if len(report.outputs) == 1 and fmt.is_scalar(report.value)
        else "each output's adjoint is seeded with ones (the gradient of the sum of the outputs)"
    )
    note = f"In the order the backward pass runs (children before parents); {seed_note}."
    return Table(
        "Reverse adjoint trace",
        ["step", "node adjoint", "contribution", "with values", "running sum"],
        rows,
        note,
    )


def contribution_values(report, c) -> str:
    """``1·5 = 5``: the incoming adjoint times the local partial (scalars), then the result."""
    show = report.show
    if c.partial_text == "?" or c.partial_text.startswith("J ") or not fmt.is_scalar(c.value):
        return show(c.value)
    return f"{fmt.paren(show(c.child_adjoint))}·{fmt.paren(c.partial_text)} = {show(c.value)}"


def running_sum(report, c) -> str:
    """``x̄2 = -0.284 + 2 = 1.716`` where a value fans out, else ``v̄3 = 1``."""
    if c.previous is None:
        return f"{barred(c.parent)} = {report.show(c.total)}"
    if fmt.is_scalar(c.total):
        return (
            f"{barred(c.parent)} = {report.show(c.previous)} + "
            f"{fmt.paren(report.show(c.value))} = {report.show(c.total)}"
        )
    return f"{barred(c.parent)} = {report.show(c.total)} (sum of {c.fan_in})"


def order(report) -> Table:
    def names(items):
        return ", ".join(
            f"... {n.count} more ..." if isinstance(n, Gap) else n for n in clip(items, 60)
        )

    return Table(
        "Topological order",
        ["pass", "order"],
        [["evaluation", names(report.forward_order)], ["backward", names(report.backward_order)]],
    )


def gradient(report) -> Table:
    out = report.outputs[0][0] if len(report.outputs) == 1 else f"sum({report.output})"
    rows = [
        v.row(3, "inputs")
        if isinstance(v, Gap)
        else [f"∂{out}/∂{v.name}", f"= {barred(v.name)}", "= " + report.show(report.grad_of(v))]
        for v in clip(report.inputs, report.max_rows)
    ]
    return Table("Gradient", ["", "adjoint", "value"], rows)


def _where(source) -> str:
    return f"{os.path.basename(source.file)}:{source.line}" if source is not None else ""


def source_lines(report) -> Table | None:
    """The operations by the user's line that made them, in the order the code ran; a loop
    (the same lines in the same order, again and again) is one block "× N" (None: no line
    known)."""
    blocks = report.folds()
    if not blocks:
        return None
    rows = []
    for block in clip(blocks, report.max_rows):
        if isinstance(block, Gap):
            rows.append(block.row(4, "blocks"))
            continue
        repeat = f"× {block.repeats}" if block.repeats > 1 else ""
        for k, source in enumerate(block.lines):
            first = block.names[0]
            names = [n for n in first if report.var(n).source == source]
            shown = names if len(names) <= 8 else names[:4] + ["..."] + names[-3:]
            rows.append([repeat if k == 0 else "", _where(source), source.text, ", ".join(shown)])
    note = "a block × N ran N times in a row; its operations are those of the first run"
    folded = any(b.repeats > 1 for b in blocks)
    return Table("Source lines", ["", "line", "code", "operations"], rows, note if folded else "")


def diagnostics(report, number: int = 1) -> Table:
    """explain(check=True): per operation its line, the finite-difference check of its VJP,
    the size of its adjoint and the bytes it keeps for the backward pass."""
    d = report.diagnostics
    rows = []
    for v in page(report.steps, report.max_rows, number):
        if isinstance(v, Gap):
            rows.append(v.row(5, "operations"))
            continue
        c = d.nodes[v.name]
        if c.fd_error is None:
            fd = "-"
        else:
            fd = f"{c.fd_error:.1e} " + ("WRONG" if c.flagged else "ok")
        norm = "-" if c.adjoint_norm is None else f"{c.adjoint_norm:.3g}"
        rows.append([v.name, _where(v.source), fd, norm, str(c.kept_bytes)])
    findings = d.findings() or ["no NaN/inf, no wrong VJP, every input used"]
    return Table(
        "Checks",
        ["", "line", "VJP vs finite differences", "|adjoint|", "bytes kept"],
        rows,
        "\n".join(findings),
    )


def loops_html(report) -> str:
    """The folded loops as expandable HTML blocks: the lines of one iteration, then (open
    it) the operations each iteration made ("" where nothing was folded)."""
    import html

    parts = []
    for block in report.folds():
        if block.repeats < 2:
            continue
        lines = "<br>".join(
            html.escape(f"{_where(s)}: {s.text}" if s.text else _where(s)) for s in block.lines
        )
        shown = clip(list(enumerate(block.names, 1)), report.max_rows)
        items = "".join(
            f"<li>{html.escape(item.row(1, 'iterations')[0])}</li>"
            if isinstance(item, Gap)
            else f"<li>iteration {item[0]}: {html.escape(', '.join(item[1]))}</li>"
            for item in shown
        )
        parts.append(
            f"<details><summary>× {block.repeats}</summary><p>{lines}</p><ol>{items}</ol></details>"
        )
    return f"<h2>Loops</h2>{''.join(parts)}" if parts else ""
