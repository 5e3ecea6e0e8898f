"""The workloads: their sizes, their data and the hand-written NumPy gradients.

Every framework computes the same mathematical function on the same data; the
hand-written gradient below is the reference each result is checked against,
and the speed limit each framework is measured against.
"""

from __future__ import annotations

import math

import numpy as np

WORKLOADS = ("scalar_chain", "mlp", "rnn", "hessian", "jacobian", "tape_memory", "checkpoint")

# scale -> sizes. "full" is what the docs report; "quick" is a smoke run in seconds;
# "tiny" is for the in-process test.
SIZES = {
    "full": dict(chain_iters=1000, mlp=(784, 256, 256, 10, 128), rnn=(50, 32, 64, 128),
                 hess_n=100, jac=(200, 100), tape=(200, 256), block=20),
    "quick": dict(chain_iters=200, mlp=(784, 256, 256, 10, 128), rnn=(50, 32, 64, 128),
                  hess_n=100, jac=(200, 100), tape=(200, 64), block=20),
    "tiny": dict(chain_iters=20, mlp=(12, 8, 8, 3, 4), rnn=(5, 3, 4, 6),
                 hess_n=6, jac=(5, 4), tape=(12, 4), block=4),
}

PRIMITIVES_PER_ITER = 3  # sin, mul, add per step of the scalar chain


def make_data(name: str, scale: str) -> dict:
    """Deterministic inputs for one workload."""
    s = SIZES[scale]
    rng = np.random.default_rng(0)
    if name == "scalar_chain":
        return dict(x=0.7, iters=s["chain_iters"])
    if name == "mlp":
        n_in, h1, h2, n_out, batch = s["mlp"]
        params = (
            rng.standard_normal((n_in, h1)) / math.sqrt(n_in), np.zeros(h1),
            rng.standard_normal((h1, h2)) / math.sqrt(h1), np.zeros(h2),
            rng.standard_normal((h2, n_out)) / math.sqrt(h2), np.zeros(n_out),
        )
        x = rng.standard_normal((batch, n_in))
        y = np.eye(n_out)[rng.integers(0, n_out, batch)]
        return dict(params=params, x=x, y=y)
    if name == "rnn":
        steps, batch, n_in, hidden = s["rnn"]
        params = (
            rng.standard_normal((n_in, hidden)) / math.sqrt(n_in),
            rng.standard_normal((hidden, hidden)) / math.sqrt(hidden),
            np.zeros(hidden),
            rng.standard_normal((hidden, 1)) / math.sqrt(hidden),
        )
        xs = rng.standard_normal((steps, batch, n_in))
        target = rng.standard_normal((batch, 1))
        return dict(params=params, xs=xs, target=target)
    if name == "hessian":
        n = s["hess_n"]
        return dict(A=rng.standard_normal((n, n)) / math.sqrt(n), x=rng.standard_normal(n))
    if name == "jacobian":
        m, n = s["jac"]
        return dict(B=rng.standard_normal((m, n)) / math.sqrt(n), x=rng.standard_normal(n))
    if name in ("tape_memory", "checkpoint"):
        steps, n = s["tape"]
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))  # orthogonal: the chain stays O(1)
        return dict(X=rng.standard_normal((n, n)), W=q, steps=steps, block=s["block"])
    raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")


# ----------------------------------------------------------------------------- by hand


def scalar_chain(x, iters):
    """f(x): iterate x <- sin(x) * x + 0.5; returns (f(x), f'(x))."""
    saved = []
    for _ in range(iters):
        s = math.sin(x)
        saved.append((x, s))
        x = s * x + 0.5
    g = 1.0
    for x_k, s_k in reversed(saved):
        g *= math.cos(x_k) * x_k + s_k
    return x, g


def mlp_loss(params, x, y, np=np, stop_gradient=lambda v: v):
    """Softmax cross-entropy of a tanh MLP; written once for every NumPy-like API."""
    w1, b1, w2, b2, w3, b3 = params
    h = np.tanh(x @ w1 + b1)
    h = np.tanh(h @ w2 + b2)
    z = h @ w3 + b3
    z = z - np.max(stop_gradient(z), axis=1, keepdims=True)
    log_softmax = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(y * log_softmax) / x.shape[0]


