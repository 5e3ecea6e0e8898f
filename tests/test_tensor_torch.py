"""Tensor gradients (first and second order) and optimizer steps against PyTorch's.

Skipped only where torch is not installed (``pip install torch==2.13.0``; CI installs it).
"""

import re

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import Tensor, optim
from chainrule.tensor import functional as cF
from chainrule.test_util import check_grads

torch = pytest.importorskip("torch")

# Each case: (function of the namespace `m` and the inputs, input arrays). The same code
# runs with m = chainrule.numpy on chainrule Tensors and with m = torch on torch tensors.
CASES = {
    "seed_product": (lambda m, x, y: x * x + x * y, [3.0, 10.0]),
    "seed_sums": (lambda m, a, b: (a + b) * (b + 1), [2.0, 3.0]),
    "log_sin": (lambda m, x, y: m.log(x) + x * y + m.sin(y), [2.0, 5.0]),
    "tanh_exp": (lambda m, x, y: (m.tanh(x * y) * m.exp(-x)).sum(), [[0.3, -1.2], [1.5, 0.7]]),
    "division_pow": (lambda m, x, y: (x / (1 + y**2) + x**3).sum(), [[0.5, 2.0], [-1.0, 3.0]]),
    "matmul": (
        lambda m, a, b: m.tanh(a @ b).sum(),
        [np.arange(6.0).reshape(2, 3) / 5, np.linspace(-1, 1, 12).reshape(3, 4)],
    ),
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


@pytest.mark.parametrize(
    "make",
    [
        (
            lambda p: optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
            lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
        ),
        (
            lambda p: optim.Adam(p, lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01),
            lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01),
        ),
    ],
)
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


# ----------------------------------------------------------------------------- PyTorch's methods
# Each case runs the same code on a chainrule Tensor and on a torch tensor (float64): the
# values and the gradients of (output * random cotangent).sum() must agree. `m` is the
# library (chainrule or torch); F is its nn.functional.
RNG = np.random.default_rng(7)
A34 = RNG.standard_normal((3, 4))
A234 = RNG.standard_normal((2, 3, 4))
B43 = RNG.standard_normal((4, 3))
A31 = RNG.standard_normal((3, 1))
A314 = RNG.standard_normal((3, 1, 4))
POS = RNG.uniform(0.5, 2.0, (3, 4))
EDGES = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, 0.2])  # clamp bounds and relu's kink included
BIG = np.array([[1000.0, -1000.0, 3.0], [-800.0, 0.0, 800.0]])  # overflows naive forms
LABELS = np.array([2, 0, 1])

