"""Realistic AdmissionReview payloads: a ~4 KB Pod and a ~200 KB Pod with 50 containers.

The Pod is created in namespace ``shop`` and names RuntimeClass ``gvisor``, both defined in
``bench/configs/cluster.yaml``, so under the full config (``bench/configs/full.yaml``)
every plugin has work to do: the namespace's selector, default tolerations and whitelist,
its dedicated group and failover seconds, the RuntimeClass's overhead and scheduling, and
a required anti-affinity term to check.
"""

from __future__ import annotations

from typing import Any

import orjson


def _container(i: int, big: bool) -> dict[str, Any]:
    env = [
        {"name": f"VAR_{i}_{j}", "value": f"value-{j}-" + "x" * 40} for j in range(40 if big else 6)
    ]
    return {
        "name": f"app-{i}",
        "image": f"registry.example.com/team/app-{i}:1.{i}.0",
        "imagePullPolicy": "IfNotPresent",
        "args": ["--port=8080", "--log-level=info"],
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "env": env,
        "resources": {
            "requests": {"cpu": "250m", "memory": "256Mi"},
            "limits": {"cpu": "1", "memory": "512Mi"},
        },
        "readinessProbe": {
            "httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "volumeMounts": [
            {
                "name": "kube-api-access",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            }
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def pod(containers: int, big: bool) -> dict[str, Any]:
    """A Pod as the API server sends it to admission, defaults filled in."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "web-7d9c8b6f5-",
            "namespace": "shop",
            "labels": {"app": "web", "pod-template-hash": "7d9c8b6f5", "tier": "frontend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-7d9c8b6f5",
                    "uid": "0b7f3a8e-4c9d-4e57-9a0e-5d2f1c3b4a69",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [_container(i, big) for i in range(containers)],
            "runtimeClassName": "gvisor",
            "tolerations": [
                {"key": "team", "operator": "Equal", "value": "shop", "effect": "NoSchedule"}
            ],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            },
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "schedulerName": "default-scheduler",
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
                        ],
                    },
                }
            ],
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def review(obj: dict[str, Any]) -> dict[str, Any]:
    """Wrap a Pod in an AdmissionReview v1 request."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "2b6f3b7e-1f4e-4c3a-9b0a-7d2c1e5f8a90",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "shop",
            "operation": "CREATE",
            "userInfo": {
                "username": "system:serviceaccount:kube-system:replicaset-controller",
                "groups": ["system:serviceaccounts", "system:authenticated"],
            },
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


def small() -> bytes:
    """The ~4 KB review."""
    return orjson.dumps(review(pod(2, big=False)))


def large() -> bytes:
    """The ~200 KB review (50 containers)."""
    return orjson.dumps(review(pod(50, big=True)))
