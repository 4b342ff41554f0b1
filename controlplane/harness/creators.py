"""Pod creates from a pool of client threads, each create timed and its outcome kept.

Why beside the controller's storm: the ReplicaSet controller retries a failed create on its
own schedule and reports failures only as events, so recovery after a fault (the first and
the last failed create, the first success after it) is measured on creates whose every
outcome the bench sees. Each thread keeps one HTTPS connection open (reopened after an
error), as a client library does, so the load is the API server's and not TLS handshakes.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from controlplane.harness.components import ApiServer


@dataclass(frozen=True, slots=True)
class Outcome:
    """One create: when it finished (``time.time()``), whether it was stored, why not."""

    at: float
    ok: bool
    status: int
    message: str = ""
    seconds: float = 0.0


@dataclass(slots=True)
class Creators:
    """``threads`` threads creating the pods ``make(thread, index)`` returns, as (namespace,
    pod), until :meth:`stop`; optionally paced to ``interval`` seconds per thread."""

    server: ApiServer
    make: Callable[[int, int], tuple[str, dict[str, Any]]]
    threads: int = 4
    interval: float = 0.0
    outcomes: list[Outcome] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Creators:
        for index in range(self.threads):
            thread = threading.Thread(target=self._run, args=(index,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> list[Outcome]:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)
        with self._lock:
            return sorted(self.outcomes, key=lambda o: o.at)

    def clean_for(self, seconds: float, since: float) -> bool:
        """Whether creates have all succeeded for ``seconds`` (at least one of them), counted
        from ``since`` or the last failure after it, whichever is later."""
        with self._lock:
            recent = [o for o in self.outcomes if o.at >= since]
        failures = [o.at for o in recent if not o.ok]
        start = max([since, *failures])
        return any(o.ok and o.at > start for o in recent) and time.time() - start >= seconds

    def _connect(self) -> http.client.HTTPSConnection:
        parts = urlsplit(self.server.url)
        context = ssl.create_default_context(cafile=str(self.server.credentials.serving.ca))
        return http.client.HTTPSConnection(
            parts.hostname or "127.0.0.1", parts.port, timeout=60, context=context
        )

    def _run(self, thread: int) -> None:
        token = self.server.credentials.tokens["admin"]
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        connection = self._connect()
        index = 0
        while not self._stop.is_set():
            namespace, pod = self.make(thread, index)
            index += 1
            body = json.dumps(pod)
            sent = time.monotonic()
            try:
                connection.request("POST", f"/api/v1/namespaces/{namespace}/pods", body, headers)
                response = connection.getresponse()
                raw = response.read()
                status = response.status
                message = "" if status == 201 else _message(raw)
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                connection = self._connect()
                status, message = 0, f"client: {exc.__class__.__name__}: {exc}"
                self._stop.wait(0.05)  # an API server that is down refuses in microseconds
            with self._lock:
                took = time.monotonic() - sent
                self.outcomes.append(Outcome(time.time(), status == 201, status, message, took))
            if self.interval:
                self._stop.wait(self.interval)
        connection.close()


def _message(raw: bytes) -> str:
    try:
        return str(json.loads(raw).get("message", ""))
    except (ValueError, AttributeError):
        return raw[:200].decode(errors="replace")


@dataclass(frozen=True, slots=True)
class Recovery:
    """Seconds from a fault's end to the first successful create and to steady creates
    (the first success after the last failure); ``None`` when no create succeeded after."""

    first: float | None
    steady: float | None
    failures_after: int


def recovery(outcomes: list[Outcome], fault_started: float, fault_ended: float) -> Recovery:
    """Recovery as seen by the client threads, from the fault's end."""
    during = [o for o in outcomes if o.at >= fault_started]
    first = next((o.at for o in during if o.ok and o.at >= fault_ended), None)
    failures = [o for o in during if not o.ok]
    last_failure = failures[-1].at if failures else fault_ended
    steady = next((o.at for o in during if o.ok and o.at >= max(last_failure, fault_ended)), None)
    return Recovery(
        None if first is None else first - fault_ended,
        None if steady is None else steady - fault_ended,
        sum(1 for o in failures if o.at >= fault_ended),
    )


def top_errors(messages: list[str], limit: int = 3) -> list[tuple[str, int]]:
    """The most common failure messages, pod names elided so equal causes count together."""
    import re

    counts: Counter[str] = Counter(re.sub(r'pods? "[^"]*"', 'pod "…"', m) for m in messages)
    return counts.most_common(limit)
