"""A safe parser for the CLI's expressions: arithmetic and chainrule.numpy functions.

The source is parsed with ``ast`` and every node is checked against a short
whitelist (numbers, variable names, + - * / ** @, unary minus, calls of known
functions by plain name); nothing is ever passed to ``eval``. Errors point at
the column where the problem is.

The non-differentiable functions chainrule.numpy knows (floor, sign, argmax, ...) are
traced here with a zero derivative, so the tables show them as operations with
local partials of 0; chainrule.numpy itself returns their results as constants.
"""

from __future__ import annotations

import ast
import inspect
import math
import warnings
from collections.abc import Callable

import numpy as _np

from .. import numpy as anp
from .._core.rules import defjvp_argnum, defvjp_argnum
from .._core.tracer import getval, primitive
from .._core.vspace import vspace
from ..numpy.numpy_wrapper import DIFFERENTIABLE, NONDIFFERENTIABLE

MAX_LENGTH = 2000
MAX_DEPTH = 64  # nesting of calls, right operands and signs; a left-to-right chain is flat
MAX_ELEMENTS = 10**7  # default cap on the elements of any value the expression creates

# Non-differentiable functions whose result is not one array of numbers.
_NOT_VALUES = {"empty_like", "histogram", "nonzero", "result_type"}


def _zero_derivative(name: str) -> Callable:
    """NumPy's ``name`` as a primitive whose derivatives are zero, its result as floats
    (every value of an expression is a float)."""
    fun = getattr(_np, name)

    def raw(*args):
        out = fun(*args)
        return float(out) if _np.ndim(out) == 0 else _np.asarray(out, dtype=float)

    raw.__name__ = raw.__qualname__ = name
    wrapped = primitive(raw)
    # explicit zeros, not None: the backward table then shows each zero contribution
    defvjp_argnum(wrapped, lambda i, ans, args, kwargs: lambda g: vspace(args[i]).zeros())
    defjvp_argnum(wrapped, lambda i, g, ans, args, kwargs: vspace(ans).zeros())
    return wrapped


# chainrule.numpy.linalg's functions whose result is one real array (the others give
# tuples, complex values or take integer or list arguments), by their plain names
LINALG = "norm vector_norm matrix_norm det inv pinv solve cholesky eigvalsh matrix_transpose"

# The functions an expression may call, by group (for --functions and the errors).
_GROUP_NAMES = {"contraction": "products", "shape": "shapes"}
GROUPS: dict[str, list[str]] = {
    _GROUP_NAMES.get(group, group): [n for n in names.split() if callable(getattr(anp, n, None))]
    for group, names in DIFFERENTIABLE.items()
}
GROUPS["linear algebra"] = [name for name in LINALG.split() if name not in dir(anp)]
FUNCTIONS: dict[str, Callable] = {
    name: getattr(anp, name, None) or getattr(anp.linalg, name)
    for names in GROUPS.values()
    for name in names
}
ZERO_DERIVATIVE = [
    name
    for name in NONDIFFERENTIABLE.split()
    if name not in _NOT_VALUES and callable(getattr(_np, name, None))
]
GROUPS["zero derivative"] = ZERO_DERIVATIVE
FUNCTIONS.update({name: _zero_derivative(name) for name in ZERO_DERIVATIVE})
CONSTANTS = {"pi": math.pi, "e": math.e}


def function_list() -> str:
    """Every function an expression may call, a line per group (``--functions``)."""
    return "".join(f"{group} ({len(names)}): {' '.join(names)}\n"
                   for group, names in GROUPS.items())

_BINARY = {
    ast.Add: anp.add,
    ast.Sub: anp.subtract,
    ast.Mult: anp.multiply,
    ast.Div: anp.true_divide,
    ast.Pow: anp.power,
    ast.MatMult: anp.matmul,
}
_SYMBOLS = {
    ast.Add: "'+'",
    ast.Sub: "'-'",
    ast.Mult: "'*'",
    ast.Div: "'/'",
    ast.Pow: "'**'",
    ast.MatMult: "'@'",
}
_UNARY = {ast.USub: anp.negative, ast.UAdd: lambda x: x}
_FORBIDDEN = {
    ast.Attribute: "attribute access ('.')",
    ast.Subscript: "indexing ('[...]')",
    ast.Lambda: "lambda",
    ast.Compare: "comparisons",
    ast.BoolOp: "'and'/'or'",
    ast.IfExp: "'if ... else'",
    ast.Tuple: "tuples",
    ast.List: "lists",
    ast.Dict: "dicts",
    ast.Set: "sets",
    ast.ListComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.Starred: "'*' unpacking",
    ast.NamedExpr: "':='",
    ast.JoinedStr: "strings",
}


