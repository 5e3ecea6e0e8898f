"""The examples in the public modules' docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

import chainrule

MODULES = ["chainrule._transforms.derivatives", "chainrule._transforms.functional",
           "chainrule.extend", "chainrule.test_util", "chainrule.tensor._tensor",
           "chainrule.tensor._mode",
           "chainrule.explain._report", "chainrule.misc.optimizers", "chainrule.misc.flatten",
           "chainrule.misc.fixed_points", "chainrule._core.pytree"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# the transforms of chainrule's namespace: each docstring carries a runnable example
DOCUMENTED = ["grad", "jacobian", "checkpoint", "elementwise_grad", "value_and_grad",
              "grad_and_aux", "hessian", "hessian_tensor_product", "hessian_vector_product",
              "make_hvp",
              "make_vjp", "make_jvp", "make_ggnvp", "tensor_jacobian_product",
              "vector_jacobian_product", "deriv", "holomorphic_grad", "grad_named",
              "multigrad_dict", "jvp", "vjp", "jacfwd", "jacrev", "stop_gradient", "custom_vjp",
              "custom_jvp", "explain", "Tensor", "no_grad", "enable_grad", "register_pytree_node",
              "tree_map"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_pass(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=FLAGS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests failed in {name}"


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_function_has_an_example(name):
    doc = getattr(chainrule, name).__doc__ or ""
    assert ">>>" in doc, f"chainrule.{name} has no example in its docstring"