METHOD_CASES = {
    # sign: no derivative of its own (torch's is zero), so sign(t) * t has gradient sign(t)
    "sign_times": (lambda m, t: t.sign() * t + (t * 0.5).sign(), [[-2.0, -0.0, 0.0, 3.0]]),
    # reductions
    "sum": (lambda m, t: t.sum(), [A34]),
    "sum_dim": (lambda m, t: t.sum(1), [A34]),
    "sum_dims_keepdim": (lambda m, t: t.sum(dim=(0, 2), keepdim=True), [A234]),
    "sum_axis_alias": (lambda m, t: t.sum(axis=0, keepdims=True), [A34]),
    "mean": (lambda m, t: t.mean(), [A34]),
    "mean_dim": (lambda m, t: t.mean(-1, keepdim=True), [A234]),
    "prod": (lambda m, t: t.prod(), [POS]),
    "prod_dim": (lambda m, t: t.prod(dim=1, keepdim=True), [A34]),
    "var": (lambda m, t: t.var(), [A34]),
    "var_dim": (lambda m, t: t.var(0), [A34]),
    "var_population": (lambda m, t: t.var(1, unbiased=False, keepdim=True), [A34]),
    "var_correction": (lambda m, t: t.var(dim=1, correction=0), [A34]),
    "std": (lambda m, t: t.std(), [A34]),
    "std_dim": (lambda m, t: t.std(dim=(0, 1)), [A234]),
    "std_unbiased_false": (lambda m, t: t.std(False), [A34]),
    "max": (lambda m, t: t.max(), [A34]),
    "max_dim": (lambda m, t: t.max(1), [A34]),
    "max_dim_keepdim": (lambda m, t: t.max(dim=0, keepdim=True), [A234]),
    "max_other": (lambda m, a, b: a.max(b), [A34, POS]),
    "min": (lambda m, t: t.min(), [A34]),
    "min_dim": (lambda m, t: t.min(dim=-1), [A234]),
    "min_ties": (lambda m, t: t.min(), [np.array([1.0, 0.5, 0.5, 2.0])]),
    "amax": (lambda m, t: t.amax(dim=(0, 1)), [A234]),
    "argmax": (lambda m, t: t.argmax(), [A34]),
    "argmax_dim": (lambda m, t: t.argmax(dim=1, keepdim=True), [A34]),
    "argmin_dim": (lambda m, t: t.argmin(0), [A34]),
    "logsumexp": (lambda m, t: t.logsumexp(1), [A34]),
    "logsumexp_big": (lambda m, t: t.logsumexp(dim=0, keepdim=True), [BIG]),
    "norm": (lambda m, t: t.norm(), [A34]),
    "norm_dim": (lambda m, t: t.norm(dim=1, keepdim=True), [A34]),
    "norm_p1": (lambda m, t: t.norm(p=1), [A34]),
    "norm_p3_dim": (lambda m, t: t.norm(3, dim=0), [A34]),
    "norm_inf": (lambda m, t: t.norm(p=float("inf"), dim=1), [A34]),
    "all": (lambda m, t: t.all(dim=1), [np.array([[1.0, 0.0], [2.0, 3.0]])]),
    "any": (lambda m, t: t.any(), [np.array([[0.0, 0.0], [2.0, 0.0]])]),
    "cumsum": (lambda m, t: t.cumsum(1), [A34]),
    "cumprod": (lambda m, t: t.cumprod(dim=0), [A34]),
    # shapes
    "size": (lambda m, t: (tuple(t.size()), t.size(1), t.size(-1), t.numel(), t.dim()), [A234]),
    "view": (lambda m, t: t.view(4, 3), [A34]),
    "view_tuple": (lambda m, t: t.view((2, -1)), [A34]),
    "view_flat": (lambda m, t: t.view(-1), [A234]),
    "reshape": (lambda m, t: t.reshape(6, -1), [A234]),
    "reshape_tuple": (lambda m, t: t.reshape((4, 3)), [A34]),
    "view_as": (lambda m, a, b: a.view_as(b), [A34, B43]),
    "unsqueeze": (lambda m, t: t.unsqueeze(0), [A34]),
    "unsqueeze_neg": (lambda m, t: t.unsqueeze(-1), [A34]),
    "squeeze": (lambda m, t: t.squeeze(), [A314]),
    "squeeze_dim": (lambda m, t: t.squeeze(1), [A314]),
    "squeeze_not_one": (lambda m, t: t.squeeze(0), [A314]),
    "permute": (lambda m, t: t.permute(2, 0, 1), [A234]),
    "permute_tuple": (lambda m, t: t.permute((1, 0)), [A34]),
    "t": (lambda m, t: t.t(), [A34]),
    "T": (lambda m, t: t.T, [A34]),
    "transpose": (lambda m, t: t.transpose(0, 1), [A34]),
    "transpose_neg": (lambda m, t: t.transpose(-1, -3), [A234]),
    "flatten": (lambda m, t: t.flatten(), [A234]),
    "flatten_start": (lambda m, t: t.flatten(1), [A234]),
    "flatten_range": (lambda m, t: t.flatten(0, 1), [A234]),
    "expand": (lambda m, t: t.expand(3, 4), [A31]),
    "expand_lead": (lambda m, t: t.expand(2, -1, 5), [A31]),
    "expand_as": (lambda m, a, b: a.expand_as(b), [A31, A34]),
    "repeat": (lambda m, t: t.repeat(2, 3), [A34]),
    "repeat_more_dims": (lambda m, t: t.repeat(2, 1, 1), [A34]),
    # arithmetic
    "matmul": (lambda m, a, b: a.matmul(b), [A34, B43]),
    "mm": (lambda m, a, b: a.mm(b), [A34, B43]),
    "matmul_batched": (lambda m, a, b: a @ b, [A234, B43]),
    "pow": (lambda m, t: t.pow(3), [A34]),
    "pow_half": (lambda m, t: t.pow(0.5), [POS]),
    "pow_tensor": (lambda m, a, b: a.pow(b), [POS, A34]),
    "add_alpha": (lambda m, a, b: a.add(b, alpha=2.5), [A34, POS]),
    "sub_alpha": (lambda m, a, b: a.sub(b, alpha=-0.5), [A34, POS]),
    "mul_div": (lambda m, a, b: a.mul(b).div(b + 3.0), [A34, POS]),
    "neg_clone": (lambda m, t: t.neg().clone(), [A34]),
    "clamp": (lambda m, t: t.clamp(-0.5, 0.5), [EDGES]),
    "clamp_min": (lambda m, t: t.clamp(min=0.0), [EDGES]),
    "clamp_max": (lambda m, t: t.clamp(max=0.2), [EDGES]),
    "clip": (lambda m, t: t.clip(-0.2, 0.7), [EDGES]),
    # nonlinearities
    "relu": (lambda m, t: t.relu(), [EDGES]),
    "sigmoid": (lambda m, t: t.sigmoid(), [np.array([-800.0, -3.0, 0.0, 2.0, 800.0])]),
    "tanh": (lambda m, t: t.tanh(), [A34]),
    "softmax": (lambda m, t: t.softmax(1), [A34]),
    "softmax_dim0": (lambda m, t: t.softmax(dim=0), [BIG]),
    "log_softmax": (lambda m, t: t.log_softmax(-1), [BIG]),
    "exp_log_sqrt": (lambda m, t: t.exp().log().sqrt(), [POS]),
    # conversions and indices
    "float": (lambda m, t: t.float(), [A34]),
    "double": (lambda m, t: t.float().double() * 2, [A34]),
    "item_tolist": (lambda m, t: (t.sum().item(), t.tolist()), [A34]),
    "nonzero": (lambda m, t: t.nonzero(), [EDGES]),
    "argsort": (lambda m, t: t.argsort(dim=1, descending=True), [A34]),
    # comparisons: boolean Tensors (issue 35)
    "accuracy": (lambda m, a, b: (a.argmax(1) == b).float().mean(), [A34, LABELS]),
    "eq_sum_item": (lambda m, a, b: a.eq(b).sum().item(), [EDGES, EDGES.clip(0.0)]),
    "mask_index": (lambda m, t: t[t > 0], [EDGES]),
    "mask_times": (lambda m, t: (t * (t >= 0.5)).sum(), [EDGES]),
    "mask_logic": (lambda m, a, b: ((a > 0) & (b < 1)) | ~(a == b) ^ (a < -0.5), [A34, POS]),
    "any_all_dim": (lambda m, t: ((t > 0).any(dim=1), (t > 0).all(0)), [A34]),
    "any_keepdim": (lambda m, t: (t > 1).any(1, keepdim=True), [A34]),
    "compare_methods": (lambda m, a, b: (a.lt(b), a.le(b), a.gt(b), a.ge(b), a.ne(b)), [A34, POS]),
    "logical_methods": (
        lambda m, a, b: (a.logical_and(b), a.logical_or(b), a.logical_xor(b), a.logical_not()),
        [EDGES, EDGES.clip(0.0)],
    ),
    "nan_predicates": (
        lambda m, t: ((t / t).isnan(), (1 / t).isinf(), (1 / t).isfinite()), [EDGES]
    ),
    "equal": (lambda m, a, b: (a.equal(a), a.equal(b)), [A34, POS]),
}