class SizeLimitError(ValueError):
    """A call would create an array with more elements than the expression may create."""


class ExpressionError(ValueError):
    """A bad expression; the message shows the source with a caret under the problem."""

    def __init__(self, problem: str, source: str, column: int):
        self.problem, self.source, self.column = problem, source, column
        shown = source if len(source) <= 120 else source[: max(column, 0) + 40]
        caret = " " * max(column, 0) + "^"
        super().__init__(f"{problem} (column {column + 1})\n  {shown}\n  {caret}")


def _op_name(op: ast.AST) -> str:
    return {
        ast.FloorDiv: "'//'",
        ast.Mod: "'%'",
        ast.BitAnd: "'&'",
        ast.BitOr: "'|'",
        ast.BitXor: "'^' (use ** for powers)",
        ast.LShift: "'<<'",
        ast.RShift: "'>>'",
        ast.Invert: "'~'",
        ast.Not: "'not'",
    }.get(type(op), "this operator")


class Expression:
    """A checked expression; ``variables`` in order of first appearance."""

    def __init__(self, source: str):
        self.source = source
        if len(source) > MAX_LENGTH:
            raise ExpressionError(
                f"the expression is longer than {MAX_LENGTH} characters", source, MAX_LENGTH
            )
        if not source.strip():
            raise ExpressionError("the expression is empty", source, 0)
        try:
            with warnings.catch_warnings():
                # Python warns about e.g. "1sin" before failing; the error below says it all
                warnings.simplefilter("ignore", SyntaxWarning)
                tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as e:
            offset = (e.offset or 1) - 1 + (len(source) - len(source.lstrip()))
            raise ExpressionError(f"syntax error: {e.msg}", source, offset) from None
        except (RecursionError, MemoryError, ValueError) as e:
            raise ExpressionError(
                f"cannot parse the expression ({type(e).__name__}: it is "
                "nested too deeply or too large)",
                source,
                0,
            ) from None
        self.tree = tree.body
        self._indent = len(source) - len(source.lstrip())
        self.variables: list[str] = []
        self._check()

    def _error(self, problem: str, node: ast.AST):
        return ExpressionError(problem, self.source, getattr(node, "col_offset", 0) + self._indent)

    def _check(self) -> None:
        stack = [(self.tree, 1)]
        seen: dict[str, int] = {}
        while stack:
            node, depth = stack.pop()
            if depth > MAX_DEPTH:
                raise self._error(
                    f"the expression is nested more than {MAX_DEPTH} levels deep", node
                )
            if isinstance(node, ast.Constant):
                if type(node.value) not in (int, float):
                    kind = type(node.value).__name__
                    raise self._error(
                        f"only real numbers are allowed as constants, not {kind}", node
                    )
                if not math.isfinite(_to_float(node.value, self, node)):
                    raise self._error("this number is too large", node)
            elif isinstance(node, ast.Name):
                if node.id in FUNCTIONS:
                    raise self._error(
                        f"{node.id} is a function: call it, as in {node.id}(x1)", node
                    )
                if node.id.startswith("_"):
                    raise self._error(f"names starting with '_' are not allowed: {node.id}", node)
                if node.id not in CONSTANTS and node.id not in seen:
                    seen[node.id] = node.col_offset
            elif isinstance(node, ast.BinOp):
                if type(node.op) not in _BINARY:
                    raise self._error(f"{_op_name(node.op)} is not supported", node)
                # a + b + c nests to the left in the tree but is evaluated in a loop: flat
                stack += [(node.right, depth + 1), (node.left, depth)]
            elif isinstance(node, ast.UnaryOp):
                if type(node.op) not in _UNARY:
                    raise self._error(f"{_op_name(node.op)} is not supported", node)
                stack.append((node.operand, depth + 1))
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute):
                    raise self._error(
                        f"{_FORBIDDEN[ast.Attribute]} not allowed in an expression", _where(func)
                    )
                if not isinstance(func, ast.Name):
                    raise self._error(
                        "only functions called by their plain name are allowed, as in sin(x1)", func
                    )
                if func.id not in FUNCTIONS:
                    raise self._error(_unknown_function(func.id), func)
                if node.keywords:
                    raise self._error("keyword arguments are not supported", node.keywords[0].value)
                if not node.args:
                    raise self._error(f"{func.id}() needs an argument", node)
                stack += [(arg, depth + 1) for arg in reversed(node.args)]
            else:
                what = _FORBIDDEN.get(type(node), type(node).__name__)
                raise self._error(f"{what} not allowed in an expression", _where(node))
        self.variables = sorted(seen, key=seen.get)

    def function(self, order: list[str], max_elements: int = MAX_ELEMENTS) -> Callable:
        """A function of the variables (named and ordered by ``order``) computing the expression.

        A call whose result would have more than ``max_elements`` elements raises
        ``SizeLimitError`` before it allocates anything.
        """

        def f(*values):
            return self._eval(self.tree, dict(zip(order, values)), max_elements)

        params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in order]
        f.__signature__ = inspect.Signature(params)
        f.__name__ = "f"
        return f

    def _eval(self, node: ast.AST, env: dict, limit: int):
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            return env[node.id] if node.id in env else CONSTANTS[node.id]
        if isinstance(node, ast.BinOp):
            # walk the left spine in a loop so a flat sum of 1,000 terms needs no deep recursion
            spine = []
            while isinstance(node, ast.BinOp):
                spine.append(node)
                node = node.left
            value = self._eval(node, env, limit)
            for op in reversed(spine):
                right = self._eval(op.right, env, limit)
                rule = _matrix_product if isinstance(op.op, ast.MatMult) else _broadcast
                _check_size(rule, "this operation", [value, right], limit)
                try:
                    value = _BINARY[type(op.op)](value, right)
                except (TypeError, ValueError) as e:  # '@' of a scalar or mismatched shapes
                    problem = f"{_SYMBOLS[type(op.op)]} failed: {type(e).__name__}: {e}"
                    raise self._error(problem, op) from None
            return value
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](self._eval(node.operand, env, limit))
        name = node.func.id
        args = [self._eval(arg, env, limit) for arg in node.args]
        _check_size(_RESULT_SHAPES.get(name, _broadcast), name, args, limit)
        try:
            result = FUNCTIONS[name](*args)
        except (TypeError, ValueError, IndexError, KeyError, ArithmeticError) as e:
            raise self._error(f"{name} failed: {type(e).__name__}: {e}", node) from None
        if _np.size(result) > limit:  # a backstop for shapes no rule below foresees
            raise SizeLimitError(_too_large(name, _np.size(result), limit))
        return result


