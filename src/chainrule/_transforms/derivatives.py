"""autograd's transforms, each a few lines on make_vjp and make_jvp.

Each is written once for a function of one argument (``_grad(fun, x)``) and lifted to
``argnum`` by ``unary_to_nary``; the public function (``grad``) takes the options users
type: autograd's ``argnum``, and JAX's ``argnums`` and ``has_aux``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import numpy as anp
from .._core import forward, reverse
from .._core.heap import graph_memory
from .._core.pytree import tree_leaves, tree_map
from .._core.rules import defjvp_argnums, defvjp_argnums
from .._core.tracer import derivative_free, primitive
from .._core.vspace import ContainerVSpace, VSpace, vspace
from .._sparsity.products import SparseVSpace
from .._user_code import reach
from .._user_code.lines import warnings_at_user_line
from ..numpy import numpy_vspaces
from .fresh import unaliased
from .jacobians import jacobian_columns_of_recording, jacobian_rows, jacobian_tree
from .options import lifted, resolve_argnums, transformed
from .sparse import sparse_transform

# fmt: off
__all__ = [
    "make_vjp", "make_jvp", "grad", "elementwise_grad", "value_and_grad", "grad_and_aux",
    "jacobian", "hessian", "hessian_tensor_product", "hessian_vector_product", "make_hvp",
    "make_ggnvp", "tensor_jacobian_product", "vector_jacobian_product", "deriv",
    "holomorphic_grad", "grad_named", "multigrad_dict", "checkpoint",
]
# fmt: on


# ----------------------------------------------------------------------------- transforms
@lifted("make_vjp")
def _make_vjp(fun, x):
    vjp, ans = reverse.make_vjp(fun, x)
    return warnings_at_user_line(lambda g: unaliased(vjp(g), g)), ans


def make_vjp(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
) -> Callable[..., tuple[Callable, Any]]:
    """Returns ``(vjp, fun(x))``: ``vjp(g)`` pulls a cotangent of the output back to ``x``,
    the argument ``argnum`` (default 0; JAX's spelling ``argnums`` works too).

    >>> import chainrule.numpy as np
    >>> vjp, ans = make_vjp(np.sin)(0.0)
    >>> print(vjp(2.0))
    2.0
    """
    return transformed(_make_vjp, fun, argnum, argnums)


@lifted("make_jvp")
def _make_jvp(fun, x):
    jvp = forward.make_jvp(fun, x)

    def unaliased_jvp(v):
        out, tangent = jvp(v)
        return out, unaliased(tangent, v)

    return warnings_at_user_line(unaliased_jvp)


def make_jvp(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
) -> Callable[..., Callable[[Any], tuple[Any, Any]]]:
    """Returns ``jvp(v) -> (fun(x), tangent)``: pushes a tangent of ``x``, the argument
    ``argnum`` (default 0; or ``argnums``), forward.

    >>> import chainrule.numpy as np
    >>> value, tangent = make_jvp(np.exp)(0.0)(3.0)
    >>> print(value, tangent)
    1.0 3.0
    """
    return transformed(_make_jvp, fun, argnum, argnums)


def _output_space(name: str, ans) -> VSpace:
    """The vector space of ``fun``'s output; an output with none is named as the culprit."""
    if ans is None:
        raise TypeError(
            f"{name}: fun returned None; did you forget return? {name} differentiates "
            f"the value the function returns."
        )
    try:
        return vspace(ans)
    except TypeError as error:
        dtype = getattr(ans, "dtype", None)
        what = f"type {type(ans).__name__}" if dtype is None else f"dtype {dtype}"
        raise TypeError(
            f"{name}: the function's output is not differentiable: it has {what}. Only "
            f"float (and complex) outputs have derivatives; an integer or boolean output "
            f"(a count such as np.sum(x > 0), an index such as np.argmax(x)) is piecewise "
            f"constant. Differentiate a float expression instead."
        ) from error


_ONE_LEAF = (float, np.ndarray)


# A real scalar output's seed, by its type (``vspace(ans).ones()``, without the space's
# calls: once a gradient): a Python float's space is float64's.
_SEEDS = {float: np.float64(1), np.float64: np.float64(1), np.float32: np.float32(1)}


def _value_and_gradient(name: str, fun, x, node_type: type, window):
    """One reverse pass seeded with 1 for a real scalar output: (value, gradient) (a
    ``_closed`` recording: ``_closed(_value_and_gradient, fun, x, name)``)."""
    # One block pauses the cycle collector from recording to sweep (the graph lives
    # between them) and keeps the heap's growth (heap.py), for both.
    with graph_memory() as memory:
        recording = reverse.Recording(fun, x, free=True, memory=memory, node_type=node_type)
        ans = recording.ans
        seed = _SEEDS.get(type(ans))
        if seed is None:
            space = _output_space(name, ans)
            if type(space) is ContainerVSpace:  # not a scalar, even with one entry (as in JAX)
                kind = f"a {type(ans).__name__} (a container)"
            elif space.iscomplex:
                kind = "a complex value"
            elif space.size != 1:
                kind = f"a value of shape {space.shape}"
            else:
                seed = space.ones()
        if seed is not None:
            gradient = recording.pull_back(seed)
            if type(gradient) not in _ONE_LEAF:  # (arguments given one array for two)
                gradient = unaliased(gradient)
            return ans, _unheld(gradient, window)
    raise TypeError(
        f"{name} requires a real scalar output, but the function returned {kind}. For "
        f"vector outputs use jacobian (all derivatives), elementwise_grad (sum of rows) or "
        f"make_vjp (a vector-Jacobian product); for complex outputs use holomorphic_grad "
        f"or take the real part."
    )


def _closed(record: Callable, fun, x, head=None):
    """``record(head, fun, x, node_type, window)``: a recording of ``fun(x)`` made and
    pulled back within this call, the function running nothing in between (grad's). Where
    its gradients met large arrays (``reach.met_large``: from a function's second gradient
    on, its first copied one) and it reaches large writeable ones (``SNAPSHOT_COPY_MAX``),
    in a ``reach.Window``: its nodes (``WindowVJPNode``) keep them themselves, read-only
    until the call ends, not copies, and every array it reaches is read-only; a function
    that writes into one is run again, copying, from the state it started from. Under
    chainrule.jit's staging it copies: the program outlives the call."""
    if not reach.met_large(fun):
        copies = reach.large_copies[0]
        answer = record(head, fun, x, reverse.VJPNode, None)
        if reach.large_copies[0] != copies:
            reach.note_large(fun)
        return answer
    if _staging():
        return record(head, fun, x, reverse.VJPNode, None)
    if reach.current_window() is not None:
        # (nested in an open window, grad of grad: it keeps that window's arrays, and a
        # write is that window's to undo)
        return record(head, fun, x, reverse.WindowVJPNode, None)
    window = reach.Window.around(fun, x, numpy_vspaces.SNAPSHOT_COPY_MAX)
    if window is None:
        return record(head, fun, x, reverse.VJPNode, None)
    with window:  # (closed as the call ends, by whatever: the flags as they were)
        try:
            answer = record(head, fun, x, reverse.WindowVJPNode, window)
        except ValueError as error:
            if not reach.written(error, window.read_only):
                raise
            # The function wrote into an array it reaches (NumPy refused: nothing it
            # reaches was written): from the state it started from, it runs again copying.
            window.undo()
        else:
            reopened = window.reopened()
            if reopened:
                raise RuntimeError(
                    f"an array of shape {reopened[0].shape} the function reaches, made "
                    f"read-only for a gradient (which keeps large arrays without a copy, "
                    f"see docs/arrays.md), was made writeable again during it "
                    f"(setflags(write=True)): the gradient may have read changed values. "
                    f"Pass a copy of the array, or set "
                    f"chainrule.numpy.numpy_vspaces.SNAPSHOT_COPY_MAX above its size.")
            return answer
    return record(head, fun, x, reverse.VJPNode, None)


def _unheld(gradient, window):
    """``gradient``, copied where a rule answered an array a window holds (the caller's)."""
    if window is not None and window.read_only.arrays and window.aliases(
            tree_leaves(gradient)):
        return tree_map(_copied, gradient)
    return gradient


def _copied(leaf):
    return leaf.copy() if isinstance(leaf, np.ndarray) else leaf


def _staging() -> bool:
    """Is chainrule.jit staging a program on this thread? (Looked up, not imported: jit
    is a layer above the transforms.)"""
    staging = sys.modules.get("chainrule.jit._staging")
    return staging is not None and staging.current() is not None


@lifted("grad")
def _grad(fun, x):
    return _closed(_value_and_gradient, fun, x, "grad")[1]


def grad(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
) -> Callable:
    """
    Returns a function which computes the gradient of ``fun`` with respect to
    positional argument number ``argnum``. The returned function takes the same
    arguments as ``fun``, but returns the gradient instead. ``fun`` must return a
    real scalar; ``x`` may be a float, an array, or a container of them (pytree).

    ``argnum`` is 0 by default; a tuple of ints gives a tuple of gradients. JAX's
    spellings work too: ``argnums`` for ``argnum``, and ``has_aux=True`` for a ``fun``
    returning ``(output, aux)``, which makes the gradient function return
    ``(gradient, aux)``.

    >>> import chainrule.numpy as np
    >>> f = lambda x1, x2: np.log(x1) + x1 * x2 - np.sin(x2)
    >>> print(grad(f)(2.0, 5.0))
    5.5
    >>> print(grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0])))
    [2. 4.]
    >>> g, aux = grad(lambda x: (x ** 2, "aux"), has_aux=True)(3.0)
    >>> print(g, aux)
    6.0 aux
    """
    return transformed(_grad, fun, argnum, argnums, has_aux)


@lifted("elementwise_grad")
def _elementwise_grad(fun, x):
    return _closed(_recorded_elementwise_gradient, fun, x)


def _recorded_elementwise_gradient(_, fun, x, node_type: type, window):
    recording = reverse.Recording(fun, x, free=True, node_type=node_type)
    space = _output_space("elementwise_grad", recording.ans)
    if space.iscomplex:
        raise TypeError("elementwise_grad is only defined for real-valued outputs.")
    return _unheld(unaliased(recording.pull_back(space.ones())), window)


def elementwise_grad(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
) -> Callable:
    """The sum of the Jacobian's rows: the derivative of each output element for
    elementwise functions. Returns a function with the arguments of ``fun``.
    ``argnum``/``argnums`` and ``has_aux`` as for ``grad``.

    >>> import chainrule.numpy as np
    >>> print(elementwise_grad(np.square)(np.array([1.0, 2.0, 3.0])))
    [2. 4. 6.]
    """
    return transformed(_elementwise_grad, fun, argnum, argnums, has_aux)


@lifted("value_and_grad")
def _value_and_grad(fun, x):
    return _closed(_value_and_gradient, fun, x, "value_and_grad")


def _value_aux_and_grad(value_and_gradient, aux):
    value, gradient = value_and_gradient
    return (value, aux), gradient


def value_and_grad(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
) -> Callable:
    """Returns a function that returns both the value and the gradient of ``fun``.
    ``argnum``/``argnums`` as for ``grad``; with ``has_aux=True`` it returns
    ``((value, aux), gradient)``, as JAX's does.

    >>> value, g = value_and_grad(lambda x: x ** 3)(2.0)
    >>> print(value, g)
    8.0 12.0
    """
    return transformed(_value_and_grad, fun, argnum, argnums, has_aux, _value_aux_and_grad)


@lifted("grad_and_aux")
def _grad_and_aux(fun, x):
    return _closed(_recorded_gradient_and_aux, fun, x)


def _recorded_gradient_and_aux(_, fun, x, node_type: type, window):
    recording = reverse.Recording(lambda x: _pair(fun(x)), x, free=True, node_type=node_type)
    ans, aux = recording.ans
    gradient = recording.pull_back((vspace(ans).ones(), tree_map(_zeros_like_leaf, aux)))
    return _unheld(unaliased(gradient), window), aux


def grad_and_aux(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
) -> Callable:
    """For ``fun`` returning ``(loss, aux)``: returns ``(gradient of loss, aux)``
    (``grad(fun, has_aux=True)`` in JAX's spelling).

    >>> g, aux = grad_and_aux(lambda x: (x ** 2, "aux"))(3.0)
    >>> print(g, aux)
    6.0 aux
    """
    return transformed(_grad_and_aux, fun, argnum, argnums)


def _pair(out):
    loss, aux = out
    return loss, aux


def _zeros_like_leaf(leaf):
    try:
        return vspace(leaf).zeros()
    except TypeError:
        return leaf


@lifted("jacobian")
def _jacobian(fun, x):
    recording = reverse.Recording(fun, x, keep_everything=True)
    ans = recording.ans
    ans_vspace = _output_space("jacobian", ans)
    spaces = recording.spaces
    n_in = sum(space.size for space in spaces)
    # (a scipy.sparse output's columns, its stored values' tangents, are pulled back by rows)
    one_real_array = type(ans_vspace) not in (ContainerVSpace, SparseVSpace) and not any(
        s.iscomplex for s in spaces)
    # a complex output of real inputs: its columns are the complex tangents, forward
    # (a reverse pass per output element would give one row per real dimension, twice as many)
    by_columns = one_real_array and (0 < n_in <= ans_vspace.size or ans_vspace.iscomplex)
    if by_columns and recording.can_push_forward():
        blocks = [jacobian_columns_of_recording(recording, spaces)]
    else:
        blocks = jacobian_rows(recording.pull_back, ans_vspace, spaces)
    return jacobian_tree(ans, recording.treedef, blocks)


def jacobian(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
    sparse: bool = False,
) -> Callable:
    """The Jacobian of ``fun`` at ``x``, of shape ``out.shape + x.shape``. For a container
    ``x`` (or a tuple ``argnum``) it is a container of such blocks, one per leaf of ``x``.
    ``argnum``/``argnums`` and ``has_aux`` (returns ``(jacobian, aux)``) as for ``grad``.

    ``fun`` runs once, and its recorded graph is then swept once per Jacobian row
    (reverse mode) or, when ``x`` is no larger than the output, once per column (forward
    mode on the recorded graph; real values only, complex ones always go reverse).

    >>> import chainrule.numpy as np
    >>> jacobian(lambda x: np.array([x[0] * x[1], np.sin(x[0])]))(np.array([0.0, 2.0]))
    array([[2., 0.],
           [1., 0.]])
    """
    return _dense_or_sparse(_jacobian, fun, argnum, argnums, has_aux, sparse, hessian=False)


def _dense_or_sparse(dense: Callable, fun: Callable, argnum, argnums, has_aux: bool,
                     sparse: bool, hessian: bool) -> Callable:
    """jacobian's and hessian's transform: ``dense`` lifted to ``argnum``, or with
    ``sparse=True`` a scipy.sparse CSR matrix from coloured sweeps (docs/sparse.md)."""
    if sparse:
        return sparse_transform(fun, hessian, argnums if argnum is None else argnum, has_aux)
    return transformed(dense, fun, argnum, argnums, has_aux)


@lifted("holomorphic_grad")
def _holomorphic_grad(fun, x):
    if not vspace(x).iscomplex:
        warnings.warn("Input to holomorphic_grad is not complex", stacklevel=2)
    return _grad(lambda x: anp.real(fun(x)))(x)


def holomorphic_grad(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
) -> Callable:
    """The complex derivative of a holomorphic ``fun`` at ``x`` (the argument ``argnum``,
    or ``argnums``).

    >>> print(holomorphic_grad(lambda z: z ** 2)(1.0 + 2.0j))
    (2+4j)
    """
    return transformed(_holomorphic_grad, fun, argnum, argnums)


def hessian_tensor_product(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
) -> Callable:
    """``htp(*args, v)``: the Hessian of ``fun`` times ``v`` (contracted over all of v's
    axes), by forward mode over the reverse-mode gradient.

    >>> import chainrule.numpy as np
    >>> f = lambda x: np.sum(x ** 3)
    >>> print(hessian_tensor_product(f)(np.array([1.0, 2.0]), np.array([1.0, 1.0])))
    [ 6. 12.]
    """
    argnum = resolve_argnums("hessian_tensor_product", argnum, argnums)
    fun_grad = grad(fun, argnum)

    def htp(*args, **kwargs):
        *args, vector = args
        return make_jvp(fun_grad, argnum)(*args, **kwargs)(vector)[1]

    return htp


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
) -> Callable:
    """``tjp(*args, v)``: ``v`` contracted with the leading axes of the Jacobian of ``fun``,
    ``tensordot(v, J, axes=ndim(v))``, of shape ``out.shape[ndim(v):] + x.shape``. A ``v``
    shaped like the output gives the vector-Jacobian product (one reverse pass).

    >>> import chainrule.numpy as np
    >>> print(tensor_jacobian_product(np.sin)(np.array([0.0, 0.0]), np.array([1.0, 2.0])))
    [1. 2.]
    """
    argnum = resolve_argnums("tensor_jacobian_product", argnum, argnums)

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


