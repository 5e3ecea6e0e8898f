"""chainrule.numpy.fft: NumPy's discrete Fourier transforms with derivatives.

Every transform is linear (over the reals), so its JVP is the transform of the
tangent and its VJP the transposed transform (rules in ``rules/fft.py``).
"""

import numpy.fft as _npfft

from . import _namespace

DIFFERENTIABLE = """
    fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft
    fftshift ifftshift
""".split()

# NumPy's own fft functions, called on traced values, dispatch to the primitives.
_namespace.install(globals(), _npfft, _namespace.primitives(_npfft, DIFFERENTIABLE),
                   dispatch=DIFFERENTIABLE)
