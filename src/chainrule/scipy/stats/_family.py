"""Distributions as functions of primitives, so every parameter is differentiable.

A ``Family`` is a standardized density (and optionally its distribution
function, survival function and their logs) with ``n_shapes`` shape parameters;
it provides SciPy's ``pdf(x, *shapes, loc=0, scale=1)`` and friends, with
``z = (x - loc) / scale`` and SciPy's broadcasting. Loc, scale and shapes may be
passed positionally or by keyword, traced or not.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as _np

from ...numpy import numpy_wrapper as anp


def inside(cond, value, outside):
    """``value`` where ``cond`` holds, ``outside`` elsewhere."""
    return anp.where(cond, value, outside)


def clamp(z, low, high=None):
    """``z`` clipped into the support, so that formulas stay finite outside it."""
    z = anp.where(z < low, low, z)
    return z if high is None else anp.where(z > high, high, z)


def as_array(value):
    """Lists and tuples become arrays (SciPy takes array_like); arrays and traced values stay."""
    return _np.asarray(value) if isinstance(value, (list, tuple)) else value


class Family:
    def __init__(self, name: str, shapes: tuple[str, ...], logpdf: Callable,
                 cdf: Callable | None = None, sf: Callable | None = None,
                 logcdf: Callable | None = None, logsf: Callable | None = None,
                 loc_scale: bool = True):
        self.name = name
        self.shapes = shapes
        self.loc_scale = loc_scale
        self._std = dict(logpdf=logpdf, cdf=cdf, sf=sf, logcdf=logcdf, logsf=logsf)

    def _parse(self, method: str, x, args, kwargs):
        names = (*self.shapes, "loc", "scale") if self.loc_scale else (*self.shapes, "loc")
        if len(args) > len(names):
            raise TypeError(f"{self.name}.{method} takes at most {len(names) + 1} positional "
                            f"arguments (x, {', '.join(names)}), got {len(args) + 1}.")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names or key in values:
                raise TypeError(f"{self.name}.{method} got an unexpected or repeated argument "
                                f"{key!r}; its arguments are x, {', '.join(names)}.")
            values[key] = value
        missing = [s for s in self.shapes if s not in values]
        if missing:
            raise TypeError(f"{self.name}.{method} needs the shape parameter(s) "
                            f"{', '.join(missing)}.")
        x = as_array(x)
        values = {key: as_array(value) for key, value in values.items()}
        loc = values.get("loc", 0.0)
        scale = values.get("scale", 1.0)
        z = x - loc if not self.loc_scale else (x - loc) / scale
        return z, [values[s] for s in self.shapes], scale

    def method(self, method: str) -> Callable:
        std = self._std

        def logpdf(z, shapes, scale):
            out = std["logpdf"](z, *shapes)
            return out - anp.log(scale) if self.loc_scale else out

        def cdf(z, shapes, scale):
            return std["cdf"](z, *shapes)

        def sf(z, shapes, scale):
            return std["sf"](z, *shapes) if std["sf"] else 1.0 - cdf(z, shapes, scale)

        impl = {
            "logpdf": logpdf,
            "pdf": lambda z, s, scale: anp.exp(logpdf(z, s, scale)),
            "cdf": cdf,
            "sf": sf,
            "logcdf": lambda z, s, scale: (std["logcdf"](z, *s) if std["logcdf"]
                                           else anp.log(cdf(z, s, scale))),
            "logsf": lambda z, s, scale: (std["logsf"](z, *s) if std["logsf"]
                                          else anp.log(sf(z, s, scale))),
        }[method]

        def fun(x, *args, **kwargs):
            z, shapes, scale = self._parse(method, x, args, kwargs)
            return impl(z, shapes, scale)

        fun.__name__ = fun.__qualname__ = method
        params = (*self.shapes, "loc", "scale")[:len(self.shapes) + 1 + self.loc_scale]
        fun.__doc__ = (f"``scipy.stats.{self.name}.{method}``, differentiable w.r.t. x, "
                       f"{', '.join(params)}.")
        return fun

    def methods(self, names: str) -> list[Callable]:
        return [self.method(name) for name in names.split()]


LOG_SQRT_2PI = 0.5 * _np.log(2 * _np.pi)
