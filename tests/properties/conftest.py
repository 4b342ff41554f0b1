"""Hypothesis profiles for the property tests: bounded and reproducible by default.

``ci`` (the default, used by ``make test``) runs a fixed, derandomized set of examples and
writes no example database, so every run of the suite tests the same inputs. ``long``
(``make properties``, or ``HYPOTHESIS_PROFILE=long``) explores ten thousand fresh examples
per test and keeps failures in the local database so the next run replays them first;
``explore`` does the same with two thousand, for a quicker look after a change.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SLOW_INPUTS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=_SLOW_INPUTS,
)
settings.register_profile(
    "long",
    max_examples=10_000,
    deadline=None,
    print_blob=True,
    suppress_health_check=_SLOW_INPUTS,
)
settings.register_profile(
    "explore",
    max_examples=2_000,
    deadline=None,
    print_blob=True,
    suppress_health_check=_SLOW_INPUTS,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
