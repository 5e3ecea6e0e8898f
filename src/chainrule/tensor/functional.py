"""Functions on Tensors with the names, signatures and meanings of ``torch.nn.functional``.

    from chainrule.tensor import functional as F
    loss = F.cross_entropy(logits, labels)

Each function is built from chainrule.numpy primitives, so its derivatives (of any
order, in both modes) come from their rules. The forms are the numerically stable
ones: softmax and log_softmax shift by the maximum, the logistic losses use
``logaddexp``.
"""

from __future__ import annotations

import numpy as _np

from .._core.tracer import getval
from ..numpy import numpy_wrapper as anp
from ._graph import keep_output
from ._tensor import Tensor

__all__ = [
    "relu",
    "sigmoid",
    "tanh",
    "softmax",
    "log_softmax",
    "logsumexp",
    "linear",
    "mse_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy_with_logits",
]

_REDUCTIONS = ("mean", "sum", "none")


def _keeps_output(out: Tensor) -> Tensor:
    keep_output(out._value)  # PyTorch saves this output: in-place changes to it are refused
    return out


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x, requires_grad=False)


def _raw(x):
    """The plain NumPy value of ``x`` (for masks and shifts that carry no derivative)."""
    return getval(x._value) if isinstance(x, Tensor) else _np.asarray(x)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); the derivative at 0 is 0, as in PyTorch."""
    if inplace:
        raise NotImplementedError("relu(inplace=True): use input.relu_() or relu(input).")
    return _keeps_output(anp.where(_raw(input) > 0, _tensor(input), 0.0))


def sigmoid(input: Tensor) -> Tensor:
    # 1/(1+exp(-x)) overflows in exp for large negative x; this form never does.
    return _keeps_output(0.5 * (anp.tanh(0.5 * _tensor(input)) + 1.0))


def tanh(input: Tensor) -> Tensor:
    return anp.tanh(_tensor(input))


def _shift(x: Tensor, dim: int):
    """The maximum along ``dim`` as a constant (finite where the maximum is not)."""
    top = _np.max(_raw(x), axis=dim, keepdims=True)
    return _np.where(_np.isfinite(top), top, 0.0)


def _dim_of(input: Tensor, dim: int | None, name: str) -> int:
    if dim is None:
        # PyTorch's implicit choice (deprecated there): dim 0 for 0-, 1- and 3-D inputs.
        raise TypeError(
            f"{name}() needs dim= (the dimension to normalise over), e.g. "
            f"{name}(x, dim=-1) or dim=1 for a batch of rows."
        )
    return dim


def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) along ``dim``, shifted by the maximum so that it never overflows."""
    x = _tensor(input)
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    top = _np.max(_raw(x), axis=dims, keepdims=True)
    top = _np.where(_np.isfinite(top), top, 0.0)
    out = anp.log(anp.sum(anp.exp(x - top), axis=dims, keepdims=True)) + top
    return out if keepdim else anp.squeeze(out, axis=dims)


def log_softmax(input: Tensor, dim: int | None = None) -> Tensor:
    x = _tensor(input)
    dim = _dim_of(x, dim, "log_softmax")
    shifted = x - _shift(x, dim)
    return _keeps_output(shifted - anp.log(anp.sum(anp.exp(shifted), axis=dim, keepdims=True)))


