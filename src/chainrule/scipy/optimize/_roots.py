"""Roots: ``root``, the bracketing solvers, ``newton``, ``root_scalar`` and
``fixed_point`` (F = the residual, or x - func(x))."""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as _np
import scipy.optimize as _so

from ..._transforms.derivatives import jacobian
from ...numpy import numpy_wrapper as anp
from ._driver import (
    _as_tuple,
    _checked,
    _lift_closure,
    _no_traced,
    _plain,
    _root_converged,
    _succeeded,
    implicit_solution,
)
from ._results import _front


# ----------------------------------------------------------------------------- roots
def _shaped(x, shape):
    return anp.reshape(x, shape)


def root(
    fun: Callable,
    x0,
    args=(),
    method: str = "hybr",
    jac=None,
    tol=None,
    callback=None,
    options: dict | None = None,
    *,
    implicit_solver: str = "auto",
) -> _so.OptimizeResult:
    """``scipy.optimize.root``: x with fun(x, *args) = 0, differentiable in ``args``.

    ``res.x`` is traced and shaped as SciPy shapes it (MINPACK's hybr and lm flatten ``x0``
    and call ``fun`` with flat vectors; the other methods keep ``x0``'s shape). Where the
    method uses a Jacobian (hybr, lm) and none is given, chainrule's exact one is passed.

    >>> import chainrule.numpy as np
    >>> from chainrule import grad
    >>> cube_root = lambda t: root(lambda x, t: x ** 3 - t, np.ones(1), args=(t,)).x[0]
    >>> print(round(float(grad(cube_root)(8.0)), 6))
    0.083333
    """
    name = "root"
    fun, args, (jac,) = _lift_closure(name, fun, args, jac)
    x0 = _np.asarray(_plain(x0), dtype=float)
    shape = (x0.size,) if method in ("hybr", "lm") else x0.shape
    f = _checked(name, fun)
    value = (lambda x, *a: fun(x, *a)[0]) if jac is True else fun

    def residual(x, a):
        return anp.ravel(value(_shaped(x, shape), *a))

    def solve(a):
        j = jac
        if jac is None and method in ("hybr", "lm"):
            j = lambda x, *a: _np.reshape(
                _no_traced(name, jacobian(lambda z: anp.ravel(value(_shaped(z, shape), *a)))(x)),
                (x0.size, x0.size),
            )
        res = _so.root(
            f, x0, args=a, method=method, jac=j, tol=tol, callback=callback, options=options
        )
        return res.x, res

    solution = implicit_solution(
        name,
        residual,
        solve,
        args,
        linear_solver=implicit_solver,
        converged=_succeeded,
        fix="Tighten tol, raise the iteration limit in options, or start closer to the root.",
    )
    exact = {"fun": lambda x, a: value(_shaped(x, shape), *a)}  # (the residual at x*)
    return solution.optimize_result(_shaped(solution.x, shape), exact=exact)


def _scalar_problem(name: str, f: Callable, solve_scalar: Callable, args, fix: str):
    """A scalar root as an implicit solution (``solution.x[0]`` the traced root)."""
    checked = _checked(name, f)

    def residual(x, a):
        return anp.reshape(f(x[0], *a), (1,))

    def solve(a):
        out = solve_scalar(checked, a)
        return _np.atleast_1d(out[0]), out

    return implicit_solution(
        name, residual, solve, _as_tuple(args), converged=_root_converged, fix=fix
    )


def _bracketing(scipy_solver: Callable) -> Callable:
    name = scipy_solver.__name__

    def solver(
        f: Callable,
        a,
        b,
        args=(),
        xtol: float = 2e-12,
        rtol: float = 4 * _np.finfo(float).eps,
        maxiter: int = 100,
        full_output: bool = False,
        disp: bool = True,
    ):
        a, b = float(_plain(a)), float(_plain(b))  # the root does not move with them
        f, args, _ = _lift_closure(name, f, args)

        def solve_scalar(checked, plain_args):
            return scipy_solver(
                checked,
                a,
                b,
                args=plain_args,
                xtol=xtol,
                rtol=rtol,
                maxiter=maxiter,
                full_output=True,
                disp=disp,
            )

        solution = _scalar_problem(
            name, f, solve_scalar, args, "Raise maxiter or narrow the bracket."
        )
        x = _front(solution.x[0])
        if full_output:
            r = copy.copy(solution.result[1])
            r.root = x
            return x, solution.guarded(r, at=1, of=solution.x[0])
        return x

    solver.__name__ = solver.__qualname__ = name
    solver.__doc__ = (
        f"``scipy.optimize.{name}``, differentiable in the traced values of "
        f"``args`` (the root moves with them; the bracket does not)."
    )
    return solver


