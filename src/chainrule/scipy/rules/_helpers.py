"""Table helpers shared by the SciPy rule tables."""

from __future__ import annotations

from ..._core.rules import defjvp_direct as defjvp
from ..._core.rules import defvjp_direct
from ...numpy.rules._helpers import broadcast_tangent, unbroadcast


class NoClosedForm:
    """Marks an argument whose derivative has no closed form: differentiating it raises."""

    def __init__(self, why: str):
        self.why = why

    def rule(self, fun, argnum: int):
        def raise_error(*args, **kwargs):
            raise NotImplementedError(
                f"{fun.__name__} is not differentiable with respect to argument {argnum} in "
                f"chainrule: {self.why} Pass that argument as a constant (not traced)."
            )

        return raise_error


def elementwise_n(fun, *partials) -> None:
    """A broadcasting function of n arguments with partials ``d(ans, *args)``.

    A partial may be ``None`` (no derivative: zero, for discrete arguments such as
    an integer order) or a ``NoClosedForm`` (differentiating raises).
    """

    def vjp(d):
        if d is None:
            return None
        return lambda g, ans, *args, argnum, **k: unbroadcast(g * d(ans, *args), args[argnum])

    def jvp(d):
        if d is None:
            return None
        return lambda g, ans, *args, **k: broadcast_tangent(g * d(ans, *args), ans)

    vjps, jvps = [], []
    for argnum, d in enumerate(partials):
        if isinstance(d, NoClosedForm):
            vjps.append(d.rule(fun, argnum))
            jvps.append(d.rule(fun, argnum))
            continue
        rule = vjp(d)
        vjps.append(None if rule is None else _bind_argnum(rule, argnum))
        jvps.append(jvp(d))
    defvjp_direct(fun, *vjps)
    defjvp(fun, *jvps)


def _bind_argnum(rule, argnum):
    return lambda g, ans, *args, **k: rule(g, ans, *args, argnum=argnum, **k)
