"""The floor for the RNN workload, run by hand: ``python -m benchmarks.minimal_tape``.

(``python -m benchmarks.minimal_tape lstm``, ``... ode``: the same floor for GradBench's
lstm and ode objectives, run as written with this tape's ``np``; see ``lstm_floor``,
``ode_floor``.)

A minimal reverse-mode tape written for this one function (a closure per recorded
operation, one Python frame per backward node, no dtype, broadcasting, nesting or
higher-order support) differentiates the benchmark's RNN. It shows how close to the
hand-written gradient a Python tape can get on this machine, so that chainrule's ratio can
be read against what is possible here and not only against the target. Its gradient is
checked against the hand-written one. The figures go in docs/benchmarks.md.
"""

from __future__ import annotations

import gc
import itertools
import os
import sys

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


class Traced:
    """A value recorded on a ``Tape``: the array and the index of its node."""

    __slots__ = ("value", "i", "tape")
    __array_ufunc__ = None  # (an ndarray operand defers to these operators)

    def __init__(self, value, i, tape):
        self.value, self.i, self.tape = value, i, tape

    shape = property(lambda self: self.value.shape)

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        return (self[k] for k in range(len(self.value)))

    def __getitem__(self, k):
        shape = self.value.shape

        def vjp(g):
            out = np.zeros(shape)
            out[k] = g
            return (out,)

        return self.tape.record(self.value[k], (self.i,), vjp)

    def __neg__(self):
        return self.tape.record(-self.value, (self.i,), lambda g: (-g,))

    # Binary operators: the rule for each case (which operands are traced, whether one is
    # broadcast) is chosen when the call is recorded, from the shapes.
    def __add__(self, other):
        x = self.value
        if type(other) is Traced:
            y = other.value
            out = x + y
            if x.shape == y.shape:
                return self.tape.record(out, (self.i, other.i), lambda g: (g, g))
            return self.tape.record(out, (self.i, other.i), lambda g: (
                _summed(g, x), _summed(g, y)))
        return self.tape.record(x + other, (self.i,), lambda g: (_summed(g, x),))

    def __radd__(self, other):
        x = self.value
        return self.tape.record(other + x, (self.i,), lambda g: (_summed(g, x),))

    def __sub__(self, other):
        x, y = self.value, other.value  # (lstm subtracts traced values only)
        out = x - y
        return self.tape.record(out, (self.i, other.i), lambda g: (
            _summed(g, x), _summed(-g, y)))

    def __mul__(self, other):
        x = self.value
        if type(other) is Traced:
            y = other.value
            out = x * y
            if x.shape == y.shape:
                return self.tape.record(out, (self.i, other.i), lambda g: (g * y, g * x))
            return self.tape.record(out, (self.i, other.i), lambda g: (
                _summed(g * y, x), _summed(g * x, y)))
        return self.tape.record(x * other, (self.i,), lambda g: (_summed(g * other, x),))

    def __rmul__(self, other):
        x = self.value
        return self.tape.record(other * x, (self.i,), lambda g: (_summed(g * other, x),))

    def __truediv__(self, other):  # (lstm divides by a number)
        return self.tape.record(self.value / other, (self.i,), lambda g: (g / other,))

    def __rtruediv__(self, other):  # (a number by a traced value)
        x = self.value
        out = other / x
        return self.tape.record(out, (self.i,), lambda g: (-g * out / x,))


def _summed(g, x):
    """``g`` summed over the axes ``x`` was broadcast along (lstm: to a 0-d value)."""
    return g if np.shape(g) == np.shape(x) else np.sum(g)


class Tape:
    """The least a Python tape does per primitive: one operator call, one node (a tuple in
    this list), one VJP closure doing the NumPy arithmetic; broadcasting is decided when
    the call is recorded, from the shapes."""

    def __init__(self):
        self.nodes = []  # (vjp, parent indices)

    def record(self, value, parents, vjp):
        nodes = self.nodes
        nodes.append((vjp, parents))
        return Traced(value, len(nodes) - 1, self)

    def gradients(self, out, inputs):
        grads = [None] * len(self.nodes)
        grads[out.i] = 1.0
        nodes = self.nodes
        for i in range(len(nodes) - 1, -1, -1):
            g = grads[i]
            vjp, parents = nodes[i]
            if g is None or vjp is None:  # (a root keeps its cotangent)
                continue
            grads[i] = None
            for p, gp in zip(parents, vjp(g)):
                grads[p] = gp if grads[p] is None else grads[p] + gp
        return [grads[x.i] for x in inputs]