def _plain(value):
    """A comparable plain value: arrays for Tensors (either library), tuples kept."""
    if isinstance(value, Tensor):
        return value.detach().numpy()
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _assert_same(ours, theirs, rtol=1e-12, atol=1e-12):
    if isinstance(ours, list):
        assert isinstance(theirs, list) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b, rtol, atol)
    elif isinstance(ours, np.ndarray):
        assert ours.shape == theirs.shape
        assert ours.dtype.kind == theirs.dtype.kind
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
    else:
        assert ours == pytest.approx(theirs, rel=rtol, abs=atol)


class Const:
    """An input that does not require grad (class weights: torch refuses their gradient)."""

    def __init__(self, array):
        self.array = np.asarray(array)


def _inputs(arrays):
    ours, theirs = [], []
    for a in arrays:
        const = isinstance(a, Const)
        a = a.array if const else np.asarray(a)
        grad = a.dtype.kind == "f" and not const
        ours.append(Tensor(a, requires_grad=grad))
        theirs.append(torch.tensor(a, requires_grad=grad))
    return ours, theirs


def _differentiable_part(out):
    """The Tensor output to backpropagate from (values of a (values, indices) pair)."""
    if isinstance(out, tuple):
        out = out[0]
    lib_tensor = isinstance(out, (Tensor, torch.Tensor))
    if lib_tensor and out.dtype in (np.float64, np.float32, torch.float64, torch.float32):
        return out if out.requires_grad else None
    return None


