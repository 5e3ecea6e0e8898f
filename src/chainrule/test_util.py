"""Checking derivatives numerically, for chainrule's tests and for users' own primitives.

``check_grads(f)(*args)`` compares forward mode (JVP) and reverse mode (VJP) of
``f`` with central finite differences along random directions, then repeats the
check on the derivative functions themselves up to ``order``. A random
direction costs two evaluations of ``f`` whatever the size of its input.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable

import numpy as _np

from ._core import forward, reverse
from ._core.pytree import tree_leaves, tree_map
from ._core.vspace import vspace
from ._transforms.options import unary_to_nary

EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-6


class GradientCheckError(AssertionError):
    pass


def _name(f) -> str:
    return getattr(f, "__name__", repr(f))


def _directions() -> _np.random.Generator:
    # A fixed seed: a failing check fails the same way on every run.
    return _np.random.default_rng(0)


def _tolerances(*values):
    # single precision cannot resolve a 1e-6 step: use a coarser step and a looser match
    if any(_np.result_type(leaf).itemsize <= 4 or _np.result_type(leaf) == _np.complex64
           for value in values for leaf in tree_leaves(value)):
        return 1e-3, 2e-2, 2e-3
    return EPS, RTOL, ATOL


def _numeric_jvp(f, x, v, eps):
    x_vs = vspace(x)
    plus = f(x_vs.add(x, x_vs.scalar_mul(v, eps)))
    minus = f(x_vs.add(x, x_vs.scalar_mul(v, -eps)))
    y_vs = vspace(plus)
    return y_vs.scalar_mul(y_vs.add(plus, y_vs.scalar_mul(minus, -1.0)), 1.0 / (2 * eps))


def _compare(what: str, f, analytic, numeric, rtol, atol, level: int = 1,
             against: str = "finite differences", labels=("analytic", "numeric")) -> None:
    a = _np.asarray(analytic)
    n = _np.asarray(numeric)
    if not _np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
        width = max(map(len, labels))
        raise GradientCheckError(
            # "(VJP) check of f failed" is autograd's phrase, which users' tests match on
            f"order {level}: {what} check of {_name(f)} failed: it disagrees with {against}:\n"
            f"  {labels[0] + ':':<{width + 1}} {_np.array2string(a.ravel()[:10], precision=8)}\n"
            f"  {labels[1] + ':':<{width + 1}} {_np.array2string(n.ravel()[:10], precision=8)}\n"
            f"  largest difference {_np.max(_np.abs(a - n)) if a.size else 0:.3g} "
            f"(rtol={rtol}, atol={atol})" + _order_note(f, level)
        )


def _order_note(f, level: int) -> str:
    if level == 1:
        return ""
    return (f"\n  ({_name(f)} is a derivative function made by check_grads: its first "
            f"derivatives are derivatives of order {level} of the function you passed)")


def _flat(value):
    return vspace(value).flatten(value)


def check_jvp(f: Callable, x, rng=None, level: int = 1) -> None:
    """Forward mode of ``f`` at ``x`` against finite differences along a random tangent."""
    rng = _directions() if rng is None else rng
    v = vspace(x).randn(rng)
    _, tangent = forward.make_jvp(f, x)(v)
    eps, rtol, atol = _tolerances(x, tangent)
    _compare("forward mode (JVP)", f, _flat(tangent), _flat(_numeric_jvp(f, x, v, eps)),
             rtol, atol, level)


def check_vjp(f: Callable, x, rng=None, level: int = 1) -> None:
    """Reverse mode of ``f`` at ``x``: <u, J v> from a VJP against finite differences."""
    rng = _directions() if rng is None else rng
    vjp, y = reverse.make_vjp(f, x)
    eps, rtol, atol = _tolerances(x, y)
    x_vs, y_vs = vspace(x), vspace(y)
    x_v, y_v = x_vs.randn(rng), y_vs.randn(rng)
    vjp_y = x_vs.covector(vjp(y_vs.covector(y_v)))
    analytic = x_vs.inner_prod(x_v, vjp_y)
    numeric = y_vs.inner_prod(y_v, _numeric_jvp(f, x, x_v, eps))
    _compare("reverse mode (VJP)", f, analytic, numeric, rtol, atol, level)


def check_modes_agree(f: Callable, x, rng=None, level: int = 1) -> None:
    """Forward and reverse mode of ``f`` at ``x`` against each other: <u, J v> computed
    with the JVP and with the VJP must agree to rounding (far tighter than finite
    differences can check)."""
    rng = _directions() if rng is None else rng
    vjp, y = reverse.make_vjp(f, x)
    x_vs, y_vs = vspace(x), vspace(y)
    x_v, y_v = x_vs.randn(rng), y_vs.randn(rng)
    _, tangent = forward.make_jvp(f, x)(x_v)
    by_jvp = y_vs.inner_prod(y_v, tangent)
    by_vjp = x_vs.inner_prod(x_v, x_vs.covector(vjp(y_vs.covector(y_v))))
    single = _tolerances(x, y)[0] != EPS
    rtol, atol = (1e-4, 1e-5) if single else (1e-9, 1e-12)
    _compare("forward mode (JVP)", f, by_jvp, by_vjp, rtol, atol, level,
             against="its reverse mode (VJP)", labels=("<u, J v> by JVP", "<u, J v> by VJP"))


@unary_to_nary
def check_grads(f, x, modes=("fwd", "rev"), order=2, rng=None):
    """Check ``f``'s derivatives in ``modes`` ('fwd', 'rev') up to ``order``.

    Use as ``check_grads(f, modes=["rev"], order=2)(*args)``. Each mode is checked
    against finite differences and, when both are asked for, against each other;
    then the same checks run on the derivative functions, up to ``order``. Raises
    GradientCheckError naming the order, the mode and the function, with the
    analytic and numeric values. Directions are drawn from ``rng`` (a NumPy
    Generator; by default a fixed seed, so every run checks the same directions).

    >>> import chainrule.numpy as np
    >>> check_grads(lambda x: np.sum(np.sin(x) * x), modes=["fwd", "rev"], order=2)(
    ...     np.array([0.3, -1.2]))
    """
    unknown = set(modes) - {"fwd", "rev"}
    if unknown:
        raise ValueError(f"check_grads: unknown modes {sorted(unknown)}; use 'fwd' and 'rev'.")
    _check_grads(f, x, tuple(modes), order, _directions() if rng is None else rng, 1)


def _check_grads(f, x, modes, order, rng, level) -> None:
    if level > 1:
        # a derivative function may well be constant (the derivative of a linear map):
        # its "output seems independent of input" warning says nothing here
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Output seems independent of input")
            _check_level(f, x, modes, order, rng, level)
    else:
        _check_level(f, x, modes, order, rng, level)


def _check_level(f, x, modes, order, rng, level) -> None:
    if "fwd" in modes:
        check_jvp(f, x, rng, level)
    if "rev" in modes:
        check_vjp(f, x, rng, level)
    if "fwd" in modes and "rev" in modes:
        check_modes_agree(f, x, rng, level)
    if order <= 1:
        return
    if "fwd" in modes:
        def jvp_f(xv):
            return forward.make_jvp(f, xv[0])(xv[1])[1]

        jvp_f.__name__ = f"jvp_{_name(f)}"
        _check_grads(jvp_f, (x, vspace(x).randn(rng)), modes, order - 1, rng, level + 1)
    if "rev" in modes:
        y_vs = vspace(f(x))

        def vjp_f(xu):
            return reverse.make_vjp(f, xu[0])[0](xu[1])

        vjp_f.__name__ = f"vjp_{_name(f)}"
        _check_grads(vjp_f, (x, y_vs.randn(rng)), modes, order - 1, rng, level + 1)


def check_equivalent(x, y) -> None:
    """Assert two values (arrays, scalars or containers) are equal to rounding."""
    x_vs, y_vs = vspace(x), vspace(y)
    if x_vs != y_vs:
        raise AssertionError(f"VSpace mismatch:\nx: {x_vs}\ny: {y_vs}")
    a, b = _flat(x), _flat(y)
    if not _np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
        raise AssertionError(
            f"Value mismatch:\nx: {_np.array2string(a[:10], precision=10)}\n"
            f"y: {_np.array2string(b[:10], precision=10)}\n"
            f"largest difference {_np.max(_np.abs(a - b)):.3g} (rtol={RTOL}, atol={ATOL})")


def scalar_close(a, b) -> bool:
    """Equal to 1e-6, absolutely or relative to the larger magnitude."""
    return abs(a - b) < 1e-6 or abs(a - b) < 1e-6 * max(abs(a), abs(b))


def combo_check(fun: Callable, *args, **kwargs) -> Callable:
    """``combo_check(fun, argnums, modes=..., order=...)(*arg_lists, **kwarg_lists)``:
    ``check_grads`` over every combination of the listed argument values."""

    def checker(*arg_lists, **kwarg_lists):
        argnums = args[0] if args else kwargs.get("argnums", [0])
        argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        modes = kwargs.get("modes", ("fwd", "rev"))
        order = kwargs.get("order", 2)
        keys = list(kwarg_lists)
        for values in itertools.product(*arg_lists):
            for kw_values in itertools.product(*(kwarg_lists[k] for k in keys)):
                kw = dict(zip(keys, kw_values))
                f = lambda *a, kw=kw: fun(*a, **kw)
                f.__name__ = f"{_name(fun)}{kw or ''}"
                check_grads(f, argnums, modes, order)(*values)

    return checker


def perturb(x, eps: float = 1e-6):
    """``x`` moved a little along a random direction (a helper for users' tests)."""
    return tree_map(lambda leaf: leaf + eps * vspace(leaf).randn(), x)
