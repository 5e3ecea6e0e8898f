"""``chainrule.nn.functional`` (as ``torch.nn.functional``): the same module as
``chainrule.tensor.functional``, under the path PyTorch users import."""

from ..tensor.functional import *  # noqa: F403
from ..tensor.functional import __all__  # noqa: F401
