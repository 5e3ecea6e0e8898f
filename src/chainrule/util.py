"""autograd's ``util`` module names, for code that imports them (compatibility only)."""

from __future__ import annotations

from collections.abc import Callable

from .test_util import check_grads
from .wrap_util import subvals, unary_to_nary


def func(f: Callable) -> Callable:
    """The function itself (autograd kept this for Python 2's unbound methods)."""
    return f


def subval(args: tuple, i: int, value) -> tuple:
    """``args`` with element ``i`` replaced by ``value``."""
    return subvals(args, [(i, value)])


def quick_grad_check(fun: Callable, arg0, extra_args=(), kwargs=None, verbose: bool = True,
                     **_ignored) -> None:
    """Check the first-order derivatives of ``fun(arg0, *extra_args, **kwargs)`` w.r.t.
    ``arg0`` in both modes against finite differences (autograd's old checker; the
    tolerance arguments it took are ignored in favour of check_grads' own)."""
    kwargs = kwargs or {}
    check_grads(lambda x: fun(x, *extra_args, **kwargs), modes=("fwd", "rev"), order=1)(arg0)
    if verbose:
        print("Gradient projection OK")


__all__ = ["func", "subval", "subvals", "quick_grad_check", "unary_to_nary"]
