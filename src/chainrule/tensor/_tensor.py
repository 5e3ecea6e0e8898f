"""Tensor: a value that records the operations applied to it, PyTorch style.

A Tensor is a thin shell around a value: a raw NumPy value, or (when it requires
grad) that value boxed on the Tensor trace, possibly inside the boxes of
functional transforms. Every operator and method unwraps the Tensors, calls the
chainrule.numpy primitive (which records the call and knows the derivative) and
wraps the answer. NumPy functions reach the same primitives through NumPy's
dispatch protocols. So Tensors share every rule with ``grad``, ``jvp`` and the
rest, and Tensor code can be differentiated by those transforms too.
"""

from __future__ import annotations

import copy
import sys
import threading
import warnings
import weakref
from collections.abc import Callable

import numpy as _np

from .._core.pytree import register_pytree_node
from .._core.tracer import (
    FrontEnd,
    batched_types,
    getval,
    isbox,
    new_box,
    register_front_end,
)
from .._core.vspace import VSpace, vspace
from .._transforms.fresh import unaliased
from ..numpy import numpy_wrapper as anp
from ..numpy._scipy_hint import scipy_hint, scipy_ufunc_rules
from ..numpy.numpy_boxes import _ufunc_name, array_astype, array_getitem, fitted_in_place
from ._graph import (
    TRACE_ID,
    add_hook,
    gradients,
    leaf_box,
    mark_overwritten,
    retain,
    retaining,
    run_hooks,
    strip,
    tensor_box,
)
from ._mode import _mode, no_grad

# Comparisons and logical operations: their answers are boolean Tensors (that never require
# grad), as PyTorch's, also where NumPy makes the call (``array < tensor``, numpy.less).
_LOGICAL_UFUNCS = frozenset(
    getattr(_np, name)
    for name in """greater greater_equal less less_equal equal not_equal logical_and logical_or
    logical_not logical_xor bitwise_and bitwise_or bitwise_xor invert""".split()
)
# The other functions whose answers are facts about values (indices, shapes, predicates):
# they stay plain NumPy, never Tensors.
_PLAIN_RESULTS = frozenset(
    getattr(_np, name) for name in anp.NONDIFFERENTIABLE.split() if hasattr(_np, name)
) - _LOGICAL_UFUNCS

# .grad += is a read-modify-write: two threads calling backward() on graphs that share
# a leaf would lose one of the additions without it.
_GRAD_LOCK = threading.Lock()


