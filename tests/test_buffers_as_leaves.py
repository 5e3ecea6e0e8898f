"""A chainrule.numpy buffer (the array a function fills in place under a transform) is a
pytree leaf, the array it stands for (``FrontEnd.pytree_leaf``): every transform handles a
function returning buffers as the same function returning ndarrays (issue 36, the house)."""

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule.numpy.buffers import Buffer


def filled(x):
    y = np.zeros(3)  # a Buffer under a transform
    y[0] = x[0] ** 2
    y[1:] = np.sin(x[1:]) * x[0]
    return y


def built(x):  # the same values, by operations that answer ndarrays (or boxes)
    return np.concatenate([np.reshape(x[0] ** 2, (1,)), np.sin(x[1:]) * x[0]])


def filled_dict(x):
    return {"b": filled(x) * 2.0, "a": filled(x)}


def built_dict(x):
    return {"b": built(x) * 2.0, "a": built(x)}


X = onp.array([0.7, -1.2, 2.0])
XS = onp.array([[0.7, -1.2, 2.0], [1.5, 0.1, -0.3]])


def test_a_buffer_flattens_as_one_leaf_the_array_it_stands_for():
    seen = []

    def look(x):
        y = filled(x)
        assert type(y) is Buffer
        seen.append(cr.tree_flatten({"y": y, "z": (y, 1.0)}))
        return np.sum(y)

    cr.grad(look)(X)
    leaves, treedef = seen[0]
    assert repr(treedef) == "dict(*, tuple(*, *))"
    assert all(type(leaf) is not Buffer for leaf in leaves[:2])
    assert cr.tree_flatten(cr.tree_map(lambda v: v, {"y": 1.0}))[1] == cr.tree_flatten({"y": 2})[1]


def _same(got, expected):
    got_leaves, got_tree = cr.tree_flatten(got)
    want_leaves, want_tree = cr.tree_flatten(expected)
    assert got_tree == want_tree
    if isinstance(expected, dict):
        assert list(got) == list(expected)  # the order the function built them in
    for g, w in zip(got_leaves, want_leaves):
        assert type(g) is type(w) and type(g) is not Buffer
        onp.testing.assert_allclose(g, w, rtol=1e-15, atol=0)


TRANSFORMS = {
    "vjp": lambda f: cr.vjp(f, X)[0],
    "grad_and_aux": lambda f: cr.grad_and_aux(lambda x: (np.sum(x), f(x)))(X)[1],
    "jvp": lambda f: cr.jvp(f, (X,), (onp.ones(3),)),
    "jit": lambda f: [cr.jit(f)(X), cr.jit(f)(X + 1.0)],
    "vmap": lambda f: cr.vmap(f)(XS),
    "vmap_out_axes": lambda f: cr.vmap(f, out_axes=1)(XS),
    "jacobian": lambda f: cr.jacobian(f)(X),
    "jacfwd": lambda f: cr.jacfwd(f)(X),
    "sparse": lambda f: cr.tree_map(lambda m: m.toarray(), cr.jacobian(f, sparse=True)(X)),
    "jet": lambda f: cr.jet(f, (X,), ((onp.ones(3), onp.zeros(3)),)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
@pytest.mark.parametrize("pair", [(filled, built), (filled_dict, built_dict)],
                         ids=["array", "dict"])
def test_a_function_returning_buffers_is_transformed_as_one_returning_arrays(name, pair):
    with_buffers, with_arrays = pair
    _same(TRANSFORMS[name](with_buffers), TRANSFORMS[name](with_arrays))
