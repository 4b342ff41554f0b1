"""Cluster objects given as files: the ``--objects`` option and manifests checked offline.

Why apart from the API source: the offline CLI must answer exactly as the server would,
given the same objects, without ever loading the ``kubernetes`` client.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from webhooks.manifests.reader import STDIN, ManifestError, load

KINDS = {"RuntimeClass": "runtime_classes", "Namespace": "namespaces"}

#: The name ``--objects`` errors had before the one manifest reader; the same type.
ObjectsError = ManifestError


class StaticCluster:
    """A cluster view over a fixed set of objects (``--objects`` files, or manifests in CI)."""

    def __init__(self, objects: Iterable[dict[str, Any]] = ()) -> None:
        self.runtime_classes: dict[str, dict[str, Any]] = {}
        self.namespaces: dict[str, dict[str, Any]] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: dict[str, Any]) -> bool:
        """Index ``obj`` if it is a RuntimeClass or Namespace; returns whether it was kept."""
        table = KINDS.get(str(obj.get("kind")))
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if table is None or not isinstance(name, str):
            return False
        getattr(self, table)[name] = obj
        return True

    def runtime_class(self, name: str) -> dict[str, Any] | None:
        """The RuntimeClass called ``name``, if given."""
        return self.runtime_classes.get(name)

    def namespace(self, name: str) -> dict[str, Any] | None:
        """The Namespace called ``name``, if given."""
        return self.namespaces.get(name)


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
        if doc.obj is None:
            continue
        if not isinstance(doc.obj, dict):
            raise ManifestError(doc.path, doc.line, "not a Kubernetes object: not a map")
        cluster.add(doc.obj)
    return cluster
