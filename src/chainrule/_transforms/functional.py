"""The functional API with JAX's signatures: jvp, vjp, jacfwd, jacrev, custom_vjp, custom_jvp."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any

import numpy as np

from .._core import forward, reverse
from .._core.pytree import tree_flatten
from .._core.replay import subvals
from .._core.rules import check_cotangent_shape, check_rule_value, defjvp_argnums, defvjp_argnums
from .._core.tracer import getval, primitive
from .._core.vspace import vspace
from .._user_code.lines import user_line_warnings, warnings_at_user_line
from .fresh import unaliased
from .jacobians import jacobian_columns, jacobian_rows, jacobian_tree
from .options import result_and_aux, with_aux


def _select(args: tuple, argnums) -> tuple:
    return tuple(args[i] for i in argnums)


def jvp(fun: Callable, primals: Sequence, tangents: Sequence, has_aux: bool = False) -> tuple:
    """``(fun(*primals), tangent of the output)`` for input tangents ``tangents``: one
    primal and one tangent per argument of ``fun``, each group a tuple or list (as JAX's).
    With ``has_aux=True``, ``fun`` returns ``(output, aux)`` and this ``(output, tangent,
    aux)``.

    >>> import chainrule.numpy as np
    >>> value, tangent = jvp(lambda x1, x2: x1 * x2, (2.0, 5.0), (1.0, 0.0))
    >>> print(value, tangent)
    10.0 5.0
    """
    if not (isinstance(primals, (tuple, list)) and isinstance(tangents, (tuple, list))):
        # an array would be read as one argument per element
        raise TypeError(
            f"jvp: primals and tangents must be tuples (or lists), one entry per argument "
            f"of fun; got {type(primals).__name__} and {type(tangents).__name__}. For a "
            f"function of one argument x write jvp(f, (x,), (v,))."
        )
    if has_aux:
        (out, tangent), aux = with_aux(
            lambda f: lambda *xs: jvp(f, xs, tangents), fun, result_and_aux
        )(*primals)
        return out, tangent, aux
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(
            f"jvp: got {len(primals)} primals but {len(tangents)} tangents; "
            f"pass one tangent per primal."
        )
    with user_line_warnings():
        out, tangent = forward.make_jvp(lambda xs: fun(*xs), primals)(tangents)
    return out, unaliased(tangent, tangents)


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(fun(*primals), vjp_fun)``; ``vjp_fun(g)`` returns one cotangent per primal, as a tuple.
    With ``has_aux=True``, ``fun`` returns ``(output, aux)`` and this ``(output, vjp_fun,
    aux)``.

    >>> out, vjp_fun = vjp(lambda x1, x2: x1 * x2, 2.0, 5.0)
    >>> g1, g2 = vjp_fun(1.0)
    >>> print(out, g1, g2)
    10.0 5.0 2.0
    """
    if has_aux:
        (out, vjp_fun), aux = with_aux(lambda f: lambda *xs: vjp(f, *xs), fun, result_and_aux)(
            *primals
        )
        return out, vjp_fun, aux
    with user_line_warnings():
        vjp_fun, ans = reverse.make_vjp(lambda xs: fun(*xs), primals)
    return ans, warnings_at_user_line(lambda g: unaliased(tuple(vjp_fun(g)), g))


def _argnums_tuple(argnums: int | Sequence[int]) -> tuple:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _jacobian(fun: Callable, argnums: int | Sequence[int], has_aux: bool, mode: str) -> Callable:
    if has_aux:
        return with_aux(lambda f: _jacobian(f, argnums, False, mode), fun, result_and_aux)
    single = isinstance(argnums, int)
    nums = _argnums_tuple(argnums)

    @warnings_at_user_line
    @wraps(fun)
    def jacfun(*args, **kwargs):
        xs = args[argnums] if single else _select(args, nums)
        f = lambda xs: fun(*subvals(args, zip(nums, (xs,) if single else xs)), **kwargs)
        leaves, treedef = tree_flatten(xs)
        spaces = [vspace(leaf) for leaf in leaves]
        if mode == "rev":
            vjp_fun, ans = reverse.make_vjp(f, xs)
            blocks = jacobian_rows(vjp_fun, vspace(ans), spaces)
        else:
            ans, blocks = jacobian_columns(forward.make_jvp(f, xs), treedef, spaces)
        return jacobian_tree(ans, treedef, blocks)

    return jacfun


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The Jacobian by reverse mode: one backward pass per output element. With
    ``has_aux=True``, ``fun`` returns ``(output, aux)`` and this ``(jacobian, aux)``.

    >>> import chainrule.numpy as np
    >>> print(jacrev(lambda x: x ** 2)(np.array([1.0, 3.0])))
    [[2. 0.]
     [0. 6.]]
    """
    return _jacobian(fun, argnums, has_aux, "rev")


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The Jacobian by forward mode: one tangent pass per input element. With
    ``has_aux=True``, ``fun`` returns ``(output, aux)`` and this ``(jacobian, aux)``.

    >>> import chainrule.numpy as np
    >>> print(jacfwd(lambda x: np.sum(x) * x)(np.array([1.0, 2.0])))
    [[4. 1.]
     [2. 5.]]
    """
    return _jacobian(fun, argnums, has_aux, "fwd")


class custom_vjp:
    """A function with a user-given reverse-mode rule (JAX's interface).

    ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)``,
    ``bwd(residuals, g) -> tuple of cotangents, one per argument``. In a backward
    pass ``fwd`` runs again on the saved arguments to produce the residuals, so
    higher-order derivatives differentiate through ``fwd`` and ``bwd`` as well.

    >>> from chainrule import grad
    >>> @custom_vjp
    ... def double(x):
    ...     return 2.0 * x
    >>> double.defvjp(lambda x: (2.0 * x, None), lambda res, g: (2.0 * g,))
    >>> print(grad(double)(3.0))
    2.0
    """

    def __init__(self, fun: Callable) -> None:
        wraps(fun)(self)
        self.fun = fun
        self._primitive = primitive(fun)
        self._fwd = self._bwd = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        self._fwd, self._bwd = fwd, bwd

        def vjpmaker(argnums, ans, args, kwargs):
            def vjp(g):
                _, residuals = fwd(*args, **kwargs)
                cotangents = bwd(residuals, g)
                if not isinstance(cotangents, (tuple, list)) or len(cotangents) != len(args):
                    raise TypeError(
                        f"custom_vjp {self.fun.__name__}: bwd must return a tuple with one "
                        f"cotangent per argument ({len(args)}), got {cotangents!r:.80}."
                    )
                for i in argnums:
                    check_cotangent_shape(self.fun, i, cotangents[i], args[i])
                return tuple(cotangents[i] for i in argnums)

            return vjp

        defvjp_argnums(self._primitive, vjpmaker)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fwd is None:
            raise TypeError(f"custom_vjp {self.fun.__name__}: call .defvjp(fwd, bwd) first.")
        return self._primitive(*args, **kwargs)


class custom_jvp:
    """A function with a user-given forward-mode rule (JAX's interface).

    ``@f.defjvp`` decorates ``f_jvp(primals, tangents) -> (out, tangent_out)``.
    Reverse mode transposes that rule: the cotangent is the VJP of the tangent map,
    which is linear in the tangents.

    >>> import chainrule.numpy as np
    >>> from chainrule import grad
    >>> @custom_jvp
    ... def softplus(x):
    ...     return np.log1p(np.exp(x))
    >>> @softplus.defjvp
    ... def softplus_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return softplus(x), t / (1.0 + np.exp(-x))
    >>> print(grad(softplus)(0.0))
    0.5
    """

    def __init__(self, fun: Callable) -> None:
        wraps(fun)(self)
        self.fun = fun
        self._primitive = primitive(fun)
        self._jvp = None

    def defjvp(self, jvp_rule: Callable) -> Callable:
        self._jvp = jvp_rule

        def tangent_map(args, kwargs, argnums, tangents):
            full = [_zero_tangent(a) for a in args]
            for i, t in zip(argnums, tangents):
                full[i] = t
            return jvp_rule(tuple(args), tuple(full))[1]

        def jvp(argnums, tangents, ans, args, kwargs):
            tangent = tangent_map(args, kwargs, argnums, tangents)
            check_rule_value(self.fun, "JVP", "tangent", tangent, ans, "the output")
            return tangent

        defjvp_argnums(self._primitive, jvp)

        def vjpmaker(argnums, ans, args, kwargs):
            zeros = tuple(vspace(args[i]).zeros() for i in argnums)
            pullback, _ = reverse.make_vjp(lambda ts: tangent_map(args, kwargs, argnums, ts), zeros)
            return pullback

        defvjp_argnums(self._primitive, vjpmaker)
        return jvp_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._primitive(*args, **kwargs)


def _zero_tangent(arg: Any) -> Any:
    """The tangent a custom JVP rule is given for an argument not differentiated: zeros
    of its vector space; for a value without one (a boolean mask, integers: JAX's float0
    zeros), zeros of its own shape and dtype; for any other object, None."""
    try:
        return vspace(arg).zeros()
    except TypeError:
        value = getval(arg)
        return np.zeros_like(value) if isinstance(value, (np.ndarray, np.generic, int)) else None


__all__ = ["jvp", "vjp", "jacfwd", "jacrev", "custom_vjp", "custom_jvp"]
