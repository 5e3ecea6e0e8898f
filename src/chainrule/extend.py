"""For rule authors: define new primitives and their derivatives.

    from chainrule.extend import primitive, defvjp, defjvp

    @primitive
    def logsumexp(x):
        m = x.max()
        return m + onp.log(onp.sum(onp.exp(x - m)))

    defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans))
    defjvp(logsumexp, lambda g, ans, x: np.sum(g * np.exp(x - ans)))
"""

import warnings
from collections.abc import Callable

from ._core.pytree import register_pytree_node
from ._core.reverse import UndeclaredReadError
from ._core.rule_table import primitive_jvps, primitive_vjps
from ._core.rules import (
    RuleReplacedWarning,
    def_linear,
    defbatch,
    defjvp,
    defjvp_argnum,
    defjvp_argnums,
    defjvp_direct,
    deflabel,
    deflayout_by_value,
    deftaylor,
    deftaylor_linear,
    defvjp,
    defvjp_argnum,
    defvjp_argnums,
    defvjp_direct,
    defvjp_whole,
)
from ._core.tracer import Box, notrace_primitive, primitive
from ._core.vspace import VSpace, vspace
from ._transforms.functional import custom_jvp, custom_vjp

# ----------------------------------------------------------------------------- deprecated
# autograd's pre-1.2 API, kept because old code still calls it: the methods defvjp,
# defgrad and defvjp_is_zero on a primitive made by ``chainrule.core.primitive``.

_DEPRECATED = ("{}.{} is deprecated (autograd's pre-1.2 API): register rules with "
               "chainrule.extend.defvjp(fun, *vjpmakers, argnums=...) instead.")


def _vjp_with_vspaces(vjp: Callable, argnum: int) -> Callable:
    """The old ``vjp(g, ans, vs, gvs, *args)`` form as a staged vjpmaker."""
    return lambda ans, *args, **kwargs: lambda g: vjp(
        g, ans, vspace(args[argnum]), vspace(g), *args, **kwargs)


def primitive_with_deprecation_warnings(f_raw: Callable) -> Callable:
    """``primitive(f_raw)`` that also has autograd's deprecated registration methods.

    Each call warns, then registers every rule given so far through ``defvjp``: the
    methods fill one table, so rules given one argument at a time add up."""
    fun = primitive(f_raw)
    makers: dict[int, Callable | None] = {}

    def register(method: str, new_makers: dict) -> None:
        warnings.warn(_DEPRECATED.format(getattr(f_raw, "__name__", "fun"), method),
                      DeprecationWarning, stacklevel=3)
        makers.update(new_makers)
        argnums = sorted(makers)
        defvjp(fun, *(makers[i] for i in argnums), argnums=argnums)

    fun.defvjp = lambda vjp, argnum=0: register(
        "defvjp", {argnum: _vjp_with_vspaces(vjp, argnum)})
    fun.defgrad = lambda vjpmaker, argnum=0: register("defgrad", {argnum: vjpmaker})
    fun.defvjp_is_zero = lambda argnums=(0,): register(
        "defvjp_is_zero", dict.fromkeys(argnums))
    return fun


class SparseObject:
    """A cotangent that stores only what ``mut_add`` needs to add it into a dense value."""

    __slots__ = ("vs", "mut_add")

    def __init__(self, vs: VSpace, mut_add):
        self.vs = vs
        self.mut_add = mut_add

    def __add__(self, other):
        return self.mut_add(other if not isinstance(other, SparseObject)
                            else other.mut_add(self.vs.zeros()))

    __radd__ = __add__


__all__ = [
    "primitive", "notrace_primitive", "defvjp", "defvjp_argnum", "defvjp_argnums",
    "defvjp_direct", "defjvp", "defjvp_argnum", "defjvp_argnums", "def_linear", "vspace",
    "VSpace", "Box", "SparseObject", "custom_vjp", "custom_jvp", "register_pytree_node",
    "primitive_vjps", "primitive_jvps", "defjvp_direct", "RuleReplacedWarning",
    "defvjp_whole", "deflabel", "UndeclaredReadError", "defbatch",
    "deftaylor", "deftaylor_linear", "deflayout_by_value",
]
