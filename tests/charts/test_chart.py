"""The Helm chart, rendered by Helm's own engine: schema-valid objects, webhook invariants."""

from __future__ import annotations

import base64
import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.charts.certmanager import SCHEMAS
from tests.charts.monitoring import PROMETHEUS_RULE, SERVICE_MONITOR
from tests.charts.render import (
    CHART,
    NAMESPACE,
    RELEASE,
    chart_finding,
    chart_table,
    notes,
    of_kind,
    one,
    released,
    render,
    values_file,
)
from tests.command import invoke_cli
from webhooks.certs import pki
from webhooks.core.config import load_config
from webhooks.install.webhookconfig import (
    WebhookSettings,
    inactive_halves,
    namespace_selector,
    plugin_table,
    webhooks_for,
    without_halves,
)
from webhooks.plugins import REGISTRY

#: The oldest Kubernetes the chart supports (matchConditions GA), one in between and the
#: newest it is tested on; fixed, so a newer kubernetes-validate cannot change what passes.
KUBE_VERSIONS = ("1.30.0", "1.35.0", "1.37.0")

MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
PRODUCT_PLUGINS = (
    "pod-node-selector",
    "default-toleration-seconds",
    "pod-toleration-restriction",
    "extended-resource-toleration",
    "runtime-class",
    "daemonset-tolerations",
    "dedicated-nodes",
    "taint-toleration-rules",
    "anti-affinity-topology",
)
MISSING_FROM_REGISTRY = sorted(set(PRODUCT_PLUGINS) - set(REGISTRY.names))


@functools.cache
def ca_dir() -> Path:
    """A CA and serving certificate made once per run, for the existing-Secret mode."""
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="chart-ca-"))
    pki.generate(directory, hosts=pki.service_hosts(RELEASE, NAMESPACE))
    return directory


def ca_pem() -> str:
    """The PEM text of the test CA."""
    return (ca_dir() / "ca.crt").read_text(encoding="ascii")


Values = Callable[[], dict[str, Any]]

MODES: dict[str, Values] = {
    "generate": lambda: {"tls": {"mode": "generate"}},
    "managed": lambda: {"tls": {"mode": "managed"}},
    "certManager": lambda: {"tls": {"mode": "certManager"}},
    "certManager with an issuer": lambda: {
        "tls": {
            "mode": "certManager",
            "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}},
        }
    },
    "secret": lambda: {
        "tls": {"mode": "secret", "secret": {"name": "my-tls", "caBundle": ca_pem()}}
    },
    "secret, caBundle injected": lambda: {
        "tls": {"mode": "secret", "secret": {"name": "my-tls", "caBundleInjected": True}}
    },
}

OPTIONS: dict[str, Values] = {
    "one webhook per plugin": lambda: {"webhooks": {"perPlugin": True}},
    "matchConditions off": lambda: {"webhooks": {"matchConditions": {"enabled": False}}},
    "both webhooks fail closed": lambda: {"webhooks": {"mutating": {"failurePolicy": "Fail"}}},
    "one replica": lambda: {"replicaCount": 1},
    "dedicated-nodes on, extended-resource-toleration off": lambda: {
        "plugins": {
            "dedicated-nodes": {"enabled": True},
            "extended-resource-toleration": {"enabled": False},
        }
    },
    "scheduling and naming overrides": lambda: {
        "fullnameOverride": "pw",
        "priorityClassName": "system-cluster-critical",
        "imagePullSecrets": [{"name": "regcred"}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "infra", "operator": "Exists"}]}
                    ]
                }
            }
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "placement-webhooks"}},
            }
        ],
        "serviceAccount": {"name": "hooks", "annotations": {"team": "platform"}},
        "podAnnotations": {"prometheus.io/scrape": "true"},
    },
}

#: The opt-in extras for monitoring and scale, all on, with a control plane outside the
#: pod network reaching the webhook port from its node CIDR.
EXTRAS: Values = lambda: {  # noqa: E731
    "metrics": {
        "serviceMonitor": {
            "enabled": True,
            "labels": {"release": "kube-prometheus-stack"},
            "scrapeTimeout": "10s",
        }
    },
    "networkPolicy": {
        "enabled": True,
        "webhook": {"from": [{"ipBlock": {"cidr": "10.0.0.0/16"}}]},
        "metrics": {
            "from": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                    }
                }
            ]
        },
    },
    "autoscaling": {
        "enabled": True,
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}},
    },
}
OPTIONS["ServiceMonitor, NetworkPolicy and autoscaling on"] = EXTRAS
OPTIONS["alerts, dashboard, Nodes, selectors and the knobs on"] = lambda: {
    "metrics": {
        "serviceMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "dashboard": {"enabled": True, "annotations": {"grafana_folder": "Platform"}},
    },
    "webhooks": {
        "nodes": {"enabled": True},
        "namespaceSelector": {"matchLabels": {"placement-webhooks.io/enabled": "true"}},
        "objectSelector": {"matchExpressions": [{"key": "k8s-app", "operator": "DoesNotExist"}]},
        "matchConditions": {"skipUsers": ["system:serviceaccount:kube-system:cluster-autoscaler"]},
    },
    "image": {"digest": "sha256:" + "ab" * 32, "registry": "registry.example"},
    "extraArgs": ["--io-timeout=5"],
    "extraEnv": [{"name": "TZ", "value": "UTC"}],
    "hostNetwork": True,
    "audit": {"enabled": True},
}