def softmax(input: Tensor, dim: int | None = None) -> Tensor:
    x = _tensor(input)
    dim = _dim_of(x, dim, "softmax")
    e = anp.exp(x - _shift(x, dim))
    return _keeps_output(e / anp.sum(e, axis=dim, keepdims=True))


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias, weight of shape (out_features, in_features)."""
    out = anp.matmul(_tensor(input), anp.swapaxes(_tensor(weight), -1, -2))
    return out if bias is None else out + bias


def _reduce(loss: Tensor, reduction: str, name: str) -> Tensor:
    if reduction == "mean":
        return anp.mean(loss)
    if reduction == "sum":
        return anp.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be one of {_REDUCTIONS}, not {reduction!r}.")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    if _np.shape(_raw(input)) != _np.shape(_raw(target)):
        # PyTorch warns and broadcasts; a broadcast loss is almost always a shape bug.
        raise ValueError(
            f"mse_loss: input shape {_np.shape(_raw(input))} and target shape "
            f"{_np.shape(_raw(target))} differ; reshape one of them."
        )
    diff = _tensor(input) - target
    return _reduce(diff * diff, reduction, "mse_loss")


def nll_loss(
    input: Tensor, target, weight=None, ignore_index: int = -100, reduction: str = "mean"
) -> Tensor:
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``input``
    of shape (C,), (N, C) or (N, C, d1, ...); the class dim is 1 (0 for a single sample)."""
    logp = _tensor(input)
    labels = _np.asarray(_raw(target))
    if labels.dtype.kind not in "iu":
        raise TypeError(
            f"nll_loss: target holds class indices, an integer array; got dtype "
            f"{labels.dtype}. (Class probabilities go to cross_entropy.)"
        )
    class_dim = 0 if logp.ndim == 1 else 1
    classes = logp.shape[class_dim]
    valid = labels != ignore_index
    if _np.any((labels[valid] < 0) | (labels[valid] >= classes)):
        raise IndexError(f"nll_loss: target has a class index outside [0, {classes}).")
    # A one-hot mask of the targets along the class dim (zero where ignored).
    shape = [1] * logp.ndim
    shape[class_dim] = classes
    onehot = _np.expand_dims(labels, class_dim) == _np.arange(classes).reshape(shape)
    w = _np.ones(classes) if weight is None else _np.asarray(_raw(weight), dtype=float)
    sample_w = _np.where(valid, w[_np.where(valid, labels, 0)], 0.0)
    picked = anp.sum(anp.where(onehot, logp, 0.0), axis=class_dim)
    loss = -picked * sample_w
    if reduction == "mean":
        return anp.sum(loss) / _np.sum(sample_w)
    return _reduce(loss, reduction, "nll_loss")


def cross_entropy(
    input: Tensor,
    target,
    weight=None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """log_softmax over the class dim, then nll_loss of class indices; a float ``target`` of
    the input's shape holds class probabilities instead."""
    logits = _tensor(input)
    class_dim = 0 if logits.ndim == 1 else 1
    logp = log_softmax(logits, dim=class_dim)
    labels = _raw(target)
    if _np.asarray(labels).dtype.kind in "fc":
        probs = _tensor(target)
        if label_smoothing:
            probs = probs * (1 - label_smoothing) + label_smoothing / logits.shape[class_dim]
        if weight is not None:
            shape = [1] * logits.ndim
            shape[class_dim] = -1
            logp = logp * _np.reshape(_raw(weight), shape)
        return _reduce(-anp.sum(logp * probs, axis=class_dim), reduction, "cross_entropy")
    if label_smoothing:
        raise NotImplementedError(
            "cross_entropy: label_smoothing with class-index targets is not implemented; pass "
            "smoothed class probabilities as the target instead."
        )
    return nll_loss(logp, target, weight, ignore_index, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor, target, weight=None, reduction: str = "mean", pos_weight=None
) -> Tensor:
    """-[p t log σ(x) + (1-t) log(1-σ(x))] from logits x, with -log σ(x) = logaddexp(0, -x):
    exact for logits of any size."""
    x = _tensor(input)
    if _np.shape(_raw(input)) != _np.shape(_raw(target)):
        raise ValueError(
            f"binary_cross_entropy_with_logits: target shape "
            f"{_np.shape(_raw(target))} differs from input shape {x.shape}."
        )
    softplus_neg = anp.logaddexp(0.0, -x)  # -log σ(x)
    if pos_weight is None:
        loss = (1 - target) * x + softplus_neg
    else:
        loss = (1 - target) * x + (1 + (pos_weight - 1) * target) * softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")