class Tensor:
    """``Tensor(value, requires_grad=None, dtype=None)``: a value whose operations are
    recorded, so that ``.backward()`` fills ``.grad`` of the leaf Tensors it depends on.

    Python ints and bools (and lists of them) become float64; NumPy arrays keep their
    dtype. By default (``requires_grad=None``) float and complex values require grad and
    integer or boolean arrays do not; ``requires_grad=True`` on an integer array raises,
    as in PyTorch. The value is copied.

    With the functional transforms: ``grad(f)(tensor)`` differentiates with respect
    to the Tensor's value and returns a Tensor; a Tensor made inside ``f`` from the
    transform's traced value is differentiated by the transform (not by
    ``backward``); Tensors that require grad and are used inside ``f`` are recorded
    as usual, so a gradient computed by the transform is a Tensor that can itself be
    backpropagated to them (e.g. a gradient penalty).

    >>> import chainrule.numpy as np
    >>> x = Tensor([1.0, 2.0])
    >>> y = np.sum(x ** 2) + x[0] * x[1]
    >>> y.backward()
    >>> x.grad
    Tensor([4., 5.])
    """

    # _base, _views: the PyTorch views this Tensor is one of / has (see link_view).
    __slots__ = ("_value", "grad", "_base", "_views", "__weakref__")

    def __init__(self, value, requires_grad: bool | None = None, dtype=None) -> None:
        if isinstance(value, Tensor):
            value = strip(value._value)
        self.grad: Tensor | None = None
        self._base = self._views = None
        if isbox(value):
            # Traced by a functional transform: that transform differentiates it.
            self._value = value if dtype is None else value.astype(dtype)
            return
        value = _as_raw(value, dtype)
        differentiable = _np.result_type(value).kind in "fc"
        if requires_grad and not differentiable:
            raise RuntimeError(_not_differentiable(f"dtype {_np.result_type(value)}"))
        if differentiable and requires_grad is not False:
            self._value = leaf_box(value, self)
        else:
            self._value = value

    # ------------------------------------------------------------------ values
    @property
    def value(self):
        """The plain NumPy value (scalars are NumPy scalars)."""
        return getval(self._value)

    @property
    def data(self):
        return getval(self._value)

    @data.setter
    def data(self, new) -> None:
        if isinstance(new, Tensor):
            new = new._value
        self._assign(_as_raw(getval(new), None))

    def numpy(self) -> _np.ndarray:
        return _np.asarray(getval(self._value))

    def item(self):
        return _np.asarray(getval(self._value)).item()

    def tolist(self):
        return _np.asarray(getval(self._value)).tolist()

    @property
    def ndim(self) -> int:
        return _np.ndim(getval(self._value))

    @property
    def dtype(self) -> _np.dtype:
        return _np.result_type(getval(self._value))

    # ------------------------------------------------------------------ the graph
    @property
    def requires_grad(self) -> bool:
        return tensor_box(self._value) is not None

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if not self.is_leaf:
            raise RuntimeError(
                "requires_grad can only be changed on leaf Tensors; for a computed Tensor "
                "use .detach() to get a copy that does not require grad."
            )
        if flag and not self.requires_grad:
            raw = self._value
            if isbox(raw) or _np.result_type(raw).kind not in "fc":
                what = (
                    "a value traced by a functional transform"
                    if isbox(raw)
                    else (f"dtype {_np.result_type(raw)}")
                )
                raise RuntimeError(_not_differentiable(what))
            self._value = leaf_box(raw, self)
        elif not flag:
            self._value = strip(self._value)

    def requires_grad_(self, flag: bool = True) -> Tensor:
        self.requires_grad = flag
        return self

    @property
    def is_leaf(self) -> bool:
        box = tensor_box(self._value)
        return box is None or box._node.fun is None

    @property
    def grad_fn(self):
        """The node that made this Tensor (None for leaves): ``grad_fn.name`` is the function."""
        box = tensor_box(self._value)
        return None if box is None or box._node.fun is None else box._node

    def detach(self) -> Tensor:
        """The same value, cut from the graph: a leaf that does not require grad."""
        return link_view(self, _wrap(strip(self._value)))

    def backward(
        self, gradient=None, retain_graph: bool | None = None, create_graph: bool = False
    ) -> None:
        """Add d(self)/d(leaf) (times ``gradient`` for a non-scalar self) into ``leaf.grad``
        for every leaf Tensor that requires grad and that this Tensor depends on.

        The graph is freed unless ``retain_graph``; with ``create_graph`` the
        gradients are recorded too, so they can be differentiated again.
        """
        box = tensor_box(self._value)
        if box is None:
            raise RuntimeError(
                "backward() was called on a Tensor that does not depend on any Tensor with "
                "requires_grad=True (made with requires_grad=False, under no_grad(), or from "
                "a value traced by a functional transform such as grad, which "
                "differentiates it instead)."
            )
        retain_graph = create_graph if retain_graph is None else retain_graph
        out = box._value
        if gradient is None:
            if _np.size(out) != 1 or _np.iscomplexobj(out):
                what = "is complex" if _np.size(out) == 1 else f"has shape {_np.shape(out)}"
                raise RuntimeError(
                    f"backward() without a gradient needs a real Tensor with one element, but "
                    f"this one {what}. Pass gradient= (same shape: the vector in the "
                    f"vector-Jacobian product), or reduce first, e.g. .sum() or .real."
                )
            g = vspace(out).ones()
        else:
            g = gradient._value if isinstance(gradient, Tensor) else gradient
            if not create_graph:
                g = getval(g)
            if _np.shape(getval(g)) != _np.shape(out):
                raise ValueError(
                    f"backward(): the gradient has shape {_np.shape(getval(g))} but the Tensor "
                    f"has shape {_np.shape(out)}; they must match."
                )
        found = gradients(box._node, g, retain_graph, create_graph)
        # (a leaf's .grad is an array of its own: never ``gradient`` or another's, as
        # PyTorch's, which clones a gradient referenced elsewhere)
        for root, grad in zip(found, unaliased(list(found.values()), g)):
            leaf = root.leaf()
            if leaf is not None:
                leaf._accumulate(root, run_hooks(root, grad, create_graph), create_graph)

    # ------------------------------------------------------------------ hooks
    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` with the gradient with respect to this Tensor whenever
        ``backward()`` computes it; a Tensor it returns replaces that gradient (for the
        rest of the pass and in ``.grad``), None keeps it. As torch.Tensor.register_hook;
        ``handle.remove()`` removes the hook."""
        box = tensor_box(self._value)
        if box is None:
            raise RuntimeError(
                "cannot register a hook on a Tensor that does not require grad (made with "
                "requires_grad=False, under no_grad(), or detached), as in PyTorch."
            )
        return RemovableHandle(add_hook(box._node, _gradient_hook(hook)))

    def retain_grad(self) -> None:
        """Keep the gradient with respect to this computed Tensor in ``.grad`` after
        ``backward()`` (leaves keep theirs anyway), as torch.Tensor.retain_grad."""
        box = tensor_box(self._value)
        if box is None:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if box._node.fun is not None and retaining(box._node) is not self:
            retain(box._node, self)

    @property
    def retains_grad(self) -> bool:
        """Whether ``retain_grad()`` was called on this computed Tensor."""
        box = tensor_box(self._value)
        return box is not None and box._node.fun is not None and retaining(box._node) is self

    def _accumulate(self, root, grad, create_graph: bool) -> None:
        box = tensor_box(self._value)
        if box is None or box._node is not root:
            return  # detached since the graph was recorded
        grad = _wrap(vspace(box._value).cast(grad))
        with _GRAD_LOCK:
            if self.grad is None:
                self.grad = grad
            elif create_graph:
                self.grad = self.grad + grad
            else:
                with no_grad():
                    self.grad = self.grad + grad

    def _assign(self, raw) -> None:
        """Replace the value in place; a leaf that requires grad stays that leaf."""
        box = tensor_box(self._value)
        if box is not None and box._node.fun is None:
            if isbox(raw):
                raise TypeError(
                    "A leaf Tensor that requires grad holds a plain value; it cannot store a "
                    "traced one. Assign under no_grad() or use .detach()."
                )
            self._value = new_box(raw, TRACE_ID, box._node)  # the same root: same leaf
        else:
            self._value = raw

    # ------------------------------------------------------------------ copies and pickles
    # As in PyTorch 2.13: pickle and copy.copy give a new leaf with the value (shared by
    # copy.copy) and requires_grad, without .grad; copy.deepcopy copies a leaf with its
    # .grad, and refuses a computed Tensor that requires grad. A Tensor traced by a
    # functional transform follows the traced values: copies stay on that transform's
    # graph, pickling is refused.
    def __reduce_ex__(self, protocol):
        if _is_functional(self._value):
            self._value.__reduce_ex__(protocol)  # raises the traced value's error
        return (_new_leaf, (strip(self._value), self.requires_grad, type(self)))

    def __copy__(self) -> Tensor:
        if _is_functional(self._value):
            return _wrap(copy.copy(self._value))
        return _new_leaf(strip(self._value), self.requires_grad, type(self))

    def __deepcopy__(self, memo: dict) -> Tensor:
        if _is_functional(self._value):
            return _wrap(copy.deepcopy(self._value, memo))
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol, as in PyTorch: a deep copy of a computed Tensor would "
                "copy its graph away from the leaves it depends on. Deep-copy the leaves, "
                "or use .detach() to copy the value."
            )
        tensor = _new_leaf(copy.deepcopy(strip(self._value), memo), self.requires_grad, type(self))
        memo[id(self)] = tensor  # .grad may refer back to this Tensor's container
        tensor.grad = copy.deepcopy(self.grad, memo)
        return tensor

    # ------------------------------------------------------------------ printing
    def __repr__(self) -> str:
        body = _format(getval(self._value))
        extras = []
        if self.dtype != _np.float64:
            extras.append(f"dtype={self.dtype}")
        node = self.grad_fn
        if node is not None:
            extras.append(f"grad_fn=<{node.name}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        if self.grad is not None:
            extras.append(f"grad={_format(self.grad.value)}")
        return f"Tensor({', '.join([body, *extras])})"

    def __format__(self, spec: str) -> str:
        if not spec:
            return repr(self)
        return format(self.item(), spec)

    # ------------------------------------------------------------------ conversions
    def _plain(self, what: str):
        value = strip(self._value)
        if isbox(value):
            raise TypeError(
                f"{what} of a Tensor traced by a functional transform would drop its "
                f"derivative; keep it a Tensor, or use chainrule.stop_gradient."
            )
        return value

    def __float__(self) -> float:
        self._warn_if_gradient_dropped()
        return float(self._plain("float()"))

    def _warn_if_gradient_dropped(self) -> None:
        # NumPy converts a Tensor written into its array (a[i] = t) with float(): the
        # gradient is lost without an error, so say it, as PyTorch does for float(t)
        if self.grad_fn is not None:
            warnings.warn(
                "Converting a Tensor with requires_grad=True to a Python number drops its "
                "gradient (as in a[i] = t with a a NumPy array, which converts t with "
                "float()). Use t.item() for the number, or keep it a Tensor: build arrays "
                "of Tensors with chainrule.numpy.stack or concatenate.", UserWarning,
                stacklevel=3)

    def __int__(self) -> int:
        return int(self._plain("int()"))

    def __complex__(self) -> complex:
        self._warn_if_gradient_dropped()
        return complex(self._plain("complex()"))

    def __index__(self) -> int:
        value = _np.asarray(self._plain("Using as an index"))
        if value.dtype.kind not in "iub" or value.ndim:
            raise TypeError(
                f"Only integer Tensors of one element can be used as an index, "
                f"not {value.dtype} of shape {value.shape}."
            )
        return int(value)

    def __bool__(self) -> bool:
        return bool(getval(self._value))

    def __len__(self) -> int:
        return len(getval(self._value))

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __array__(self, dtype=None, copy=None):
        if isbox(self._value):
            raise TypeError(
                "A Tensor that requires grad cannot become a plain NumPy array silently (this "
                "happens with np.asarray(t) or np.array([t1, t2])): that would drop its "
                "gradient. Combine Tensors with chainrule.numpy.stack or concatenate, or use "
                f"t.detach().numpy() for the value.{scipy_hint(sys._getframe(1))}"
            )
        return _np.asarray(self._value, dtype=dtype)

    # ------------------------------------------------------------------ NumPy dispatch
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if kwargs.get("out") is not None:
            raise TypeError(
                f"numpy.{ufunc.__name__}(..., out=...) cannot write into a Tensor; assign the "
                f"result instead (y = numpy.{ufunc.__name__}(...))."
            )
        args = _unwrap_tree(inputs)
        wrapped = anp.raw_to_wrapped.get(ufunc)
        if wrapped is None and scipy_ufunc_rules(ufunc):
            wrapped = anp.raw_to_wrapped.get(ufunc)
        if method == "__call__" and wrapped is not None:
            return _result(ufunc, wrapped(*args, **kwargs))
        if not _any_box(args):
            return _result(ufunc, getattr(ufunc, method)(*args, **kwargs))
        suffix = "" if method == "__call__" else f".{method}"
        raise TypeError(
            f"chainrule has no derivative rule for {_ufunc_name(ufunc)}{suffix}, so it cannot "
            f"be applied to Tensors that require grad. Use a chainrule.numpy function, or "
            f"define a primitive with chainrule.extend.{scipy_hint(function=ufunc)}"
        )

    def __array_function__(self, func, types, args, kwargs):
        args = _unwrap_tree(args)
        kwargs = {key: _unwrap_tree(value) for key, value in kwargs.items()}
        wrapped = anp.raw_to_wrapped.get(func)
        if wrapped is not None:
            return _result(func, wrapped(*args, **kwargs))
        if not _any_box((args, kwargs)):
            return _result(func, func(*args, **kwargs))
        raise TypeError(
            f"chainrule has no derivative rule for numpy.{getattr(func, '__name__', func)}, "
            f"so it cannot be applied to Tensors that require grad. Use a differentiable "
            f"alternative from chainrule.numpy, or define a primitive with chainrule.extend."
        )

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, index):
        out = _wrap(array_getitem(_unwrap(self), _index(index)))
        return link_view(self, out) if _is_basic(index) else out

    def __setitem__(self, index, value) -> None:
        check_no_views(self, "Assignment into a Tensor")
        if _mode.enabled and self.requires_grad:
            raise RuntimeError(
                "In-place assignment into a Tensor that requires grad is not supported: build "
                "a new Tensor (chainrule.numpy.where, concatenate), or update parameters "
                "inside `with chainrule.no_grad():`."
            )
        current = self._plain("Assignment into")
        value = _unwrap(value)
        if isbox(value):
            raise TypeError(
                "Assigning a value that requires grad into a Tensor would drop its gradient; "
                "build a new Tensor instead (chainrule.numpy.where, stack, concatenate)."
            )
        new = _np.array(current, copy=True)  # recorded graphs may hold the old array
        new[_index(index)] = value
        self._assign(new)

    # ------------------------------------------------------------------ methods
    @property
    def T(self) -> Tensor:
        return link_view(self, _wrap(anp.transpose(_unwrap(self))))

    @property
    def real(self) -> Tensor:
        return link_view(self, _wrap(anp.real(_unwrap(self))))

    @property
    def imag(self) -> Tensor:
        return link_view(self, _wrap(anp.imag(_unwrap(self))))

    def transpose(self, *axes, **dims) -> Tensor:
        """PyTorch's ``transpose(dim0, dim1)``: those two dims swapped. Any other call is
        NumPy's: ``transpose()`` reverses the dims, ``transpose(axes)`` and
        ``transpose(*axes)`` reorder them all (as ``permute``). Two ints are always
        PyTorch's: NumPy's ``a.transpose(0, 1)`` of a 2-d array, the identity, is
        ``transpose((0, 1))`` here."""
        if dims:  # PyTorch's keywords: transpose(dim0=0, dim1=1), transpose(0, dim1=1)
            names = ("dim0", "dim1")[len(axes):]
            if set(dims) != set(names):
                raise TypeError(f"transpose(): takes dim0 and dim1 (PyTorch's) or NumPy's "
                                f"axes; got the keywords {sorted(dims)} after {len(axes)} "
                                f"positional dims.")
            axes = axes + tuple(dims[name] for name in names)
        if len(axes) == 2 and not any(isinstance(a, (tuple, list)) for a in axes):
            return link_view(self, _wrap(anp.swapaxes(_unwrap(self), *axes)))
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]  # (NumPy's one sequence, or None: reversed)
        return link_view(self, _wrap(anp.transpose(_unwrap(self), tuple(axes) if axes else None)))

    def astype(self, dtype) -> Tensor:
        return _wrap(array_astype(_unwrap(self), dtype))

    def dot(self, other) -> Tensor:
        return _wrap(anp.dot(*_operands(self, other)))

    __hash__ = object.__hash__  # __eq__ is elementwise; identity hashing keeps dict keys working


class RemovableHandle:
    """What ``register_hook`` returns: ``remove()`` takes the hook away."""

    def __init__(self, remove: Callable[[], None]) -> None:
        self._remove = remove

    def remove(self) -> None:
        self._remove()

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _gradient_hook(hook: Callable):
    """``hook`` (Tensors in and out) as a function of the raw gradient (see _graph.add_hook),
    refusing a result that is not a Tensor of the gradient's shape and dtype, as PyTorch."""
    name = getattr(hook, "__name__", repr(hook))

    def on_gradient(g, record: bool):
        if record:  # backward(create_graph=True): what the hook does is recorded
            out = hook(_wrap(g))
        else:
            with no_grad():  # as in PyTorch, a hook's own operations are not recorded
                out = hook(_wrap(g))
        if out is None:
            return g
        if not isinstance(out, Tensor):
            raise TypeError(f"expected Tensor, but hook '{name}' returned '{type(out).__name__}'")
        new = out._value
        if _np.shape(getval(new)) != _np.shape(getval(g)):
            raise RuntimeError(
                f"hook '{name}' has changed the size of value: the gradient has shape "
                f"{_np.shape(getval(g))}, the hook returned shape {_np.shape(getval(new))}."
            )
        if _np.result_type(getval(new)) != _np.result_type(getval(g)):
            raise RuntimeError(
                f"hook '{name}' has changed the type of value: the gradient has dtype "
                f"{_np.result_type(getval(g))}, the hook returned {_np.result_type(getval(new))}."
            )
        return new

    return on_gradient


def _not_differentiable(what: str) -> str:
    return (
        f"Only Tensors of floating point and complex dtype can require gradients (as in "
        f"PyTorch), not {what}. Convert first, e.g. Tensor(x.astype(float)), or pass "
        f"requires_grad=False."
    )


def as_tensor(data, dtype=None) -> Tensor:
    """``data`` as a Tensor that does not require grad (inputs, targets), as
    ``torch.as_tensor``. A Tensor is returned as it is (converted if ``dtype`` differs);
    NumPy arrays keep their dtype, Python floats become float64 (PyTorch: float32)."""
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    return Tensor(data, requires_grad=False, dtype=dtype)


def _as_raw(value, dtype):
    """A Tensor's raw value: a copy; Python numbers become float64 unless ``dtype`` says."""
    if isinstance(value, (_np.ndarray, _np.generic)):
        array = _np.array(value, dtype=dtype)
    else:
        array = _np.asarray(value, dtype=dtype)
        if dtype is None and array.dtype.kind in "biu":
            array = array.astype(_np.float64)
    if array.dtype.kind not in "biufc":
        raise TypeError(
            f"A Tensor holds numbers: got {type(value).__name__} (dtype {array.dtype}). Pass "
            f"a number, a (nested) list of numbers or a numeric NumPy array."
        )
    return array[()] if array.ndim == 0 else array


def _format(raw) -> str:
    if _np.ndim(raw):
        return _np.array2string(_np.asarray(raw), separator=", ", prefix="Tensor(")
    return str(raw)


def _new_leaf(raw, requires_grad: bool, cls: type = None) -> Tensor:
    """A leaf Tensor (of ``cls``: copies of an nn.Parameter stay Parameters) holding ``raw``
    itself (not a copy)."""
    tensor = _wrap(raw)
    if cls is not None and cls is not Tensor:
        tensor.__class__ = cls
    if requires_grad:
        tensor._value = leaf_box(raw, tensor)
    return tensor


def _as_leaf(value) -> Tensor:
    return value if isinstance(value, Tensor) else _wrap(value)


def _wrap(value) -> Tensor:
    tensor = object.__new__(Tensor)
    tensor._value = value
    tensor.grad = tensor._base = tensor._views = None
    return tensor


# PyTorch's views share memory with their base: an in-place change of one shows in the
# other. chainrule Tensors never share memory, so where PyTorch would change a live view
# (or the base of one) in place, chainrule refuses instead of diverging silently. Views
# are linked to the root base, which holds weak references to them.
def link_view(base: Tensor, view: Tensor) -> Tensor:
    """Note that PyTorch would make ``view`` a view of ``base``; returns ``view``."""
    root = base._base() if base._base is not None else None
    root = base if root is None else root
    view._base = weakref.ref(root)
    views = root._views
    if views is None:
        root._views = [weakref.ref(view)]
        return view
    if len(views) >= 8:
        views[:] = [ref for ref in views if ref() is not None]
    views.append(weakref.ref(view))
    return view


def check_no_views(tensor: Tensor, what: str) -> None:
    base = tensor._base() if tensor._base is not None else None
    if base is None and not any(ref() is not None for ref in tensor._views or ()):
        return
    relation = "is a view of another Tensor" if base is not None else "has live views"
    raise RuntimeError(
        f"{what} {relation} (made by view, reshape, indexing, transpose, detach, ...). In "
        f"PyTorch they share memory and the change would show in both; chainrule Tensors "
        f"never share memory, so this is refused rather than done differently. Use the "
        f"out-of-place form (y = y + 1), or .clone() the Tensor first."
    )


def _is_basic(index) -> bool:
    """Whether PyTorch's indexing with ``index`` gives a view (ints, slices, None, ...)."""
    parts = index if type(index) is tuple else (index,)
    return all(
        part is None or part is Ellipsis or isinstance(part, (int, slice))
        for part in parts
        if not isinstance(part, bool)
    ) and not any(isinstance(part, bool) for part in parts)


def _unwrap(x):
    if isinstance(x, Tensor):
        return x._value if _mode.enabled else strip(x._value)
    return x


def _operands(a, b) -> tuple:
    """The arguments for a binary primitive.

    Tensors are unwrapped, except that when the other operand is traced by a
    functional transform, a Tensor tracked only on the Tensor trace is passed
    whole: the primitive then records the transform's node with the Tensor as a
    constant argument (see ``tracer.FrontEnd``), so the derivatives the
    transform computes from it are Tensors, not bare Tensor-traced arrays.
    """
    if _mode.enabled:
        va = a._value if isinstance(a, Tensor) else a
        vb = b._value if isinstance(b, Tensor) else b
    else:
        va, vb = _unwrap(a), _unwrap(b)
    if _is_functional(va) or _is_functional(vb):
        if isinstance(a, Tensor) and _is_tensor_traced(va):
            va = a
        if isinstance(b, Tensor) and _is_tensor_traced(vb):
            vb = b
    return va, vb


def _is_functional(v) -> bool:
    return isbox(v) and v._trace_id != TRACE_ID


def _is_tensor_traced(v) -> bool:
    return isbox(v) and v._trace_id == TRACE_ID


def _unwrap_tree(x):
    if isinstance(x, Tensor):
        return _unwrap(x)
    if type(x) is tuple or type(x) is list:
        return type(x)(_unwrap_tree(item) for item in x)
    return x


def _index(index):
    """An index with integer Tensors replaced by their values (indices are not traced)."""
    if isinstance(index, Tensor):
        return index._plain("Using as an index")
    if type(index) is tuple:
        return tuple(_index(part) for part in index)
    return index


def _any_box(x) -> bool:
    if type(x) is tuple or type(x) is list:
        return any(_any_box(item) for item in x)
    if type(x) is dict:
        return any(_any_box(item) for item in x.values())
    return isbox(x)


_ARRAY_TYPES = (_np.ndarray, _np.generic, int, float, complex)


def _wrap_tree(x):
    if isbox(x) or type(x) in batched_types or (
            isinstance(x, _ARRAY_TYPES) and not isinstance(x, bool)):
        return _wrap(x)
    if type(x) is tuple or type(x) is list:
        return type(x)(_wrap_tree(item) for item in x)
    return x


def _result(raw_fun, out):
    return out if raw_fun in _PLAIN_RESULTS else _wrap_tree(out)


# ----------------------------------------------------------------------------- operators
def _binary(fun, reflected: bool = False):
    if reflected:

        def op(self, other):
            return _wrap(fun(*_operands(other, self)))
    else:

        def op(self, other):
            return _wrap(fun(*_operands(self, other)))

    return op


def _logical(fun, reflected: bool = False):
    """A comparison or logical operator: a boolean Tensor, never on a graph (no gradient)."""
    if reflected:

        def op(self, other):
            return _wrap_tree(fun(_unwrap(other), _unwrap(self)))
    else:

        def op(self, other):
            return _wrap_tree(fun(_unwrap(self), _unwrap(other)))

    return op


def inplace_update(tensor: Tensor, compute, method: str) -> Tensor:
    """Replace ``tensor``'s value by ``compute()`` (an out-of-place result), as PyTorch's
    in-place methods do: refused on a leaf that requires grad while recording; on a
    computed Tensor the recorded graph keeps the old value and notes the change."""
    check_no_views(tensor, f"{method}: the Tensor changed in place")
    box = tensor_box(tensor._value)
    leaf = box is not None and box._node.fun is None
    if leaf and _mode.enabled:
        raise RuntimeError(
            f"a leaf Variable that requires grad is being used in an in-place operation. "
            f"PyTorch refuses {method} here too: update parameters inside `with "
            f"chainrule.no_grad():`, or use the out-of-place form (x = x + y)."
        )
    result = compute()
    result = result._value if isinstance(result, Tensor) else result
    result = fitted_in_place(result, tensor.shape, tensor.dtype, f"{method}()",
                             errors=(RuntimeError, RuntimeError))  # PyTorch's class
    if leaf:
        tensor._assign(result)
    else:
        if box is not None:
            new_box = tensor_box(result)
            mark_overwritten(box._node, method, None if new_box is None else new_box._node)
        tensor._value = result
    return tensor


