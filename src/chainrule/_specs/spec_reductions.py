"""Specs for reductions and scans: axis int/tuple/None/negative, keepdims, dtypes, positional
arguments, nans for the nan functions. Test points have no ties (ties: tests/test_ties.py)."""

import numpy as onp

import chainrule.numpy as np

from . import Case, make, reduction

SMALL_AXES = (None, 1, -1, (0, 1))


def red(name, axes=(None, 0, -1, (0, 2)), keepdims=(False, True), **kwargs):
    return reduction(name, getattr(np, name), getattr(onp, name), axes=axes, keepdims=keepdims,
                     **kwargs)


def call(name, *args, argnums=(0,), label="", **kwargs):
    return Case(name, getattr(np, name), args, kwargs, argnums=argnums, ref=getattr(onp, name),
                label=label)


def at_zero(name, *args, **kwargs):
    return Case(name, getattr(np, name), args, kwargs, ref=getattr(onp, name), order=1,
                label="zero")


def with_nans(shape=(3, 4), seed=0, low=-2.0, high=2.0):
    x = make(shape, low=low, high=high, seed=seed)
    x.ravel()[[1, 6]] = onp.nan
    return x


X32 = make((2, 3), onp.float32)
XC = make((2, 3), onp.complex128)
XC64 = make((2, 3), onp.complex64)

