"""SciPy functions that a traced value was passed to: their rules, or the error's hint.

A SciPy ufunc (``scipy.special.gammaln``) dispatches a traced value to chainrule, which
answers with the rules its ``chainrule.scipy`` module registers: ``scipy_ufunc_rules``
imports that module on the first such call, so plain ``scipy.special.gammaln(x)``
differentiates whether or not the user imported chainrule.scipy. Any other SciPy function
(``scipy.integrate.solve_ivp``) turns its arguments into plain numbers or arrays, which a
traced value refuses; the error then says which SciPy function it was and, where
``chainrule.scipy`` has a differentiated version of it, to call that instead.
"""

from __future__ import annotations

import importlib
import sys
from types import FrameType


def scipy_ufunc_rules(ufunc) -> bool:
    """Import the ``chainrule.scipy`` module that holds the rules of the SciPy ufunc
    ``ufunc`` (a ufunc of a public SciPy module already imported); True where there is
    one, so the caller looks its rules up again."""
    try:
        found = _public_of(ufunc)
        if found is None:
            return False
        importlib.import_module(f"chainrule.{found[0]}")
        return True
    except ImportError:
        return False


def scipy_hint(frame: FrameType | None = None, function=None) -> str:
    """A sentence to add to an error about a traced value that reached plain SciPy: the
    SciPy function ``function`` (a ufunc, say) or, without it, the outermost SciPy
    function among the frames from ``frame`` outwards, when the conversion happened in
    SciPy's code; "" otherwise."""
    try:  # an error message's helper must never raise in place of the error
        return _hint(frame, function)
    except Exception:
        return ""


def _hint(frame: FrameType | None, function) -> str:
    found = _public_of(function) if function is not None else _scipy_caller(frame)
    if found is None:
        return ""
    module, path = found
    name = ".".join(path)
    try:
        ours = importlib.import_module(f"chainrule.{module}")
    except ImportError:
        ours = None
    theirs, mine = _attribute(sys.modules[module], path), _attribute(ours, path)
    if mine is not None and mine is not theirs:
        return (
            f" It happened in {module}.{name}, which works on plain values only: use "
            f"chainrule.{module}.{name} instead, its differentiable version."
        )
    return (
        f" It happened in {module}.{name}, which works on plain values only, and chainrule "
        f"has no differentiable version of it: pass it plain values "
        f"(chainrule.stop_gradient), or make it a primitive with chainrule.extend."
    )


def _attribute(obj, path: tuple[str, ...]):
    for name in path:
        obj = getattr(obj, name, None)
    return obj


def _module_name(frame: FrameType) -> str:
    return frame.f_globals.get("__name__") or ""


def _scipy_caller(frame: FrameType | None) -> tuple[str, tuple[str, ...]] | None:
    """(public SciPy module, attribute path) of the outermost SciPy function of the run of SciPy
    frames that made the failing call (NumPy's and chainrule's own frames skipped)."""
    while frame is not None and _module_name(frame).partition(".")[0] in ("chainrule", "numpy"):
        frame = frame.f_back
    outermost = None
    while frame is not None and _module_name(frame).partition(".")[0] in ("scipy", "numpy"):
        if _module_name(frame).startswith("scipy."):
            found = _public_in_frame(frame)
            outermost = found or outermost
        frame = frame.f_back
    return outermost


def _public_in_frame(frame: FrameType) -> tuple[str, tuple[str, ...]] | None:
    """Where a SciPy frame's function is public: a function (``solve_ivp``), a method of an
    object the module holds (``norm.pdf``), or else the class of a method (``CubicSpline``)."""
    module = ".".join(_module_name(frame).split(".")[:2])  # scipy.integrate._ivp.ivp
    public = sys.modules.get(module)
    qualname = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
    owner = frame.f_locals.get("self") if "." in qualname else None
    if owner is not None and public is not None:
        held = [(name, value) for name, value in vars(public).items() if not name.startswith("_")]
        # the object itself (scipy.stats.norm), else one of its class (a frozen norm's)
        for same in (lambda value: value is owner, lambda value: type(value) is type(owner)):
            for name, value in held:
                if same(value) and not isinstance(value, type):
                    return module, (name, frame.f_code.co_name)
    name = qualname.split(".")[0]
    return (module, (name,)) if callable(getattr(public, name, None)) else None


def _public_of(function) -> tuple[str, tuple[str, ...]] | None:
    """Where SciPy's public modules (those imported so far) hold ``function``."""
    name = getattr(function, "__name__", None)
    for module_name, module in list(sys.modules.items()):
        if (module_name.startswith("scipy.") and "._" not in module_name and name
                and getattr(module, name, None) is function):
            return module_name, (name,)
    return None
