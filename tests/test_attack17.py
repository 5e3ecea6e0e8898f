"""Attacks on the lead's fixes of the sixteenth session (brief attack17): jit's staging of
ufunc answers without a derivative (np.floor, np.sign ...), vmap under jit's trace run
batched first, x[i] of an example as a copy keeping layouts, Jacobians' own blocks, +v.
Each against the reference semantics: jit ≡ eager (values to the bit, warnings,
exceptions), vmap ≡ the per-example loop, Jacobians writeable arrays of their own.
A plain test that fails is a regression of those commits (it passed at c17b2c6); older
bugs are strict xfails naming the mechanism; the rest pin what held under attack."""

import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from observed import bits, observed


def _same_as_eager(fn, argsets, jitted=None):
    """jit(fn) called on each argument set tells what fn tells; returns the jitted."""
    jitted = jitted or cr.jit(fn)
    for args in argsets:
        assert observed(jitted, *args) == observed(fn, *args), args
    return jitted


_FLOATS = [onp.array([0.5, 1.5, -2.5]), onp.array([3.7, -0.2, 9.9]),
           onp.array([-0.0, onp.nan, onp.inf]), onp.array([10.1, 2.2, 3.3]),
           onp.array([-0.0, 0.0, -1e-300])]


# --------------------------------------- jit: a ufunc's answer without a derivative, staged
def _floor_written_after_use(x):
    f = np.floor(x)
    y = f * x  # (reads f before the write)
    f[1] = 7.0
    return np.sum(y * f)


def _floor_view_written(x):
    f = np.floor(x)
    v = f[1:]
    v *= x[:2]
    return np.sum(f * x)


def _written_by_out(x):
    f = np.floor(x)
    y = f * x
    np.add(f, 1.0, out=f)
    return np.sum(y * f)


def _written_by_copyto(x):
    f = np.floor(x)
    y = f * x
    np.copyto(f, x)
    return np.sum(y * f)


def _written_by_fill(x):
    f = np.floor(x)
    y = f * x
    f.fill(2.0)
    return np.sum(y * f)


def _written_in_place(x):
    f = np.floor(x)
    y = f * x
    f += x
    return np.sum(y * f)


def _sign_written(x):
    f = np.sign(x)
    y = f * x
    f[:] = 3.0
    return np.sum(y + f)


def _complex_sign_written(x):
    s = np.sign(x * (1 + 1j))
    y = s * x
    s[0] = 2.0
    return np.real(np.sum(y * s))


def _float32_floor_written(x):
    x = x.astype(onp.float32)
    f = np.floor(x)
    y = f * x
    f[1] = 7.0
    return np.sum(y * f)


def _heaviside_scaled(x):
    h = np.heaviside(x, 0.5)
    y = h * x
    h *= 3.0
    return np.sum(y * h)


def _floor_written_through_a_view(x):
    f = np.floor(x)
    y = f[::-1] * x
    f[::2] = -3.0
    return np.sum(y * f)


_WRITTEN_LATER = [_floor_written_after_use, _floor_view_written, _written_by_out,
                  _written_by_copyto, _written_by_fill, _written_in_place, _sign_written,
                  _complex_sign_written, _float32_floor_written, _heaviside_scaled,
                  _floor_written_through_a_view]


@pytest.mark.parametrize("fn", _WRITTEN_LATER)
def test_jit_grad_of_a_floor_written_later_is_eager_grad(fn):
    # Regression of 21bd771 (all passed at c17b2c6): the answer without a derivative, now
    # a staged buffer, is read by jit(grad) after a later write into it (d/dx[1] = 49 where
    # eager says 7, for every form of write: setitem, out=, copyto, fill, +=, *=, through a
    # view), or a view's write raises LeakedTracerError under jit(grad)
    _same_as_eager(cr.grad(fn), [(x,) for x in _FLOATS])
    _same_as_eager(cr.hessian(fn), [(x,) for x in _FLOATS[:2]])  # (copyto, +=: wrong too)
    xs = onp.stack([_FLOATS[0], _FLOATS[1]])
    loop = onp.stack([cr.grad(fn)(x) for x in xs])
    assert bits(cr.jit(cr.vmap(cr.grad(fn)))(xs)) == bits(loop)


