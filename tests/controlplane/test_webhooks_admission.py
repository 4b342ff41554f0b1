"""The webhooks through a real API server (MODE=webhooks): what a client sees and what is stored.

One control plane for the module: etcd, an API server with the six in-tree twins off and an
audit log, the controller-manager (Deployments make ReplicaSets make pods), and ``serve``
with ``configs/webhooks-admission.yaml`` registered as ``webhook-config`` prints it. Every
request goes over HTTPS as a client sends it, so the status codes, the messages and the
``Warning`` headers are the API server's, and the audit annotations are read from its audit
log: audit annotations never reach a client.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controlplane.harness import (
    ControlPlane,
    ControlPlaneOptions,
    auditlog,
    create_namespace,
    daemonset_manifest,
    node_manifest,
    pod_manifest,
    webhookserver,
)
from controlplane.harness.components import ApiServer, Response
from controlplane.harness.modes import apiserver_options
from tests.controlplane.conftest import started_plane
from tests.waiting import eventually
from webhooks.install.webhookconfig import WebhookSettings, match_conditions

OPTED_OUT = "opted-out"
CONFIG = Path(__file__).parent / "configs" / "webhooks-admission.yaml"
MUTATE = 'admission webhook "mutate.placement-webhooks.svc" denied the request: '
VALIDATE = 'admission webhook "validate.placement-webhooks.svc" denied the request: '
NODE_SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"
DEFAULTS = "scheduler.alpha.kubernetes.io/defaultTolerations"
WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
DEDICATED = "placement-webhooks.io/dedicated"
NR300 = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
UR300 = {**NR300, "key": "node.kubernetes.io/unreachable"}
MEMORY = {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}
IN_GPU = {"key": "dedicated", "operator": "In", "values": ["gpu"]}
TEAM = {"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}
ZONE_ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
        ]
    }
}
ANTI_AFFINITY_REASON = (
    "affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey zone but only key "
    "kubernetes.io/hostname is allowed"
)


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """MODE=webhooks with an audit log and the controller-manager (no scheduler: nothing
    here needs binding)."""
    api = apiserver_options("webhooks", CONFIG)
    options = ControlPlaneOptions(
        apiservers=(
            dataclasses.replace(
                api, audit=True, webhook_args=("--nodes", f"--exclude-namespace={OPTED_OUT}")
            ),
        ),
        scheduler=False,
    )
    with started_plane(options, "webhooks mode, audit log, controller-manager") as started:
        yield started


@pytest.fixture(scope="module")
def api(plane: ControlPlane) -> ApiServer:
    return plane.api


@pytest.fixture(scope="module")
def api_client(api: ApiServer) -> Iterator[Any]:
    with api.client() as made:
        yield made


_count = itertools.count()


def _namespace(api_client: Any, **kw: Any) -> str:
    name = f"w{next(_count)}"
    create_namespace(api_client, name, **kw)
    return name


def _pods(namespace: str, dry_run: bool = False) -> str:
    return f"/api/v1/namespaces/{namespace}/pods" + ("?dryRun=All" if dry_run else "")


def _spec(response: Response) -> dict[str, Any]:
    assert response.status in (200, 201), (response.status, response.body)
    spec: dict[str, Any] = response.body["spec"]
    return spec


def _update(
    api: ApiServer, path: str, edit: Callable[[dict[str, Any]], None], who: str = "admin"
) -> Response:
    """GET, edit, PUT as ``who``; again on a conflict (a controller wrote in between)."""
    for _ in range(10):
        current = api.get(path)[1]
        edit(current)
        answer = api.call("PUT", path, current, who=who)
        if answer.status != 409:
            return answer
    return answer


def _team_namespace(api_client: Any) -> str:
    """A namespace with a node selector, a default toleration and a whitelist that allows
    it, the memory-pressure toleration and the two 300 s defaults."""
    whitelist = [TEAM, MEMORY, NR300, UR300, {"key": "gpu", "operator": "Exists"}]
    return _namespace(
        api_client,
        annotations={
            NODE_SELECTOR: "env=prod",
            DEFAULTS: json.dumps([TEAM]),
            WHITELIST: json.dumps(whitelist),
        },
    )


BURSTABLE = [
    {
        "name": "main",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "100m"}},
    }
]


def test_a_created_pod_is_stored_with_what_the_mutating_webhook_added(
    api: ApiServer, api_client: Any
) -> None:
    namespace = _team_namespace(api_client)
    created = api.call("POST", _pods(namespace), pod_manifest("web", containers=BURSTABLE))
    spec = _spec(created)
    assert spec["nodeSelector"] == {"env": "prod"}
    # DefaultTolerationSeconds' two entries come first (it runs before the namespace's
    # defaults are merged), then the namespace default, then memory-pressure (Burstable).
    assert spec["tolerations"] == [NR300, UR300, TEAM, MEMORY]
    status, stored = api.get(f"{_pods(namespace)}/web")
    assert status == 200
    assert stored["spec"]["tolerations"] == spec["tolerations"]
    assert stored["spec"]["nodeSelector"] == spec["nodeSelector"]


def test_a_dry_run_create_answers_the_mutated_pod_and_stores_nothing(
    api: ApiServer, api_client: Any
) -> None:
    namespace = _team_namespace(api_client)
    answered = api.call(
        "POST", _pods(namespace, dry_run=True), pod_manifest("dry", containers=BURSTABLE)
    )
    spec = _spec(answered)
    assert spec["nodeSelector"] == {"env": "prod"}
    assert spec["tolerations"] == [NR300, UR300, TEAM, MEMORY]
    assert api.get(f"{_pods(namespace)}/dry")[0] == 404


def test_a_dedicated_namespace_s_pod_is_stored_pinned_to_its_group(
    api: ApiServer, api_client: Any
) -> None:
    namespace = _namespace(api_client, labels={DEDICATED: "gpu"})
    spec = _spec(api.call("POST", _pods(namespace), pod_manifest("trainer")))
    assert spec["tolerations"][-1] == {
        "key": "dedicated",
        "operator": "Equal",
        "value": "gpu",
        "effect": "NoSchedule",
    }
    assert spec["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [IN_GPU]}]
            }
        }
    }


DENIALS = [
    pytest.param(
        {NODE_SELECTOR: "env=prod"},
        {"nodeSelector": {"env": "dev"}},
        MUTATE + 'pods "p" is forbidden: pod node label selector conflicts with its namespace '
        "node label selector",
        id="a node selector contradicting the namespace's is refused by the mutating webhook",
    ),
    pytest.param(
        {WHITELIST: '[{"key": "team", "operator": "Exists"}]'},
        {"tolerations": [{"key": "gpu", "operator": "Exists"}]},
        MUTATE + "pod tolerations (possibly merged with namespace default tolerations) "
        "conflict with its namespace whitelist",
        id="a toleration outside the namespace whitelist is refused with upstream's text",
    ),
    pytest.param(
        {},
        {"affinity": ZONE_ANTI_AFFINITY},
        VALIDATE + f'pods "p" is forbidden: {ANTI_AFFINITY_REASON}',
        id="zone-wide required anti-affinity is refused by the validating webhook",
    ),
]


@pytest.mark.parametrize(("annotations", "spec", "message"), DENIALS)
def test_a_denial_reaches_the_client_as_403_with_the_webhook_s_message(
    api: ApiServer, api_client: Any, annotations: dict[str, str], spec: Any, message: str
) -> None:
    namespace = _namespace(api_client, annotations=annotations)
    for dry_run in (True, False):
        refused = api.call("POST", _pods(namespace, dry_run), pod_manifest("p", **spec))
        assert (refused.status, refused.message) == (403, message)
        assert refused.body["reason"] == "Forbidden"
    assert api.get(f"{_pods(namespace)}/p")[0] == 404


def _audit_annotations(api: ApiServer, namespace: str, name: str) -> dict[str, str]:
    events = eventually(
        lambda: auditlog.find(
            api.audit_log, verb="create", resource="pods", name=name, namespace=namespace
        ),
        f"the audit event of creating {namespace}/{name}",
    )
    annotations: dict[str, str] = events[-1].get("annotations") or {}
    return annotations


@pytest.mark.parametrize(
    ("rollout", "warned"),
    [
        pytest.param("warn", True, id="warn admits with a Warning header and an audit note"),
        pytest.param("audit", False, id="audit admits silently, with only an audit note"),
    ],
)
def test_warn_and_audit_admit_and_say_so_where_their_action_says(
    api: ApiServer, api_client: Any, rollout: str, warned: bool
) -> None:
    namespace = _namespace(api_client, labels={"rollout": rollout})
    created = api.call("POST", _pods(namespace), pod_manifest("zonal", affinity=ZONE_ANTI_AFFINITY))
    assert created.status == 201, created.body
    text = f'pods "zonal" is forbidden: {ANTI_AFFINITY_REASON}'
    # RFC 7234 warn-text: a quoted string, its own quotes escaped with a backslash.
    quoted = text.replace('"', '\\"')
    expected = [f'299 - "anti-affinity-topology: {quoted}"'] if warned else []
    assert list(created.warnings) == expected
    annotations = _audit_annotations(api, namespace, "zonal")
    key = "validate.placement-webhooks.svc/anti-affinity-topology"
    assert annotations[key] == f"{rollout}: {text}"


def test_the_mutating_webhook_s_audit_annotation_and_call_are_in_the_audit_event(
    api: ApiServer, api_client: Any
) -> None:
    namespace = _team_namespace(api_client)
    assert api.call("POST", _pods(namespace), pod_manifest("noted")).status == 201
    annotations = _audit_annotations(api, namespace, "noted")
    assert annotations["mutate.placement-webhooks.svc/pod-node-selector"] == (
        "nodeSelector gained env=prod from namespace annotation"
    )
    rounds = auditlog.mutation_rounds({"annotations": annotations})
    assert [(r["round"], r["webhook"], r["mutated"]) for r in rounds] == [
        (0, "mutate.placement-webhooks.svc", True)
    ]


def test_a_pod_update_is_judged_again_and_merged_before_it_is_stored(
    api: ApiServer, api_client: Any
) -> None:
    namespace = _team_namespace(api_client)
    created = api.call("POST", _pods(namespace), pod_manifest("upd", containers=BURSTABLE))
    assert created.status == 201, created.body
    path = f"{_pods(namespace)}/upd"

    def put(*added: dict[str, Any]) -> Response:
        def edit(current: dict[str, Any]) -> None:
            current["spec"]["tolerations"] = [*current["spec"]["tolerations"], *added]

        return _update(api, path, edit)

    refused = put(TOL_X)
    assert (refused.status, refused.message) == (
        403,
        MUTATE + "pod tolerations (possibly merged with namespace default tolerations) conflict "
        "with its namespace whitelist",
    )
    # The memory-pressure merge runs on UPDATE too: an entry the 300 s one subsumes goes.
    subsumed = put({**UR300, "tolerationSeconds": 60})
    assert subsumed.status == 200, subsumed.body
    assert subsumed.body["spec"]["tolerations"] == [NR300, UR300, TEAM, MEMORY]
    added = put(GPU_EQUAL)
    assert added.status == 200, added.body
    assert added.body["spec"]["tolerations"] == [NR300, UR300, TEAM, MEMORY, GPU_EQUAL]


GPU_EQUAL = {"key": "gpu", "operator": "Equal", "value": "x", "effect": "NoSchedule"}
TOL_X = {"key": "x", "operator": "Exists", "effect": "NoSchedule"}


def _daemonset(name: str, **spec: Any) -> dict[str, Any]:
    return daemonset_manifest(name, pod_manifest(name, **spec)["spec"])


DAEMON_DEFAULTS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    MEMORY,
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
NETWORK = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def _template_tolerations(response: Response) -> list[dict[str, Any]]:
    assert response.status in (200, 201), (response.status, response.body)
    found: list[dict[str, Any]] = response.body["spec"]["template"]["spec"]["tolerations"]
    return found


def test_a_daemonset_is_stored_created_updated_and_dry_run_with_the_default_tolerations(
    api: ApiServer, api_client: Any
) -> None:
    namespace = _namespace(api_client)
    path = f"/apis/apps/v1/namespaces/{namespace}/daemonsets"
    user = {**NR300, "tolerationSeconds": 30}
    dry = api.call("POST", path + "?dryRun=All", _daemonset("agent", tolerations=[user]))
    # The user's not-ready entry is the default's identity: rewritten in place, forever.
    assert _template_tolerations(dry) == DAEMON_DEFAULTS
    assert api.get(f"{path}/agent")[0] == 404
    created = api.call("POST", path, _daemonset("agent", tolerations=[TOL_X], hostNetwork=True))
    assert _template_tolerations(created) == [TOL_X, *DAEMON_DEFAULTS, NETWORK]

    def edit(current: dict[str, Any]) -> None:
        current["spec"]["template"]["spec"]["hostNetwork"] = False
        current["spec"]["template"]["spec"]["tolerations"] = [TOL_X]

    updated = _update(api, f"{path}/agent", edit)
    # Without hostNetwork the network-unavailable default is not added (nor was it kept).
    assert _template_tolerations(updated) == [TOL_X, *DAEMON_DEFAULTS]
    _delete(api, f"{path}/agent")


def _deployment(name: str, **spec: Any) -> dict[str, Any]:
    manifest = _daemonset(name, **spec)
    manifest["kind"] = "Deployment"
    manifest["spec"]["replicas"] = 1
    return manifest


def test_a_deployment_s_pods_get_the_mutations_when_its_replicaset_creates_them(
    api: ApiServer, api_client: Any
) -> None:
    namespace = _team_namespace(api_client)
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    dry = api.call("POST", path + "?dryRun=All", _deployment("web"))
    assert dry.status == 201
    assert "tolerations" not in dry.body["spec"]["template"]["spec"]  # templates are not mutated
    assert api.call("POST", path, _deployment("web")).status == 201
    core = client.CoreV1Api(api_client)
    pods = eventually(
        lambda: core.list_namespaced_pod(namespace, label_selector="app=web").items,
        "the Deployment's pod",
        limit=30,
    )
    assert pods[0].spec.node_selector == {"env": "prod"}
    keys = [t.key for t in pods[0].spec.tolerations]
    assert keys == [NR300["key"], UR300["key"], "team"]  # a BestEffort pod: no memory-pressure
    _delete(api, f"{path}/web")


def test_a_deployment_with_zone_anti_affinity_is_stored_but_its_pods_are_refused(
    api: ApiServer, api_client: Any
) -> None:
    namespace = _namespace(api_client)
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    created = api.call("POST", path, _deployment("zonal", affinity=ZONE_ANTI_AFFINITY))
    assert created.status == 201, created.body
    apps = client.AppsV1Api(api_client)

    def failure() -> str:
        for rs in apps.list_namespaced_replica_set(namespace).items:
            for condition in rs.status.conditions or []:
                if condition.type == "ReplicaFailure":
                    return str(condition.message)
        return ""

    message = eventually(failure, "the ReplicaSet reports its refused pod", limit=30)
    _delete(api, f"{path}/zonal")  # its ReplicaSet would retry, and count as webhook calls
    assert re.fullmatch(
        re.escape(VALIDATE)
        + r'pods "zonal-[a-z0-9]+-[a-z0-9]{5}" is forbidden: '
        + re.escape(ANTI_AFFINITY_REASON),
        message,
    ), message


def _delete(api: ApiServer, path: str) -> None:
    """Delete an object and what it owns, and wait until it is gone."""
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}
    api.call("DELETE", path, body)
    eventually(lambda: api.get(path)[0] == 404, f"{path} deleted", limit=30)


# --- who is sent: namespaces and match conditions, as the API server evaluates them ---------


def test_the_api_server_accepted_the_match_conditions_webhook_config_renders(
    api: ApiServer,
) -> None:
    """The API server compiles every CEL expression when the configuration is created (a
    type error is a 422 then), so being registered is the proof they compile."""
    settings = WebhookSettings(nodes=True)
    for kind, plural in (
        ("mutating", "mutatingwebhookconfigurations"),
        ("validating", "validatingwebhookconfigurations"),
    ):
        status, stored = api.get(f"/apis/admissionregistration.k8s.io/v1/{plural}/{SUITE}")
        assert status == 200, (kind, stored)
        for hook in stored["webhooks"]:
            nodes = hook["name"].startswith("nodes.")
            expected = match_conditions(settings, nodes=nodes)
            assert hook["matchConditions"] == expected, hook["name"]
    status, validating = api.get(
        f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{SUITE}"
    )
    assert [h["name"] for h in validating["webhooks"]] == [
        "validate.placement-webhooks.svc",
        "nodes.validate.placement-webhooks.svc",
    ]


SUITE = "placement-webhooks"


def _sent(plane: ControlPlane, action: Callable[[], Response]) -> tuple[Response, dict[str, int]]:
    """Run ``action``; what it answered and how many reviews ``serve`` answered meanwhile."""
    webhook = plane.webhooks[plane.api.name]
    before = _settled(webhook)
    answer = action()
    after = webhookserver.calls(webhook)
    return answer, {k: after.get(k, 0) - before.get(k, 0) for k in ("/mutate", "/validate")}


def _settled(webhook: webhookserver.WebhookServer) -> dict[str, int]:
    """The counts once they stop moving for half a second.

    Why: controllers (a ReplicaSet made for a Deployment, a DaemonSet's pod for a new Node)
    send their own requests a moment after the test's; a count taken in the middle of them
    would credit them to the next request.
    """
    last = webhookserver.calls(webhook)
    for _ in range(40):
        time.sleep(0.5)
        now = webhookserver.calls(webhook)
        if now == last:
            return now
        last = now
    return last


NONE = {"/mutate": 0, "/validate": 0}
BOTH = {"/mutate": 1, "/validate": 1}


def test_pods_of_excluded_namespaces_are_never_sent(
    plane: ControlPlane, api: ApiServer, api_client: Any
) -> None:
    for name in (OPTED_OUT, SUITE):
        create_namespace(api_client, name, annotations={NODE_SELECTOR: "env=prod"})
    for namespace in ("kube-system", OPTED_OUT, SUITE):
        eventually(
            lambda ns=namespace: (
                api.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200
            ),
            f"{namespace}'s default service account",
        )
        answer, sent = _sent(plane, lambda ns=namespace: api.call("POST", _pods(ns), POD))
        assert answer.status == 201, answer.body
        assert sent == NONE, namespace
        assert "nodeSelector" not in answer.body["spec"]


POD = pod_manifest("p", containers=BURSTABLE)


def test_a_pod_create_is_sent_to_both_phases(
    plane: ControlPlane, api: ApiServer, api_client: Any
) -> None:
    namespace = _namespace(api_client)
    answer, sent = _sent(plane, lambda: api.call("POST", _pods(namespace), POD))
    assert answer.status == 201 and sent == BOTH


def test_a_mirror_pod_is_not_sent(plane: ControlPlane, api: ApiServer, api_client: Any) -> None:
    namespace = _namespace(api_client, annotations={NODE_SELECTOR: "env=prod"})
    mirror = pod_manifest("static-web", nodeName="node-a")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    answer, sent = _sent(plane, lambda: api.call("POST", _pods(namespace), mirror))
    assert answer.status == 201, answer.body
    assert sent == NONE
    assert "nodeSelector" not in answer.body["spec"]


POD_UPDATES = [
    pytest.param(
        lambda pod: pod["metadata"].setdefault("labels", {}).update(tier="web"),
        NONE,
        id="a pod update changing only labels is not sent",
    ),
    pytest.param(
        lambda pod: pod["metadata"].setdefault("finalizers", []).append("example.com/keep"),
        NONE,
        id="a pod update adding a finalizer is not sent",
    ),
    pytest.param(
        lambda pod: pod["spec"]["tolerations"].append(TOL_X),
        BOTH,
        id="a pod update adding a toleration is sent to both phases",
    ),
    pytest.param(
        lambda pod: pod["spec"]["containers"][0].update(image="registry.k8s.io/pause:3.9"),
        BOTH,
        id="a pod update changing an image is sent (any spec change is)",
    ),
]


@pytest.mark.parametrize(("edit", "expected"), POD_UPDATES)
def test_an_update_is_sent_only_when_it_changes_the_spec(
    plane: ControlPlane,
    api: ApiServer,
    api_client: Any,
    edit: Callable[[dict[str, Any]], None],
    expected: dict[str, int],
) -> None:
    namespace = _namespace(api_client)
    assert api.call("POST", _pods(namespace), POD).status == 201
    answer, sent = _sent(plane, lambda: _update(api, f"{_pods(namespace)}/p", edit))
    assert answer.status == 200, answer.body
    assert sent == expected


def _template(path: tuple[str, ...]) -> Callable[[dict[str, Any]], None]:
    """An edit adding a toleration to the pod spec at ``path`` (a template's ``spec``)."""

    def edit(obj: dict[str, Any]) -> None:
        for key in path:
            obj = obj[key]
        obj["tolerations"] = [TOL_X]

    return edit


def _relabel(obj: dict[str, Any]) -> None:
    obj["metadata"].setdefault("labels", {})["tier"] = "changed"


TEMPLATE = ("spec", "template", "spec")
VALIDATE_ONLY = {"/mutate": 0, "/validate": 1}
#: (API path prefix, plural, manifest maker, edit, calls): every branch of the condition.
WORKLOAD_UPDATES = [
    pytest.param(
        "apps/v1",
        "deployments",
        lambda d: d["spec"].update(minReadySeconds=5),
        NONE,
        id="a Deployment update outside its template is not sent",
    ),
    pytest.param(
        "apps/v1",
        "deployments",
        _template(TEMPLATE),
        VALIDATE_ONLY,
        id="a Deployment whose template changes is sent to validation",
    ),
    pytest.param("apps/v1", "daemonsets", _relabel, NONE, id="a DaemonSet relabelled is not sent"),
    pytest.param(
        "apps/v1",
        "daemonsets",
        _template(TEMPLATE),
        BOTH,
        id="a DaemonSet whose template changes is sent to both phases",
    ),
    pytest.param(
        "apps/v1",
        "statefulsets",
        lambda d: d["spec"].update(minReadySeconds=5),
        NONE,
        id="a StatefulSet update outside its template is not sent",
    ),
    pytest.param(
        "apps/v1",
        "statefulsets",
        _template(TEMPLATE),
        VALIDATE_ONLY,
        id="a StatefulSet whose template changes is sent to validation",
    ),
    pytest.param(
        "batch/v1",
        "cronjobs",
        lambda c: c["spec"].update(schedule="*/7 * * * *"),
        NONE,
        id="a CronJob rescheduled is not sent",
    ),
    pytest.param(
        "batch/v1",
        "cronjobs",
        _template(("spec", "jobTemplate", *TEMPLATE)),
        VALIDATE_ONLY,
        id="a CronJob whose job template changes is sent to validation",
    ),
    pytest.param("v1", "podtemplates", _relabel, NONE, id="a PodTemplate relabelled is not sent"),
    pytest.param(
        "v1",
        "podtemplates",
        _template(("template", "spec")),
        VALIDATE_ONLY,
        id="a PodTemplate whose template changes is sent to validation",
    ),
]


def _workload(resource: str) -> dict[str, Any]:
    """A workload of ``resource`` that no controller of this plane acts on (no pods, no
    ReplicaSets: their creation would count as calls)."""
    manifest = _daemonset("w")
    template = manifest["spec"]["template"]
    if resource == "daemonsets":
        return manifest
    if resource == "deployments":
        manifest = _deployment("w")
        manifest["spec"].update(replicas=0, paused=True)
        return manifest
    if resource == "statefulsets":
        manifest["kind"] = "StatefulSet"
        manifest["spec"].update(replicas=0, serviceName="w")
        return manifest
    if resource == "cronjobs":
        template["spec"]["restartPolicy"] = "Never"
        return {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "w"},
            "spec": {
                "schedule": "*/5 * * * *",
                "suspend": True,
                "jobTemplate": {"spec": {"template": template}},
            },
        }
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "w"},
        "template": template,
    }


