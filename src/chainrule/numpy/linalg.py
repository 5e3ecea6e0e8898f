"""chainrule.numpy.linalg: NumPy's linear algebra with derivatives."""

import numpy.linalg as _npla

from .._core.tracer import primitive

DIFFERENTIABLE = """
    det slogdet inv pinv solve cholesky eigh eig eigvals eigvalsh svd norm qr lstsq
    matrix_power multi_dot tensorsolve tensorinv matrix_norm vector_norm matrix_transpose
""".split()

for _name in dir(_npla):
    if not _name.startswith("_"):
        globals()[_name] = getattr(_npla, _name)
for _name in DIFFERENTIABLE:
    if hasattr(_npla, _name):
        globals()[_name] = primitive(getattr(_npla, _name))