@pytest.mark.parametrize("fn", _WRITTEN_LATER)
def test_jit_of_a_floor_written_later_is_eager(fn):
    # Regression of 21bd771 for np.add(f, 1.0, out=f): jit raises TypeError ("add with
    # out= a traced array") where eager, and jit at c17b2c6, answer
    _same_as_eager(fn, [(x,) for x in _FLOATS])


def _cast_floor(x):
    return x * np.floor(x).astype(onp.int32).astype(onp.float32)


def test_jit_of_a_floors_cast_warns_as_eager():
    # Regression of 21bd771 (passed at c17b2c6, where the floor was a constant of the
    # program): the cast of a nan floor warns twice (three times on a new variant) under
    # jit where eager warns once; the older form of it is the xfail below
    _same_as_eager(_cast_floor, [(x,) for x in _FLOATS])


@pytest.mark.xfail(strict=True, reason="jit: astype(int) of a traced array warns 'invalid "
                   "value encountered in cast' twice per call (the trace's guard and the "
                   "program both cast), eager once")
def test_jit_of_a_cast_warns_as_eager():
    _same_as_eager(lambda x: x * x.astype(onp.int32), [(onp.array([0.5, 1.5]),),
                                                     (onp.array([onp.nan, 1.5]),)])


def _branch_on_floor(x):
    if np.floor(x[0]) > 0:
        return x * 2.0
    return x * 3.0


def _floor_as_index(x):
    return x[np.floor(x).astype(int) % 3]


def _floor_in_mask(x):
    return x[np.floor(x) > 0]


def _floor_as_shape(x):
    return np.zeros(int(np.sum(np.floor(x))) % 5 + 1) + x[0]


@pytest.mark.parametrize("fn", [_branch_on_floor, _floor_as_index, _floor_in_mask,
                                _floor_as_shape])
def test_jit_of_a_floor_deciding_the_program_is_eager(fn):
    argsets = [(x,) for x in _FLOATS if onp.isfinite(x).all()]
    _same_as_eager(fn, argsets)
    _same_as_eager(cr.grad(lambda x: np.sum(fn(x) ** 2)), argsets)


@pytest.mark.parametrize("fn", [
    lambda x: x * np.digitize(x, bins=np.sort(np.floor(x) + onp.array([0.0, 0.1, 0.2]))),
    lambda x: x * np.isin(x, [np.floor(x)[0], 3.7]),
], ids=["digitize bins=", "isin of a list"])
def test_jit_of_a_floor_given_by_keyword_or_in_a_list_is_eager(fn):
    # Regression of 21bd771 (passed at c17b2c6, where the floor was a constant): a staged
    # floor reaching a function without a derivative by keyword or inside a list raises
    # StagingError ("traced values inside a list, tuple or keyword argument"): a clear
    # refusal, but of programs jit compiled before
    _same_as_eager(fn, [(x,) for x in _FLOATS[:2]])


@pytest.mark.parametrize("fn", [
    lambda x: np.maximum.reduce(np.floor(x)) * x,
    lambda x: np.add.accumulate(np.floor(x)) * x,
], ids=["maximum.reduce", "add.accumulate"])
def test_jit_of_a_ufunc_method_of_a_floor_compiles(fn):
    # Regression of 21bd771 (passed at c17b2c6): a ufunc's method (reduce, accumulate) of
    # the staged floor makes jit run the signature eagerly, with its JitWarning ("writes
    # traced values into a NumPy array it made"), where it compiled the program before
    _same_as_eager(fn, [(x,) for x in _FLOATS[:2]])
    _same_as_eager(cr.grad(lambda x: np.sum(fn(x))), [(x,) for x in _FLOATS[:2]])


