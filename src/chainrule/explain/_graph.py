"""The computation graph: DOT, Mermaid, SVG (through Graphviz) and the HTML stepper."""

from __future__ import annotations

import html as _html
import itertools
import json
import os
import secrets
import shutil
import subprocess
from collections import Counter

from . import _tables
from ._tables import barred, running_sum


class GraphvizNotFound(RuntimeError):
    pass


# ----------------------------------------------------------------------------- the graph


def _loops(report, variables: list) -> tuple[dict[str, str], dict[str, object]]:
    """Where the graph is larger than ``max_nodes``, fold each loop (a block of the same
    source lines in the same order, run N times) into its first iteration: ``alias`` maps
    every operation of a later iteration to its counterpart in the first, ``loop_of`` maps
    the first iteration's operations to their ``_fold.Block``."""
    alias: dict[str, str] = {}
    loop_of: dict[str, object] = {}
    if len(variables) <= report.max_nodes:
        return alias, loop_of
    for block in report.folds():
        first = block.names[0]
        if block.repeats < 2 or any(len(names) != len(first) for names in block.names):
            continue  # iterations that made different numbers of operations stay unfolded
        for names in block.names[1:]:
            alias.update(zip(names, first))
        loop_of.update(dict.fromkeys(first, block))
    return alias, loop_of


def graph(report) -> tuple[list[dict], list[dict]]:
    """Nodes and edges to draw. A graph over ``report.max_nodes`` folds its loops into one
    iteration each (drawn inside a block "× N"), then keeps both ends and collapses the
    middle into one summary node, so drawing never grows without bound."""
    variables = [v for v in report.variables if v.name in report.ancestors or v.is_input]
    alias, loop_of = _loops(report, variables)
    drawn = [v for v in variables if v.name not in alias]
    kept = drawn
    hidden = []
    if len(drawn) > report.max_nodes:
        inputs = [v for v in drawn if v.is_input]
        steps = [v for v in drawn if not v.is_input]
        room = max(report.max_nodes - len(inputs), 2)
        head, tail = room // 2, room - room // 2
        kept = inputs + steps[:head] + steps[-tail:]
        hidden = steps[head:-tail]
    ids = {v.name: f"n{i}" for i, v in enumerate(report.variables)}
    outputs = {var for _, var, _ in report.outputs if var}
    spell = report.notation()
    bad: set[str] = set()  # check=True: where the first NaN/inf is, and wrong VJPs
    found = report.diagnostics
    if found is not None:
        bad = {o.name for o in (found.nan_forward, found.nan_backward) if o is not None}
        bad |= set(found.flagged)
    nodes = []
    for v in kept:
        if v.is_input:
            lines = [f"{v.name} = {report.show(v.value)}"]
        else:
            lines = [f"{v.name} = {v.expr}", f"= {report.show(v.value)}"]
        block = loop_of.get(v.name)
        nodes.append(
            {
                "id": ids[v.name],
                "name": v.name,
                "bar": spell(barred(v.name)),
                "lines": [spell(line) for line in lines],
                "kind": "input" if v.is_input else "output" if v.name in outputs else "op",
                "adjoint": None if v.adjoint is None else report.show(v.adjoint),
                "depth": v.depth,
                "source": v.source,
                "loop": block,
                "bad": v.name in bad,
            }
        )
    edges = []
    hidden_names = {v.name for v in hidden}
    if hidden:
        ops = Counter(v.op for v in hidden).most_common(4)
        summary = ", ".join(f"{op} x{n}" for op, n in ops)
        nodes.append(
            {
                "id": "collapsed",
                "name": "...",
                "bar": "...",
                "kind": "summary",
                "lines": [f"... {len(hidden)} more operations ...", summary],
                "adjoint": None,
                "depth": hidden[0].depth,
                "source": None,
                "loop": None,
                "bad": False,
            }
        )

    def end(name: str) -> str:
        name = alias.get(name, name)
        return "collapsed" if name in hidden_names else ids[name]

    seen = set()
    for v in kept:  # the drawn operations' edges carry their local partials
        for j, p in enumerate(v.parents):
            src, dst = end(p), ids[v.name]
            if src == "collapsed" and (src, dst) in seen:
                continue
            seen.add((src, dst))
            label = "" if src == "collapsed" else spell(v.partial_texts[j])
            edges.append({"id": f"e{len(edges)}", "src": src, "dst": dst, "label": label})
    for v in variables:  # the rest: into the summary, from one iteration to the next
        if v.name not in alias and v.name not in hidden_names:
            continue
        dst = end(v.name)
        for p in v.parents:
            src = end(p)
            if src == dst or (src, dst) in seen:
                continue
            seen.add((src, dst))
            label = "next iteration" if v.name in alias and (p in alias or p in loop_of) else ""
            edges.append({"id": f"e{len(edges)}", "src": src, "dst": dst, "label": label})
    return nodes, edges