def _run_both(fun, arrays, ours_m, theirs_m):
    ours, theirs = _inputs(arrays)
    out, ref = fun(ours_m, *ours), fun(theirs_m, *theirs)
    float32 = isinstance(out, Tensor) and out.dtype == np.float32
    tol = 1e-6 if float32 else 1e-12
    _assert_same(_plain(out), _plain(ref), rtol=tol, atol=tol)
    grad_out, grad_ref = _differentiable_part(out), _differentiable_part(ref)
    assert (grad_out is None) == (grad_ref is None)
    if grad_out is not None:
        cot = np.random.default_rng(3).standard_normal(grad_out.shape)
        (grad_out * Tensor(cot.astype(grad_out.dtype), requires_grad=False)).sum().backward()
        (grad_ref * torch.tensor(cot, dtype=grad_ref.dtype)).sum().backward()
        for t, r in zip(ours, theirs):
            if r.grad is None:  # e.g. b in a.view_as(b): not on the graph
                assert t.grad is None
            else:
                np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=tol, atol=tol)
    return out, ref


@pytest.mark.parametrize("name", METHOD_CASES)
def test_methods_match_torch(name):
    fun, arrays = METHOD_CASES[name]
    out, ref = _run_both(fun, arrays, cr, torch)
    if isinstance(ref, tuple) and hasattr(ref, "indices"):  # max(dim): (values, indices)
        assert type(out).__name__ == type(ref).__name__ and out._fields == ("values", "indices")
        np.testing.assert_array_equal(out.indices.numpy(), ref.indices.numpy())
        np.testing.assert_array_equal(out.values.numpy(), ref.values.detach().numpy())


def test_reductions_accept_no_numpy_meaning_silently():
    x = Tensor(A34)
    with pytest.raises(TypeError, match="both dim= and axis="):
        x.sum(dim=0, axis=1)
    with pytest.raises(RuntimeError, match="<= 2 dimensions"):
        Tensor(A234).t()
    np.testing.assert_array_equal(x.transpose((0, 1)).numpy(), A34)  # NumPy's axes: permute
    with pytest.raises(TypeError, match="needs dim="):
        x.cumsum()


# ----------------------------------------------------------------------------- in place
def _double(x):
    return x * 2


def _keep(y, x):
    return y


def _loss_y(y, z, x):
    return y


def _loss_z(y, z, x):
    return z


