"""The floor for the RNN workload, run by hand: ``python -m benchmarks.minimal_tape``.

A minimal reverse-mode tape written for this one function (a closure per recorded
operation, one Python frame per backward node, no dtype, broadcasting, nesting or
higher-order support) differentiates the benchmark's RNN. It shows how close to the
hand-written gradient a Python tape can get on this machine, so that chainrule's ratio can
be read against what is possible here and not only against the target. Its gradient is
checked against the hand-written one. The figures go in docs/benchmarks.md.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the benchmark runner (before numpy)

import numpy as np  # noqa: E402

from . import _problems as P  # noqa: E402
from .profile import best_cpu_ms  # noqa: E402


class Var:
    """A recorded value: its cotangent so far, and how to pull a cotangent back."""

    __slots__ = ("value", "grad", "parents", "pull_back")

    def __init__(self, value, parents=(), pull_back=None):
        self.value, self.grad, self.parents, self.pull_back = value, None, parents, pull_back


def rnn_gradient(params, xs, target):
    tape: list[Var] = []

    def record(value, parents, pull_back):
        var = Var(value, parents, pull_back)
        tape.append(var)
        return var

    def matmul(a, b):  # a is a constant array or a Var; b is a Var
        if isinstance(a, Var):
            return record(a.value @ b.value, (a, b), lambda g: (g @ b.value.T, a.value.T @ g))
        return record(a @ b.value, (b,), lambda g: (a.T @ g,))

    def add(a, b):  # b may be broadcast along the batch axis (the bias)
        return record(a.value + b.value, (a, b),
                      lambda g: (g, g if b.value.shape == g.shape else g.sum(0)))

    def tanh(a):
        out = np.tanh(a.value)
        return record(out, (a,), lambda g: (g * (1.0 - out * out),))

    wx, wh, b, wy = (Var(p) for p in params)
    h = Var(np.zeros((xs.shape[1], wh.value.shape[0])))
    for t in range(xs.shape[0]):
        h = tanh(add(add(matmul(xs[t], wx), matmul(h, wh)), b))
    err = h.value @ wy.value - target
    loss = 0.5 * np.sum(err * err) / xs.shape[1]
    d_out = err / xs.shape[1]
    wy.grad, h.grad = h.value.T @ d_out, d_out @ wy.value.T
    for var in reversed(tape):
        if var.grad is not None:
            for parent, g in zip(var.parents, var.pull_back(var.grad)):
                parent.grad = g if parent.grad is None else parent.grad + g
            var.grad = None
    return loss, (wx.grad, wh.grad, b.grad, wy.grad)


def main() -> None:
    d = P.make_data("rnn", "full")
    args = (d["params"], d["xs"], d["target"])
    got, want = rnn_gradient(*args)[1], P.rnn(*args)[1]
    error = max(float(np.max(np.abs(a - b))) for a, b in zip(got, want))
    assert error < 1e-10, f"the minimal tape's gradient is off by {error}"
    tape_ms = best_cpu_ms(lambda: rnn_gradient(*args), repeats=21)
    hand_ms = best_cpu_ms(lambda: P.rnn(*args), repeats=21)
    print(f"RNN gradient (best CPU time of 21): minimal tape {tape_ms:.2f} ms, hand-written "
          f"{hand_ms:.2f} ms, ratio {tape_ms / hand_ms:.3f}")


if __name__ == "__main__":
    main()