def _count(x) -> int:
    """A size or repeat count given as a number; negative counts are numpy's error to raise."""
    n = _np.asarray(getval(x), dtype=float)
    if n.size == 0 or not _np.all(_np.isfinite(n)):
        return 0
    return max(int(_np.max(n)), 0)


def _size(x) -> int:
    return int(_np.size(x))


def _shape(x) -> tuple:
    return _np.shape(x)


def _broadcast(*xs) -> int:
    return int(_np.prod(_np.broadcast_shapes(*map(_shape, xs)), dtype=object))


def _matrix_product(a, b=None, *rest) -> int:
    # every contraction sums over a's last axis; without it the result is the outer product
    inner = _shape(a)[-1] if _np.ndim(a) and _np.ndim(b) else 1
    return _size(a) * _size(b) // max(inner, 1)


def _square_of_rows(x, *rest) -> int:
    rows = _shape(x)[0] if _np.ndim(x) == 2 else 1
    return max(rows, _size(x) if _np.ndim(x) == 1 else 1) ** 2


# Elements a call's result may have, computed from its arguments before the call. Calls not
# listed broadcast their arguments (elementwise) or shrink them (reductions, reshapes). The
# expression's numbers are floats, so calls that need integer sizes (tile, full, linspace, pad,
# bincount, broadcast_to) refuse them on their own; repeat accepts a float count.
_RESULT_SHAPES: dict[str, Callable] = {
    "repeat": lambda a, n=1, *rest: max(_size(a), _size(n)) * _count(n),
    "outer": lambda a, b=None, *rest: _size(a) * _size(b),
    "kron": lambda a, b=None, *rest: _size(a) * _size(b),
    "meshgrid": lambda *xs: len(xs) * int(_np.prod([_size(x) for x in xs], dtype=object)),
    "dot": _matrix_product,
    "matmul": _matrix_product,
    "inner": _matrix_product,
    "tensordot": lambda a, b=None, *rest: _size(a) * _size(b),
    "diag": _square_of_rows,
    "diagflat": lambda x, *rest: _size(x) ** 2,
    "cov": _square_of_rows,
    "corrcoef": _square_of_rows,
    # a list of pieces: even empty ones cost memory each (array_split of [] into 1e9 is 10 GB)
    **{
        name: lambda a, n=1, *rest: max(_size(a), _count(n))
        for name in ("split", "array_split", "hsplit", "vsplit", "dsplit")
    },
}


