"""autograd's transforms, each a few lines on make_vjp and make_jvp."""

from __future__ import annotations

from collections.abc import Callable

import numpy as _np

from . import numpy as anp
from ._core import forward, reverse
from ._core.pytree import tree_leaves, tree_map, tree_unflatten
from ._core.rules import defjvp_argnums, defvjp_argnums
from ._core.tracer import getval, primitive
from ._core.vspace import ContainerVSpace, vspace
from .wrap_util import unary_to_nary

__all__ = [
    "make_vjp", "make_jvp", "grad", "elementwise_grad", "value_and_grad", "grad_and_aux",
    "jacobian", "hessian", "hessian_tensor_product", "hessian_vector_product", "make_hvp",
    "make_ggnvp", "tensor_jacobian_product", "vector_jacobian_product", "deriv",
    "holomorphic_grad", "grad_named", "multigrad_dict", "checkpoint",
]


@unary_to_nary
def make_vjp(fun, x):
    """Return ``(vjp, fun(x))``: ``vjp(g)`` pulls a cotangent of the output back to ``x``.

    >>> import chainrule.numpy as np
    >>> vjp, ans = make_vjp(np.sin)(0.0)
    >>> print(vjp(2.0))
    2.0
    """
    return reverse.make_vjp(fun, x)


@unary_to_nary
def make_jvp(fun, x):
    """Return ``jvp(v) -> (fun(x), tangent)``: pushes a tangent of ``x`` forward.

    >>> import chainrule.numpy as np
    >>> value, tangent = make_jvp(np.exp)(0.0)(3.0)
    >>> print(value, tangent)
    1.0 3.0
    """
    return forward.make_jvp(fun, x)


def _value_and_gradient(name: str, fun, x):
    """One reverse pass seeded with 1 for a real scalar output: (value, gradient)."""
    vjp, ans = reverse.make_vjp(fun, x, free=True)
    space = vspace(ans)
    if space.size != 1 or space.iscomplex:
        kind = "complex" if space.iscomplex else f"shape {getattr(space, 'shape', '?')}"
        raise TypeError(
            f"{name} requires a real scalar output, but the function returned a value of "
            f"{kind}. For vector outputs use jacobian (all derivatives), elementwise_grad "
            f"(sum of rows) or make_vjp (a vector-Jacobian product); for complex outputs use "
            f"holomorphic_grad or take the real part."
        )
    return ans, vjp(space.ones())


@unary_to_nary
def grad(fun, x):
    """
    Returns a function which computes the gradient of ``fun`` with respect to
    positional argument number ``argnum``. The returned function takes the same
    arguments as ``fun``, but returns the gradient instead. ``fun`` must return a
    real scalar; ``x`` may be a float, an array, or a container of them (pytree).

    >>> import chainrule.numpy as np
    >>> f = lambda x1, x2: np.log(x1) + x1 * x2 - np.sin(x2)
    >>> print(grad(f)(2.0, 5.0))
    5.5
    >>> print(grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0])))
    [2. 4.]
    """
    return _value_and_gradient("grad", fun, x)[1]


@unary_to_nary
def elementwise_grad(fun, x):
    """The sum of the Jacobian's rows: the derivative of each output element for
    elementwise functions. Returns a function with the arguments of ``fun``.

    >>> import chainrule.numpy as np
    >>> print(elementwise_grad(np.square)(np.array([1.0, 2.0, 3.0])))
    [2. 4. 6.]
    """
    vjp, ans = reverse.make_vjp(fun, x, free=True)
    space = vspace(ans)
    if space.iscomplex:
        raise TypeError("elementwise_grad is only defined for real-valued outputs.")
    return vjp(space.ones())


@unary_to_nary
def value_and_grad(fun, x):
    """Returns a function that returns both the value and the gradient of ``fun``.

    >>> value, g = value_and_grad(lambda x: x ** 3)(2.0)
    >>> print(value, g)
    8.0 12.0
    """
    return _value_and_gradient("value_and_grad", fun, x)


