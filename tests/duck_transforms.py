"""The transforms on another array library: each case computes one transform of one function
with arrays made by ``to_lib`` (CuPy's ``cupy.asarray``, or the strict stand-in's ``Strict``)
and the same with NumPy arrays; a test asserts the first is the library's array and equals the
second. Used by tests/test_duck_arrays.py (the stand-in, always) and tests/test_cupy.py (on a
GPU). Each case is called twice, at two points, so a transform that keeps something of its
first call (jit's program, a pattern, a cache) is checked at a second x.
"""

from __future__ import annotations

import functools

import numpy as onp

import chainrule as cr
import chainrule.numpy as np

RNG = onp.random.default_rng(11)
X = RNG.standard_normal(5)
BATCH = RNG.standard_normal((4, 5))
M = RNG.standard_normal((3, 5))


def smooth(x):
    return np.sum(np.tanh(x) * np.exp(x) / (1.0 + x**2))


def chained(x):
    return np.sin(x) * x[::-1] + np.cumsum(x)


def coupled(x):
    return np.sum(x[1:] ** 2 - x[:-1]) ** 2 + np.sum(np.cos(x))


def branchy(x):
    # a Python decision on a traced value: jit guards it, vmap runs each example's branch
    if np.sum(x) > 0:
        return np.sum(x**3)
    return np.sum(np.sin(x))


def powers(x):
    # Taylor rules that look at their input on the host (a power of a nonzero x, |x|)
    return np.sum(np.abs(x) ** 2.5 + np.sqrt(x**2 + 1.0) + 1.0 / (2.0 + x))


def linear_then_smooth(m):
    # hessian_diagonal's and laplacian's linear map with a smaller output (a 3 x 5 matrix)
    def f(x):
        return np.sum(np.exp(m @ x))

    return f


@functools.wraps(smooth)
def wrapped(x):
    return smooth(x) * 2.0


def cases(to_lib, branches: bool = True):
    """name -> (a transformed function, its point as a NumPy array); the function's own
    constants are made by ``to_lib`` (call with ``lambda a: a`` for NumPy's).
    ``branches``: with the functions whose own code takes a Python branch on a traced value
    (CuPy's ``bool()`` reads it from the device; the stand-in refuses any such read)."""
    m = to_lib(M)
    table = {
        "grad": (cr.grad(smooth), X),
        "grad of a wrapped function": (cr.grad(wrapped), X),
        "value_and_grad": (lambda x: cr.value_and_grad(coupled)(x)[1], X),
        "jvp": (lambda x: cr.jvp(chained, (x,), (x * 0.0 + 1.0,))[1], X),
        "jacobian": (cr.jacobian(chained), X),
        "jacfwd": (cr.jacfwd(chained), X),
        "hessian": (cr.hessian(coupled), X),
        "hessian_vector_product": (lambda x: cr.hessian_vector_product(coupled)(x, x), X),
        "hessian_diagonal": (cr.hessian_diagonal(coupled), X),
        "hessian_diagonal of a linear map": (cr.hessian_diagonal(linear_then_smooth(m)), X),
        "laplacian": (cr.laplacian(powers), X),
        "laplacian of a linear map": (cr.laplacian(linear_then_smooth(m)), X),
        "laplacian, sampled": (cr.laplacian(coupled, samples=3, key=0), X),
        "taylor_derivatives": (cr.taylor_derivatives(np.tanh, 4), X),
        "jet": (lambda x: cr.jet(powers, (x,), ([x * 0.0 + 1.0, x * 0.0, x * 0.0],))[1][2], X),
        "checkpoint": (cr.grad(lambda x: np.sum(cr.checkpoint(np.sin)(x) ** 2)), X),
        "jit": (cr.jit(coupled), X),
        "jit of grad": (cr.jit(cr.grad(coupled)), X),
        "jit of hessian": (cr.jit(cr.hessian(coupled)), X),
        "jit of laplacian": (cr.jit(cr.laplacian(powers)), X),
        "vmap": (cr.vmap(chained), BATCH),
        "vmap of grad": (cr.vmap(cr.grad(smooth)), BATCH),
        "vmap of hessian_diagonal": (cr.vmap(cr.hessian_diagonal(coupled)), BATCH),
        "jit of vmap of grad": (cr.jit(cr.vmap(cr.grad(coupled))), BATCH),
        "grad of vmap": (cr.grad(lambda b: np.sum(cr.vmap(chained)(b))), BATCH),
    }
    if branches:
        table.update({
            "grad of a branch": (cr.grad(branchy), X),
            "jit of a branch": (cr.jit(branchy), X),
            "jit of grad of a branch": (cr.jit(cr.grad(branchy)), X),
            "vmap of a branch": (cr.vmap(branchy), BATCH),
            "vmap of grad of a branch": (cr.vmap(cr.grad(branchy)), BATCH),
        })
    return table


def second_point(x: onp.ndarray) -> onp.ndarray:
    """Another point, which takes branchy's other branch."""
    return -x[::-1] * 0.5 - 0.3
