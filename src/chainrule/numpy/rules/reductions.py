"""Rules for reductions and scans."""

from __future__ import annotations

from .. import numpy_wrapper as anp
from ._helpers import expand_to, linear, match_dtype, reduced_count, shape_of

# fmt: off
# ----------------------------------------------------------------------------- sums and means
linear(anp.sum,  lambda g, ans, x, axis=None, dtype=None, out=None, keepdims=False, **k:
                     match_dtype(expand_to(g, x, axis, keepdims), x))
linear(anp.mean, lambda g, ans, x, axis=None, dtype=None, out=None, keepdims=False, **k:
                     match_dtype(expand_to(g, x, axis, keepdims), x) / reduced_count(shape_of(x), axis))
# fmt: on
