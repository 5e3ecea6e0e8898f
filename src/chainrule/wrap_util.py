"""autograd's ``wrap_util`` names, for code that imports them: ``unary_to_nary`` (lifting a
transform of one argument to ``argnum``) and ``subvals``."""

from ._core.replay import subvals
from ._transforms.options import unary_to_nary

__all__ = ["subvals", "unary_to_nary"]
