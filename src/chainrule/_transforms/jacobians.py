"""The ways to fill a Jacobian, shared by jacobian, jacrev and jacfwd: by rows (one reverse
pass per output element, or one for the whole basis), by columns (one forward pass per
input element), or by columns of a recorded graph pushed forward all at once; and the
blocks assembled into the structures of the output and the input. Blocks are built with
chainrule.numpy's functions, so nested transforms (hessian = jacobian of grad) see them.
"""

from __future__ import annotations

from typing import Any

import numpy as _np

from .. import numpy as anp
from .._core.pytree import tree_flatten, tree_leaves, tree_unflatten
from .._core.tracer import getval
from .._core.vspace import ContainerVSpace, VSpace, vspace
from .._sparsity.products import SparseVSpace, stored_values
from ..numpy.batched import jvp_over_batch, over_batch


def jacobian_tree(ans, treedef, blocks: list) -> Any:
    """The Jacobian from ``blocks[i][k]`` (output leaf i, input leaf k): ``x``'s structure
    of blocks, inside the output's structure where the output is a container (as JAX's)."""
    leaves, out_def = tree_flatten(ans)
    per_output = [tree_unflatten(treedef, [_own_block(block) for block in row])
                  for row in blocks]
    return tree_unflatten(out_def, per_output)


def _own_block(block):
    """``block`` as an array of its own where it is a read-only view (a sum's VJP
    broadcasts its cotangent, so the rows of the basis pulled back at once are one row
    with a zero stride): NumPy's answers, and autograd's stacked rows, can be written."""
    value = getval(block)
    if isinstance(value, _np.ndarray) and not value.flags.writeable:
        return value.copy() if block is value else anp.copy(block)
    return block



def _leaf_spaces(space: VSpace) -> list:
    return space.spaces if type(space) is ContainerVSpace else [space]



def _dense_blocks(spaces: list) -> None:
    """Refuse an input whose Jacobian block is no array: a scipy.sparse matrix's."""
    if any(isinstance(space, SparseVSpace) for space in spaces):
        raise TypeError(
            "a Jacobian with respect to a scipy.sparse matrix (its stored values) is not "
            "built: use grad, vjp or jvp, whose derivatives in A are matrices of A's "
            "pattern, or differentiate with respect to A.data (data= of "
            "chainrule.scipy.sparse.linalg's solves)."
        )



def jacobian_rows(vjp, ans_vspace, spaces: list) -> list:
    """Blocks ``[i][k]`` (output leaf i, input leaf k), from one reverse pass for the whole
    basis of the output (vmap's batching rules), or one per element of the output."""
    _dense_blocks(spaces)
    if any(out.iscomplex for out in _leaf_spaces(ans_vspace)):
        # (the standard basis of a complex output has two units per element)
        raise TypeError(
            "a Jacobian of a complex output in reverse mode (jacrev, or jacobian where an "
            "input is complex or the output a container) would have two rows per element, "
            "the cotangents of its real and imaginary parts, not a matrix shaped output x "
            "input. For real inputs use jacfwd (its columns are the complex tangents); "
            "otherwise differentiate np.real(f(x)) and np.imag(f(x)) apart."
        )
    if hasattr(ans_vspace, "stacked_basis") and not ans_vspace.iscomplex:
        rows = over_batch(vjp, ans_vspace.stacked_basis(), ans_vspace.size)
        if rows is not None:
            return [[anp.reshape(leaf, ans_vspace.shape + space.shape)
                     for leaf, space in zip(tree_leaves(rows), spaces)]]
    rows = [tree_leaves(vjp(basis)) for basis in ans_vspace.standard_basis()]
    blocks, start = [], 0
    for out in _leaf_spaces(ans_vspace):
        own_rows, start = rows[start : start + out.size], start + out.size
        blocks.append(
            [
                _stacked([row[k] for row in own_rows], out.shape + space.shape)
                for k, space in enumerate(spaces)
            ]
        )
    return blocks



def jacobian_columns(jvp, treedef, spaces: list) -> tuple[Any, list]:
    """``(output, blocks[i][k])`` (output leaf i, input leaf k), from one forward pass per
    element of each input leaf."""
    _dense_blocks(spaces)
    if any(space.iscomplex for space in spaces):
        # (the standard basis of a complex input has two units per element)
        raise TypeError(
            "a Jacobian with respect to a complex input in forward mode (jacfwd) would have "
            "two columns per element, the tangents along its real and imaginary units, not "
            "a matrix shaped output x input. Use jacrev or jacobian for a real output (the "
            "gradient convention of grad), or pass the real and imaginary parts as real "
            "inputs: f(re + 1j * im)."
        )
    zeros = [space.zeros() for space in spaces]
    pairs = [
        [
            jvp(tree_unflatten(treedef, zeros[:k] + [basis] + zeros[k + 1 :]))
            for basis in space.standard_basis()
        ]
        for k, space in enumerate(spaces)
    ]
    first = next((column_pairs[0] for column_pairs in pairs if column_pairs), None)
    ans = jvp(tree_unflatten(treedef, zeros))[0] if first is None else first[0]
    out_spaces = _leaf_spaces(vspace(ans))
    columns = []  # [k][i]
    for space, column_pairs in zip(spaces, pairs):
        tangents = [tree_leaves(tangent) for _, tangent in column_pairs]
        columns.append(
            [
                _output_major(
                    _stacked([_coordinates(t[i], out) for t in tangents],
                             space.shape + out.shape), space, out
                )
                for i, out in enumerate(out_spaces)
            ]
        )
    return ans, [[column[i] for column in columns] for i in range(len(out_spaces))]



def jacobian_columns_of_recording(recording, spaces: list) -> list:
    """Each input leaf's block from one sweep of ``recording``'s graph that pushes the
    leaf's whole standard basis forward at once (``fun`` is not run again). Primitives
    with batched JVP rules (elementwise, matmul) do one call for all columns."""
    _dense_blocks(spaces)
    ans_vspace = vspace(recording.ans)
    blocks = []
    for k, space in enumerate(spaces):
        n = space.size
        batch = [
            (space.stacked_basis() if hasattr(space, "stacked_basis") else
             _stacked(list(space.standard_basis()), (n,) + space.shape))
            if j == k
            else anp.broadcast_to(other.zeros(), (n,) + other.shape)
            for j, other in enumerate(spaces)
        ]
        (tangents,) = recording.push_forward_batched(batch, n, anp.stack, jvp_over_batch)
        block = (  # (zeros of their own, as NumPy's: a broadcast would be read-only)
            anp.zeros_like(ans_vspace.zeros(), shape=(n,) + ans_vspace.shape)
            if tangents is None
            else tangents
        )
        block = anp.reshape(block, space.shape + ans_vspace.shape)
        blocks.append(_output_major(block, space, ans_vspace))
    return blocks



def _output_major(block, space, ans_vspace):
    """A block of columns (input axes first) with the output's axes moved to the front."""
    in_axes = list(range(len(space.shape)))
    out_ndim = len(ans_vspace.shape)
    return anp.moveaxis(block, in_axes, [out_ndim + i for i in in_axes])



def _coordinates(tangent, space: VSpace):
    """A tangent as the array of its space's coordinates: a scipy.sparse matrix's stored
    values (``SparseVSpace``), where NumPy would stack the matrices as objects."""
    return stored_values(tangent) if isinstance(space, SparseVSpace) else tangent


def _stacked(parts: list, shape: tuple):
    """``parts`` stacked and reshaped, with wrapped functions so nested transforms see it."""
    return anp.reshape(anp.stack(parts), shape) if parts else _np.zeros(shape)
