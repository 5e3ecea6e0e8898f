"""Wrong inputs get a clear error that names the problem and the fix (issue 16)."""

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import Tensor, grad, jvp, make_jvp

# ---------------------------------------------------------------- non-float inputs to grad

@pytest.mark.parametrize(
    "value, kind",
    [
        (onp.array([1.0, 2.0], dtype=object), "object"),
        (onp.array(["a", "b"]), "string"),
        (onp.array([b"a"]), "bytes"),
        (onp.array([True, False]), "boolean"),
        (onp.array([1, 2]), "integer"),
        (onp.array([1, 2], dtype=onp.uint8), "unsigned integer"),
        (onp.array(["2020-01-01"], dtype="datetime64[D]"), "datetime"),
        (onp.array([1], dtype="timedelta64[s]"), "timedelta"),
    ],
)
def test_non_float_input_error_names_its_dtype_kind(value, kind):
    with pytest.raises(TypeError) as info:
        grad(np.sum)(value)
    message = str(info.value)
    assert f"of {kind} dtype {value.dtype}" in message
    assert "x.astype(float)" in message
    if kind != "integer" and kind != "unsigned integer":
        assert "integer dtype" not in message


# ------------------------------------------- traced values in non-differentiable arguments

_A = onp.arange(6.0)

# name -> (function of a traced float x, argument name the error must give). NumPy takes
# a float there; where it refuses floats itself (diag's k, pad widths, split and insert
# positions, tile reps), its own TypeError comes first. An integer cast (x.astype(int)) is a plain
# array, as in autograd, and goes through without a derivative.
_INTEGER_ARGUMENT_CASES = {
    "roll": (lambda x: np.roll(_A, x), "'shift'"),
    "take": (lambda x: np.take(_A, x), "'indices'"),
    "repeat": (lambda x: np.repeat(_A, x), "'repeats'"),
    "compress": (lambda x: np.compress(np.stack([x] * 6), _A), "'condition'"),
}


@pytest.mark.parametrize("name", sorted(_INTEGER_ARGUMENT_CASES))
@pytest.mark.parametrize("mode", ["VJP", "JVP"])
def test_traced_integer_argument_names_function_and_argument(name, mode):
    fun, argument = _INTEGER_ARGUMENT_CASES[name]

    def f(x):
        return np.sum(fun(x) * x)

    with pytest.raises(NotImplementedError) as info:
        if mode == "VJP":
            grad(f)(2.0)
        else:
            make_jvp(f)(2.0)(1.0)
    message = str(info.value)
    assert f"{mode} of {name} with respect to argument {argument}" in message
    assert "stop_gradient" in message


def test_roll_by_traced_float_shift_is_the_clear_error():
    with pytest.raises(NotImplementedError, match="roll with respect to argument 'shift'"):
        grad(lambda x: np.sum(np.roll(np.ones(3), x)))(1.0)


def test_compress_by_condition_computed_from_traced_value():
    x = onp.array([1.0, -2.0, 3.0])
    # d/dx sum(compress(x > 0, x**2)) = 2x where x > 0, else 0 (by hand)
    expected = onp.array([2.0, 0.0, 6.0])
    got = grad(lambda x: np.sum(np.compress(x > 0, x * x)))(x)
    onp.testing.assert_allclose(got, expected)
    eps = 1e-6
    def plain(v):
        return onp.sum(onp.compress(x > 0, v * v))

    numeric = [(plain(x + e) - plain(x - e)) / (2 * eps) for e in onp.eye(3) * eps]
    onp.testing.assert_allclose(got, numeric, atol=1e-6)


# ----------------------------------------------------------------------------- output arrays
OUT_CALLS = {
    "sin positional": lambda x, out: np.sin(x, out),
    "sin keyword": lambda x, out: np.sin(x, out=out),
    "sin keyword tuple": lambda x, out: np.sin(x, out=(out,)),
    "add positional": lambda x, out: np.add(x, 1.0, out),
    "add keyword": lambda x, out: np.add(x, 1.0, out=out),
    "multiply into the traced value's partner": lambda x, out: np.multiply(out, x, out),
    "clip positional": lambda x, out: np.clip(x, 0.0, 1.0, out),
    "cumsum positional": lambda x, out: np.cumsum(x, 0, None, out),
}


@pytest.mark.parametrize("name", OUT_CALLS)
@pytest.mark.parametrize("transform", ["grad", "jvp", "Tensor"])
def test_an_output_array_with_a_traced_value_is_refused_before_anything_is_written(name,
                                                                                   transform):
    call = OUT_CALLS[name]
    out = onp.array([0.25, 0.5])
    before = out.copy()
    x = onp.array([1.0, 2.0])
    with pytest.raises(TypeError, match="output array .* cannot be given with a traced value"):
        if transform == "grad":
            grad(lambda x: np.sum(call(x, out)))(x)
        elif transform == "jvp":
            jvp(lambda x: call(x, out), (x,), (onp.ones(2),))
        else:
            call(Tensor(x), out)
    onp.testing.assert_array_equal(out, before)  # the caller's array is untouched


def test_output_arrays_without_traced_values_are_numpys():
    out = onp.zeros(2)
    result = np.sin(onp.array([0.5, 1.0]), out)
    assert result is out
    onp.testing.assert_array_equal(out, onp.sin([0.5, 1.0]))
    np.add(onp.ones(2), 1.0, out=out)
    onp.testing.assert_array_equal(out, [2.0, 2.0])


# ----------------------------------------------------------------------------- unknown shapes
def test_dask_arrays_of_unknown_chunk_sizes_get_a_clear_error():
    da = pytest.importorskip("dask.array")
    x = da.from_array(onp.array([1.0, -2.0, 3.0]), chunks=2)
    masked = x[x > 0]  # chunk sizes unknown until computed: shape (nan,)
    message = r"dask array of unknown shape \(nan,\).*compute_chunk_sizes\(\)"
    with pytest.raises(ValueError, match=message):
        grad(lambda v: np.sum(v ** 2))(masked)
    with pytest.raises(ValueError, match=message):
        grad(lambda v: np.sum(v[v > 0] ** 2))(x)
    known = masked.compute_chunk_sizes()  # the fix the message names works
    onp.testing.assert_array_equal(grad(lambda v: np.sum(v ** 2))(known).compute(), [2.0, 6.0])


def test_a_positional_out_of_none_is_no_output_array():
    x = onp.array([[1.0, 2.0], [3.0, 4.0]])
    g = grad(lambda x: np.sum(np.sum(x, 0, None, None, True) ** 2))(x)
    onp.testing.assert_array_equal(g, 2 * onp.sum(x, 0, keepdims=True) * onp.ones_like(x))


def test_multi_dot_with_an_output_array_and_a_traced_value_is_refused():
    # (it wrote the product into out and gave a zero derivative)
    a, out = onp.eye(2) * 2.0, onp.array([0.25, 0.5])
    with pytest.raises(TypeError, match="output array .* cannot be given with a traced value"):
        grad(lambda x: np.sum(np.linalg.multi_dot([a, x], out=out)))(onp.ones(2))
    onp.testing.assert_array_equal(out, [0.25, 0.5])
    assert np.linalg.multi_dot([a, onp.ones(2)], out=out) is out  # plain values: NumPy's
