"""A fleet's worth of pods: Deployments and bare pods over many namespaces, sized to a fleet,
each asking for what one of the fleet's pools offers, and some asking for what none does.

Why this mix: ``explain`` is compared with the real scheduler's bindings (issue 32, item 6),
and the comparison is only as good as the rules the pods exercise. So the pods reach every
pool of :mod:`controlplane.harness.fleet` the way a user's would:

* ``plain``, ``zone-spread`` and ``zone-pinned`` Deployments in the ``team-NN`` namespaces:
  small requests on the general pool, spread over zones (``topologySpreadConstraints``,
  ``DoNotSchedule``) or pinned to one zone (required node affinity);
* ``gpu`` Deployments: ``nvidia.com/gpu`` requests, whose toleration of the GPU pool's taint
  the API server's ExtendedResourceToleration adds;
* ``tenant`` Deployments in each tenant's Namespace: the tenant taint's toleration and the
  ``dedicated`` nodeSelector, as the ``dedicated-nodes`` plugin would write them;
* ``direct`` pods created one by one (no controller), and ``stranded`` pods that fit no node
  for a reason that does not depend on what else runs (a zone that does not exist, more CPU
  or GPUs than any node has, a tenant pool that does not exist).

Every pod carries :data:`KIND_LABEL`, so a sample can take some of each kind. Room is kept:
the pods that fit take at most about half of their pools' pods, CPU and GPUs, because
``explain`` places each pod alone (it ignores the pods already running) and a pod refused
only for room others took would be a disagreement about the workload, not about explain.
"""

from __future__ import annotations

import functools
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from controlplane.harness.components import ApiServer
from controlplane.harness.fleet import (
    DEDICATED_KEY,
    GPU_RESOURCE,
    POOL_LABEL,
    ZONE_LABEL,
    FleetShape,
)
from controlplane.harness.scheduling import Outcome

#: Which part of the workload a pod belongs to (``plain``, ``gpu``, ``stranded``, ...).
KIND_LABEL = "scale.placement-webhooks.io/kind"
PAUSE = "registry.k8s.io/pause:3.10"
TEAM_KINDS = ("plain", "zone-spread", "zone-pinned")
CREATE_THREADS = 8
PAGE = 500
#: Seconds to wait for one answer, and how many times a request is sent.
TIMEOUT = 60.0
TRIES = 5


@dataclass(frozen=True, slots=True)
class WorkloadShape:
    """How many pods, and in how large Deployments.

    ``replicas`` is the size of a team Deployment; the GPU, tenant, direct and stranded
    parts are fixed shares of ``pods``, capped by what their pools hold.
    """

    pods: int = 30_000
    replicas: int = 100
    direct_share: float = 0.01
    stranded_share: float = 0.005
    gpu_share: float = 0.02
    tenant_share: float = 0.05


@dataclass(frozen=True, slots=True)
class Workload:
    """The objects to create: Namespaces, Deployments and bare Pods, and the pod count."""

    namespaces: list[dict[str, Any]]
    deployments: list[dict[str, Any]]
    pods: list[dict[str, Any]]

    @property
    def expected(self) -> int:
        """How many pods the workload makes once every Deployment has its replicas."""
        return sum(d["spec"]["replicas"] for d in self.deployments) + len(self.pods)

    @property
    def stranded(self) -> int:
        """How many pods fit no node."""
        return sum(1 for p in self.pods if p["metadata"]["labels"][KIND_LABEL] == "stranded")


