"""chainrule.nn against torch.nn (2.13, CPU, float64): initialisation, outputs and
gradients with copied weights, module bookkeeping, state_dict, and the example MLP
trained side by side. The comparisons skip where torch is not installed; the tests of
chainrule.nn alone run everywhere."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import chainrule as cr
from chainrule import Tensor, nn, optim


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="the comparison with PyTorch needs torch")


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "torch_style_mlp.py"
RNG = np.random.default_rng(11)


def _copy_weights(ours: nn.Module, theirs) -> None:
    """Give the torch module our module's parameter values (float64)."""
    import torch

    theirs.double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})


def _grads(module) -> dict:
    out = {}
    for name, p in module.named_parameters():
        grad = p.grad
        out[name] = None if grad is None else grad.detach().numpy()
    return out


def _assert_same_grads(ours, theirs, rtol=1e-12):
    mine, ref = _grads(ours), _grads(theirs)
    assert list(mine) == list(ref)
    for name in ref:
        np.testing.assert_allclose(mine[name], ref[name], rtol=rtol, atol=1e-14, err_msg=name)


def _models(lib):
    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.body = lib.Sequential(lib.Linear(5, 8), lib.ReLU(), lib.Linear(8, 6), lib.Tanh())
            self.head = lib.Linear(6, 3)
            self.gate = lib.Sigmoid()
            self.drop = lib.Dropout(0.3)

        def forward(self, x):
            return self.head(self.drop(self.body(x))) * self.gate(x[:, :3])

    return Net()


# ----------------------------------------------------------------------------- initialisation
@pytest.mark.parametrize("fan_in, fan_out", [(1, 16), (100, 300)])
def test_linear_initialisation_has_torchs_bounds(torch, fan_in, fan_out):
    tnn = torch.nn
    np.random.seed(0)
    ours = nn.Linear(fan_in, fan_out)
    theirs = tnn.Linear(fan_in, fan_out)
    bound = 1.0 / math.sqrt(fan_in)
    for mine, ref in [(ours.weight, theirs.weight), (ours.bias, theirs.bias)]:
        mine, ref = mine.numpy(), ref.detach().numpy()
        assert mine.shape == ref.shape
        assert np.abs(mine).max() <= bound and np.abs(ref).max() <= bound
        if mine.size >= 1000:  # uniform on [-bound, bound]: the same moments as torch's
            for sample in (mine, ref):
                assert abs(sample.mean()) < 0.05 * bound
                assert sample.var() == pytest.approx(bound**2 / 3, rel=0.05)
                assert np.abs(sample).max() > 0.99 * bound


def test_linear_without_bias_and_dtype(torch):
    tnn = torch.nn
    layer = nn.Linear(3, 2, bias=False, dtype=np.float32)
    assert layer.bias is None and [n for n, _ in layer.named_parameters()] == ["weight"]
    assert layer.weight.dtype == np.float32 and layer.weight.shape == (2, 3)
    assert list(layer.state_dict()) == list(tnn.Linear(3, 2, bias=False).state_dict())


