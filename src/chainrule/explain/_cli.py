"""``python -m chainrule explain "expr" --at x1=2 x2=5``."""

from __future__ import annotations

import argparse
import sys
import unicodedata
import warnings

from ._expr import (
    CONSTANTS,
    MAX_ELEMENTS,
    Expression,
    ExpressionError,
    SizeLimitError,
    function_list,
    parse_value,
)
from ._graph import GraphvizNotFound
from ._notation import fits
from ._report import Report, explain

SEED = "log(x1) + x1*x2 - sin(x2)"
SEED_AT = ["x1=2", "x2=5"]
MAX_DIGITS = 15  # a float64 has about 16 significant decimals
PREFIX = "chainrule explain: error:"
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
        f"y = {SEED} at x1 = 2, x2 = 5. Every failure is one line on stderr "
        f"starting with '{PREFIX}' and exit status 2 (1 when Graphviz is missing for svg).",
    )
    p.add_argument(
        "expression",
        nargs="?",
        help=f'e.g. "{SEED}"; variables are any names but pi and e (the constants), '
        "operators + - * / ** @, functions are chainrule.numpy's (log, exp, sin, sqrt, "
        "tanh, abs, ...; sum, mean, max, dot, norm, det, ...; floor, ceil, round, sign and "
        "the other non-differentiable ones have a zero derivative; --functions lists them); "
        'one starting with "-" may be given as it is: "-x1**2"',
    )
    p.add_argument(
        "--functions",
        action="store_true",
        help="list the functions an expression may call, by group, and exit",
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
    p.add_argument(
        "--digits", type=int, default=3, help=f"decimals shown, 0 to {MAX_DIGITS} (default 3)"
    )
    p.add_argument(
        "--ascii",
        action="store_true",
        help="write the notation in ASCII (x1_bar, x1_dot, dv1/dx1, *, pi), as is done "
        "anyway where the terminal cannot encode Unicode",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="add the Checks table: each operation's derivative against finite differences, "
        "the first NaN/inf in either pass, inputs that do not reach the output or have a zero "
        "gradient here",
    )
    p.add_argument(
        "--taylor",
        type=int,
        default=0,
        metavar="K",
        help="add each value's Taylor coefficients up to order K to the evaluation trace, "
        "as the --wrt input moves along x + t (default 0: none)",
    )
    p.add_argument(
        "--max-elements",
        type=int,
        default=MAX_ELEMENTS,
        metavar="N",
        help="the most elements any value of the expression may have; a call that would "
        f"create more is refused before it allocates (default {MAX_ELEMENTS:,})",
    )
    return p


OPTIONS = (
    "--functions",
    "--at",
    "--wrt",
    "--format",
    "-o",
    "--output",
    "--digits",
    "--max-elements",
    "--ascii",
    "--check",
    "--taylor",
    "-h",
    "--help",
)


def protect_expression(argv: list[str]) -> list[str]:
    """Let an expression start with '-' ("-x1**2"), which argparse would take for an option.

    A word that starts with '-' but is not one of explain's options (nor an abbreviation
    argparse accepts, nor a negative number) is the expression: it gets a leading space,
    which argparse reads as a positional and the parser ignores.
    """
    out = []
    for i, word in enumerate(argv):
        if word == "--":
            return out + argv[i:]
        option = word.split("=", 1)[0]
        is_option = any(o.startswith(option) for o in OPTIONS if option.startswith("--")) or (
            option in OPTIONS
        )
        if word.startswith("-") and len(word) > 1 and not is_option and not _is_number(word):
            word = " " + word
        out.append(word)
    return out


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _point(expr: Expression, at: list[str] | None, max_elements: int) -> dict:
    values: dict = {}
    for item in at or []:
        name, sep, text = item.partition("=")
        name = unicodedata.normalize("NFKC", name.strip())  # as Python reads identifiers
        if not sep or not name.isidentifier():
            raise ValueError(f"--at expects NAME=VALUE, such as x1=2; got {item!r}")
        if name in values:
            raise ValueError(f"--at gives {name} twice; give each variable once")
        values[name] = parse_value(text.strip(), name, max_elements)
    unknown = [n for n in values if n not in expr.variables]
    if unknown:
        constants = [n for n in unknown if n in CONSTANTS]
        because = f"; {', '.join(constants)} is a constant, not a variable" if constants else ""
        raise ValueError(
            f"--at gives {', '.join(unknown)}, which the expression does not use "
            f"(its variables: {', '.join(expr.variables) or 'none'}){because}"
        )
    missing = [n for n in expr.variables if n not in values]
    if missing:
        example = " ".join(f"{n}=1.0" for n in missing)
        raise ValueError(f"no value for {', '.join(missing)}: add --at {example}")
    return values


def run(args) -> int:
    if args.functions:
        sys.stdout.write(function_list())
        return 0
    try:
        # numpy's warnings (overflow, divide by zero) would spread over several stderr lines
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fmt, report = _report(args)
            out = report.render(fmt)
            if not args.output and not args.ascii and not fits(out, sys.stdout):
                report.ascii = True  # a terminal that cannot show the Unicode notation
                out = report.render(fmt)
    except GraphvizNotFound as e:
        return _fail(str(e), code=1, prefix="chainrule explain:")
    except ExpressionError as e:
        return _fail(f"{e.problem} (column {e.column + 1}): {_excerpt(e.source, e.column)}")
    except SizeLimitError as e:
        return _fail(str(e))
    except (ValueError, TypeError) as e:
        return _fail(str(e))
    except RecursionError:
        return _fail("the expression is nested too deeply to evaluate")
    except MemoryError:
        return _fail(
            "out of memory evaluating the expression: lower --max-elements or use smaller arrays"
        )
    except Exception as e:  # the expression's own runtime error: name it, never a traceback
        return _fail(f"evaluating the expression raised {type(e).__name__}: {e}")
    for w in {str(w.message): w for w in caught}.values():
        print(f"chainrule explain: warning: {' '.join(str(w.message).split())}", file=sys.stderr)
    if not args.output:
        sys.stdout.write(out)
        return 0
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(out)
    except OSError as e:
        return _fail(f"cannot write {args.output}: {e.strerror or e}")
    print(f"wrote {fmt} to {args.output}", file=sys.stderr)
    return 0


def _report(args) -> tuple[str, Report]:
    """The output format and the report; raises on every kind of bad input."""
    if not 0 <= args.digits <= MAX_DIGITS:
        raise ValueError(f"--digits must be between 0 and {MAX_DIGITS}; got {args.digits}")
    if args.max_elements < 1:
        raise ValueError(f"--max-elements must be at least 1; got {args.max_elements}")
    # lstrip: protect_expression's leading space must not shift the columns of errors
    source = args.expression.lstrip() if args.expression is not None else SEED
    at = args.at if args.at is not None or args.expression is not None else SEED_AT
    fmt = args.format
    if fmt is None and args.output:
        fmt = next((f for s, f in _SUFFIXES.items() if args.output.lower().endswith(s)), None)
    fmt = fmt or "text"
    expr = Expression(source)
    point = _point(expr, at, args.max_elements)
    if not expr.variables:
        raise ValueError("the expression has no variables to differentiate by")
    order = list(point)
    report = explain(
        expr.function(order, args.max_elements),
        *point.values(),
        wrt=args.wrt,
        digits=args.digits,
        ascii=args.ascii,
        check=args.check,
        taylor=args.taylor,
    )
    report.title = f"{report.output} = {source.strip()} at " + ", ".join(
        f"{n} = {report.show(v)}" for n, v in point.items()
    )
    return fmt, report


def _excerpt(source: str, column: int) -> str:
    """Where an error is, on one line: the source around the column, marked with >>> <<<."""
    start = max(column - 30, 0)
    before, after = source[start:column], source[column : column + 30]
    return ("..." if start else "") + f"{before}>>>{after}"


def _fail(message: str, code: int = 2, prefix: str = PREFIX) -> int:
    """One line on stderr: the shell and the user see the problem, never a traceback."""
    print(f"{prefix} {' '.join(message.split())}", file=sys.stderr)
    return code
