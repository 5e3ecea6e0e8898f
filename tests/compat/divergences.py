"""autograd tests that fail on chainrule by design: chainrule does more than autograd there.

The one list of deliberate divergences. docs/migrating.md's list is this list rendered by
``divergences_markdown()``; tests/test_compat_harness.py keeps the two in step.
"""

from __future__ import annotations

# autograd test id -> why chainrule differs (one line, written for users)
DIVERGENCES: dict[str, str] = {
    "tests/test_fft.py::test_rfftn_odd_not_implemented":
        "`rfftn` of an odd-length last axis is differentiable (autograd raises "
        "`NotImplementedError`); the gradient is checked against finite differences.",
    "tests/test_graphs.py::test_assignment_raises_error":
        "in-place assignment into a traced array (`A[1] = b`) works, with NumPy's semantics "
        "and derivatives for both the old array and the written value (autograd raises "
        "`TypeError`).",
    "tests/test_vspaces.py::test_array_vspace_complex":
        "a complex vector space's `ones()` is 1, not autograd's 1 + 1j: `deriv`, `explain` and "
        "`Tensor.backward()` seed with it, and along 1 the derivative of a holomorphic f is "
        "f'(z), where autograd's `deriv` gives (1 + 1j) f'(z).",
}

DOCS_START = "<!-- compat-divergences:start (generated from tests/compat/divergences.py) -->"
DOCS_END = "<!-- compat-divergences:end -->"


def divergences_markdown() -> str:
    """The list as docs/migrating.md shows it, between its two markers."""
    rows = [f"- `{test_id}`: {reason}" for test_id, reason in sorted(DIVERGENCES.items())]
    return "\n".join([DOCS_START, *rows, DOCS_END])
