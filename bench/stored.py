"""Objects as a real API server stores them, for the audit benchmark and the audit tests.

Why so much server-set detail: the audit must admit a stored object as the CREATE that
admission saw, so every test object carries what the API server, the scheduler and the
kubelet add afterwards (status, nodeName, uid, resourceVersion, managedFields, a generated
name) and what was there at admission already (API defaults, the service-account token
volume), exactly where a cluster puts them.
"""

from __future__ import annotations

import copy
from typing import Any

#: The two tolerations DefaultTolerationSeconds gives a pod (300 s each).
DEFAULT_TOLERATIONS: list[dict[str, Any]] = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]
#: What ``check`` says default-toleration-seconds adds to a pod that has neither.
ADDED_DEFAULTS = (
    "added node.kubernetes.io/not-ready:NoExecute (Exists) for 300s, "
    "node.kubernetes.io/unreachable:NoExecute (Exists) for 300s"
)
CREATED = "2026-01-05T10:00:00Z"


def uid(kind: str, namespace: str, name: str) -> str:
    """A stable uid for an object, so owner references can name it before it is stored."""
    return f"{kind.lower()}-{namespace}-{name}".replace("/", "-")


def _server_metadata(meta: dict[str, Any], kind: str, manager: str) -> dict[str, Any]:
    meta.setdefault("uid", uid(kind, meta.get("namespace", ""), meta["name"]))
    meta.setdefault("creationTimestamp", CREATED)
    meta.setdefault(
        "managedFields",
        [
            {
                "manager": manager,
                "operation": "Update",
                "apiVersion": "v1",
                "time": CREATED,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {}, "f:spec": {}},
            }
        ],
    )
    return meta


def namespace(name: str, **labels: str) -> dict[str, Any]:
    """A Namespace with ``labels`` (and the name label every namespace has)."""
    meta: dict[str, Any] = {
        "name": name,
        "labels": {"kubernetes.io/metadata.name": name, **labels},
    }
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": _server_metadata(meta, "Namespace", "kubectl-create"),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def container(name: str = "app", image: str = "registry.example/app:1.0") -> dict[str, Any]:
    """A container with the fields API defaulting fills in."""
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def pod_spec(**extra: Any) -> dict[str, Any]:
    """A pod template's spec as stored (API defaults included), plus ``extra``."""
    spec: dict[str, Any] = {
        "containers": [container()],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "securityContext": {},
        "schedulerName": "default-scheduler",
    }
    spec.update(extra)
    return spec


def owner(kind: str, name: str, namespace: str) -> dict[str, Any]:
    """A controller owner reference to ``kind`` ``namespace/name``."""
    api = {"ReplicaSet": "apps/v1", "Deployment": "apps/v1", "DaemonSet": "apps/v1"}
    api.update({"StatefulSet": "apps/v1", "Job": "batch/v1", "CronJob": "batch/v1", "Node": "v1"})
    return {
        "apiVersion": api[kind],
        "kind": kind,
        "name": name,
        "uid": uid(kind, "" if kind == "Node" else namespace, name),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod(
    name: str,
    namespace: str,
    *,
    controller: tuple[str, str] | None = None,
    generated: bool = True,
    tolerations: list[dict[str, Any]] | None = None,
    phase: str = "Running",
    node: str = "worker-1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A Pod as the API server stores it after scheduling and a kubelet's status updates.

    ``controller`` is (kind, name) of its controller; its name is then generated from
    ``generateName`` unless ``generated`` is false (a StatefulSet names its pods). The
    service-account token volume and the default tolerations (``tolerations``: pass
    ``[]`` for a pod admitted while nothing added them) are there, as admission left them.
    """
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if controller is not None:
        if generated:
            meta["generateName"] = name.rsplit("-", 1)[0] + "-"
        meta["ownerReferences"] = [owner(*controller, namespace)]
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    meta["resourceVersion"] = "4711"
    token = {"name": "kube-api-access-x7k2p", "readOnly": True}
    token["mountPath"] = "/var/run/secrets/kubernetes.io/serviceaccount"
    body = pod_spec(**spec)
    body["containers"] = [{**c, "volumeMounts": [token]} for c in body["containers"]]
    body.update(
        serviceAccountName="default",
        serviceAccount="default",
        nodeName=node,
        enableServiceLinks=True,
        preemptionPolicy="PreemptLowerPriority",
        priority=0,
        volumes=[
            {
                "name": "kube-api-access-x7k2p",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                    ],
                },
            }
        ],
    )
    chosen = DEFAULT_TOLERATIONS if tolerations is None else tolerations
    if chosen:
        body["tolerations"] = copy.deepcopy(chosen)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _server_metadata(meta, "Pod", "kube-controller-manager"),
        "spec": body,
        "status": {
            "phase": phase,
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True" if phase == "Running" else "False"},
            ],
            "hostIP": "10.0.0.11",
            "podIP": "10.244.1.7",
            "qosClass": "Burstable",
            "startTime": CREATED,
            "containerStatuses": [
                {
                    "name": "app",
                    "ready": phase == "Running",
                    "restartCount": 0,
                    "image": "registry.example/app:1.0",
                    "imageID": "registry.example/app@sha256:0123",
                    "containerID": "containerd://abc",
                    "state": {"running": {"startedAt": CREATED}},
                }
            ],
        },
    }


def workload(
    kind: str,
    name: str,
    namespace: str,
    spec: dict[str, Any] | None = None,
    *,
    controller: tuple[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Deployment, ReplicaSet, StatefulSet, DaemonSet, Job or CronJob as stored."""
    template = {"metadata": {"labels": {"app": name}}, "spec": spec or pod_spec()}
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "generation": 3}
    meta["resourceVersion"] = "812"
    if labels:
        meta["labels"] = dict(labels)
    if controller is not None:
        meta["ownerReferences"] = [owner(*controller, namespace)]
    body: dict[str, Any]
    if kind == "CronJob":
        body = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}}
    elif kind == "Job":
        body = {"template": template, "backoffLimit": 6}
    else:
        body = {"selector": {"matchLabels": {"app": name}}, "template": template}
        if kind != "DaemonSet":
            body["replicas"] = 3
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": _server_metadata(meta, kind, "kubectl-client-side-apply"),
        "spec": body,
        "status": {"observedGeneration": 3, "replicas": 3, "readyReplicas": 3},
    }


