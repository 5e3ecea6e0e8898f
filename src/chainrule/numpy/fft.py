"""chainrule.numpy.fft: NumPy's discrete Fourier transforms with derivatives."""

import numpy.fft as _npfft

from .._core.tracer import primitive

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
