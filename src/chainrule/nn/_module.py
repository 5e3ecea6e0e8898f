"""Module and Parameter: the containers of ``torch.nn``, over chainrule Tensors.

A Module registers the Parameters and Modules assigned to its attributes, as
PyTorch's does, so ``parameters()``, ``state_dict()``, ``zero_grad()`` and
``train()``/``eval()`` reach the whole tree without being told its layout.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator

import numpy as _np

from ..tensor import Tensor, no_grad
from ..tensor._graph import strip
from ..tensor._tensor import register_tensor_type

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Parameter(Tensor):
    """A Tensor that a Module registers as one of its parameters when assigned to an
    attribute; a leaf that requires grad by default, as ``torch.nn.Parameter``."""

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True) -> None:
        if data is None:
            data = _np.empty(0)
        if isinstance(data, Tensor):
            data = strip(data._value)
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


register_tensor_type(Parameter)


class Module:
    """Base class of layers and models: subclass it, assign Parameters and Modules to
    attributes in ``__init__`` (after ``super().__init__()``) and define ``forward``;
    calling the module calls ``forward``."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())

    # ------------------------------------------------------------------ registration
    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        if isinstance(value, (Parameter, Module)) and params is None:
            raise AttributeError(
                f"cannot assign {type(value).__name__} before Module.__init__() call "
                f"(call super().__init__() first in {type(self).__name__}.__init__)."
            )
        for registry, kind, what in (
            (params, Parameter, "parameter"),
            (modules, Module, "child module"),
        ):
            if isinstance(value, kind):
                self._forget(name)
                registry[name] = value
                return
            if registry is not None and name in registry:
                if value is not None:  # a registered name takes only its kind (or None)
                    raise TypeError(
                        f"cannot assign '{type(value).__name__}' as {what} '{name}' "
                        f"(chainrule.nn.{kind.__name__} or None expected)"
                    )
                registry[name] = None
                return
        object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        self.__dict__.pop(name, None)
        self._parameters.pop(name, None)
        self._modules.pop(name, None)

    def __getattr__(self, name: str):
        # Only called when normal lookup fails: registered Parameters and Modules.
        for registry in ("_parameters", "_modules"):
            members = self.__dict__.get(registry)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: '{name}' must be a Parameter or None.")
        self._forget(name)
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: '{name}' must be a Module or None.")
        self._forget(name)
        self._modules[name] = module

    register_module = add_module

    # ------------------------------------------------------------------ calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo: set | None = None, prefix: str = "") -> Iterator:
        """(name, module) for this module and every module below it, each once."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator:
        """("layer.weight", Parameter) pairs; a Parameter shared by two modules comes once."""
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, param in module._parameters.items():
                if param is not None and id(param) not in seen:
                    seen.add(id(param))
                    yield (f"{module_prefix}.{name}" if module_prefix else name), param

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def apply(self, fn: Callable[[Module], None]) -> Module:
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes and gradients
    def train(self, mode: bool = True) -> Module:
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.parameters():
            if set_to_none or param.grad is None:
                param.grad = None
            else:
                param.grad = Tensor(_np.zeros_like(param.grad.value), requires_grad=False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    # ------------------------------------------------------------------ dtypes
    def to(self, dtype) -> Module:
        """Convert every parameter (and its gradient) to ``dtype`` in place; no devices."""
        if isinstance(dtype, str):
            if dtype.split(":")[0] == "cpu":
                return self
            raise RuntimeError(f"to({dtype!r}): chainrule has no devices.")
        with no_grad():
            for param in self.parameters():
                param.data = _np.asarray(param.data).astype(dtype)
                if param.grad is not None:
                    param.grad = param.grad.to(dtype)
        return self

    def double(self) -> Module:
        return self.to(_np.float64)

    def float(self) -> Module:
        return self.to(_np.float32)

    # ------------------------------------------------------------------ state
    def state_dict(self, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """{"layer.weight": Tensor} for every parameter: copies of the values that do not
        require grad (PyTorch's share memory with the parameters), or the Parameters
        themselves with ``keep_vars=True``."""
        state = OrderedDict()
        for module_prefix, module in self.named_modules(prefix=prefix.rstrip(".")):
            for name, param in module._parameters.items():
                if param is not None:
                    key = f"{module_prefix}.{name}" if module_prefix else name
                    state[key] = param if keep_vars else Tensor(param.data, requires_grad=False)
        return state

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy the values of ``state_dict`` (Tensors or arrays) into the parameters of the
        same names; with ``strict`` every name must match both ways, as in PyTorch."""
        own = OrderedDict()
        for module_prefix, module in self.named_modules():
            for name, param in module._parameters.items():
                if param is not None:
                    own[f"{module_prefix}.{name}" if module_prefix else name] = param
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        if strict and (missing or unexpected):
            parts = []
            for what, keys in (("Missing", missing), ("Unexpected", unexpected)):
                if keys:
                    names = ", ".join(f'"{key}"' for key in keys)
                    parts.append(f"{what} key(s) in state_dict: {names}. ")
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(parts)
            )
        with no_grad():
            for key, param in own.items():
                if key not in state_dict:
                    continue
                value = state_dict[key]
                value = _np.asarray(value.detach().numpy() if isinstance(value, Tensor) else value)
                if value.shape != param.shape:
                    raise RuntimeError(
                        f"Error(s) in loading state_dict for {type(self).__name__}: size "
                        f"mismatch for {key}: copying a param with shape {value.shape}, the "
                        f"shape in current model is {param.shape}."
                    )
                param.data = value.astype(param.dtype)  # a copy: the caller's array stays
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [
            f"({name}): " + repr(module).replace("\n", "\n  ")
            for name, module in self._modules.items()
        ]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        body = "\n  ".join(([extra] if extra else []) + lines)
        return f"{type(self).__name__}(\n  {body}\n)"
