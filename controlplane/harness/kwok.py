"""kwok as the fleet's kubelets: node heartbeats, node Leases and pod phases, for many nodes.

Why kwok rather than :class:`~controlplane.harness.nodes.LeaseRenewer`: a fleet of hundreds
of nodes needs every node's Lease renewed, its status heartbeat written, and every pod bound
to it moved to Running (a Deployment counts only Running, Ready pods as available; a Job
completes only on Succeeded pods), which is a kubelet's work per node. kwok does that work for
any number of nodes in one process, from Stage objects that say which object changes how.

What this module decides:

* **Which nodes.** kwok manages only Nodes labelled :data:`MANAGED_LABEL` (``--manage-nodes-
  with-label-selector``), so the Nodes other tests write (and heartbeat themselves) are left
  alone. Removing the label is how :func:`stop_heartbeats` makes a node fail: kwok's node
  watch sees it leave the selection, cancels the node's pending status heartbeat and stops
  renewing its Lease, exactly what a dead kubelet stops doing.
* **Which Stages.** kwok's module ships them (``kustomize/stage``); they are read at run time
  from the Go module cache (:func:`stage_documents`), never copied into this repository:
  ``node/fast`` (a new Node gets its conditions, Ready, and keeps the capacity we wrote),
  ``node/heartbeat-with-lease`` (the status heartbeat, its period set here, as a kubelet's
  ``nodeStatusReportFrequency``), and ``pod/fast``: a bound pod becomes Running and Ready,
  a pod being deleted is deleted, and a pod **owned by a Job** becomes Succeeded once it
  runs. The Job owner reference is the marker: a Job of N completions finishes with no label
  of ours on its template, and a Deployment's pods, owned by a ReplicaSet, run forever.
* **Leases.** ``--node-lease-duration-seconds`` (40, a kubelet's default): kwok creates each
  managed node's Lease and renews it every quarter of that, as a kubelet does.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import shutil
import subprocess
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from controlplane import build
from controlplane.harness.components import ApiServer, fetch
from controlplane.harness.nodes import NODE_LEASE_NAMESPACE
from controlplane.harness.process import Component, free_port, wait_until
from controlplane.release import KWOK, tools_dir

#: The label kwok selects the Nodes it manages by; its value is :data:`MANAGED_VALUE`.
MANAGED_LABEL = "scale.placement-webhooks.io/kwok"
MANAGED_VALUE = "managed"
#: A kubelet's default ``nodeLeaseDurationSeconds``; kwok renews every quarter of it.
LEASE_SECONDS = 40
#: A kubelet's default ``nodeStatusReportFrequency`` (5 min) when its Lease is renewed.
STATUS_SECONDS = 300
#: kwok's Stage files this bed uses, under the module's ``kustomize/stage``.
STAGE_FILES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
)
#: The pod IPs kwok hands out for nodes without ``spec.podCIDR`` (the fleet sets one per node).
POD_CIDR = "10.128.0.0/9"
START_TIMEOUT = 60.0


class KwokNotBuilt(RuntimeError):
    """The cache holds no finished build of kwok; the message says how to make it."""


def module_dir() -> Path:
    """Where the Go module cache holds kwok's module (its source, with its Stage files).

    Why ask ``go``: the module cache's place depends on ``GOMODCACHE``/``GOPATH``, and the
    build already downloaded the module, so this answers from the cache without a network.
    """
    go = shutil.which("go")
    if go is None:
        raise KwokNotBuilt(
            "Go is not installed (`go` is not on PATH): kwok's Stages are read from its module"
        )
    proc = subprocess.run(
        [go, "mod", "download", "-json", f"{KWOK.module}@{KWOK.version}"],
        cwd=KWOK.module_dir,
        capture_output=True,
        text=True,
        check=False,
    )
    info = json.loads(proc.stdout) if proc.stdout.strip() else {}
    if proc.returncode != 0 or "Dir" not in info:
        raise KwokNotBuilt(
            f"{KWOK.module}@{KWOK.version} is not in the Go module cache: "
            f"{info.get('Error') or proc.stderr.strip()} (run `make scale` to build kwok)"
        )
    return Path(info["Dir"])


def stage_documents(status_seconds: int = STATUS_SECONDS) -> list[dict[str, Any]]:
    """kwok's own Stages (:data:`STAGE_FILES`), read from its module, with the status
    heartbeat every ``status_seconds`` (plus up to a tenth more, so heartbeats spread out).

    Why change the heartbeat's delay: the shipped Stage beats every 10 minutes, twice a
    kubelet's default, and a test that checks that a failed node stops beating needs a
    shorter period.
    """
    root = module_dir() / "kustomize" / "stage"
    stages: list[dict[str, Any]] = []
    for name in STAGE_FILES:
        for document in yaml.safe_load_all((root / name).read_text()):
            if not document:
                continue
            stage = copy.deepcopy(document)
            if stage["metadata"]["name"] == "node-heartbeat-with-lease":
                stage["spec"]["delay"] = {
                    "durationMilliseconds": status_seconds * 1000,
                    "jitterDurationMilliseconds": status_seconds * 1100,
                }
            stages.append(stage)
    return stages


def start_kwok(
    directory: Path,
    server: ApiServer,
    *,
    lease_seconds: int = LEASE_SECONDS,
    status_seconds: int = STATUS_SECONDS,
    timeout: float = START_TIMEOUT,
) -> Component:
    """kwok against ``server`` (its admin kubeconfig), managing the Nodes labelled
    :data:`MANAGED_LABEL`; returns once its ``/healthz`` answers.

    Why admin: kwok writes Node and Pod status, Leases in ``kube-node-lease`` and deletes
    pods, which no single built-in role grants. Its ``/healthz`` is served on plain HTTP on
    loopback; kwok starts serving it only after its controllers started watching.
    """
    if not build.is_tool_built(KWOK):
        raise KwokNotBuilt(f"no finished build of kwok in {tools_dir()}: run `make scale`")
    directory.mkdir(parents=True, exist_ok=True)
    stages = directory / "stages.yaml"
    stages.write_text(yaml.safe_dump_all(stage_documents(status_seconds), sort_keys=False))
    port = free_port()
    args = [
        str(tools_dir() / KWOK.name),
        f"--kubeconfig={server.kubeconfig}",
        f"--config={stages}",
        f"--manage-nodes-with-label-selector={MANAGED_LABEL}={MANAGED_VALUE}",
        f"--node-lease-duration-seconds={lease_seconds}",
        f"--server-address=127.0.0.1:{port}",
        f"--cidr={POD_CIDR}",
        # Every Lease renewal is an INFO line: thousands a minute at fleet size.
        "--v=WARN",
    ]
    component = Component("kwok", args, directory / "kwok.log")
    try:
        wait_until(lambda: healthy(port), timeout=timeout, components=[component], what="serving")
    except BaseException:
        component.stop()
        raise
    return component


def healthy(port: int) -> bool:
    """Whether kwok on ``port`` answers ``/healthz`` with ok."""
    status, _ = fetch(urllib.request.Request(f"http://127.0.0.1:{port}/healthz"), None)
    return status == 200


def managed_labels() -> dict[str, str]:
    """The label a Node needs for kwok to play its kubelet."""
    return {MANAGED_LABEL: MANAGED_VALUE}


def stop_heartbeats(server: ApiServer, node_names: Iterable[str]) -> None:
    """Make kwok stop renewing the Leases and status heartbeats of ``node_names``.

    Why by removing the label: the node then leaves kwok's watch, which cancels its pending
    heartbeat and releases its Lease, while every other node keeps beating in the same
    process. The label is removed with a JSON merge patch (``null`` deletes the key).
    """
    for name in node_names:
        status, body = server.request(
            "PATCH",
            f"/api/v1/nodes/{name}",
            {"metadata": {"labels": {MANAGED_LABEL: None}}},
            content_type="application/merge-patch+json",
        )
        if status != 200:
            raise RuntimeError(f"could not unlabel node {name}: {status} {body}")


def _parse(stamp: str | None) -> dt.datetime | None:
    if not stamp:
        return None
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def lease_renewals(server: ApiServer) -> dict[str, dt.datetime]:
    """Each node Lease's ``renewTime``, by node name (one LIST)."""
    status, body = server.get(
        f"/apis/coordination.k8s.io/v1/namespaces/{NODE_LEASE_NAMESPACE}/leases"
    )
    if status != 200:
        raise RuntimeError(f"could not list node Leases: {status} {body}")
    renewals: dict[str, dt.datetime] = {}
    for lease in body.get("items", []):
        renewed = _parse(lease.get("spec", {}).get("renewTime"))
        if renewed is not None:
            renewals[lease["metadata"]["name"]] = renewed
    return renewals


def heartbeats(nodes: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, dt.datetime | None]]:
    """Each Node's Ready condition ``lastHeartbeatTime`` (``None`` before kwok set one)."""
    for node in nodes:
        conditions = node.get("status", {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "Ready"), {})
        yield node["metadata"]["name"], _parse(ready.get("lastHeartbeatTime"))
