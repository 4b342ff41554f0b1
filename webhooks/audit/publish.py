"""Writing reports: server-side apply of every report, then deletion of the stale ones.

Why this order: a dashboard must never see a namespace without its report for a moment, so
the new reports are applied first (replacing the old results in place), and only then are
reports of namespaces that no longer have results deleted. Only reports that carry the
suite's ``managed-by`` label and lie within the scan's scope are ever deleted: a scan of
``--namespace shop`` proves nothing about other namespaces, and a scan limited to namespaces
did not look at Nodes, so the cluster report is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from webhooks.audit.reports import NAME, SOURCE, ReportApi, label_selector
from webhooks.cluster.listing import Kind


class Writer(Protocol):
    """What publishing needs from the API: list by label, apply, delete."""

    def items(
        self, kind: Kind, namespace: str | None = None, label_selector: str = ""
    ) -> Iterable[dict[str, Any]]:
        """Every object of ``kind`` matching ``label_selector``."""

    def apply(
        self,
        kind: Kind,
        name: str,
        body: Mapping[str, Any],
        field_manager: str,
        namespace: str = "",
    ) -> None:
        """Server-side apply ``body``."""

    def delete(self, kind: Kind, name: str, namespace: str = "") -> None:
        """Delete one object; gone already is fine."""


@dataclass(slots=True)
class Published:
    """What was written and deleted, as ``Kind namespace/name`` (``Kind name`` for the
    cluster report), in order."""

    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line for the log: what was written and what was deleted."""
        text = f"wrote {len(self.written)} report" + ("" if len(self.written) == 1 else "s")
        if self.written:
            text += " (" + ", ".join(self.written) + ")"
        if self.deleted:
            text += f"; deleted {len(self.deleted)} stale (" + ", ".join(self.deleted) + ")"
        return text


def _named(kind: Kind, namespace: str, name: str) -> str:
    return f"{kind.kind} {namespace}/{name}" if namespace else f"{kind.kind} {name}"


def publish(
    writer: Writer,
    reports: Sequence[Mapping[str, Any]],
    api: ReportApi,
    namespaces: Sequence[str] | None,
) -> Published:
    """Apply ``reports`` and delete this suite's reports the scan no longer produces.

    ``namespaces`` is the scan's scope (``None``: the whole cluster, the cluster report
    included). Errors from the writer pass through: a half-written set of reports is
    reported by the caller as the failure it is.
    """
    done = Published()
    written: set[tuple[str, str, str]] = set()
    for body in reports:
        meta = body.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        kind = api.kind(namespace)
        writer.apply(kind, NAME, body, SOURCE, namespace)
        written.add((kind.kind, namespace, NAME))
        done.written.append(_named(kind, namespace, NAME))
    scopes: list[tuple[Kind, str | None]]
    if namespaces is None:
        scopes = [(api.namespaced, None), (api.cluster, None)]
    else:
        scopes = [(api.namespaced, namespace) for namespace in namespaces]
    for kind, scope in scopes:
        stale: list[tuple[str, str]] = []
        for obj in writer.items(kind, scope, label_selector()):
            meta = obj.get("metadata") or {}
            namespace = str(meta.get("namespace") or "") if kind.namespaced else ""
            name = str(meta.get("name") or "")
            if name and (kind.kind, namespace, name) not in written:
                stale.append((namespace, name))
        for namespace, name in stale:  # after the list: never delete under a paged list
            writer.delete(kind, name, namespace)
            done.deleted.append(_named(kind, namespace, name))
    return done
