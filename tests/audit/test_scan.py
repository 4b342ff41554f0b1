"""The scan over objects as a cluster stores them: results, drift, grouping, skips, policy."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
import yaml

from bench import stored as cluster
from bench.stored import ADDED_DEFAULTS, DEFAULT_TOLERATIONS
from tests import dra
from webhooks.audit.results import Audit, Ref, Result
from webhooks.audit.scan import Scanner, ScopeError, scan
from webhooks.cluster.files import StaticCluster
from webhooks.cluster.listing import KINDS, Kind
from webhooks.core.config import Config, load_config
from webhooks.dryrun.run import engine_for
from webhooks.plugins import REGISTRY

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


class Objects:
    """A cluster as plain lists: what :func:`scan` asks of a source, and what it asked."""

    def __init__(self, objects: Iterable[dict[str, Any]]) -> None:
        self.objects = [json.loads(json.dumps(o)) for o in objects]
        self.asked: list[tuple[str, str | None]] = []

    def items(
        self, kind: Kind, namespace: str | None = None, label_selector: str = ""
    ) -> Iterator[dict[str, Any]]:
        self.asked.append((kind.kind, namespace))
        for obj in self.objects:
            if obj["kind"] != kind.kind:
                continue
            if namespace is None or obj["metadata"].get("namespace") == namespace:
                yield json.loads(json.dumps(obj))


def config(text: str = "") -> Config:
    return load_config(yaml.safe_load(text) if text else None, REGISTRY)


def audit(objects: Iterable[dict[str, Any]], text: str = "", **kwargs: Any) -> Audit:
    return scan(Objects(objects), config(text), now=lambda: NOW, **kwargs)


def results(found: Audit) -> list[tuple[str, str, str, str, str, int]]:
    """(subject, policy, rule, outcome, message, pods) of every result, in order."""
    return [
        (r.ref.subject, r.policy, r.rule, r.outcome, r.message, r.pods) for r in found.ordered()
    ]


def only(found: Audit) -> Result:
    assert len(found.results) == 1, results(found)
    return next(iter(found.results.values()))


SHOP = cluster.namespace("shop")
DEDICATED = "plugins:\n  dedicated-nodes: {enabled: true}\n"


# -- drift ------------------------------------------------------------------------------------


def test_a_stored_pod_admission_already_saw_is_clean() -> None:
    found = audit([SHOP, cluster.pod("web", "shop", labels={"app": "web"})])
    assert results(found) == []
    assert found.objects == {"Pod": 1}


@pytest.mark.parametrize(
    "pod",
    [
        cluster.pod("web", "shop", tolerations=[]),
        cluster.pod(
            "web-5d8f-abcde", "shop", controller=("ReplicaSet", "web-5d8f"), tolerations=[]
        ),
    ],
    ids=["a bare pod", "a ReplicaSet's pod"],
)
def test_a_pod_admitted_while_the_webhook_was_down_drifts_as_check_says_it(
    pod: dict[str, Any],
) -> None:
    result = only(audit([SHOP, pod]))
    assert (result.policy, result.rule, result.outcome) == (
        "default-toleration-seconds",
        "drift",
        "warn",
    )
    assert result.message == ADDED_DEFAULTS
    assert result.severity == "low"


def test_a_daemonset_created_before_the_suite_drifts_in_its_template_not_in_its_pods() -> None:
    daemon_tolerations = [
        {"key": key, "operator": "Exists", "effect": effect}
        for key, effect in (
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        )
    ]
    objects = [
        SHOP,
        cluster.workload("DaemonSet", "agent", "shop"),
        cluster.pod(
            "agent-x1",
            "shop",
            controller=("DaemonSet", "agent"),
            tolerations=daemon_tolerations,
        ),
    ]
    result = only(audit(objects))
    assert (result.ref.subject, result.policy, result.rule) == (
        "DaemonSet shop/agent",
        "daemonset-tolerations",
        "drift",
    )
    assert result.pods == 0
    assert "node.kubernetes.io/unschedulable:NoSchedule (Exists)" in result.message


def test_a_deployment_template_has_no_drift_of_its_own() -> None:
    assert results(audit([SHOP, cluster.workload("Deployment", "web", "shop")])) == []


def test_a_plugin_in_monitor_mode_drifts_nothing_and_leaves_a_note() -> None:
    text = "plugins:\n  default-toleration-seconds: {mutation: monitor}\n"
    result = only(audit([SHOP, cluster.pod("web", "shop", tolerations=[])], text))
    assert (result.outcome, result.rule) == ("note", "monitor")
    assert result.message == f"monitor mode, not applied: {ADDED_DEFAULTS}"
    assert audit([SHOP, cluster.pod("web", "shop", tolerations=[])], text).exit_code() == 0


# -- grouping ---------------------------------------------------------------------------------


def test_a_replicasets_pods_are_reported_once_on_its_deployment_with_their_count() -> None:
    found = audit([SHOP, *cluster.deployment_with_pods("web", "shop", 3, tolerations=[])])
    result = only(found)
    assert result.ref == Ref("apps/v1", "Deployment", "shop", "web", "deployment-shop-web")
    assert result.pods == 3
    assert found.covered == {"ReplicaSet": 1}
    assert found.objects == {"Deployment": 1, "Pod": 3}


def test_a_jobs_pods_are_reported_on_its_cronjob() -> None:
    objects = [
        SHOP,
        cluster.workload("CronJob", "nightly", "shop"),
        cluster.workload("Job", "nightly-29001", "shop", controller=("CronJob", "nightly")),
        cluster.pod(
            "nightly-29001-ab", "shop", controller=("Job", "nightly-29001"), tolerations=[]
        ),
        cluster.pod(
            "nightly-29001-cd", "shop", controller=("Job", "nightly-29001"), tolerations=[]
        ),
    ]
    result = only(audit(objects))
    assert (result.ref.subject, result.pods) == ("CronJob shop/nightly", 2)


def test_a_statefulsets_pods_are_reported_on_it_though_their_names_are_their_own() -> None:
    objects = [SHOP, cluster.workload("StatefulSet", "db", "shop")] + [
        cluster.pod(
            f"db-{i}", "shop", controller=("StatefulSet", "db"), generated=False, tolerations=[]
        )
        for i in range(2)
    ]
    result = only(audit(objects))
    assert (result.ref.subject, result.pods) == ("StatefulSet shop/db", 2)


def test_a_deployments_own_violation_and_its_pods_are_one_result() -> None:
    spec = cluster.pod_spec(affinity=cluster.ZONE_ANTI_AFFINITY)
    objects = [SHOP, *cluster.deployment_with_pods("zonal", "shop", 2, spec=spec)]
    found = audit(objects, "plugins:\n  anti-affinity-topology: {enabled: true}\n")
    result = only(found)
    assert (result.ref.subject, result.policy, result.outcome, result.pods) == (
        "Deployment shop/zonal",
        "anti-affinity-topology",
        "fail",
        2,
    )
    assert result.message.startswith("pods is forbidden: affinity.PodAntiAffinity")


def test_a_replicaset_without_a_deployment_is_audited_itself() -> None:
    spec = cluster.pod_spec(tolerations=[{"key": "bad key!", "operator": "Exists"}])
    found = audit([SHOP, cluster.workload("ReplicaSet", "loose", "shop", spec)])
    result = only(found)
    assert (result.ref.subject, result.policy) == (
        "ReplicaSet shop/loose",
        "taint-toleration-rules",
    )
    assert found.covered == {}


def test_pages_are_admitted_as_they_arrive_and_not_kept() -> None:
    found = Audit(NOW)
    context = StaticCluster([cluster.namespace("shop")])
    scanner = Scanner(engine_for([], config(), context), config(), found)
    pods = [cluster.pod(f"p{i}", "shop", tolerations=[]) for i in range(5)]

    def arriving() -> Iterator[dict[str, Any]]:
        for i, pod in enumerate(pods):
            assert found.objects["Pod"] == i, "a pod was held back before admission"
            yield pod

    class Lister:
        def items(self, kind: Kind, namespace: str | None = None, label_selector: str = "") -> Any:
            return arriving() if kind.kind == "Pod" else iter(())

    scanner.namespace(Lister(), None)
    assert found.objects["Pod"] == 5
    assert len(found.results) == 5  # bare pods: one result each, nothing else kept


# -- skips ------------------------------------------------------------------------------------


def test_mirror_and_finished_pods_are_not_admitted_and_counted_with_the_reason() -> None:
    objects = [
        cluster.namespace("kube-system"),
        SHOP,
        cluster.pod(
            "etcd-cp1",
            "kube-system",
            controller=("Node", "cp1"),
            generated=False,
            annotations={"kubernetes.io/config.mirror": "abc"},
            tolerations=[],
        ),
        cluster.workload("CronJob", "nightly", "shop"),
        cluster.workload("Job", "nightly-1", "shop", controller=("CronJob", "nightly")),
        cluster.pod("nightly-1-a", "shop", controller=("Job", "nightly-1"), phase="Succeeded"),
        cluster.pod("nightly-1-b", "shop", controller=("Job", "nightly-1"), phase="Failed"),
    ]
    found = audit(objects)
    assert results(found) == []
    skipped = sorted(
        (s.ref.subject, s.reason.split(":")[0], s.pods) for s in found.skipped.values()
    )
    assert skipped == [
        ("CronJob shop/nightly", "finished (Failed)", 1),
        ("CronJob shop/nightly", "finished (Succeeded)", 1),
        ("Pod kube-system/etcd-cp1", "mirror pod of a static pod", 1),
    ]
    assert found.objects == {"CronJob": 1}


EXCEPTION = """\
plugins:
  dedicated-nodes: {enabled: true}