# ----------------------------------------------------------------------------- DOT / Mermaid


def _dot_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _where(source) -> str:
    return f"{os.path.basename(source.file)}:{source.line}"


def _groups(nodes: list[dict]) -> list[tuple[object, list[tuple[object, list[dict]]]]]:
    """The nodes by loop block (None: not in a loop), then by source line (None: no line),
    each in order of first appearance: how DOT and Mermaid group them into clusters.
    A graph made by one line is not grouped."""
    if len({n["source"] for n in nodes} - {None}) < 2 and all(n["loop"] is None for n in nodes):
        return [(None, [(None, nodes)])]  # one line (a textbook expression): no box around it
    groups: dict = {}
    for n in nodes:
        groups.setdefault(id(n["loop"]), (n["loop"], {}))[1].setdefault(n["source"], []).append(n)
    return [(block, list(lines.items())) for block, lines in groups.values()]


def _line_label(source) -> str:
    return f"{_where(source)}: {source.text}" if source.text else _where(source)


def _loop_label(block) -> str:
    return f"× {block.repeats} (a loop; the values of its first iteration)"


def _nested(nodes: list[dict], spell, node_line, cluster, close: str) -> list[str]:
    """The nodes' lines nested in their clusters (see ``_groups``): ``cluster(k, label, loop,
    indent)`` opens cluster k, ``close`` ends one, ``node_line(node, indent)`` draws a node."""
    out: list[str] = []
    count = itertools.count()
    for block, lines in _groups(nodes):
        indent = "  "
        if block is not None:
            out += cluster(next(count), _loop_label(block), True, indent)
            indent = "    "
        for source, members in lines:
            if source is None:
                out += [node_line(n, indent) for n in members]
                continue
            out += cluster(next(count), spell(_line_label(source)), False, indent)
            out += [node_line(n, indent + "  ") for n in members]
            out.append(f"{indent}{close}")
        if block is not None:
            out.append(f"  {close}")
    return out


def dot(report) -> str:
    nodes, edges = graph(report)
    shapes = {"input": "ellipse", "op": "box", "output": "box", "summary": "note"}
    spell = report.notation()
    out = [
        "digraph explain {",
        '  rankdir=LR; fontname="Helvetica";',
        '  node [fontname="Helvetica", fontsize=11, style="rounded"];',
        '  edge [fontname="Helvetica", fontsize=10];',
        f"  label={_dot_str(spell(report.title))}; labelloc=t;",
    ]

    def node_line(n, indent):
        lines = n["lines"] + ([f"{n['bar']} = {n['adjoint']}"] if n["adjoint"] else [])
        extra = ", peripheries=2" if n["kind"] == "output" else ""
        if n["bad"]:  # check=True found a NaN/inf starting here, or a wrong VJP
            extra += ', color="#c00000", fontcolor="#c00000", penwidth=2.5'
        label = _dot_str("\n".join(lines))
        return f"{indent}{n['id']} [label={label}, shape={shapes[n['kind']]}{extra}];"

    def cluster(k: int, label: str, loop: bool, indent: str) -> list[str]:
        style = 'style="bold"; color="#c77700"' if loop else 'style="dashed"; color="#999999"'
        return [f"{indent}subgraph cluster_{k} {{", f"{indent}  label={_dot_str(label)}; {style};"]

    out += _nested(nodes, spell, node_line, cluster, "}")
    for e in edges:
        label = f" [label={_dot_str(e['label'])}]" if e["label"] else ""
        out.append(f"  {e['src']} -> {e['dst']}{label};")
    out.append("}")
    return "\n".join(out) + "\n"


def _mermaid_str(text: str) -> str:
    return '"' + _html.escape(text, quote=True).replace("&quot;", "#quot;") + '"'


