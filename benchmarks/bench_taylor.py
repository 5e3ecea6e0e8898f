"""Taylor mode benchmark (issue 39): high derivatives and Laplacians.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_taylor [--skip-large]
        [--only derivative|linalg|generic|laplacian]

- derivative: the 10th derivative of a scalar composition of 20 elementary functions at
  one point: chainrule's ``taylor_derivatives`` (one jet of order 10) eager and jitted,
  chainrule's ``jvp`` nested 10 times, and JAX's ``jax.experimental.jet`` eager and jitted
  (when installed).
- linalg: the 10th derivative of det(A) + sum(inv(A)) along a line of 4 x 4 matrices: jet
  through the closed-form inv and det rules, and jvp nested 10 times.
- generic: the 6th derivative of sum(eigvalsh(x x^T + diag(x))) along a curve, through
  the generic rule of a primitive without a Taylor rule of its own (its JVP nested).
- laplacian: the Laplacian of a tanh MLP d-64-64-1 at d = 100 and d = 1000
  (``--skip-large`` leaves 1000 out): chainrule's ``laplacian`` (collapsed Taylor mode:
  one pass carrying the value once, the d first-order coefficients batched, one summed
  second-order coefficient), the same series uncollapsed (``vmap`` of ``jet`` over the
  basis, each direction's own second coefficient), ``trace(hessian(f))``, nested
  forward-over-reverse (Hessian-vector products ``jvp(grad(f))`` along the basis, summed
  e_i^T H e_i: a loop of d, and ``vmap`` of them), and JAX's jet-based Laplacian (``vmap``
  of ``jet`` over the basis, jitted).

Every answer is checked against the first row's (1e-8 relative) before it is timed.
Times are the least CPU time of a few runs (JAX's: the wall clock, its threads spin on
after a call); memory is the peak of Python and NumPy allocations during one call
(``tracemalloc``; JAX's own buffers are not seen, so "-").
"""

from __future__ import annotations

import argparse
import time

import numpy as onp

import chainrule as cr
import chainrule.numpy as np

from ._timing import best_of as _best_of
from ._timing import peak_bytes as _peak_bytes


def _jax():
    try:
        import jax
        import jax.numpy as jnp
        from jax.experimental import jet
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax, jnp, jet


def composition(m):
    """20 elementary functions in a row, each defined on the previous one's range (only
    functions jax.experimental.jet has rules for: it has none for arctan, arcsin, tan)."""
    def f(x):
        x = m.sin(x)
        x = m.exp(x)
        x = m.log1p(x)
        x = m.tanh(x)
        x = m.sqrt(1.0 + x * x)
        x = m.arcsinh(x)
        x = m.cos(x)
        x = m.sinh(x)
        x = m.cosh(x)
        x = m.log(x)
        x = x ** 3
        x = m.expm1(x)
        x = 1.0 / (1.0 + x)
        x = m.arctanh(0.5 * x)
        x = m.exp(-x * x)
        x = m.tanh(2.0 * x)
        x = m.sin(x) * m.cos(x)
        x = m.arcsinh(x)
        x = m.sqrt(x + 2.0)
        return m.log(x)
    return f


def _row(name, seconds, peak, base):
    ratio = f"{seconds / base:.2f}x" if base else "-"
    memory = "-" if peak is None else f"{peak / 1e6:.2f} MB"
    digits = 3 if seconds < 1e-4 else 2  # (tens of µs: jitted jets)
    return f"| {name} | {seconds * 1e3:.{digits}f} ms | {ratio} | {memory} |"


_JIT_REPEATS = 200