exceptions:
  - name: legacy-gpu
    plugins: [dedicated-nodes]
    namespaces: [shop]
"""


def test_an_exception_is_a_skip_of_each_half_it_covers_naming_the_exception() -> None:
    pod = cluster.pod(
        "intruder", "shop", tolerations=[*DEFAULT_TOLERATIONS, cluster.DEDICATED_TAINT]
    )
    found = audit([SHOP, pod], EXCEPTION)
    assert [(r.policy, r.rule, r.outcome, r.properties) for r in found.ordered()] == [
        ("dedicated-nodes", "drift", "skip", {"exception": "legacy-gpu"}),
        ("dedicated-nodes", "violation", "skip", {"exception": "legacy-gpu"}),
    ]
    assert found.exit_code() == 0


@pytest.mark.parametrize(
    "text",
    [
        "",
        DEDICATED,
        "plugins:\n  extended-resource-toleration:\n"
        "    enforce: {guarded: [{taintKey: nvidia.com/gpu}]}\n",
    ],
    ids=[
        "under the defaults",
        "with dedicated-nodes on",
        "with extended-resource-toleration enforcing",
    ],
)
def test_a_plugins_own_exempt_namespaces_are_its_policy_and_no_skip(text: str) -> None:
    objects = [
        cluster.namespace("kube-system"),
        *cluster.deployment_with_pods("coredns", "kube-system", 2),
    ]
    assert results(audit(objects, text)) == []


def test_an_exception_for_the_controllers_identity_matches_the_pods_it_created() -> None:
    text = """\
