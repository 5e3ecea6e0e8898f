"""The wrapped NumPy namespace accepts what autograd's does (issue 17): values checked
against NumPy and finite differences, reverse and forward mode."""

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad, jacfwd

EPS = 1e-6


def _fd(f, x, eps=EPS):
    x = onp.asarray(x, float)
    out = onp.zeros(x.shape)
    for i in onp.ndindex(x.shape):
        e = onp.zeros(x.shape)
        e[i] = eps
        out[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


@pytest.mark.parametrize("name", ["mean", "std", "var", "sum"])
def test_reduction_of_list_of_traced_values(name):
    def f(v):
        return getattr(np, name)([v[0], 2.0 * v[1], onp.sin(v[2])])
    x = onp.array([0.3, -1.2, 0.7])
    plain = getattr(onp, name)
    assert f(x) == pytest.approx(plain([x[0], 2 * x[1], onp.sin(x[2])]))
    expected = _fd(f, x)
    assert onp.allclose(grad(f)(x), expected, atol=1e-6)
    assert onp.allclose(jacfwd(f)(x), expected, atol=1e-6)


def test_norm_of_tuple_of_traced_values():
    def f(v):
        return np.linalg.norm((v[0], v[1] * v[2]))
    x = onp.array([3.0, 2.0, 2.0])
    # hand-derived: norm = 5, d/dv = (v0, v1 v2^2, v1^2 v2) / 5
    expected = onp.array([3.0, 8.0, 8.0]) / 5.0
    assert f(x) == pytest.approx(5.0)
    assert onp.allclose(grad(f)(x), expected)
    assert onp.allclose(jacfwd(f)(x), expected)
    assert onp.allclose(_fd(f, x), expected, atol=1e-6)


def test_list_of_traced_arrays_second_argument():
    def f(v):
        return np.dot(v, [v, 2 * v]).sum()  # (2,) @ ... the list holds traced arrays
    x = onp.array([[1.0, 2.0], [0.5, -1.0]])
    def plain(v):
        return onp.dot(v, onp.array([v, 2 * v])).sum()
    assert f(x) == pytest.approx(plain(x))
    assert onp.allclose(grad(f)(x), _fd(plain, x), atol=1e-6)



def test_integer_casts_of_traced_values_are_plain_indices():
    # numpy.int64(x) and x.astype(int) give plain integer arrays (no derivative), as autograd
    def f(w):
        rows = onp.int64(w[:, -1])
        flags = (w[:, 0] + 0.5).astype(int).astype(bool)  # [True, False]
        assert rows.dtype == onp.int64 and flags.dtype == onp.bool_
        return (w[:, :-1][rows] ** 2).sum() + w[flags].sum()
    w = onp.array([[1.0, 2.0, 0.5], [-1.0, 3.0, 1.5]])  # away from the casts' jumps
    # rows = [0, 1] picks both rows once; flags picks row 0: hand-derived gradient
    expected = 2 * w * onp.array([1.0, 1.0, 0.0]) + onp.array([[1.0, 1.0, 1.0], [0, 0, 0]])
    assert onp.allclose(grad(f)(w), expected)
    assert onp.allclose(jacfwd(f)(w), expected)
    assert onp.allclose(_fd(f, w), expected, atol=1e-5)


def test_float_astype_stays_differentiable():
    def f(x):
        return (x.astype(onp.float32) * x).sum()
    x = onp.array([1.5, -2.0])
    assert onp.allclose(grad(f)(x), 2 * x)


SPLITTERS = [
    ("split", lambda m, x: m.split(x, 2, axis=1)),
    ("array_split", lambda m, x: m.array_split(x, 3, axis=1)),
    ("hsplit", lambda m, x: m.hsplit(x, 2)),
    ("vsplit", lambda m, x: m.vsplit(x, [1])),
    ("dsplit", lambda m, x: m.dsplit(x, 2)),
    ("gradient", lambda m, x: m.gradient(x, axis=(0, 2))),
]


@pytest.mark.parametrize("name,split", SPLITTERS, ids=[s[0] for s in SPLITTERS])
def test_forward_mode_of_functions_returning_lists(name, split):
    from chainrule import make_jvp

    x = onp.random.default_rng(0).standard_normal((2, 4, 4))
    v = onp.random.default_rng(1).standard_normal((2, 4, 4))
    _, tangent = make_jvp(lambda x: split(np, x ** 2))(x)(v)
    # these are linear maps of x ** 2: the tangent is the map applied to 2 x v
    expected = split(onp, 2 * x * v)
    assert len(tangent) == len(expected)
    for t, e in zip(tangent, expected):
        assert onp.allclose(t, e)

    def weighted(x):  # a scalar of every piece, for jacfwd and second order
        return sum(np.sum(np.sin(p) * (k + 1)) for k, p in enumerate(split(np, x ** 2)))

    g = grad(weighted)(x)
    assert onp.allclose(jacfwd(weighted)(x), g)
    assert onp.allclose(g, _fd(weighted, x), atol=1e-5)
    # second order: forward over forward and forward over reverse against the Hessian's
    # finite differences along v
    hv_fwd = jacfwd(lambda x: make_jvp(weighted)(x)(v)[1])(x)
    hv_rev = jacfwd(grad(weighted))(x).reshape(x.size, x.size) @ v.ravel()
    hv_fd = (grad(weighted)(x + EPS * v) - grad(weighted)(x - EPS * v)) / (2 * EPS)
    assert onp.allclose(hv_fwd, hv_fd, atol=1e-5)
    assert onp.allclose(hv_rev.reshape(x.shape), hv_fd, atol=1e-5)


def test_nested_jvp_of_split_returns_plain_lists():
    from chainrule import make_jvp

    x = onp.arange(6.0)

    def tangent_of_split(xv):
        return make_jvp(lambda y: np.split(y ** 2, 3))(xv[0])(xv[1])[1]

    # d/d(x, v) of split(2 x v) along (dx, dv) is split(2 dx v + 2 x dv)
    dx, dv = onp.ones(6), onp.linspace(0, 1, 6)
    value, tangent = make_jvp(tangent_of_split)((x, x))((dx, dv))
    assert isinstance(value, list) and isinstance(tangent, list)
    for t, e in zip(tangent, onp.split(2 * dx * x + 2 * x * dv, 3)):
        assert type(t) is onp.ndarray and onp.allclose(t, e)


KEYWORD_CALLS = [
    ("moveaxis", lambda m, x: m.moveaxis(x, source=0, destination=2)),
    ("swapaxes", lambda m, x: m.swapaxes(x, axis1=0, axis2=2)),
    ("transpose", lambda m, x: m.transpose(x, axes=(1, 0, 2))),
    ("reshape", lambda m, x: m.reshape(x, shape=(4, 3))),
    ("roll", lambda m, x: m.roll(x, shift=1, axis=1)),
    ("where", lambda m, x: m.where(condition=x > 0.5, x=x, y=2 * x)),
    ("where_mixed", lambda m, x: m.where(x > 0.5, x, y=2 * x)),
]


@pytest.mark.parametrize("name,call", KEYWORD_CALLS, ids=[c[0] for c in KEYWORD_CALLS])
def test_arguments_by_numpys_keyword_names(name, call):
    x = onp.linspace(-1.0, 2.0, 12).reshape(2, 3, 2)
    if name == "reshape":
        x = x.reshape(12)

    def f(x):
        return (call(np, x) ** 3).sum()

    def plain(x):  # NumPy's where takes its arguments by position only
        return ((onp.where(x > 0.5, x, 2 * x) if name.startswith("where") else call(onp, x))
                ** 3).sum()
    assert f(x) == pytest.approx(plain(x))
    expected = _fd(plain, x)
    assert onp.allclose(grad(f)(x), expected, atol=1e-5)
    assert onp.allclose(jacfwd(f)(x), expected, atol=1e-5)


def _keyword_names(fun):
    import inspect

    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):  # no signature (ufuncs, some builtins)
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return "any"
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def test_wrapped_functions_accept_numpys_parameter_names():
    import numpy.fft
    import numpy.linalg

    import chainrule.numpy.fft
    import chainrule.numpy.linalg

    checked, missing = 0, {}
    for ours_module, numpy_module in [(np, onp), (chainrule.numpy.linalg, numpy.linalg),
                                      (chainrule.numpy.fft, numpy.fft)]:
        for name in dir(ours_module):
            ours, theirs = getattr(ours_module, name), getattr(numpy_module, name, None)
            if name.startswith("_") or theirs is None or ours is theirs \
                    or not callable(ours) or isinstance(theirs, type):
                continue
            needed = _keyword_names(theirs)
            if needed is None or needed == "any":
                continue
            accepted = _keyword_names(ours)
            checked += 1
            if accepted != "any" and not needed <= (accepted or set()):
                missing[f"{ours_module.__name__}.{name}"] = sorted(needed - (accepted or set()))
    assert checked > 150  # the namespace was walked (wrapped functions differ from NumPy's)
    assert not missing, f"parameters NumPy accepts by name that chainrule does not: {missing}"


