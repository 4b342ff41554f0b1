"""The CEL match conditions, compiled and evaluated by a real API server.

The unit tests evaluate each condition with cel-python; here kube-apiserver does it. Every
option set of ``webhook-config`` and of the chart is created for real (the API server
compiles each expression and checks its estimated cost on create), and the default release,
registered as the chart renders it, is sent a table of requests: ``serve``'s review log
says which reached it. A ~200 KB Pod shows the whole-spec comparison stays within the API
server's runtime cost limit (an evaluation error would refuse the request under ``Fail``).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controlplane.harness import ControlPlane, create_namespace, pod_manifest
from controlplane.harness.apply import apply_objects, delete_objects
from controlplane.harness.metrics import apiserver_metrics, metric_sum
from controlplane.harness.process import Component
from controlplane.harness.servicenet import ServedService
from tests.command import run_cli
from tests.controlplane.chart.conftest import FIGURES
from tests.controlplane.chart.served import WEBHOOK_KINDS, create_pod, rendered, serve_release
from tests.waiting import eventually

ALL_PLUGINS = {
    name: {"enabled": True}
    for name in (
        "pod-node-selector",
        "pod-toleration-restriction",
        "dedicated-nodes",
        "anti-affinity-topology",
    )
}

CLI_OPTIONS: dict[str, list[str]] = {
    "the defaults": [],
    "one webhook per plugin": ["--per-plugin"],
    "the Node webhook": ["--nodes"],
    "skipped users and groups": [
        "--skip-user=system:serviceaccount:kube-system:cluster-autoscaler",
        "--skip-group=system:serviceaccounts:descheduler",
    ],
    "unchanged updates sent": ["--send-unchanged-updates"],
    "no match conditions": ["--no-match-conditions"],
    "selectors": [
        "--namespace-selector={matchLabels: {placement-webhooks.io/enabled: 'true'}}",
        "--object-selector={matchExpressions: [{key: k8s-app, operator: NotIn, values: [x]}]}",
    ],
    "every plugin, per plugin, with Nodes": ["--all-plugins", "--per-plugin", "--nodes"],
}
CHART_VALUES: dict[str, dict[str, Any]] = {
    "the defaults": {},
    "one webhook per plugin": {"webhooks": {"perPlugin": True}},
    "the Node webhook": {"webhooks": {"nodes": {"enabled": True}}},
    "skipped users and groups": {
        "webhooks": {
            "matchConditions": {
                "skipUsers": ["system:serviceaccount:kube-system:cluster-autoscaler"],
                "skipGroups": ["system:serviceaccounts:descheduler"],
            }
        }
    },
    "unchanged updates sent": {"webhooks": {"matchConditions": {"skipUnchangedUpdates": False}}},
    "no match conditions": {"webhooks": {"matchConditions": {"enabled": False}}},
    "every plugin, per plugin, with Nodes": {
        "plugins": ALL_PLUGINS,
        "webhooks": {"perPlugin": True, "nodes": {"enabled": True}},
    },
}


def _webhook_config(options: list[str], tmp_path: Path) -> list[dict[str, Any]]:
    args = [o for o in options if o != "--all-plugins"]
    if "--all-plugins" in options:
        config = tmp_path / "all-plugins.yaml"
        config.write_text(yaml.safe_dump({"plugins": ALL_PLUGINS}))
        args.append(f"--config={config}")
    proc = run_cli("webhook-config", "--url=https://127.0.0.1:1", *args)
    assert proc.returncode == 0, proc.stderr
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


def _create_and_remove(admin: Any, objects: list[dict[str, Any]], suffix: str) -> int:
    """Create each configuration under a unique name (the API server compiles its CEL), then
    delete it; returns how many conditions were compiled."""
    created, conditions = [], 0
    try:
        for obj in objects:
            if obj["kind"] not in WEBHOOK_KINDS:
                continue
            renamed = copy.deepcopy(obj)
            renamed["metadata"]["name"] += f"-{suffix}"
            conditions += sum(len(h.get("matchConditions") or []) for h in renamed["webhooks"])
            created.append(apply_objects(admin, [renamed])[0])
    finally:
        delete_objects(admin, created)
    return conditions


@pytest.mark.parametrize("option", list(CLI_OPTIONS))
def test_the_api_server_compiles_what_webhook_config_prints(
    admin: Any, tmp_path: Path, option: str
) -> None:
    objects = _webhook_config(CLI_OPTIONS[option], tmp_path)
    compiled = _create_and_remove(admin, objects, f"cli-{list(CLI_OPTIONS).index(option)}")
    assert compiled > 0 or option == "no match conditions"


@pytest.mark.parametrize("option", list(CHART_VALUES))
def test_the_api_server_compiles_what_the_chart_renders(admin: Any, option: str) -> None:
    for upgrade in (False, True):
        objects = rendered(CHART_VALUES[option], "mc", "placement-mc", upgrade=upgrade)
        suffix = f"chart-{list(CHART_VALUES).index(option)}-{int(upgrade)}"
        compiled = _create_and_remove(admin, objects, suffix)
        assert compiled > 0 or option == "no match conditions"


def test_an_expression_that_does_not_compile_is_refused_on_create(
    admin: Any, tmp_path: Path
) -> None:
    # The control: creating a configuration is where the API server compiles its CEL.
    [validating] = [o for o in _webhook_config([], tmp_path) if o["kind"] == WEBHOOK_KINDS[1]]
    validating["metadata"]["name"] += "-broken"
    validating["webhooks"][0]["matchConditions"][0]["expression"] = "object.spec =="
    with pytest.raises(ApiException) as refused:
        apply_objects(admin, [validating])
    assert refused.value.status == 422
    assert "compilation failed" in json.loads(refused.value.body)["message"]


# --------------------------------------------------------------------------- evaluation

RELEASE, NAMESPACE, APPS = "mce", "placement-mce", "mce-apps"


def _big_pod(name: str) -> dict[str, Any]:
    """A Pod of about 200 KB: 1,600 environment variables of ~120 bytes each."""
    pod = pod_manifest(name)
    pod["spec"]["containers"][0]["env"] = [
        {"name": f"SETTING_{i:04d}", "value": "v" * 100} for i in range(1600)
    ]
    return pod


def _replica_set(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def _sent(served: ServedService, kind: str, name: str, operation: str) -> bool:
    return any(
        r.get("kind") == kind and r.get("name") == name and r.get("operation") == operation
        for r in served.reviews()
    )


def _barrier(admin: Any, served: ServedService, tag: str) -> None:
    """Wait until a request that is always sent has been logged: the log is in order, so
    whatever was sent before it is in the log too."""
    create_pod(admin, APPS, f"barrier-{tag}", dry_run=True)
    eventually(lambda: _sent(served, "Pod", f"barrier-{tag}", "CREATE"), "the barrier", 30)


Action = Callable[[client.CoreV1Api, client.AppsV1Api], Any]
SCALE = {"spec": {"replicas": 2}}
ACTIONS: list[tuple[str, str, str, str, Action, bool]] = [
    (
        "a ReplicaSet create is sent",
        "ReplicaSet",
        "web",
        "CREATE",
        lambda core, apps: apps.create_namespaced_replica_set(APPS, _replica_set("web")),
        True,
    ),
    (
        "a ReplicaSet scale (its replicas) is not sent",
        "ReplicaSet",
        "web",
        "UPDATE",
        lambda core, apps: apps.patch_namespaced_replica_set("web", APPS, SCALE),
        False,
    ),
    (
        "a change to its pod template is sent",
        "ReplicaSet",
        "web",
        "UPDATE",
        lambda core, apps: apps.patch_namespaced_replica_set(
            "web", APPS, {"spec": {"template": {"metadata": {"annotations": {"rev": "2"}}}}}
        ),
        True,
    ),
    (
        "a 200 KB Pod create is sent",
        "Pod",
        "big",
        "CREATE",
        lambda core, apps: core.create_namespaced_pod(APPS, _big_pod("big")),
        True,
    ),
    (
        "relabelling the 200 KB Pod is not sent",
        "Pod",
        "big",
        "UPDATE",
        lambda core, apps: core.patch_namespaced_pod(
            "big", APPS, {"metadata": {"labels": {"tier": "gold"}}}
        ),
        False,
    ),
    (
        "changing its image is sent",
        "Pod",
        "big",
        "UPDATE",
        lambda core, apps: core.patch_namespaced_pod(
            "big",
            APPS,
            {"spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]}},
        ),
        True,
    ),
]


def test_the_api_server_sends_exactly_what_the_conditions_select(
    plane: ControlPlane, admin: Any, tmp_path: Path, processes: list[Component]
) -> None:
    core, apps = client.CoreV1Api(admin), client.AppsV1Api(admin)
    create_namespace(admin, NAMESPACE)
    create_namespace(admin, APPS)
    objects = rendered(None, RELEASE, NAMESPACE)
    apply_objects(admin, objects)
    served = serve_release(plane, admin, RELEASE, NAMESPACE, tmp_path, processes=processes)
    _barrier(admin, served, "start")
    before = apiserver_metrics(plane.api)
    try:
        for index, (what, kind, name, operation, act, sent) in enumerate(ACTIONS):
            began = time.monotonic()
            act(core, apps)  # admitted: under Fail, an evaluation error would refuse it
            if name == "big":
                FIGURES.append((what, f"admitted in {time.monotonic() - began:.2f} s"))
            _barrier(admin, served, str(index))
            if sent:
                # The release runs two workers, each writing its own review log in batches,
                # so the barrier may be logged by one worker before the other logs this.
                eventually(lambda k=kind, n=name, o=operation: _sent(served, k, n, o), what, 30)
            assert _sent(served, kind, name, operation) == sent, what
    finally:
        delete_objects(admin, [o for o in objects if o["kind"] in WEBHOOK_KINDS])
    after = apiserver_metrics(plane.api)
    errors = "apiserver_admission_match_condition_evaluation_errors_total"
    excluded = "apiserver_admission_match_condition_exclusions_total"
    assert metric_sum(after, errors) == metric_sum(before, errors) == 0
    assert metric_sum(after, excluded) > metric_sum(before, excluded)
