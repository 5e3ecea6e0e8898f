"""``chainrule.explain``: the computation graph and the traces of one evaluation.

``explain(f, *args)`` returns a Report with the evaluation trace, the forward
tangent trace, the reverse adjoint trace and the topological order, printable as
text tables and renderable as Markdown, DOT, Mermaid, SVG and a self-contained
HTML page. ``python -m chainrule explain "expr" --at x1=2 x2=5`` is the CLI.
"""

from ._graph import GraphvizNotFound
from ._report import Report, explain

__all__ = ["explain", "Report", "GraphvizNotFound"]