@pytest.mark.parametrize(("version", "resource", "edit", "expected"), WORKLOAD_UPDATES)
def test_a_workload_update_is_sent_only_when_its_template_changes(
    plane: ControlPlane,
    api: ApiServer,
    api_client: Any,
    version: str,
    resource: str,
    edit: Callable[[dict[str, Any]], None],
    expected: dict[str, int],
) -> None:
    namespace = _namespace(api_client)
    group = "/api" if version == "v1" else "/apis"
    path = f"{group}/{version}/namespaces/{namespace}/{resource}"
    created = api.call("POST", path, _workload(resource))
    assert created.status == 201, created.body
    answer, sent = _sent(plane, lambda: _update(api, f"{path}/w", edit))
    assert answer.status == 200, answer.body
    assert sent == expected
    _delete(api, f"{path}/w")  # a DaemonSet would make a pod on the Node a later test writes


def test_a_pod_a_kubelet_creates_is_not_sent(
    plane: ControlPlane, api: ApiServer, api_client: Any
) -> None:
    namespace = _namespace(api_client, annotations={NODE_SELECTOR: "env=prod"})
    answer, sent = _sent(
        plane, lambda: api.call("POST", _pods(namespace), POD_ON_NODE_A, who="node")
    )
    assert answer.status == 201, answer.body
    assert sent == NONE
    assert "nodeSelector" not in answer.body["spec"]