def test_unique_sorted_keyword():
    x = onp.array([3.0, 1.0, 3.0, 2.0])
    values = np.unique(x, sorted=True)
    assert onp.array_equal(values, onp.unique(x))
    g = grad(lambda x: (np.unique(x, sorted=True) * onp.array([1.0, 2.0, 3.0])).sum())(x)
    assert onp.allclose(g, [3.0, 1.0, 0.0, 2.0])  # the first 3.0 gets the gradient


@pytest.mark.parametrize("condition,x,y,expected", [
    (True, 1, 2, 1), (False, 1, 2.0, 2.0), (True, [1, 2], [3, 4], [1, 2]),
])
def test_where_with_python_condition_keeps_python_values(condition, x, y, expected):
    out = np.where(condition, x, y)
    assert type(out) is type(expected) and out == expected


def test_where_with_python_condition_and_arrays_promotes_as_numpy():
    x, y = onp.array([1.0]), onp.array([2.0], onp.float32)
    assert np.where(False, x, y).dtype == onp.where(False, x, y).dtype == onp.float64
    assert onp.array_equal(np.where(onp.array([True, False])), ([0],))
    with pytest.raises(ValueError, match="both or neither"):
        np.where(x > 0, x)
    g = grad(lambda x: np.where(True, x, 0.0) * 3.0)(2.0)
    assert g == 3.0