#: A policy rolled out in stages: warn with an enforcing override, monitor mode, exceptions.
ROLLOUT: Values = lambda: {  # noqa: E731
    "plugins": {
        "dedicated-nodes": {
            "enabled": True,
            "action": "warn",
            "actionOverrides": [
                {"namespaceSelector": {"matchLabels": {"env": "prod"}}, "action": "enforce"}
            ],
        },
        "extended-resource-toleration": {"enabled": True, "mutation": "monitor"},
    },
    "exceptions": [
        {
            "name": "dcgm-exporter",
            "plugins": ["dedicated-nodes"],
            "namespaces": ["monitoring"],
            "objectSelector": {"matchLabels": {"app": "dcgm-exporter"}},
            "expires": "2027-01-31T00:00:00Z",
        }
    ],
}
OPTIONS["a staged rollout: actions, overrides, monitor mode and exceptions"] = ROLLOUT


def _on_generate(values: Values) -> Values:
    """An option scenario on tls.mode generate: the options are what it varies, and the
    objects it expects (one Secret, no certificate sidecar) are generate's."""
    return lambda: {"tls": {"mode": "generate"}, **values()}


SCENARIOS: dict[str, Values] = {
    **{f"TLS {k}": v for k, v in MODES.items()},
    **{k: _on_generate(v) for k, v in OPTIONS.items()},
}


@functools.cache
def _rendered(scenario: str) -> tuple[dict[str, Any], ...]:
    return tuple(render(SCENARIOS[scenario]()))


def rendered(scenario: str) -> list[dict[str, Any]]:
    """The objects of a scenario (rendered once; deep-copied so tests cannot interfere)."""
    return copy.deepcopy(list(_rendered(scenario)))


def webhook_selector(objects: list[dict[str, Any]]) -> dict[str, str]:
    """The labels every webhook pod carries and everything that selects them matches on."""
    labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    return {k: v for k, v in labels.items() if k.startswith("app.kubernetes.io/")}