def _inplace(fun, method: str):
    def op(self, other):
        return inplace_update(self, lambda: fun(*_operands(self, other)), method)

    return op


def _unary(fun):
    def op(self):
        return _wrap(fun(_unwrap(self)))

    return op


# fmt: off
for _name, _fun in [("add", anp.add), ("sub", anp.subtract), ("mul", anp.multiply),
                    ("truediv", anp.true_divide), ("pow", anp.power), ("matmul", anp.matmul),
                    ("mod", anp.mod), ("floordiv", anp.floor_divide)]:
    setattr(Tensor, f"__{_name}__", _binary(_fun))
    setattr(Tensor, f"__r{_name}__", _binary(_fun, reflected=True))
    setattr(Tensor, f"__i{_name}__", _inplace(_fun, f"__i{_name}__"))
for _name, _fun in [("eq", anp.equal), ("ne", anp.not_equal), ("lt", anp.less),
                    ("le", anp.less_equal), ("gt", anp.greater), ("ge", anp.greater_equal)]:
    setattr(Tensor, f"__{_name}__", _logical(_fun))
for _name, _fun in [("and", _np.bitwise_and), ("or", _np.bitwise_or), ("xor", _np.bitwise_xor)]:
    setattr(Tensor, f"__{_name}__", _logical(_fun))
    setattr(Tensor, f"__r{_name}__", _logical(_fun, reflected=True))
