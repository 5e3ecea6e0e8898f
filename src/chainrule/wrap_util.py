"""Lifting transforms of one argument to functions of many (``argnum``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from ._core.replay import subvals


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
        @wraps(fun)
        def nary_f(*args, **kwargs):
            _check_argnum(argnum, unary_operator.__name__, len(args))

            def unary_f(x):
                if isinstance(argnum, int):
                    subargs = subvals(args, [(argnum, x)])
                else:
                    subargs = subvals(args, zip(argnum, x))
                return fun(*subargs, **kwargs)

            # named after fun, so errors raised inside the transform (check_grads) name it
            unary_f.__name__ = unary_f.__qualname__ = getattr(fun, "__name__", "fun")
            x = args[argnum] if isinstance(argnum, int) else tuple(args[i] for i in argnum)
            return unary_operator(unary_f, x, *nary_op_args, **nary_op_kwargs)

        fun_name = getattr(fun, "__name__", "fun")
        nary_f.__name__ = f"{unary_operator.__name__}_of_{fun_name}_wrt_argnum_{argnum}"
        nary_f.__qualname__ = nary_f.__name__
        nary_f.__doc__ = (  # indented as autograd's (its tests read the docstring)
            f"    {unary_operator.__name__} of function {fun_name} with respect to argument "
            f"number {argnum}. Takes the same arguments as {fun_name} but returns the "
            f"{unary_operator.__name__}.\n\n{fun.__doc__ or ''}"
        )
        return nary_f

    return nary_operator
