"""Tensor.register_hook and retain_grad, by hand and against PyTorch 2.13 (issue 35).

A hook sees the gradient with respect to its Tensor summed over every use (also uses made
before it was registered), and what it returns replaces that gradient for the rest of
the pass; retain_grad keeps a computed Tensor's gradient, after the hooks have run.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrule.numpy as cnp
from chainrule import Tensor
from chainrule.tensor import FreedGraphError

X = np.array([0.5, -1.5, 2.0])


def test_retain_grad_keeps_a_computed_tensors_gradient_and_accumulates():
    x = Tensor(X)
    y = x * 3.0
    assert not y.retains_grad
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    z = (y**2).sum()
    z.backward(retain_graph=True)
    np.testing.assert_allclose(y.grad.numpy(), 6 * X)  # dz/dy = 2y
    np.testing.assert_allclose(x.grad.numpy(), 18 * X)
    z.backward()  # a second pass adds, as for leaves
    np.testing.assert_allclose(y.grad.numpy(), 12 * X)
    np.testing.assert_allclose(x.grad.numpy(), 36 * X)
    assert not y.grad.requires_grad


def test_a_hook_sees_the_gradient_summed_over_every_use_and_replaces_it():
    x = Tensor(X)
    y = cnp.sin(x)
    early = y * 2.0  # used before the hook is registered
    seen = []
    handle = y.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10.0)
    late = y**2
    (early.sum() + late.sum()).backward(retain_graph=True)
    (total,) = seen
    np.testing.assert_allclose(total, 2.0 + 2 * np.sin(X))  # both uses
    np.testing.assert_allclose(x.grad.numpy(), 10.0 * total * np.cos(X))
    handle.remove()
    x.grad = None
    (y * 2.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.cos(X))
    assert len(seen) == 1


def test_hooks_run_in_order_then_the_retained_gradient_is_kept():
    x = Tensor(X)
    y = x * 1.0
    order = []
    y.retain_grad()
    y.register_hook(lambda g: order.append("first") or g + 1.0)
    y.register_hook(lambda g: order.append("second") or g * 2.0)
    y.register_hook(lambda g: order.append("third"))  # None: the gradient stays
    y.sum().backward()
    assert order == ["first", "second", "third"]
    np.testing.assert_allclose(y.grad.numpy(), [4.0, 4.0, 4.0])  # (1 + 1) * 2
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0, 4.0])


def test_a_leaf_hook_changes_what_is_accumulated():
    x = Tensor(X)
    calls = []
    with x.register_hook(lambda g: calls.append(1) or g * 0.5):
        (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), X)  # 0.5 * 2x
    (x * x).sum().backward()  # the handle removed the hook on leaving the block
    np.testing.assert_allclose(x.grad.numpy(), 3 * X)
    assert calls == [1]


def test_hook_on_the_output_sees_the_seed():
    x = Tensor(X)
    z = (x**2).sum()
    z.register_hook(lambda g: g * 3.0)
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * X)


def test_hooks_are_refused_or_checked_as_torch_does():
    with pytest.raises(RuntimeError, match="cannot register a hook on a Tensor that does not"):
        Tensor(X, requires_grad=False).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad"):
        Tensor(X, requires_grad=False).retain_grad()
    x = Tensor(X)
    for hook, error, message in [
        (lambda g: g[:1], RuntimeError, "changed the size of value"),
        (lambda g: g.float(), RuntimeError, "changed the type of value"),
        (lambda g: 3.0, TypeError, "expected Tensor, but hook '<lambda>' returned 'float'"),
        (lambda g: g.numpy(), TypeError, "returned 'ndarray'"),
    ]:
        y = x * 2.0
        y.register_hook(hook)
        with pytest.raises(error, match=message):
            y.sum().backward()


def test_a_hooked_pass_frees_the_graph_unless_retained():
    x = Tensor(X)
    y = x * 2.0
    y.register_hook(lambda g: g)
    z = y.sum()
    z.backward()
    with pytest.raises(FreedGraphError):
        z.backward()
    x2 = Tensor(X)
    y2 = x2 * 2.0
    y2.register_hook(lambda g: g * 2.0)
    z2 = y2.sum()
    z2.backward(retain_graph=True)
    z2.backward()
    np.testing.assert_allclose(x2.grad.numpy(), [8.0, 8.0, 8.0])


def test_create_graph_with_hooks_gives_the_first_gradient_and_refuses_a_pass_through_it():
    x = Tensor(X)
    y = x.tanh()
    y.register_hook(lambda g: g * 2.0)
    y.sum().backward(create_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), 2 * (1 - np.tanh(X) ** 2))  # recorded
    assert x.grad.requires_grad
    # the derivative of tanh reads tanh's value: a second pass reaches y, whose hook
    # PyTorch would run again on a gradient formed otherwise here
    with pytest.raises(RuntimeError, match="past a Tensor with a hook"):
        x.grad.sum().backward()
    # the derivative of x**3 reads x only: the second pass never reaches y (nor in torch)
    x = Tensor(X)
    y = x**3
    y.register_hook(lambda g: g * 2.0)
    y.sum().backward(create_graph=True)
    g = x.grad
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 12 * X)  # d/dx sum(2 * 3x^2)
    # a hook on a leaf does not stand in the way of the second pass
    w = Tensor(X)
    w.register_hook(lambda g: g * 2.0)
    (w**3).sum().backward(create_graph=True)
    g = w.grad
    w.grad = None
    g.sum().backward()  # d/dw sum(2 * 3w^2) = 12 w, through the hook again: 24 w
    np.testing.assert_allclose(w.grad.numpy(), 24 * X)


# ----------------------------------------------------------------------------- torch


def _scenario(lib: str, create_graph: bool) -> list[np.ndarray]:
    """The same hooks in chainrule and torch; the gradients and what the hooks saw."""
    if lib == "torch":
        import torch

        def T(v):
            return torch.tensor(v, dtype=torch.float64, requires_grad=True)
    else:
        T = Tensor
    x, w = T(X), T([1.0, 2.0, 3.0])
    y = (x * w).tanh()
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.detach().numpy().copy()) or g * 3.0)
    u = y * y
    u.register_hook(lambda g: g + 1.0)
    w.register_hook(lambda g: g / 2)
    ((u * x).sum() + y.sum()).backward(create_graph=create_graph)
    grads = [t.grad.detach().numpy().copy() for t in (x, w, y)]
    if lib == "torch":  # torch warns that create_graph=True makes a cycle; break it
        x.grad = w.grad = y.grad = None
    return grads + seen


@pytest.mark.parametrize("create_graph", [False, True])
def test_hooks_and_retained_gradients_match_torch(create_graph):
    pytest.importorskip("torch", reason="the comparison with PyTorch needs torch")
    ours, theirs = _scenario("chainrule", create_graph), _scenario("torch", create_graph)
    assert len(ours) == len(theirs) == 4
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_a_hooks_own_operations_are_recorded_only_under_create_graph():
    w = Tensor(2.0)
    x = Tensor(X)
    y = x * 3.0
    y.register_hook(lambda g: g * w)  # w requires grad: PyTorch runs hooks without recording
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 6.0))
    assert not x.grad.requires_grad and w.grad is None
    x2 = Tensor(X)
    y2 = x2 * 3.0
    y2.register_hook(lambda g: g * w)
    y2.sum().backward(create_graph=True)
    assert x2.grad.requires_grad
    x2.grad.sum().backward()  # d/dw sum(3 w) = 9
    assert w.grad.item() == 9.0
