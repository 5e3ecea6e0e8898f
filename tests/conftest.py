import os
import sys

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))

# Property tests draw the same examples on every run ("ci", the default), so a CI run
# cannot fail by chance; `pytest --hypothesis-profile=long` explores thousands of random
# programs instead, by hand.
settings.register_profile("ci", derandomize=True, deadline=None, max_examples=40,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=3000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")


@pytest.fixture(params=["by cost", "batched first"])
def vmap_both_ways(request):
    """A vmap test twice: as calls choose (a small batch of a cheap function runs as the
    loop), and with every call starting with a batched run (the batching rules' answers)."""
    if request.param == "by cost":
        yield
        return
    from chainrule._transforms.vmap import batched_runs_first

    with batched_runs_first():
        yield