def _container(requests: Mapping[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": "main",
        "image": PAUSE,
        "resources": {"requests": dict(requests)},
    }
    extended = {k: v for k, v in requests.items() if "/" in k}
    if extended:
        found["resources"]["limits"] = extended
    return found


SMALL = {"cpu": "50m", "memory": "64Mi"}


def _spec(kind: str, index: int, shape: FleetShape, app: str) -> dict[str, Any]:
    """The pod spec of one kind; ``index`` varies the zone or the tenant among Deployments."""
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 0, "containers": [_container(SMALL)]}
    zone = shape.zones[index % len(shape.zones)]
    if kind == "zone-spread":
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE_LABEL,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    elif kind == "zone-pinned":
        term = {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    elif kind == "gpu":
        spec["containers"] = [_container({**SMALL, GPU_RESOURCE: "1"})]
    elif kind == "tenant":
        tenant = shape.tenants[index % len(shape.tenants)]
        spec["nodeSelector"] = {DEDICATED_KEY: tenant}
        spec["tolerations"] = [
            {"key": DEDICATED_KEY, "operator": "Equal", "value": tenant, "effect": "NoSchedule"}
        ]
    return spec


def _stranded_spec(index: int) -> tuple[str, dict[str, Any]]:
    """A pod spec no node of the fleet takes, whatever runs there, and what it asks for."""
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 0, "containers": [_container(SMALL)]}
    case = index % 5
    if case == 0:
        spec["nodeSelector"] = {ZONE_LABEL: "zone-nowhere"}
        return "a zone that does not exist", spec
    if case == 1:
        spec["containers"] = [_container({"cpu": "200", "memory": "64Mi"})]
        return "200 cores", spec
    if case == 2:
        spec["containers"] = [_container({**SMALL, GPU_RESOURCE: "16"})]
        return "16 GPUs", spec
    if case == 3:
        spec["nodeSelector"] = {DEDICATED_KEY: "tenant-nowhere"}
        spec["tolerations"] = [{"key": DEDICATED_KEY, "operator": "Exists", "effect": "NoSchedule"}]
        return "a tenant pool that does not exist", spec
    spec["nodeSelector"] = {POOL_LABEL: "general"}
    spec["containers"] = [_container({**SMALL, GPU_RESOURCE: "1"})]
    return "a GPU on the general pool", spec


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _deployment(namespace: str, name: str, kind: str, replicas: int, spec: Any) -> dict[str, Any]:
    labels = {"app": name, KIND_LABEL: kind}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def _pod(namespace: str, name: str, kind: str, spec: Any, what: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": {KIND_LABEL: kind}}
    if what:
        meta["annotations"] = {"corpus/what": what}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _split(total: int, size: int) -> list[int]:
    """``total`` in parts of ``size``, the last one smaller."""
    return [min(size, total - start) for start in range(0, total, size)]


def workload_objects(fleet: FleetShape, shape: WorkloadShape | None = None) -> Workload:
    """The workload of ``shape`` for a fleet of ``fleet``: pure, so a test can read it.

    Namespaces ``team-00``..., three Deployments each (one per :data:`TEAM_KINDS`), GPU
    Deployments in ``gpu-jobs``, tenant Deployments in the tenants' own Namespaces (the fleet
    creates those), bare pods in ``direct`` and ``stranded``.
    """
    shape = shape or WorkloadShape()
    pools = fleet.pools()
    size = max(1, shape.replicas)
    gpu_pods = min(int(shape.pods * shape.gpu_share), pools["gpu"] * 4)
    tenant_pods = {
        t: min(int(shape.pods * shape.tenant_share / len(fleet.tenants)), pools[t] * 50)
        for t in fleet.tenants
    }
    stranded = max(5, int(shape.pods * shape.stranded_share))
    direct = max(5, int(shape.pods * shape.direct_share))
    team_pods = shape.pods - gpu_pods - sum(tenant_pods.values()) - stranded - direct
    if team_pods < len(TEAM_KINDS):
        raise ValueError(f"{shape.pods} pods leave none for the team Deployments")

    namespaces = [_namespace(n) for n in ("gpu-jobs", "direct", "stranded")]
    deployments: list[dict[str, Any]] = []
    per_namespace = size * len(TEAM_KINDS)
    for n, chunk in enumerate(_split(team_pods, per_namespace)):
        namespace = f"team-{n:02d}"
        namespaces.append(_namespace(namespace))
        parts = [chunk // len(TEAM_KINDS)] * len(TEAM_KINDS)
        parts[0] += chunk - sum(parts)
        for kind, replicas in zip(TEAM_KINDS, parts, strict=True):
            if replicas:
                name = f"{kind}-{n:02d}"
                spec = _spec(kind, n, fleet, name)
                deployments.append(_deployment(namespace, name, kind, replicas, spec))
    for n, replicas in enumerate(_split(gpu_pods, size)):
        name = f"gpu-{n:02d}"
        deployments.append(
            _deployment("gpu-jobs", name, "gpu", replicas, _spec("gpu", n, fleet, name))
        )
    for t, (tenant, count) in enumerate(tenant_pods.items()):
        for n, replicas in enumerate(_split(count, size)):
            name = f"tenant-{n:02d}"
            spec = _spec("tenant", t, fleet, name)
            deployments.append(_deployment(tenant, name, "tenant", replicas, spec))
    pods = [
        _pod("direct", f"direct-{i:05d}", "direct", _spec("plain", i, fleet, ""))
        for i in range(direct)
    ]
    for i in range(stranded):
        what, spec = _stranded_spec(i)
        pods.append(_pod("stranded", f"stranded-{i:05d}", "stranded", spec, what))
    return Workload(namespaces, deployments, pods)


@functools.cache
def _context(cafile: str) -> ssl.SSLContext:
    """One TLS context per CA file: read once, not once per request."""
    return ssl.create_default_context(cafile=cafile)


def request(
    server: ApiServer, method: str, path: str, body: Any = None, *, tries: int = TRIES
) -> tuple[int, Any]:
    """Send a request as admin with :data:`TIMEOUT`, asked again on no answer, 429 or 5xx.

    Why not :meth:`ApiServer.request` alone: it gives up after 5 s, which suits probes of a
    starting server, while an API server storing tens of thousands of pods on a busy
    machine may take longer to answer a create or a page of a LIST, and is not broken.
    """
    context = _context(str(server.credentials.serving.ca))
    headers = {"Authorization": f"Bearer {server.credentials.tokens['admin']}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    status, answer = 0, None
    for attempt in range(tries):
        if attempt:
            time.sleep(min(2.0**attempt, 10.0))
        req = urllib.request.Request(server.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT, context=context) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except (OSError, ssl.SSLError):
            status, raw = 0, b""
        if status and status != 429 and status < 500:
            break
    try:
        answer = json.loads(raw) if raw else None
    except ValueError:
        answer = None
    return status, answer


def _post(server: ApiServer, path: str, manifest: Mapping[str, Any]) -> None:
    # A create asked again after a lost answer may find its own object: 409 is success.
    status, body = request(server, "POST", path, manifest)
    if status not in (200, 201, 409):
        name = manifest["metadata"]["name"]
        raise RuntimeError(f"could not create {manifest['kind']} {name}: {status} {body}")


def create_workload(server: ApiServer, workload: Workload) -> None:
    """Create the Namespaces (each with its ``default`` ServiceAccount), the Deployments,
    then the bare pods, with concurrent requests.

    Why the ServiceAccount here: the ServiceAccount admission plugin refuses a pod until
    its account exists, and the controller-manager's token controller may be behind.
    """

    def namespace(ns: Mapping[str, Any]) -> None:
        name = ns["metadata"]["name"]
        _post(server, "/api/v1/namespaces", ns)
        account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        _post(server, f"/api/v1/namespaces/{name}/serviceaccounts", account)

    def deployment(d: Mapping[str, Any]) -> None:
        _post(server, f"/apis/apps/v1/namespaces/{d['metadata']['namespace']}/deployments", d)

    def pod(p: Mapping[str, Any]) -> None:
        _post(server, f"/api/v1/namespaces/{p['metadata']['namespace']}/pods", p)

    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        list(pool.map(namespace, workload.namespaces))
        list(pool.map(deployment, workload.deployments))
        list(pool.map(pod, workload.pods))


def list_all(server: ApiServer, path: str, *, page: int = PAGE) -> list[dict[str, Any]]:
    """Every item of a LIST at ``path`` (which may carry a query), in pages of ``page``.

    Why pages: one LIST of tens of thousands of pods is a response of a hundred megabytes
    that the API server builds in one piece; pages keep both sides' memory flat.
    """
    items: list[dict[str, Any]] = []
    token = ""
    joiner = "&" if "?" in path else "?"
    while True:
        query = f"{path}{joiner}limit={page}" + (f"&continue={token}" if token else "")
        status, body = request(server, "GET", query)
        if status != 200:
            raise RuntimeError(f"could not list {path}: {status} {body}")
        items += body.get("items", [])
        token = body.get("metadata", {}).get("continue", "")
        if not token:
            return items


def decision_of(pod: Mapping[str, Any]) -> Outcome | None:
    """The scheduler's decision recorded on a pod as a plain dict (see
    :func:`controlplane.harness.scheduling.decision`, which reads client models)."""
    name = pod["metadata"]["name"]
    node = pod.get("spec", {}).get("nodeName")
    if node:
        return Outcome(name, node)
    for condition in pod.get("status", {}).get("conditions") or []:
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return Outcome(name, None, condition.get("message", ""))
    return None


def created_count(server: ApiServer, workload: Workload) -> int:
    """How many of the workload's pods exist, from the ReplicaSets' status (a small LIST)
    and the bare pods, without listing every pod."""
    replica_sets = list_all(server, "/apis/apps/v1/replicasets")
    return sum(rs.get("status", {}).get("replicas", 0) for rs in replica_sets) + len(workload.pods)


def undecided(server: ApiServer) -> tuple[int, int]:
    """(pods not bound, of which the scheduler has not yet found unschedulable): one LIST
    of the pods without ``spec.nodeName``, small once most are bound."""
    pending = list_all(server, "/api/v1/pods?fieldSelector=spec.nodeName%3D")
    return len(pending), sum(1 for p in pending if decision_of(p) is None)


def stored_pods(server: ApiServer, namespaces: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """Every pod of the cluster (or of ``namespaces``), by ``namespace/name``, as stored."""
    paths = [f"/api/v1/namespaces/{ns}/pods" for ns in namespaces] or ["/api/v1/pods"]
    found: dict[str, dict[str, Any]] = {}
    for path in paths:
        for pod in list_all(server, path):
            meta = pod["metadata"]
            found[f"{meta['namespace']}/{meta['name']}"] = pod
    return found
