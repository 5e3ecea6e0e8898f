"""tanh and its first four derivatives, each by ``elementwise_grad`` of the previous one.

Every derivative is checked against its closed form in t = tanh(x): tanh' = 1 - t^2,
tanh'' = -2 t (1 - t^2), tanh''' = (1 - t^2)(6 t^2 - 2), tanh'''' = 8 t (1 - t^2)(2 - 3 t^2),
and the fourth is also taken in forward mode (``deriv`` nested four times).

    python examples/tanh_derivatives.py            # plot on 400 points
    python examples/tanh_derivatives.py --smoke    # the same (it takes about a second)
"""

from __future__ import annotations

import numpy as onp
from _common import parse_args, result, save

import chainrule.numpy as np
from chainrule import deriv, elementwise_grad


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv)
    x = onp.linspace(-4.0, 4.0, 400)
    funs = [np.tanh]
    for _ in range(4):
        funs.append(elementwise_grad(funs[-1]))
    values = [f(x) for f in funs]

    t = onp.tanh(x)
    s = 1.0 - t ** 2
    exact = [t, s, -2 * t * s, s * (6 * t ** 2 - 2), 8 * t * s * (2 - 3 * t ** 2)]
    error = max(onp.max(onp.abs(v - e)) for v, e in zip(values, exact))
    fourth_fwd = deriv(deriv(deriv(deriv(np.tanh))))(x)
    error_fwd = onp.max(onp.abs(fourth_fwd - exact[4]))

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k, v in enumerate(values):
        ax.plot(x, v, label="tanh" + "'" * k if k else "tanh")
    ax.set(xlabel="x", title="tanh and four derivatives (reverse mode, nested)")
    ax.legend()
    save(fig, args, "tanh_derivatives.png")
    result(args, f"max error vs closed forms {error:.1e} (reverse), "
                 f"{error_fwd:.1e} (forward, 4th)")


if __name__ == "__main__":
    main()