def webhooks_of(objects: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(kind, webhook) for every webhook of every configuration."""
    return [
        (obj["kind"], hook)
        for obj in objects
        if obj["kind"] in (MUTATING, VALIDATING)
        for hook in obj["webhooks"]
    ]


# --------------------------------------------------------------------------- validity


@pytest.mark.parametrize("version", KUBE_VERSIONS, ids=[f"Kubernetes {v}" for v in KUBE_VERSIONS])
@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=list(SCENARIOS))
def test_every_rendered_object_passes_strict_schema_validation(scenario: str, version: str) -> None:
    objects = rendered(scenario)
    assert objects
    for obj in objects:
        if obj["apiVersion"].startswith("cert-manager.io/"):
            jsonschema.validate(obj, SCHEMAS[obj["kind"]])
        elif obj["apiVersion"] == "monitoring.coreos.com/v1":
            jsonschema.validate(
                obj, {"ServiceMonitor": SERVICE_MONITOR}.get(obj["kind"], PROMETHEUS_RULE)
            )
        else:
            kubernetes_validate.validate(obj, version, strict=True)


@pytest.mark.parametrize("mode", list(MODES), ids=[f"lint, TLS {m}" for m in MODES])
def test_helm_lint_strict_finds_nothing_to_warn_about(mode: str) -> None:
    for version in KUBE_VERSIONS:
        report = helm.lint(str(CHART), MODES[mode](), strict=True, kube_version=f"v{version}")
        assert report["errors"] == []
        assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_names_and_namespaces_follow_the_release() -> None:
    objects = render(name="edge", namespace="hooks")
    for obj in objects:
        assert obj["metadata"]["name"].startswith("edge-placement-webhooks")
        if obj["kind"] not in {"ClusterRole", "ClusterRoleBinding", MUTATING, VALIDATING}:
            assert obj["metadata"]["namespace"] == "hooks"
    for _, hook in webhooks_of(objects):
        assert hook["clientConfig"]["service"]["namespace"] == "hooks"
        assert hook["namespaceSelector"]["matchExpressions"][0]["values"][0] == "hooks"


# --------------------------------------------------------------------------- the workload


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [container] = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def test_deployment_is_highly_available_and_hardened() -> None:
    objects = rendered("TLS generate")
    deployment = one(objects, "Deployment")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    container = _container(objects)
    selector = webhook_selector(objects)

    assert spec["replicas"] == 2
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    [term] = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == selector
    [spread] = pod["topologySpreadConstraints"]
    assert spread["topologyKey"] == "topology.kubernetes.io/zone"
    assert spread["whenUnsatisfiable"] == "ScheduleAnyway"
    assert spread["labelSelector"]["matchLabels"] == selector

    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["runAsNonRoot"] is True
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}

    # Probes use the plain-HTTP port: no TLS, and a kubelet needs no certificate.
    for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "metrics", "scheme": "HTTP"}
    assert container["readinessProbe"]["httpGet"] == {
        "path": "/readyz",
        "port": "metrics",
        "scheme": "HTTP",
    }
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    assert container["resources"]["limits"]["memory"] == "256Mi"


def test_the_container_serves_the_mounted_config_and_certificates() -> None:
    objects = rendered("TLS generate")
    container = _container(objects)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    args = container["args"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}

    assert args[0] == "serve"
    assert args[args.index("--bind") + 1] == "0.0.0.0:8443"
    assert args[args.index("--metrics-bind") + 1] == "0.0.0.0:8080"
    assert container["ports"] == [
        {"name": "https", "containerPort": 8443, "protocol": "TCP"},
        {"name": "metrics", "containerPort": 8080, "protocol": "TCP"},
    ]
    assert mounts["config"]["mountPath"] + "" == args[args.index("--config") + 1]
    assert mounts["tls"]["mountPath"] == args[args.index("--cert-dir") + 1]
    assert all(mounts[n]["readOnly"] for n in ("config", "tls"))
    assert volumes["config"]["configMap"]["name"] == one(objects, "ConfigMap")["metadata"]["name"]
    secret = one(objects, "Secret")
    assert volumes["tls"]["secret"]["secretName"] == secret["metadata"]["name"]
    assert "emptyDir" in volumes["tmp"]  # the only writable path, with a read-only root
    annotations = one(objects, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert len(annotations["checksum/config"]) == 64


def test_a_changed_config_rolls_the_pods() -> None:
    def checksum(values: dict[str, Any]) -> str:
        deployment = one(render(values), "Deployment")
        return str(deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"])

    off = {"plugins": {"anti-affinity-topology": {"enabled": True}}}
    assert checksum({}) != checksum(off)
    assert checksum({}) == checksum({"replicaCount": 3})


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [("TLS generate", 1), ("one replica", 0)],
    ids=["two replicas get a PodDisruptionBudget", "a single replica gets none, so drains work"],
)
def test_pod_disruption_budget(scenario: str, expected: int) -> None:
    objects = rendered(scenario)
    budgets = of_kind(objects, "PodDisruptionBudget")
    assert len(budgets) == expected
    if budgets:
        selector = webhook_selector(objects)
        assert budgets[0]["spec"] == {"minAvailable": 1, "selector": {"matchLabels": selector}}


def test_service_targets_the_pods_on_443() -> None:
    objects = rendered("TLS generate")
    service = one(objects, "Service")
    assert service["spec"]["selector"] == webhook_selector(objects)
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}
    ]


DEFAULT_KINDS = [
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "Deployment",
    MUTATING,
    "PodDisruptionBudget",
    "ResourceQuota",
    "Secret",
    "Service",
    "ServiceAccount",
    VALIDATING,
]


def test_nothing_new_renders_while_monitoring_policy_and_autoscaling_are_off() -> None:
    assert sorted(o["kind"] for o in released(rendered("TLS generate"))) == sorted(DEFAULT_KINDS)
    assert one(rendered("TLS generate"), "Deployment")["spec"]["replicas"] == 2


def test_with_them_on_exactly_their_objects_are_added() -> None:
    objects = released(rendered("ServiceMonitor, NetworkPolicy and autoscaling on"))
    kinds = sorted(o["kind"] for o in objects)
    added = ["HorizontalPodAutoscaler", "NetworkPolicy", "Service", "ServiceMonitor"]
    assert kinds == sorted(DEFAULT_KINDS + added)


def test_the_service_monitor_scrapes_the_plain_metrics_port_of_the_pods() -> None:
    objects = rendered("ServiceMonitor, NetworkPolicy and autoscaling on")
    monitor = one(objects, "ServiceMonitor")
    [metrics] = [
        s for s in of_kind(objects, "Service") if s["metadata"]["name"].endswith("-metrics")
    ]
    [webhook] = [s for s in of_kind(objects, "Service") if s is not metrics]
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]

    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= metrics["metadata"]["labels"].items()
    assert not selector.items() <= webhook["metadata"]["labels"].items()
    assert metrics["spec"]["selector"].items() <= pod_labels.items()
    assert metrics["spec"]["ports"] == [
        {"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}
    ]
    assert monitor["spec"]["endpoints"] == [
        {
            "port": "metrics",
            "path": "/metrics",
            "scheme": "http",
            "interval": "30s",
            "scrapeTimeout": "10s",
        }
    ]
    # The webhook Service keeps its single TLS port, which the webhook configurations name.
    assert [p["name"] for p in webhook["spec"]["ports"]] == ["https"]


def test_the_network_policy_admits_each_port_from_its_own_peers() -> None:
    objects = rendered("ServiceMonitor, NetworkPolicy and autoscaling on")
    policy = one(objects, "NetworkPolicy")["spec"]
    values = EXTRAS()["networkPolicy"]
    assert policy["podSelector"]["matchLabels"] == webhook_selector(objects)
    assert policy["policyTypes"] == ["Ingress"]
    probe = {
        "podSelector": {
            "matchLabels": {
                "app.kubernetes.io/instance": RELEASE,
                "app.kubernetes.io/part-of": "placement-webhooks",
            },
            "matchExpressions": [
                {
                    "key": "app.kubernetes.io/component",
                    "operator": "In",
                    "values": ["probe", "test"],
                }
            ],
        }
    }
    assert policy["ingress"] == [
        {"ports": [{"port": 8443, "protocol": "TCP"}], "from": [*values["webhook"]["from"], probe]},
        {"ports": [{"port": 8080, "protocol": "TCP"}], "from": values["metrics"]["from"]},
    ]


def test_a_port_without_peers_is_open_to_every_source() -> None:
    policy = one(render({"networkPolicy": {"enabled": True}}), "NetworkPolicy")["spec"]
    assert policy["ingress"] == [
        {"ports": [{"port": 8443, "protocol": "TCP"}]},
        {"ports": [{"port": 8080, "protocol": "TCP"}]},
    ]


HPA_CASES = [
    ("a minimum of one is raised above the budget's minAvailable of one", 1, 1, True, 2, True),
    ("a minimum above the budget is kept", 3, 1, True, 3, True),
    ("a budget of two raises the minimum to three", 2, 2, True, 3, True),
    ("without a budget a minimum of one stays one, and no budget renders", 1, 1, False, 1, False),
]


@pytest.mark.parametrize(
    ("min_replicas", "min_available", "budget", "expected", "pdb"),
    [c[1:] for c in HPA_CASES],
    ids=[c[0] for c in HPA_CASES],
)
def test_the_autoscaler_minimum_never_undercuts_the_disruption_budget(
    min_replicas: int, min_available: int, budget: bool, expected: int, pdb: bool
) -> None:
    objects = render(
        {
            "autoscaling": {"enabled": True, "minReplicas": min_replicas, "maxReplicas": 2},
            "podDisruptionBudget": {"enabled": budget, "minAvailable": min_available},
        }
    )
    hpa = one(objects, "HorizontalPodAutoscaler")["spec"]
    assert hpa["minReplicas"] == expected
    assert hpa["maxReplicas"] == max(expected, 2)
    assert hpa["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": one(objects, "Deployment")["metadata"]["name"],
    }
    assert hpa["metrics"][0]["resource"]["name"] == "cpu"
    assert "replicas" not in one(objects, "Deployment")["spec"]  # the autoscaler owns it
    budgets = of_kind(objects, "PodDisruptionBudget")
    assert len(budgets) == int(pdb)
    if budgets:
        assert hpa["minReplicas"] > budgets[0]["spec"]["minAvailable"]


def test_rbac_grants_only_reads_of_runtimeclasses_and_namespaces() -> None:
    objects = released(rendered("scheduling and naming overrides"))
    role = one(objects, "ClusterRole")
    binding = one(objects, "ClusterRoleBinding")
    account = one(objects, "ServiceAccount")
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]

    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == {
        (group, resource, verb)
        for group, resource in (("", "namespaces"), ("node.k8s.io", "runtimeclasses"))
        for verb in ("get", "list", "watch")
    }
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "hooks", "namespace": NAMESPACE}
    ]
    assert account["metadata"]["name"] == pod["serviceAccountName"] == "hooks"
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["affinity"] == OPTIONS["scheduling and naming overrides"]()["affinity"]


# --------------------------------------------------------------------------- config


def _config_document(objects: list[dict[str, Any]]) -> dict[str, Any]:
    data = yaml.safe_load(one(objects, "ConfigMap")["data"]["config.yaml"])
    assert isinstance(data, dict)
    return data


def test_actions_overrides_and_exceptions_reach_the_servers_config() -> None:
    document = _config_document(
        rendered("a staged rollout: actions, overrides, monitor mode and exceptions")
    )
    known = {k: v for k, v in document["plugins"].items() if k in REGISTRY}
    config = load_config({**document, "plugins": known}, REGISTRY)
    dedicated = config.plugins["dedicated-nodes"]
    assert (dedicated.action, dedicated.action_overrides[0].action) == ("warn", "enforce")
    assert config.plugins["extended-resource-toleration"].mutation == "monitor"
    assert config.exceptions[0].name == "dcgm-exporter"


def test_no_exceptions_key_without_exceptions() -> None:
    assert "exceptions" not in _config_document(rendered("TLS generate"))


def test_the_configmap_is_a_config_the_server_accepts() -> None:
    document = _config_document(rendered("dedicated-nodes on, extended-resource-toleration off"))
    assert document["cluster"] == {"source": "in-cluster", "lookupTimeoutSeconds": 2}
    assert document["plugins"]["dedicated-nodes"]["enabled"] is True
    assert document["plugins"]["default-toleration-seconds"]["notReadySeconds"] == 300
    known = {k: v for k, v in document["plugins"].items() if k in REGISTRY}
    config = load_config({**document, "plugins": known}, REGISTRY)
    assert config.plugins["extended-resource-toleration"].enabled is False
    assert config.cluster.source == "in-cluster"


# --------------------------------------------------------------------------- plugins vs registry


#: Plugins are added on their own; until all of the product's are registered this check
#: is expected to fail, and it becomes a real check (pass or fail) once they are.
REGISTRY_LACKS_PLUGINS = pytest.mark.xfail(
    bool(MISSING_FROM_REGISTRY),
    reason=f"plugins not in this build's registry yet: {', '.join(MISSING_FROM_REGISTRY)}",
    strict=False,
)


@REGISTRY_LACKS_PLUGINS
def test_values_list_exactly_the_registered_plugins_in_chain_order() -> None:
    assert list(values_file()["plugins"]) == list(REGISTRY.names)
    assert [row["name"] for row in chart_table()] == list(REGISTRY.names)


def test_values_and_chart_table_name_the_plugins_of_the_product() -> None:
    assert list(values_file()["plugins"]) == list(PRODUCT_PLUGINS)
    assert [row["name"] for row in chart_table()] == list(PRODUCT_PLUGINS)


def test_the_chart_table_says_what_the_registry_says_for_every_registered_plugin() -> None:
    table = {row["name"]: row for row in chart_table()}
    expected = yaml.safe_dump({"plugins": plugin_table(REGISTRY)}, sort_keys=False)
    for row in plugin_table(REGISTRY):
        assert table.get(row["name"]) == row, (
            f"charts/placement-webhooks/files/plugins.yaml is out of date for {row['name']}; "
            f"the registry says:\n{expected}"
        )


def test_values_enable_what_the_server_enables_by_default() -> None:
    values = values_file()["plugins"]
    for plugin in REGISTRY:
        assert values[plugin.name]["enabled"] is plugin.enabled_by_default, plugin.name
    known = {k: v for k, v in values.items() if k in REGISTRY}
    defaults = load_config(None, REGISTRY)
    assert load_config({"plugins": known}, REGISTRY) == defaults


ENABLED_SETS = [
    list(PRODUCT_PLUGINS[1:]),
    list(PRODUCT_PLUGINS),
    ["default-toleration-seconds"],
    ["daemonset-tolerations", "taint-toleration-rules"],
    ["runtime-class", "dedicated-nodes", "anti-affinity-topology"],
]


#: Settings that switch a validating half on or off (``validateActive`` in the table).
HALF_SETTINGS = {
    "as the values give them": {},
    "extended-resource-toleration enforcing": {
        "extended-resource-toleration": {
            "enforce": {"guarded": [{"taintKey": "nvidia.com/gpu", "earnedBy": {}}]}
        }
    },
    "dedicated-nodes not enforcing": {"dedicated-nodes": {"enforce": False}},
}


@pytest.mark.parametrize("mutating", ["Ignore", "Fail"], ids=["mutation fails open", "closed"])
@pytest.mark.parametrize("halves", list(HALF_SETTINGS), ids=list(HALF_SETTINGS))
@pytest.mark.parametrize("nodes", [False, True], ids=["Nodes off", "Nodes on"])
@pytest.mark.parametrize("per_plugin", [False, True], ids=["one webhook per phase", "per plugin"])
@pytest.mark.parametrize(
    "enabled",
    ENABLED_SETS,
    ids=[
        "the defaults",
        "everything",
        "only default-toleration-seconds",
        "the DaemonSet defaults and the taint rules",
        "runtime-class, dedicated-nodes and anti-affinity",
    ],
)
def test_template_rules_and_conditions_equal_the_python_ones_for_the_same_values(
    enabled: list[str], per_plugin: bool, nodes: bool, halves: str, mutating: str
) -> None:
    plugins: dict[str, dict[str, Any]] = {
        name: {"enabled": name in enabled, **HALF_SETTINGS[halves].get(name, {})}
        for name in PRODUCT_PLUGINS
    }
    values = {
        "plugins": plugins,
        "webhooks": {
            "perPlugin": per_plugin,
            "nodes": {"enabled": nodes},
            "mutating": {"failurePolicy": mutating},
        },
    }
    objects = render(values, upgrade=True)
    settings = WebhookSettings(
        name=RELEASE,
        per_plugin=per_plugin,
        nodes=nodes,
        mutating_failure_policy="Fail" if mutating == "Fail" else "Ignore",
    )
    config = load_config({"plugins": plugins}, REGISTRY)
    table = without_halves(chart_table(), inactive_halves(REGISTRY, config))
    for kind, phase in ((MUTATING, "mutate"), (VALIDATING, "validate")):
        configs = of_kind(objects, kind)
        expected = {
            hook["name"]: (
                hook["clientConfig"]["service"]["path"],
                hook["rules"],
                [c["name"] for c in hook["matchConditions"]],
                hook["matchConditions"][-1]["expression"],
            )
            for hook in webhooks_for(settings, table, phase, enabled)
        }
        got = {
            hook["name"]: (
                hook["clientConfig"]["service"]["path"],
                hook["rules"],
                [c["name"] for c in hook["matchConditions"]],
                hook["matchConditions"][-1]["expression"],
            )
            for config in configs
            for hook in config["webhooks"]
        }
        assert got == expected
        assert len(configs) == (1 if expected else 0)
        assert all(
            "nodes" not in rule["resources"]
            for name, (_, rule_list, _, _) in got.items()
            if not name.startswith("nodes.")
            for rule in rule_list
        )


def test_no_validating_configuration_when_no_validating_plugin_is_enabled() -> None:
    validators = {row["name"] for row in chart_table() if "validate" in row}
    objects = render({"plugins": {name: {"enabled": False} for name in validators}})
    assert of_kind(objects, VALIDATING) == []
    assert len(of_kind(objects, MUTATING)) == 1


# --------------------------------------------------------------------------- webhook settings


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=list(SCENARIOS))
def test_webhook_settings(scenario: str) -> None:
    values = SCENARIOS[scenario]()
    # As `helm upgrade` renders them: the configured policies (an install starts fail-open).
    objects = render(values, upgrade=True)
    [service] = [s for s in of_kind(objects, "Service") if s["spec"]["ports"][0]["name"] == "https"]
    hooks = webhooks_of(objects)
    per_plugin = values.get("webhooks", {}).get("perPlugin", False)
    conditions = values.get("webhooks", {}).get("matchConditions", {}).get("enabled", True)
    mutating_policy = values.get("webhooks", {}).get("mutating", {}).get("failurePolicy", "Ignore")
    assert {kind for kind, _ in hooks} == {MUTATING, VALIDATING}
    for kind, hook in hooks:
        phase = "mutate" if kind == MUTATING else "validate"
        assert hook["sideEffects"] == "None"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["timeoutSeconds"] == 5
        assert hook["matchPolicy"] == "Equivalent"
        assert hook["clientConfig"]["service"]["name"] == service["metadata"]["name"]
        assert hook["clientConfig"]["service"]["port"] == 443
        path = hook["clientConfig"]["service"]["path"]
        if per_plugin:
            assert path.startswith(f"/{phase}/")
        else:
            assert path == f"/{phase}"
        selector = values.get("webhooks", {}).get("namespaceSelector", {})
        assert hook["namespaceSelector"] == namespace_selector(
            WebhookSettings(namespace=NAMESPACE, namespace_selector=selector)
        )
        assert ("matchConditions" in hook) is conditions
        if kind == MUTATING:
            assert hook["failurePolicy"] == mutating_policy
            assert hook["reinvocationPolicy"] == "IfNeeded"
        else:
            # Nodes have a webhook of their own, Ignore by default (the API server validates
            # their taints itself); every other validating webhook fails closed.
            expected = "Ignore" if hook["name"].startswith("nodes.") else "Fail"
            assert hook["failurePolicy"] == expected
            assert "reinvocationPolicy" not in hook
    if not per_plugin:
        nodes = values.get("webhooks", {}).get("nodes", {}).get("enabled", False)
        assert [kind for kind, _ in hooks] == [MUTATING, VALIDATING] + [VALIDATING] * nodes


# --------------------------------------------------------------------------- TLS modes


def _load(pem: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(pem)


def test_generated_tls_chains_to_the_ca_bundle_rendered_with_it() -> None:
    objects = rendered("TLS generate")
    secret = one(objects, "Secret")
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    assert secret["type"] == "kubernetes.io/tls"
    bundles = {hook["clientConfig"]["caBundle"] for _, hook in webhooks_of(objects)}
    assert bundles == {secret["data"]["ca.crt"]}

    [ca] = _load(base64.b64decode(bundles.pop()))
    [leaf] = _load(data["tls.crt"])
    leaf.verify_directly_issued_by(ca)
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == pki.service_hosts(RELEASE, NAMESPACE)
    key = serialization.load_pem_private_key(data["tls.key"], password=None)
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    assert key.public_key().public_bytes(der, spki) == leaf.public_key().public_bytes(der, spki)


def test_offline_renders_generate_a_new_chain_each_time() -> None:
    # `helm template` cannot look the Secret up; on a cluster `helm upgrade` reuses it.
    generate = {"tls": {"mode": "generate"}}
    first, second = one(render(generate), "Secret"), one(render(generate), "Secret")
    assert first["data"]["ca.crt"] != second["data"]["ca.crt"]


@pytest.mark.parametrize(
    "scenario",
    ["TLS certManager", "TLS certManager with an issuer"],
    ids=["with the chart's own CA issuer", "with the operator's issuer"],
)
def test_cert_manager_issues_the_secret_and_injects_the_ca(scenario: str) -> None:
    objects = rendered(scenario)
    certificates = {c["metadata"]["name"]: c for c in of_kind(objects, "Certificate")}
    serving = certificates[f"{RELEASE}-tls"]
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "tls")

    assert of_kind(objects, "Secret") == []
    assert volume["secret"]["secretName"] == serving["spec"]["secretName"]
    assert serving["spec"]["dnsNames"] == pki.service_hosts(RELEASE, NAMESPACE)
    assert "server auth" in serving["spec"]["usages"]
    for config in of_kind(objects, MUTATING) + of_kind(objects, VALIDATING):
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
            f"{NAMESPACE}/{RELEASE}-tls"
        )
        assert all("caBundle" not in h["clientConfig"] for h in config["webhooks"])
    issuers = {i["metadata"]["name"]: i for i in of_kind(objects, "Issuer")}
    if scenario == "TLS certManager":
        root = certificates[f"{RELEASE}-root"]
        assert root["spec"]["isCA"] is True
        assert issuers[f"{RELEASE}-ca"]["spec"] == {
            "ca": {"secretName": root["spec"]["secretName"]}
        }
        assert root["spec"]["issuerRef"]["name"] == f"{RELEASE}-selfsigned"
        assert issuers[f"{RELEASE}-selfsigned"]["spec"] == {"selfSigned": {}}
        assert serving["spec"]["issuerRef"]["name"] == f"{RELEASE}-ca"
    else:
        assert issuers == {}
        assert set(certificates) == {f"{RELEASE}-tls"}
        assert serving["spec"]["issuerRef"] == {
            "name": "corp-ca",
            "kind": "ClusterIssuer",
            "group": "cert-manager.io",
        }


def test_an_existing_secret_is_mounted_and_its_ca_becomes_the_bundle() -> None:
    objects = rendered("TLS secret")
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == "my-tls"
    assert of_kind(objects, "Secret") == []
    bundles = {hook["clientConfig"]["caBundle"] for _, hook in webhooks_of(objects)}
    assert bundles == {base64.b64encode(ca_pem().encode()).decode()}
    for config in of_kind(objects, MUTATING) + of_kind(objects, VALIDATING):
        assert "cert-manager.io/inject-ca-from" not in config["metadata"]["annotations"]


def test_an_injected_ca_bundle_is_never_templated() -> None:
    objects = rendered("TLS secret, caBundle injected")
    assert all("caBundle" not in hook["clientConfig"] for _, hook in webhooks_of(objects))
    assert "webhook-config --inject" in notes(MODES["secret, caBundle injected"]())


BAD_VALUES = [
    ({"tls": {"mode": "selfsigned"}}, "/tls/mode"),
    ({"tls": {"mode": "secret"}}, "/tls/secret/name"),
    ({"tls": {"mode": "secret", "secret": {"name": "x"}}}, "tls.secret.caBundle"),
    (
        {"tls": {"mode": "secret", "secret": {"name": "x", "caBundle": "LS0tLS1CRUdJTg=="}}},
        "caBundle",
    ),
    ({"plugins": {"default-tolerations": {"enabled": True}}}, "default-tolerations"),
    ({"plugins": {"runtime-class": {"enabled": "yes"}}}, "enabled"),
    ({"webhooks": {"mutating": {"failurePolicy": "ignore"}}}, "failurePolicy"),
    ({"webhooks": {"timeoutSeconds": 31}}, "timeoutSeconds"),
    ({"replicas": 3}, "replicas"),
    ({"networkPolicy": {"enabled": True, "webhook": {"from": [{"cidr": "10.0.0.0/8"}]}}}, "cidr"),
    ({"metrics": {"serviceMonitor": {"interval": "30 seconds"}}}, "interval"),
    ({"autoscaling": {"targetCPUUtilizationPercentage": 150}}, "targetCPUUtilizationPercentage"),
    ({"plugins": {"extended-resource-toleration": {"enforce": True}}}, "enforce"),
    (
        {"plugins": {"extended-resource-toleration": {"enforce": {"guarded": [{"earnedBy": {}}]}}}},
        "enforce",
    ),
]


@pytest.mark.parametrize(
    ("values", "named"),
    BAD_VALUES,
    ids=[
        "an unknown TLS mode is refused",
        "secret mode without a Secret name is refused",
        "secret mode without a caBundle is refused unless it is injected",
        "a base64 caBundle is refused: the chart wants PEM",
        "an unknown plugin name is refused",
        "an enabled that is not a boolean is refused",
        "a failurePolicy in the wrong case is refused",
        "a timeout above the API server's 30 s is refused",
        "a misspelt top-level key is refused",
        "a network policy peer that is not a NetworkPolicyPeer is refused",
        "a scrape interval that is not a duration is refused",
        "a CPU target above 100 percent is refused",
        "enforce: true, which names no taint key, is refused",
        "a guarded entry without its taintKey is refused",
    ],
)
def test_bad_values_are_refused_naming_the_key(values: dict[str, Any], named: str) -> None:
    with pytest.raises(helm.HelmError) as caught:
        render(values)
    assert named in str(caught.value)


# --------------------------------------------------------------------------- chart == CLI


SELECTOR = {
    "matchLabels": {"placement-webhooks.io/enabled": "true"},
    "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["sandbox"]}],
}
OBJECTS = {"matchExpressions": [{"key": "k8s-app", "operator": "NotIn", "values": ["calico"]}]}

CLI_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("the defaults match", {}, []),
    ("per-plugin webhooks match", {"webhooks": {"perPlugin": True}}, ["--per-plugin"]),
    (
        "without matchConditions they match",
        {"webhooks": {"matchConditions": {"enabled": False}}},
        ["--no-match-conditions"],
    ),
    (
        "changed policies, timeout and namespaces match",
        {
            "webhooks": {
                "mutating": {"failurePolicy": "Fail"},
                "validating": {"failurePolicy": "Ignore"},
                "timeoutSeconds": 3,
                "excludeNamespaces": ["kube-system", "kube-node-lease", "monitoring"],
            }
        },
        [
            "--mutating-failure-policy=Fail",
            "--validating-failure-policy=Ignore",
            "--timeout=3",
            "--exclude-namespace=monitoring",
        ],
    ),
    (
        "the Node webhook matches, with its own policy",
        {"webhooks": {"nodes": {"enabled": True, "failurePolicy": "Fail"}}},
        ["--nodes", "--nodes-failure-policy=Fail"],
    ),
    (
        "per-plugin webhooks and the Node webhook match",
        {"webhooks": {"perPlugin": True, "nodes": {"enabled": True}}},
        ["--per-plugin", "--nodes"],
    ),
    (
        "namespace and object selectors match",
        {"webhooks": {"namespaceSelector": SELECTOR, "objectSelector": OBJECTS}},
        [
            f"--namespace-selector={json.dumps(SELECTOR)}",
            f"--object-selector={json.dumps(OBJECTS)}",
        ],
    ),
    (
        "skipped users and groups, and unchanged UPDATEs sent, match",
        {
            "webhooks": {
                "matchConditions": {
                    "skipUnchangedUpdates": False,
                    "skipUsers": ["system:serviceaccount:kube-system:cluster-autoscaler"],
                    "skipGroups": ["system:serviceaccounts:karpenter"],
                }
            }
        },
        [
            "--send-unchanged-updates",
            "--skip-user=system:serviceaccount:kube-system:cluster-autoscaler",
            "--skip-group=system:serviceaccounts:karpenter",
        ],
    ),
    (
        "labels and annotations match",
        {"webhooks": {"labels": {"team": "platform"}, "annotations": {"owner": "sre"}}},
        ["--label=team=platform", "--annotation=owner=sre"],
    ),
]


@pytest.mark.parametrize(
    ("values", "args"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES]
)
def test_webhook_config_renders_what_the_chart_renders(
    values: dict[str, Any], args: list[str]
) -> None:
    plugins = {name: {"enabled": False} for name in MISSING_FROM_REGISTRY}
    chart_values = {
        **values,
        "plugins": plugins,
        "tls": {"mode": "secret", "secret": {"name": "my-tls", "caBundle": ca_pem()}},
    }
    objects = render(chart_values, upgrade=True)
    chart = [o for o in objects if o["kind"] in (MUTATING, VALIDATING)]
    result = invoke_cli(
        [
            "webhook-config",
            f"--name={RELEASE}",
            f"--namespace={NAMESPACE}",
            f"--service={RELEASE}",
            f"--ca-file={ca_dir() / 'ca.crt'}",
            "--annotation=argocd.argoproj.io/sync-wave=1",
            *args,
        ],
    )
    assert result.exit_code == 0, result.output
    cli = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    assert [(o["kind"], o["webhooks"]) for o in cli] == [(o["kind"], o["webhooks"]) for o in chart]
    assert [o["metadata"]["name"] for o in cli] == [o["metadata"]["name"] for o in chart]
    for ours, theirs in zip(cli, chart, strict=True):
        assert ours["metadata"]["annotations"] == theirs["metadata"]["annotations"]
        assert ours["metadata"].get("labels", {}).items() <= theirs["metadata"]["labels"].items()


# --------------------------------------------------------------------------- upgrades

LOOKUP = 'lookup "v1" "Secret" .Release.Namespace $secretName'


def _chart_with_existing_secret(tmp_path: Path, data: dict[str, bytes]) -> Path:
    """A copy of the chart whose Secret lookup answers with ``data`` (:func:`chart_finding`)."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{RELEASE}-tls", "namespace": NAMESPACE},
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }
    return chart_finding(tmp_path, "webhooks.yaml", LOOKUP, secret)


