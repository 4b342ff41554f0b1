"""What the fake answers to each verb, as the API server answers it, over its store.

Why apart from HTTP: these are the API's semantics (pages, selectors, server-side apply,
optimistic concurrency, watches from a resourceVersion), which a test reasons about; the
transport only turns requests into calls here and the answers back into bytes.

Lists carry ``metadata.resourceVersion`` and come in pages whose ``continue`` token is the
last key returned (so a page stays correct while objects come and go), filtered by an
equality ``labelSelector``. Watches replay the history after a resourceVersion, with
BOOKMARK events when allowed and a 410 ``ERROR`` event for a compacted version. A PATCH is
a server-side apply: of a webhook configuration, of the fields a client may send
(``webhooks[name=...].clientConfig.caBundle`` and ``.failurePolicy``; anything else in it is
recorded and makes the test fail); of a report, of the whole object (created when missing;
refused under ``fieldValidation=Strict`` as the API server refuses a body that breaks the
schema: 500 for an undeclared field, 422 for the rest). A DELETE removes. Secrets are read,
created (POST: 409 AlreadyExists when present) and replaced (PUT: 409 Conflict unless the
body carries the stored ``resourceVersion``), as the managed certificates need.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench.fakeapi.faults import Faults
from bench.fakeapi.objects import status
from bench.fakeapi.resources import info, key_of
from bench.fakeapi.store import Store


def selected(obj: dict[str, Any], selector: str) -> bool:
    """Whether ``obj``'s labels satisfy an equality ``labelSelector`` (``a=b,c=d``)."""
    labels = obj.get("metadata", {}).get("labels") or {}
    for requirement in filter(None, selector.split(",")):
        label, _, value = requirement.partition("=")
        if labels.get(label.strip()) != value.strip().lstrip("="):
            return False
    return True


