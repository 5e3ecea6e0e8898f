"""chainrule: automatic differentiation for Python and NumPy.

``grad``, ``jacobian``, ``hessian`` and friends (autograd's API), ``jvp``, ``vjp``,
``jacfwd``, ``jacrev``, ``custom_vjp``, ``custom_jvp`` (JAX's), in reverse and
forward mode, composable to any order. Write functions with
``import chainrule.numpy as np``.
"""

from . import numpy, optim  # noqa: F401  (numpy registers array boxes, spaces and rules)
from ._core.pytree import register_pytree_node, tree_flatten, tree_map, tree_unflatten
from ._core.tracer import LeakedTracerError, primitive
from ._sparsity.detection import hessian_sparsity, jacobian_sparsity
from ._transforms.derivatives import (
    checkpoint,
    deriv,
    elementwise_grad,
    grad,
    grad_and_aux,
    grad_named,
    hessian,
    hessian_tensor_product,
    hessian_vector_product,
    holomorphic_grad,
    jacobian,
    make_ggnvp,
    make_hvp,
    make_jvp,
    make_vjp,
    multigrad_dict,
    stop_gradient,
    tensor_jacobian_product,
    value_and_grad,
    vector_jacobian_product,
)
from ._transforms.functional import custom_jvp, custom_vjp, jacfwd, jacrev, jvp, vjp
from ._transforms.sparse import SparseHessian, SparseJacobian, sparse_hessian, sparse_jacobian
from ._transforms.taylor import hessian_diagonal, jet, laplacian, taylor_derivatives
from ._transforms.vmap import vmap
from .builtins import dict, isinstance, list, tuple, type
from .debug import debug_nans
from .explain import explain
from .jit import jit
from .serialization import load, save
from .tensor import Tensor, as_tensor, enable_grad, manual_seed, no_grad

__version__ = "0.1.0"


def __getattr__(name: str):
    # chainrule.nn is imported on first use, so that `import chainrule` does not pay for it.
    if name == "nn":
        import importlib

        return importlib.import_module(".nn", __name__)
    raise AttributeError(f"module 'chainrule' has no attribute {name!r}")


__all__ = [
    "grad", "elementwise_grad", "value_and_grad", "grad_and_aux", "jacobian", "hessian",
    "hessian_tensor_product", "hessian_vector_product", "make_hvp", "make_vjp", "make_jvp",
    "make_ggnvp", "tensor_jacobian_product", "vector_jacobian_product", "deriv",
    "holomorphic_grad", "grad_named", "multigrad_dict", "checkpoint", "primitive",
    "jet", "taylor_derivatives", "laplacian", "hessian_diagonal",
    "jvp", "vjp", "jacfwd", "jacrev", "stop_gradient", "custom_vjp", "custom_jvp",
    "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_map",
    "tuple", "list", "dict", "isinstance", "type", "explain", "debug_nans", "jit",
    "Tensor", "as_tensor", "no_grad", "enable_grad", "optim", "nn", "LeakedTracerError",
    "save", "load", "manual_seed",
    "vmap",
    "jacobian_sparsity", "hessian_sparsity", "sparse_jacobian", "sparse_hessian",
    "SparseJacobian", "SparseHessian",
]
