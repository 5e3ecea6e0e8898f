"""Comparing what a transformed call answered with what its reference answered.

``Outcome.of(thunk)`` runs a call and keeps what came out of it: the value or the exception,
and the warnings it raised. ``differences(expected, actual)`` lists, in words, every way the
two disagree: the pytree (types, dict key order, lengths), the leaves (dtype, shape, value —
bit for bit by default, signed zeros included, any nan matching any nan), the exception
(class and message) and the warnings. ``within_spread(expected, actual, spread, ...)``
compares to a reference's own uncertainty (``dot_spread`` gives a dot product's).
``aliasing(value, others)`` names output arrays that share memory with arrays the caller owns
(the inputs, earlier outputs).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as onp

__all__ = ["Outcome", "differences", "within_spread", "dot_spread", "aliasing", "array_leaves",
           "snapshot", "unchanged"]


@dataclasses.dataclass
class Outcome:
    """What one call gave: ``value`` or ``error`` (never both), and its ``warnings``."""

    value: Any = None
    error: BaseException | None = None
    warnings: list = dataclasses.field(default_factory=list)

    @classmethod
    def of(cls, thunk: Callable[[], Any]) -> Outcome:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value = thunk()
            except Exception as e:  # noqa: BLE001 (any exception is part of the answer)
                return cls(error=e, warnings=_warning_list(caught))
        return cls(value=value, warnings=_warning_list(caught))

    def __repr__(self) -> str:
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {self.error}"
        return f"returned {_short(self.value)}"


def _warning_list(caught) -> list:
    return [(w.category, str(w.message)) for w in caught]


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + " ..."


# ------------------------------------------------------------------------ comparison
def differences(
    expected: Outcome,
    actual: Outcome,
    *,
    exact: bool = True,
    rtol: float = 0.0,
    atol: float = 0.0,
    types: bool = True,
    check_warnings: bool = False,
    ignore_warning: Callable[[type, str], bool] | None = None,
) -> list[str]:
    """How ``actual`` differs from ``expected`` (an empty list when it does not).

    ``exact``: leaves must be equal bit for bit (a nan matches a nan whatever its sign and
    payload: ``_mismatch`` says why; -0.0 does not match 0.0).
    Otherwise ``|a - e| <= atol + rtol |e|`` with nan
    where nan is. ``types``: scalar leaves must also have the same Python/NumPy type
    (``float`` is not ``numpy.float64``). ``check_warnings``: the warnings must be the same, in
    order (``ignore_warning(category, message)`` drops ones a transform may add).
    """
    out: list[str] = []
    if expected.error is not None or actual.error is not None:
        if expected.error is None:
            return [f"the reference returned {_short(expected.value)}, the transform raised "
                    f"{type(actual.error).__name__}: {actual.error}"]
        if actual.error is None:
            return [f"the reference raised {type(expected.error).__name__}: {expected.error}, "
                    f"the transform returned {_short(actual.value)}"]
        same_class = type(expected.error) is type(actual.error)
        if not same_class or str(expected.error) != str(actual.error):
            out.append(f"the reference raised {type(expected.error).__name__}: {expected.error}; "
                       f"the transform raised {type(actual.error).__name__}: {actual.error}")
    else:
        _compare(expected.value, actual.value, "out", out, exact, rtol, atol, types)
    if check_warnings:
        keep = (lambda ws: [w for w in ws if not ignore_warning(*w)]) if ignore_warning else list
        we, wa = keep(expected.warnings), keep(actual.warnings)
        if [(c, m) for c, m in we] != [(c, m) for c, m in wa]:
            out.append(f"warnings differ: reference {_names(we)}, transform {_names(wa)}")
    return out


def _names(ws) -> str:
    return "[" + "; ".join(f"{c.__name__}: {m}" for c, m in ws) + "]"


def _compare(e: Any, a: Any, where: str, out: list, exact, rtol, atol, types) -> None:
    if len(out) > 20:
        return
    te, ta = type(e), type(a)
    if isinstance(e, dict):
        if ta is not te:
            out.append(f"{where}: a {te.__name__} became a {ta.__name__}")
        elif list(e) != list(a):
            out.append(f"{where}: dict keys {list(e)} came back as {list(a)}")
        else:
            for k in e:
                _compare(e[k], a[k], f"{where}[{k!r}]", out, exact, rtol, atol, types)
        return
    if isinstance(e, (list, tuple)):
        if ta is not te:
            out.append(f"{where}: a {te.__name__} became a {ta.__name__}")
        elif len(e) != len(a):
            out.append(f"{where}: length {len(e)} became {len(a)}")
        else:
            for i, (x, y) in enumerate(zip(e, a)):
                _compare(x, y, f"{where}[{i}]", out, exact, rtol, atol, types)
        return
    if dataclasses.is_dataclass(e) and not isinstance(e, type):
        if ta is not te:
            out.append(f"{where}: a {te.__name__} became a {ta.__name__}")
            return
        for f in dataclasses.fields(e):
            _compare(getattr(e, f.name), getattr(a, f.name), f"{where}.{f.name}", out,
                     exact, rtol, atol, types)
        return
    if _is_numeric(e) or _is_numeric(a):
        _compare_leaf(e, a, where, out, exact, rtol, atol, types)
        return
    if te is not ta:
        out.append(f"{where}: a {te.__name__} became a {ta.__name__}")
    elif e is not a and e != a:
        out.append(f"{where}: {_short(e)} became {_short(a)}")


def _is_numeric(x: Any) -> bool:
    return isinstance(x, (onp.ndarray, onp.generic, float, int, complex)) and not isinstance(
        x, bool
    ) or isinstance(x, onp.bool_)


def _compare_leaf(e, a, where, out, exact, rtol, atol, types) -> None:
    if not _is_numeric(a) or not _is_numeric(e):
        out.append(f"{where}: {_short(e)} ({type(e).__name__}) became {_short(a)} "
                   f"({type(a).__name__})")
        return
    if types and type(e) is not type(a):
        out.append(f"{where}: a {type(e).__name__} became a {type(a).__name__}")
        return
    ea, aa = onp.asarray(e), onp.asarray(a)
    if ea.dtype != aa.dtype:
        out.append(f"{where}: dtype {ea.dtype} became {aa.dtype}")
        return
    if ea.shape != aa.shape:
        out.append(f"{where}: shape {ea.shape} became {aa.shape}")
        return
    bad = _mismatch(ea, aa, exact, rtol, atol)
    if bad.any():
        i = tuple(int(j) for j in onp.argwhere(bad)[0]) if bad.ndim else ()
        ev, av = ea[i], aa[i]
        out.append(f"{where}: {int(bad.sum())} of {bad.size} entries differ, first at {i}: "
                   f"{ev!r} became {av!r}" + ("" if exact else f" (rtol {rtol}, atol {atol})"))


def _mismatch(e: onp.ndarray, a: onp.ndarray, exact: bool, rtol: float, atol: float):
    if e.dtype.kind not in "fc":
        return onp.asarray(e != a)
    if e.dtype.kind == "c":
        return _mismatch(e.real, a.real, exact, rtol, atol) | _mismatch(
            e.imag, a.imag, exact, rtol, atol
        )
    # A NaN's sign and payload are not compared. IEEE 754 lets an operation on two NaNs
    # answer either (and gives a NaN's sign no meaning but to copysign and signbit), and
    # NumPy's loops pick by the arrays' length and layout: vmap's batch and its loop, and
    # jit's program and eager evaluation (its in-place out= forms, its short-axis kernels).
    # fix16 compared NaN bits in the jit contract (seed 0, cases 0-19,999): two differed,
    # both gradients where NaNs of both signs met, -nan against +nan (case 2,126: jit of
    # grad, short-axis forms always, at x = [inf, -1.52, nan, -1.83]; case 13,111: short
    # forms sized, at [1e308, nan, 1.34]); payloads never. A program that reads a sign
    # through math.copysign is still compared, through its value.
    nan_e, nan_a = onp.isnan(e), onp.isnan(a)
    if exact:
        same_bits = e.view(f"u{e.dtype.itemsize}") == a.view(f"u{a.dtype.itemsize}")
        return onp.asarray((nan_e != nan_a) | (~nan_e & ~same_bits))
    with onp.errstate(invalid="ignore", over="ignore"):
        close = (e == a) | (onp.abs(a - e) <= atol + rtol * onp.abs(e))
    return onp.asarray((nan_e != nan_a) | (~nan_e & ~close))


# ------------------------------------------------------------ conditioning-aware comparison
SPREADS = 16  # (how many of the reference's own spreads a difference may span)


def within_spread(expected, actual, spread, rtol: float, atol: float) -> bool:
    """Whether ``actual`` is near ``expected`` (arrays or scalars of one shape): within
    ``atol + rtol |expected|``, or, where not, within ``SPREADS`` times ``spread`` (+ atol),
    ``spread`` (>= 0, broadcasting against ``expected``; 0 where nothing is allowed) being
    how far the reference's own answer is uncertain: how much it moves when x moves by one
    unit in the last place (vmap's contract), or the rounding of a dot product that
    cancels (``dot_spread``). Nan matches nan; an infinity only itself; a spread that is
    not finite allows nothing."""
    e, a = (onp.asarray(v, dtype=complex) for v in (expected, actual))
    spread = onp.asarray(spread)
    bad = ~onp.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    with onp.errstate(invalid="ignore", over="ignore"):
        near = (onp.isfinite(e) & onp.isfinite(a) & onp.isfinite(spread)
                & (abs(a - e) <= SPREADS * spread + atol))
    return not onp.any(bad & ~near)


def dot_spread(g, v) -> float:
    """How uncertain ``g · v`` is when each ``g_i`` is known to its float rounding: eps
    times the sum of ``|g_i v_i|``. Where the terms cancel, the rounding of the gradient's
    entries alone moves the dot product by far more than its value's rtol: fill's case
    1,315 of seed 1414, whose gradient (-2.03e11, -3.36e11, -2.03e11) along v = (-1, 0, 1)
    gives grad·v = -1.5696106 where jvp's (and mpmath's) directional derivative is
    -1.5695972; the exact gradient rounded to float64 gives -1.5695801."""
    g, v = onp.asarray(g), onp.asarray(v)
    eps = onp.finfo(onp.result_type(g.dtype, v.dtype, onp.float32)).eps
    with onp.errstate(invalid="ignore", over="ignore"):
        return float(eps * onp.sum(abs(g * v)))


# ------------------------------------------------------------------------ aliasing
def overflowed(value, reverse: float, forward: float) -> bool:
    """Whether the two modes differ by the order of IEEE arithmetic on infinities: the program's
    value overflowed (it is not finite) and one mode's derivative is not finite either. Then
    the derivative's intermediates are infinite too, and each mode sums them in its own
    order (modes case 5,360 of seed 0, tests/test_taylor12.py; fill case 7,279 of seed 77):
    for exp(v) = inf with v = 1000 (x^2 + x) at x = -6, forward mode multiplies inf by the
    chain's finite 1000 (2x + 1) and answers -inf, reverse mode sends inf back along x's
    three uses, inf * x + inf * x + inf = nan; along a direction forward mode's 0 * inf is
    nan where reverse mode's derivative is 0. (The exact derivative e^v 1000 (2x + 1) is
    beyond float64: -inf is its rounding, which no reverse sweep's sum can give.)"""
    return not onp.all(onp.isfinite(value)) and not (onp.isfinite(reverse)
                                                      and onp.isfinite(forward))


