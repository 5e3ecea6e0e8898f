"""``python -m chainrule explain "expr" --at x1=2 x2=5``."""

from __future__ import annotations

import argparse
import sys

from ._expr import Expression, ExpressionError, parse_value
from ._graph import GraphvizNotFound
from ._report import explain

SEED = "log(x1) + x1*x2 - sin(x2)"
SEED_AT = ["x1=2", "x2=5"]
FORMATS = ["text", "markdown", "dot", "mermaid", "svg", "html"]
_SUFFIXES = {
    ".txt": "text",
    ".md": "markdown",
    ".dot": "dot",
    ".gv": "dot",
    ".mmd": "mermaid",
    ".svg": "svg",
    ".html": "html",
    ".htm": "html",
}


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "explain",
        help="show the graph and the forward and reverse traces of an expression",
        description="Explain how chainrule differentiates an expression: the evaluation "
        "trace, the forward tangent trace, the reverse adjoint trace, the topological order "
        "and the gradient. With no expression, explains the textbook example "
        f"y = {SEED} at x1 = 2, x2 = 5.",
    )
    p.add_argument(
        "expression",
        nargs="?",
        help=f'e.g. "{SEED}"; variables are any names, '
        "functions are chainrule.numpy's (log, exp, sin, sqrt, tanh, ...)",
    )
    p.add_argument(
        "--at",
        nargs="+",
        default=None,
        metavar="NAME=VALUE",
        help="the point, e.g. --at x1=2 x2=5 (arrays: x=[1,2,3])",
    )
    p.add_argument(
        "--wrt",
        default=None,
        help="the input the forward tangent trace follows (default: the first)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="output format (default: text, or guessed from -o's suffix)",
    )
    p.add_argument("-o", "--output", default=None, metavar="FILE", help="write to FILE")
    p.add_argument("--digits", type=int, default=3, help="decimals shown (default 3)")
    return p


def _point(expr: Expression, at: list[str] | None) -> dict:
    values: dict = {}
    for item in at or []:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ValueError(f"--at expects NAME=VALUE, such as x1=2; got {item!r}")
        values[name] = parse_value(text.strip(), name)
    unknown = [n for n in values if n not in expr.variables]
    if unknown:
        raise ValueError(
            f"--at gives {', '.join(unknown)}, which the expression does not use "
            f"(its variables: {', '.join(expr.variables) or 'none'})"
        )
    missing = [n for n in expr.variables if n not in values]
    if missing:
        example = " ".join(f"{n}=1.0" for n in missing)
        raise ValueError(f"no value for {', '.join(missing)}: add --at {example}")
    return values


def run(args) -> int:
    source = args.expression if args.expression is not None else SEED
    at = args.at if args.at is not None or args.expression is not None else SEED_AT
    fmt = args.format
    if fmt is None and args.output:
        fmt = next((f for s, f in _SUFFIXES.items() if args.output.lower().endswith(s)), None)
    fmt = fmt or "text"
    try:
        expr = Expression(source)
        point = _point(expr, at)
        if not expr.variables:
            raise ValueError("the expression has no variables to differentiate by")
        order = list(point)
        report = explain(expr.function(order), *point.values(), wrt=args.wrt, digits=args.digits)
        report.title = f"y = {source.strip()} at " + ", ".join(
            f"{n} = {report.show(v)}" for n, v in point.items()
        )
        out = report.render(fmt)
    except ExpressionError as e:
        print(f"chainrule explain: error: {e}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as e:
        print(f"chainrule explain: error: {e}", file=sys.stderr)
        return 2
    except GraphvizNotFound as e:
        print(f"chainrule explain: {e}", file=sys.stderr)
        return 1
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(out)
        print(f"wrote {fmt} to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(out)
    return 0
