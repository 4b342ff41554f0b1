"""Objects as the API server stores them, turned back into the CREATE that admission saw.

Why: an object read from the cluster carries what the API server, the scheduler and the
kubelet added after admission: ``status``, ``spec.nodeName`` (the binding), ``uid``,
``resourceVersion``, ``managedFields``, timestamps, and for a Pod made from
``generateName`` its generated name. Admitted as it is stored, those fields would read as
requests the object never made. Admitted as its creator's request, what admission would
change *today* is exactly the drift, and what it would refuse is exactly the violation.

What is kept, because admission saw it too: everything the API server adds *before* the
webhooks run — defaults (``restartPolicy``, ``dnsPolicy``, ...), the service-account token
volume and ``serviceAccountName`` from the ServiceAccount plugin, tolerations from the
in-tree DefaultTolerationSeconds when it is on, ``spec.overhead`` from the in-tree
RuntimeClass plugin, a DaemonSet Pod's node affinity and tolerations from its controller.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Final, Protocol

from webhooks.audit.results import Ref
from webhooks.cluster.listing import KINDS, Kind
from webhooks.k8s.podspec import is_mirror_pod

#: Metadata the API server sets on a stored object; none of it is in a create request.
SERVER_METADATA: Final = frozenset(
    {
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)
#: Pod phases after which admission never sees the pod again.
FINISHED: Final = ("Succeeded", "Failed")


def as_created(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` as its creator's request reached admission (copies only what it removes).

    Status and server-set metadata go; for a Pod, ``spec.nodeName`` (set by the binding)
    and a name generated from ``generateName`` (the request had none, so messages read
    ``pods is forbidden: ...`` for every pod of a ReplicaSet alike).
    """
    out = {k: v for k, v in obj.items() if k != "status"}
    kind = obj.get("kind")
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        created = {k: v for k, v in meta.items() if k not in SERVER_METADATA}
        if kind == "Pod" and created.get("generateName"):
            created.pop("name", None)
        out["metadata"] = created
    spec = obj.get("spec")
    if kind == "Pod" and isinstance(spec, Mapping) and "nodeName" in spec:
        out["spec"] = {k: v for k, v in spec.items() if k != "nodeName"}
    return out


def skip_reason(pod: Mapping[str, Any]) -> str | None:
    """Why a Pod is not admitted at all (a mirror pod, a finished pod), else ``None``.

    Why skip them: the kubelet runs a static pod whatever admission says, and a finished
    pod will never be admitted or scheduled again; findings on either could not be acted on.
    """
    if is_mirror_pod(pod):
        return "mirror pod of a static pod: the kubelet runs it whatever admission says"
    status = pod.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    if phase in FINISHED:
        return f"finished ({phase}): admission will not see it again"
    return None


def controller(obj: Mapping[str, Any]) -> Ref | None:
    """The object's controller (the owner reference with ``controller: true``), or ``None``.

    Why only the controller: other owners (garbage-collection parents) neither create the
    object nor decide its template.
    """
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            namespace = meta.get("namespace") if isinstance(meta, Mapping) else ""
            return Ref(
                str(ref.get("apiVersion") or ""),
                str(ref.get("kind") or ""),
                str(namespace or ""),
                str(ref.get("name") or ""),
                str(ref.get("uid") or ""),
            )
    return None


class ObjectLister(Protocol):
    """Where objects come from: :class:`~webhooks.cluster.listing.Lister`, or a test's lists."""

    def items(
        self, kind: Kind, namespace: str | None = None, label_selector: str = ""
    ) -> Iterable[dict[str, Any]]:
        """Every object of ``kind`` (in ``namespace``, or everywhere)."""


def subject_of(pod: Mapping[str, Any]) -> Ref:
    """The Pod's controller when it is a namespaced workload, else the Pod itself.

    Why not a cluster-scoped owner: the Node that owns a mirror pod is no workload.
    """
    owner = controller(pod)
    known = KINDS.get(owner.kind) if owner is not None else None
    if owner is not None and (known is None or known.namespaced):
        return owner
    return Ref.of(pod)


def pods_to_place(source: ObjectLister, namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The Pods of ``namespace`` as created, one per controller, and a note for the rest.

    For ``explain`` on a live cluster: pods of one controller share its template, so where
    one can run is where all can. Each keeps its name (the report names it) but loses its
    binding and status, so it is placed as the scheduler would place it anew. Mirror and
    finished pods are left out, as ``audit`` leaves them out.
    """
    kept: dict[Ref, dict[str, Any]] = {}
    seen: Counter[Ref] = Counter()
    skipped: Counter[str] = Counter()
    for pod in source.items(KINDS["Pod"], namespace):
        reason = skip_reason(pod)
        if reason is not None:
            skipped[reason.split(":")[0]] += 1
            continue
        subject = subject_of(pod)
        seen[subject] += 1
        if subject not in kept:
            created = as_created(pod)
            created["metadata"]["name"] = Ref.of(pod).name
            kept[subject] = created
    notes = [
        f"pods of {ref.subject}: 1 of {count} explained (they share its template)"
        for ref, count in seen.items()
        if count > 1
    ]
    notes += [f"{count} pods left out: {reason}" for reason, count in sorted(skipped.items())]
    return list(kept.values()), notes
