"""Wrong inputs get a clear error that names the problem and the fix (issue 16)."""

import numpy as onp
import pytest

import chainrule.numpy as np
from chainrule import grad

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
