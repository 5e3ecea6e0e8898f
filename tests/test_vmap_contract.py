"""vmap's contract, defect by defect (issue 33): ``vmap(f)(xs)`` returns
``stack([f(x) for x in xs])`` — values, dtypes, pytree — or raises a clear error. Each test
compares against that loop (on copies of the inputs, as a loop would mutate them)."""

from __future__ import annotations

import functools
import random
import string
import warnings

import numpy as onp
import pytest

import chainrule as cr
import chainrule.numpy as np
from chainrule._core.tracer import LeakedTracerError

# each test twice: as calls choose, and with every call starting batched (conftest)
pytestmark = pytest.mark.usefixtures("vmap_both_ways")


R = onp.random.default_rng(33)
XS = R.normal(size=(5, 3))


def loop(f, *args, in_axes=0):
    """The reference: f on each example (of copies of the arguments), stacked."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(onp.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    answers = []
    for i in range(size):
        one = [a if ax is None else onp.take(a, i, axis=ax).copy() for a, ax in zip(args, axes)]
        answers.append(f(*one))
    return cr.tree_map(lambda *leaves: onp.stack(leaves), *answers)


def same(got, want):
    """Equal trees: structure, dtypes, shapes and values to the bit."""
    got_leaves, got_tree = cr.tree_flatten(got)
    want_leaves, want_tree = cr.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        assert onp.asarray(g).dtype == onp.asarray(w).dtype
        onp.testing.assert_array_equal(g, w, strict=True)
        assert (onp.signbit(g) == onp.signbit(w)).all()


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ----------------------------------------------------------------- 1. writes into NumPy arrays
def _add_into(x):
    acc = onp.zeros(3)
    acc += x
    return acc


def _subtract_into(x):
    acc = onp.ones(3)
    acc -= x
    return acc


def _scalar_accumulator(x):
    acc = onp.zeros(())
    acc += np.sum(x)
    return acc


def _sin_out(x):
    buf = onp.zeros(3)
    onp.sin(x, out=buf)
    return buf


def _chainrule_sin_out(x):
    buf = onp.zeros(3)
    np.sin(x, out=buf)
    return buf


def _add_out_self(x):
    b = onp.ones(3)
    onp.add(b, x, out=b)
    return b


def _add_at(x):
    b = onp.zeros(3)
    onp.add.at(b, [0, 0, 2], x)
    return b


def _copyto(x):
    b = onp.zeros(3)
    onp.copyto(b, x)
    return b * 2


def _put(x):
    b = onp.zeros(3)
    onp.put(b, [0, 2], x[:2])
    return b


def _putmask(x):
    b = onp.zeros(3)
    onp.putmask(b, onp.array([True, False, True]), x)
    return b


def _place(x):
    b = onp.zeros(3)
    onp.place(b, onp.array([True, False, True]), x[1:])
    return b


WRITES = [_add_into, _subtract_into, _scalar_accumulator, _sin_out, _chainrule_sin_out,
          _add_out_self, _add_at, _copyto, _put, _putmask, _place]


@pytest.mark.parametrize("f", WRITES, ids=[f.__name__ for f in WRITES])
def test_writing_into_a_numpy_array_is_each_examples_own(f):
    same(cr.vmap(f)(XS), loop(f, XS))


def test_a_write_into_a_numpy_array_under_grad_fails_as_the_loop_does():
    def f(x):
        acc = onp.zeros(3)
        acc += x
        return np.sum(acc)

    with pytest.raises(TypeError, match="out="):
        cr.grad(f)(XS[0])
    with pytest.raises(TypeError, match="out="):
        cr.vmap(cr.grad(f))(XS)


def test_writes_into_arrays_of_the_batch_and_out_arrays_of_it():
    def f(x):
        y = x * 1.0
        onp.add(y, 1.0, out=y)
        np.multiply(y, 2.0, out=y)
        y[x < 0] = 0.0
        y[[0, 2]] += x[1]
        return y

    same(cr.vmap(f)(XS), loop(f, XS))


# ----------------------------------------------------------------- 2. Tensor vmap
def test_tensor_per_sample_gradients_through_relu_clamp_where_equal_torch():
    torch = pytest.importorskip("torch")
    from chainrule.tensor import Tensor, vmap

    w, xs = R.normal(size=3), R.normal(size=(6, 3))
    losses = {
        "relu": lambda w, x: (x @ w).relu().sum(),
        "clamp": lambda w, x: (x * w).clamp(min=0.0).sum(),
        "clamp max": lambda w, x: (x * w).clamp(max=0.1).sum(),
    }
    for name, loss in losses.items():
        got = vmap(cr.grad(loss), in_dims=(None, 0))(Tensor(w), Tensor(xs))
        want = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(
            torch.tensor(w), torch.tensor(xs))
        assert got.numpy().any(), name
        onp.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13, err_msg=name)
    where_loss = lambda w, x: np.where(x * w > 0, x * w, 0.0).sum()  # noqa: E731
    got = vmap(cr.grad(where_loss), in_dims=(None, 0))(Tensor(w), Tensor(xs))
    want = torch.func.vmap(torch.func.grad(
        lambda w, x: torch.where(x * w > 0, x * w, 0.0).sum()), in_dims=(None, 0))(
        torch.tensor(w), torch.tensor(xs))
    onp.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)


def test_tensor_vmap_of_relu_is_a_tensor_of_the_stacked_answers():
    from chainrule.tensor import Tensor, vmap

    out = vmap(lambda x: x.relu())(Tensor(XS))
    assert isinstance(out, Tensor)
    onp.testing.assert_array_equal(out.numpy(), onp.maximum(XS, 0.0))
    assert "Tensor(" in repr(out)


def test_a_batched_value_kept_past_its_vmap_fails_with_an_exception_not_a_signal():
    from chainrule._transforms.vmap import batched_runs_first
    kept = []

    def f(x):
        kept.append(x)
        return x * 2.0

    with batched_runs_first():  # (by cost, a small batch of a cheap function is the loop)
        cr.vmap(f)(XS)
    assert "ended" in repr(kept[-1])
    with pytest.raises(LeakedTracerError, match="vmap"):
        onp.asarray(kept[-1])
    with pytest.raises(LeakedTracerError):
        bool(kept[-1][0] > 0)
    # a comparison of it refuses too, as arithmetic does (it made a value of the ended
    # batch before the operators went straight to the batch)
    for compare in (lambda v: v > 0, lambda v: 0.0 <= v, lambda v: v == XS[0]):
        with pytest.raises(LeakedTracerError):
            compare(kept[-1])


# ----------------------------------------------------------------- 3. where with one argument
def test_where_of_one_argument_is_each_examples_indices():
    xs = onp.array([[1.0, -2.0, 3.0], [0.5, -1.0, 2.0], [4.0, -4.0, 0.1]])  # two each
    for f in (lambda x: np.where(x > 0)[0], lambda x: np.nonzero(x > 0)[0],
              lambda x: np.flatnonzero(x > 0), lambda x: np.argwhere(x > 0),
              lambda x: np.sum(x[np.where(x > 0)]), lambda x: len(np.where(x > 0)) + 0.0):
        same(cr.vmap(f)(xs), loop(f, xs))
    uneven = onp.array([[1.0, -2.0, 3.0], [-0.5, -1.0, 2.0]])
    f = lambda x: np.sum(x[np.where(x > 0)])  # noqa: E731  (counts differ, answers agree)
    same(cr.vmap(f)(uneven), loop(f, uneven))
    with pytest.raises(ValueError, match=r"shape \(2,\) for example 0 but \(1,\) for "
                                         r"example 1.*cannot be stacked"):
        cr.vmap(lambda x: np.where(x > 0)[0])(uneven)


# ----------------------------------------------------------------- 4. in-place and aliases
def _alias(x):
    y = x * 1.0
    z = y
    y += 1.0
    return z


def _kept_in_a_list(x):
    y = x * 1.0
    keep = [y]
    y *= 2.0
    return keep[0]


def _view_sees_base(x):
    y = x * 1.0
    v = y[0:2]
    y -= 3.0
    return v


def _base_sees_view(x):
    y = np.outer(x, x)
    row = y[1]
    row *= 2.0
    return y


def _reshaped_view(x):
    y = x.reshape(3, 1)
    y += 1.0
    return x


def _scalar_rebinds(x):
    s = np.sum(x)
    t = s
    s += 1.0
    return t, s


def _writes_its_argument(x):
    x[0] = 7.0
    x /= 2.0
    return x


INPLACE = [_alias, _kept_in_a_list, _view_sees_base, _base_sees_view, _reshaped_view,
           _scalar_rebinds, _writes_its_argument]


@pytest.mark.parametrize("f", INPLACE, ids=[f.__name__ for f in INPLACE])
def test_in_place_writes_reach_aliases_and_views_as_in_the_loop(f):
    xs = XS.copy()
    same(cr.vmap(f)(xs), loop(f, XS))
    onp.testing.assert_array_equal(xs, XS)  # the caller's array is not written


def test_in_place_writes_under_grad_inside_vmap_follow_grad():
    def f(x):
        y = x * 1.0
        z = y
        y += x
        return np.sum(z ** 2)

    same(cr.vmap(cr.grad(f))(XS), loop(cr.grad(f), XS))


def test_outputs_are_fresh_arrays_not_the_inputs_nor_each_other():
    xs = XS.copy()
    a, b = cr.vmap(lambda x: (x, x))(xs)
    assert not onp.shares_memory(a, xs) and not onp.shares_memory(a, b)
    a[0, 0] = 100.0
    assert xs[0, 0] == XS[0, 0] and b[0, 0] == XS[0, 0]
    assert cr.vmap(lambda x: np.broadcast_to(x, (2, 3)))(xs).flags.writeable


# ----------------------------------------------------------------- 5. random draws
def _draws(seed_everything, f, *args, **kwargs):
    seed_everything()
    got = cr.vmap(f, **kwargs)(*args)
    seed_everything()
    return got, loop(f, *args, in_axes=kwargs.get("in_axes", 0))


GENERATOR = onp.random.default_rng(0)


def _noise(x):
    return x + np.random.normal(size=3)


def _dropout(x):
    return x * (GENERATOR.random(3) > 0.5)


def _python_random(x):
    return x * random.random()


@pytest.mark.parametrize("f, seed", [
    (_noise, lambda: onp.random.seed(1)),
    (_dropout, lambda: GENERATOR.bit_generator.__setstate__(
        onp.random.default_rng(2).bit_generator.__getstate__())),
    (_python_random, lambda: random.seed(3)),
], ids=["numpy.random", "a Generator", "random"])
def test_randomness_different_draws_as_the_loop(f, seed):
    got, want = _draws(seed, f, XS)
    same(got, want)
    assert not (got[0] == got[1]).all()


def test_a_generator_passed_as_an_argument_and_draws_under_grad():
    def f(x, rng):
        return np.sum(np.sin(x) * rng.normal(size=3))

    got = cr.vmap(cr.grad(f), in_axes=(0, None))(XS, onp.random.default_rng(5))
    want = loop(cr.grad(f), XS, onp.random.default_rng(5), in_axes=(0, None))
    same(got, want)


def test_draws_after_a_split_are_still_the_loops():
    def f(x):
        if np.sum(x) > 0:
            return x + np.random.normal(size=3)
        return x - np.random.uniform(size=3)

    got, want = _draws(lambda: onp.random.seed(4), f, XS)
    same(got, want)


def test_randomness_same_shares_one_draw_and_error_refuses():
    onp.random.seed(6)
    got = cr.vmap(_noise, randomness="same")(XS)
    onp.random.seed(6)
    noise = onp.random.normal(size=3)
    same(got, XS + noise)
    with pytest.raises(ValueError, match="randomness='error'.*global RandomState"):
        cr.vmap(_noise, randomness="error")(XS)
    with pytest.raises(ValueError, match="randomness must be one of"):
        cr.vmap(_noise, randomness="per example")


# ----------------------------------------------------------------- 6. empty batches
EMPTY = onp.zeros((0, 3))


def _branch(x):
    if np.sum(x) > 0:
        return x
    return -x


@pytest.mark.parametrize("f, shape, dtype", [
    (lambda x: 1.0, (0,), onp.float64),
    (np.ravel, (0, 3), onp.float64),
    (lambda x: np.reshape(x, -1), (0, 3), onp.float64),
    (lambda x: np.reshape(x, (-1, 1)), (0, 3, 1), onp.float64),
    (np.linalg.norm, (0,), onp.float64),
    (lambda x: np.outer(x, x), (0, 3, 3), onp.float64),
    (np.cumsum, (0, 3), onp.float64),
    (np.argmax, (0,), onp.int64),
    (lambda x: np.kron(x, x), (0, 9), onp.float64),
    (_branch, (0, 3), onp.float64),
    (lambda x: cr.grad(lambda w: np.sum(np.tanh(x @ w)))(onp.ones((3, 2))), (0, 3, 2),
     onp.float64),
])
def test_empty_batches_answer_empty_arrays_shaped_as_an_example(f, shape, dtype):
    out = cr.vmap(f)(EMPTY)
    assert out.shape == shape and out.dtype == dtype


# ----------------------------------------------------------------- 7. element writes
def test_an_element_write_and_fill_of_numpy_arrays_with_examples_that_differ():
    def write(x):
        b = onp.zeros(3)
        b[0] = x[1]
        return b

    def fill(x):
        a = onp.zeros(2)
        a.fill(np.sum(x))
        return a

    for f in (write, fill):
        same(cr.vmap(f)(XS), loop(f, XS))


# ----------------------------------------------------------------- 8. errors and formats
def test_formatting_a_batched_value_formats_each_example():
    def f(x):
        text = f"{np.sum(x):.3f}"
        return float(text) + 0.0 * x

    same(cr.vmap(f)(XS), loop(f, XS))
    same(cr.vmap(cr.grad(lambda x: np.sum(x) * (f"{x[0]:.1f}" != "0.0")))(XS),
         loop(cr.grad(lambda x: np.sum(x) * (f"{x[0]:.1f}" != "0.0")), XS))


def test_answers_of_different_shapes_are_a_clear_error():
    xs = onp.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
    with pytest.raises(ValueError, match="cannot be stacked"):
        cr.vmap(lambda x: np.nonzero(x)[0])(xs)
    with pytest.raises(ValueError):
        onp.stack([np.nonzero(x)[0] for x in xs])  # (nor can the loop)


def test_einsum_of_every_letter():
    spec = ",".join(string.ascii_letters) + "->"
    f = lambda x: np.einsum(spec, *([x[:1]] * 52))  # noqa: E731
    same(cr.vmap(f)(XS), loop(f, XS))


def test_out_axes_none_for_a_nan_the_same_in_every_branch():
    def f(x):
        if np.sum(x) > 0:
            return onp.nan, x
        return onp.nan, -x

    nan, out = cr.vmap(f, out_axes=(None, 0))(XS)
    assert onp.isnan(nan)
    same(out, loop(lambda x: f(x)[1], XS))


def test_a_signal_swallowed_by_the_function_still_takes_effect():
    def f(x):
        try:
            flag = bool(np.sum(x) > 0)
        except BaseException:  # noqa: BLE001  (hostile: even BaseException is caught)
            flag = True
        return x if flag else -x

    same(cr.vmap(f)(XS), loop(f, XS))


def test_an_ndarray_method_chainrule_lacks_runs_per_example():
    def f(x):
        y = x * 1.0
        y.sort()
        return y

    same(cr.vmap(f)(XS), loop(f, XS))


# ----------------------------------------------------------------- 9. splitting is bounded
def test_nested_vmaps_decide_on_both_batches():
    def f(x, y):
        return x * y if x > y else x - y

    xs, ys = R.normal(size=7), R.normal(size=6)
    got = cr.vmap(cr.vmap(f, in_axes=(None, 0)), in_axes=(0, None))(xs, ys)
    same(got, onp.array([[f(x, y) for y in ys] for x in xs]))
    got = cr.vmap(cr.vmap(f, in_axes=(0, None)), in_axes=(None, 0))(xs, ys)
    same(got, onp.array([[f(x, y) for x in xs] for y in ys]))


# ----------------------------------------------------------------- writes outside the function
_BUFFER = onp.zeros(3)


def _accumulates_into_a_global(x):
    _BUFFER[:] += x  # the loop's later examples see the earlier ones' writes
    return _BUFFER * 1.0


def test_writes_into_arrays_outside_the_function_happen_as_in_the_loop():
    _BUFFER[:] = 0.0
    got = cr.vmap(_accumulates_into_a_global)(XS)
    after = _BUFFER.copy()
    _BUFFER[:] = 0.0
    same(got, loop(_accumulates_into_a_global, XS))
    same(after, _BUFFER)
    assert _BUFFER.flags.writeable

    basis = onp.zeros(3)

    def projection(x):  # a basis vector rebuilt in a closed-over buffer, as people do
        basis[:] = 0.0
        basis[1] = 1.0
        return np.dot(x, basis) * x

    same(cr.vmap(projection)(XS), loop(projection, XS))

    def scales_its_argument(x, w):
        w *= 2.0
        return x * w

    w = onp.ones(3)
    got = cr.vmap(scales_its_argument, in_axes=(0, None))(XS, w)
    w_after, w = w, onp.ones(3)
    same(got, loop(scales_its_argument, XS, w, in_axes=(0, None)))
    same(w_after, w)


# ----------------------------------------------------------------- found by the harness
def test_the_function_catching_an_error_some_examples_raise():
    def cholesky_or_not(x):
        try:
            return np.sum(np.linalg.cholesky(np.diag(x[:2] + 0.5)))
        except np.linalg.LinAlgError:
            return -1.0

    def int_or_not(x):
        try:
            k = int(float(np.sum(x)) / float(np.min(np.abs(x))))
        except (OverflowError, ValueError, ZeroDivisionError):
            k = -1
        return x + k % 3

    xs = onp.array([[1.0, 2.0, 0.0], [-3.0, 1.0, 1.0], [0.5, onp.nan, 1.0]])
    for f in (cholesky_or_not, int_or_not):
        same(cr.vmap(f)(xs), loop(f, xs))


def test_diag_of_a_batch_keeps_zeros_off_the_diagonal():
    xs = onp.array([[onp.inf, -0.0, 1.0], [onp.nan, 2.0, -1.0]])
    for k in (0, 1, -2):
        f = functools.partial(np.diag, k=k)
        same(cr.vmap(f)(xs), loop(f, xs))


def test_writes_through_views_under_nested_vmaps():
    def f(x):
        y = x * 1.0
        view = y[1:]
        y -= 1.0
        return view * y[0]

    xs = R.normal(size=(3, 4, 5))
    got = cr.vmap(cr.vmap(f), in_axes=1)(xs)
    same(got, onp.stack([loop(f, xs[:, j]) for j in range(4)]))


def test_answers_keep_the_functions_dict_order():
    def f(x):
        if x[0] > 0:
            return {"b": x * 2.0, "a": (x, {"z": 1.0, "y": x})}
        return {"b": x * 3.0, "a": (x, {"z": 1.0, "y": -x})}

    got = cr.vmap(f)(XS)
    assert list(got) == ["b", "a"] and list(got["a"][1]) == ["z", "y"]
    same(got, loop(f, XS))


def test_answers_are_fresh_arrays_under_jit():
    def f(x):
        y = x * 2.0
        return x, y, y, np.flip(y)

    mapped = cr.jit(cr.vmap(f))
    for xs in (XS, XS + 1.0):  # (the first call traces, the second runs what jit emitted)
        arrays = mapped(xs)
        same(arrays, loop(f, xs))
        assert not any(onp.shares_memory(a, xs) for a in arrays)
        assert not any(onp.shares_memory(a, b) for i, a in enumerate(arrays)
                       for b in arrays[i + 1:])


# ----------------------------------------------------------------- found by attacking
@pytest.mark.parametrize("f", [
    lambda x: len(f"{x[0]}") * x, lambda x: x * 2.0 if str(x[0]) == str(XS[0, 0]) else -x,
    lambda x: onp.array([len(str(x))], dtype=float),
], ids=["f-string", "str-branch", "str-of-array"])
def test_the_text_of_a_batched_value_is_each_examples_text(f):
    # it was the batch's text ("BatchedArray(shape=(3,) per example, ...)"), one answer
    # for every example
    same(cr.vmap(f)(XS), loop(f, XS))
