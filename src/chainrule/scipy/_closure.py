"""Traced values a solver's user function closes over, made explicit arguments.

SciPy calls the user's function on plain values, so a traced parameter must reach the
solve as an argument for its derivative to be followed. ``lift_closure`` finds those held
in the function's own closure cells and default arguments (``lambda x: f(x, theta)`` or
``lambda x, s=theta: ...`` inside the function being differentiated) and passes them as
one more argument, calling the function's code with fresh cells and defaults holding what
it is given there. A traced value reached any other way (a global, an object's attribute,
the closure of another function it calls) cannot be followed: ``refuse_traced`` raises
``ClosedOverTracedValueError`` when the function, called on plain values, still answers a
traced one, rather than give it a silently zero derivative.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from .._core.pytree import tree_flatten
from .._core.tracer import isbox


class ClosedOverTracedValueError(TypeError):
    """The function reaches a traced value the solver cannot differentiate."""


_EMPTY_CELL = object()  # stands for a closure cell that holds nothing yet


def holds_traced(*trees: Any) -> bool:
    return any(isbox(leaf) for tree in trees for leaf in tree_flatten(tree)[0])


def _cell_contents(cell) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not yet assigned
        return _EMPTY_CELL


def lift_closure(
    fun: Callable, args: tuple, unwrap: Callable[[Any], Any] = lambda value: value
) -> tuple[Callable, tuple]:
    """``(fun', args')``. Where ``fun``'s closure cells or defaults hold traced values,
    ``args' = (*args, hidden)`` with ``hidden`` those values (passed through ``unwrap``,
    which may turn front-end objects into the traced values they stand for) and
    ``fun'(*lead, *args, hidden, **kw) == fun(*lead, *args, **kw)``; its cells without
    traced values stay ``fun``'s own (state it keeps there stays one). Otherwise
    ``(fun, args)`` unchanged."""
    if not isinstance(fun, types.FunctionType):
        return fun, args
    cells = fun.__closure__ or ()
    contents = [_cell_contents(cell) for cell in cells]
    held = [i for i, value in enumerate(contents) if holds_traced(value)]
    defaults = fun.__defaults__ or ()
    if not held and not holds_traced(defaults):
        return fun, args

    def rebuilt(hidden) -> Callable:
        held_values, new_defaults = hidden
        new_cells = list(cells)
        for i, value in zip(held, held_values):
            new_cells[i] = types.CellType(value)
        new = types.FunctionType(
            fun.__code__,
            fun.__globals__,
            fun.__name__,
            tuple(new_defaults) or None,
            tuple(new_cells),
        )
        new.__kwdefaults__ = fun.__kwdefaults__
        return new

    def lifted(*call, **kwargs):
        return rebuilt(call[-1])(*call[:-1], **kwargs)

    hidden = ([unwrap(contents[i]) for i in held], [unwrap(d) for d in defaults])
    return lifted, (*args, hidden)


def refuse_traced(name: str, value: Any, example: str) -> Any:
    """``value`` unchanged; raises if it holds a traced value: the function it came from,
    called on plain values, reaches a traced parameter ``lift_closure`` could not lift.
    ``example`` shows the call with that parameter passed through ``args=``."""
    if holds_traced(value):
        raise ClosedOverTracedValueError(
            f"{name}: the function returned a traced value when called with plain values, "
            f"so it reaches a traced parameter that chainrule could not make an argument "
            f"(it lifts those held in the function's own closure cells and default "
            f"arguments, not a global, an object's attribute, or one reached through "
            f"another function it calls). The solver calls it on plain values and cannot "
            f"differentiate that parameter. Pass it through args= instead, e.g. {example}."
        )
    return value