CASES = [
    # ------------------------------------------------------------------ sums and means
    *red("sum"),
    call("sum", make((2, 3)), 0, label="positional"),
    call("sum", make((2, 3)), 1, None, None, True, label="positional-keepdims"),
    call("sum", X32), call("sum", X32, axis=0, dtype=onp.float64), call("sum", XC, axis=1),
    call("sum", XC64), call("sum", 1.5), call("sum", make(())),
    call("sum", make((0, 3)), axis=0, label="empty"),
    call("prod", make((0, 3)), axis=0, label="empty"),
    call("cumsum", make((0, 3)), axis=1, label="empty"),
    call("sum", make((2, 3)), axis=1, where=onp.array([True, False, True])),
    call("sum", make((2, 3)), axis=0, initial=1.5),
    *red("mean"),
    call("mean", make((2, 3)), -1, label="positional"), call("mean", X32, axis=0),
    call("mean", XC), call("mean", make((2, 3)), axis=0, where=onp.array([[1, 0, 1], [1, 1, 0]],
                                                                         bool)),
    *red("nansum", axes=SMALL_AXES, keepdims=(False,)),
    call("nansum", with_nans(), axis=0), call("nansum", with_nans(), keepdims=True),
    *red("nanmean", axes=SMALL_AXES, keepdims=(False,)),
    call("nanmean", with_nans(), axis=1), call("nanmean", with_nans(), axis=None, keepdims=True),
    call("average", make((2, 3, 4))), call("average", make((2, 3, 4)), (0, 2), keepdims=True),
    call("average", make((2, 3)), 1, make((3,), low=0.5, high=2.0, seed=3), argnums=(0, 2)),
    call("average", make((2, 3)), None, make((2, 3), low=0.5, high=2.0, seed=3), argnums=(0, 2)),
    call("average", make((3, 4)), 0, make((3,), low=0.5, high=2.0, seed=3), argnums=(0, 2),
         keepdims=True),
    call("trace", make((3, 3))), call("trace", make((3, 4)), 1),
    call("trace", make((2, 3, 4)), -1, 2, 0), call("trace", make((3, 2, 3)), 0, 0, 2),
    call("trace", XC), call("trace", X32, dtype=onp.float64),
    call("bincount", onp.array([0, 3, 1, 1, 3]), make((5,)), argnums=(1,)),
    call("bincount", onp.array([2, 0, 2]), make((3,)), 6, argnums=(1,), label="minlength"),
    # ------------------------------------------------------------------ products
    *red("prod", low=0.5, high=1.5),
    call("prod", make((2, 3)), 1, label="positional"),
    # with zeros, order 1: finite differences of the derivative lose digits next to a zero
    # (exact Hessians are checked by hand in tests/test_ties.py)
    at_zero("prod", onp.array([[0.5, 0.0, 1.5], [1.2, 0.7, -0.8]]), axis=1),
    at_zero("prod", onp.array([1.5, 0.0, 1.2, 0.8])),
    call("prod", X32), call("prod", XC, axis=0), call("prod", make((2, 3)), initial=1.5),
    *red("nanprod", axes=SMALL_AXES, keepdims=(False,), low=0.5, high=1.5),
    call("nanprod", with_nans(low=0.5, high=1.5), axis=1),
    call("nanprod", with_nans(low=0.5, high=1.5), axis=0, keepdims=True),
    # ------------------------------------------------------------------ spread
    *red("var"), *red("std"),
    call("var", make((3, 4)), 0, None, None, 1, label="positional-ddof"),
    call("var", make((3, 4)), axis=1, correction=1),
    call("std", make((3, 4)), axis=1, ddof=2), call("var", XC, axis=1), call("std", XC),
    call("var", X32, axis=0), call("std", X32), call("var", make((2, 3)), dtype=onp.float64),
    *red("nanvar", axes=SMALL_AXES, keepdims=(False,)),
    *red("nanstd", axes=SMALL_AXES, keepdims=(False,)),
    call("nanvar", with_nans(), axis=1), call("nanstd", with_nans(), axis=0, ddof=1),
    call("nanvar", with_nans(), keepdims=True),
    call("cov", make((3, 5))), call("cov", make((5,))), call("cov", make((5, 3)), rowvar=False),
    call("cov", make((2, 5)), make((5,), seed=4), argnums=(0, 1)),
    call("cov", make((3, 5)), bias=True), call("cov", make((3, 5)), ddof=2),
    call("corrcoef", make((3, 5))), call("corrcoef", make((4, 2)), rowvar=False),
    call("corrcoef", make((5,)), make((5,), seed=4), argnums=(0, 1)),
    # ------------------------------------------------------------------ selections
    *red("max"), *red("min"), *red("amax", axes=SMALL_AXES), *red("amin", axes=SMALL_AXES),
    call("max", make((2, 3)), 0, label="positional"), call("max", X32, axis=1),
    call("max", make((2, 3)), axis=1, initial=-5.0), call("max", 1.5),
    call("min", make((2, 3)), axis=0, where=onp.array([True, False, True]), initial=5.0),
    *red("ptp", axes=SMALL_AXES),
    *red("nanmax", axes=SMALL_AXES, keepdims=(False,)),
    *red("nanmin", axes=SMALL_AXES, keepdims=(False,)),
    call("nanmax", with_nans(), axis=0), call("nanmin", with_nans(), axis=1, keepdims=True),
    *red("median"), call("median", make((3, 5))), call("median", make((4,)), label="even"),
    call("median", X32, axis=1),
    *red("nanmedian", axes=SMALL_AXES, keepdims=(False,)),
    call("nanmedian", with_nans(), axis=1), call("nanmedian", with_nans(seed=2)),
    call("quantile", make((2, 3, 4)), 0.3), call("quantile", make((2, 3, 4)), 0.3, -1),
    call("quantile", make((2, 3, 4)), onp.array([0.1, 0.6]), (0, 2), keepdims=True),
    *[call("quantile", make((3, 5)), 0.3, 1, method=m)
      for m in ("lower", "higher", "nearest", "midpoint")],
    call("percentile", make((2, 3, 4)), 40.0, 1), call("percentile", make((5,)), [10.0, 90.0]),
    call("nanquantile", with_nans(), 0.7, 0), call("nanquantile", with_nans(), [0.2, 0.5]),
    call("nanpercentile", with_nans(), 35.0, 1, keepdims=True),
    # ------------------------------------------------------------------ scans
    call("cumsum", make((2, 3, 4))), call("cumsum", make((2, 3, 4)), 1),
    call("cumsum", make((2, 3)), axis=-1), call("cumsum", X32, 0), call("cumsum", XC),
    call("cumsum", make((2, 3)), 0, "float64", label="dtype"),
    call("cumprod", make((2, 3, 4), low=0.5, high=1.5)),
    call("cumprod", make((2, 3, 4), low=0.5, high=1.5), 1),
    call("cumprod", make((2, 3), low=-1.5, high=-0.5), axis=-1), call("cumprod", XC, 0),
    at_zero("cumprod", onp.array([[0.5, 0.0, 1.5, -1.2], [0.0, 0.7, -0.8, 1.1]]), 1),
    at_zero("cumprod", onp.array([1.5, -0.7, 0.0, 1.2])),
    at_zero("cumulative_prod", onp.array([1.5, -0.7, 0.0, 1.2]), include_initial=True),
    call("nancumsum", with_nans()), call("nancumsum", with_nans(), 1),
    *[call(name, x, axis=axis, include_initial=initial, argnums=(0,))
      for name, x in [("cumulative_sum", make((2, 3))),
                      ("cumulative_prod", make((2, 3), low=0.5, high=1.5)),
                      ("cumulative_prod", make((2, 3), onp.complex128))]
      for axis, initial in [(1, False), (0, True), (-1, True)]],
    call("cumulative_sum", make((4,))), call("cumulative_prod", make((4,), low=0.5, high=1.5),
                                              include_initial=True),
    call("nancumprod", with_nans(low=0.5, high=1.5)),
    call("nancumprod", with_nans(low=0.5, high=1.5), 0),
]