def mermaid(report) -> str:
    nodes, edges = graph(report)
    spell = report.notation()
    out = ["flowchart LR"]

    def node_line(n, indent):
        lines = n["lines"] + ([f"{n['bar']} = {n['adjoint']}"] if n["adjoint"] else [])
        label = _mermaid_str("<br/>".join(lines)).replace("&lt;br/&gt;", "<br/>")
        left, right = {"input": ("([", "])"), "summary": ("[/", "/]")}.get(n["kind"], ("[", "]"))
        return f"{indent}{n['id']}{left}{label}{right}"

    def cluster(k: int, label: str, loop: bool, indent: str) -> list[str]:
        return [f"{indent}subgraph c{k} [{_mermaid_str(label)}]"]

    out += _nested(nodes, spell, node_line, cluster, "end")
    for e in edges:
        label = f"|{_mermaid_str(e['label'])}|" if e["label"] else ""
        out.append(f"  {e['src']} -->{label} {e['dst']}")
    for n in nodes:
        if n["kind"] == "output":
            out.append(f"  style {n['id']} stroke-width:3px")
    return "\n".join(out) + "\n"


def svg(dot_source: str) -> str:
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFound(
            "SVG needs Graphviz's `dot` program, which is not installed (Debian/Ubuntu: "
            "apt-get install graphviz; conda: conda install graphviz; macOS: brew install "
            "graphviz). Without it, use report.html() (draws the graph itself), "
            "report.dot() or report.mermaid()."
        )
    done = subprocess.run(
        [exe, "-Tsvg"], input=dot_source, capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"Graphviz failed on the DOT source: {done.stderr.strip()}")
    return done.stdout


# ----------------------------------------------------------------------------- HTML

_CHAR_W, _LINE_H, _GAP_X, _GAP_Y = 7.2, 16, 90, 26


def _tag(n: dict) -> str:
    """The grey line under a node: its source line, and "× N" inside a folded loop."""
    where = _where(n["source"]) if n["source"] is not None else ""
    loop = f"× {n['loop'].repeats}" if n["loop"] is not None else ""
    return " · ".join(filter(None, [loop, where]))


def _layout(nodes: list[dict]) -> tuple[float, float]:
    """Columns by depth (inputs on the left), nodes stacked in each column."""
    columns: dict[int, list[dict]] = {}
    for n in nodes:
        lines = n["lines"] + [f"{n['bar']} = {n['adjoint'] or '?'}"]
        if _tag(n):
            lines.append(_tag(n))
        n["w"] = 16 + _CHAR_W * max(len(line) for line in lines)
        n["h"] = 10 + _LINE_H * len(lines)
        columns.setdefault(n["depth"], []).append(n)
    x = 20.0
    height = 0.0
    for depth in sorted(columns):
        y = 20.0
        col_w = max(n["w"] for n in columns[depth])
        for n in columns[depth]:
            n["x"], n["y"] = x, y
            y += n["h"] + _GAP_Y
        x += col_w + _GAP_X
        height = max(height, y)
    return x, height


def _svg_inline(nodes: list[dict], edges: list[dict], prefix: str) -> str:
    width, height = _layout(nodes)
    by_id = {n["id"]: n for n in nodes}
    out = [
        f'<svg width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img">',
        f'<defs><marker id="{prefix}arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="9" '
        'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z"/></marker></defs>',
    ]
    for e in edges:
        a, b = by_id[e["src"]], by_id[e["dst"]]
        x1, y1 = a["x"] + a["w"], a["y"] + a["h"] / 2
        x2, y2 = b["x"], b["y"] + b["h"] / 2
        if x2 <= x1:  # same column: loop around the right side
            x2, mid = b["x"] + b["w"], max(x1, b["x"] + b["w"]) + 30
            path = f"M{x1:.0f},{y1:.0f} C{mid:.0f},{y1:.0f} {mid:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
        else:
            mid = (x1 + x2) / 2
            path = f"M{x1:.0f},{y1:.0f} C{mid:.0f},{y1:.0f} {mid:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
        out.append(
            f'<g class="edge" id="{prefix}{e["id"]}">'
            f'<path d="{path}" marker-end="url(#{prefix}arrow)"/>'
            f'<text x="{(x1 + x2) / 2:.0f}" y="{(y1 + y2) / 2 - 4:.0f}">'
            f"{_html.escape(e['label'])}</text></g>"
        )
    for n in nodes:
        rx = n["h"] / 2 if n["kind"] == "input" else 6
        texts = "".join(
            f'<text x="{n["x"] + 8:.0f}" y="{n["y"] + 18 + i * _LINE_H:.0f}">'
            f"{_html.escape(line)}</text>"
            for i, line in enumerate(n["lines"])
        )
        adj_y = n["y"] + 18 + len(n["lines"]) * _LINE_H
        tag, title = _tag(n), ""
        if tag:
            texts += (
                f'<text class="src" x="{n["x"] + 8:.0f}" y="{adj_y + _LINE_H:.0f}">'
                f"{_html.escape(tag)}</text>"
            )
        if n["source"] is not None:  # the line's code, shown on hover
            title = f"<title>{_html.escape(_line_label(n['source']))}</title>"
        kind = n["kind"] + (" bad" if n["bad"] else "")
        out.append(
            f'<g class="node {kind}" id="{prefix}{n["id"]}">{title}'
            f'<rect x="{n["x"]:.0f}" y="{n["y"]:.0f}" '
            f'width="{n["w"]:.0f}" height="{n["h"]:.0f}" rx="{rx:.0f}"/>{texts}'
            f'<text class="adj" x="{n["x"] + 8:.0f}" y="{adj_y:.0f}"></text></g>'
        )
    out.append("</svg>")
    return "".join(out)