def derivative_section(order: int = 10) -> list[str]:
    x0 = 0.7
    f = composition(np)
    rows = []
    ours = lambda: cr.taylor_derivatives(f, order)(x0)[order]  # noqa: E731
    want = float(ours())

    def nested():
        h = f
        for _ in range(order):
            h = (lambda inner: lambda t: cr.jvp(inner, (t,), (1.0,))[1])(h)
        return h(x0)

    start = time.process_time()
    got = float(nested())  # (one call: ~20 s, nothing to warm)
    nested_seconds = time.process_time() - start
    assert abs(got - want) <= 1e-8 * abs(want), (got, want)
    base = _best_of(ours, 3)
    rows.append(_row(f"chainrule taylor_derivatives (jet, order {order})", base,
                     _peak_bytes(ours), base))
    rows.append(_row(f"chainrule jvp nested {order} times", nested_seconds,
                     _peak_bytes(nested), base))
    jitted_ours = cr.jit(cr.taylor_derivatives(f, order))
    ours_jit = lambda: jitted_ours(x0)[order]  # noqa: E731
    assert float(ours_jit()) == want  # (jit answers eager's bits)
    # (the jitted rows take the least of more calls: a few tens of µs, so one slow
    # sample in three would decide)
    rows.append(_row(f"chainrule jit of taylor_derivatives (order {order})",
                     _best_of(ours_jit, _JIT_REPEATS), _peak_bytes(ours_jit), base))
    jax_parts = _jax()
    if jax_parts is not None:
        jax, jnp, jet = jax_parts
        g = composition(jnp)
        series = ([1.0] + [0.0] * (order - 1),)

        def jax_eager():
            return jet.jet(g, (x0,), series)[1][order - 1]

        jitted = jax.jit(lambda x: jet.jet(g, (x,), series)[1][order - 1])
        for name, fn, repeats in (
                ("JAX jet, eager", jax_eager, 3),
                ("JAX jet, jit", lambda: jitted(x0).block_until_ready(), _JIT_REPEATS)):
            got = float(fn())
            assert abs(got - want) <= 1e-8 * abs(want), (name, got, want)
            rows.append(_row(name, _best_of(fn, repeats, clock=time.perf_counter), None,
                             base))
    header = [f"10th derivative of a composition of 20 elementary functions "
              f"(value {want:.6g})", "", "| method | time | vs jet | peak memory |",
              "|---|---|---|---|"]
    return header + rows


def linalg_section(order: int = 10, n: int = 4) -> list[str]:
    """The 10th derivative of det(A(t)) + sum(inv(A(t))) along a line of n x n matrices:
    jet through the closed-form inv and det rules, against nested jvp (JAX's jet has no
    rule for them: KeyError custom_linear_solve for inv, a leaked tracer for det)."""
    rng = onp.random.default_rng(0)
    a0 = rng.standard_normal((n, n)) + n * onp.eye(n)
    direction = rng.standard_normal((n, n))

    def f(a):
        return np.linalg.det(a) + np.sum(np.linalg.inv(a))

    series = ([direction] + [onp.zeros((n, n))] * (order - 1),)
    ours = lambda: cr.jet(f, (a0,), series)[1][order - 1]  # noqa: E731
    want = float(ours())

    def nested():
        h = lambda t: f(a0 + t * direction)  # noqa: E731
        for _ in range(order):
            h = (lambda inner: lambda t: cr.jvp(inner, (t,), (1.0,))[1])(h)
        return h(0.0)

    start = time.process_time()
    got = float(nested())  # (one call: nothing to warm)
    nested_seconds = time.process_time() - start
    assert abs(got - want) <= 1e-8 * abs(want), (got, want)
    base = _best_of(ours, 5)
    rows = [_row(f"chainrule jet (closed-form inv and det rules, order {order})", base,
                 _peak_bytes(ours), base),
            _row(f"chainrule jvp nested {order} times", nested_seconds, _peak_bytes(nested),
                 base)]
    header = [f"10th derivative of det(A) + sum(inv(A)) along a line of {n} x {n} matrices "
              f"(value {want:.6g})", "", "| method | time | vs jet | peak memory |",
              "|---|---|---|---|"]
    return header + rows


def generic_section(order: int = 6, n: int = 6) -> list[str]:
    """The 6th derivative of sum(eigvalsh(x x^T + diag(x))) along a line: eigvalsh has no
    Taylor rule, so jet nests its JVP (``nested_jvp_series``: O(2^order))."""
    x0 = onp.linspace(0.1, 1.0, n)
    series = ([onp.cos(onp.arange(n) + j) for j in range(order)],)

    def f(x):
        return np.sum(np.linalg.eigvalsh(np.outer(x, x) + np.diag(x)))

    ours = lambda: cr.jet(f, (x0,), series)[1][order - 1]  # noqa: E731
    want = float(ours())
    base = _best_of(ours, 5)
    return [f"{order}th derivative of sum(eigvalsh(x x^T + diag(x))) along a curve, n = {n} "
            f"(value {want:.6g})", "", "| method | time | vs jet | peak memory |",
            "|---|---|---|---|",
            _row(f"chainrule jet (the generic nested-JVP rule, order {order})", base,
                 _peak_bytes(ours), base)]


def mlp_weights(d: int, width: int = 64, seed: int = 0) -> tuple:
    rng = onp.random.default_rng(seed)
    w1 = rng.standard_normal((width, d)) / onp.sqrt(d)
    w2 = rng.standard_normal((width, width)) / onp.sqrt(width)
    w3 = rng.standard_normal(width) / onp.sqrt(width)
    b1, b2 = rng.standard_normal(width) * 0.1, rng.standard_normal(width) * 0.1
    return w1, b1, w2, b2, w3