Tensor.__invert__ = lambda self: _wrap_tree(_np.invert(getval(self._value)))
for _name, _fun in [("neg", anp.negative), ("pos", anp.positive), ("abs", anp.absolute)]:
    setattr(Tensor, f"__{_name}__", _unary(_fun))
# fmt: on
# The named methods (sum, reshape, exp, add_, ...) are in _methods.py.


def register_tensor_type(cls: type) -> None:
    """Make the engine treat ``cls`` (Tensor, or a subclass such as nn.Parameter) as a
    Tensor: its registries are keyed by exact type."""
    # How the tracer meets Tensors among a primitive's arguments and answers (user-defined
    # primitives called on Tensors, and a traced value meeting a Tensor: ``box * tensor``).
    register_front_end(cls, FrontEnd(unwrap=_unwrap, value_of=lambda t: t._value,
                                     wrap=_wrap_tree))
    # A Tensor is a container of its value for the functional transforms (grad(f)(tensor)
    # gives a Tensor), and has the vector space of its value. A derivative with respect to
    # a Tensor that requires grad may already be a Tensor (the rules computed with it, see
    # FrontEnd): it is the answer as it is, never a Tensor around a Tensor.
    register_pytree_node(cls, lambda t: ((t._value,), None), lambda _, kids: _as_leaf(kids[0]))
    VSpace.register(cls, lambda t: vspace(t._value))


register_tensor_type(Tensor)