brentq = _bracketing(_so.brentq)
brenth = _bracketing(_so.brenth)
bisect = _bracketing(_so.bisect)
ridder = _bracketing(_so.ridder)
toms748 = _bracketing(_so.toms748)


def newton(
    func: Callable,
    x0,
    fprime=None,
    args=(),
    tol: float = 1.48e-08,
    maxiter: int = 50,
    fprime2=None,
    x1=None,
    rtol: float = 0.0,
    full_output: bool = False,
    disp: bool = True,
):
    """``scipy.optimize.newton`` (Newton, secant or Halley), differentiable in ``args``.

    An array ``x0`` solves the elementwise problems at once, as SciPy does."""
    name = "newton"
    func, args, (fprime, fprime2) = _lift_closure(name, func, args, fprime, fprime2)
    x0 = _plain(x0)
    shape = _np.shape(x0)
    f = _checked(name, func)

    def residual(x, a):
        return anp.ravel(func(_shaped(x, shape), *a))

    def solve(a):
        out = _so.newton(
            f,
            x0,
            fprime=fprime,
            args=a,
            tol=tol,
            maxiter=maxiter,
            fprime2=fprime2,
            x1=x1,
            rtol=rtol,
            full_output=True,
            disp=disp,
        )
        if shape:  # arrays: (root, converged, zero_der)
            return out[0], out
        return _np.atleast_1d(out[0]), out

    solution = implicit_solution(
        name,
        residual,
        solve,
        _as_tuple(args),
        converged=(lambda out: bool(_np.all(out[1]))) if shape else _root_converged,
        fix=("Some elements did not converge: r" if shape else "R")
        + "aise maxiter, or pass fprime for Newton's method.",
    )
    x = _front(_shaped(solution.x, shape) if shape else solution.x[0])
    if full_output:
        if shape:  # (converged, zero_der): arrays of each call, values of the program
            return (x, *[solution.reported(i) for i in (1, 2)])
        return x, solution.guarded(solution.result[1], at=1)
    return x


def root_scalar(
    f: Callable,
    args=(),
    method: str | None = None,
    bracket=None,
    fprime=None,
    fprime2=None,
    x0=None,
    x1=None,
    xtol=None,
    rtol=None,
    maxiter=None,
    options: dict | None = None,
):
    """``scipy.optimize.root_scalar``: a ``RootResults`` whose ``root`` is traced."""
    f, args, (fprime, fprime2) = _lift_closure("root_scalar", f, args, fprime, fprime2)
    bracket = None if bracket is None else [float(_plain(b)) for b in bracket]
    x0 = None if x0 is None else float(_plain(x0))
    x1 = None if x1 is None else float(_plain(x1))

    def solve_scalar(checked, plain_args):
        r = _so.root_scalar(
            checked,
            args=plain_args,
            method=method,
            bracket=bracket,
            fprime=fprime,
            fprime2=fprime2,
            x0=x0,
            x1=x1,
            xtol=xtol,
            rtol=rtol,
            maxiter=maxiter,
            options=options,
        )
        return r.root, r

    solution = _scalar_problem(
        "root_scalar", f, solve_scalar, args, "Raise maxiter, tighten xtol/rtol, or give a bracket."
    )
    r = copy.copy(solution.result[1])
    r.root = _front(solution.x[0])
    return solution.guarded(r, at=1, of=solution.x[0])


def fixed_point(
    func: Callable, x0, args=(), xtol: float = 1e-08, maxiter: int = 500, method: str = "del2"
):
    """``scipy.optimize.fixed_point``: x with func(x, *args) = x, differentiable in
    ``args`` (F = x - func(x)). SciPy raises if the iteration does not converge."""
    name = "fixed_point"
    func, args, _ = _lift_closure(name, func, args)
    x0 = _plain(x0)
    shape = _np.shape(x0)
    f = _checked(name, func)

    def residual(x, a):
        return x - anp.ravel(func(_shaped(x, shape), *a))

    def solve(a):
        x = _so.fixed_point(f, x0, args=a, xtol=xtol, maxiter=maxiter, method=method)
        return x, None

    x = implicit_solution(name, residual, solve, _as_tuple(args)).x
    return _front(_shaped(x, shape) if shape else x[0])


