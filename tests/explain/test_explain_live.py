"""``explain --kubeconfig/--context``: nodes, and the pods of -n, read from a fake API server."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench import stored as cluster
from tests import dra
from tests.command import invoke_cli
from tests.fakeapi import FakeApiServer, refused_port, running, write_kubeconfig
from webhooks.cluster import listing

GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
GPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers: [{name: t, image: trainer}]
"""


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    objects = [
        cluster.namespace("shop"),
        cluster.namespace("ml", **{"placement-webhooks.io/dedicated": "gpu"}),
        *cluster.deployment_with_pods("web", "shop", 3),
        cluster.pod("solo", "shop", node="gpu-1"),
        cluster.pod("done", "shop", phase="Succeeded"),
        cluster.node("worker-1"),
        cluster.node("gpu-1", [GPU_TAINT], dedicated="gpu"),
    ]
    with running(*objects) as fake:
        yield fake


@pytest.fixture
def explain(api: FakeApiServer, tmp_path: Path) -> Callable[..., tuple[int, str, str]]:
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    config = tmp_path / "config.yaml"
    config.write_text("plugins:\n  dedicated-nodes: {enabled: true}\n", encoding="utf-8")

    def invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
        argv = ["explain", "--kubeconfig", str(kubeconfig), "--config", str(config), *args]
        result = invoke_cli(argv, stdin=stdin)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout, result.stderr

    return invoke


def test_the_nodes_come_from_the_cluster(explain: Callable[..., Any]) -> None:
    code, out, _ = explain()
    assert code == 0
    assert out.splitlines()[:4] == [
        "Nodes: 2 in 1 zone",
        "  gpu-1: zone (unlabelled), Ready",
        "    taint dedicated=gpu:NoSchedule",
        "  worker-1: zone (unlabelled), Ready",
    ]


def test_files_and_the_cluster_give_the_same_answer(
    explain: Callable[..., Any], api: FakeApiServer, tmp_path: Path
) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump({"kind": "List", "items": api.stored("nodes")}))
    namespaces = tmp_path / "namespaces.yaml"
    namespaces.write_text(yaml.safe_dump({"kind": "List", "items": api.stored("namespaces")}))
    _, live, _ = explain("-n", "ml", "-", stdin=GPU_POD)
    config = ["--config", str(tmp_path / "config.yaml")]
    offline = invoke_cli(
        ["explain", "--nodes", str(nodes), "--objects", str(namespaces), "-n", "ml", "-", *config],
        stdin=GPU_POD,
    )
    assert offline.exit_code == 0
    assert live == offline.stdout


def test_manifests_are_admitted_with_the_clusters_namespaces(explain: Callable[..., Any]) -> None:
    code, out, _ = explain("-n", "ml", "-", stdin=GPU_POD)
    assert code == 0
    assert "admission: dedicated-nodes: added toleration dedicated=gpu:NoSchedule" in out
    assert "fits 1 of 2 nodes: gpu-1" in out


def test_with_a_namespace_and_no_path_its_pods_are_placed_one_per_controller(
    explain: Callable[..., Any],
) -> None:
    code, out, err = explain("-n", "shop")
    assert code == 0
    placed = [line for line in out.splitlines() if line.startswith("Pod ")]
    assert placed == [
        "Pod shop/solo (api:pods/shop/solo)",
        "Pod shop/web-5d8f7c9b4-00000 (api:pods/shop/web-5d8f7c9b4-00000)",
    ]
    assert err.splitlines() == [
        "pods of ReplicaSet shop/web-5d8f7c9b4: 1 of 3 explained (they share its template)",
        "1 pods left out: finished (Succeeded)",
    ]


def test_a_pod_is_placed_anew_not_where_it_was_bound(explain: Callable[..., Any]) -> None:
    _, out, _ = explain("-n", "shop")
    solo = out[out.index("Pod shop/solo") :]
    assert "fits 1 of 2 nodes: worker-1" in solo, "its binding to gpu-1 is not a requirement"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "nodes.yaml"], "--nodes and --kubeconfig/--context both give the nodes"),
        (["--fail", "worker-9"], "--fail: no node named worker-9 in the cluster"),
    ],
    ids=["files and a cluster at once are refused", "--fail names a node of the cluster"],
)
def test_misuse_is_one_line(explain: Callable[..., Any], args: list[str], message: str) -> None:
    code, out, err = explain(*args)
    assert (code, out) == (2, "")
    assert err == f"placement-webhooks: {message}" + err.split(message, 1)[1]
    assert err.count("\n") == 1


