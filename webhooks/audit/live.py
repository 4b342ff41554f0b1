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

from collections.abc import Mapping
from typing import Any, Final

from webhooks.audit.model import Ref
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
