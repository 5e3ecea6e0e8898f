"""chainrule.optim: SGD (momentum) and Adam reach known minima and match the update formulas."""

import numpy as np
import pytest

import chainrule.numpy as cnp
from chainrule import Tensor, optim

TARGET = np.array([1.0, -2.0, 0.5])
SCALES = np.array([1.0, 3.0, 0.5])


def quadratic(w):
    return (SCALES * (w - TARGET) ** 2).sum()


def minimize(opt, w, steps):
    for _ in range(steps):
        opt.zero_grad()
        quadratic(w).backward()
        opt.step()
    return w


def test_sgd_reaches_the_minimum():
    w = Tensor(np.zeros(3))
    minimize(optim.SGD([w], lr=0.1), w, 200)
    np.testing.assert_allclose(w.numpy(), TARGET, atol=1e-8)


def test_sgd_momentum_reaches_the_minimum_and_matches_the_formula():
    w = Tensor(np.zeros(3))
    opt = optim.SGD([w], lr=0.05, momentum=0.9)
    minimize(opt, w, 2)
    # by hand: g0 = -2*S*T at w=0; buf0 = g0; w1 = -lr*g0; buf1 = 0.9*g0 + g1; w2 = w1 - lr*buf1
    g0 = 2 * SCALES * (0 - TARGET)
    w1 = -0.05 * g0
    g1 = 2 * SCALES * (w1 - TARGET)
    np.testing.assert_allclose(w.numpy(), w1 - 0.05 * (0.9 * g0 + g1))
    minimize(opt, w, 400)
    np.testing.assert_allclose(w.numpy(), TARGET, atol=1e-8)


def test_sgd_nesterov_and_weight_decay():
    w = Tensor(np.zeros(3))
    minimize(optim.SGD([w], lr=0.05, momentum=0.5, nesterov=True, weight_decay=0.1), w, 500)
    # the minimum of sum S (w - T)^2 + 0.05 |w|^2 (weight decay adds 0.1 w to the gradient)
    np.testing.assert_allclose(w.numpy(), 2 * SCALES * TARGET / (2 * SCALES + 0.1), atol=1e-8)


def test_adam_reaches_the_minimum_and_first_step_is_lr_sized():
    w = Tensor(np.zeros(3))
    opt = optim.Adam([w], lr=0.1)
    minimize(opt, w, 1)
    # Adam's first step is lr * sign(g) (up to eps)
    np.testing.assert_allclose(w.numpy(), 0.1 * np.sign(TARGET), rtol=1e-6)
    minimize(opt, w, 1000)
    np.testing.assert_allclose(w.numpy(), TARGET, atol=1e-4)


def test_adam_least_squares_matches_lstsq():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((20, 3))
    b = a @ np.array([0.5, -1.0, 2.0]) + 0.1 * rng.standard_normal(20)
    w = Tensor(np.zeros(3))
    opt = optim.Adam([w], lr=0.1)
    for _ in range(400):
        opt.zero_grad()
        ((a @ w - b) ** 2).mean().backward()
        opt.step()
    np.testing.assert_allclose(w.numpy(), np.linalg.lstsq(a, b, rcond=None)[0], atol=1e-5)


def test_parameter_groups_and_zero_grad():
    a, b = Tensor(1.0), Tensor(1.0)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    (a * 2 + b * 2).backward()
    opt.step()
    assert (a.item(), b.item()) == pytest.approx((0.8, 0.0))
    assert a.is_leaf and a.requires_grad
    opt.zero_grad(set_to_none=False)
    assert a.grad.item() == 0.0
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_step_does_not_disturb_recorded_graphs():
    w = Tensor(np.array([2.0]))
    y = cnp.sin(w).sum()
    (w * w).sum().backward()
    optim.SGD([w], lr=1.0).step()
    y.backward()  # uses the value w had when y was recorded
    np.testing.assert_allclose(w.grad.numpy(), [4.0 + np.cos(2.0)])


def test_bad_parameters_are_refused():
    with pytest.raises(TypeError, match="leaf Tensors"):
        optim.SGD([Tensor(1.0) * 2], lr=0.1)
    with pytest.raises(TypeError, match="leaf Tensors"):
        optim.Adam([np.zeros(2)])
    with pytest.raises(ValueError, match="empty"):
        optim.Adam([])


