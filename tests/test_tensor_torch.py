"""Tensor gradients (first and second order) and optimizer steps against PyTorch's.

Skipped only where torch is not installed (``pip install torch==2.13.0``; CI installs it).
"""

import numpy as np
import pytest

import chainrule.numpy as cnp
from chainrule import Tensor, optim

torch = pytest.importorskip("torch")

# Each case: (function of the namespace `m` and the inputs, input arrays). The same code
# runs with m = chainrule.numpy on chainrule Tensors and with m = torch on torch tensors.
CASES = {
    "seed_product": (lambda m, x, y: x * x + x * y, [3.0, 10.0]),
    "seed_sums": (lambda m, a, b: (a + b) * (b + 1), [2.0, 3.0]),
    "log_sin": (lambda m, x, y: m.log(x) + x * y + m.sin(y), [2.0, 5.0]),
    "tanh_exp": (lambda m, x, y: (m.tanh(x * y) * m.exp(-x)).sum(), [[0.3, -1.2], [1.5, 0.7]]),
    "division_pow": (lambda m, x, y: (x / (1 + y**2) + x**3).sum(), [[0.5, 2.0], [-1.0, 3.0]]),
    "matmul": (lambda m, a, b: m.tanh(a @ b).sum(),
               [np.arange(6.0).reshape(2, 3) / 5, np.linspace(-1, 1, 12).reshape(3, 4)]),
    "broadcast": (lambda m, a, b: (a * b + b).mean(), [np.ones((3, 2)) * 0.5, [1.0, -2.0]]),
    "index_sqrt": (lambda m, x, y: m.sqrt(x[1:] * x[1:] + y).sum(), [[1.0, 2.0, 3.0], 0.5]),
}


@pytest.mark.parametrize("name", CASES)
def test_gradients_match_torch(name):
    fun, inputs = CASES[name]
    arrays = [np.asarray(v, dtype=np.float64) for v in inputs]
    ours = [Tensor(a) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fun(cnp, *ours)
    ref = fun(torch, *theirs)
    out.backward()
    ref.backward()
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-12)
    for t, r in zip(ours, theirs):
        np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["log_sin", "tanh_exp", "division_pow", "matmul"])
def test_second_order_matches_torch(name):
    fun, inputs = CASES[name]
    arrays = [np.asarray(v, dtype=np.float64) for v in inputs]
    ours = [Tensor(a) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    fun(cnp, *ours).backward(create_graph=True)
    (g_ref,) = torch.autograd.grad(fun(torch, *theirs), theirs[0], create_graph=True)
    g = ours[0].grad
    for t in ours:
        t.grad = None
    (g * g).sum().backward()
    (g_ref * g_ref).sum().backward()
    for t, r in zip(ours, theirs):
        np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make", [
    (lambda p: optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
    (lambda p: optim.Adam(p, lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01),
     lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01)),
])
def test_optimizer_trajectories_match_torch(make):
    start = np.array([1.5, -0.5, 2.0])
    ours, theirs = Tensor(start), torch.tensor(start, requires_grad=True)
    opt, opt_ref = make[0]([ours]), make[1]([theirs])
    for _ in range(20):
        for o, p, m in [(opt, ours, cnp), (opt_ref, theirs, torch)]:
            o.zero_grad()
            (m.sin(p) * p * p).sum().backward()
            o.step()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10)
