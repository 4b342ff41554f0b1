"""A minimal fake Kubernetes API server on 127.0.0.1 for admissionregistration.k8s.io/v1 writes.

Why: ``webhook-config --inject`` must be exercised through the real ``kubernetes`` client
(kubeconfig loading, bearer token, the apply-patch content type, query parameters), and the
only way to see what it puts on the wire is to be the server. It serves the JSON shapes the
API server returns (objects with metadata, ``Status`` on errors) and applies a server-side
apply patch the way the real one does for the one field the client may send
(``webhooks[name=...].clientConfig.caBundle``); anything else in a patch is recorded and
makes the test fail.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

PREFIX = "/apis/admissionregistration.k8s.io/v1/"
TOKEN = "fake-token-for-tests"


@dataclass
class Recorded:
    """One request the fake server received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class FakeAPI:
    """State of the fake server: stored objects by (plural, name), and every request."""

    objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kubeconfig(self, directory: Path) -> Path:
        """Write a kubeconfig pointing at this server with a bearer token."""
        path = directory / "kubeconfig"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                    "users": [{"name": "tester", "user": {"token": TOKEN}}],
                    "contexts": [
                        {"name": "fake", "context": {"cluster": "fake", "user": "tester"}}
                    ],
                    "current-context": "fake",
                }
            )
        )
        return path


def stored(obj: dict[str, Any], resource_version: int = 1000) -> dict[str, Any]:
    """``obj`` as the API server returns it: uid, resourceVersion, generation, managedFields."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta.update(
        {
            "uid": "3f1c2a9e-7d1b-4f55-9a55-0c8f5f0b1a11",
            "resourceVersion": str(resource_version),
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": [
                {
                    "manager": "helm",
                    "operation": "Update",
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "time": "2026-01-01T00:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:webhooks": {}},
                }
            ],
        }
    )
    for hook in out.get("webhooks", []):
        hook.setdefault("objectSelector", {})
        for rule in hook.get("rules", []):
            rule.setdefault("scope", "*")
    return out


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class _Handler(BaseHTTPRequestHandler):
    api: FakeAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read :attr:`FakeAPI.requests` instead."""

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self, body: Any) -> tuple[str, str] | None:
        parts = urlsplit(self.path)
        self.api.requests.append(
            Recorded(
                self.command,
                parts.path,
                parse_qs(parts.query),
                {k.lower(): v for k, v in self.headers.items()},
                body,
            )
        )
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._send(401, _status(401, "Unauthorized", "Unauthorized"))
            return None
        if not parts.path.startswith(PREFIX) or parts.path.count("/") != 5:
            self._send(
                404, _status(404, "NotFound", "the server could not find the requested resource")
            )
            return None
        plural, name = parts.path[len(PREFIX) :].split("/")
        return plural, name

    def do_GET(self) -> None:
        """Read one configuration."""
        key = self._record(None)
        if key is None:
            return
        with self.api.lock:
            obj = self.api.objects.get(key)
        if obj is None:
            plural, name = key
            message = f'{plural}.admissionregistration.k8s.io "{name}" not found'
            self._send(404, _status(404, "NotFound", message))
            return
        self._send(200, obj)

    def do_PATCH(self) -> None:
        """Apply a server-side apply patch that sets caBundles (and nothing else)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        body = yaml.safe_load(raw) if raw else None
        key = self._record(body)
        if key is None:
            return
        if self.headers.get("Content-Type") != "application/apply-patch+yaml":
            self._send(415, _status(415, "UnsupportedMediaType", "unsupported patch type"))
            return
        if not parse_qs(urlsplit(self.path).query).get("fieldManager"):
            message = "fieldManager is required for apply requests"
            self._send(422, _status(422, "Invalid", message))
            return
        with self.api.lock:
            obj = self.api.objects.get(key)
            if obj is None:
                self._send(404, _status(404, "NotFound", f'"{key[1]}" not found'))
                return
            updated = copy.deepcopy(obj)
            hooks = {h["name"]: h for h in updated.get("webhooks", [])}
            for applied in body.get("webhooks", []):
                hook = hooks.get(applied["name"])
                if hook is None:
                    message = f"webhooks[name={applied['name']}]: required fields missing"
                    self._send(422, _status(422, "Invalid", message))
                    return
                hook["clientConfig"]["caBundle"] = applied["clientConfig"]["caBundle"]
            if updated != obj:
                version = int(updated["metadata"]["resourceVersion"]) + 1
                updated["metadata"]["resourceVersion"] = str(version)
                self.api.objects[key] = updated
        self._send(200, updated)


@contextmanager
def fake_api(objects: dict[tuple[str, str], dict[str, Any]]) -> Iterator[FakeAPI]:
    """Serve ``objects`` on a free 127.0.0.1 port for the duration of the block."""
    api = FakeAPI(objects={k: stored(v) for k, v in objects.items()})
    handler = type("Handler", (_Handler,), {"api": api})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