_PAGE_CSS = "body{font-family:system-ui,Helvetica,Arial,sans-serif;margin:1.5em;color:#222}"
_CSS = """
.chainrule-explain h1{font-size:1.4em}.chainrule-explain h2{font-size:1.15em}
.chainrule-explain .cx-graph{overflow:auto;border:1px solid #ddd;padding:4px;max-height:70vh}
.chainrule-explain svg text{font:12px ui-monospace,Menlo,Consolas,monospace;fill:#222}
.chainrule-explain .node rect{fill:#f7f7f7;stroke:#888;stroke-width:1.2}
.chainrule-explain .node.input rect{fill:#eef5ff}
.chainrule-explain .node.output rect{stroke-width:3}
.chainrule-explain .node.summary rect{fill:#fff8e0;stroke-dasharray:4 3}
.chainrule-explain .node.done rect{fill:#e8f6e8}
.chainrule-explain .node.current rect{fill:#ffe08a;stroke:#c77700;stroke-width:3}
.chainrule-explain .node.receiving rect{fill:#ffd4d4;stroke:#c00}
.chainrule-explain .node text.adj{fill:#0a5;font-weight:bold}
.chainrule-explain .node text.src{fill:#888;font-size:10px}
.chainrule-explain .node.bad rect{stroke:#c00;stroke-width:3}
.chainrule-explain .edge path{fill:none;stroke:#999;stroke-width:1.3}
.chainrule-explain .edge text{fill:#777;font-size:11px}
.chainrule-explain .edge.active path{stroke:#c00;stroke-width:3}
.chainrule-explain .edge.active text{fill:#c00;font-weight:bold}
.chainrule-explain .cx-controls{margin:.8em 0}
.chainrule-explain .cx-controls button{font-size:1em;margin-right:.4em;padding:.2em .8em}
.chainrule-explain .cx-status{font-family:ui-monospace,Menlo,Consolas,monospace;
white-space:pre-wrap;background:#fafafa;border-left:4px solid #c77700;padding:.5em .8em;
min-height:3em}
.chainrule-explain table{border-collapse:collapse;margin:.5em 0 1.5em}
.chainrule-explain td,.chainrule-explain th{border:1px solid #ddd;padding:2px 8px;
text-align:left;font:13px ui-monospace,Menlo,Consolas,monospace}
.chainrule-explain th{background:#f0f0f0}
"""

# ``P`` prefixes every element id, so several reports can share one notebook page.
_JS = """
(function(P, keys){
var D=JSON.parse(document.getElementById(P+'explain-data').textContent);
var k=0, S=D.steps;
function el(id){return document.getElementById(P+id);}
function render(){
  var adj={}, i, j, n;
  D.nodes.forEach(function(n){var g=el(n.id); if(!g)return;
    g.classList.remove('current','receiving','done');
    g.querySelector('text.adj').textContent='';});
  D.edges.forEach(function(e){var g=el(e.id); if(g) g.classList.remove('active');});
  D.seeds.forEach(function(s){adj[s.node]=s.value;});
  for(i=0;i<k;i++){var s=S[i]; var g=el(s.node);
    if(g) g.classList.add(i===k-1?'current':'done');
    for(j=0;j<s.contributions.length;j++){var c=s.contributions[j]; adj[c.parent]=c.total;
      if(i===k-1){ if(el(c.parent)) el(c.parent).classList.add('receiving');
        if(c.edge && el(c.edge)) el(c.edge).classList.add('active'); }}}
  for(n in adj){var g=el(n); if(g) g.querySelector('text.adj').textContent=D.bar[n]+' = '+adj[n];}
  el('step').textContent=k+' / '+S.length;
  el('prev').disabled=(k===0); el('next').disabled=(k===S.length);
  if(k===0){el('status').textContent='Forward pass done. Press Next to run the backward pass '+
    '(seed: '+D.seedText+').';}
  else {var s=S[k-1], lines=['Step '+k+': node '+s.name+' receives its adjoint '+
    D.bar[s.node]+' = '+s.adjoint+(s.input?' (an input: this is its gradient)':'')];
    s.contributions.forEach(function(c){lines.push('  '+c.text+'   ->   '+c.running);});
    if(!s.contributions.length && !s.input) lines.push('  (no traced inputs)');
    el('status').textContent=lines.join('\\n');}
}
el('next').onclick=function(){if(k<S.length){k++;render();}};
el('prev').onclick=function(){if(k>0){k--;render();}};
el('reset').onclick=function(){k=0;render();};
if(keys) document.addEventListener('keydown',function(ev){
  if(ev.key==='ArrowRight')el('next').click(); if(ev.key==='ArrowLeft')el('prev').click();});
render();
var m=keys && /step=(\\d+)/.exec(location.hash);
if(m){for(var t=0;t<+m[1];t++) el('next').click();}
})(%s, %s);
"""