def _check_size(rule: Callable, name: str, args: list, limit: int) -> None:
    try:
        elements = rule(*args)
    except Exception:  # arguments the call itself will reject; let it say why
        return
    if elements > limit:
        raise SizeLimitError(_too_large(name, elements, limit))


def _too_large(name: str, elements: int, limit: int) -> str:
    return (
        f"{name} would create {elements:,} elements, more than the limit of {limit:,} "
        "(raise it with --max-elements N)"
    )


def _where(node: ast.AST) -> ast.AST:
    """Point at the '.' of an attribute and the '[' of an index, not at their start."""
    inner = getattr(node, "value", None)
    if isinstance(node, (ast.Attribute, ast.Subscript)) and inner.end_col_offset is not None:
        return ast.Constant(None, col_offset=inner.end_col_offset)
    return node


def _to_float(value, expr: Expression, node: ast.AST) -> float:
    try:
        return float(value)
    except OverflowError:
        raise expr._error("this number is too large", node) from None


def _unknown_function(name: str) -> str:
    close = sorted(n for n in FUNCTIONS if n[:2] == name[:2])[:6]
    hint = f"; similar: {', '.join(close)}" if close else ""
    return (
        f"unknown function {name!r}: the expression may call chainrule.numpy's functions "
        f"by plain name, elementwise (log, exp, sin, sqrt, tanh, abs, maximum, ...), "
        f"reductions (sum, mean, max, min, prod, std, ...), products (dot, matmul, outer, "
        f"...), linear algebra (norm, det, inv, solve, ...), shapes (reshape, transpose, "
        f"...) and piecewise constant ones (floor, sign, ...): `python -m chainrule "
        f"explain --functions` lists all {len(FUNCTIONS)}{hint}"
    )


def parse_value(text: str, name: str, max_elements: int = MAX_ELEMENTS):
    """A value given with --at: a number, or a (nested) list of numbers for an array."""
    wanted = (
        f"--at {name}={text}: the value must be a number such as 2.5 or a "
        f"list of numbers such as [1, 2, 3]"
    )
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        raise ValueError(wanted) from None
    if not _only_numbers(value):  # None, True, strings, ... would become nan or 1.0
        raise ValueError(wanted)
    try:
        arr = _np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(
            f"--at {name}={text}: the value must be a number or a list of numbers of equal lengths"
        ) from None
    if arr.size > max_elements:
        raise SizeLimitError(f"--at {name}: {_too_large('the value', arr.size, max_elements)}")
    return float(arr) if arr.ndim == 0 else arr


def _only_numbers(value) -> bool:
    stack = [value]
    while stack:  # a loop: literal_eval already bounds the nesting, this adds no recursion
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif type(item) not in (int, float):
            return False
    return True
