"""The training utilities PyTorch users reach for (issue 35): gradient clipping, nn.init,
manual_seed, chainrule.save / chainrule.load. By hand, and against torch 2.13 where it is
installed (those tests skip without it)."""

from __future__ import annotations

import io
import math
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import chainrule as cr
from chainrule import Tensor, nn, optim


def _torch():
    return pytest.importorskip("torch", reason="the comparison with PyTorch needs torch")


def _with_grads(*grads):
    params = []
    for g in grads:
        p = Tensor(np.zeros_like(np.asarray(g)))
        p.grad = Tensor(np.asarray(g), requires_grad=False)
        params.append(p)
    return params


# ----------------------------------------------------------------------------- clipping
def test_clip_grad_norm_by_hand():
    a, b = _with_grads([3.0, 0.0], [[4.0]])
    kept = a.grad
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert type(total) is Tensor and total.item() == 5.0
    assert a.grad is kept  # changed in place, as PyTorch's
    np.testing.assert_allclose(a.grad.numpy(), [3.0 / (5.0 + 1e-6), 0.0], rtol=1e-15)
    np.testing.assert_allclose(b.grad.numpy(), [[4.0 / (5.0 + 1e-6)]], rtol=1e-15)
    small, = _with_grads([0.3, 0.4])
    assert nn.utils.clip_grad_norm_(small, max_norm=1.0).item() == pytest.approx(0.5)
    np.testing.assert_array_equal(small.grad.numpy(), [0.3, 0.4])  # factor capped at 1
    inf_norm, = _with_grads([-7.0, 2.0])
    assert nn.utils.clip_grad_norm_([inf_norm], 3.5, norm_type="inf").item() == 7.0
    none = Tensor(1.0)
    assert nn.utils.clip_grad_norm_([none], 1.0).item() == 0.0 and none.grad is None


def test_clip_grad_norm_keeps_float32_and_refuses_nonfinite_when_asked():
    p, = _with_grads(np.array([3.0, 4.0], dtype=np.float32))
    total = nn.utils.clip_grad_norm_([p], 1.0)
    assert p.grad.dtype == np.float32 and total.dtype == np.float32
    q, = _with_grads([np.nan, 1.0])
    with pytest.raises(RuntimeError, match="non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_([q], 1.0, error_if_nonfinite=True)
    assert np.isnan(nn.utils.clip_grad_norm_([q], 1.0).item())


def test_clip_grad_value():
    p, = _with_grads([-3.0, 0.5, 2.0])
    assert nn.utils.clip_grad_value_(p, 1.0) is None
    np.testing.assert_array_equal(p.grad.numpy(), [-1.0, 0.5, 1.0])


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, -math.inf, 0])
def test_clip_grad_norm_matches_torch(norm_type):
    torch = _torch()
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(5), rng.standard_normal((2, 1))]
    ours = _with_grads(*grads)
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for t, g in zip(theirs, grads):
        t.grad = torch.tensor(g)
    total = nn.utils.clip_grad_norm_(ours, 0.7, norm_type=norm_type)
    total_ref = torch.nn.utils.clip_grad_norm_(theirs, 0.7, norm_type=norm_type)
    assert total.item() == pytest.approx(total_ref.item(), rel=1e-13)
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-13)
    torch.nn.utils.clip_grad_value_(theirs, 0.1)
    nn.utils.clip_grad_value_(ours, 0.1)
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-13)
        assert np.abs(p.grad.numpy()).max() <= 0.1


# ----------------------------------------------------------------------------- nn.init
GAINS = [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
         ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None)]


@pytest.mark.parametrize("nonlinearity, param", GAINS)
def test_calculate_gain_is_torchs(nonlinearity, param):
    expected = {"tanh": 5 / 3, "relu": math.sqrt(2), "selu": 0.75}.get(nonlinearity, 1)
    if nonlinearity == "leaky_relu":
        expected = math.sqrt(2 / (1 + (0.01 if param is None else param) ** 2))
    assert nn.init.calculate_gain(nonlinearity, param) == expected


