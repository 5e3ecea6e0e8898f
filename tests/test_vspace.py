"""Vector spaces and pytrees: the algebra transforms use to seed and collect derivatives."""

import dataclasses
from collections import namedtuple

import numpy as onp
import pytest

from chainrule import tree_flatten, tree_map, tree_unflatten
from chainrule._core.pytree import TreeDef, tree_leaves
from chainrule._core.vspace import ContainerVSpace, add_values, vspace
from chainrule.numpy.numpy_vspaces import ArrayVSpace, ComplexArrayVSpace

Pair = namedtuple("Pair", "a b")


@dataclasses.dataclass
class Layer:
    w: onp.ndarray
    b: float


def test_array_vspace_algebra():
    x = onp.array([[1.0, 2.0], [3.0, 4.0]], dtype=onp.float32)
    vs = vspace(x)
    assert isinstance(vs, ArrayVSpace) and vs.shape == (2, 2) and vs.size == 4 and vs.ndim == 2
    assert vs.zeros().dtype == onp.float32 and vs.ones().sum() == 4
    basis = list(vs.standard_basis())
    assert len(basis) == 4 and onp.array_equal(sum(basis), onp.ones((2, 2)))
    assert vs.randn(onp.random.default_rng(0)).dtype == onp.float32
    assert vs.inner_prod(x, x) == pytest.approx(30.0)
    onp.testing.assert_array_equal(vs.unflatten(vs.flatten(x)), x)
    assert vs.add(x, x)[1, 1] == 8 and vs.scalar_mul(x, 2.0)[0, 0] == 2
    assert vs.mut_add(x.copy(), x)[0, 1] == 4 and vs.covector(x) is x
    assert vs == vspace(onp.zeros((2, 2), onp.float32)) != vspace(onp.zeros((2, 2)))
    assert len({vs, vspace(onp.ones((2, 2), onp.float32))}) == 1
    assert "shape=(2, 2)" in repr(vs)


def test_scalar_vspace_returns_scalars():
    vs = vspace(2.5)
    assert vs.shape == () and vs.size == 1
    for value in (vs.zeros(), vs.ones(), vs.randn(), vs.unflatten(onp.array([3.0])),
                  next(iter(vs.standard_basis())), vs.cast(onp.array(2.0))):
        assert onp.ndim(value) == 0 and not isinstance(value, onp.ndarray)


def test_cast_matches_dtype_and_drops_imaginary_part():
    vs = vspace(onp.ones(2, dtype=onp.float32))
    g = vs.cast(onp.array([1.0 + 2j, 3.0 - 1j]))
    assert g.dtype == onp.float32 and g.tolist() == [1.0, 3.0]


def test_complex_vspace():
    z = onp.array([1 + 2j, 3 - 1j])
    vs = vspace(z)
    assert isinstance(vs, ComplexArrayVSpace) and vs.iscomplex and vs.size == 4
    basis = list(vs.standard_basis())
    assert len(basis) == 4 and basis[1][0] == 1j
    assert vs.inner_prod(z, z) == pytest.approx(15.0)
    onp.testing.assert_array_equal(vs.covector(z), onp.conj(z))
    onp.testing.assert_array_equal(vs.unflatten(vs.flatten(z)), z)
    assert vs.ones()[0] == 1 and vs.randn().dtype == onp.complex128


def test_container_vspace():
    value = {"layer": Layer(onp.ones(2), 0.5), "pair": Pair(1.0, onp.zeros(3)), "none": None}
    vs = vspace(value)
    assert isinstance(vs, ContainerVSpace) and vs.size == 7 and not vs.iscomplex
    assert vs.shape == ((2,), (), (), (3,))
    zeros = vs.zeros()
    assert isinstance(zeros["layer"], Layer) and zeros["none"] is None
    assert len(list(vs.standard_basis())) == 7
    total = vs.add(value, vs.ones())
    assert total["pair"].a == 2.0 and total["layer"].b == 1.5
    assert vs.mut_add(vs.zeros(), value)["pair"].a == 1.0
    assert vs.scalar_mul(value, 2.0)["layer"].w.tolist() == [2.0, 2.0]
    assert vs.inner_prod(value, value) == pytest.approx(2 + 0.25 + 1)
    assert vs.covector(value)["pair"].a == 1.0
    flat = vs.flatten(value)
    assert flat.shape == (7,)
    back = vs.unflatten(flat)
    assert back["layer"].b == 0.5 and back["pair"].b.shape == (3,)
    assert vs.cast(value)["pair"].a == 1.0
    assert vspace(vs.randn()) == vs and "ContainerVSpace" in repr(vs)
    assert vspace(()).flatten(()).shape == (0,)