@lifted("make_hvp")
def _make_hvp(fun, x):
    fun_grad = _grad(fun)
    return (lambda v: _make_jvp(fun_grad)(x)(v)[1]), fun_grad(x)


def make_hvp(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
) -> Callable[..., tuple[Callable, Any]]:
    """Returns ``(hvp, gradient)`` at ``x``; ``hvp(v)`` is the Hessian-vector product
    (forward mode over the reverse-mode gradient).

    >>> import chainrule.numpy as np
    >>> hvp, g = make_hvp(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    >>> print(g)
    [ 3. 12.]
    >>> print(hvp(np.array([1.0, 0.0])))
    [6. 0.]
    """
    return transformed(_make_hvp, fun, argnum, argnums)


def _half_sum_of_squares(y: Any) -> Any:
    return 0.5 * anp.sum(y * y)


def make_ggnvp(
    f: Callable, g: Callable = _half_sum_of_squares, f_argnum: int | Sequence[int] = 0
) -> Callable[..., Callable]:
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


@lifted("hessian")
def _hessian(fun, x):
    return _jacobian(_grad(fun))(x)


def hessian(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
    sparse: bool = False,
) -> Callable:
    """The Hessian of ``fun`` at ``x``: the Jacobian of its gradient. ``argnum``/``argnums``
    and ``has_aux`` (returns ``(hessian, aux)``) as for ``grad``.

    >>> import chainrule.numpy as np
    >>> print(hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0])))
    [[ 6.  0.]
     [ 0. 12.]]
    """
    return _dense_or_sparse(_hessian, fun, argnum, argnums, has_aux, sparse, hessian=True)


