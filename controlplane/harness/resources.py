"""Any object, of any kind the API server serves: where it lives, its CRD, a server-side apply.

Why not the typed client: a chart renders kinds the ``kubernetes`` package has no class for
(ServiceMonitor, cert-manager's Certificate), and what a test asks is exactly what
``kubectl apply --server-side [--dry-run=server]`` asks: the REST path from discovery, an
``application/apply-patch+yaml`` PATCH, ``fieldValidation=Strict`` so an unknown field is
refused rather than silently pruned.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controlplane.harness.components import ApiServer
from controlplane.harness.process import ComponentError, wait_until

APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True, slots=True)
class Served:
    """A kind as discovery reports it: its collection and whether it is namespaced."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, name: str = "", namespace: str = "") -> str:
        """``/api/v1/namespaces/ns/pods/name`` and the like."""
        root = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        where = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{root}{where}/{self.plural}" + (f"/{name}" if name else "")


def served(server: ApiServer, api_version: str, kind: str) -> Served | None:
    """What discovery says of ``kind`` in ``api_version``; ``None`` when it is not served."""
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    status, body = server.get(root)
    if status != 200 or not isinstance(body, Mapping):
        return None
    for resource in body.get("resources") or []:
        if resource.get("kind") == kind and "/" not in resource.get("name", ""):
            return Served(api_version, kind, resource["name"], bool(resource["namespaced"]))
    return None


def install_crds(server: ApiServer, crds: Iterable[Mapping[str, Any]], timeout: float = 60) -> None:
    """Create each CustomResourceDefinition and wait until every one is served.

    Why wait for discovery, not only ``Established``: a request for the new kind made
    before the aggregated discovery has it answers 404, which would read as the test's
    failure rather than the start-up's.
    """
    wanted = []
    for crd in crds:
        status, body = server.request(
            "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", dict(crd)
        )
        if status not in (201, 409):
            raise ComponentError(f"creating CRD {crd['metadata']['name']}: {status} {body}")
        spec = crd["spec"]
        served_version = next(v["name"] for v in spec["versions"] if v.get("served", True))
        wanted.append((f"{spec['group']}/{served_version}", spec["names"]["kind"]))
    wait_until(
        lambda: all(served(server, version, kind) is not None for version, kind in wanted),
        timeout=timeout,
        what="serving the new CRDs",
    )


def apply(
    server: ApiServer,
    obj: Mapping[str, Any],
    *,
    field_manager: str,
    dry_run: bool = False,
    namespace: str = "",
) -> tuple[int, Any]:
    """Server-side apply ``obj`` (forcing), strictly validated; the status and the body.

    ``namespace`` is used when the object names none and its kind is namespaced, as
    ``kubectl apply -n`` does. A kind the server does not serve answers 404.
    """
    kind = served(server, obj["apiVersion"], obj["kind"])
    if kind is None:
        return 404, {"message": f"{obj['kind']} of {obj['apiVersion']} is not served"}
    meta = obj.get("metadata") or {}
    where = meta.get("namespace") or namespace
    query = {"fieldManager": field_manager, "force": "true", "fieldValidation": "Strict"}
    if dry_run:
        query["dryRun"] = "All"
    path = kind.path(meta["name"], where) + "?" + urllib.parse.urlencode(query)
    return server.request("PATCH", path, dict(obj), content_type=APPLY)