def _stepper_data(report, nodes: list[dict], edges: list[dict]) -> dict:
    spell = report.notation()
    ids = {n["name"]: n["id"] for n in nodes if n["kind"] != "summary"}
    edge_of = {(e["src"], e["dst"]): e["id"] for e in edges}
    steps = []
    for visit in report.backward:
        if visit.name not in ids:
            continue
        contributions = []
        for c in visit.contributions:
            parent = ids.get(c.parent, "collapsed")
            contributions.append(
                {
                    "parent": parent,
                    "edge": edge_of.get((parent, ids[visit.name])),
                    "total": report.show(c.total),
                    "text": spell(
                        f"{barred(c.parent)} += {barred(c.child)}·∂{c.child}/∂{c.parent} = "
                        f"{report.show(c.value)}"
                    ),
                    "running": spell(running_sum(report, c)),
                }
            )
        steps.append(
            {
                "node": ids[visit.name],
                "name": spell(visit.name),
                "adjoint": report.show(visit.adjoint),
                "input": report.var(visit.name).is_input,
                "contributions": contributions,
            }
        )
    seeds = [
        {"node": ids[var], "value": "1" if len(report.outputs) == 1 else "ones"}
        for _, var, _ in report.outputs
        if var in ids
    ]
    return {
        "nodes": [{"id": n["id"]} for n in nodes],
        "edges": [{"id": e["id"]} for e in edges],
        "steps": steps,
        "seeds": seeds,
        "bar": {n["id"]: n["bar"] for n in nodes},
        "seedText": spell(f"{barred(report.output)} = 1")
        if len(seeds) == 1
        else "each output's adjoint = ones",
    }


def html(report, fragment: bool = False, page: int = 1) -> str:
    with _tables.quiet():
        return _html_page(report, fragment, page)


def _html_page(report, fragment: bool, page: int) -> str:
    nodes, edges = graph(report)
    prefix = f"cx{secrets.token_hex(4)}-" if fragment else ""
    # no "<", ">" or "&" in the data block: nothing in it can end or open a tag
    data = json.dumps(_stepper_data(report, nodes, edges))
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    tables = "".join(t.html() for t in report.tables(page=page))
    tables += _tables.loops_html(report)  # the folded loops, expandable
    code = report._code_section()
    if code is not None:
        tables += f"<h2>{_html.escape(code[0])}</h2><pre>{_html.escape(code[1])}</pre>"
    title = _html.escape(report.notation()(f"chainrule.explain: {report.title}"))
    script = _JS % (json.dumps(prefix), "false" if fragment else "true")
    body = (
        f'<div class="chainrule-explain"><style>{_CSS}</style><h1>{title}</h1>'
        f'<div class="cx-controls"><button id="{prefix}reset">Reset</button>'
        f'<button id="{prefix}prev">&#9664; Prev</button>'
        f'<button id="{prefix}next">Next &#9654;</button> backward step '
        f'<span id="{prefix}step"></span></div><div class="cx-status" id="{prefix}status"></div>'
        f'<div class="cx-graph">{_svg_inline(nodes, edges, prefix)}</div>{tables}'
        f'<script type="application/json" id="{prefix}explain-data">{data}</script>'
        f"<script>{script}</script></div>"
    )
    if fragment:
        return body
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_PAGE_CSS}</style></head><body>{body}</body></html>\n"
    )
