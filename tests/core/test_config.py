"""The config model: defaults equal upstream's, and every error names its key."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.core.config import ConfigError, camel, load_config
from webhooks.plugins import REGISTRY


def test_no_config_gives_upstream_defaults_with_every_plugin_present() -> None:
    config = load_config(None, REGISTRY)
    assert set(config.plugins) == set(REGISTRY.names)
    dts = config.settings("default-toleration-seconds")
    assert (dts.not_ready_seconds, dts.unreachable_seconds) == (300, 300)
    assert config.cluster.lookup_timeout_seconds == 2.0


def test_settings_are_read_in_camel_case() -> None:
    config = load_config(
        {
            "plugins": {
                "default-toleration-seconds": {"notReadySeconds": 60, "unreachableSeconds": -1}
            }
        },
        REGISTRY,
    )
    dts = config.settings("default-toleration-seconds")
    assert (dts.not_ready_seconds, dts.unreachable_seconds) == (60, -1)


def test_a_disabled_plugin_leaves_the_chain_but_can_still_be_named() -> None:
    config = load_config(
        {"plugins": {"extended-resource-toleration": {"enabled": False}}}, REGISTRY
    )
    assert "extended-resource-toleration" not in [p.name for p in config.chain(REGISTRY)]
    only = config.chain(REGISTRY, "extended-resource-toleration")
    assert [p.name for p in only] == ["extended-resource-toleration"]


ERRORS: list[tuple[str, Any, str]] = [
    ("an unknown top-level key", {"plugin": {}}, "plugin: unknown key"),
    ("an unknown plugin", {"plugins": {"nope": {}}}, "plugins.nope: unknown plugin"),
    (
        "an unknown plugin setting",
        {"plugins": {"default-toleration-seconds": {"notReady": 1}}},
        "plugins.default-toleration-seconds.notReady: unknown key",
    ),
    (
        "a string where an integer belongs",
        {"plugins": {"default-toleration-seconds": {"notReadySeconds": "300"}}},
        "plugins.default-toleration-seconds.notReadySeconds: must be an integer",
    ),
    (
        "a boolean where an integer belongs",
        {"plugins": {"default-toleration-seconds": {"notReadySeconds": True}}},
        "plugins.default-toleration-seconds.notReadySeconds: must be an integer",
    ),
    (
        "a non-boolean enabled",
        {"plugins": {"extended-resource-toleration": {"enabled": "yes"}}},
        "plugins.extended-resource-toleration.enabled: must be true or false",
    ),
    (
        "a plugin section that is a list",
        {"plugins": {"extended-resource-toleration": []}},
        "must be a mapping",
    ),
    ("a root that is a list", [], "<root>: must be a mapping"),
    (
        "a zero lookup timeout",
        {"cluster": {"lookupTimeoutSeconds": 0}},
        "cluster.lookupTimeoutSeconds",
    ),
    (
        "an unknown cluster source",
        {"cluster": {"source": "magic"}},
        "cluster.source: must be one of",
    ),
    (
        "a kubeconfig source without a file",
        {"cluster": {"source": "kubeconfig"}},
        "cluster.kubeconfig",
    ),
]


@pytest.mark.parametrize(
    ("data", "message"), [(d, m) for _, d, m in ERRORS], ids=[i for i, _, _ in ERRORS]
)
def test_an_unusable_config_names_the_key(data: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(data, REGISTRY)
    assert message in str(info.value)


def test_snake_case_becomes_camel_case() -> None:
    assert camel("not_ready_seconds") == "notReadySeconds"
    assert camel("enforce") == "enforce"
