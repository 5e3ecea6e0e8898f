"""The GPU path without a GPU: gradients of the strict CuPy stand-in (tests/strict_array.py)
stay in its library and equal NumPy's."""

from __future__ import annotations

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
import duck_transforms
from strict_array import Strict, _unwrap

RNG = onp.random.default_rng(2)
XN = RNG.standard_normal((5, 3))

FUNCTIONS = {
    "elementwise": lambda x: np.sum(np.tanh(x) * np.exp(x) / (1.0 + x ** 2)),
    "reductions": lambda x: np.sum(np.max(x, axis=0)) + np.mean(x) + np.sum(np.prod(x, 1)),
    "indexing": lambda x: np.sum(x[1:4, ::-1]) + np.sum(x[[0, 2, 2]] ** 2),
    "matmul": lambda x: np.sum(np.dot(x.T, x)),
    "sinc_cumprod": lambda x: np.sum(np.sinc(x)) + np.sum(np.cumprod(x, axis=0)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_reverse_mode_stays_in_the_array_library(name):
    f = FUNCTIONS[name]
    g = cr.grad(f)(Strict(XN))
    assert isinstance(g, Strict)
    onp.testing.assert_allclose(g.data, cr.grad(f)(XN), rtol=1e-10)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_forward_mode_stays_in_the_array_library(name):
    f = FUNCTIONS[name]
    t = RNG.standard_normal(XN.shape)
    _, tangent = cr.jvp(f, (Strict(XN),), (Strict(t),))
    _, expected = cr.jvp(f, (XN,), (t,))
    assert isinstance(tangent, Strict)
    onp.testing.assert_allclose(tangent.data, expected, rtol=1e-10)


def test_hvp_and_jacobian():
    v = RNG.standard_normal(XN.shape)
    hv = cr.make_hvp(lambda x: np.sum(x ** 3) / 3.0)(Strict(XN))[0](Strict(v))
    assert isinstance(hv, Strict)
    onp.testing.assert_allclose(hv.data, 2 * XN * v)
    jac = cr.jacobian(lambda x: np.sin(x) * 2.0)(Strict(XN[0]))
    onp.testing.assert_allclose(onp.asarray(_unwrap(jac)), onp.diag(2 * onp.cos(XN[0])))


TRANSFORMS = duck_transforms.cases(Strict, branches=False)
ON_NUMPY = duck_transforms.cases(lambda a: a)


@pytest.mark.filterwarnings("error::chainrule._transforms.vmap.VmapFallbackWarning")
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_stay_in_the_array_library(name):
    """Every transform (jit, vmap, Taylor mode, hessians...) on the stand-in: the answer is
    its array and NumPy's answer, at two points; vmap runs the batch at once (a NumPy
    constant met on the batch would send it to the loop, with a warning: an error here)."""
    fun, point = TRANSFORMS[name]
    for x in (point, duck_transforms.second_point(point)):
        got = fun(Strict(x))
        assert isinstance(got, Strict), type(got)
        onp.testing.assert_allclose(got.data, ON_NUMPY[name][0](x), rtol=1e-10, atol=1e-12)


def test_one_jitted_function_on_numpy_then_the_stand_in():
    """The array type is part of jit's signature: a program traced on NumPy arrays is not
    run on the stand-in's (whose library refuses NumPy operands)."""
    f = cr.jit(cr.grad(duck_transforms.coupled))
    x = duck_transforms.X
    want = f(x)
    got = f(Strict(x))
    assert isinstance(got, Strict)
    onp.testing.assert_allclose(got.data, want, rtol=1e-12)
    assert f.cache_info().misses == 2


def test_sparse_derivatives_refuse_the_stand_in_clearly():
    """scipy.sparse holds NumPy values: a sparse derivative of a device array says so and
    names the dense derivative; the pattern itself is found on the device array."""
    x = Strict(duck_transforms.X)
    for transform in (cr.jacobian, cr.hessian):
        f = duck_transforms.chained if transform is cr.jacobian else duck_transforms.coupled
        with pytest.raises(TypeError, match="without sparse=True"):
            transform(f, sparse=True)(x)
    pattern = cr.jacobian_sparsity(duck_transforms.chained, x)
    dense = cr.jacobian(duck_transforms.chained)(duck_transforms.X)
    onp.testing.assert_array_equal(pattern.toarray(), dense != 0)


def test_a_number_s_reduction_cotangent_is_the_library_s():
    """A full reduction's cotangent that is a number, spread back over a stand-in x, is the
    stand-in's array (NumPy's view of the number would be refused by CuPy in the next
    product); over a NumPy x it is a filled NumPy array, as before."""
    from chainrule.numpy.rules._helpers import expand_to

    spread = expand_to(2.0, Strict(XN), None, False)
    assert isinstance(spread, Strict)
    onp.testing.assert_array_equal(spread.data, onp.full(XN.shape, 2.0))
    filled = expand_to(2.0, XN, None, False)
    assert type(filled) is onp.ndarray and filled.flags.writeable
    onp.testing.assert_array_equal(filled, onp.full(XN.shape, 2.0))