# ----------------------------------------------------------------------------- same weights
def test_outputs_and_gradients_match_torch_with_copied_weights(torch):
    tnn = torch.nn
    ours, theirs = _models(nn), _models(tnn)
    _copy_weights(ours, theirs)
    ours.eval(), theirs.eval()  # dropout off: the same function
    x = RNG.standard_normal((4, 5))
    out, ref = ours(Tensor(x, requires_grad=False)), theirs(torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    labels = np.array([0, 2, 1, 2])
    nn.CrossEntropyLoss()(out, labels).backward()
    tnn.CrossEntropyLoss()(ref, torch.tensor(labels)).backward()
    _assert_same_grads(ours, theirs)


@pytest.mark.parametrize("loss", ["MSELoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_modules_match_torch(torch, loss, reduction):
    tnn = torch.nn
    x = RNG.standard_normal((4, 3))
    target = {
        "MSELoss": RNG.standard_normal((4, 3)),
        "CrossEntropyLoss": np.array([0, 2, 1, 1]),
        "NLLLoss": np.array([1, 0, 2, 2]),
        "BCEWithLogitsLoss": RNG.uniform(0, 1, (4, 3)),
    }
    ours_x, ref_x = Tensor(x), torch.tensor(x, requires_grad=True)
    out = getattr(nn, loss)(reduction=reduction)(ours_x, target[loss])
    ref = getattr(tnn, loss)(reduction=reduction)(ref_x, torch.tensor(target[loss]))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    cot = RNG.standard_normal(ref.shape)
    (out * cot).sum().backward()
    (ref * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), ref_x.grad.numpy(), rtol=1e-12)


def test_sgd_on_module_parameters_matches_torch(torch):
    tnn = torch.nn
    ours, theirs = _models(nn), _models(tnn)
    _copy_weights(ours, theirs)
    ours.eval(), theirs.eval()
    x, y = RNG.standard_normal((6, 5)), RNG.standard_normal((6, 3))
    opt = optim.SGD(ours.parameters(), lr=0.05, momentum=0.9)
    opt_ref = torch.optim.SGD(theirs.parameters(), lr=0.05, momentum=0.9)
    for _ in range(5):
        opt.zero_grad(), opt_ref.zero_grad()
        nn.MSELoss()(ours(Tensor(x, requires_grad=False)), y).backward()
        tnn.MSELoss()(theirs(torch.tensor(x)), torch.tensor(y)).backward()
        opt.step(), opt_ref.step()
    for (name, p), (_, r) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.numpy(), r.detach().numpy(), rtol=1e-10, err_msg=name)


# ----------------------------------------------------------------------------- bookkeeping
def test_registration_names_and_order_match_torch(torch):
    tnn = torch.nn
    ours, theirs = _models(nn), _models(tnn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert len(list(ours.children())) == 4 and len(list(ours.modules())) == 9
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours.body) == repr(theirs.body)
    assert repr(ours.drop) == repr(theirs.drop)
    assert isinstance(ours.head.weight, nn.Parameter) and isinstance(ours.head.weight, Tensor)


def test_shared_parameters_are_listed_once_and_plain_tensors_are_not_parameters():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = nn.Linear(2, 2)
            self.b.weight = self.a.weight
            self.scale = Tensor(2.0)  # a plain Tensor attribute: not a parameter (as torch)

        def forward(self, x):
            return self.b(self.a(x)) * self.scale

    model = Tied()
    assert [n for n, _ in model.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'weight'"):
        model.a.weight = Tensor(np.zeros((2, 2)))
    with pytest.raises(AttributeError, match="before Module.__init__"):

        class Broken(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(np.zeros(2))

        Broken()
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1.0)


def test_train_eval_and_dropout():
    model = _models(nn)
    assert model.training and model.drop.training
    assert model.eval() is model and not model.drop.training and not model.body[1].training
    model.train()
    assert model.drop.training
    drop = nn.Dropout(0.25)
    x = Tensor(np.ones((200, 50)))
    np.random.seed(1)
    y = drop(x)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.02  # each entry dropped with probability p
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.75)  # the rest rescaled
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.75)
    drop.eval()
    assert drop(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_zero_grad_and_dtype_conversion():
    model = _models(nn)
    model.eval()
    model(Tensor(RNG.standard_normal((2, 5)), requires_grad=False)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    assert model.float() is model
    assert {p.dtype for p in model.parameters()} == {np.dtype(np.float32)}
    model.double()
    assert {p.dtype for p in model.parameters()} == {np.dtype(np.float64)}
    assert all(p.is_leaf and p.requires_grad for p in model.parameters())


def test_state_dict_round_trip_and_errors_as_torch(torch):
    tnn = torch.nn
    source, target = _models(nn), _models(nn)
    state = source.state_dict()
    assert all(not t.requires_grad for t in state.values())
    result = target.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (_, a), (_, b) in zip(source.named_parameters(), target.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    state["head.weight"].numpy()[...] = 7.0  # the state is a copy: the model is untouched
    assert not np.any(source.head.weight.numpy() == 7.0)
    # torch accepts our state_dict (as arrays) and we accept torch's
    theirs = _models(tnn).double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in source.state_dict().items()})
    target.load_state_dict(theirs.state_dict())
    np.testing.assert_array_equal(target.body[0].weight.numpy(), source.body[0].weight.numpy())

    bad = dict(state)
    del bad["head.bias"]
    bad["extra"] = np.zeros(1)
    with pytest.raises(RuntimeError) as ours:
        target.load_state_dict(bad)
    with pytest.raises(RuntimeError) as ref:
        _models(tnn).load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in bad.items()})
    for line in (
        'Missing key(s) in state_dict: "head.bias". ',
        'Unexpected key(s) in state_dict: "extra". ',
    ):
        assert line in str(ours.value) and line in str(ref.value)
    result = target.load_state_dict(bad, strict=False)
    assert (result.missing_keys, result.unexpected_keys) == (["head.bias"], ["extra"])
    with pytest.raises(RuntimeError, match="size mismatch for head.weight"):
        target.load_state_dict({**state, "head.weight": np.zeros((2, 2))})


