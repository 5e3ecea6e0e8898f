"""Specs for elementwise functions: unary over shapes and dtypes, binary over broadcasting pairs.

Domains keep each function smooth at the test points (away from poles, branch cuts,
kinks and ties); what happens at ties is tested by hand in tests/test_ties.py.
"""

import numpy as onp

import chainrule.numpy as np

from . import ALL_FLOAT, BROADCAST_PAIRS, Case, binary, make, unary

COMPLEX = [onp.complex128, onp.complex64]
FLOAT_AND_COMPLEX = ALL_FLOAT + COMPLEX
FEW = [(), (2, 3)]  # shapes for aliases and extra dtypes: the rule is shared, keep it quick


def same(name, low=-2.0, high=2.0, dtypes=FLOAT_AND_COMPLEX, shapes=(((), (3,), (2, 3))),
         alias=None, **kwargs):
    """unary() for a function whose chainrule and NumPy names are the same."""
    return unary(alias or name, getattr(np, name), getattr(onp, name), low, high,
                 shapes=list(shapes), dtypes=dtypes, **kwargs)


def same2(name, low=-2.0, high=2.0, dtypes=(onp.float64,), pairs=BROADCAST_PAIRS, **kwargs):
    return binary(name, getattr(np, name), getattr(onp, name), low, high, pairs=pairs,
                  dtypes=list(dtypes), **kwargs)