@pytest.mark.parametrize("x,kw", [
    (3.5, {}),                                    # std of one value: constant 0
    (onp.array([[1.0, 2.0, 3.0]]), {"axis": 0}),  # slices of one element
    (onp.array([2.0, 2.0, 2.0]), {}),             # equal values: std's kink at 0
    (1.0 + 0.5j, {}),
])
def test_std_derivative_where_std_is_zero(x, kw):
    from chainrule import make_jvp

    def f(x):
        return np.sum(np.std(x, **kw))
    v = onp.ones_like(x) * (0.3 if onp.ndim(x) == 0 else onp.arange(1.0, 1.0 + onp.size(x)))
    fd = (onp.sum(onp.std(x + EPS * v, **kw)) - onp.sum(onp.std(x - EPS * v, **kw))) / (2 * EPS)
    _, tangent = make_jvp(f)(x)(v)
    assert fd == pytest.approx(0.0, abs=1e-6) and tangent == 0.0  # finite differences: 0
    if not onp.iscomplexobj(x):
        assert onp.all(grad(f)(x) == 0.0)


def test_std_derivative_elsewhere_unchanged():
    x = onp.array([[1.0, 2.5, -1.0], [0.5, 0.5, 4.0]])
    for kw in ({}, {"axis": 0}, {"axis": 1, "ddof": 1}):
        def f(x, kw=kw):
            return np.sum(np.std(x, **kw) * onp.arange(1.0, 1.0 + onp.size(onp.std(x, **kw))))
        expected = _fd(f, x)
        assert onp.allclose(grad(f)(x), expected, atol=1e-6)
        assert onp.allclose(jacfwd(f)(x), expected, atol=1e-6)


