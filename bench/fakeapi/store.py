"""The fake's objects, each at a resourceVersion, and the history its watches replay.

Why apart from the verbs: tests and benchmarks change the cluster directly (put, delete,
compact) under a running server, and every answer the API gives reads the same objects
under the same lock. Every change takes the next resourceVersion. The changes of the
cluster-scoped kinds and of the watched namespaced ones
(:data:`~bench.fakeapi.resources.WATCHED_NAMESPACED`) are kept in the kind's history for
watches; compacting it sends a watch from an older version 410 Gone.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from bench.fakeapi.objects import fill_created
from bench.fakeapi.resources import COLLECTIONS, KINDS, NAMESPACED, WATCHED_NAMESPACED, key_of


class Store:
    """The stored objects and their history; thread-safe.

    :attr:`objects` maps (plural, key) to the stored object (the key is
    :func:`~bench.fakeapi.resources.key_of`'s); hold :attr:`lock` to read or change it from a
    test.
    """

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Condition()
        self.rv = 1
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.history: dict[str, list[tuple[int, dict[str, Any]]]] = {p: [] for p in KINDS.values()}
        self.compacted: dict[str, int] = dict.fromkeys(KINDS.values(), 0)

    def put(self, obj: dict[str, Any], *, announce: bool = True) -> dict[str, Any]:
        """Create or replace ``obj``; ``announce=False`` keeps it out of watch streams.

        Unannounced objects model an object the cache has not heard of yet, which a live GET
        must still find.
        """
        plural = KINDS[obj["kind"]]
        name = obj["metadata"]["name"]
        key = key_of(plural, name, obj["metadata"].get("namespace"))
        with self.lock:
            self.rv += 1
            stored: dict[str, Any] = json.loads(json.dumps(obj))
            stored["metadata"]["resourceVersion"] = str(self.rv)
            stored["metadata"].setdefault("uid", f"uid-{plural}-{key.replace('/', '-')}")
            if (plural, key) not in self.objects:
                fill_created(stored)
            kind = "MODIFIED" if (plural, key) in self.objects else "ADDED"
            self.objects[plural, key] = stored
            # Of the namespaced kinds only the claims are watched (across all namespaces).
            if announce and (plural not in NAMESPACED or plural in WATCHED_NAMESPACED):
                self.history[plural].append((self.rv, {"type": kind, "object": stored}))
            self.lock.notify_all()
        return stored

    def load(self, objects: list[dict[str, Any]]) -> None:
        """Store many objects at once, unannounced and uncopied (the benchmark's 20,000 pods).

        Why not :meth:`put`: copying and announcing each object costs the benchmark more
        time to set up than the audit takes to run. The objects must not be changed later.
        """
        with self.lock:
            for obj in objects:
                meta = obj["metadata"]
                self.rv += 1
                meta["resourceVersion"] = str(self.rv)
                plural = KINDS[obj["kind"]]
                key = key_of(plural, meta["name"], meta.get("namespace"))
                meta.setdefault("uid", f"uid-{plural}-{key.replace('/', '-')}")
                self.objects[plural, key] = obj
            self.lock.notify_all()

    def delete(self, plural: str, name: str, namespace: str | None = None) -> None:
        """Delete an object (``namespace`` for a namespaced one) and announce it to watchers."""
        with self.lock:
            obj = self.objects.pop((plural, key_of(plural, name, namespace)))
            self.rv += 1
            if plural not in NAMESPACED:
                gone = json.loads(json.dumps(obj))
                gone["metadata"]["resourceVersion"] = str(self.rv)
                self.history[plural].append((self.rv, {"type": "DELETED", "object": gone}))
            self.lock.notify_all()

    def stored(self, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of the stored objects of ``plural`` (in ``namespace``), in key order."""
        with self.lock:
            found = [
                obj
                for (p, key), obj in sorted(self.objects.items())
                if p == plural and (namespace is None or key.startswith(namespace + "/"))
            ]
            return json.loads(json.dumps(found))  # type: ignore[no-any-return]

    def bookmark(self, plural: str) -> str:
        """Send a BOOKMARK at a new resourceVersion to watchers that allow them."""
        _, _, api_version, kind = next(c for c in COLLECTIONS.values() if c[0] == plural)
        with self.lock:
            self.rv += 1
            obj = {
                "kind": kind,
                "apiVersion": api_version,
                "metadata": {"resourceVersion": str(self.rv)},
            }
            self.history[plural].append((self.rv, {"type": "BOOKMARK", "object": obj}))
            self.lock.notify_all()
            return str(self.rv)

    def compact(self, plural: str) -> None:
        """Forget history: watches from an older resourceVersion now get 410 Gone."""
        with self.lock:
            self.rv += 1
            self.compacted[plural] = self.rv
            self.history[plural] = []
            self.lock.notify_all()
