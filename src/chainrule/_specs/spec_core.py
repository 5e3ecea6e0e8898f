"""Specs for the primitives the core engine needs (the rest live in sibling modules)."""

import numpy as onp

import chainrule.numpy as np

from . import Case, binary, make, reduction, unary

CASES = [
    *binary("add", np.add, onp.add),
    *binary("subtract", np.subtract, onp.subtract),
    *binary("multiply", np.multiply, onp.multiply),
    *binary("divide", np.divide, onp.divide, low2=0.5, high2=2.0),
    *binary("power", np.power, onp.power, low=0.5, high=2.0),
    *unary("negative", np.negative, onp.negative),
    *unary("exp", np.exp, onp.exp),
    *unary("log", np.log, onp.log, low=0.2, high=3.0),
    *unary("sqrt", np.sqrt, onp.sqrt, low=0.2, high=3.0),
    *unary("sin", np.sin, onp.sin),
    *unary("cos", np.cos, onp.cos),
    *unary("tanh", np.tanh, onp.tanh),
    *unary("absolute", np.abs, onp.abs, low=0.1, high=2.0),
    *reduction("sum", np.sum, onp.sum),
    *reduction("mean", np.mean, onp.mean),
    Case("dot", np.dot, (make((3, 4)), make((4,))), argnums=(0, 1), ref=onp.dot),
    Case("dot", np.dot, (make((2, 3)), make((4, 3, 2))), argnums=(0, 1), ref=onp.dot),
    Case("dot", np.dot, (make((3,)), make((3,))), argnums=(0, 1), ref=onp.dot),
    Case("matmul", np.matmul, (make((2, 3, 4)), make((4, 2))), argnums=(0, 1), ref=onp.matmul),
    Case("reshape", np.reshape, (make((2, 3)), (3, 2)), ref=onp.reshape),
    Case("transpose", np.transpose, (make((2, 3, 4)), (2, 0, 1)), ref=onp.transpose),
]