POD_ON_NODE_A = pod_manifest("kubelet-made", nodeName="node-a")
TAINT = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}


def test_node_taints_are_sent_only_when_they_change_and_not_from_node_controllers(
    plane: ControlPlane, api: ApiServer
) -> None:
    validate_only = {"/mutate": 0, "/validate": 1}
    node = node_manifest("node-a")
    answer, sent = _sent(plane, lambda: api.call("POST", "/api/v1/nodes", node))
    assert answer.status == 201, answer.body
    assert sent == validate_only  # a Node create by an admin

    def relabel(n: dict[str, Any]) -> None:
        n["metadata"]["labels"]["tier"] = "batch"

    def taint(n: dict[str, Any]) -> None:
        n["spec"]["taints"] = [*n["spec"].get("taints", []), TAINT]

    path = "/api/v1/nodes/node-a"
    for edit, who, expected, what in (
        (relabel, "admin", NONE, "a relabel leaves taints unchanged"),
        (taint, "admin", validate_only, "an admin's taint is validated"),
        (untaint, "controller-manager", NONE, "the node controllers' taints are not sent"),
        (taint, "node", NONE, "a kubelet's requests are not sent"),
    ):
        answer, sent = _sent(plane, lambda e=edit, w=who: _update(api, path, e, who=w))
        assert answer.status == 200, (what, answer.body)
        assert sent == expected, what


def untaint(node: dict[str, Any]) -> None:
    node["spec"]["taints"] = [t for t in node["spec"].get("taints", []) if t["key"] != TAINT["key"]]