GENERATE = {"tls": {"mode": "generate"}}


def _previous_chain(tmp_path: Path) -> dict[str, bytes]:
    paths = pki.generate(tmp_path / "previous", hosts=pki.service_hosts(RELEASE, NAMESPACE))
    return {
        "ca.crt": paths.ca.read_bytes(),
        "tls.crt": paths.cert.read_bytes(),
        "tls.key": paths.key.read_bytes(),
    }


def _tls(objects: list[dict[str, Any]]) -> tuple[dict[str, bytes], set[str]]:
    secret = one(objects, "Secret")
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    return data, {hook["clientConfig"]["caBundle"] for _, hook in webhooks_of(objects)}


def test_an_upgrade_reuses_the_generated_chain_and_keeps_the_ca_bundle(tmp_path: Path) -> None:
    previous = _previous_chain(tmp_path)
    objects = render(GENERATE, chart_dir=_chart_with_existing_secret(tmp_path, previous))
    data, bundles = _tls(objects)
    assert data == previous
    assert bundles == {base64.b64encode(previous["ca.crt"]).decode()}


def test_regenerating_trusts_the_old_and_the_new_ca_until_the_pods_reload(tmp_path: Path) -> None:
    previous = _previous_chain(tmp_path)
    chart_dir = _chart_with_existing_secret(tmp_path, previous)
    regenerate = {"tls": {"mode": "generate", "generate": {"regenerate": True}}}
    objects = render(regenerate, chart_dir=chart_dir)
    data, bundles = _tls(objects)
    [bundle] = bundles
    new_ca, old_ca = _load(base64.b64decode(bundle))
    assert data["ca.crt"] != previous["ca.crt"]
    assert old_ca == _load(previous["ca.crt"])[0]
    assert new_ca == _load(data["ca.crt"])[0]
    _load(data["tls.crt"])[0].verify_directly_issued_by(new_ca)
    _load(previous["tls.crt"])[0].verify_directly_issued_by(old_ca)


