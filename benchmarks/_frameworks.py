"""Each framework's version of each workload.

``builders(framework)`` returns {workload: build(data) -> run}, where ``run()``
computes the workload once and returns the derivative as NumPy values (pytrees of
arrays/floats) for checking. Imports happen inside, so a worker process imports
only its own framework, after the thread settings are in place.
"""

from __future__ import annotations

import numpy as np

from . import _problems as P

FRAMEWORKS = ("chainrule", "chainrule_jit", "autograd", "torch", "jax", "jax_jit", "numpy")

# Workloads that measure memory only; tracemalloc sees NumPy's allocations, so
# peak memory is reported for the NumPy-based frameworks only (on every workload).
MEMORY_WORKLOADS = ("tape_memory", "checkpoint")
NUMPY_BASED = ("chainrule", "autograd", "numpy")


def version(framework: str) -> str:
    if framework == "numpy":
        return np.__version__
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        dist = {"jax_jit": "jax", "chainrule_jit": "chainrule"}.get(framework, framework)
        return dist_version(dist)
    except PackageNotFoundError:
        return "?"


def builders(framework: str) -> dict:
    if framework == "numpy":
        return _numpy()
    if framework in ("chainrule", "autograd"):
        return _autograd_like(framework)
    if framework == "chainrule_jit":
        return _chainrule_jit()
    if framework == "torch":
        return _torch()
    if framework in ("jax", "jax_jit"):
        return _jax(jit=framework == "jax_jit")
    raise ValueError(f"unknown framework {framework!r}; choose from {', '.join(FRAMEWORKS)}")


# ----------------------------------------------------------------------------- hand-written


def _numpy() -> dict:
    return {
        "scalar_chain": lambda d: lambda: P.scalar_chain(d["x"], d["iters"])[1],
        "mlp": lambda d: lambda: P.mlp(d["params"], d["x"], d["y"])[1],
        "rnn": lambda d: lambda: P.rnn(d["params"], d["xs"], d["target"])[1],
        "hessian": lambda d: lambda: P.hessian(d["A"], d["x"]),
        "jacobian": lambda d: lambda: P.jacobian(d["B"], d["x"]),
        "tape_memory": lambda d: lambda: P.chain(d["W"], d["X"], d["steps"])[1],
        "checkpoint": lambda d: lambda: P.chain(d["W"], d["X"], d["steps"])[1],
    }


# ----------------------------------------------------------------------------- chainrule, autograd


