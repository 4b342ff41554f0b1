"""Property: whatever the config, the export report never calls a setting better than its plugin.

Generated configs vary every plugin's settings, its mutation mode and action, and the
exceptions (:func:`tests.properties.strategies.configs`); the report is read as text,
whole or for a few plugins, with and without ``--hybrid``
(:mod:`tests.export.report_consistency` says what consistent means).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.export.report_consistency import contradictions
from tests.properties.strategies import configs
from webhooks.core.config import Config
from webhooks.export import export
from webhooks.plugins import REGISTRY


@given(
    config=configs(),
    only=st.lists(st.sampled_from(REGISTRY.names), max_size=3, unique=True),
    hybrid=st.booleans(),
)
def test_the_report_is_consistent_for_any_config(
    config: Config, only: list[str], hybrid: bool
) -> None:
    result = export(config, REGISTRY, tuple(only), hybrid=hybrid)
    assert contradictions(result, config, hybrid=hybrid) == []