def test_an_incomplete_existing_secret_is_replaced_by_a_new_chain(tmp_path: Path) -> None:
    previous = _previous_chain(tmp_path)
    del previous["tls.key"]
    objects = render(GENERATE, chart_dir=_chart_with_existing_secret(tmp_path, previous))
    data, bundles = _tls(objects)
    assert data["ca.crt"] != previous["ca.crt"]
    assert bundles == {base64.b64encode(data["ca.crt"]).decode()}


@pytest.mark.parametrize(
    ("settings", "granted"),
    [
        ({}, False),
        ({"deviceClaims": True}, True),
        ({"enforce": {"guarded": [{"taintKey": "nvidia.com/gpu"}]}}, True),
        ({"enabled": False, "deviceClaims": True}, False),
    ],
    ids=[
        "the defaults read no DRA objects",
        "deviceClaims may read classes, claims and templates",
        "enforce may too, to judge claimed pods",
        "a disabled plugin needs none",
    ],
)
def test_rbac_grants_dra_reads_only_when_a_setting_needs_them(
    settings: dict[str, Any], granted: bool
) -> None:
    objects = render({"plugins": {"extended-resource-toleration": settings}})
    rules = one(released(objects), "ClusterRole")["rules"]
    dra = [r for r in rules if r["apiGroups"] == ["resource.k8s.io"]]
    expected = [
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["deviceclasses", "resourceclaims", "resourceclaimtemplates"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    assert dra == (expected if granted else [])
    config = yaml.safe_load(one(objects, "ConfigMap")["data"]["config.yaml"])
    section = config["plugins"]["extended-resource-toleration"]
    assert section.get("deviceClaims", False) is settings.get("deviceClaims", False)


def test_the_chart_deploys_the_version_the_package_says() -> None:
    """The image tag defaults to appVersion, so it must be the one version string; the
    chart's own version moves with it until the chart is released on its own."""
    import webhooks

    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    assert chart["appVersion"] == webhooks.__version__
    assert chart["version"] == webhooks.__version__
