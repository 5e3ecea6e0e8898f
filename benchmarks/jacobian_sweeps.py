"""Jacobians by one batched forward sweep against one sweep per column, in one run.

``jacobian`` pushes the whole standard basis through the recorded graph at once; a
primitive with a batched JVP rule takes the batch in one call, and so does one whose JVP rule
runs under vmap's batching rules; the others loop over it. This measures the Jacobian
(n = 100) of functions built on softmax, solve, cumsum and fft with the batched rules, with
those primitives' batched JVP rules removed (their JVP rules under vmap), and with neither
(every column separately), and checks that all give the same matrix.

    python -m benchmarks.jacobian_sweeps
"""

from __future__ import annotations

import time

import numpy as onp

import chainrule as cr
import chainrule.numpy as np
from chainrule._core import reverse
from chainrule._core.rule_table import batched_jvps
from chainrule.numpy import linalg
from chainrule.scipy.special import softmax

N = 100
A = onp.eye(N) * 3 + onp.random.default_rng(0).normal(size=(N, N)) * 0.1
FUNCTIONS = {
    "softmax": (lambda x: softmax(x * 2.0), [softmax]),
    "solve": (lambda x: linalg.solve(A, np.tanh(x)), [linalg.solve]),
    "cumsum": (lambda x: np.cumsum(np.sin(x)), [np.cumsum]),
    "fft": (lambda x: np.real(np.fft.fft(np.tanh(x))), [np.fft.fft, np.real]),
}


def best_ms(fun, x, repeats: int = 7) -> float:
    fun(x)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fun(x)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    x = onp.linspace(-1.0, 1.0, N)
    print(f"| Jacobian, n = {N} | batched JVP rules | JVP rules under vmap | "
          f"one sweep per column | per column / batched |")
    print("|---|---|---|---|---|")
    for name, (fun, primitives) in FUNCTIONS.items():
        jac = cr.jacobian(fun)
        batched, ms_batched = jac(x), best_ms(jac, x)
        saved = {p: batched_jvps[p] for p in primitives if p in batched_jvps}
        hook = reverse.jvp_over_batch
        for p in saved:
            del batched_jvps[p]
        try:
            under_vmap, ms_vmap = jac(x), best_ms(jac, x)
            reverse.jvp_over_batch = None
            per_column, ms_columns = jac(x), best_ms(jac, x)
        finally:
            batched_jvps.update(saved)
            reverse.jvp_over_batch = hook
        onp.testing.assert_allclose(batched, per_column, rtol=1e-12, atol=1e-12)
        onp.testing.assert_allclose(under_vmap, per_column, rtol=1e-12, atol=1e-12)
        print(f"| {name} | {ms_batched:.2f} ms | {ms_vmap:.2f} ms | {ms_columns:.2f} ms | "
              f"{ms_columns / ms_batched:.1f}x |")


if __name__ == "__main__":
    main()
