"""What the server's ResourceClaim cache costs: memory per 10,000 claims.

With ``extended-resource-toleration``'s ``deviceClaims`` or ``enforce`` on, the server
watches ResourceClaims, ResourceClaimTemplates and DeviceClasses. A cluster has one
ResourceClaim per pod that uses DRA, so claims are the one collection that grows with the
workload. This builds ``--claims`` claims (10,000) the way the API server returns them in
a list (metadata with owner references, labels, finalizers and managed fields; the spec;
an allocated status with device results and a reservation), decodes them from JSON as the
cache does, and stores them in the cache's form (the device class names their requests
name, keyed ``namespace/name``: :func:`~webhooks.cluster.informer.store_claim`). It
prints the memory the stored form holds (tracemalloc, after each page is dropped) and, in
a second run without tracing, the RSS growth; then the same for the whole decoded
objects, for comparison. The cache is filled through the informer's own code path
(``stored`` and ``key_of``, a page of 500 at a time), so the figure is the cache's, not a
model of it.

``make bench`` does not run it (it needs no server); alone: ``python -m bench.dra_cache_bench``.
"""

from __future__ import annotations

import argparse
import gc
import resource
import tracemalloc
from typing import Any

import orjson

from webhooks.cluster.informer import RESOURCE_CLAIMS, key_of, shown, stored


def claim(i: int) -> dict[str, Any]:
    """One ResourceClaim made from a template for pod ``train-<i>``, allocated and reserved."""
    namespace = f"team-{i % 8}"
    pod = f"train-{i // 4}-{i % 4}"
    uid = f"{i:08x}-1111-4222-8333-{i:012x}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"{pod}-gpu-{i:05x}",
            "generateName": f"{pod}-gpu-",
            "namespace": namespace,
            "uid": uid,
            "resourceVersion": str(1_000_000 + i),
            "creationTimestamp": "2026-11-02T10:00:00Z",
            "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
            "labels": {"app": "train", "batch.kubernetes.io/job-name": f"train-{i // 4}"},
            "finalizers": ["resource.kubernetes.io/delete-protection"],
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod,
                    "uid": f"{i:08x}-aaaa-4bbb-8ccc-{i:012x}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "resource.k8s.io/v1",
                    "time": "2026-11-02T10:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:ownerReferences": {}}},
                },
                {
                    "manager": "kube-scheduler",
                    "operation": "Update",
                    "apiVersion": "resource.k8s.io/v1",
                    "time": "2026-11-02T10:00:01Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:allocation": {}, "f:reservedFor": {}}},
                    "subresource": "status",
                },
            ],
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu.example.com",
                            "allocationMode": "ExactCount",
                            "count": 1,
                        },
                    }
                ]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.example.com",
                            "pool": f"node-{i % 500:03d}",
                            "device": f"gpu-{i % 8}",
                        }
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": [f"node-{i % 500:03d}"],
                                }
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": pod, "uid": uid}],
        },
    }


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # pragma: no cover


def _fill(pages: list[bytes], keep: bool, trace: bool) -> tuple[dict[str, Any], int]:
    """Decode list pages and store them as the cache does; the cache and what it added:
    traced bytes with ``trace``, else RSS growth in bytes."""
    gc.collect()
    rss_before = _rss_kib()
    if trace:
        tracemalloc.start()
    items: dict[str, Any] = {}
    for page in pages:  # the informer lists in pages of 500, and so does this
        for item in orjson.loads(page)["items"]:
            key = key_of(item, RESOURCE_CLAIMS)
            if key is not None:
                items[key] = stored(item, RESOURCE_CLAIMS) if keep else item
    gc.collect()
    if trace:
        traced, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return items, traced
    return items, (_rss_kib() - rss_before) * 1024


def _measure(pages: list[bytes], keep: bool) -> tuple[dict[str, Any], int, int]:
    _, traced = _fill(pages, keep, trace=True)
    items, rss = _fill(pages, keep, trace=False)
    return items, traced, rss


def main() -> None:
    """Print the stored form's memory, then the whole objects' for comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=10_000)
    args = parser.parse_args()
    claims = [claim(i) for i in range(args.claims)]
    pages = [
        orjson.dumps({"kind": "ResourceClaimList", "items": claims[i : i + 500]})
        for i in range(0, len(claims), 500)
    ]
    del claims
    per = 10_000 / args.claims
    size = sum(len(p) for p in pages)
    print(f"{args.claims} ResourceClaims, {size / 2**20:.1f} MiB of JSON as listed")
    kept, traced, rss = _measure(pages, keep=True)
    print(
        f"cache (stored form): {traced / 2**20:.2f} MiB traced (tracemalloc), "
        f"RSS +{rss / 2**20:.1f} MiB; per 10,000 claims: {traced * per / 2**20:.2f} MiB"
    )
    key, sample = next(iter(kept.items()))
    print(f"stored form of one claim: {key!r}: {sample!r}")
    print(f"read back as: {orjson.dumps(shown(key, sample, RESOURCE_CLAIMS)).decode()}")
    del kept
    _, whole, rss_whole = _measure(pages, keep=False)
    print(
        f"whole decoded objects, for comparison: {whole / 2**20:.2f} MiB traced, "
        f"RSS +{rss_whole / 2**20:.1f} MiB; per 10,000 claims: {whole * per / 2**20:.2f} MiB"
    )


if __name__ == "__main__":
    main()