@unary_to_nary
def grad_and_aux(fun, x):
    """For ``fun`` returning ``(loss, aux)``: returns ``(gradient of loss, aux)``.

    >>> g, aux = grad_and_aux(lambda x: (x ** 2, "aux"))(3.0)
    >>> print(g, aux)
    6.0 aux
    """
    vjp, (ans, aux) = reverse.make_vjp(lambda x: _pair(fun(x)), x, free=True)
    return vjp((vspace(ans).ones(), tree_map(_zeros_like_leaf, aux))), aux


def _pair(out):
    loss, aux = out
    return loss, aux


def _zeros_like_leaf(leaf):
    try:
        return vspace(leaf).zeros()
    except TypeError:
        return leaf


@unary_to_nary
def jacobian(fun, x):
    """The Jacobian of ``fun`` at ``x``, of shape ``out.shape + x.shape``. For a container
    ``x`` (or a tuple ``argnum``) it is a container of such blocks, one per leaf of ``x``.

    ``fun`` runs once, and its recorded graph is then swept once per Jacobian row
    (reverse mode) or, when ``x`` is no larger than the output, once per column (forward
    mode on the recorded graph; real values only, complex ones always go reverse).

    >>> import chainrule.numpy as np
    >>> jacobian(lambda x: np.array([x[0] * x[1], np.sin(x[0])]))(np.array([0.0, 2.0]))
    array([[2., 0.],
           [1., 0.]])
    """
    recording = reverse.Recording(fun, x, keep_everything=True)
    ans = recording.ans
    ans_vspace = vspace(ans)
    spaces = recording.spaces
    n_in = sum(space.size for space in spaces)
    forward_is_cheaper = (0 < n_in <= ans_vspace.size and type(ans_vspace) is not ContainerVSpace
                          and not ans_vspace.iscomplex and not any(s.iscomplex for s in spaces)
                          and recording.can_push_forward())
    if forward_is_cheaper:
        blocks = jacobian_columns_of_recording(recording, spaces)
    else:
        blocks = jacobian_rows(recording.pull_back, ans_vspace, spaces)
    return tree_unflatten(recording.treedef, blocks)


# The ways to fill a Jacobian, shared by jacobian, jacrev and jacfwd. Blocks are
# built with wrapped functions, so nested transforms (hessian = jacobian of grad) see them.

def jacobian_rows(vjp, ans_vspace, spaces: list) -> list:
    """Each input leaf's block, from one reverse pass per element of the output."""
    rows = [tree_leaves(vjp(basis)) for basis in ans_vspace.standard_basis()]
    return [_stacked([row[k] for row in rows], ans_vspace.shape + space.shape)
            for k, space in enumerate(spaces)]


def jacobian_columns(jvp, treedef, spaces: list) -> list:
    """Each input leaf's block, from one forward pass per element of that leaf."""
    zeros = [space.zeros() for space in spaces]
    blocks = []
    for k, space in enumerate(spaces):
        pairs = [jvp(tree_unflatten(treedef, zeros[:k] + [basis] + zeros[k + 1:]))
                 for basis in space.standard_basis()]
        ans_vspace = vspace(pairs[0][0] if pairs else jvp(tree_unflatten(treedef, zeros))[0])
        block = _stacked([tangent for _, tangent in pairs], space.shape + ans_vspace.shape)
        blocks.append(_output_major(block, space, ans_vspace))
    return blocks


def jacobian_columns_of_recording(recording, spaces: list) -> list:
    """Each input leaf's block from one sweep of ``recording``'s graph that pushes the
    leaf's whole standard basis forward at once (``fun`` is not run again). Primitives
    with batched JVP rules (elementwise, matmul) do one call for all columns."""
    ans_vspace = vspace(recording.ans)
    blocks = []
    for k, space in enumerate(spaces):
        n = space.size
        batch = [_stacked(list(space.standard_basis()), (n,) + space.shape) if j == k
                 else anp.broadcast_to(other.zeros(), (n,) + other.shape)
                 for j, other in enumerate(spaces)]
        (tangents,) = recording.push_forward_batched(batch, n, anp.stack)
        block = (anp.broadcast_to(ans_vspace.zeros(), (n,) + ans_vspace.shape)
                 if tangents is None else tangents)
        block = anp.reshape(block, space.shape + ans_vspace.shape)
        blocks.append(_output_major(block, space, ans_vspace))
    return blocks


