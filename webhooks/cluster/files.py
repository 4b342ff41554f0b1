"""Cluster objects given as files: the ``--objects`` option and manifests checked offline.

Why apart from the API source: the offline CLI must answer exactly as the server would,
given the same objects, without ever loading the ``kubernetes`` client.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from webhooks.manifests.reader import STDIN, ManifestError, load

KINDS = {
    "RuntimeClass": "runtime_classes",
    "Namespace": "namespaces",
    "DeviceClass": "device_classes",
}
#: Namespaced kinds kept by (namespace, name).
NAMESPACED_KINDS = {
    "ResourceClaim": "resource_claims",
    "ResourceClaimTemplate": "resource_claim_templates",
}
#: The API group of the DRA kinds; why checked: another group may define a kind of the name.
DRA_GROUP = "resource.k8s.io/"

#: The name ``--objects`` errors had before the one manifest reader; the same type.
ObjectsError = ManifestError


class StaticCluster:
    """A cluster view over a fixed set of objects (``--objects`` files, or manifests in CI).

    A ResourceClaim or ResourceClaimTemplate without ``metadata.namespace`` is found in
    every namespace that has no object of its name: a manifest that names no namespace is
    applied to the one its pods go to (``kubectl apply -n``), so a Job and its claim
    template in one file belong together.
    """

    def __init__(self, objects: Iterable[dict[str, Any]] = ()) -> None:
        self.runtime_classes: dict[str, dict[str, Any]] = {}
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.device_classes: dict[str, dict[str, Any]] = {}
        self.resource_claims: dict[tuple[str, str], dict[str, Any]] = {}
        self.resource_claim_templates: dict[tuple[str, str], dict[str, Any]] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: dict[str, Any]) -> bool:
        """Index ``obj`` if it is a kind plugins consult; returns whether it was kept."""
        kind = str(obj.get("kind"))
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str):
            return False
        dra = kind in ("DeviceClass", *NAMESPACED_KINDS)
        if dra and not str(obj.get("apiVersion", "")).startswith(DRA_GROUP):
            return False
        if kind in NAMESPACED_KINDS:
            namespace = meta.get("namespace") if isinstance(meta, dict) else None
            key = (namespace if isinstance(namespace, str) else "", name)
            getattr(self, NAMESPACED_KINDS[kind])[key] = obj
            return True
        table = KINDS.get(kind)
        if table is None:
            return False
        getattr(self, table)[name] = obj
        return True

    def runtime_class(self, name: str) -> dict[str, Any] | None:
        """The RuntimeClass called ``name``, if given."""
        return self.runtime_classes.get(name)

    def namespace(self, name: str) -> dict[str, Any] | None:
        """The Namespace called ``name``, if given."""
        return self.namespaces.get(name)

    def device_class(self, name: str) -> dict[str, Any] | None:
        """The DeviceClass called ``name``, if given."""
        return self.device_classes.get(name)

    def resource_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ResourceClaim ``namespace/name``, or one of that name given without a
        namespace."""
        found = self.resource_claims.get((namespace, name))
        return found if found is not None else self.resource_claims.get(("", name))

    def resource_claim_template(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ResourceClaimTemplate ``namespace/name``, or one of that name given without
        a namespace."""
        found = self.resource_claim_templates.get((namespace, name))
        return found if found is not None else self.resource_claim_templates.get(("", name))


def read_objects(paths: Iterable[str | Path], stdin: bytes | None = None) -> StaticCluster:
    """Read ``--objects`` files and directories into a :class:`StaticCluster`.

    Through the same reader as the manifests a command checks, so ``--objects DIR`` works
    like ``--nodes DIR`` and a broken file fails the same way. Raises the first
    :class:`ManifestError` (``file:line: reason``): cluster context that cannot be read
    would make every answer that depends on it wrong.
    """
    names = [str(path) for path in paths]
    if STDIN in names and stdin is None:
        raise ManifestError(STDIN, 0, "--objects cannot read stdin here; give a file")
    manifests = load(names, stdin)
    if manifests.problems:
        raise manifests.problems[0]
    cluster = StaticCluster()
    for doc in manifests.documents:
        if doc.obj is not None:  # the reader refused every document that is not a mapping
            cluster.add(doc.obj)
    return cluster