class Verbs(Store, Faults):
    """The answers to GET, list, watch, PATCH (apply), POST, PUT and DELETE: (code, body)."""

    def __init__(self) -> None:
        super().__init__()
        #: Resources answered with 404 as an API server that does not serve them answers.
        self.unserved: set[str] = set()
        #: What ``GET /version`` answers as ``gitVersion``; ``None``: 404.
        self.version: str | None = "v1.37.2"
        #: The API version DeviceTaintRules are served at (``v1alpha3`` as 1.34 with its
        #: gate on); the other versions answer 404, as a real API server does.
        self.device_taint_rule_version = "v1"
        #: Called with the plural before every create or replace is decided (outside the
        #: lock): where a test lets another writer change the object in between.
        self.before_write: Callable[[str], None] | None = None
        #: With ``fieldValidation=Strict``, the problems the schema of ``kind`` finds in an
        #: applied body (none: accepted); ``None`` checks nothing.
        self.schema: Callable[[str, Any], list[str]] | None = None
        #: With ``fieldValidation=Strict``, the fields of an applied report its schema does
        #: not declare: a real API server refuses them first, with HTTP 500.
        self.undeclared: Callable[[str, Any], list[str]] | None = None
        #: Whether the server is serving (its lifecycle sets it): watches end when it stops.
        self.running = False

    def get(
        self, plural: str, name: str, namespace: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        """GET: the stored object, 404 NotFound, or 500 for a name in :attr:`fail_gets`."""
        group = info(plural)[0]
        resource = f"{plural}.{group}" if group else plural
        if name in self.fail_gets:
            return 500, status(
                500,
                "InternalError",
                "Internal error occurred: etcdserver: request timed out",
                causes=[{"message": "etcdserver: request timed out"}],
            )
        with self.lock:
            obj = self.objects.get((plural, key_of(plural, name, namespace)))
        if obj is None:
            return 404, status(
                404,
                "NotFound",
                f'{resource} "{name}" not found',
                name=name,
                group=group,
                kind=plural,
            )
        return 200, obj

    def apply(self, plural: str, name: str, patch: Any) -> tuple[int, dict[str, Any]]:
        """Server-side apply of ``webhooks[name=...]``: ``clientConfig.caBundle`` and
        ``failurePolicy``, and nothing else.

        An unchanged object keeps its resourceVersion, as with the real server.
        """
        with self.lock:
            code, current = self.get(plural, name)
            if code != 200:
                return code, current
            updated = json.loads(json.dumps(current))
            hooks = {h["name"]: h for h in updated.get("webhooks", [])}
            for applied in patch.get("webhooks", []):
                hook = hooks.get(applied["name"])
                if hook is None:
                    message = f"webhooks[name={applied['name']}]: required fields missing"
                    return 422, status(422, "Invalid", message)
                if "clientConfig" in applied:
                    hook["clientConfig"]["caBundle"] = applied["clientConfig"]["caBundle"]
                if "failurePolicy" in applied:
                    hook["failurePolicy"] = applied["failurePolicy"]
            return 200, self.put(updated) if updated != current else current

    def list(
        self, plural: str, query: dict[str, str], namespace: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        """A list (of ``namespace``, or every one): a page after ``continue``, ``limit`` long,
        of the objects ``labelSelector`` selects; 500 for a plural in :attr:`fail_lists`."""
        _, api_version, kind, _ = info(plural)
        if plural in self.fail_lists:
            return 500, status(500, "InternalError", "Internal error occurred: list unavailable")
        after = query.get("continue") or ""
        prefix = f"{namespace}/" if namespace else ""
        selector = query.get("labelSelector") or ""
        with self.lock:
            keyed = sorted(
                (key, obj)
                for (p, key), obj in self.objects.items()
                if p == plural and key > after and key.startswith(prefix)
            )
            rv = self.rv
        items = [(key, obj) for key, obj in keyed if not selector or selected(obj, selector)]
        limit = int(query.get("limit") or 0) or len(items) or 1
        page = [obj for _, obj in items[:limit]]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if limit < len(items):
            meta["continue"] = items[limit - 1][0]
            meta["remainingItemCount"] = len(items) - limit
        # List items carry no kind or apiVersion, exactly as the API server sends them.
        bare = [{k: v for k, v in item.items() if k not in ("kind", "apiVersion")} for item in page]
        return 200, {
            "kind": f"{kind}List",
            "apiVersion": api_version,
            "metadata": meta,
            "items": bare,
        }

    def apply_object(
        self,
        plural: str,
        name: str,
        namespace: str | None,
        body: Any,
        query: dict[str, str],
    ) -> tuple[int, dict[str, Any]]:
        """Server-side apply of a whole report: created when missing, replaced otherwise.

        The applied body is checked as the API server checks it: kind and apiVersion of the
        collection, the name (and namespace) of the URL, and, with
        ``fieldValidation=Strict``, :attr:`undeclared` (a field the schema does not declare
        is HTTP 500 "failed to create typed patch object": a real API server builds the typed
        patch first) and then :attr:`schema` (422 with every problem). The
        applier's fields replace the previous ones (one manager, so the whole object); an
        unchanged object keeps its resourceVersion.
        """
        group, api_version, kind, namespaced = info(plural)
        meta = body.get("metadata") if isinstance(body, dict) else None
        if not isinstance(meta, dict) or body.get("kind") != kind:
            return 400, status(400, "BadRequest", f"the body is not a {kind}")
        if body.get("apiVersion") != api_version:
            return 400, status(400, "BadRequest", f"apiVersion must be {api_version}")
        if meta.get("name") != name or (
            namespaced and meta.get("namespace", namespace) != namespace
        ):
            message = "the name or namespace of the object does not match the URL"
            return 400, status(400, "BadRequest", message)
        strict = query.get("fieldValidation") == "Strict"
        extra = self.undeclared(kind, body) if strict and self.undeclared is not None else []
        if extra:
            where = f"{namespace}/{name}" if namespaced else name
            message = (
                f"failed to create typed patch object ({where}; {api_version}, "
                f"Kind={kind}): {extra[0]}: field not declared in schema"
            )
            return 500, status(500, "InternalError", message)
        if strict and self.schema is not None:
            problems = self.schema(kind, body)
            if problems:
                message = f'{kind}.{group} "{name}" is invalid: ' + "; ".join(problems)
                return 422, status(422, "Invalid", message)
        with self.lock:
            current = self.objects.get((plural, key_of(plural, name, namespace)))
            applied = json.loads(json.dumps(body))
            if namespaced:
                applied["metadata"].setdefault("namespace", namespace)
            applied["metadata"]["managedFields"] = [
                {"manager": query["fieldManager"], "operation": "Apply", "apiVersion": api_version}
            ]
            if current is not None:
                for server_set in ("uid", "creationTimestamp", "resourceVersion"):
                    if server_set in current["metadata"]:
                        applied["metadata"][server_set] = current["metadata"][server_set]
                if applied == current:
                    return 200, current
            return (200 if current is not None else 201), self.put(applied)

    def create(self, plural: str, namespace: str | None, body: Any) -> tuple[int, dict[str, Any]]:
        """POST: store a new object (201), or 409 AlreadyExists, as the API server answers.

        :attr:`before_write` runs first, so a test can let another writer in between a
        client's read and its write.
        """
        self._before_write(plural)
        name = (body or {}).get("metadata", {}).get("name", "")
        group = info(plural)[0]
        resource = f"{plural}.{group}" if group else plural
        with self.lock:
            if (plural, key_of(plural, name, namespace)) in self.objects:
                message = f'{resource} "{name}" already exists'
                return 409, status(409, "AlreadyExists", message, name=name, kind=plural)
            obj = json.loads(json.dumps(body))
            obj["metadata"].setdefault("namespace", namespace)
            return 201, self.put(obj)

    def replace(
        self, plural: str, name: str, namespace: str | None, body: Any
    ) -> tuple[int, dict[str, Any]]:
        """PUT: replace an object whose ``metadata.resourceVersion`` is the stored one; 409
        Conflict otherwise (another writer came first), 404 when there is none."""
        self._before_write(plural)
        group = info(plural)[0]
        resource = f"{plural}.{group}" if group else plural
        with self.lock:
            current = self.objects.get((plural, key_of(plural, name, namespace)))
            if current is None:
                return 404, status(404, "NotFound", f'{resource} "{name}" not found')
            given = (body or {}).get("metadata", {}).get("resourceVersion")
            if given != current["metadata"]["resourceVersion"]:
                message = (
                    f'Operation cannot be fulfilled on {resource} "{name}": the object has '
                    "been modified; please apply your changes to the latest version and try again"
                )
                return 409, status(409, "Conflict", message, name=name, kind=plural)
            obj = json.loads(json.dumps(body))
            obj["metadata"]["uid"] = current["metadata"].get("uid")
            return 200, self.put(obj)

    def _before_write(self, plural: str) -> None:
        if self.before_write is not None:
            self.before_write(plural)

    def remove(self, plural: str, name: str, namespace: str | None) -> tuple[int, dict[str, Any]]:
        """DELETE: a ``Success`` Status, or 404 when there is no such object."""
        code, found = self.get(plural, name, namespace)
        if code != 200:
            return code, found
        self.delete(plural, name, namespace)
        done = status(200, "", "")
        done.update(status="Success", details={"name": name, "kind": plural})
        del done["message"], done["reason"]
        return 200, done

    def events(
        self, plural: str, since: str, timeout: float, bookmarks: bool
    ) -> Iterator[dict[str, Any]]:
        """Watch events after ``since`` until ``timeout`` passes or the server stops."""
        deadline = time.monotonic() + timeout
        after = int(since or 0)
        if self.watch_error is not None:
            yield {"type": "ERROR", "object": self.watch_error}
            return
        with self.lock:
            if after < self.compacted[plural]:
                message = f"too old resource version: {after} ({self.compacted[plural]})"
                yield {"type": "ERROR", "object": status(410, "Expired", message)}
                return
        while self.running:
            with self.lock:
                ready = [
                    event
                    for rv, event in self.history[plural]
                    if rv > after and (bookmarks or event["type"] != "BOOKMARK")
                ]
                if not ready or self.silent_watches:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 and not self.silent_watches:
                        return
                    self.lock.wait(min(max(remaining, 0.05), 0.2))
                    continue
            for event in ready:
                after = int(event["object"]["metadata"]["resourceVersion"])
                yield event