# name: (y from the input x, z from y before the change, the in-place change of y, what is
# summed and backpropagated). The same code runs on chainrule and torch tensors.
INPLACE = {
    "chain": (_double, _keep, lambda y, x: y.add_(1).mul_(3), lambda y, z, x: y * y),
    "pow_own_input": (_double, _keep, lambda y, x: y.pow_(2), _loss_y),
    "exp_inplace": (_double, _keep, lambda y, x: y.exp_(), _loss_y),
    "log_input_changed": (_double, lambda y, x: y.log(), lambda y, x: y.add_(1), _loss_z),
    "scaled_input_changed": (_double, lambda y, x: y * 3, lambda y, x: y.add_(1), _loss_z),
    "product_input_changed": (_double, lambda y, x: y * x, lambda y, x: y.add_(1), _loss_z),
    "sigmoid_output_changed": (lambda x: x.sigmoid(), _keep, lambda y, x: y.mul_(2), _loss_y),
    "relu_inplace": (_double, _keep, lambda y, x: y.relu_(), _loss_y),
    "relu_output_changed": (lambda x: (x * 2).relu(), _keep, lambda y, x: y.add_(1), _loss_y),
    "div_by_leaf": (_double, _keep, lambda y, x: y.div_(x), _loss_y),
    "clamp_inplace": (_double, _keep, lambda y, x: y.clamp_(0, 3), _loss_y),
    "zero_keeps_graph": (_double, _keep, lambda y, x: y.zero_(), lambda y, z, x: y + x),
    "fill_then_use": (_double, _keep, lambda y, x: y.fill_(0.5), lambda y, z, x: y * x),
    "tanh_output_changed": (lambda x: x.tanh(), _keep, lambda y, x: y.tanh_(), _loss_y),
    "sub_iadd": (
        lambda x: x.exp() + 1,
        _keep,
        lambda y, x: y.__isub__(x).__iadd__(2.0),
        lambda y, z, x: y * y,
    ),
    "leaf_inplace": (lambda x: x, _keep, lambda y, x: y.add_(1), _loss_y),
    "cumsum_input_changed": (_double, lambda y, x: y.cumsum(0), lambda y, x: y.add_(1), _loss_z),
    "square_input_changed": (_double, lambda y, x: y * y, lambda y, x: y.add_(1), _loss_z),
}


def _run_inplace(x, name):
    make, before, change, loss = INPLACE[name]
    y = make(x)
    z = before(y, x)
    change(y, x)
    assert y.requires_grad
    loss(y, z, x).sum().backward()


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_methods_succeed_or_raise_as_torch_does(name):
    ours, theirs = _inputs([np.array([1.0, 2.0, 0.3])])
    outcomes = []
    for x in (ours[0], theirs[0]):
        try:
            _run_inplace(x, name)
            outcomes.append(_plain(x.grad))
        except RuntimeError as error:
            outcomes.append(re.split(r"[:.]", str(error))[0])
    if isinstance(outcomes[1], str):
        assert outcomes[0] == outcomes[1]  # the same error text
    else:
        np.testing.assert_allclose(outcomes[0], outcomes[1], rtol=1e-12)


def test_inplace_error_names_the_change():
    x = Tensor([1.0, 2.0])
    y = x * 2
    z = y.log()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*add_"):
        z.sum().backward()


def test_inplace_under_no_grad_updates_a_leaf_as_torch():
    ours, theirs = _inputs([np.array([1.0, 2.0])])
    for x, lib in ((ours[0], cr), (theirs[0], torch)):
        (x * x).sum().backward()
        with lib.no_grad():
            x.sub_(0.1 * x.grad)
            x.grad.zero_()
        assert x.requires_grad and x.is_leaf
    np.testing.assert_allclose(ours[0].numpy(), theirs[0].detach().numpy())
    np.testing.assert_array_equal(ours[0].grad.numpy(), [0.0, 0.0])


def test_inplace_shape_and_dtype_rules_as_torch():
    with pytest.raises(RuntimeError, match="shape"):
        Tensor(np.zeros(3), requires_grad=False).add_(np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="can't be cast"):
        Tensor(np.zeros(3, dtype=np.int64)).add_(1.5)
    x = Tensor(np.zeros(2, dtype=np.float32), requires_grad=False)
    x.add_(np.ones(2))  # float64 operand: the Tensor stays float32, as in PyTorch
    assert x.dtype == np.float32 and x.tolist() == [1.0, 1.0]


def test_integer_tensor_requiring_grad_raises_torchs_error():
    with pytest.raises(RuntimeError) as ref:
        torch.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError) as ours:
        Tensor(np.array([1, 2]), requires_grad=True)
    assert str(ref.value) in str(ours.value)