exceptions:
  - name: controller-made
    plugins: [default-toleration-seconds]
    users: ["system:serviceaccount:kube-system:replicaset-controller"]
"""
    objects = [
        SHOP,
        *cluster.deployment_with_pods("web", "shop", 2, tolerations=[]),
        cluster.pod("by-hand", "shop", tolerations=[]),
    ]
    found = audit(objects, text)
    assert [(r.ref.subject, r.rule, r.outcome) for r in found.ordered()] == [
        ("Pod shop/by-hand", "drift", "warn"),
        ("Deployment shop/web", "drift", "skip"),
    ]


def test_an_expired_exception_is_a_note_and_the_violation_is_back() -> None:
    text = EXCEPTION + '    expires: "2026-01-01T00:00:00Z"\n'
    pod = cluster.pod(
        "intruder", "shop", tolerations=[*DEFAULT_TOLERATIONS, cluster.DEDICATED_TAINT]
    )
    found = audit([SHOP, pod], text)
    assert [(r.rule, r.outcome) for r in found.ordered()] == [
        ("violation", "fail"),
        ("exception", "note"),
    ]


# -- actions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "outcome", "severity", "code"),
    [
        (DEDICATED, "fail", "high", 1),
        (DEDICATED.replace("true}", "true, action: warn}"), "warn", "medium", 0),
        (DEDICATED.replace("true}", "true, action: audit}"), "warn", "medium", 0),
        (
            DEDICATED.replace(
                "true}",
                "true, action: warn, actionOverrides: "
                "[{namespaceSelector: {matchLabels: {env: prod}}, action: enforce}]}",
            ),
            "fail",
            "high",
            1,
        ),
    ],
    ids=[
        "a violation under enforce fails",
        "a violation under warn is a warning",
        "a violation under audit is a warning",
        "an override for the namespace's labels decides",
    ],
)
def test_a_violation_does_what_its_action_says(
    text: str, outcome: str, severity: str, code: int
) -> None:
    shop = cluster.namespace("shop", env="prod")
    pod = cluster.pod(
        "intruder", "shop", tolerations=[*DEFAULT_TOLERATIONS, cluster.DEDICATED_TAINT]
    )
    found = audit([shop, pod], text)
    result = only(found)
    assert (result.policy, result.rule, result.outcome, result.severity) == (
        "dedicated-nodes",
        "violation",
        outcome,
        severity,
    )
    assert found.exit_code() == code


def test_a_node_with_an_invalid_taint_key_fails_taint_toleration_rules() -> None:
    bad = cluster.node("worker-2", [{"key": "bad key!", "value": "x", "effect": "NoSchedule"}])
    result = only(audit([bad, cluster.node("worker-1")]))
    assert (result.ref.subject, result.policy, result.outcome) == (
        "Node worker-2",
        "taint-toleration-rules",
        "fail",
    )
    assert result.message.startswith('spec.taints[0].key: Invalid value: "bad key!"')


# -- scope ------------------------------------------------------------------------------------


def test_namespaces_limit_the_scan_and_leave_nodes_out() -> None:
    objects = [
        SHOP,
        cluster.namespace("other"),
        cluster.pod("a", "shop", tolerations=[]),
        cluster.pod("b", "other", tolerations=[]),
        cluster.node("worker-2", [{"key": "bad key!", "value": "x", "effect": "NoSchedule"}]),
    ]
    source = Objects(objects)
    found = scan(source, config(), ["shop"], now=lambda: NOW)
    assert [r.ref.subject for r in found.ordered()] == ["Pod shop/a"]
    assert ("Node", None) not in source.asked
    assert ("Pod", "shop") in source.asked
    assert not found.cluster_scoped


def test_a_whole_cluster_audit_leaves_out_what_the_webhooks_never_see() -> None:
    objects = [
        SHOP,
        cluster.namespace("kube-system"),
        cluster.workload("DaemonSet", "kube-proxy", "kube-system"),
        cluster.pod("a", "shop", tolerations=[]),
        cluster.pod("b", "kube-system", tolerations=[]),
    ]
    found = audit(objects, exclude=["kube-system"])
    assert [r.ref.subject for r in found.ordered()] == ["Pod shop/a"]
    assert found.excluded == ("kube-system",)
    named = audit(objects, namespaces=["kube-system"], exclude=["kube-system"])
    assert [r.ref.subject for r in named.ordered()] == [
        "DaemonSet kube-system/kube-proxy",
        "Pod kube-system/b",
    ], "--namespace names exactly what to audit"
    assert named.excluded == ()


def test_a_namespace_that_does_not_exist_is_refused() -> None:
    with pytest.raises(ScopeError, match="--namespace nope: no such namespace"):
        audit([SHOP], namespaces=["nope"])


def test_owners_are_listed_before_the_objects_they_own() -> None:
    source = Objects([SHOP])
    scan(source, config(), now=lambda: NOW)
    kinds = [kind for kind, _ in source.asked]
    assert kinds[:2] == ["Namespace", "RuntimeClass"]
    assert kinds.index("ReplicaSet") < kinds.index("Deployment") < kinds.index("Pod")
    assert kinds.index("Job") < kinds.index("CronJob") < kinds.index("Pod")
    assert kinds[-1] == "Node"
    assert set(kinds) == set(KINDS)


# -- DRA claims (extended-resource-toleration deviceClaims) -----------------------------------

ERT = "extended-resource-toleration"
CLAIMS = f"plugins:\n  {ERT}: {{deviceClaims: true}}\n"


def _claiming_pod(name: str, how: str, target: str, **kw: Any) -> dict[str, Any]:
    return cluster.pod(name, "ml", resourceClaims=dra.pod_claims(("gpu", how, target)), **kw)


GPU_OBJECTS = [
    cluster.namespace("ml"),
    dra.device_class(extended=dra.GPU),
    dra.claim_template("gpu-claim", namespace="ml"),
    dra.resource_claim("shared-gpu", namespace="ml"),
]
GPU_TOLERATION = {"key": dra.GPU, "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("pod", "text", "expected"),
    [
        (
            _claiming_pod("trainer", "template", "gpu-claim"),
            CLAIMS,
            [("Pod ml/trainer", ERT, "drift", "warn", f"added {dra.GPU}:NoSchedule (Exists)", 0)],
        ),
        (
            _claiming_pod("shared", "claim", "shared-gpu"),
            CLAIMS,
            [("Pod ml/shared", ERT, "drift", "warn", f"added {dra.GPU}:NoSchedule (Exists)", 0)],
        ),
        (
            _claiming_pod(
                "tolerating",
                "template",
                "gpu-claim",
                tolerations=[*DEFAULT_TOLERATIONS, GPU_TOLERATION],
            ),
            CLAIMS,
            [],
        ),
        (_claiming_pod("trainer", "template", "gpu-claim"), "", []),
    ],
    ids=[
        "a pod claiming a GPU through a template drifts from the toleration deviceClaims adds",
        "so does a pod naming a ResourceClaim",
        "a pod that has the toleration is clean",
        "with deviceClaims off nothing is added, so nothing drifts",
    ],
)
def test_claimed_devices_are_resolved_from_the_clusters_dra_objects(
    pod: dict[str, Any], text: str, expected: list[tuple[str, str, str, str, str, int]]
) -> None:
    assert results(audit([*GPU_OBJECTS, pod], text)) == expected


def test_dra_objects_are_read_only_when_a_setting_needs_them() -> None:
    needed, idle = Objects(GPU_OBJECTS), Objects(GPU_OBJECTS)
    scan(needed, config(CLAIMS), now=lambda: NOW)
    scan(idle, config(), now=lambda: NOW)
    dra_kinds = {"DeviceClass", "ResourceClaimTemplate", "ResourceClaim"}
    assert dra_kinds <= {kind for kind, _ in needed.asked}
    assert not dra_kinds & {kind for kind, _ in idle.asked}


def test_a_namespace_scan_reads_the_claims_of_that_namespace_only() -> None:
    source = Objects([*GPU_OBJECTS, _claiming_pod("trainer", "template", "gpu-claim")])
    found = scan(source, config(CLAIMS), ["ml"], now=lambda: NOW)
    assert ("ResourceClaim", "ml") in source.asked
    assert ("ResourceClaim", None) not in source.asked
    assert [r.rule for r in found.ordered()] == ["drift"]


@pytest.mark.parametrize(
    ("owner_api", "subject", "daemon_drift"),
    [
        pytest.param(
            "apps/v1",
            "DaemonSet shop/agent",
            True,
            id="a pod of an apps DaemonSet that lacks the DaemonSet defaults drifts",
        ),
        pytest.param(
            "apps.kruise.io/v1alpha1",
            "DaemonSet.apps.kruise.io shop/agent",
            False,
            id="a pod of another group's DaemonSet is reported on it by group, no DaemonSet drift",
        ),
    ],
)
def test_a_pod_owner_is_its_group_and_kind(
    owner_api: str, subject: str, daemon_drift: bool
) -> None:
    # Admitted while nothing added tolerations: some plugin has something to say.
    pod = cluster.pod("agent-x1", "shop", controller=("DaemonSet", "agent"), tolerations=[])
    pod["metadata"]["ownerReferences"][0]["apiVersion"] = owner_api
    found = audit([SHOP, pod])
    rules = {(r.ref.subject, r.policy) for r in found.results.values()}
    assert ((subject, "daemonset-tolerations") in rules) is daemon_drift
    assert {s for s, _ in rules} == {subject}