def test_nn_is_imported_lazily_and_reachable_from_chainrule():
    import subprocess

    code = (
        "import sys, chainrule; assert 'chainrule.nn' not in sys.modules; "
        "assert chainrule.nn.Linear is not None; import chainrule.nn.functional as F; "
        "assert F.cross_entropy is chainrule.tensor.functional.cross_entropy"
    )
    src = str(Path(cr.__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": src, "PATH": ""},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


# ----------------------------------------------------------------------------- the example
def _load_example(library: str, path: Path = EXAMPLE,
                  line: str = "from chainrule import as_tensor, nn, no_grad, optim"):
    """The script at ``path`` with its chainrule import ``line`` pointed at ``library``."""
    source = path.read_text()
    assert line in source  # the only line that names the library
    assert "chainrule" not in source.replace(line, "").split('"""', 2)[2]
    source = source.replace(line, line.replace("chainrule", library))
    sys.path.insert(0, str(path.parent))  # for _common
    try:
        spec = importlib.util.spec_from_loader(f"{path.stem}_{library}", loader=None)
        module = importlib.util.module_from_spec(spec)
        exec(compile(source, str(path), "exec"), module.__dict__)
    finally:
        sys.path.remove(str(path.parent))
    return module


def test_example_mlp_trains_as_torch_does_from_the_same_weights(torch):
    ours, theirs = _load_example("chainrule"), _load_example("torch")
    np.random.seed(0)
    model, model_ref = ours.MLP().double(), theirs.MLP().double()
    model_ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    x, y = ours.make_data()
    x_ref, y_ref = theirs.make_data()
    assert isinstance(x, Tensor) and x_ref.dtype == torch.float64
    losses = ours.train(model, x, y, steps=25)
    losses_ref = theirs.train(model_ref, x_ref, y_ref, steps=25)
    np.testing.assert_allclose(losses, losses_ref, rtol=1e-10)
    assert losses[-1] < 0.5 * losses[0]
    for (name, p), (_, r) in zip(model.named_parameters(), model_ref.named_parameters()):
        np.testing.assert_allclose(
            p.numpy(), r.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=name
        )


def test_deepcopy_and_pickle_keep_parameters_as_torch():
    import copy
    import pickle

    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 3))
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        pairs = list(zip(model.named_parameters(), clone.named_parameters()))
        assert len(pairs) == 4
        for (name, p), (name2, q) in pairs:
            assert name == name2 and type(q) is nn.Parameter and q.is_leaf and q.requires_grad
            assert q is not p
            np.testing.assert_array_equal(p.numpy(), q.numpy())
        clone[2].bias.data = np.zeros(3)  # the copy is independent
        assert not np.all(model[2].bias.numpy() == 0)


# ----------------------------------------------------------------------------- PyTorch's habits
TRAINING = Path(__file__).resolve().parent / "torch_style_training.py"
TRAINING_IMPORT = "from chainrule import as_tensor, load, manual_seed, nn, no_grad, optim, save"


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_a_script_with_pytorchs_habits_gives_torchs_numbers(torch, kind, tmp_path):
    """tests/torch_style_training.py (nn.init, manual_seed, boolean comparisons, retain_grad,
    register_hook, clip_grad_norm_/clip_grad_value_, SGD+StepLR or Adam+CosineAnnealingLR,
    a checkpoint saved and resumed with state dicts) from the same initial weights, with
    only its import line changed, gives torch 2.13's numbers to 1e-10 (issue 35)."""
    ours = _load_example("chainrule", TRAINING, TRAINING_IMPORT)
    theirs = _load_example("torch", TRAINING, TRAINING_IMPORT)
    epochs, stop_at = 12, 5
    start, history, final = ours.run(kind, epochs, str(tmp_path / "ours.ckpt"), stop_at)
    assert np.all(start["hidden.bias"] == 0.0) and np.all(start["out.bias"] == 0.1)
    _, history_ref, final_ref = theirs.run(
        kind, epochs, str(tmp_path / "torch.ckpt"), stop_at, initial=start
    )
    assert len(history) == len(history_ref) == epochs
    np.testing.assert_allclose(np.array(history), np.array(history_ref), rtol=1e-10, atol=1e-14)
    for name, value in final.items():
        np.testing.assert_allclose(value, final_ref[name], rtol=1e-10, atol=1e-14, err_msg=name)
    losses, accuracies, grad_norms = zip(*[row[:3] for row in history])
    assert losses[-1] < 0.8 * losses[0] and accuracies[-1] > accuracies[0]
    assert max(grad_norms) > 0.5  # the clipping clipped
    # the checkpoint is NumPy's format (no pickle), and resuming from it changed nothing
    with np.load(tmp_path / "ours.ckpt", allow_pickle=False) as archive:
        assert "__chainrule_structure__" in archive.files and len(archive.files) >= 9
    _, uninterrupted, final_uninterrupted = ours.run(
        kind, epochs, str(tmp_path / "whole.ckpt"), epochs, initial=start
    )
    assert uninterrupted == history
    for name, value in final.items():
        np.testing.assert_array_equal(value, final_uninterrupted[name])