def test_transform_names_and_docs_laid_out_as_autograds():
    from chainrule import grad as grad_transform

    def foo(x):
        """foo's own doc."""
    assert grad_transform.__name__ == "grad"
    assert grad_transform.__doc__.startswith("\n    Returns a function which")
    derivative = grad_transform(foo, 1)
    assert derivative.__name__ == "grad_of_foo_wrt_argnum_1"
    assert derivative.__doc__.startswith("    grad of function foo with respect to argument")
    assert derivative.__doc__.endswith("foo's own doc.")
    # wrapped NumPy functions keep NumPy's name and documentation
    assert np.mean.__name__ == "mean" and np.mean.__doc__ == onp.mean.__doc__
    assert np.where.__name__ == "where" and "numpy.where" in np.where.__doc__


def test_astype_function_form():
    x = onp.array([0.5, -1.25, 2.0])

    def f(x):
        return np.sum(np.astype(x, onp.float32) ** 2) + np.sum(np.astype(x, onp.complex128).real)
    expected = 2 * x + 1  # hand-derived
    assert onp.allclose(grad(f)(x), expected, rtol=1e-6)
    assert onp.allclose(jacfwd(f)(x), expected, rtol=1e-6)
    # a wide step: f rounds to float32 (and is quadratic, so central differences are exact)
    assert onp.allclose(_fd(f, x, eps=1e-2), expected, atol=1e-3)

    def g(x):
        index = np.astype(x + 1.5, int)  # [2, 0, 3]: a plain integer array, no derivative
        assert type(index) is onp.ndarray and index.dtype.kind == "i"
        return np.sum(x[index % 3])
    assert onp.array_equal(grad(g)(x), [2.0, 0.0, 1.0])  # x[[2, 0, 0]] picks x[0] twice
    assert onp.array_equal(np.astype(x, onp.float32), onp.astype(x, onp.float32))
    assert np.astype(x, onp.float32, copy=False).dtype == onp.float32


@pytest.mark.parametrize("write", [
    lambda a, x: a.__setitem__(0, x[0]),       # a traced scalar: NumPy calls float()
    lambda a, x: a.__setitem__(slice(0, 2), x),  # a traced array: NumPy calls __array__
])
def test_writing_traced_values_into_numpy_arrays_says_what_to_do(write):
    def f(x):
        write(onp.zeros(3), x)
        return x.sum()
    with pytest.raises((TypeError, ValueError)) as info:
        grad(f)(onp.ones(2))
    # NumPy reports a scalar write as its own ValueError, caused by chainrule's TypeError
    error = info.value if isinstance(info.value, TypeError) else info.value.__cause__
    assert isinstance(error, TypeError)
    message = str(error)
    assert "a[i] = x" in message and "index_update(a, i, x)" in message
    assert "chainrule.numpy.array([...]), stack" in message


def test_the_advised_rewrite_is_differentiable():
    def f(x):
        a = np.index_update(onp.zeros(3), 0, x[0])
        a[1:] = x * 2.0
        return np.sum(a ** 2)
    x = onp.array([1.5, -0.5])
    expected = onp.array([2 * 1.5 + 8 * 1.5, 8 * -0.5])  # hand-derived
    assert onp.allclose(grad(f)(x), expected)
    assert onp.allclose(_fd(f, x), expected, atol=1e-6)