def test_without_nodes_or_a_cluster_it_says_what_to_give() -> None:
    result = invoke_cli(["explain"])
    assert result.exit_code == 2
    assert result.stderr == (
        "placement-webhooks: give --nodes (the nodes there are), --kubeconfig/--context "
        "(a cluster's nodes) or --node-templates (the nodes there can be)\n"
    )


def test_an_unreachable_cluster_is_one_line_naming_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "Paging", functools.partial(listing.Paging, backoff=0.001))
    with refused_port() as port:
        kubeconfig = write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{port}")
        result = invoke_cli(["explain", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 2
    assert result.stderr.startswith("placement-webhooks: list namespaces: cannot connect: ")
    assert result.stderr.count("\n") == 1


def test_a_cluster_without_nodes_is_refused(tmp_path: Path) -> None:
    with running(cluster.namespace("shop")) as fake:
        kubeconfig = fake.kubeconfig(tmp_path / "kc")
        result = invoke_cli(["explain", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 2
    assert result.stderr == "placement-webhooks: the cluster has no Node objects\n"


def _extended_resource_job(tmp_path: Path) -> Path:
    """The fixture Job whose pod asks for ``example.com/gpu``, copied where explain reads it."""
    job = tmp_path / "job.yaml"
    fixture = Path(__file__).parent.parent / "fixtures" / "dra" / "extended-resource-job.yaml"
    job.write_text(fixture.read_text(), encoding="utf-8")
    return job


def test_dra_objects_come_from_the_cluster(api: FakeApiServer, tmp_path: Path) -> None:
    api.put(dra.device_class(extended=dra.GPU))
    api.put(dra.resource_slice("gpu-1-slice", dra.device("gpu-0"), node="gpu-1"))
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    job = _extended_resource_job(tmp_path)
    argv = ["explain", "--kubeconfig", str(kubeconfig), "-o", "json", str(job)]
    pod = json.loads(invoke_cli(argv).stdout)["pods"][0]
    gpu = next(n for n in pod["nodes"] if n["node"] == "gpu-1")
    # The slice's device is there; only the node's dedicated taint keeps the pod off.
    assert [u["rule"] for u in gpu["unmet"]] == ["taint"]
    worker = next(n for n in pod["nodes"] if n["node"] == "worker-1")
    assert [u["rule"] for u in worker["unmet"]] == ["devices"]


def test_a_cluster_without_dra_is_read_as_having_none(api: FakeApiServer, tmp_path: Path) -> None:
    api.unserved.update({"deviceclasses", "resourceslices"})
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    result = invoke_cli(["explain", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 0, result.output


ALPHA = "resource.k8s.io/v1alpha3"
NOT_SERVED_134 = (
    "explain: this cluster does not serve DeviceTaintRules (resource.k8s.io/v1alpha3 on "
    "Kubernetes 1.34 needs gate DRADeviceTaints, alpha, off by default on Kubernetes 1.34, and "
    "--runtime-config=resource.k8s.io/v1alpha3=true): taints from such rules are not considered"
)
BY_CLASS = (
    "explain: 1 DeviceTaintRule(s) select devices by deviceClassName or CEL selectors "
    "(resource.k8s.io/v1alpha3), which explain does not evaluate: not considered"
)


def _rule(api_version: str, **selector: str) -> dict[str, Any]:
    rule = dra.device_taint_rule("gpu-0-ecc", "gpu.example.com/ecc", "NoExecute", **selector)
    return {**rule, "apiVersion": api_version}


RULE_CASES = [
    pytest.param(
        "v1.37.2", "v1", _rule(dra.API, device="gpu-0"), True, [], id="1.37 serves rules at v1"
    ),
    pytest.param(
        "v1.34.4",
        "v1alpha3",
        _rule(ALPHA, device="gpu-0"),
        True,
        [],
        id="1.34 with the gate on serves them at v1alpha3, and they are read there",
    ),
    pytest.param(
        "v1.34.4",
        None,
        None,
        False,
        [NOT_SERVED_134],
        id="1.34 by default serves none: one line says so, and claims are still read",
    ),
    pytest.param(
        "v1.34.4",
        "v1alpha3",
        _rule(ALPHA, device="gpu-0", deviceClassName=dra.GPU_CLASS),
        False,
        [BY_CLASS],
        id="a v1alpha3 rule that selects by class is left out, and said",
    ),
]


@pytest.mark.parametrize(("version", "served", "rule", "tainted", "notes"), RULE_CASES)
def test_device_taint_rules_are_read_at_the_version_the_release_serves(
    api: FakeApiServer,
    tmp_path: Path,
    version: str,
    served: str | None,
    rule: dict[str, Any] | None,
    tainted: bool,
    notes: list[str],
) -> None:
    api.version = version
    if served is None:
        api.unserved.add("devicetaintrules")
    else:
        api.device_taint_rule_version = served
    if rule is not None:
        api.put(rule)
    api.put(dra.device_class(extended=dra.GPU))
    api.put(dra.resource_slice("gpu-1-slice", dra.device("gpu-0"), node="gpu-1"))
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    job = _extended_resource_job(tmp_path)
    # A cluster serving rules before 1.37 runs with gates on, DRAExtendedResource among them
    # (the fake keeps extendedResourceName whatever the version; a real server would not).
    bridge = ["--feature-gates", "DRAExtendedResource=true"]
    argv = ["explain", "--kubeconfig", str(kubeconfig), *bridge, "-o", "json", str(job)]
    result = invoke_cli(argv)
    assert result.exit_code in (0, 1), result.output
    assert result.stderr.splitlines() == notes
    gpu = next(n for n in json.loads(result.stdout)["pods"][0]["nodes"] if n["node"] == "gpu-1")
    messages = " ".join(u["message"] for u in gpu["unmet"])
    assert ("gpu.example.com/ecc" in messages) is tainted
    assert api.count("list", "resourceclaims") + api.count("list", "resourceclaimtemplates") == 2


@pytest.mark.parametrize(
    ("version", "gates", "served"),
    [
        pytest.param("v1.37.2", [], True, id="1.37 serves the extended resource from DRA"),
        pytest.param("v1.36.3", [], True, id="1.36 does too: the gate is on by default"),
        pytest.param("v1.34.4", [], False, id="1.34 does not: the gate is off by default"),
        pytest.param(
            "v1.34.4",
            ["--feature-gates", "DRAExtendedResource=true"],
            True,
            id="1.34 with the gate turned on does",
        ),
        pytest.param(
            "v1.37.2",
            ["--feature-gates", "DRAExtendedResource=false"],
            False,
            id="1.37 with the gate turned off does not",
        ),
    ],
)
def test_devices_serve_an_extended_resource_only_where_the_releases_gate_is_on(
    api: FakeApiServer, tmp_path: Path, version: str, gates: list[str], served: bool
) -> None:
    """Without DRAExtendedResource the scheduler counts the request as a plain extended
    resource no node lists; explain must not place the pod on a node's devices."""
    api.version = version
    api.put(dra.device_class(extended=dra.GPU))
    api.put(dra.resource_slice("gpu-1-slice", dra.device("gpu-0"), node="gpu-1"))
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    job = _extended_resource_job(tmp_path)
    argv = ["explain", "--kubeconfig", str(kubeconfig), *gates, "-o", "json", str(job)]
    result = invoke_cli(argv)
    assert result.exit_code in (0, 1), result.output
    gpu = next(n for n in json.loads(result.stdout)["pods"][0]["nodes"] if n["node"] == "gpu-1")
    rules = [u["rule"] for u in gpu["unmet"]]
    # Served: only the node's dedicated taint keeps the pod off. Not served: the node lists
    # no example.com/gpu, so it lacks the resource too.
    assert rules == (["taint"] if served else ["taint", "resources"])
