"""Utilities on top of the transforms, as in autograd's ``misc``: optimizers that
take a gradient function, flattening of containers, differentiable fixed points,
and ``const_graph`` (trace a function once, replay its graph)."""

from . import fixed_points, optimizers
from .flatten import flatten, flatten_func
from .tracers import const_graph

__all__ = ["const_graph", "fixed_points", "flatten", "flatten_func", "optimizers"]