def array_leaves(tree: Any) -> list[onp.ndarray]:
    """Every NumPy array inside ``tree`` (dicts, lists, tuples, dataclasses)."""
    found: list[onp.ndarray] = []
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, onp.ndarray):
            found.append(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x))
    return found


def aliasing(value: Any, others: Iterable[Any], allowed: Iterable[Any] = ()) -> list[str]:
    """Output arrays of ``value`` that share memory with an array of ``others`` (inputs,
    earlier outputs) and are not in ``allowed`` (pairs the reference itself aliases, as
    NumPy does for a view). Outputs that are one object twice are not counted here."""
    owned = [x for o in others for x in array_leaves(o)]
    ok = {id(x) for x in array_leaves(list(allowed))}
    found = []
    for leaf in array_leaves(value):
        if id(leaf) in ok or leaf.size == 0:
            continue
        for x in owned:
            if x.size and onp.shares_memory(leaf, x):
                found.append(f"an output array of shape {leaf.shape} shares memory with an "
                             f"array the caller holds (shape {x.shape})")
                break
    return found


def snapshot(tree: Any) -> list[onp.ndarray]:
    """Copies of every array in ``tree``, to check later that nothing wrote into them."""
    return [x.copy() for x in array_leaves(tree)]


def unchanged(tree: Any, copies: list[onp.ndarray]) -> list[str]:
    """Arrays of ``tree`` whose contents differ from ``snapshot``'s copies."""
    out = []
    for x, c in zip(array_leaves(tree), copies):
        if _mismatch(c, x, True, 0.0, 0.0).any():
            out.append(f"an input array of shape {x.shape} was modified by the call")
    return out