def _autograd_like(framework: str) -> dict:
    """chainrule and autograd share one API, so they share one implementation."""
    if framework == "chainrule":
        import chainrule as ad
        import chainrule.numpy as anp

        stop_gradient = ad.stop_gradient
    else:
        import autograd as ad
        import autograd.numpy as anp
        from autograd.tracer import getval as stop_gradient

    def scalar_chain(d):
        def f(x):
            for _ in range(d["iters"]):
                x = anp.sin(x) * x + 0.5
            return x

        df = ad.grad(f)
        return lambda: df(d["x"])

    def mlp(d):
        loss = lambda params: P.mlp_loss(params, d["x"], d["y"], anp, stop_gradient)
        vg = ad.value_and_grad(loss)
        return lambda: vg(d["params"])[1]

    def rnn(d):
        vg = ad.value_and_grad(lambda params: P.rnn_loss(params, d["xs"], d["target"], anp))
        return lambda: vg(d["params"])[1]

    def hessian(d):
        h = ad.hessian(lambda x: P.hessian_fun(x, d["A"], anp))
        return lambda: h(d["x"])

    def jacobian(d):
        j = ad.jacobian(lambda x: P.jacobian_fun(x, d["B"], anp))
        return lambda: j(d["x"])

    def tape_memory(d):
        g = ad.grad(lambda W: P.chain_loss(W, d["X"], d["steps"], anp))
        return lambda: g(d["W"])

    def checkpoint(d):
        block = ad.checkpoint(lambda X, W: P.chain_block(X, W, d["block"]))

        def loss(W):
            X = d["X"]
            for _ in range(d["steps"] // d["block"]):
                X = block(X, W)
            return anp.sum(X)

        g = ad.grad(loss)
        return lambda: g(d["W"])

    return dict(scalar_chain=scalar_chain, mlp=mlp, rnn=rnn, hessian=hessian,
                jacobian=jacobian, tape_memory=tape_memory, checkpoint=checkpoint)


# ----------------------------------------------------------------------------- chainrule.jit


def _chainrule_jit() -> dict:
    """The chainrule column's derivatives staged by chainrule.jit; the data are arguments
    (not constants of the trace). The first run() traces, later ones run the program."""
    import chainrule as cr
    import chainrule.numpy as anp

    def scalar_chain(d):
        def f(x):
            for _ in range(d["iters"]):
                x = anp.sin(x) * x + 0.5
            return x

        df = cr.jit(cr.grad(f))
        return lambda: df(d["x"])

    def mlp(d):
        loss = lambda p, x, y: P.mlp_loss(p, x, y, anp, cr.stop_gradient)
        vg = cr.jit(cr.value_and_grad(loss))
        return lambda: vg(d["params"], d["x"], d["y"])[1]

    def rnn(d):
        vg = cr.jit(cr.value_and_grad(lambda p, xs, t: P.rnn_loss(p, xs, t, anp)))
        return lambda: vg(d["params"], d["xs"], d["target"])[1]

    def hessian(d):
        h = cr.jit(cr.hessian(lambda x, A: P.hessian_fun(x, A, anp)))
        return lambda: h(d["x"], d["A"])

    def jacobian(d):
        j = cr.jit(cr.jacobian(lambda x, B: P.jacobian_fun(x, B, anp)))
        return lambda: j(d["x"], d["B"])

    return dict(scalar_chain=scalar_chain, mlp=mlp, rnn=rnn, hessian=hessian, jacobian=jacobian)


# ----------------------------------------------------------------------------- PyTorch


def _torch() -> dict:
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    f64 = torch.float64
    T = lambda a: torch.tensor(a, dtype=f64)

    def params_of(d):
        return [T(p).requires_grad_() for p in d["params"]]

    def scalar_chain(d):
        def run():
            x0 = torch.tensor(d["x"], dtype=f64, requires_grad=True)
            x = x0
            for _ in range(d["iters"]):
                x = torch.sin(x) * x + 0.5
            (g,) = torch.autograd.grad(x, x0)
            return g.item()

        return run

    def mlp(d):
        params, x, y = params_of(d), T(d["x"]), T(d["y"])

        def run():
            loss = P.mlp_loss(params, x, y, _TorchNp, lambda z: z.detach())
            return [g.numpy() for g in torch.autograd.grad(loss, params)]

        return run

    def rnn(d):
        params, xs, target = params_of(d), T(d["xs"]), T(d["target"])

        def run():
            loss = P.rnn_loss(params, xs, target, _TorchNp)
            return [g.numpy() for g in torch.autograd.grad(loss, params)]

        return run

    def hessian(d):
        A, x = T(d["A"]), T(d["x"])
        h = torch.func.hessian(lambda x: P.hessian_fun(x, A, _TorchNp))
        return lambda: h(x).numpy()

    def jacobian(d):
        B, x = T(d["B"]), T(d["x"])
        j = torch.func.jacrev(lambda x: P.jacobian_fun(x, B, _TorchNp))
        return lambda: j(x).numpy()

    return dict(scalar_chain=scalar_chain, mlp=mlp, rnn=rnn, hessian=hessian, jacobian=jacobian)


class _TorchNp:
    """The few NumPy names the shared loss functions use, on torch tensors."""

    @staticmethod
    def tanh(x):
        import torch

        return torch.tanh(x)

    @staticmethod
    def exp(x):
        import torch

        return torch.exp(x)

    @staticmethod
    def log(x):
        import torch

        return torch.log(x)

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        import torch

        return torch.sum(x) if axis is None else torch.sum(x, dim=axis, keepdim=keepdims)

    @staticmethod
    def max(x, axis, keepdims=False):
        import torch

        return torch.amax(x, dim=axis, keepdim=keepdims)

    @staticmethod
    def zeros(shape):
        import torch

        return torch.zeros(shape, dtype=torch.float64)


# ----------------------------------------------------------------------------- JAX


def _jax(jit: bool) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp

    maybe_jit = jax.jit if jit else (lambda f: f)
    to_np = lambda tree: jax.tree_util.tree_map(np.asarray, tree)

    def scalar_chain(d):
        def f(x):
            for _ in range(d["iters"]):
                x = jnp.sin(x) * x + 0.5
            return x

        df = maybe_jit(jax.grad(f))
        return lambda: float(df(d["x"]))

    def mlp(d):
        x, y = jnp.asarray(d["x"]), jnp.asarray(d["y"])
        params = tuple(map(jnp.asarray, d["params"]))
        vg = maybe_jit(jax.value_and_grad(
            lambda p: P.mlp_loss(p, x, y, jnp, jax.lax.stop_gradient)))
        return lambda: to_np(vg(params)[1])

    def rnn(d):
        xs, target = jnp.asarray(d["xs"]), jnp.asarray(d["target"])
        params = tuple(map(jnp.asarray, d["params"]))
        vg = maybe_jit(jax.value_and_grad(lambda p: P.rnn_loss(p, xs, target, jnp)))
        return lambda: to_np(vg(params)[1])

    def hessian(d):
        A, x = jnp.asarray(d["A"]), jnp.asarray(d["x"])
        h = maybe_jit(jax.hessian(lambda x: P.hessian_fun(x, A, jnp)))
        return lambda: np.asarray(h(x))

    def jacobian(d):
        B, x = jnp.asarray(d["B"]), jnp.asarray(d["x"])
        j = maybe_jit(jax.jacrev(lambda x: P.jacobian_fun(x, B, jnp)))
        return lambda: np.asarray(j(x))

    return dict(scalar_chain=scalar_chain, mlp=mlp, rnn=rnn, hessian=hessian, jacobian=jacobian)
