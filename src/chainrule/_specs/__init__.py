"""Rule test specs as data: each spec module lists Case objects in ``CASES``.

tests/test_rule_specs.py expands every case into a test that checks the primal
against NumPy's own result and the derivatives with ``check_grads`` in both
modes to the case's order. Builders here generate the usual variants (shapes,
broadcasting pairs, axis/keepdims, dtypes) so a spec entry stays one line.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as onp

SHAPES = [(), (3,), (2, 3)]
BROADCAST_PAIRS = [((), (3,)), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((2, 3), ())]
REAL = [onp.float64]
ALL_FLOAT = [onp.float64, onp.float32]


@dataclass
class Case:
    """One call to differentiate: ``fun(*args, **kwargs)`` w.r.t. ``argnums``."""

    name: str                      # the wrapped function's name (for coverage)
    fun: Callable                  # the chainrule function (or a lambda over it)
    args: tuple
    kwargs: dict = field(default_factory=dict)
    argnums: tuple = (0,)
    ref: Callable | None = None    # NumPy's function, for the primal check
    order: int = 2
    modes: tuple = ("fwd", "rev")
    label: str = ""

    @property
    def id(self) -> str:
        shapes = "-".join("x".join(map(str, onp.shape(a))) or "s" for a in self.args)
        dtypes = "-".join(sorted({onp.result_type(a).name for a in self.args
                                  if hasattr(a, "dtype") or isinstance(a, float)}))
        extra = f"-{self.label}" if self.label else ""
        kw = "-".join(f"{k}={v}" for k, v in self.kwargs.items())
        return f"{self.name}[{shapes}|{dtypes}{'|' + kw if kw else ''}{extra}]"


def rng(seed: int = 0) -> onp.random.Generator:
    return onp.random.default_rng(seed)


def make(shape, dtype=onp.float64, low=-2.0, high=2.0, seed=0):
    """A deterministic array (or scalar for shape ()) in [low, high]."""
    r = rng(seed + 7 * len(shape) + sum(shape))
    value = r.uniform(low, high, size=shape)
    if onp.dtype(dtype).kind == "c":
        value = value + 1j * r.uniform(low, high, size=shape)
    value = onp.asarray(value, dtype=dtype)
    return value[()] if shape == () else value


def unary(name, anp_fun, np_fun, low=-2.0, high=2.0, shapes=SHAPES, dtypes=ALL_FLOAT,
          order=2, **kwargs):
    """Cases for an elementwise unary function over shapes and dtypes."""
    return [Case(name, anp_fun, (make(s, d, low, high),), kwargs, ref=np_fun, order=order)
            for s, d in itertools.product(shapes, dtypes)]


def binary(name, anp_fun, np_fun, low=-2.0, high=2.0, pairs=BROADCAST_PAIRS, dtypes=REAL,
           order=2, argnums=(0, 1), low2=None, high2=None):
    """Cases for a broadcasting binary function, each argument checked."""
    low2 = low if low2 is None else low2
    high2 = high if high2 is None else high2
    return [Case(name, anp_fun, (make(a, d, low, high, 1), make(b, d, low2, high2, 2)),
                 ref=np_fun, order=order, argnums=argnums)
            for (a, b), d in itertools.product(pairs, dtypes)]


def reduction(name, anp_fun, np_fun, shape=(2, 3, 4), axes=(None, 0, -1, (0, 2)),
              keepdims=(False, True), order=2, low=-2.0, high=2.0, **extra):
    """Cases for a reduction over axis variants and keepdims."""
    return [Case(name, anp_fun, (make(shape, onp.float64, low, high),),
                 dict(axis=ax, keepdims=kd, **extra), ref=np_fun, order=order)
            for ax, kd in itertools.product(axes, keepdims)]
