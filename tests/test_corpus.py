"""Issue 38's corpus (tests/corpus): NumPy code written allocate-then-fill, differentiated
unmodified in both modes to second order, under jit and vmap, against finite differences."""

import pytest
from tests.corpus import CASES, check


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_corpus_function(case):
    assert check(case) == []


def test_the_corpus_is_at_least_forty_functions_of_every_pattern():
    assert len(CASES) >= 40
    assert {case.pattern for case in CASES} >= {
        "index", "slice", "accumulate", "out=", "add.at", "views", "write functions"}