def mlp(params, x, y):
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    z = h2 @ w3 + b3
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    total = e.sum(axis=1, keepdims=True)
    batch = x.shape[0]
    loss = -np.sum(y * (z - np.log(total))) / batch
    dz = (e / total - y) / batch
    dh2 = (dz @ w3.T) * (1 - h2 * h2)
    dh1 = (dh2 @ w2.T) * (1 - h1 * h1)
    grads = (x.T @ dh1, dh1.sum(0), h1.T @ dh2, dh2.sum(0), h2.T @ dz, dz.sum(0))
    return loss, grads


def rnn_loss(params, xs, target, np=np):
    """Vanilla tanh RNN over the steps of ``xs``, squared error of a readout of the last state."""
    wx, wh, b, wy = params
    h = np.zeros((xs.shape[1], wh.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh + b)
    err = h @ wy - target
    return 0.5 * np.sum(err * err) / xs.shape[1]


def rnn(params, xs, target):
    wx, wh, b, wy = params
    batch = xs.shape[1]
    hs = [np.zeros((batch, wh.shape[0]))]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ wx + hs[-1] @ wh + b))
    err = hs[-1] @ wy - target
    loss = 0.5 * np.sum(err * err) / batch
    d_out = err / batch
    dwy = hs[-1].T @ d_out
    dh = d_out @ wy.T
    dwx, dwh, db = np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b)
    for t in range(xs.shape[0] - 1, -1, -1):
        da = dh * (1 - hs[t + 1] * hs[t + 1])
        dwx += xs[t].T @ da
        dwh += hs[t].T @ da
        db += da.sum(0)
        dh = da @ wh.T
    return loss, (dwx, dwh, db, dwy)


def hessian_fun(x, A, np=np):
    """A smooth scalar function: sum(tanh(A x)) + |x|^2 / 2."""
    return np.sum(np.tanh(A @ x)) + 0.5 * np.sum(x * x)


def hessian(A, x):
    t = np.tanh(A @ x)
    return A.T @ ((-2 * t * (1 - t * t))[:, None] * A) + np.eye(len(x))


def jacobian_fun(x, B, np=np):
    return np.tanh(B @ x)


def jacobian(B, x):
    t = np.tanh(B @ x)
    return (1 - t * t)[:, None] * B


def chain_loss(W, X, steps, np=np):
    """sum(X W^steps): a chain of matrix products."""
    for _ in range(steps):
        X = X @ W
    return np.sum(X)


def chain_block(X, W, steps):
    for _ in range(steps):
        X = X @ W
    return X


def chain(W, X, steps):
    """Gradient of chain_loss by hand: keeps the `steps` intermediate products alive."""
    xs = []
    for _ in range(steps):
        xs.append(X)
        X = X @ W
    loss = np.sum(X)
    g = np.ones_like(X)
    dW = np.zeros_like(W)
    wt = W.T
    while xs:
        x_k = xs.pop()
        dW += x_k.T @ g
        g = g @ wt
    return loss, dW


REFERENCE = {
    "scalar_chain": lambda d: scalar_chain(d["x"], d["iters"])[1],
    "mlp": lambda d: mlp(d["params"], d["x"], d["y"])[1],
    "rnn": lambda d: rnn(d["params"], d["xs"], d["target"])[1],
    "hessian": lambda d: hessian(d["A"], d["x"]),
    "jacobian": lambda d: jacobian(d["B"], d["x"]),
    "tape_memory": lambda d: chain(d["W"], d["X"], d["steps"])[1],
    "checkpoint": lambda d: chain(d["W"], d["X"], d["steps"])[1],
}


def max_rel_error(result, reference) -> float:
    """Largest |result - reference| over the leaves, relative to the reference's scale."""
    res = _leaves(result)
    ref = _leaves(reference)
    if len(res) != len(ref):
        return math.inf
    worst = 0.0
    for a, b in zip(res, ref):
        a = np.asarray(a, dtype=float)
        b = np.asarray(b, dtype=float)
        if a.shape != b.shape:
            return math.inf
        scale = max(float(np.max(np.abs(b), initial=0.0)), 1e-30)
        worst = max(worst, float(np.max(np.abs(a - b), initial=0.0)) / scale)
    return worst


def _leaves(x) -> list:
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]