def mlp_apply(m, weights, x):
    w1, b1, w2, b2, w3 = weights
    h = m.tanh(m.dot(w1, x) + b1)
    h = m.tanh(m.dot(w2, h) + b2)
    return m.dot(w3, h)


def mlp(m, d: int):
    weights = mlp_weights(d)
    return lambda x: mlp_apply(m, weights, x)


def laplacian_section(d: int) -> list[str]:
    f = mlp(np, d)
    x = onp.random.default_rng(1).standard_normal(d)
    ours = lambda: cr.laplacian(f)(x)  # noqa: E731
    want = float(ours())

    def trace_hessian():
        return onp.trace(cr.hessian(f)(x))

    gradient = cr.grad(f)
    basis = onp.eye(d)

    def uncollapsed():
        second = lambda v: cr.jet(f, (x,), ([v, onp.zeros(d)],))[1][1]  # noqa: E731
        return np.sum(cr.vmap(second)(basis))

    def forward_over_reverse():
        return sum(float(onp.dot(e, cr.jvp(gradient, (x,), (e,))[1])) for e in basis)

    def forward_over_reverse_vmap():
        hvps = cr.vmap(lambda e: cr.jvp(gradient, (x,), (e,))[1])(basis)
        return onp.trace(hvps)

    weights = mlp_weights(d)
    # jitted, the weights are arguments: as constants, jit would fold the first layer's
    # coefficients w1 e_i (they do not depend on x) into the compiled function
    jitted = cr.jit(lambda x, weights: cr.laplacian(lambda z: mlp_apply(np, weights, z))(x))

    rows = []
    base = _best_of(ours, 5)
    rows.append(_row("chainrule laplacian (collapsed Taylor mode, one pass)", base,
                     _peak_bytes(ours), base))
    jitted_laplacian = lambda: jitted(x, weights)  # noqa: E731
    assert abs(float(jitted_laplacian()) - want) <= 1e-8 * abs(want)
    rows.append(_row("chainrule jit of laplacian (weights as arguments)",
                     _best_of(jitted_laplacian, 5), _peak_bytes(jitted_laplacian), base))
    for name, fn, repeats in (
            ("chainrule vmap of jet over the basis (Taylor, not collapsed)", uncollapsed, 5),
            ("chainrule trace(hessian(f))", trace_hessian, 5),
            ("chainrule forward-over-reverse, d HVPs in a loop", forward_over_reverse, 1),
            ("chainrule forward-over-reverse, vmap of d HVPs", forward_over_reverse_vmap, 5)):
        got = float(fn())
        assert abs(got - want) <= 1e-8 * abs(want), (name, got, want)
        rows.append(_row(name, _best_of(fn, repeats), _peak_bytes(fn), base))
    jax_parts = _jax()
    if jax_parts is not None:
        jax, jnp, jet = jax_parts

        def second(v, x, weights):
            g = lambda z: mlp_apply(jnp, weights, z)  # noqa: E731
            return jet.jet(g, (x,), ((v, jnp.zeros_like(v)),))[1][1]

        jax_laplacian = jax.jit(lambda x, weights: jnp.sum(
            jax.vmap(second, (0, None, None))(jnp.eye(d), x, weights)))
        got = float(jax_laplacian(x, weights))
        assert abs(got - want) <= 1e-8 * abs(want), ("jax", got, want)
        rows.append(_row("JAX jet-based Laplacian (vmap of jet, jit, weights as arguments)",
                         _best_of(lambda: jax_laplacian(x, weights).block_until_ready(),
                                  5, clock=time.perf_counter), None, base))
    header = [f"Laplacian of a tanh MLP {d}-64-64-1 (value {want:.6g})", "",
              "| method | time | vs laplacian | peak memory |", "|---|---|---|---|"]
    return header + rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-large", action="store_true", help="leave d = 1000 out")
    parser.add_argument("--only", choices=("derivative", "linalg", "generic", "laplacian"),
                        default=None, help="run one section")
    args = parser.parse_args(argv)
    one = {"derivative": derivative_section, "linalg": linalg_section,
           "generic": generic_section}
    if args.only in one:
        print("\n".join(one[args.only]()))
        return
    sections = [] if args.only == "laplacian" else [derivative_section(), linalg_section(),
                                                     generic_section()]
    sections.append(laplacian_section(100))
    if not args.skip_large:
        sections.append(laplacian_section(1000))
    print("\n\n".join("\n".join(s) for s in sections))


if __name__ == "__main__":
    main()
