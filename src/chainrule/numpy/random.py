"""chainrule.numpy.random: NumPy's random module (sampling has no derivative).

Every public name of ``numpy.random`` is here, as in autograd, not only those in its
``__all__`` (``get_bit_generator``, ``set_bit_generator``, ...).
"""

import numpy.random as _npr

from . import _namespace

_namespace.install(globals(), _npr)
