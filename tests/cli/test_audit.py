"""``audit`` as a user runs it against a fake API server: the issue's "done when", reports,
outputs, scope, and every way the API server can let it down."""

from __future__ import annotations

import functools
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import webhooks.cli.audit as audit_command
from bench import stored as cluster
from tests import crds, dra
from tests.command import invoke_cli, run_cli
from tests.fakeapi import FakeApiServer, Request, refused_port, running, write_kubeconfig
from webhooks.cluster.listing import Paging


@pytest.fixture
def api() -> Any:
    """The fake holding the cluster of issue 15's "done when"."""
    with running(*cluster.done_when()) as fake:
        yield fake


@pytest.fixture
def run(api: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """``placement-webhooks audit ARGS`` with the done-when config, on the fake: (code,
    stdout, stderr). Retries pause a millisecond, not seconds."""
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    config = tmp_path / "config.yaml"
    config.write_text(cluster.DONE_WHEN_CONFIG, encoding="utf-8")
    monkeypatch.setattr(audit_command, "Paging", functools.partial(Paging, backoff=0.001))

    def invoke(*args: str) -> tuple[int, str, str]:
        argv = ["audit", "--kubeconfig", str(kubeconfig), "--config", str(config), *args]
        result = invoke_cli(argv)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout, result.stderr

    return invoke


def reports(api: FakeApiServer, plural: str = "reports") -> dict[str, dict[str, Any]]:
    """The stored reports of ``plural`` by namespace (``""`` for cluster reports)."""
    return {r["metadata"].get("namespace", ""): r for r in api.stored(plural)}


def rows(report: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [
        (r["result"], r["policy"], r["resources"][0]["kind"], r["resources"][0]["name"])
        for r in report["results"]
    ]


# -- done when --------------------------------------------------------------------------------


def test_audit_exits_1_and_names_each_offender_with_its_plugin(run: Callable[..., Any]) -> None:
    code, out, err = run()
    assert code == 1, err
    lines = out.splitlines()
    expected = [
        "Deployment shop/zonal: anti-affinity-topology: pods is forbidden: "
        "affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey "
        "topology.kubernetes.io/zone but only key kubernetes.io/hostname is allowed",
        'Node worker-2: taint-toleration-rules: spec.taints[0].key: Invalid value: "bad key!"',
        "Pod shop/intruder: dedicated-nodes: toleration dedicated=gpu:NoSchedule (Equal) lets "
        "this pod onto the nodes dedicated to group gpu, but namespace shop belongs to no "
        "dedicated group",
        "Deployment shop/web (3 pods): default-toleration-seconds: drift: "
        + cluster.ADDED_DEFAULTS,
    ]
    assert len(lines) == len(expected) + 1
    for line, start in zip(lines, expected, strict=False):
        assert line.startswith(start)
    assert lines[-1].startswith("9 objects audited (Deployment 2, Node 2, Pod 5): 3 failed")
    assert err == ""


def test_write_reports_puts_two_failures_and_one_drift_in_the_namespace_report(
    run: Callable[..., Any], api: FakeApiServer
) -> None:
    code, _, err = run("--write-reports")
    assert code == 1
    assert err == (
        "placement-webhooks: wrote 2 reports "
        "(Report shop/placement-webhooks, ClusterReport placement-webhooks)\n"
    )
    namespaced = reports(api)
    assert sorted(namespaced) == ["shop"], "clean namespaces get no report"
    shop = namespaced["shop"]
    assert rows(shop) == [
        ("fail", "anti-affinity-topology", "Deployment", "zonal"),
        ("fail", "dedicated-nodes", "Pod", "intruder"),
        ("warn", "default-toleration-seconds", "Deployment", "web"),
    ]
    assert shop["results"][2]["rule"] == "drift"
    assert shop["results"][2]["properties"] == {"pods": "3"}
    assert shop["summary"] == {"pass": 0, "fail": 2, "warn": 1, "error": 0, "skip": 0}
    cluster_report = reports(api, "clusterreports")[""]
    assert rows(cluster_report) == [("fail", "taint-toleration-rules", "Node", "worker-2")]
    for kind, body in (("Report", shop), ("ClusterReport", cluster_report)):
        stripped = {**body, "metadata": {"name": body["metadata"]["name"]}}
        assert crds.errors(kind, stripped) == []
        assert body["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "placement-webhooks"}
        assert body["metadata"]["managedFields"][0]["manager"] == "placement-webhooks"


def test_a_second_run_leaves_the_same_reports_with_results_replaced(
    run: Callable[..., Any], api: FakeApiServer
) -> None:
    run("--write-reports")
    first = {ns: (r["metadata"]["uid"], rows(r)) for ns, r in reports(api).items()}
    run("--write-reports")
    second = {ns: (r["metadata"]["uid"], rows(r)) for ns, r in reports(api).items()}
    assert second == first
    assert sorted(reports(api, "clusterreports")) == [""]
    assert not [r for r in api.requests if r.kind == "delete"]


def test_once_the_offending_pod_is_deleted_its_failure_is_gone(
    run: Callable[..., Any], api: FakeApiServer
) -> None:
    run("--write-reports")
    api.delete("pods", "intruder", "shop")
    code, out, _ = run("--write-reports")
    assert code == 1  # the Deployment and the Node still fail
    assert "intruder" not in out
    assert rows(reports(api)["shop"]) == [
        ("fail", "anti-affinity-topology", "Deployment", "zonal"),
        ("warn", "default-toleration-seconds", "Deployment", "web"),
    ]


def test_a_namespace_with_nothing_left_loses_its_report(
    run: Callable[..., Any], api: FakeApiServer
) -> None:
    run("--write-reports")
    with api.lock:
        for key in [k for k in api.objects if k[0] != "namespaces" and k[1].startswith("shop/")]:
            if key[0] != "reports":
                del api.objects[key]
    code, _, err = run("--write-reports")
    assert code == 1  # the Node
    assert reports(api) == {}
    assert "deleted 1 stale (Report shop/placement-webhooks)" in err
    assert sorted(reports(api, "clusterreports")) == [""]


def test_a_clean_cluster_exits_0_and_keeps_no_report(
    run: Callable[..., Any], api: FakeApiServer
) -> None:
    run("--write-reports")
    with api.lock:
        for key in list(api.objects):
            if key[0] not in ("namespaces", "reports", "clusterreports") and key[1] != "ml/trainer":
                del api.objects[key]
    code, out, err = run("--write-reports")
    assert (code, reports(api), reports(api, "clusterreports")) == (0, {}, {})
    assert out.startswith("1 object audited (Pod 1): 0 failed")
    assert "deleted 2 stale" in err


# -- scope and the other API -------------------------------------------------------------------


def test_a_namespace_scan_touches_only_that_namespaces_report(
    run: Callable[..., Any], api: FakeApiServer
) -> None:
    run("--write-reports")
    with api.lock:
        api.requests.clear()
    code, out, err = run("--write-reports", "--namespace", "ml")
    assert code == 0
    assert "namespaces: ml" in out
    assert sorted(reports(api)) == ["shop"], "other namespaces were not scanned"
    assert sorted(reports(api, "clusterreports")) == [""], "Nodes were not scanned"
    assert not any(r.kind == "list" and r.plural == "nodes" for r in api.requests)
    assert err == "placement-webhooks: wrote 0 reports\n"


def test_the_older_report_api_gets_policy_reports(
    run: Callable[..., Any], api: FakeApiServer
) -> None:
    code, _, _ = run("--write-reports", "--report-api", "wgpolicyk8s", "--max-results", "1")
    assert code == 1
    (shop,) = api.stored("policyreports")
    (cluster_report,) = api.stored("clusterpolicyreports")
    assert (shop["apiVersion"], shop["kind"]) == ("wgpolicyk8s.io/v1alpha2", "PolicyReport")
    assert cluster_report["kind"] == "ClusterPolicyReport"
    assert "source" not in shop and "configuration" not in shop
    assert shop["summary"]["fail"] == 2 and len(shop["results"]) == 1
    assert shop["results"][0]["source"] == "placement-webhooks"
    assert api.stored("reports") == []


def test_max_results_is_recorded_and_the_summary_counts_them_all(
    run: Callable[..., Any], api: FakeApiServer
) -> None:
    run("--write-reports", "--max-results", "2")
    shop = reports(api)["shop"]
    assert shop["configuration"] == {"limits": {"maxResults": 2}}
    assert [r["result"] for r in shop["results"]] == ["fail", "fail"]
    assert shop["summary"]["warn"] == 1


def test_exit_zero_keeps_findings_from_failing_a_scheduled_job(
    run: Callable[..., Any], api: FakeApiServer
) -> None:
    code, out, _ = run("--write-reports", "--exit-zero")
    assert code == 0
    assert "3 failed" in out
    assert sorted(reports(api)) == ["shop"]
    api.fault = page_of_pods_fails(403)
    assert run("--exit-zero")[0] == 2, "an audit that could not run still says so"


def test_the_namespaces_the_webhooks_never_see_are_left_out(
    run: Callable[..., Any], api: FakeApiServer
) -> None:
    api.put(cluster.namespace("kube-system"))
    api.put(cluster.pod("kube-proxy-x", "kube-system", tolerations=[]))
    api.put(cluster.namespace("placement"))
    api.put(cluster.pod("hooks-x", "placement", tolerations=[]))
    _, out, _ = run("--write-reports", "--exclude-namespace", "placement")
    assert "kube-proxy" not in out and "hooks-x" not in out
    assert out.rstrip().endswith(
        "left out: kube-system, kube-node-lease, placement (the webhooks never see them)"
    )
    assert sorted(reports(api)) == ["shop"]


def test_an_unknown_namespace_is_unusable_input(run: Callable[..., Any]) -> None:
    code, out, err = run("--namespace", "nope")
    assert (code, out) == (2, "")
    assert err == "placement-webhooks: --namespace nope: no such namespace\n"


# -- outputs ----------------------------------------------------------------------------------


def test_json_and_junit_say_the_same_as_text(run: Callable[..., Any], tmp_path: Path) -> None:
    junit = tmp_path / "audit.xml"
    code, out, _ = run("-o", "json", "-o", f"junit={junit}")
    assert code == 1
    data = json.loads(out)
    assert data["summary"]["exitCode"] == 1
    assert (data["summary"]["fail"], data["summary"]["warn"]) == (3, 1)
    drift = next(r for r in data["results"] if r["rule"] == "drift")
    assert (drift["kind"], drift["name"], drift["pods"], drift["uid"]) == (
        "Deployment",
        "web",
        3,
        "deployment-shop-web",
    )
    root = ET.parse(junit).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("4", "3", "1")
    suites = {s.get("name"): s for s in root}
    assert sorted(suites) == ["cluster", "shop"]
    web = next(c for c in suites["shop"] if c.get("name") == "Deployment shop/web (3 pods)")
    assert web.find("skipped") is not None


def test_an_unknown_output_format_is_refused(run: Callable[..., Any]) -> None:
    code, _, err = run("-o", "sarif")
    assert code == 2
    assert "unknown format 'sarif' (known: text, json, junit)" in err


# -- when the API server lets us down ----------------------------------------------------------


def page_of_pods_fails(answer: int | str) -> Callable[[Request], Any]:
    def fault(request: Request) -> Any:
        return answer if request.kind == "list" and request.plural == "pods" else None

    return fault


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (500, "list pods: HTTP 500: Internal error occurred: etcdserver: leader changed "
              "(4 attempts)"),
        ("drop", "list pods: connection lost (4 attempts)"),
        (403, "list pods: HTTP 403: refused (403)"),
    ],
    ids=[
        "a server answering 500 is asked again, then named",
        "a server dropping the connection is asked again, then named",
        "a refusing server is named at once",
    ],
)  # fmt: skip
def test_a_scan_that_cannot_read_everything_exits_2_and_writes_nothing(
    run: Callable[..., Any], api: FakeApiServer, answer: int | str, message: str
) -> None:
    api.fault = page_of_pods_fails(answer)
    code, out, err = run("--write-reports")
    assert (code, out) == (2, "")
    assert err == f"placement-webhooks: {message}\n"
    assert not [r for r in api.requests if r.method in ("PATCH", "DELETE")]


def test_an_unreachable_api_server_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_command, "Paging", functools.partial(Paging, backoff=0.001))
    with refused_port() as port:
        kubeconfig = write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{port}")
        result = invoke_cli(["audit", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 2
    assert result.stderr.startswith("placement-webhooks: list namespaces: cannot connect: ")
    assert result.stderr.count("\n") == 1


def test_reports_without_their_crd_say_so(run: Callable[..., Any], api: FakeApiServer) -> None:
    api.fault = lambda r: 404 if r.kind == "patch" else None
    code, out, err = run("--write-reports")
    assert code == 2
    assert out  # the findings were printed before the write failed
    assert err == (
        "placement-webhooks: apply reports.openreports.io shop/placement-webhooks: "
        "HTTP 404: refused (404) (is the openreports.io CRD installed?)\n"
    )


def test_a_missing_kubeconfig_is_one_line(tmp_path: Path) -> None:
    result = invoke_cli(["audit", "--kubeconfig", str(tmp_path / "none")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"placement-webhooks: kubeconfig {tmp_path}/none: ")


def test_a_real_process_audits_and_writes_reports(api: FakeApiServer, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(cluster.DONE_WHEN_CONFIG, encoding="utf-8")
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    env = {"KUBECONFIG": str(kubeconfig), "KUBERNETES_SERVICE_HOST": None}
    result = run_cli("audit", "--config", str(config), "--write-reports", env=env, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "Deployment shop/web (3 pods)" in result.stdout
    assert sorted(reports(api)) == ["shop"]


# --- a skip is reported only where something was skipped (issue 19) ---------------------------

ERT = "extended-resource-toleration"
EXCEPTION = {"name": "dcgm", "plugins": [ERT], "namespaces": ["monitoring"]}


def _gpu_pod(namespace: str) -> dict[str, Any]:
    obj = cluster.pod("dcgm", namespace, tolerations=[])
    gpu = {"nvidia.com/gpu": "1"}
    obj["spec"]["containers"][0]["resources"] = {"limits": gpu, "requests": gpu}
    return obj


#: (id, namespace, config, ERT's results for the pod, the summary's counts)
GPU_SKIPS: list[tuple[str, str, dict[str, Any], list[str], str]] = [
    (
        "under the default config a kube-system GPU pod gets its toleration and no skip",
        "kube-system",
        {},
        ["drift: added nvidia.com/gpu:NoSchedule (Exists)"],
        "0 failed, 0 warnings, 2 drift, 0 skipped by exceptions",
    ),
    (
        "an exception skips the mutation only, while enforcement is off",
        "monitoring",
        {"exceptions": [EXCEPTION]},
        ["skipped drift: exception dcgm covers this object"],
        "0 failed, 0 warnings, 1 drift, 1 skipped by exceptions",
    ),
    (
        "with enforcement on, the same exception skips the validation as well",
        "monitoring",
        {
            "plugins": {ERT: {"enforce": {"guarded": [{"taintKey": "nvidia.com/gpu"}]}}},
            "exceptions": [EXCEPTION],
        },
        [
            "skipped drift: exception dcgm covers this object",
            "skipped violation: exception dcgm covers this object",
        ],
        "0 failed, 0 warnings, 1 drift, 2 skipped by exceptions",
    ),
]


@pytest.mark.parametrize(
    ("namespace", "config", "results", "counts"),
    [c[1:] for c in GPU_SKIPS],
    ids=[c[0] for c in GPU_SKIPS],
)
def test_an_audit_reports_a_skip_only_where_something_was_skipped(
    tmp_path: Path, namespace: str, config: dict[str, Any], results: list[str], counts: str
) -> None:
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    with running(cluster.namespace(namespace), _gpu_pod(namespace)) as fake:
        argv = ["audit", "--kubeconfig", str(fake.kubeconfig(tmp_path / "kc"))]
        argv += ["--config", str(tmp_path / "config.yaml"), "-n", namespace]
        result = invoke_cli(argv)
    assert result.exit_code == 0, result.stderr
    mine = f"Pod {namespace}/dcgm: {ERT}: "
    lines = result.stdout.splitlines()
    assert [line.removeprefix(mine) for line in lines if line.startswith(mine)] == results
    assert f"1 object audited (Pod 1): {counts}; " in lines[-1]


# --- DRA claims: the audit reads what deviceClaims resolves (issue 22) ------------------------


def _claiming_pod() -> dict[str, Any]:
    claims = [{"name": "gpu", "resourceClaimTemplateName": "gpu-claim"}]
    return cluster.pod("trainer", "ml", resourceClaims=claims)


DRA_READS = ("deviceclasses", "resourceclaimtemplates", "resourceclaims")


@pytest.mark.parametrize(
    ("config", "unserved", "drift", "reads"),
    [
        ({ERT: {"deviceClaims": True}}, False, True, True),
        ({}, False, False, False),
        ({ERT: {"deviceClaims": True}}, True, False, True),
    ],
    ids=[
        "deviceClaims on: the claimed pod drifts from the toleration it would get",
        "deviceClaims off: no DRA object is even listed",
        "a cluster that does not serve resource.k8s.io/v1 has no claims to resolve",
    ],
)
def test_the_audit_resolves_claims_through_the_api_when_a_setting_needs_them(
    tmp_path: Path, config: dict[str, Any], unserved: bool, drift: bool, reads: bool
) -> None:
    (tmp_path / "config.yaml").write_text(json.dumps({"plugins": config}))
    objects = [
        cluster.namespace("ml"),
        dra.device_class(extended=dra.GPU),
        dra.claim_template("gpu-claim", namespace="ml"),
        _claiming_pod(),
    ]
    with running(*objects) as fake:
        if unserved:
            fake.unserved.update(DRA_READS)
        argv = ["audit", "--kubeconfig", str(fake.kubeconfig(tmp_path / "kc"))]
        argv += ["--config", str(tmp_path / "config.yaml"), "--page-size", "1"]
        result = invoke_cli(argv)
        listed = [plural for plural in DRA_READS if fake.count("list", plural)]
    assert result.exit_code == 0, result.stderr
    said = f"Pod ml/trainer: {ERT}: drift: added {dra.GPU}:NoSchedule (Exists)"
    assert (said in result.stdout.splitlines()) is drift, result.stdout
    assert listed == (list(DRA_READS[:1]) if unserved else list(DRA_READS) if reads else [])
