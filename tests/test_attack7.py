"""The hostile user, session 7: jit, vmap and tensor.vmap, Taylor mode, sparse derivatives,
the SciPy solvers, explain and the debug tools, the Tensor front end and a newcomer's first
hour. Each test is a silent wrong answer (or an unclear error) found by attacking, checked
against the reference semantics: jit == eager, vmap == the per-example loop, sparse ==
dense, jet == nested jvp, Tensor == PyTorch (or a clear refusal)."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
from chainrule import Tensor


def _value(t):
    return onp.asarray(t.value if isinstance(t, Tensor) else t)


# ------------------------------------------------------------- tensor.vmap


def _doubles_its_weights(w, x):
    w.mul_(2.0)
    return (w * x).sum()


def _assigns_into_its_argument(x):
    x[0] = 7.0
    return x.sum()


@pytest.mark.parametrize("fun, in_dims", [
    (_doubles_its_weights, (None, 0)),
    (_assigns_into_its_argument, 0),
], ids=["unmapped mul_", "mapped t[0] = v"])
def test_tensor_vmap_refuses_an_in_place_change_of_an_argument(fun, in_dims):
    # The loop over the rows (w unmapped: the same Tensor each time) doubles w at each
    # example: answers [-38, 32] with w ending [4, 40]; torch.func.vmap runs once, doubles
    # w once and answers [-38, 16]. chainrule.tensor.vmap gave each run a new Tensor around
    # w's value: it answered [-38, 16] and left the caller's w as it was, silently neither.
    # (A mapped argument is a row of the batch: the loop refuses its in-place change as a
    # view's; tensor.vmap answered as on copies.) Now it refuses, naming the fix.
    xs = Tensor(onp.array([[1.0, -2.0], [3.0, 0.5]]), requires_grad=False)
    w = Tensor(onp.array([1.0, 10.0]), requires_grad=False)
    args = (w, xs) if in_dims != 0 else (xs,)
    with pytest.raises(RuntimeError, match="changed an argument in place.*clone"):
        cr.tensor.vmap(fun, in_dims=in_dims)(*args)
    assert onp.array_equal(_value(w), [1.0, 10.0])
    assert onp.array_equal(_value(xs), [[1.0, -2.0], [3.0, 0.5]])


def test_tensor_vmap_allows_in_place_changes_of_its_own_tensors():
    xs = Tensor(onp.array([[1.0, -2.0], [3.0, 0.5]]), requires_grad=False)

    def doubled_copy(x):
        y = x.clone()
        y.mul_(2.0)
        x.requires_grad_()  # (not a change of the value)
        return y.sum()

    assert onp.array_equal(_value(cr.tensor.vmap(doubled_copy)(xs)), [-2.0, 7.0])