# ----------------------------------------------------------------------------- state dicts
def _trained(make, steps: int, start=(0.5, -1.0, 2.0)):
    w = Tensor(np.array(start))
    opt = make([w])
    minimize(opt, w, steps)
    return w, opt


@pytest.mark.parametrize("make", [
    lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda p: optim.Adam(p, lr=0.05, betas=(0.8, 0.99), weight_decay=0.01),
])
def test_state_dict_resumes_a_run_bit_for_bit(make):
    w, opt = _trained(make, 5)
    state = opt.state_dict()
    assert list(state) == ["state", "param_groups"] and state["param_groups"][0]["params"] == [0]
    assert all(isinstance(v, (Tensor, int)) for v in state["state"][0].values())
    at_step_5 = w.numpy().copy()
    minimize(opt, w, 7)  # the state dict taken before is a snapshot: later steps leave it
    w2 = Tensor(at_step_5)
    opt2 = make([w2])
    opt2.load_state_dict(state)
    minimize(opt2, w2, 7)
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    fresh = Tensor(at_step_5)  # without the state, the run differs (the test can fail)
    minimize(make([fresh]), fresh, 7)
    assert not np.array_equal(fresh.numpy(), w.numpy())


def test_load_state_dict_checks_groups_and_casts_to_the_parameters_dtype():
    w, opt = _trained(lambda p: optim.Adam(p, lr=0.1), 3)
    state = opt.state_dict()
    other = optim.Adam([Tensor(np.zeros(3)), Tensor(np.zeros(3))], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        other.load_state_dict(state)
    two_groups = optim.Adam([{"params": [Tensor(np.zeros(3))]}, {"params": [Tensor(1.0)]}])
    with pytest.raises(ValueError, match="different number of parameter groups"):
        two_groups.load_state_dict(state)
    w32 = Tensor(np.zeros(3, dtype=np.float32))
    opt32 = optim.Adam([w32], lr=0.5)
    opt32.load_state_dict(state)
    assert opt32.param_groups[0]["lr"] == 0.1  # the options come from the state dict
    assert opt32.state[w32]["exp_avg"].dtype == np.float32 and opt32.state[w32]["step"] == 3
    # a set option this optimizer does not have would be ignored silently: refused
    state["param_groups"][0]["amsgrad"] = True
    with pytest.raises(ValueError, match="amsgrad=True"):
        optim.Adam([Tensor(np.zeros(3))]).load_state_dict(state)
    state["param_groups"][0]["amsgrad"] = False  # an unset one is harmless
    optim.Adam([Tensor(np.zeros(3))]).load_state_dict(state)


def test_add_param_group_and_duplicates():
    a, b = Tensor(1.0), Tensor(2.0)
    opt = optim.SGD([a], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert opt.param_groups[1] == {"lr": 0.01, "momentum": 0.5, "dampening": 0.0,
                                   "weight_decay": 0.0, "nesterov": False, "params": [b]}
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([a, a], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(a, lr=0.1)


# ----------------------------------------------------------------------------- schedules
def test_step_lr_by_hand():
    w = Tensor(1.0)
    opt = optim.SGD([{"params": [w]}, {"params": [Tensor(2.0)], "lr": 1.0}], lr=0.1)
    scheduler = optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    rates = []
    for _ in range(8):
        opt.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr())
    assert [r[0] for r in rates] == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025,
                                                   0.025], rel=1e-15)
    assert [r[1] for r in rates][:3] == pytest.approx([1.0, 1.0, 0.5])
    assert opt.param_groups[0]["initial_lr"] == 0.1


def test_cosine_schedule_follows_the_half_cosine_and_climbs_back():
    opt = optim.SGD([Tensor(1.0)], lr=1.0)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.2)
    rates = []
    for _ in range(8):
        opt.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr()[0])
    closed = [0.2 + 0.8 * (1 + np.cos(np.pi * e / 4)) / 2 for e in range(1, 9)]
    np.testing.assert_allclose(rates, closed, rtol=1e-12)  # down to 0.2 at 4, back up at 8