CASES = [
    # ------------------------------------------------------------------ arithmetic
    *same2("add", dtypes=(onp.float64, onp.complex128)),
    *same2("subtract", dtypes=(onp.float64, onp.complex128)),
    *same2("multiply", dtypes=(onp.float64, onp.complex128)),
    *same2("divide", low2=0.5, high2=2.0, dtypes=(onp.float64, onp.complex128)),
    *same2("true_divide", low2=0.5, high2=2.0, pairs=[((2, 3), (3,))]),
    *same2("add", pairs=[((2, 3), (3,))], dtypes=(onp.float32, onp.complex64)),
    *same2("multiply", pairs=[((2, 1), (1, 3))], dtypes=(onp.float32, onp.complex64)),
    *[case for name in ("subtract", "divide", "power", "maximum", "arctan2", "hypot", "logaddexp")
      for case in same2(name, low=0.5, high=2.0, pairs=[((2, 3), (3,))], dtypes=(onp.float32,))],
    *same2("mod", low=0.1, high=0.9, low2=1.0, high2=2.0),
    *same2("remainder", low=2.1, high=2.9, low2=1.0, high2=1.5, pairs=[((2, 3), (3,))]),
    # divmod's two answers: the quotient (no derivative) and the remainder (as remainder's)
    *binary("divmod", lambda x, y: np.divmod(x, y)[0] + 2 * np.divmod(x, y)[1],
            lambda x, y: onp.divmod(x, y)[0] + 2 * onp.divmod(x, y)[1], 2.1, 2.9,
            low2=1.0, high2=1.5, pairs=[((2, 3), (3,))], dtypes=[onp.float64]),
    *same2("fmod", low=-2.9, high=-2.1, low2=1.0, high2=1.5),
    *same("negative"),
    *same("positive", shapes=FEW),
    *same("reciprocal", low=0.5, high=2.0),
    # ------------------------------------------------------------------ powers, exp, log
    *same2("power", low=0.5, high=2.0, dtypes=(onp.float64, onp.complex128)),
    *same2("pow", low=0.5, high=2.0, pairs=[((2, 3), (3,))]),
    *same2("float_power", low=0.5, high=2.0),
    *same("square"),
    *same("sqrt", low=0.2, high=3.0),
    *same("cbrt", low=0.2, high=3.0, dtypes=ALL_FLOAT),
    *same("cbrt", low=-3.0, high=-0.2, dtypes=[onp.float64], shapes=FEW),
    *same("exp"),
    *same("exp2"),
    *same("expm1"),
    *same("log", low=0.2, high=3.0),
    *same("log2", low=0.2, high=3.0),
    *same("log10", low=0.2, high=3.0),
    *same("log1p", low=-0.5, high=2.0),
    *same2("logaddexp"),
    *same2("logaddexp2"),
    # ------------------------------------------------------------------ trigonometric
    *same("sin"), *same("cos"),
    *same("tan", low=-1.2, high=1.2),
    *same("arcsin", low=-0.9, high=0.9, dtypes=ALL_FLOAT),
    *same("arccos", low=-0.9, high=0.9, dtypes=ALL_FLOAT),
    *same("arctan"),
    *same("arcsin", low=0.2, high=0.8, dtypes=COMPLEX, shapes=FEW),
    *same("arccos", low=0.2, high=0.8, dtypes=COMPLEX, shapes=FEW),
    *same("asin", low=-0.9, high=0.9, dtypes=[onp.float64], shapes=FEW),
    *same("acos", low=-0.9, high=0.9, dtypes=[onp.float64], shapes=FEW),
    *same("atan", dtypes=[onp.float64], shapes=FEW),
    *same2("arctan2", low=0.3, high=2.0),
    *same2("arctan2", low=-2.0, high=-0.3, pairs=[((2, 3), ())]),
    *same2("atan2", low=0.3, high=2.0, pairs=[((2, 3), (3,))]),
    *same2("hypot", low=0.3, high=2.0),
    *same("sinc", dtypes=ALL_FLOAT),
    *same("deg2rad", dtypes=ALL_FLOAT), *same("rad2deg", dtypes=ALL_FLOAT),
    *same("radians", dtypes=ALL_FLOAT, shapes=FEW), *same("degrees", dtypes=ALL_FLOAT, shapes=FEW),
    # ------------------------------------------------------------------ hyperbolic
    *same("sinh"), *same("cosh"), *same("tanh"),
    *same("arcsinh"),
    *same("arccosh", low=1.2, high=3.0),
    *same("arctanh", low=-0.8, high=0.8),
    *same("asinh", dtypes=[onp.float64], shapes=FEW),
    *same("acosh", low=1.2, high=3.0, dtypes=[onp.float64], shapes=FEW),
    *same("atanh", low=-0.8, high=0.8, dtypes=[onp.float64], shapes=FEW),
    # ------------------------------------------------------------------ complex parts
    *same("absolute", low=0.1, high=2.0),
    *same("absolute", low=-2.0, high=-0.1, dtypes=[onp.float64], shapes=FEW),
    *same("abs", low=0.1, high=2.0, shapes=FEW),
    *same("fabs", low=-2.0, high=-0.1, dtypes=ALL_FLOAT),
    *same("fabs", low=0.1, high=2.0, dtypes=[onp.float64], shapes=FEW),
    *same("conjugate"), *same("conj", shapes=FEW),
    *same("real"), *same("imag"),
    *same("angle", low=0.1, high=2.0, dtypes=COMPLEX),
    *same("angle", low=-2.0, high=-0.1, dtypes=[onp.complex128], shapes=FEW),
    *unary("angle", lambda z: np.angle(z, True), lambda z: onp.angle(z, True),
           low=0.1, high=2.0, dtypes=[onp.complex128], shapes=FEW),
    *same("angle", dtypes=[onp.float64], shapes=FEW, order=1),  # constant: no 2nd order
    *same("real_if_close", dtypes=FLOAT_AND_COMPLEX),
    # a tiny imaginary part is dropped: primal only, a finite step would keep it
    Case("real_if_close", np.real_if_close, (make((2, 3)) + 1e-18j,), argnums=(),
         ref=onp.real_if_close),
    *same2("copysign", low=0.2, high=2.0, argnums=(0,)),
    *same2("copysign", low=-2.0, high=-0.2, argnums=(0,), pairs=[((2, 3), (3,))]),
    # ------------------------------------------------------------------ Python scalars, ints
    Case("sin", np.sin, (1.3,), ref=onp.sin), Case("exp", np.exp, (-0.4,), ref=onp.exp),
    Case("add", np.add, (1.5, make((3,))), argnums=(0, 1), ref=onp.add),
    Case("multiply", np.multiply, (make((2, 3)), 2.5), argnums=(0, 1), ref=onp.multiply),
    Case("divide", np.divide, (0.7, make((3,), low=0.5, high=2.0)), argnums=(0, 1),
         ref=onp.divide),
    Case("power", np.power, (make((2, 3)), 3), ref=onp.power, label="int-exponent"),
    Case("power", np.power, (make((2, 3)), 0), ref=onp.power, label="zero-exponent"),
    Case("power", np.power, (2, make((3,))), argnums=(1,), ref=onp.power, label="int-base"),
    Case("multiply", np.multiply, (make((2, 3)), onp.arange(3)), ref=onp.multiply),
    Case("maximum", np.maximum, (make((2, 3)), 0), ref=onp.maximum),
    Case("arctan2", np.arctan2, (make((3,), low=0.3, high=2.0), 1.5), ref=onp.arctan2),
    Case("sin", np.sin, (make((0, 3)),), ref=onp.sin, label="empty"),
    Case("multiply", np.multiply, (make((0, 3)), make((3,))), argnums=(0, 1),
         ref=onp.multiply, label="empty"),
    # ------------------------------------------------------------------ selection
    *same2("maximum"), *same2("minimum"), *same2("fmax"), *same2("fmin"),
    Case("fmax", np.fmax, (make((3,), seed=1), onp.array([onp.nan, 0.0, onp.nan])),
         ref=onp.fmax),
    Case("fmin", np.fmin, (onp.array([onp.nan, 1.0, 5.0]), make((3,), seed=2)), argnums=(1,),
         ref=onp.fmin),
    Case("clip", np.clip, (make((2, 3)), -0.5, 0.7), ref=onp.clip),
    Case("clip", np.clip, (make((2, 3)), make((3,), low=-1, high=0, seed=3),
                           make((2, 1), low=0, high=1, seed=4)), argnums=(0, 1, 2), ref=onp.clip),
    Case("clip", np.clip, (make((2, 3)), None, 0.5), ref=onp.clip),
    Case("clip", np.clip, (make((2, 3)),), dict(min=-0.5), ref=onp.clip, label="min="),
    Case("clip", np.clip, (make((2, 3), onp.float32), -0.5, 0.7), ref=onp.clip),
    Case("nan_to_num", np.nan_to_num, (make((2, 3)),), ref=onp.nan_to_num),
    Case("nan_to_num", np.nan_to_num, (onp.array([1.5, onp.nan, -onp.inf, 0.25]),),
         ref=onp.nan_to_num, label="nonfinite"),
    Case("nan_to_num", np.nan_to_num, (make((3,), onp.complex128),), ref=onp.nan_to_num),
    Case("full_like", np.full_like, (make((2, 3)), 1.5), argnums=(1,), ref=onp.full_like),
    Case("full_like", np.full_like, (make((2, 3)), 1.5), order=1, ref=onp.full_like),  # constant
    Case("full_like", np.full_like, (make((2, 3)), make((3,))), argnums=(1,), ref=onp.full_like),
    Case("full_like", np.full_like, (make((2, 3), onp.float32), make((), onp.float32)),
         argnums=(1,), ref=onp.full_like),
    Case("where", np.where, (make((2, 3)) > 0, make((2, 3), seed=1), make((3,), seed=2)),
         argnums=(1, 2), ref=onp.where),
    Case("where", np.where, (make((2, 1)) > 0, make((), seed=1), make((3,), seed=2)),
         argnums=(1, 2), ref=onp.where),
    Case("where", np.where, (make((3,)) > 0, make((3,), onp.complex128, seed=1), 0.0),
         argnums=(1,), ref=onp.where),
]
