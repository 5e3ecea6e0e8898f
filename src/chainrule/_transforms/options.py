"""What every transform takes besides the function: which arguments it differentiates
(autograd's ``argnum`` or JAX's ``argnums``; ``unary_to_nary`` lifts a transform written
for one argument to them) and ``has_aux``. Transformed functions re-issue NumPy's
floating-point warnings at the user's line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any

from .._core.pytree import tree_map
from .._core.replay import subvals
from .._core.tracer import getval, isbox, new_trace_id
from .._user_code.lines import warnings_at_user_line


def _check_argnum(argnum, transform_name: str, nargs: int) -> None:
    nums = argnum if isinstance(argnum, (tuple, list)) else (argnum,)
    for num in nums:
        if not isinstance(num, int) or isinstance(num, bool):
            raise TypeError(f"{transform_name}: argnum must be an int or a tuple of ints, "
                            f"got {argnum!r}.")
        if not -nargs <= num < nargs:
            raise ValueError(f"{transform_name}: argnum {num} is out of range for a call "
                             f"with {nargs} positional argument(s).")


def unary_to_nary(unary_operator: Callable) -> Callable:
    """Turn ``op(fun_of_x, x, ...)`` into ``op(fun, argnum=0, ...)(*args, **kwargs)``.

    With a tuple ``argnum`` the transform sees one tuple-valued argument.
    """

    @wraps(unary_operator)
    def nary_operator(fun, argnum=0, *nary_op_args, **nary_op_kwargs):
        fun_name = getattr(fun, "__name__", "fun")
        one = isinstance(argnum, int) and not isinstance(argnum, bool)
        # f(x) with a named fun: fun is the function of x already (its own name in errors)
        fun_of_x = one and hasattr(fun, "__name__")

        @wraps(fun)
        def nary_f(*args, **kwargs):
            n = len(args)
            if not (one and -n <= argnum < n):  # (an int in range needs no more checks)
                _check_argnum(argnum, unary_operator.__name__, n)
            if n == 1 and fun_of_x and not kwargs:
                return unary_operator(fun, args[0], *nary_op_args, **nary_op_kwargs)

            def unary_f(x):
                if one:
                    subargs = list(args)
                    subargs[argnum] = x
                else:
                    subargs = subvals(args, zip(argnum, x))
                return fun(*subargs, **kwargs)

            # named after fun, so errors raised inside the transform (check_grads) name it
            unary_f.__name__ = unary_f.__qualname__ = fun_name
            x = args[argnum] if one else tuple(args[i] for i in argnum)
            return unary_operator(unary_f, x, *nary_op_args, **nary_op_kwargs)

        nary_f.__name__ = f"{unary_operator.__name__}_of_{fun_name}_wrt_argnum_{argnum}"
        nary_f.__qualname__ = nary_f.__name__
        nary_f.__doc__ = (  # indented as autograd's (its tests read the docstring)
            f"    {unary_operator.__name__} of function {fun_name} with respect to argument "
            f"number {argnum}. Takes the same arguments as {fun_name} but returns the "
            f"{unary_operator.__name__}.\n\n{fun.__doc__ or ''}"
        )
        return nary_f

    return nary_operator


def lifted(name: str) -> Callable:
    """The unary transform ``op(fun_of_x, x)`` lifted to ``argnum`` by unary_to_nary, under
    the public ``name``, which names the functions it returns (``grad_of_f_wrt_argnum_0``)."""

    def lift(unary: Callable) -> Callable:
        unary.__name__ = unary.__qualname__ = name
        return unary_to_nary(unary)

    return lift


def resolve_argnums(
    name: str, argnum: int | Sequence[int] | None, argnums: int | Sequence[int] | None
) -> int | Sequence[int]:
    """autograd's ``argnum`` or JAX's ``argnums`` (default 0); both at once is an error."""
    if argnum is not None and argnums is not None:
        raise TypeError(
            f"{name}() got both argnum={argnum!r} and argnums={argnums!r}: pass only one "
            f"(argnums is JAX's spelling of autograd's argnum; both take an int or a tuple "
            f"of ints)."
        )
    if argnums is not None:
        return argnums
    return 0 if argnum is None else argnum


def result_and_aux(result, aux):
    return result, aux


def transformed(
    nary: Callable,
    fun: Callable,
    argnum: int | Sequence[int] | None,
    argnums: int | Sequence[int] | None,
    has_aux: bool = False,
    joined: Callable[[Any, Any], Any] = result_and_aux,
) -> Callable:
    """``nary(fun, argnum)`` with the public options resolved."""
    nums = resolve_argnums(nary.__name__, argnum, argnums)
    if has_aux:
        return with_aux(lambda f: nary(f, nums), fun, joined)
    return warnings_at_user_line(nary(fun, nums))


def with_aux(
    transform: Callable[[Callable], Callable], fun: Callable, joined: Callable[[Any, Any], Any]
) -> Callable:
    """JAX's ``has_aux``: ``fun`` returns ``(out, aux)``; ``transform(f)`` sees ``out`` only,
    and the transformed function returns ``joined(result, aux)``. ``aux`` is a plain value
    to this transform; a transform enclosing it still traces it."""

    @warnings_at_user_line
    @wraps(transform(fun))  # the name and docs of the transform without aux
    def transformed_with_aux(*args, **kwargs):
        auxes = []

        @wraps(fun)
        def out_only(*fun_args, **fun_kwargs):
            pair = fun(*fun_args, **fun_kwargs)
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                plain = getval(pair)
                raise TypeError(
                    f"has_aux=True: {getattr(fun, '__name__', 'fun')} must return a pair "
                    f"(output, aux), but it returned {type(plain).__name__} {plain!r:.80}."
                )
            auxes.append(pair[1])
            return pair[0]

        first = new_trace_id()  # every trace this call starts has a larger id
        result = transform(out_only)(*args, **kwargs)
        return joined(result, tree_map(lambda leaf: _untraced_since(leaf, first), auxes[0]))

    return transformed_with_aux


def _untraced_since(value: Any, first_trace_id: int) -> Any:
    """``value`` without the boxes of traces started after ``first_trace_id``."""
    while isbox(value) and value._trace_id > first_trace_id:
        value = value._value
    return value