def test_scheduler_state_dict_and_resume():
    opt = optim.SGD([Tensor(1.0)], lr=1.0)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    for _ in range(3):
        opt.step()
        scheduler.step()
    saved, saved_opt = scheduler.state_dict(), opt.state_dict()
    assert "optimizer" not in saved and saved["last_epoch"] == 3
    following = []
    for _ in range(3):
        opt.step()
        scheduler.step()
        following.append(scheduler.get_last_lr()[0])
    opt2 = optim.SGD([Tensor(1.0)], lr=0.5)
    opt2.load_state_dict(saved_opt)
    scheduler2 = optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=10)
    scheduler2.load_state_dict(saved)
    again = []
    for _ in range(3):
        opt2.step()
        scheduler2.step()
        again.append(scheduler2.get_last_lr()[0])
    assert again == following
    with pytest.raises(KeyError, match="initial_lr"):
        optim.lr_scheduler.StepLR(optim.SGD([Tensor(1.0)], lr=1.0), 2, last_epoch=4)


def test_scheduler_stepped_before_the_optimizer_warns_as_torch():
    opt = optim.SGD([Tensor(1.0)], lr=1.0)
    scheduler = optim.lr_scheduler.StepLR(opt, step_size=1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        scheduler.step()


# ----------------------------------------------------------------------------- against torch
def _torch():
    return pytest.importorskip("torch", reason="the comparison with PyTorch needs torch")


@pytest.mark.parametrize("name, kwargs", [
    ("StepLR", dict(step_size=3, gamma=0.3)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
    ("CosineAnnealingLR", dict(T_max=1)),
])
def test_schedules_match_torch(name, kwargs):
    torch = _torch()
    ours_params = [Tensor(1.0), Tensor(2.0)]
    theirs_params = [torch.tensor(1.0, requires_grad=True), torch.tensor(2.0, requires_grad=True)]
    groups = [{"params": [ours_params[0]]}, {"params": [ours_params[1]], "lr": 0.7}]
    opt = optim.SGD(groups, lr=0.3)
    opt_ref = torch.optim.SGD([{"params": [theirs_params[0]]},
                               {"params": [theirs_params[1]], "lr": 0.7}], lr=0.3)
    scheduler = getattr(optim.lr_scheduler, name)(opt, **kwargs)
    scheduler_ref = getattr(torch.optim.lr_scheduler, name)(opt_ref, **kwargs)
    for step in range(23):
        if step == 9:  # through state dicts, halfway
            scheduler.load_state_dict(scheduler.state_dict())
        opt.step()
        opt_ref.step()
        scheduler.step()
        scheduler_ref.step()
        np.testing.assert_allclose(scheduler.get_last_lr(), scheduler_ref.get_last_lr(),
                                   rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_optimizer_state_dicts_have_torchs_layout_and_load_torchs(kind):
    torch = _torch()
    kwargs = dict(lr=0.05, momentum=0.9) if kind == "SGD" else dict(lr=0.05)
    start = [np.array([0.5, -1.0]), np.array([[1.0, 2.0], [3.0, -4.0]])]
    ours = [Tensor(v) for v in start]
    theirs = [torch.tensor(v, requires_grad=True) for v in start]
    opt = getattr(optim, kind)(ours, **kwargs)
    opt_ref = getattr(torch.optim, kind)(theirs, **kwargs)

    def steps(n):
        for _ in range(n):
            for o, params, m in [(opt, ours, cnp), (opt_ref, theirs, torch)]:
                o.zero_grad()
                (m.sin(params[0]).sum() * (params[1] ** 2).sum()).backward()
                o.step()

    steps(3)
    mine, ref = opt.state_dict(), opt_ref.state_dict()
    assert list(mine["state"]) == list(ref["state"]) == [0, 1]
    assert set(mine["state"][0]) == set(ref["state"][0])
    assert mine["param_groups"][0]["params"] == ref["param_groups"][0]["params"]
    for key in kwargs:
        assert mine["param_groups"][0][key] == ref["param_groups"][0][key]
    # torch's state dict loads into chainrule's optimizer, and the runs go on together
    fresh = [Tensor(p.detach().numpy()) for p in theirs]
    ours[:] = fresh
    opt = getattr(optim, kind)(ours, lr=1.0)
    opt.load_state_dict(ref)
    steps(4)
    for p, r in zip(ours, theirs):
        np.testing.assert_allclose(p.numpy(), r.detach().numpy(), rtol=1e-12)
