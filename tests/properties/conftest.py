"""Hypothesis settings for the property tests: a fixed, reproducible example budget.

`derandomize=True` makes every run (local or CI) try the same examples, so a
failure is reproducible and the run time is bounded; `deadline=None` because
the first call of a TensorFlow op pays for tracing. `database=None` keeps
`.hypothesis/` out of the work tree. `HYPOTHESIS_PROFILE=thorough` explores
more (random, 20x the examples) when hunting for new failures by hand.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=1200,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