class TapeNumpy:
    """The NumPy functions the lstm objective calls, on ``Traced`` values."""

    @staticmethod
    def exp(x):
        out = np.exp(x.value)
        return x.tape.record(out, (x.i,), lambda g: (g * out,))

    @staticmethod
    def tanh(x):
        out = np.tanh(x.value)
        return x.tape.record(out, (x.i,), lambda g: (g * (1.0 - out * out),))

    @staticmethod
    def log(x):
        xv = x.value
        return x.tape.record(np.log(xv), (x.i,), lambda g: (g / xv,))

    @staticmethod
    def sum(x):
        shape = x.value.shape
        return x.tape.record(np.sum(x.value), (x.i,), lambda g: (np.full(shape, g),))

    @staticmethod
    def concatenate(pieces):  # (ode: every piece traced, along axis 0)
        ends = list(itertools.accumulate(len(p.value) for p in pieces))
        starts = [0] + ends[:-1]
        return pieces[0].tape.record(
            np.concatenate([p.value for p in pieces]), tuple(p.i for p in pieces),
            lambda g: tuple(g[a:b] for a, b in zip(starts, ends)))

    zeros_like = staticmethod(lambda x: np.zeros_like(x.value))

    @staticmethod
    def split(x, n):
        size = x.value.shape[0] // n
        return [x[k * size:(k + 1) * size] for k in range(n)]


def on_tape(fun, module, **names):
    """``fun`` of GradBench's ``module`` with its ``np`` this tape's (and ``names``)."""
    import types

    return types.FunctionType(fun.__code__, {**module.__dict__, "np": TapeNumpy, **names})


def lstm_floor(args):
    """The lstm objective as written (its own code, with ``np`` this tape's) and its
    gradient in (main_params, extra_params) on the minimal tape."""
    from .gradbench.evals import lstm

    loss = on_tape(lstm.lstm_loss, lstm, sigmoid=on_tape(lstm.sigmoid, lstm))
    gc.disable()  # (as chainrule does while it records and sweeps: no cycles here)
    try:
        return _lstm_floor(loss, args)
    finally:
        gc.enable()


def _lstm_floor(on_tape, args):
    tape = Tape()
    main, extra = (Traced(a, -1, tape) for a in args[:2])
    for k, x in enumerate((main, extra)):  # (roots: nodes without parents)
        tape.nodes.append((None, ()))
        x.i = k
    loss = on_tape(main, extra, *args[2:])
    return loss.value, tape.gradients(loss, (main, extra))


def ode_floor(x, s):
    """ode's ``last(x, s)`` as written and its gradient on the minimal tape."""
    from .gradbench.evals import ode

    primal = on_tape(ode.primal, ode, ode_fun=on_tape(ode.ode_fun, ode))
    gc.disable()
    try:
        tape = Tape()
        traced = Traced(x, 0, tape)
        tape.nodes.append((None, ()))
        out = primal(traced, s)[-1]
        return out.value, tape.gradients(out, (traced,))[0]
    finally:
        gc.enable()


def ode_main() -> None:
    import chainrule

    from .gradbench.profile import ode_case

    _, objective, argnum, args = ode_case()
    want = chainrule.grad(objective, argnum)(*args)
    error = float(np.max(np.abs(ode_floor(*args)[1] - want)))
    assert error < 1e-10, f"the minimal tape's gradient is off by {error}"
    for _ in range(3):  # (interleaved: the machine is shared)
        objective_ms = best_cpu_ms(lambda: objective(*args), repeats=20)
        tape_ms = best_cpu_ms(lambda: ode_floor(*args), repeats=20)
        ours_ms = best_cpu_ms(lambda: chainrule.grad(objective, argnum)(*args), repeats=20)
        print(f"ode gradient (best CPU time of 20): objective {objective_ms:.2f} ms, minimal "
              f"tape {tape_ms:.2f} ms ({tape_ms / objective_ms:.2f}x), chainrule "
              f"{ours_ms:.2f} ms ({ours_ms / objective_ms:.2f}x)")


def lstm_main() -> None:
    import chainrule

    from .gradbench.profile import lstm_case

    _, objective, argnum, args = lstm_case()
    want = chainrule.grad(objective, argnum)(*args)
    got = lstm_floor(args)[1]
    error = max(float(np.max(np.abs(a - b))) for a, b in zip(got, want))
    assert error < 1e-10, f"the minimal tape's gradient is off by {error}"
    for _ in range(3):  # (interleaved: the machine is shared)
        objective_ms = best_cpu_ms(lambda: objective(*args), repeats=5)
        tape_ms = best_cpu_ms(lambda: lstm_floor(args), repeats=5)
        ours_ms = best_cpu_ms(lambda: chainrule.grad(objective, argnum)(*args), repeats=5)
        print(f"lstm gradient (best CPU time of 5): objective {objective_ms:.1f} ms, minimal "
              f"tape {tape_ms:.1f} ms ({tape_ms / objective_ms:.2f}x), chainrule "
              f"{ours_ms:.1f} ms ({ours_ms / objective_ms:.2f}x)")


def main() -> None:
    if sys.argv[1:] == ["lstm"]:
        return lstm_main()
    if sys.argv[1:] == ["ode"]:
        return ode_main()
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
