"""Cluster objects given as files: the ``--objects`` option and manifests checked offline.

Why apart from the API source: the offline CLI must answer exactly as the server would,
given the same objects, without ever loading the ``kubernetes`` client.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

KINDS = {"RuntimeClass": "runtime_classes", "Namespace": "namespaces"}


class ObjectsError(ValueError):
    """An ``--objects`` file cannot be used; the message names the file."""


def iter_documents(text: str, source: str) -> Iterator[dict[str, Any]]:
    """Objects in a YAML/JSON stream: multi-document, ``kind: List`` flattened, blanks skipped."""
    try:
        docs = list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError as exc:
        raise ObjectsError(f"{source}: not valid YAML: {exc}".replace("\n", " ")) from None
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ObjectsError(f"{source}: every document must be a mapping")
        if doc.get("kind") == "List" or (
            isinstance(doc.get("kind"), str) and doc["kind"].endswith("List") and "items" in doc
        ):
            for item in doc.get("items") or []:
                if isinstance(item, dict):
                    yield item
        else:
            yield doc


_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


def read_objects(paths: Iterable[str | Path]) -> StaticCluster:
    """Read ``--objects`` files into a :class:`StaticCluster`."""
    cluster = StaticCluster()
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ObjectsError(f"{path}: cannot read: {exc.strerror}") from None
        for obj in iter_documents(text, str(path)):
            cluster.add(obj)
    return cluster
