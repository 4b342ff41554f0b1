"""The admission modes: our config translated for the in-tree plugins, and the three modes
side by side on one etcd giving a pod its namespace's node selector."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controlplane.harness import (
    ControlPlane,
    ControlPlaneOptions,
    Untranslatable,
    create_namespace,
    pod_manifest,
    setup_for,
)
from controlplane.harness.admission import in_tree
from controlplane.harness.modes import apiserver_options
from tests.controlplane.conftest import started_plane
from webhooks.core.config import load_config
from webhooks.plugins import REGISTRY

CONFIGS = Path(__file__).parent / "configs"
SIX = {
    "PodNodeSelector",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "ExtendedResourceToleration",
    "RuntimeClass",
    "LimitPodHardAntiAffinityTopology",
}
NODE_SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"


@pytest.mark.parametrize(
    ("document", "refused"),
    [
        pytest.param(
            {"plugins": {"dedicated-nodes": {"enabled": True}}},
            "plugins.dedicated-nodes: no in-tree plugin",
            id="dedicated-nodes has no in-tree twin",
        ),
        pytest.param(
            {"plugins": {"default-toleration-seconds": {"namespaceOverrides": True}}},
            "plugins.default-toleration-seconds.namespaceOverrides",
            id="namespaceOverrides goes beyond DefaultTolerationSeconds",
        ),
        pytest.param(
            {"plugins": {"pod-node-selector": {"enabled": True, "action": "warn"}}},
            "plugins.pod-node-selector.action: warn",
            id="an action other than enforce",
        ),
        pytest.param(
            {"plugins": {"runtime-class": {"mutation": "monitor"}}},
            "plugins.runtime-class.mutation: monitor",
            id="a mutation that is only monitored",
        ),
        pytest.param(
            {
                "plugins": {
                    "extended-resource-toleration": {
                        "enforce": {"guarded": [{"taintKey": "nvidia.com/gpu"}]}
                    }
                }
            },
            "plugins.extended-resource-toleration.enforce",
            id="ExtendedResourceToleration never denies in tree",
        ),
        pytest.param(
            {
                "plugins": {
                    "pod-toleration-restriction": {
                        "enabled": True,
                        "memoryPressureToleration": False,
                    }
                }
            },
            "plugins.pod-toleration-restriction.memoryPressureToleration",
            id="PodTolerationRestriction always adds the memory-pressure toleration",
        ),
        pytest.param(
            {
                "plugins": {
                    "anti-affinity-topology": {
                        "enabled": True,
                        "allowedTopologyKeys": ["topology.kubernetes.io/zone"],
                    }
                }
            },
            "plugins.anti-affinity-topology.allowedTopologyKeys",
            id="LimitPodHardAntiAffinityTopology allows only the hostname key",
        ),
        pytest.param(
            {"plugins": {"daemonset-tolerations": {"enabled": False}}},
            "plugins.daemonset-tolerations.enabled: false",
            id="the DaemonSet controller cannot be told to stop",
        ),
        pytest.param(
            {"exceptions": [{"name": "x", "plugins": ["*"], "namespaces": ["a"]}]},
            "exceptions[0] (x)",
            id="an exception",
        ),
    ],
)
def test_an_option_without_an_in_tree_counterpart_is_refused_by_name(
    document: dict[str, Any], refused: str
) -> None:
    with pytest.raises(Untranslatable, match=r"no in-tree counterpart") as caught:
        in_tree(load_config(document, REGISTRY))
    assert refused in str(caught.value)


def test_a_disabled_plugin_s_settings_are_not_refused() -> None:
    config = load_config(
        {"plugins": {"dedicated-nodes": {"enabled": False, "key": "pool"}}}, REGISTRY
    )
    assert "PodNodeSelector" in in_tree(config).disable


def test_our_defaults_become_upstream_s_plugins_and_flags() -> None:
    setup = in_tree(load_config(None, REGISTRY))
    assert set(setup.enable) == {
        "DefaultTolerationSeconds",
        "ExtendedResourceToleration",
        "RuntimeClass",
    }
    assert set(setup.enable) | set(setup.disable) == SIX
    assert setup.configuration is None
    assert setup.flags == (
        "--default-not-ready-toleration-seconds=300",
        "--default-unreachable-toleration-seconds=300",
    )


def test_node_selector_and_toleration_settings_become_the_admission_configuration() -> None:
    toleration = {"key": "team", "operator": "Exists", "effect": "NoSchedule"}
    config = load_config(
        {
            "plugins": {
                "pod-node-selector": {
                    "enabled": True,
                    "clusterDefaultNodeSelector": "env=dev",
                    "nodeSelectorWhitelist": {"team-a": "env=prod"},
                },
                "pod-toleration-restriction": {
                    "enabled": True,
                    "defaultTolerations": [toleration],
                    "tolerationsWhitelist": [toleration],
                },
                "default-toleration-seconds": {"notReadySeconds": 30},
            }
        },
        REGISTRY,
    )
    setup = in_tree(config)
    assert setup.configuration is not None
    plugins = {p["name"]: p["configuration"] for p in setup.configuration["plugins"]}
    assert plugins["PodNodeSelector"] == {
        "podNodeSelectorPluginConfig": {
            "clusterDefaultNodeSelector": "env=dev",
            "team-a": "env=prod",
        }
    }
    assert plugins["PodTolerationRestriction"] == {
        "apiVersion": "podtolerationrestriction.admission.k8s.io/v1alpha1",
        "kind": "Configuration",
        "default": [toleration],
        "whitelist": [toleration],
    }
    assert "--default-not-ready-toleration-seconds=30" in setup.flags


@pytest.mark.parametrize(
    ("mode", "in_tree_on"),
    [
        pytest.param("webhooks", set(), id="webhooks turns all six in-tree twins off"),
        pytest.param(
            "managed",
            {"DefaultTolerationSeconds", "ExtendedResourceToleration", "RuntimeClass"},
            id="managed keeps what EKS runs in tree",
        ),
    ],
)
def test_webhook_modes_turn_the_in_tree_twins_off_explicitly(
    mode: str, in_tree_on: set[str]
) -> None:
    setup = setup_for(mode, load_config(None, REGISTRY))
    assert set(setup.enable) == in_tree_on
    assert set(setup.disable) == SIX - in_tree_on


@pytest.fixture(scope="module")
def three_modes() -> Iterator[ControlPlane]:
    """in-tree, webhooks and managed API servers on one etcd, one config for all three."""
    config = CONFIGS / "pod-node-selector.yaml"
    options = ControlPlaneOptions(
        apiservers=tuple(apiserver_options(m, config) for m in ("in-tree", "webhooks", "managed")),
        scheduler=False,
        controller_manager=None,
    )
    with started_plane(options, "etcd, 3 API servers, 2 serve") as plane:
        yield plane


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("in-tree", id="in tree: PodNodeSelector"),
        pytest.param("webhooks", id="webhooks: our pod-node-selector behind no in-tree twin"),
        pytest.param("managed", id="managed: our pod-node-selector behind EKS's in-tree set"),
    ],
)
def test_a_pod_gets_its_namespace_s_node_selector_in_every_mode(
    three_modes: ControlPlane, mode: str
) -> None:
    with three_modes.apiservers[mode].client() as api_client:
        create_namespace(api_client, "prod", annotations={NODE_SELECTOR: "env=prod"})
        core = client.CoreV1Api(api_client)
        core.create_namespaced_pod("prod", pod_manifest("web"))
        stored = core.read_namespaced_pod("web", "prod")
    assert stored.spec.node_selector == {"env": "prod"}
    # Upstream's default tolerations arrive in every mode: in tree, from serve, or both.
    seconds = {t.key: t.toleration_seconds for t in stored.spec.tolerations}
    assert seconds == {
        "node.kubernetes.io/not-ready": 300,
        "node.kubernetes.io/unreachable": 300,
    }