def test_fixed_initialisations_fill_in_place_and_keep_the_leaf():
    w = nn.Parameter(np.ones((2, 3)))
    assert nn.init.zeros_(w) is w and w.is_leaf and w.requires_grad
    np.testing.assert_array_equal(w.numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(nn.init.constant_(w, 0.25).numpy(), np.full((2, 3), 0.25))
    np.testing.assert_array_equal(nn.init.ones_(w).numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(nn.init.eye_(w).numpy(), np.eye(2, 3))
    f32 = Tensor(np.zeros(4, dtype=np.float32))
    assert nn.init.normal_(f32).dtype == np.float32
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        nn.init.eye_(Tensor(np.zeros(3)))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(Tensor(np.zeros(3)))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        nn.init.kaiming_uniform_(Tensor(np.zeros((3, 3))), mode="fan_avg")
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        nn.init.calculate_gain("gelu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.init.kaiming_uniform_(Tensor(np.zeros((0, 3))))
    assert "zero-element tensors is a no-op" in str(caught[0].message)


# (the init's keyword arguments, its bound or std from (fan_in, fan_out), uniform?) for a
# weight of shape (400, 30, 3)
SPREADS = {
    "xavier_uniform_": (dict(gain=2.0), lambda i, o: 2.0 * math.sqrt(6 / (i + o)), True),
    "xavier_normal_": ({}, lambda i, o: math.sqrt(2 / (i + o)), False),
    "kaiming_uniform_": (dict(a=math.sqrt(5)), lambda i, o: 1 / math.sqrt(i), True),
    "kaiming_normal_": (dict(mode="fan_out", nonlinearity="relu"), lambda i, o: math.sqrt(2 / o),
                        False),
}


@pytest.mark.parametrize("name", SPREADS)
def test_random_initialisations_have_torchs_spread(name):
    kwargs, spread, uniform = SPREADS[name]
    w = nn.Parameter(np.zeros((400, 30, 3)))
    cr.manual_seed(0)
    values = getattr(nn.init, name)(w, **kwargs).numpy().ravel()
    s = spread(30 * 3, 400 * 3)  # fan_in, fan_out
    if uniform:  # uniform on [-s, s]: the extremes near s, the variance s^2 / 3
        assert np.abs(values).max() <= s and np.abs(values).max() > 0.999 * s
        assert np.var(values) == pytest.approx(s**2 / 3, rel=0.02)
    else:
        assert np.std(values) == pytest.approx(s, rel=0.02) and abs(values.mean()) < 0.01 * s
    torch = pytest.importorskip("torch", reason="the spread of torch's own draws needs torch")
    w_ref = torch.zeros((400, 30, 3), dtype=torch.float64)
    values_ref = getattr(torch.nn.init, name)(w_ref, **kwargs).numpy().ravel()
    if uniform:
        assert np.abs(values_ref).max() <= s and np.abs(values_ref).max() > 0.999 * s
    assert np.std(values) == pytest.approx(np.std(values_ref), rel=0.03)


def test_manual_seed_and_generators_repeat_the_draws():
    cr.manual_seed(7)
    first = nn.Linear(5, 3).state_dict()
    cr.manual_seed(7)
    second = nn.Linear(5, 3).state_dict()
    for key in first:
        np.testing.assert_array_equal(first[key].numpy(), second[key].numpy())
    a = nn.init.normal_(Tensor(np.zeros(4)), generator=np.random.default_rng(1)).numpy()
    b = nn.init.normal_(Tensor(np.zeros(4)), generator=np.random.default_rng(1)).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, np.random.default_rng(1).normal(0.0, 1.0, 4))


def test_linear_draws_torchs_bound():
    """nn.Linear's weights: kaiming_uniform_(a=sqrt(5)), whose bound is 1/sqrt(fan_in) up to
    rounding, computed as PyTorch computes it."""
    cr.manual_seed(0)
    layer = nn.Linear(7, 2000)
    bound = math.sqrt(3.0) * (math.sqrt(2.0 / 6.0) / math.sqrt(7))
    assert np.abs(layer.weight.numpy()).max() <= bound
    assert np.abs(layer.bias.numpy()).max() <= 1 / math.sqrt(7)


# ----------------------------------------------------------------------------- save and load
def test_save_and_load_a_checkpoint_without_pickle(tmp_path):
    cr.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    opt = optim.Adam(model.parameters(), lr=0.01, betas=(0.8, 0.9))
    (model(Tensor(np.ones((2, 3)), requires_grad=False)) ** 2).sum().backward()
    opt.step()
    extra = [1, -2**70, 2.5, math.inf, math.nan, -0.0, "text ü", None, True, 1 + 2j,
             (1, (2.0,)), {3: "int key", "s": [np.float32(1.5)]}, np.arange(3, dtype=np.int8),
             Tensor([1.0, 2.0]), nn.Parameter(np.ones(2)), Tensor(np.int64(4))]
    checkpoint = {"model": model.state_dict(), "optimizer": opt.state_dict(), "extra": extra}
    path = tmp_path / "run.pt"
    cr.save(checkpoint, path)
    assert path.exists() and not (tmp_path / "run.pt.npz").exists()  # the path as given
    with np.load(path, allow_pickle=False) as archive:  # a NumPy archive, no pickle
        assert "__chainrule_structure__" in archive.files
    back = cr.load(path)
    assert type(back["model"]) is OrderedDict and list(back["model"]) == list(model.state_dict())
    for key, value in model.state_dict().items():
        assert type(back["model"][key]) is Tensor and not back["model"][key].requires_grad
        np.testing.assert_array_equal(back["model"][key].numpy(), value.numpy())
    assert back["optimizer"]["param_groups"] == opt.state_dict()["param_groups"]
    assert back["optimizer"]["state"][0]["step"] == 1
    got = back["extra"]
    assert got[:4] == extra[:4] and math.isnan(got[4]) and math.copysign(1, got[5]) == -1
    assert got[6:10] == extra[6:10] and type(got[8]) is bool
    assert got[10] == (1, (2.0,)) and got[11] == {3: "int key", "s": [np.float32(1.5)]}
    assert type(got[11]["s"][0]) is np.float32
    assert got[12].dtype == np.int8 and got[12].tolist() == [0, 1, 2]
    assert type(got[13]) is Tensor and got[13].requires_grad
    assert type(got[14]) is nn.Parameter and got[14].requires_grad
    assert type(got[15]) is Tensor and got[15].dtype == np.int64 and not got[15].requires_grad
    # a file object works too, and loading twice gives the same
    buffer = io.BytesIO()
    cr.save(extra[:3], buffer)
    buffer.seek(0)
    assert cr.load(buffer, map_location="cpu", weights_only=True) == extra[:3]


def test_save_refuses_what_it_cannot_store_and_load_what_it_did_not_write(tmp_path):
    model = nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"obj\['model'\] is a Linear.*state_dict\(\)"):
        cr.save({"model": model}, tmp_path / "x")
    with pytest.raises(TypeError, match="keys must be strings or integers"):
        cr.save({(1, 2): 3}, tmp_path / "x")
    with pytest.raises(TypeError, match="computed Tensor that requires grad"):
        cr.save([Tensor(1.0) * 2], tmp_path / "x")
    with pytest.raises(TypeError, match="is a function"):
        cr.save({"f": lambda: 0}, tmp_path / "x")
    pickled = tmp_path / "torch_style.pt"
    pickled.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ValueError, match="not a file chainrule.save wrote"):
        cr.load(pickled)
    plain = tmp_path / "plain.npz"
    np.savez(plain, a=np.ones(2))
    with pytest.raises(ValueError, match="torch.save is a pickle"):
        cr.load(plain)
    with pytest.raises(FileNotFoundError):
        cr.load(tmp_path / "missing.pt")
    with pytest.raises(ValueError, match="no devices"):
        cr.load(plain, map_location="cuda")