# ----------------------------------------------------------------------------- functional
FUNCTIONAL_CASES = {
    "relu": (lambda F, x: F.relu(x), [EDGES]),
    "sigmoid": (lambda F, x: F.sigmoid(x), [np.array([-800.0, -2.0, 0.0, 1.0, 800.0])]),
    "tanh": (lambda F, x: F.tanh(x), [A34]),
    "softmax": (lambda F, x: F.softmax(x, dim=1), [BIG]),
    "log_softmax": (lambda F, x: F.log_softmax(x, dim=-1), [BIG]),
    "log_softmax_dim0": (lambda F, x: F.log_softmax(x, 0), [A34]),
    "linear": (
        lambda F, x, w, b: F.linear(x, w, b),
        [A34, RNG.standard_normal((5, 4)), RNG.standard_normal(5)],
    ),
    "linear_no_bias": (lambda F, x, w: F.linear(x, w), [A234, RNG.standard_normal((2, 4))]),
    "mse_loss": (lambda F, x, y: F.mse_loss(x, y), [A34, POS]),
    "mse_loss_sum": (lambda F, x, y: F.mse_loss(x, y, reduction="sum"), [A34, POS]),
    "mse_loss_none": (lambda F, x, y: F.mse_loss(x, y, reduction="none"), [A34, POS]),
    "cross_entropy": (lambda F, x, t: F.cross_entropy(x, t), [A34, LABELS]),
    "cross_entropy_big": (lambda F, x, t: F.cross_entropy(x, t), [BIG, LABELS[:2]]),
    "cross_entropy_sum": (lambda F, x, t: F.cross_entropy(x, t, reduction="sum"), [A34, LABELS]),
    "cross_entropy_none": (lambda F, x, t: F.cross_entropy(x, t, reduction="none"), [A34, LABELS]),
    "cross_entropy_weight": (
        lambda F, x, t, w: F.cross_entropy(x, t, weight=w),
        [A34, LABELS, Const([0.2, 1.0, 3.0, 0.5])],
    ),
    "cross_entropy_ignore": (lambda F, x, t: F.cross_entropy(x, t, ignore_index=0), [A34, LABELS]),
    "cross_entropy_spatial": (
        lambda F, x, t: F.cross_entropy(x, t),
        [A234.reshape(2, 4, 3), np.array([[0, 3, 1], [2, 2, 0]])],
    ),
    "cross_entropy_single": (lambda F, x, t: F.cross_entropy(x, t), [A34[0], np.array(3)]),
    "cross_entropy_probs": (lambda F, x, p: F.cross_entropy(x, p), [A34, np.full((3, 4), 0.25)]),
    "nll_loss": (lambda F, x, t: F.nll_loss(F.log_softmax(x, dim=1), t), [A34, LABELS]),
    "nll_loss_weight_sum": (
        lambda F, x, t, w: F.nll_loss(x, t, weight=w, reduction="sum"),
        [A34, LABELS, Const([0.2, 1.0, 3.0, 0.5])],
    ),
    "bce_logits": (
        lambda F, x, y: F.binary_cross_entropy_with_logits(x, y),
        [A34, RNG.uniform(0, 1, (3, 4))],
    ),
    "bce_logits_big": (
        lambda F, x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"),
        [np.array([-900.0, -30.0, 0.0, 30.0, 900.0]), np.array([1.0, 0.0, 1.0, 1.0, 0.0])],
    ),
    "bce_logits_pos_weight": (
        lambda F, x, y, p: F.binary_cross_entropy_with_logits(x, y, pos_weight=p, reduction="sum"),
        [A34, RNG.uniform(0, 1, (3, 4)), Const([0.5, 1.0, 2.0, 4.0])],
    ),
    "bce_logits_weight": (
        lambda F, x, y, w: F.binary_cross_entropy_with_logits(x, y, weight=w),
        [A34, RNG.uniform(0, 1, (3, 4)), Const(RNG.uniform(0, 1, (3, 4)))],
    ),
}


@pytest.mark.parametrize("name", FUNCTIONAL_CASES)
def test_functional_matches_torch(name):
    fun, arrays = FUNCTIONAL_CASES[name]
    _run_both(fun, arrays, cF, torch.nn.functional)


