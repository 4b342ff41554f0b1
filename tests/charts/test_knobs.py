"""Operator knobs: priority and its quota, extra flags and environment, host networking, the
pod security context, the image by digest and through a mirror registry."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from tests.charts.render import NAMESPACE, of_kind, one, render
from webhooks.cli.serve import serve

DIGEST = "sha256:" + "0123456789abcdef" * 4


def pod_spec(objects: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = one(objects, "Deployment")["spec"]["template"]["spec"]
    return spec


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [server] = pod_spec(objects)["containers"]
    return server


def test_the_pods_are_cluster_critical_with_the_quota_that_lets_them_be() -> None:
    objects = render()
    assert pod_spec(objects)["priorityClassName"] == "system-cluster-critical"
    quota = one(objects, "ResourceQuota")
    assert quota["metadata"]["namespace"] == NAMESPACE
    assert quota["spec"]["scopeSelector"] == {
        "matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["system-cluster-critical"]}
        ]
    }
    assert quota["spec"]["hard"] == {"pods": "1k"}


@pytest.mark.parametrize(
    ("values", "namespace", "quotas"),
    [
        ({"priorityClassName": "system-node-critical"}, NAMESPACE, 1),
        ({"priorityClassName": "infra-high"}, NAMESPACE, 0),
        ({"priorityClassName": ""}, NAMESPACE, 0),
        ({"priorityClassQuota": {"create": False}}, NAMESPACE, 0),
        ({}, "kube-system", 0),
    ],
    ids=[
        "system-node-critical needs the quota too",
        "a class of the cluster's own needs none",
        "no class needs none",
        "an admin-managed quota is not rendered",
        "kube-system needs none",
    ],
)
def test_the_quota_renders_only_where_the_api_server_asks_for_it(
    values: dict[str, Any], namespace: str, quotas: int
) -> None:
    objects = render(values, namespace=namespace)
    assert len(of_kind(objects, "ResourceQuota")) == quotas
    spec = pod_spec(objects)
    assert spec.get("priorityClassName", "") == values.get(
        "priorityClassName", "system-cluster-critical"
    )


def test_extra_args_follow_the_charts_and_serve_accepts_them() -> None:
    extra = ["--io-timeout=5", "--max-connections", "2000", "--no-log-reviews"]
    args = container(render({"extraArgs": extra}))["args"]
    assert args[-len(extra) :] == extra
    command, *rest = args
    assert command == "serve"
    context = serve.make_context("serve", list(rest))
    assert context.params["io_timeout"] == 5
    assert context.params["max_connections"] == 2000
    assert context.params["log_reviews"] is False


def test_extra_env_reaches_the_server_container_only_when_given() -> None:
    env = [{"name": "GOMAXPROCS", "value": "2"}, {"name": "TZ", "value": "UTC"}]
    assert container(render({"extraEnv": env}))["env"] == env
    assert "env" not in container(render())


def test_host_networking_uses_the_node_dns_policy_and_the_configured_ports() -> None:
    objects = render({"hostNetwork": True, "server": {"port": 10443}, "metrics": {"port": 10080}})
    spec = pod_spec(objects)
    assert spec["hostNetwork"] is True
    assert spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    ports = {p["name"]: p["containerPort"] for p in container(objects)["ports"]}
    assert ports == {"https": 10443, "metrics": 10080}
    args = container(objects)["args"]
    assert args[args.index("--bind") + 1] == "0.0.0.0:10443"
    assert "hostNetwork" not in pod_spec(render())


def test_the_pod_security_context_is_a_value_and_the_container_stays_hardened() -> None:
    # Helm merges a map value into the default: keys given win, a key set to null goes.
    context = {"runAsUser": 1000, "fsGroup": 2000, "seccompProfile": None}
    objects = render({"podSecurityContext": context})
    assert pod_spec(objects)["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 65532,
        "fsGroup": 2000,
    }
    assert container(objects)["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod_spec(render())["securityContext"]["runAsUser"] == 65532


@pytest.mark.parametrize(
    ("values", "image"),
    [
        ({}, "placement-webhooks:0.1.0"),
        ({"image": {"tag": "0.2.0"}}, "placement-webhooks:0.2.0"),
        ({"image": {"digest": DIGEST, "tag": "0.2.0"}}, f"placement-webhooks@{DIGEST}"),
        ({"image": {"registry": "registry.example"}}, "registry.example/placement-webhooks:0.1.0"),
        (
            {"global": {"imageRegistry": "mirror.example/"}, "image": {"registry": "r.example"}},
            "mirror.example/placement-webhooks:0.1.0",
        ),
    ],
    ids=[
        "by default the chart's appVersion",
        "a tag",
        "a digest wins over the tag",
        "a registry goes before the repository",
        "the global registry wins over the image's",
    ],
)
def test_the_image_reference(values: dict[str, Any], image: str) -> None:
    objects = render({**values, "audit": {"enabled": True}})
    assert container(objects)["image"] == image
    cronjob = one(objects, "CronJob")
    [audit] = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert audit["image"] == image


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"image": {"digest": "sha256:abc"}}, "digest"),
        ({"image": {"digest": "latest"}}, "digest"),
        ({"extraArgs": [""]}, "extraArgs"),
        ({"extraEnv": [{"value": "x"}]}, "name"),
        ({"hostNetwork": "yes"}, "hostNetwork"),
        ({"priorityClassQuota": {"pods": "lots"}}, "pods"),
    ],
    ids=[
        "a short digest is refused",
        "a tag given as digest is refused",
        "an empty extra argument is refused",
        "an environment variable without a name is refused",
        "hostNetwork must be a boolean",
        "a quota that is not a quantity is refused",
    ],
)
def test_bad_knobs_are_refused(values: dict[str, Any], named: str) -> None:
    with pytest.raises(helm.HelmError) as caught:
        render(values)
    assert named in str(caught.value)


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod spec an object carries (a Pod's own, a template's, a CronJob's job's)."""
    spec = obj.get("spec") or {}
    if obj["kind"] == "Pod":
        return [spec]
    if obj["kind"] == "CronJob":
        return [spec["jobTemplate"]["spec"]["template"]["spec"]]
    template = spec.get("template")
    return [template["spec"]] if isinstance(template, dict) else []