def test_add_values_adds_leaf_by_leaf():
    assert add_values((1.0, [2.0]), (3.0, [4.0])) == (4.0, [6.0])
    assert add_values({"a": 1.0}, {"a": 2.0}) == {"a": 3.0}


def test_unknown_types_are_refused_with_a_clear_message():
    with pytest.raises(TypeError, match="vector space for a value of type str"):
        vspace("text")
    with pytest.raises(TypeError, match="integers and booleans have no gradient"):
        vspace(onp.int8(3))


def test_subclass_of_a_registered_type_uses_its_parent_space():
    class MyFloat(float):
        pass

    assert vspace(MyFloat(2.0)).shape == ()


def test_pytree_roundtrip_and_treedef():
    tree = {"b": [1, (2, 3)], "a": Pair(4, None), "c": Layer(5, 6)}
    leaves, treedef = tree_flatten(tree)
    assert leaves == [4, 1, 2, 3, 5, 6]  # dict children in sorted key order: a, b, c
    assert treedef.num_leaves == 6 and isinstance(treedef, TreeDef)
    assert tree_unflatten(treedef, leaves) == tree
    assert "Pair" in repr(treedef) and repr(tree_flatten(1)[1]) == "*"
    assert tree_map(lambda x, y: x + y, (1, 2), (10, 20)) == (11, 22)
    assert tree_leaves([1, [2]]) == [1, 2]


def test_spaces_of_arrays_and_scalars_of_every_kind_are_their_own():
    # (arrays and NumPy scalars are read by their own attributes, not np.shape and
    # np.result_type: the spaces must be what those give)
    for value, space_type, shape, dtype, seed in [
        (onp.zeros((2, 3)), ArrayVSpace, (2, 3), onp.float64, onp.ones((2, 3))),
        (onp.zeros(3, ">f8"), ArrayVSpace, (3,), onp.dtype("<f8"), onp.ones(3)),
        (onp.zeros((0, 2), onp.float32), ArrayVSpace, (0, 2), onp.float32,
         onp.ones((0, 2), onp.float32)),
        (onp.zeros(2, onp.complex64), ComplexArrayVSpace, (2,), onp.complex64,
         onp.ones(2, onp.complex64)),
        (onp.float32(2.0), ArrayVSpace, (), onp.float32, onp.float32(1.0)),
        (onp.float64(-0.0), ArrayVSpace, (), onp.float64, onp.float64(1.0)),
        (onp.longdouble(2), ArrayVSpace, (), onp.longdouble, onp.longdouble(1)),
        (onp.complex128(1j), ComplexArrayVSpace, (), onp.complex128, onp.complex128(1)),
        (2.5, ArrayVSpace, (), onp.float64, onp.float64(1.0)),
        (1j, ComplexArrayVSpace, (), onp.complex128, onp.complex128(1)),
    ]:
        vs = vspace(value)
        assert type(vs) is space_type and vs.shape == shape and vs.dtype == dtype, value
        assert vs.size == (2 if vs.iscomplex else 1) * int(onp.prod(shape))
        ones = vs.ones()
        assert type(ones) is type(seed) and ones.dtype == seed.dtype, value
        onp.testing.assert_array_equal(ones, seed)
        assert vs.ones() is not ones or not isinstance(ones, onp.ndarray)  # fresh each time
    with pytest.raises(TypeError, match="integer dtype"):
        vspace(onp.int64(3))
    with pytest.raises(TypeError, match="integer dtype"):
        vspace(onp.arange(3))


def test_a_type_flattened_as_a_leaf_then_registered_is_a_container():
    from chainrule._core.pytree import register_pytree_node

    class Later:
        def __init__(self, a, b):
            self.a, self.b = a, b

    item = Later(1.0, 2.0)
    assert tree_leaves([item, item]) == [item, item]  # a leaf, twice (the second remembered)
    register_pytree_node(Later, lambda p: ((p.a, p.b), None), lambda aux, ch: Later(*ch))
    assert tree_leaves([item, item]) == [1.0, 2.0, 1.0, 2.0]
    rebuilt = tree_map(lambda v: v * 10, item)
    assert type(rebuilt) is Later and (rebuilt.a, rebuilt.b) == (10.0, 20.0)
