"""For rule authors: define new primitives and their derivatives.

    from chainrule.extend import primitive, defvjp, defjvp

    @primitive
    def logsumexp(x):
        m = x.max()
        return m + onp.log(onp.sum(onp.exp(x - m)))

    defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans))
    defjvp(logsumexp, lambda g, ans, x: np.sum(g * np.exp(x - ans)))
"""

from ._core.forward import primitive_jvps
from ._core.pytree import register_pytree_node
from ._core.reverse import primitive_vjps
from ._core.rules import (
    RuleReplacedWarning,
    def_linear,
    defjvp,
    defjvp_argnum,
    defjvp_argnums,
    defjvp_direct,
    defvjp,
    defvjp_argnum,
    defvjp_argnums,
    defvjp_direct,
)
from ._core.tracer import Box, notrace_primitive, primitive
from ._core.vspace import VSpace, vspace
from ._jaxlike import custom_jvp, custom_vjp


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
]
