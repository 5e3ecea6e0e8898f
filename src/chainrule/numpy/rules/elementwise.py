"""Rules for elementwise functions: one line each, VJP and JVP together.

``elementwise(f, df)`` gives a unary function's local derivative df(ans, x);
``elementwise2(f, dfdx, dfdy)`` gives a broadcasting binary function's partials.
"""

from __future__ import annotations

from ..._core.rules import defjvp, defvjp_direct
from .. import numpy_wrapper as anp
from ._helpers import (
    broadcast_tangent,
    elementwise,
    elementwise2,
    linear,
    match_dtype,
    unbroadcast,
)

# fmt: off
# ----------------------------------------------------------------------------- arithmetic
defvjp_direct(anp.add,      lambda g, ans, x, y, *a, **k: unbroadcast(g, x),
                            lambda g, ans, x, y, *a, **k: unbroadcast(g, y))
defjvp(anp.add,             lambda g, ans, x, y, *a, **k: broadcast_tangent(g, ans),
                            lambda g, ans, x, y, *a, **k: broadcast_tangent(g, ans))
defvjp_direct(anp.subtract, lambda g, ans, x, y, *a, **k: unbroadcast(g, x),
                            lambda g, ans, x, y, *a, **k: unbroadcast(-g, y))
defjvp(anp.subtract,        lambda g, ans, x, y, *a, **k: broadcast_tangent(g, ans),
                            lambda g, ans, x, y, *a, **k: broadcast_tangent(-g, ans))
elementwise2(anp.multiply,  lambda ans, x, y: y,               lambda ans, x, y: x)
elementwise2(anp.divide,    lambda ans, x, y: 1 / y,           lambda ans, x, y: -ans / y)
elementwise(anp.negative,   lambda ans, x: -1.0)
elementwise(anp.positive,   lambda ans, x: 1.0)

# ----------------------------------------------------------------------------- powers, exp, log
elementwise2(anp.power,
             lambda ans, x, y: y * x ** anp.where(y, y - 1, 1.0),
             lambda ans, x, y: anp.log(anp.where(x, x, 1.0)) * ans)
elementwise(anp.sqrt,       lambda ans, x: 0.5 / ans)
elementwise(anp.exp,        lambda ans, x: ans)
elementwise(anp.log,        lambda ans, x: 1 / x)

# ----------------------------------------------------------------------------- trigonometric
elementwise(anp.sin,        lambda ans, x: anp.cos(x))
elementwise(anp.cos,        lambda ans, x: -anp.sin(x))
elementwise(anp.tanh,       lambda ans, x: 1 - ans ** 2)

# ----------------------------------------------------------------------------- complex parts
elementwise(anp.absolute,   lambda ans, x: anp.conj(x) / anp.where(ans, ans, 1))
linear(anp.conjugate,       lambda g, ans, x, *a, **k: anp.conj(g))
linear(anp.real,            lambda g, ans, x: match_dtype(anp.real(g), x))
linear(anp.imag,            lambda g, ans, x: match_dtype(-1j * g, x))

# ----------------------------------------------------------------------------- selection
defvjp_direct(anp.where, None,
              lambda g, ans, c, x, y: unbroadcast(anp.where(c, g, anp.zeros_like(g)), x),
              lambda g, ans, c, x, y: unbroadcast(anp.where(c, anp.zeros_like(g), g), y))
defjvp(anp.where, None,
       lambda g, ans, c, x, y: anp.where(c, broadcast_tangent(g, ans), anp.zeros_like(ans)),
       lambda g, ans, c, x, y: anp.where(c, anp.zeros_like(ans), broadcast_tangent(g, ans)))
# fmt: on
