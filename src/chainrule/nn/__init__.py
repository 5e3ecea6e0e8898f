"""chainrule.nn: PyTorch's ``torch.nn`` for chainrule Tensors (a small part of it).

    from chainrule import nn, optim
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    loss = nn.MSELoss()(model(x), y)

``Module`` (parameters, state_dict, train/eval, zero_grad), ``Parameter``, the
layers ``Linear``, ``Sequential``, ``ReLU``, ``Tanh``, ``Sigmoid``, ``Dropout``,
``Identity``, ``Flatten`` and the losses ``MSELoss``, ``CrossEntropyLoss``,
``NLLLoss``, ``BCEWithLogitsLoss``. ``chainrule.nn.functional`` is
``chainrule.tensor.functional``; ``chainrule.nn.init`` fills parameters (``xavier_uniform_``,
``kaiming_normal_``, ...); ``chainrule.nn.utils`` clips gradients (``clip_grad_norm_``,
``clip_grad_value_``). See docs/tensor.md for what differs from PyTorch.
"""

from . import functional, init, utils
from ._layers import (
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Flatten,
    Identity,
    Linear,
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    Tanh,
)
from ._module import Module, Parameter

__all__ = [
    "Module", "Parameter", "Linear", "Sequential", "ReLU", "Tanh", "Sigmoid", "Dropout",
    "Identity", "Flatten", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss",
    "functional", "init", "utils",
]  # fmt: skip
