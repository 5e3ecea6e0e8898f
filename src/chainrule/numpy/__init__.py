"""chainrule.numpy: NumPy with derivatives. ``import chainrule.numpy as np``.

Every NumPy name is here. The differentiable ones are chainrule primitives with a
VJP and a JVP rule (see ``chainrule.numpy.rules``); the rest are NumPy's own.
"""

# The wrappers first, then the boxes, vector spaces and rule tables that importing
# registers: a rule table imports the wrappers it gives rules to, never the reverse.
from . import batched, buffers, duck_arrays, fft, linalg, numpy_boxes, numpy_vspaces, random
from . import numpy_wrapper as _anp
from .numpy_boxes import ArrayBox
from .rules import contraction as _contraction_rules
from .rules import elementwise as _elementwise_rules
from .rules import fft as _fft_rules
from .rules import linalg as _linalg_rules
from .rules import reductions as _reductions_rules
from .rules import shape as _shape_rules

_anp.install(globals())
buffers.install(globals())  # constructors whose arrays take traced writes under a trace

__version__ = _anp._np.__version__
