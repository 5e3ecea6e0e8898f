"""The corpus of issue 38: NumPy code as people write it (``functions.py``), each function
differentiated unmodified, checked against finite differences in both modes to second
order, under jit (one trace, then cached) and vmap (equal to the loop).

``python -m tests.corpus`` prints the share that works, by pattern."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy

from . import functions as F


class Case(NamedTuple):
    name: str
    fun: Callable  # one array in, an array or a scalar out
    x: numpy.ndarray
    pattern: str  # index, slice, accumulate, out=, add.at, views, write functions


def _ode(rhs):
    return functools.wraps(rhs)(lambda y: rhs(0.0, y))


_a = numpy.array
CASES = [
    Case("rosen_der", F.rosen_der, _a([1.2, 0.8, -0.5, 1.1]), "slice"),
    Case("rosen_hess", F.rosen_hess, _a([1.2, 0.8, -0.5, 1.1]), "slice"),
    Case("rosen_hess_prod", lambda x: F.rosen_hess_prod(x, x[::-1] * 0.5),
         _a([1.2, 0.8, -0.5, 1.1]), "slice"),
    Case("rosen_loop", F.rosen_loop, _a([1.2, 0.8, -0.5, 1.1]), "accumulate"),
    Case("powell_singular", F.powell_singular, _a([3.0, -1.0, 0.5, 1.0]), "index"),
    Case("extended_rosenbrock", F.extended_rosenbrock, _a([-1.2, 1.0, 0.3, 0.7]), "slice"),
    Case("broyden_tridiagonal", F.broyden_tridiagonal, _a([-1.0, 0.5, 0.2, -0.3]), "slice"),
    Case("helical_valley", F.helical_valley, _a([-1.0, 0.4, 0.3]), "index"),
    Case("trigonometric", F.trigonometric, _a([0.2, 0.4, 0.6]), "accumulate"),
    Case("beale_gradient", F.beale_gradient, _a([1.0, 0.5]), "accumulate"),
    Case("robertson", _ode(F.robertson), _a([1.0, 2e-5, 0.3]), "index"),
    Case("van_der_pol", _ode(F.van_der_pol), _a([2.0, -0.3]), "index"),
    Case("lotka_volterra", _ode(F.lotka_volterra), _a([10.0, 5.0]), "index"),
    Case("lorenz", _ode(F.lorenz), _a([1.0, 1.5, 20.0]), "index"),
    Case("exponential_decay", _ode(F.exponential_decay), _a([2.0, 4.0, 8.0]), "out="),
    Case("brusselator", _ode(F.brusselator), _a([1.0, 1.2, 0.9, 3.0, 2.8, 3.1]), "views"),
    Case("kinetics_network", _ode(F.kinetics_network), _a([1.0, 0.8, 0.3, 0.1]), "add.at"),
    Case("oregonator", _ode(F.oregonator), _a([1.0, 2.0, 3.0]), "index"),
    Case("pendulum", _ode(F.pendulum), _a([0.3, -0.1]), "index"),
    Case("sir", _ode(F.sir), _a([0.9, 0.1, 0.05]), "index"),
    Case("arenstorf", _ode(F.arenstorf), _a([0.994, 0.1, 0.2, -2.0]), "index"),
    Case("heat_mol", _ode(F.heat_mol), _a([0.0, 0.3, 0.5, 0.2, 0.0]), "slice"),
    Case("bratu_residual", F.bratu_residual, _a([0.0, 0.1, 0.15, 0.1, 0.0]), "slice"),
    Case("poisson1d_residual", F.poisson1d_residual, _a([0.0, 0.1, 0.15, 0.1, 0.0]), "out="),
    Case("poisson2d_residual", F.poisson2d_residual, numpy.linspace(0, 1, 9) ** 2, "slice"),
    Case("bratu2d_residual", F.bratu2d_residual, numpy.linspace(0, 1, 9) ** 2, "slice"),
    Case("heat_ftcs", F.heat_ftcs, _a([0.0, 0.3, 0.5, 0.2, 0.0]), "slice"),
    Case("burgers_residual", F.burgers_residual, _a([0.0, 0.2, 0.3, 0.2, 0.0]), "slice"),
    Case("upwind_advection", F.upwind_advection, _a([0.0, 1.0, 0.5, 0.2]), "accumulate"),
    Case("nbody_accelerations", F.nbody_accelerations,
         _a([0.0, 0.0, 1.0, 0.2, -0.5, 0.8]), "accumulate"),
    Case("gaussian_loglik", F.gaussian_loglik, _a([0.2, 0.1]), "index"),
    Case("weighted_histogram", F.weighted_histogram,
         _a([0.5, 1.0, 1.5, 2.0, 2.5, 3.0]), "add.at"),
    Case("kalman_step", F.kalman_step, _a([0.5, 0.1, 1.2, 0.8]), "index"),
    Case("spring_chain_forces", F.spring_chain_forces, _a([0.0, 1.1, 2.3, 3.2]), "out="),
    Case("fd_gradient", F.fd_gradient, _a([0.0, 0.4, 1.0, 0.7]), "slice"),
    Case("softmax", F.softmax, _a([0.5, -1.0, 2.0]), "out="),
    Case("running_sum", F.running_sum, _a([0.5, -1.0, 2.0]), "index"),
    Case("tridiagonal_apply", F.tridiagonal_apply, _a([0.5, -1.0, 2.0, 0.3]), "index"),
    Case("ar1_residuals", F.ar1_residuals, _a([0.6, 1.3]), "slice"),
    Case("se_covariance", F.se_covariance, _a([0.0, 0.3, 1.1]), "views"),
    Case("reshape_view_fill", F.reshape_view_fill, _a([0.5, -1.0, 2.0]), "views"),
    Case("copyto_relu2", F.copyto_relu2, _a([0.5, -1.0, 2.0]), "write functions"),
    Case("putmask_leaky", F.putmask_leaky, _a([0.5, -1.0, 2.0]), "write functions"),
    Case("put_scatter", F.put_scatter, _a([0.5, -1.0, 2.0]), "write functions"),
    Case("fill_then_row", F.fill_then_row, _a([0.5, -1.0, 2.0]), "write functions"),
]


def _fd_jacobian(f, x, h=1e-6):
    columns = []
    for i in range(x.size):
        e = numpy.zeros_like(x)
        e[i] = h
        columns.append((numpy.asarray(f(x + e), float) - numpy.asarray(f(x - e), float))
                       / (2 * h))
    return numpy.stack(columns, axis=-1)


def _close(name, got, want, rtol, atol) -> list[str]:
    got, want = numpy.asarray(got), numpy.asarray(want)
    if got.shape != want.shape or not numpy.allclose(got, want, rtol=rtol, atol=atol):
        return [f"{name}: got {got!r}, expected {want!r}"]
    return []


def check(case: Case, aspects=("reverse", "forward", "order 2", "jit", "vmap")) -> list[str]:
    """The differences from the reference (finite differences, the eager function, the
    per-example loop); an exception is one difference naming it."""
    from chainrule import jacfwd, jacobian, jit, vmap

    f, x = case.fun, case.x
    problems: list[str] = []
    for aspect in aspects:
        try:
            if aspect == "reverse":
                problems += _close(aspect, jacobian(f)(x), _fd_jacobian(f, x), 1e-5, 1e-5)
            elif aspect == "forward":
                problems += _close(aspect, jacfwd(f)(x), _fd_jacobian(f, x), 1e-5, 1e-5)
            elif aspect == "order 2":
                want = _fd_jacobian(jacobian(f), x)
                problems += _close("reverse over reverse", jacobian(jacobian(f))(x), want,
                                   1e-4, 1e-4)
                problems += _close("forward over forward", jacfwd(jacfwd(f))(x), want,
                                   1e-4, 1e-4)
            elif aspect == "jit":
                jitted = jit(f)
                for point in (x, x * 1.1, x - 0.05):
                    got, want = jitted(point), f(point)
                    if not numpy.array_equal(numpy.asarray(got), numpy.asarray(want)):
                        problems.append(f"jit: {got!r} != eager {want!r}")
                info = jitted.cache_info()
                if (info.misses, info.hits, info.eager) != (1, 2, 0):
                    problems.append(f"jit: not one trace then cached: {info}")
            elif aspect == "vmap":
                batch = numpy.stack([x, x * 1.1, x - 0.05])
                want = numpy.stack([numpy.asarray(f(row)) for row in batch])
                problems += _close(aspect, vmap(f)(batch), want, 1e-12, 0)
        except Exception as error:  # noqa: BLE001 - the corpus reports what a user meets
            problems.append(f"{aspect}: {type(error).__name__}: {str(error)[:300]}")
    return problems
