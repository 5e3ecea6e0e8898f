"""Optimizers for Tensors, with PyTorch's signatures: ``SGD`` (momentum) and ``Adam``;
learning-rate schedules in ``chainrule.optim.lr_scheduler``.

``params`` is an iterable of leaf Tensors that require grad, or of dicts
``{"params": [...], **options}`` (parameter groups with their own options).
``step()`` updates each parameter that has a ``.grad`` in place (it stays the
same leaf Tensor); ``zero_grad()`` clears the gradients. The updates are plain
NumPy arithmetic on the values: they are not recorded. ``state_dict()`` and
``load_state_dict()`` save and restore the options and the per-parameter state in
PyTorch's layout (``{"state": {index: {...}}, "param_groups": [{..., "params":
[indices]}]}``), so ``chainrule.save(optimizer.state_dict(), path)`` resumes a run.
"""

from . import lr_scheduler
from ._optimizers import SGD, Adam, Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "lr_scheduler"]
