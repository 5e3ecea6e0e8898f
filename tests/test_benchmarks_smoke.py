"""The benchmark workloads, tiny and in-process: chainrule agrees with the hand-written
gradients, and the hand-written gradients agree with finite differences. No timing."""

import math

import numpy as np
import pytest
from benchmarks import _frameworks as F
from benchmarks import _problems as P
from benchmarks._worker import run_workload

CHAINRULE = F.builders("chainrule")


@pytest.mark.parametrize("name", P.WORKLOADS)
def test_chainrule_matches_hand_written(name):
    result = run_workload("chainrule", name, "tiny", CHAINRULE)
    assert result["status"] == "ok", result
    assert result["max_rel_error"] <= 1e-10


def test_mismatch_is_reported():
    wrong = {"hessian": lambda d: lambda: P.hessian(d["A"], d["x"]) * 1.001}
    result = run_workload("chainrule", "hessian", "tiny", wrong)
    assert result["status"] == "MISMATCH"
    assert result["max_rel_error"] == pytest.approx(1e-3)


def _fd_grad(f, x, eps=1e-6):
    """Central differences of scalar f over every element of array x."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        g[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return g


def test_hand_written_scalar_chain():
    x, iters = 0.7, 5
    f = lambda x: P.scalar_chain(x, iters)[0]
    assert P.scalar_chain(x, iters)[1] == pytest.approx((f(x + 1e-6) - f(x - 1e-6)) / 2e-6,
                                                        rel=1e-6)


def test_hand_written_mlp_and_rnn():
    d = P.make_data("mlp", "tiny")
    loss, grads = P.mlp(d["params"], d["x"], d["y"])
    assert loss == pytest.approx(P.mlp_loss(d["params"], d["x"], d["y"]))
    for k in (0, 5):
        def f(p, k=k):
            params = list(d["params"])
            params[k] = p
            return P.mlp_loss(params, d["x"], d["y"])
        np.testing.assert_allclose(grads[k], _fd_grad(f, d["params"][k]), atol=1e-7)

    d = P.make_data("rnn", "tiny")
    loss, grads = P.rnn(d["params"], d["xs"], d["target"])
    assert loss == pytest.approx(P.rnn_loss(d["params"], d["xs"], d["target"]))
    for k in range(4):
        def f(p, k=k):
            params = list(d["params"])
            params[k] = p
            return P.rnn_loss(params, d["xs"], d["target"])
        np.testing.assert_allclose(grads[k], _fd_grad(f, d["params"][k]), atol=1e-7)


def test_hand_written_hessian_jacobian_chain():
    d = P.make_data("hessian", "tiny")
    grad = lambda x: _fd_grad(lambda y: P.hessian_fun(y, d["A"]), x)
    hess = np.array([(grad(d["x"] + e * 1e-4) - grad(d["x"] - e * 1e-4)) / 2e-4
                     for e in np.eye(len(d["x"]))])
    np.testing.assert_allclose(P.hessian(d["A"], d["x"]), hess, atol=1e-4)

    d = P.make_data("jacobian", "tiny")
    jac = np.array([(P.jacobian_fun(d["x"] + e * 1e-6, d["B"]) -
                     P.jacobian_fun(d["x"] - e * 1e-6, d["B"])) / 2e-6
                    for e in np.eye(len(d["x"]))]).T
    np.testing.assert_allclose(P.jacobian(d["B"], d["x"]), jac, atol=1e-7)

    d = P.make_data("tape_memory", "tiny")
    loss, dW = P.chain(d["W"], d["X"], d["steps"])
    assert loss == pytest.approx(P.chain_loss(d["W"], d["X"], d["steps"]))
    assert math.isfinite(loss)
    np.testing.assert_allclose(
        dW, _fd_grad(lambda W: P.chain_loss(W, d["X"], d["steps"]), d["W"]), atol=1e-5)


def test_report_renders_tiny_run():
    from benchmarks import _report

    runs = {"scale": "tiny", "machine": _report.machine_info(), "frameworks": {}}
    for fw in ("chainrule", "numpy"):
        results = {name: run_workload(fw, name, "tiny") for name in ("scalar_chain", "mlp")}
        runs["frameworks"][fw] = {"framework": fw, "version": F.version(fw), "results": results}
    text = _report.markdown(runs)
    assert "| scalar chain" in text and "µs/prim" in text
    met = {what: x for what, _, x, _ in _report.targets(runs)}
    assert met["mlp chainrule / hand-written"] > 0