@lifted("deriv")
def _deriv(fun, x):
    return forward.make_jvp(fun, x)(vspace(x).ones())[1]


def deriv(
    fun: Callable,
    argnum: int | Sequence[int] | None = None,
    *,
    argnums: int | Sequence[int] | None = None,
) -> Callable:
    """The derivative of ``fun`` along a unit tangent: forward mode's dfun/dx for scalar x.

    >>> import chainrule.numpy as np
    >>> print(deriv(deriv(np.sin))(0.0))
    -0.0
    """
    return transformed(_deriv, fun, argnum, argnums)


def grad_named(fun: Callable, argname: str) -> Callable:
    """Gradient with respect to the argument named ``argname``.

    >>> print(grad_named(lambda x, y: x * y, "y")(2.0, 3.0))
    2.0
    """
    import inspect

    arg_index = list(inspect.signature(fun).parameters).index(argname)
    return grad(fun, arg_index)


def multigrad_dict(fun: Callable) -> Callable[..., dict]:
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


def stop_gradient(x: Any) -> Any:
    """``x`` with every level of tracing removed: a constant to all derivatives.

    >>> print(grad(lambda x: x * stop_gradient(x))(3.0))
    3.0
    """
    return tree_map(derivative_free, x)


__all__ += ["stop_gradient"]