def node(name: str, taints: list[dict[str, Any]] | None = None, **labels: str) -> dict[str, Any]:
    """A Node with ``taints`` and ``labels``, and a kubelet's status."""
    meta: dict[str, Any] = {
        "name": name,
        "labels": {"kubernetes.io/hostname": name, **labels},
    }
    spec: dict[str, Any] = {"podCIDR": "10.244.1.0/24"}
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _server_metadata(meta, "Node", "kubelet"),
        "spec": spec,
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": [{"names": ["registry.example/app:1.0"], "sizeBytes": 1000}],
        },
    }


def deployment_with_pods(
    name: str,
    namespace: str,
    pods: int,
    *,
    spec: dict[str, Any] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """A Deployment, its ReplicaSet and ``pods`` Pods, linked by owner references."""
    replica_set = f"{name}-5d8f7c9b4"
    objects = [
        workload("Deployment", name, namespace, spec),
        workload("ReplicaSet", replica_set, namespace, spec, controller=("Deployment", name)),
    ]
    extra = {k: v for k, v in (spec or {}).items() if k not in pod_spec()}
    for i in range(pods):
        objects.append(
            pod(
                f"{replica_set}-{i:05x}",
                namespace,
                controller=("ReplicaSet", replica_set),
                tolerations=tolerations,
                labels={"app": name},
                **extra,
            )
        )
    return objects


DEDICATED_TAINT = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
ZONE_ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "zonal"}},
                "topologyKey": "topology.kubernetes.io/zone",
            }
        ]
    }
}


def done_when() -> list[dict[str, Any]]:
    """The cluster of issue 15's "done when": two failures and one drift in ``shop``, a
    Node with an invalid taint key, and a clean dedicated namespace ``ml``.

    In ``shop`` (no dedicated group): the bare pod ``intruder`` tolerating the ``gpu``
    group's taint; the Deployment ``zonal`` with zone-level required anti-affinity (no
    pods yet); the Deployment ``web`` whose three pods lack the default tolerations.
    ``ml`` belongs to the group ``gpu`` and holds one pod that admission left as it should.
    """
    gpu_pod = pod(
        "trainer",
        "ml",
        tolerations=[
            *DEFAULT_TOLERATIONS,
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        ],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "dedicated", "operator": "In", "values": ["gpu"]}
                            ]
                        }
                    ]
                }
            }
        },
    )
    return [
        namespace("shop"),
        namespace("ml", **{"placement-webhooks.io/dedicated": "gpu"}),
        namespace("empty"),
        pod(
            "intruder",
            "shop",
            tolerations=[*DEFAULT_TOLERATIONS, DEDICATED_TAINT],
        ),
        workload("Deployment", "zonal", "shop", pod_spec(affinity=ZONE_ANTI_AFFINITY)),
        *deployment_with_pods("web", "shop", 3, tolerations=[]),
        gpu_pod,
        node("worker-1"),
        node("worker-2", [{"key": "bad key!", "value": "x", "effect": "NoSchedule"}]),
    ]


#: The config of the "done when": dedicated-nodes on (group from the Namespace label) and
#: anti-affinity-topology on.
DONE_WHEN_CONFIG = """\
plugins:
  dedicated-nodes: {enabled: true}
  anti-affinity-topology: {enabled: true}
"""
