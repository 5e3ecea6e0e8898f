"""chainrule.numpy: NumPy with derivatives. ``import chainrule.numpy as np``.

Every NumPy name is here. The differentiable ones are chainrule primitives with a
VJP and a JVP rule (see ``chainrule.numpy.rules``); the rest are NumPy's own.
"""

from . import numpy_wrapper as _wrapper

_wrapper.install(globals())

from . import fft, linalg, numpy_boxes, numpy_vspaces, random  # noqa: E402  (registers boxes and spaces)  # noqa: E402
from .numpy_boxes import ArrayBox  # noqa: E402
from .rules import contraction, elementwise, reductions, shape  # noqa: E402

del contraction, elementwise, reductions, shape
