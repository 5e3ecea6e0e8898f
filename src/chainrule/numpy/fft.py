"""chainrule.numpy.fft: NumPy's discrete Fourier transforms with derivatives.

Every transform is linear (over the reals), so its JVP is the transform of the
tangent and its VJP the transposed transform (rules in ``rules/fft.py``).
"""

import numpy.fft as _npfft

from .._core.tracer import primitive
from . import numpy_wrapper as _anp

DIFFERENTIABLE = """
    fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft
    fftshift ifftshift
""".split()

for _name in dir(_npfft):
    if not _name.startswith("_"):
        globals()[_name] = getattr(_npfft, _name)
for _name in DIFFERENTIABLE:
    if hasattr(_npfft, _name):
        globals()[_name] = primitive(getattr(_npfft, _name))
        # NumPy's own fft functions, called on traced values, dispatch here.
        _anp.raw_to_wrapped[getattr(_npfft, _name)] = globals()[_name]