@pytest.mark.parametrize(
    "name",
    ["softmax", "log_softmax", "cross_entropy", "bce_logits", "cross_entropy_weight", "sigmoid"],
)
def test_functional_second_derivatives_match_torch(name):
    fun, arrays = FUNCTIONAL_CASES[name]
    ours, theirs = _inputs(arrays)
    out = fun(cF, *ours).sum()
    ref = fun(torch.nn.functional, *theirs).sum()
    out.backward(create_graph=True)
    (g_ref,) = torch.autograd.grad(ref, theirs[0], create_graph=True)
    g = ours[0].grad
    ours[0].grad = None
    (g * g).sum().backward()
    (g_ref * g_ref).sum().backward()
    np.testing.assert_allclose(ours[0].grad.numpy(), theirs[0].grad.numpy(), rtol=1e-9, atol=1e-12)


def test_functional_gradients_match_finite_differences():
    # Independent of torch: the functional API's gradient of each composite, checked
    # by chainrule.test_util (directional finite differences, both modes, second order).
    def losses(x):
        t = Tensor(x)  # traced by the transform: the functions run on the traced value
        w = np.array([0.2, 1.0, 3.0, 0.5])
        parts = [
            cF.cross_entropy(t, LABELS, weight=w),
            cF.log_softmax(t, dim=0).sum(),
            cF.binary_cross_entropy_with_logits(t, POS / 2, pos_weight=w),
            cF.softmax(t, dim=1)[:, 0].sum(),
            t.logsumexp(1).sum(),
            t.std(0).sum(),
            t.norm(p=3),
            t.var(dim=1, correction=0).sum(),
        ]
        return sum(parts)._value

    check_grads(losses, A34, modes=("rev",), order=2)


VIEW_MAKERS = {
    "index": lambda t: t[0],
    "slice": lambda t: t[:, 1:],
    "view": lambda t: t.view(-1),
    "reshape": lambda t: t.reshape(3, 2),
    "transpose": lambda t: t.transpose(0, 1),
    "t": lambda t: t.t(),
    "T": lambda t: t.T,
    "permute": lambda t: t.permute(1, 0),
    "unsqueeze": lambda t: t.unsqueeze(0),
    "flatten": lambda t: t.flatten(),
    "expand": lambda t: t.unsqueeze(0).expand(2, 2, 3),
    "detach": lambda t: t.detach(),
}


@pytest.mark.parametrize("name", VIEW_MAKERS)
@pytest.mark.parametrize("changed", ["base", "view"])
def test_inplace_change_shared_with_a_torch_view_is_refused(name, changed):
    a = np.arange(6.0).reshape(2, 3)
    ref = torch.tensor(a)
    ref_view = VIEW_MAKERS[name](ref)
    before = ref_view.clone() if changed == "base" else ref.clone()
    if name == "expand" and changed == "view":
        with pytest.raises(RuntimeError, match="single memory location"):
            ref_view.add_(1.0)  # PyTorch refuses this one itself
    else:
        (ref if changed == "base" else ref_view).add_(1.0)
        other = ref_view if changed == "base" else ref
        assert not torch.equal(other, before)  # in PyTorch the other Tensor changed too
    x = Tensor(a, requires_grad=False)
    view = VIEW_MAKERS[name](x)
    with pytest.raises(RuntimeError, match="never share memory"):
        (x if changed == "base" else view).add_(1.0)
    with pytest.raises(RuntimeError, match="never share memory"):
        x[0, 0] = 5.0


def test_inplace_after_the_view_is_gone_or_on_a_copy_is_allowed():
    x = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=False)
    row = x[0]
    del row  # no live view left
    x.add_(1.0)
    copy = x[[0, 1]]  # advanced indexing copies, in PyTorch too
    copy.mul_(2.0)
    clone = x.view(-1).clone()
    clone.zero_()
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3) + 1)


def test_inplace_check_differs_from_torch_only_by_allowing_a_correct_gradient():
    # PyTorch's clamp saves its input, chainrule's does not (docs/tensor.md): PyTorch
    # refuses this program, chainrule differentiates it as written.
    ours, theirs = _inputs([np.array([0.2, 0.5, 2.0])])
    for x in (ours[0], theirs[0]):
        y = x * 1.0
        z = y.clamp(0.0, 1.0)
        y.add_(1.0)
        if x is theirs[0]:
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                z.sum().backward()
        else:
            z.sum().backward()
    np.testing.assert_array_equal(ours[0].grad.numpy(), [1.0, 1.0, 0.0])
