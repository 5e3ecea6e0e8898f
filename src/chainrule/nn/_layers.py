"""Layers and losses of ``torch.nn`` with PyTorch's signatures and default initialisation.

Random numbers (initial weights, dropout masks) come from NumPy's global generator,
so ``numpy.random.seed(0)`` makes a run repeatable (PyTorch: ``torch.manual_seed``).
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as _np

from ..tensor import Tensor
from ..tensor import functional as F
from . import init
from ._module import Module, Parameter


class Linear(Module):
    """y = x Wᵀ + b, W of shape (out_features, in_features). Weight and bias start
    uniform on ±1/sqrt(in_features), as PyTorch's: ``init.kaiming_uniform_(weight,
    a=sqrt(5))`` and ``init.uniform_(bias, -bound, bound)``."""

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__()
        if device not in (None, "cpu"):
            raise RuntimeError(f"Linear(device={device!r}): chainrule has no devices.")
        self.in_features, self.out_features = in_features, out_features
        dtype = _np.float64 if dtype is None else dtype
        self.weight = Parameter(_np.empty((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(_np.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Sequential(Module):
    """Modules applied one after another; ``Sequential(a, b)`` names them "0", "1", and
    ``Sequential(OrderedDict(name=module, ...))`` by the given names."""

    def __init__(self, *modules) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(modules):
                self.add_module(str(i), module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, index):
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return modules[index]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self


class _Activation(Module):
    function = staticmethod(F.relu)

    def forward(self, input: Tensor) -> Tensor:
        return self.function(input)


class ReLU(_Activation):
    function = staticmethod(F.relu)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return input.relu_() if self.inplace else F.relu(input)


class Tanh(_Activation):
    function = staticmethod(F.tanh)


class Sigmoid(_Activation):
    function = staticmethod(F.sigmoid)


class Identity(Module):
    def forward(self, input):
        return input


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)


class Dropout(Module):
    """In training, zero each entry with probability p and scale the rest by 1/(1-p);
    in eval mode, the identity."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return input
        if self.p == 1.0:
            return input * 0.0
        keep = _np.random.random_sample(input.shape) >= self.p
        return input * (keep / (1.0 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction


class MSELoss(_Loss):
    def forward(self, input: Tensor, target) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    def __init__(
        self,
        weight=None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target) -> Tensor:
        return F.cross_entropy(
            input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing
        )


class NLLLoss(_Loss):
    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, target) -> Tensor:
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None) -> None:
        super().__init__(reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input: Tensor, target) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, self.reduction, self.pos_weight
        )
