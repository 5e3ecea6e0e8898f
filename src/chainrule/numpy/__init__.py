"""chainrule.numpy: NumPy with derivatives. ``import chainrule.numpy as np``.

Every NumPy name is here. The differentiable ones are chainrule primitives with a
VJP and a JVP rule (see ``chainrule.numpy.rules``); the rest are NumPy's own.
"""

from . import numpy_wrapper as _wrapper

_wrapper.install(globals())

# Importing these registers the boxes, vector spaces and rule tables.
from . import duck_arrays, fft, linalg, numpy_boxes, numpy_vspaces, random  # noqa: E402
from .numpy_boxes import ArrayBox  # noqa: E402
from .rules import contraction as _contraction_rules  # noqa: E402
from .rules import elementwise as _elementwise_rules  # noqa: E402
from .rules import reductions as _reductions_rules  # noqa: E402
from .rules import shape as _shape_rules  # noqa: E402

__version__ = _wrapper._np.__version__