def _output_major(block, space, ans_vspace):
    """A block of columns (input axes first) with the output's axes moved to the front."""
    in_axes = list(range(len(space.shape)))
    out_ndim = len(ans_vspace.shape)
    return anp.moveaxis(block, in_axes, [out_ndim + i for i in in_axes])


def _stacked(parts: list, shape: tuple):
    """``parts`` stacked and reshaped, with wrapped functions so nested transforms see it."""
    return anp.reshape(anp.stack(parts), shape) if parts else _np.zeros(shape)


@unary_to_nary
def holomorphic_grad(fun, x):
    """The complex derivative of a holomorphic ``fun`` at ``x``.

    >>> print(holomorphic_grad(lambda z: z ** 2)(1.0 + 2.0j))
    (2+4j)
    """
    if not vspace(x).iscomplex:
        import warnings

        warnings.warn("Input to holomorphic_grad is not complex", stacklevel=2)
    return grad(lambda x: anp.real(fun(x)))(x)


def hessian_tensor_product(fun, argnum=0):
    """``htp(*args, v)``: the Hessian of ``fun`` times ``v`` (contracted over all of v's
    axes), by forward mode over the reverse-mode gradient.

    >>> import chainrule.numpy as np
    >>> f = lambda x: np.sum(x ** 3)
    >>> print(hessian_tensor_product(f)(np.array([1.0, 2.0]), np.array([1.0, 1.0])))
    [ 6. 12.]
    """
    fun_grad = grad(fun, argnum)

    def htp(*args, **kwargs):
        *args, vector = args
        return make_jvp(fun_grad, argnum)(*args, **kwargs)(vector)[1]

    return htp


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun, argnum=0):
    """``tjp(*args, v)``: ``v`` contracted with the leading axes of the Jacobian of ``fun``,
    ``tensordot(v, J, axes=ndim(v))``, of shape ``out.shape[ndim(v):] + x.shape``. A ``v``
    shaped like the output gives the vector-Jacobian product (one reverse pass).

    >>> import chainrule.numpy as np
    >>> print(tensor_jacobian_product(np.sin)(np.array([0.0, 0.0]), np.array([1.0, 2.0])))
    [1. 2.]
    """

    def contracted(*args, **kwargs):
        *args, vector = args
        return anp.tensordot(vector, fun(*args, **kwargs), axes=anp.ndim(vector))

    def tjp(*args, **kwargs):
        *fun_args, vector = args
        vjp, ans = make_vjp(fun, argnum)(*fun_args, **kwargs)
        if anp.ndim(vector) == anp.ndim(ans):
            return vjp(vector)
        # v spans only the leading output axes: one reverse pass per remaining output element
        return jacobian(contracted, argnum)(*args, **kwargs)

    return tjp


vector_jacobian_product = tensor_jacobian_product


@unary_to_nary
def make_hvp(fun, x):
    """Returns ``(hvp, gradient)`` at ``x``; ``hvp(v)`` is the Hessian-vector product
    (forward mode over the reverse-mode gradient).

    >>> import chainrule.numpy as np
    >>> hvp, g = make_hvp(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    >>> print(g)
    [ 3. 12.]
    >>> print(hvp(np.array([1.0, 0.0])))
    [6. 0.]
    """
    fun_grad = grad(fun)
    return (lambda v: make_jvp(fun_grad)(x)(v)[1]), fun_grad(x)


def _half_sum_of_squares(y):
    return 0.5 * anp.sum(y * y)


