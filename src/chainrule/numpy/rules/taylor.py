"""Taylor rules (``deftaylor``) of the NumPy primitives not yet beside their other columns
(the elementwise ones are in ``elementwise.py``; the series algebra and rule factories in
``chainrule.numpy.taylor_patterns``).

- linear: the answer's coefficient j is the JVP of the arguments' coefficients j. The
  primitives declared linear where their rules are (``_helpers.linear``, ``def_linear``)
  get theirs there; this file adds the other linear ones.

Every other primitive with a JVP nests its JVP (``nested_jvp_series``): exact, O(2^k).
"""

from __future__ import annotations

from ..._core.containers import sequence_take, sequence_untake
from ..._core.rules import deftaylor, deftaylor_linear
from ..._core.taylor import make_multilinear_taylor
from .. import numpy_wrapper as anp

# ----------------------------------------------------------------------------- linear
# Linear, or piecewise linear where the piece is chosen by the value alone (abs, maximum,
# sort, clip, where ...): the JVP at the value maps every coefficient.
_PIECEWISE_LINEAR = (
    "sort", "partition", "append",
    "atleast_1d", "atleast_2d", "atleast_3d", "compress", "delete", "diag", "diagflat",
    "diagonal", "diff", "ediff1d", "extract", "flip", "fliplr", "flipud", "insert", "pad",
    "repeat", "roll", "rollaxis", "rot90", "take", "take_along_axis", "tile", "tril", "triu",
    "full", "linspace",
)
for _name in _PIECEWISE_LINEAR:
    deftaylor_linear(getattr(anp, _name))


deftaylor_linear(sequence_take)
deftaylor_linear(sequence_untake)
for _name in ("convolve", "correlate", "trapezoid"):
    deftaylor(getattr(anp, _name), make_multilinear_taylor(getattr(anp, _name)))
for _fun in (anp.concatenate_args, anp.stack_args):
    deftaylor_linear(_fun)