def test_every_container_the_chart_runs_takes_the_digest_and_the_registry() -> None:
    """Hooks, the test pod, the audit, init containers: one reference, so a mirror and a
    pinned digest reach every pod an install starts, not only the server's."""
    values = {
        "image": {"digest": DIGEST},
        "global": {"imageRegistry": "mirror.example"},
        "audit": {"enabled": True},
    }
    images = {
        (obj["kind"], c["name"]): c["image"]
        for obj in render(values)
        for spec in _pod_specs(obj)
        for c in [*spec.get("initContainers", []), *spec["containers"]]
    }
    kinds = {kind for kind, _ in images}
    assert {"Deployment", "CronJob", "Job", "Pod"} <= kinds, kinds
    assert set(images.values()) == {f"mirror.example/placement-webhooks@{DIGEST}"}, images


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param({}, [], id="by default neither flag is passed: text logs, no tracing"),
        pytest.param(
            {"logFormat": "json"}, ["--log-format", "json"], id="logFormat json is passed to serve"
        ),
        pytest.param(
            {"otlp": {"endpoint": "http://otel-collector.observability:4318"}},
            ["--otlp-endpoint", "http://otel-collector.observability:4318"],
            id="an OTLP endpoint is passed to serve",
        ),
    ],
)
def test_log_format_and_otlp_endpoint_reach_serve(
    values: dict[str, Any], expected: list[str]
) -> None:
    args = container(render(values))["args"]
    for flag in ("--log-format", "--otlp-endpoint"):
        if flag not in expected:
            assert flag not in args
    for flag, value in zip(expected[::2], expected[1::2], strict=True):
        assert args[args.index(flag) + 1] == value
    context = serve.make_context("serve", list(args[1:]))
    assert context.params["log_format"] == values.get("logFormat", "text")
    assert context.params["otlp_endpoint"] == values.get("otlp", {}).get("endpoint", "")


@pytest.mark.parametrize(
    ("values", "named"),
    [
        pytest.param({"logFormat": "yaml"}, "logFormat", id="a log format serve lacks is refused"),
        pytest.param(
            {"otlp": {"endpoint": "collector:4318"}},
            "endpoint",
            id="an OTLP endpoint that is no http(s) URL is refused",
        ),
    ],
)
def test_bad_log_and_trace_values_are_refused(values: dict[str, Any], named: str) -> None:
    with pytest.raises(helm.HelmError) as caught:
        render(values)
    assert named in str(caught.value)
