"""When things happened in the cluster, as a watching client saw them.

A failover test compares the node lifecycle controller's and the taint eviction
controller's timing with a forecast, so it needs the moment each change became visible:
a taint on a Node, a Pod's deletion. :class:`Timeline` watches Nodes and one namespace's
Pods from background threads and keeps the first ``time.monotonic()`` at which each was
seen. Why watches rather than polling: an event arrives within milliseconds of the write,
while a poll adds up to its interval to every figure.

Why not the objects' own timestamps: ``timeAdded`` and ``deletionTimestamp`` have whole
seconds only, and a pod's ``deletionTimestamp`` is when its grace period *ends*.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

#: Seconds a watch request stays open before it is renewed (and the stop flag looked at).
WATCH_SECONDS = 5


class Timeline:
    """First sightings of Node taints and Pod deletions; ``close`` stops the watches."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        self.api_client = api_client
        self.namespace = namespace
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._taints: dict[tuple[str, str, str], float] = {}
        self._deleted: dict[str, float] = {}
        self.errors: list[str] = []

        core = client.CoreV1Api(api_client)
        self._threads = [
            threading.Thread(
                target=self._watch, args=(core.list_node, (), self._node), daemon=True
            ),
            threading.Thread(
                target=self._watch,
                args=(core.list_namespaced_pod, (namespace,), self._pod),
                daemon=True,
            ),
        ]
        for thread in self._threads:
            thread.start()

    def taint_seen(self, node: str, key: str, effect: str) -> float | None:
        """When ``node`` was first seen with the taint ``key:effect`` (``None``: not yet)."""
        with self._lock:
            return self._taints.get((node, key, effect))

    def deletion_seen(self, pod: str) -> float | None:
        """When ``pod`` was first seen deleted or being deleted (``None``: not yet)."""
        with self._lock:
            return self._deleted.get(pod)

    def close(self) -> None:
        """Stop watching (within :data:`WATCH_SECONDS`)."""
        self._stopped.set()
        for thread in self._threads:
            thread.join(timeout=WATCH_SECONDS + 5)

    # -- the watches --------------------------------------------------------------------------

    def _watch(
        self, lister: Callable[..., Any], args: tuple[Any, ...], seen: Callable[[str, Any], None]
    ) -> None:
        """Watch what ``lister(*args)`` lists, reopening the watch until :meth:`close`.

        Why the bound client method itself: the watch finds the type to decode events into
        in the method's docstring, which a wrapper would not carry.
        """
        from kubernetes import watch

        while not self._stopped.is_set():
            try:
                for event in watch.Watch().stream(lister, *args, timeout_seconds=WATCH_SECONDS):
                    seen(event["type"], event["object"])
                    if self._stopped.is_set():
                        return
            except Exception as exc:  # a broken watch is opened again; kept for the test
                self.errors.append(str(exc))
                time.sleep(0.1)

    def _node(self, kind: str, node: Any) -> None:
        moment = time.monotonic()
        with self._lock:
            for taint in node.spec.taints or []:
                self._taints.setdefault((node.metadata.name, taint.key, taint.effect), moment)

    def _pod(self, kind: str, pod: Any) -> None:
        moment = time.monotonic()
        if kind == "DELETED" or pod.metadata.deletion_timestamp is not None:
            with self._lock:
                self._deleted.setdefault(pod.metadata.name, moment)