_NO_DERIVATIVE = {
    "floor": lambda x: np.sum(np.floor(x) * x),
    "sign": lambda x: np.sign(x) * x,
    "rint": lambda x: np.rint(x) - x,
    "heaviside": lambda x: np.heaviside(x, 0.5) * x,
    "floor_divide": lambda x: np.floor_divide(x, 0.3) * x,
    "operator //": lambda x: (x // 0.3) * x,
    "operator %": lambda x: (x % 1.0) * x,
}


_GUARDED = pytest.mark.xfail(strict=True, reason=(
    "older (c17b2c6 too): a ufunc's answer without a derivative is guarded by its values "
    "under jit (one program per input whose floor differs); staging it as a value of the "
    "program (21bd771) went wrong where it is written into, and was reverted"))


@pytest.mark.parametrize("name", [pytest.param(name, marks=() if name == "operator %" else
                                               _GUARDED) for name in _NO_DERIVATIVE])
def test_jit_of_a_ufunc_without_derivative_hits_its_cache(name):
    fn = _NO_DERIVATIVE[name]
    jitted = _same_as_eager(fn, [(x,) for x in _FLOATS])
    info = jitted.cache_info()
    assert (info.misses, info.hits) == (1, len(_FLOATS) - 1)
    _same_as_eager(cr.grad(lambda x: np.sum(fn(x))), [(x,) for x in _FLOATS])
    _same_as_eager(cr.grad(lambda x: np.sum(fn(x.astype(onp.float32)))),
                   [(x,) for x in _FLOATS])


@pytest.mark.xfail(strict=True, reason="jit: _on_notrace stages only a ufunc's single "
                   "ndarray answer of ndim > 0; a tuple (np.modf, np.frexp), a 0-d answer "
                   "and an answer written into out= are guarded by value: a retrace for "
                   "every new value")
@pytest.mark.parametrize("name", ["modf", "frexp", "0-d floor", "floor out="])
def test_jit_of_other_answers_without_derivative_hits_its_cache(name):
    fn = {
        "modf": lambda x: np.modf(x)[0] + np.modf(x)[1],
        "frexp": lambda x: np.frexp(x)[0] * np.frexp(x)[1],
        "0-d floor": lambda x: np.floor(np.sum(x)) * x,
        "floor out=": lambda x: np.floor(x, out=np.zeros(3)) + x,
    }[name]
    jitted = _same_as_eager(fn, [(x,) for x in _FLOATS])
    assert jitted.cache_info().misses == 1


@pytest.mark.xfail(strict=True, reason="ArrayBox has no shift operators (<<, >>): "
                   "an integer array traced by jit raises TypeError where NumPy shifts")
def test_jit_of_a_shift_is_eager():
    _same_as_eager(lambda x, k: (k << 1) * x + (k >> 1),
                   [(x, onp.array([1, 2, 7])) for x in _FLOATS])


@pytest.mark.xfail(strict=True, reason="jit's _on_notrace checks keyword arguments for "
                   "traced values before NumPy's call: np.floor(x=x) raises StagingError "
                   "where NumPy raises its TypeError")
def test_jit_of_a_ufunc_given_its_input_by_keyword_raises_as_eager():
    _same_as_eager(lambda x: np.floor(x=x) * x, [(_FLOATS[0],)])


def _dead_floor_divide(x):
    np.floor_divide(x, 0.5)  # (unused: eagerly it still runs, and warns)
    return x * 2.0


@pytest.mark.parametrize("first, then", [
    pytest.param(onp.array([1.0, 2.0]), onp.array([onp.inf, 0.0]), marks=pytest.mark.xfail(
        strict=True, reason="older (at c17b2c6 the guard's second call of floor_divide "
        "warned twice); since 21bd771 the unused answer is left out of the program, which "
        "does not warn for inf where eager does")),
    (onp.array([onp.inf, 0.0]), onp.array([1.0, 2.0])),
])
def test_jit_of_an_unused_floor_divide_warns_as_eager(first, then):
    # Regression of 21bd771 (the jit contract's case 1685 at seed 123, 0 differences at
    # c17b2c6): an unused staged answer without a derivative is left out of the program,
    # and the cached program tells the trace's warnings instead of this call's (eager warns
    # 'invalid value encountered in floor_divide' for inf only); at c17b2c6 it was the
    # finite-then-inf order only that differed (the guard's call warned again: the xfail)
    jitted = cr.jit(_dead_floor_divide)
    for x in (first, then, first):
        assert observed(jitted, x) == observed(_dead_floor_divide, x), x
    jitted = cr.jit(cr.grad(lambda x: np.sum(_dead_floor_divide(x))))
    for x in (first, then):
        assert observed(jitted, x) == observed(cr.grad(
            lambda x: np.sum(_dead_floor_divide(x))), x), x


def test_jit_of_an_unused_floor_divide_raises_as_eager_under_errstate_raise():
    # Regression of 21bd771 (passed at c17b2c6): with np.errstate(invalid='raise'), eager
    # raises FloatingPointError for the unused floor_divide of inf; the cached program, which
    # leaves it out, answers
    jitted = cr.jit(_dead_floor_divide)
    for x in (onp.array([1.0, 2.0]), onp.array([onp.inf, 0.0]), onp.array([onp.inf, 1.0])):
        with onp.errstate(invalid="raise", divide="raise"):
            assert observed(jitted, x) == observed(_dead_floor_divide, x), x


@pytest.mark.xfail(strict=True, reason="jit(hessian): the cached program of x * x * x's "
                   "second derivative warns twice where eager's products warn six times "
                   "for nan/inf entries (the program's products are fewer than eager's)")
def test_jit_of_a_hessian_warns_as_eager():
    h = cr.hessian(lambda x: np.sum(x * x * x))
    _same_as_eager(h, [(onp.array([0.5, -1.5, 2.0]),), (onp.array([-0.0, onp.inf, onp.nan]),)])


# --------------------------------------------------- vmap under jit's trace, batched first
def _ravel_by_branch(x):
    if x[0, 1] > 0:
        return np.ravel(x, "A")[:3] * 1.0
    return np.ravel(x, "K")[:3] * 2.0


@pytest.mark.parametrize("layout", ["F", "transposed"])
def test_jit_of_vmap_of_a_split_batch_keeps_the_examples_layout(layout):
    # Regression of cfc5e56 (passed at c17b2c6, where jit(vmap) ran this small batch as
    # the loop): under jit the batch runs first, splits on x[0, 1] > 0, and each group's
    # traced copy is C-ordered: ravel(order 'A'/'K') of F-ordered examples reads C
    # ([-6, -4, -2] where the loop reads [-6, 0, -4]); without the split it is right
    xs = onp.arange(12.0).reshape(2, 2, 3) - 3.0
    if layout == "F":
        xs = onp.asfortranarray(xs)
    else:  # (each example's strides in F's order, the batch's outermost)
        xs = xs.transpose(0, 2, 1).copy().transpose(0, 2, 1)
    loop = onp.stack([_ravel_by_branch(xs[i]) for i in range(len(xs))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (vmap's split notice)
        assert bits(cr.vmap(_ravel_by_branch)(xs)) == bits(loop)
        for _ in range(2):
            assert bits(cr.jit(cr.vmap(_ravel_by_branch))(xs)) == bits(loop)
        g = cr.grad(lambda x: np.sum(_ravel_by_branch(x) * onp.arange(3.0)))
        want = onp.stack([g(xs[i]) for i in range(len(xs))])
        assert bits(cr.jit(cr.vmap(g))(xs)) == bits(want)


def _shifted(k):
    return k << 1


def _branch_on_first(y):
    if np.floor(y[0]) > 0:
        return np.sum(y ** 2)
    return np.sum(y ** 3)


@pytest.mark.parametrize("fn, xs", [
    (_shifted, onp.array([1, 2, 7])),
    (cr.grad(_branch_on_first), onp.array([[1.5, 2.0], [-0.5, 3.0]])),
])
@pytest.mark.xfail(strict=True, reason="vmap under jit runs batched first (cfc5e56: its "
                   "timed examples were staged as calls of their own); its notices and "
                   "NumPy's warnings are the batched run's, as eager vmap's under "
                   "batched_runs_first, where eager vmap chose the loop for this small batch")
def test_jit_of_vmap_warns_as_eager_vmap(fn, xs):
    # Regression of cfc5e56 (passed at c17b2c6): eager vmap runs this small batch as the
    # loop, silently; jit(vmap) runs it batched first and tells VmapFallbackWarning (the
    # batch raised TypeError, or split); the warnings are part of jit's contract
    _same_as_eager(cr.vmap(fn), [(xs,), (xs,)])


@pytest.mark.xfail(strict=True, reason="vmap's batched run (under jit, or "
                   "batched_runs_first) gives 0-d examples as writeable 0-d arrays, where the "
                   "loop gives NumPy's scalars xs[i], into which a write raises TypeError")
def test_jit_of_vmap_of_a_write_into_a_0d_example_raises_as_the_loop():
    def written(x):
        s = x[()]
        x[...] = 4.0
        return s * 1.0

    xs = onp.array([1.5, -2.0, 3.0])
    with pytest.raises(TypeError):
        written(xs[0])
    with pytest.raises(TypeError):
        cr.jit(cr.vmap(written))(xs)


def _ravel_then_write(x):
    r = np.ravel(x)  # (NumPy: a view of a contiguous example, a copy of a strided one)
    x[...] = 9.0
    return r * 1.0


@pytest.mark.xfail(strict=True, reason="older for vmap's batched run (at c17b2c6 eager "
                   "under batched_runs_first, and jit(vmap) for in_axes=0): an example's ravel "
                   "is a view of the batch's copy where NumPy's of a strided example is a "
                   "copy; jit(vmap) runs batched since cfc5e56")
@pytest.mark.parametrize("in_axes", [0, 1])
def test_jit_of_vmap_of_a_ravel_then_a_write_is_the_loop(in_axes):
    # Regression of cfc5e56 under jit (passed at c17b2c6, where jit(vmap) ran this batch
    # as the loop): the batched run's ravel of an example is a view of the batch's compact
    # copy where NumPy's ravel of the caller's strided (or reversed) example is a copy, so
    # the later write shows in the answer (older for eager vmap under batched_runs_first)
    def batch():  # (the caller's layout, made afresh for each use: the loop writes)
        xs = (onp.arange(12.0) - 5.0).reshape(3, 4)[:, ::-1]
        return onp.repeat(xs, 2, axis=1)[:, ::2] if in_axes == 0 else xs

    xs = batch()
    loop = onp.stack([_ravel_then_write(xs[(slice(None),) * in_axes + (i,)])
                      for i in range(xs.shape[in_axes])])
    for _ in range(2):
        assert bits(cr.jit(cr.vmap(_ravel_then_write, in_axes=in_axes))(batch())) == (
            bits(loop))


# ------------------------------------------------------------- Jacobians' own blocks, +v
_JACOBIAN_CASES = {
    "sum": (lambda x: np.sum(x) * np.ones(2), onp.ones((2, 3))),
    "independent": (lambda x: np.ones(2), onp.zeros((2, 3))),
    "broadcast": (lambda x: np.broadcast_to(np.sum(x), (2,)), onp.ones((2, 3))),
    "row": (lambda x: x[0] * np.ones(2), onp.array([[1.0, 0, 0], [1.0, 0, 0]])),
}


@pytest.mark.filterwarnings("ignore:Output seems independent")
@pytest.mark.parametrize("transform", ["jacobian", "jacrev", "jacfwd"])
@pytest.mark.parametrize("name", list(_JACOBIAN_CASES))
@pytest.mark.parametrize("jitted", [False, True])
def test_jacobians_are_writeable_arrays_of_their_own(transform, name, jitted):
    fn, want = _JACOBIAN_CASES[name]
    jac = getattr(cr, transform)(fn)
    jac = cr.jit(jac) if jitted else jac
    x = onp.array([0.5, -1.2, 2.0])
    first, second = jac(x), jac(x)
    assert bits(first) == bits(want)
    assert first.flags.writeable and not onp.may_share_memory(first, second)
    assert not onp.may_share_memory(first, x) and 0 not in first.strides
    first[0, 0] = 99.0
    assert bits(jac(x)) == bits(want)


def test_pytree_and_hessian_blocks_are_writeable_arrays_of_their_own():
    x = onp.array([0.5, -1.2, 2.0])
    tree = cr.jacobian(lambda d: {"s": np.sum(d["u"]) * np.ones(2), "c": np.ones(1)})(
        {"u": x})
    hess = cr.hessian(lambda x: np.sum(x) ** 2)(x)
    blocks = [tree["s"]["u"], tree["c"]["u"], hess]
    for block in blocks:
        assert block.flags.writeable and 0 not in block.strides
        assert not any(onp.may_share_memory(block, b) for b in blocks if b is not block)
    assert bits(hess) == bits(onp.full((3, 3), 2.0))
    assert bits(tree["c"]["u"]) == bits(onp.zeros((1, 3)))


def _plus_of_a_buffer(x):
    v = np.zeros(x.shape, x.dtype)
    v[...] = x
    y = +v[::-1]
    v[0] = 7.0  # (NumPy's +v is an array of its own: the write leaves y)
    return np.sum(y * x * y)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
def test_plus_under_every_transform_is_an_array_of_its_own(dtype):
    xs = onp.array([[0.5, -1.5, 2.0], [-0.0, 3.0, 1.0]], dtype)
    loop = onp.stack([cr.grad(_plus_of_a_buffer)(x) for x in xs])
    by_hand = xs[:, ::-1] ** 2 + 2 * xs * xs[:, ::-1]  # (y = x reversed, before the write)
    assert onp.allclose(loop, by_hand, rtol=1e-6)
    for x in xs:
        _same_as_eager(_plus_of_a_buffer, [(x,), (x,)])
        _same_as_eager(cr.grad(_plus_of_a_buffer), [(x,)])
        _same_as_eager(cr.hessian(_plus_of_a_buffer), [(x,)])
        tangent = onp.ones_like(x)
        out, jvp = cr.jvp(_plus_of_a_buffer, (x,), (tangent,))
        assert onp.allclose(jvp, onp.dot(cr.grad(_plus_of_a_buffer)(x), tangent), rtol=1e-6)
    assert bits(cr.vmap(cr.grad(_plus_of_a_buffer))(xs)) == bits(loop)
    assert bits(cr.jit(cr.vmap(cr.grad(_plus_of_a_buffer)))(xs)) == bits(loop)


def _int_floor_divide_written(x, k):
    q = np.floor_divide(k, 2)
    y = q * x
    q[0] = 9
    return np.sum(y * q)


def _int_sign_written(x, k):
    q = np.sign(k)
    y = q * x
    q[1] = 4
    return np.sum(y * q)


@pytest.mark.parametrize("fn", [_int_floor_divide_written, _int_sign_written])
def test_jit_grad_of_an_integer_answer_written_later_is_eager_grad(fn):
    # Regression of 21bd771 (passed at c17b2c6): an integer ufunc answer of an integer
    # argument, staged as a mask now, is read by jit(grad) after the later write
    k = onp.array([1, -2, 3])
    argsets = [(x, k) for x in _FLOATS[:2]]
    _same_as_eager(fn, argsets)
    _same_as_eager(cr.grad(fn), argsets)


@pytest.mark.xfail(strict=True, reason="jit(grad) of an integer argument written after its "
                   "use: the first call (the trace, after which the signature runs eagerly) "
                   "answers the written value's product ([25, 4, 9] where eager says [5, 4, 9])")
def test_jit_grad_of_an_integer_argument_written_later_is_eager_grad():
    def written(x, k):
        y = k * x
        k[0] = 5
        return np.sum(y * k)

    g, x = cr.grad(written), onp.array([0.5, 1.5, -2.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (jit's notice: the function writes its argument)
        jitted = cr.jit(g)
        for _ in range(2):
            assert bits(jitted(x, onp.array([1, 2, 3]))) == bits(g(x, onp.array([1, 2, 3])))


@pytest.mark.xfail(strict=True, reason="jit: a staged mask written (m[:] = True) and then "
                   "summed raises TypeError 'cannot trace a value of type int64' where eager "
                   "answers")
def test_jit_of_a_mask_written_then_summed_is_eager():
    def masked(x):
        m = np.isnan(x)
        y = np.where(m, 0.0, x)
        m[:] = True
        return np.sum(y * x) + np.sum(m)

    _same_as_eager(masked, [(x,) for x in _FLOATS[:2]])


@pytest.mark.xfail(strict=True, reason="older for vmap's batched run (eager under "
                   "batched_runs_first too): the cotangent of -0.0's entry is -0.0 where the "
                   "loop's, added to a zero, is 0.0; jit(vmap) runs batched since cfc5e56")
@pytest.mark.parametrize("out_axes", [0, 1])
def test_jit_of_grad_of_vmap_keeps_eagers_signed_zeros(out_axes):
    # Regression of cfc5e56 (passed at c17b2c6, where jit(vmap) ran this batch of 3 as the
    # loop): the mechanism of test_attack16's buffer xfail reaches the plainest code, no
    # buffer: d/dx of sum(vmap(2 r)(x) ** 2) at an entry -0.0 is -0.0 under jit (the
    # batched run's cotangent) where eager grad, and its loop of examples, answer 0.0
    x = onp.array([[-1.5, 1.5], [2.5, 3.5], [-0.0, 2.0]])

    def loss(y):
        return np.sum(cr.vmap(lambda r: r * 2.0, out_axes=out_axes)(y) ** 2)

    want = cr.grad(loss)(x)
    loop = cr.grad(lambda y: sum(np.sum((y[i] * 2.0) ** 2) for i in range(len(y))))(x)
    assert bits(want) == bits(loop)
    for _ in range(2):
        assert bits(cr.jit(cr.grad(loss))(x)) == bits(want)


@pytest.mark.xfail(strict=True, reason="jit: a buffer made inside the function in order 'F' "
                   "(np.zeros(shape, order='F')) is staged C-ordered: ravel(order 'K'/'A') "
                   "of it reads C where eager reads F (21bd771's read_order of a buffer's "
                   "array covers vmap's batch, not this buffer)")
@pytest.mark.parametrize("order", ["K", "A"])
def test_jit_of_a_fortran_buffer_raveled_in_its_order_is_eager(order):
    def raveled(x):
        v = np.zeros((2, 3), order="F")
        v[...] = x
        return np.ravel(v, order) * 1.0

    _same_as_eager(raveled, [(onp.arange(6.0).reshape(2, 3) - 2.5,)] * 2)


@pytest.mark.xfail(strict=True, reason="eager grad: np.sum(x, where=m) with m a mask of "
                   "np.sign(x) or np.floor(x) (an answer without a derivative, a "
                   "chainrule.numpy buffer under grad) recurses without end in "
                   "buffers._value_of (RecursionError); jit(grad) answers [1, 1, 0]")
@pytest.mark.parametrize("of", [np.sign, np.floor])
def test_grad_of_a_sum_where_a_mask_of_a_sign_is_numpys(of):
    x = onp.array([0.5, 1.5, -2.5])
    want = (of(x) > 0).astype(float)
    assert bits(cr.grad(lambda x: np.sum(x, where=of(x) > 0))(x)) == bits(want)


@pytest.mark.xfail(strict=True, reason="7e8863e's own blocks are NumPy's arrays only: "
                   "under an outer trace (grad of a function of a Jacobian) J is a traced "
                   "view of the stacked rows, and J[0, 0] = v raises TypeError ('writes "
                   "through a view of another traced array') where eager's J takes writes")
def test_grad_through_a_written_jacobian_is_the_hand_derivative():
    def written(x):
        jac = cr.jacobian(lambda y: np.sum(y ** 2) * np.ones(2))(x)  # (rows 2 y)
        jac[0, 0] = 5.0
        return np.sum(jac * x)  # (5 x0 + 2 x0^2 + 4 (x1^2 + x2^2))

    x = onp.array([0.5, -1.2, 2.0])
    want = onp.array([5.0 + 4.0 * x[0], 8.0 * x[1], 8.0 * x[2]])
    assert onp.allclose(cr.grad(written)(x), want, rtol=1e-14)