def make_ggnvp(f, g=_half_sum_of_squares, f_argnum=0):
    """Generalized Gauss-Newton products for ``g(f(x))``: ``make_ggnvp(f, g)(x)(v)`` is
    J^T H J v with J the Jacobian of ``f`` at x and H the Hessian of ``g`` at f(x).
    The default ``g`` is half the sum of squares (H = I), giving J^T J v.

    >>> import chainrule.numpy as np
    >>> A = np.array([[1.0, 2.0], [0.0, 1.0]])
    >>> print(make_ggnvp(lambda x: A @ x)(np.zeros(2))(np.array([1.0, 0.0])))
    [1. 2.]
    """

    def ggnvp_maker(*args, **kwargs):
        f_vjp, f_x = make_vjp(f, f_argnum)(*args, **kwargs)
        g_hvp, _ = make_hvp(g)(f_x)
        f_jvp = make_jvp(f, f_argnum)(*args, **kwargs)
        return lambda v: f_vjp(g_hvp(f_jvp(v)[1]))

    return ggnvp_maker


@unary_to_nary
def hessian(fun, x):
    """The Hessian of ``fun`` at ``x``: the Jacobian of its gradient.

    >>> import chainrule.numpy as np
    >>> print(hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0])))
    [[ 6.  0.]
     [ 0. 12.]]
    """
    return jacobian(grad(fun))(x)


@unary_to_nary
def deriv(fun, x):
    """The derivative of ``fun`` along a unit tangent: forward mode's dfun/dx for scalar x.

    >>> import chainrule.numpy as np
    >>> print(deriv(deriv(np.sin))(0.0))
    -0.0
    """
    return make_jvp(fun)(x)(vspace(x).ones())[1]


def grad_named(fun, argname):
    """Gradient with respect to the argument named ``argname``.

    >>> print(grad_named(lambda x, y: x * y, "y")(2.0, 3.0))
    2.0
    """
    import inspect

    arg_index = list(inspect.signature(fun).parameters).index(argname)
    return grad(fun, arg_index)


def multigrad_dict(fun):
    """Gradients with respect to every argument, as a dict keyed by parameter name.

    >>> grads = multigrad_dict(lambda x, y: x * y)(2.0, 3.0)
    >>> print(grads["x"], grads["y"])
    3.0 2.0
    """
    import inspect

    signature = inspect.signature(fun)

    def gradfun(*args, **kwargs):
        def of_arguments(arguments):
            bound = inspect.BoundArguments(signature, arguments)
            return fun(*bound.args, **bound.kwargs)

        return grad(of_arguments)(dict(signature.bind(*args, **kwargs).arguments))

    return gradfun


def checkpoint(fun: Callable) -> Callable:
    """Keep only ``fun``'s inputs and output on the tape; recompute its inside on the
    way back. Trades compute for memory (positional array arguments only).

    >>> import chainrule.numpy as np
    >>> block = checkpoint(lambda x: np.tanh(np.sin(x) * 2.0))
    >>> float(grad(lambda x: block(block(x)))(0.5)) == float(
    ...     grad(lambda x: np.tanh(np.sin(np.tanh(np.sin(x) * 2.0)) * 2.0))(0.5))
    True
    """
    wrapped = primitive(fun)

    def recompute_vjp(argnums, ans, args, kwargs):
        # one recomputation serves every argument being differentiated
        return make_vjp(fun, tuple(argnums))(*args, **kwargs)[0]

    def recompute_jvp(argnums, tangents, ans, args, kwargs):
        return make_jvp(fun, tuple(argnums))(*args, **kwargs)(tuple(tangents))[1]

    defvjp_argnums(wrapped, recompute_vjp)
    defjvp_argnums(wrapped, recompute_jvp)
    return wrapped


def stop_gradient(x):
    """``x`` with every level of tracing removed: a constant to all derivatives.

    >>> print(grad(lambda x: x * stop_gradient(x))(3.0))
    3.0
    """
    return tree_map(getval, x)


__all__ += ["stop_gradient"]
