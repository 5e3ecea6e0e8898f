"""The seed example explained: y = log(x1) + x1*x2 - sin(x2) at (x1, x2) = (2, 5).

``chainrule.explain`` records one evaluation and prints the evaluation trace, the forward
tangent trace, the reverse adjoint trace and the topological order; the HTML page (graph and
tables, self-contained) is written to ``--out``. The gradient is checked against the hand
derivation dy/dx1 = 1/x1 + x2 = 5.5, dy/dx2 = x1 - cos(x2).

    python examples/explain_seed.py            # prints the traces, writes explain_seed.html
    python examples/explain_seed.py --smoke    # the same
"""

from __future__ import annotations

import math

from _common import parse_args, result

import chainrule.numpy as np
from chainrule import explain, grad


def f(x1, x2):
    return np.log(x1) + x1 * x2 - np.sin(x2)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__, argv)
    report = explain(f, 2.0, 5.0)
    print(report)
    page = args.out / "explain_seed.html"
    page.write_text(report.html(), encoding="utf-8")
    print(f"page: {page.resolve()} (open it in a browser: graph, tables, backward stepper)")
    g1, g2 = grad(f, argnum=(0, 1))(2.0, 5.0)
    if abs(g1 - 5.5) > 1e-12 or abs(g2 - (2.0 - math.cos(5.0))) > 1e-12:
        raise SystemExit(f"gradient ({g1}, {g2}) differs from the hand derivation")
    result(args, f"dy/dx1 = {g1:.6f}, dy/dx2 = {g2:.6f}; wrote {page.name}")


if __name__ == "__main__":
    main()
