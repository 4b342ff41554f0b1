"""``endpoints``: each Service the webhooks call exists, has the port, and has ready endpoints.

Why: a Service whose selector matches no Ready pod answers every call with a refused
connection, and a fail-closed webhook then refuses every pod create in the cluster. The
EndpointSlices (discovery.k8s.io/v1, labelled ``kubernetes.io/service-name``) are what
kube-proxy routes by, so they, not the pods, say whether a call can land.
"""

from __future__ import annotations

from typing import Any, Final

from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import Installation

CHECK: Final = "endpoints"

FIX_NO_ENDPOINTS: Final = (
    "make the server's pods Ready and the Service's selector match their labels "
    "(`kubectl -n {ns} get endpointslices -l kubernetes.io/service-name={name}`, "
    "`kubectl -n {ns} describe service {name}`)"
)


def check(installation: Installation) -> list[Finding]:
    """One finding per Service the configurations call (URL-registered webhooks: none)."""
    ports = _called_ports(installation.configurations)
    findings = []
    for key, service in installation.services.items():
        slices = installation.endpoint_slices.get(key)
        findings.append(judge(key, service, slices, ports.get(key, set())))
    if not ports and installation.configurations:
        findings.append(
            Finding(CHECK, Status.OK, "the webhooks are called by URL: no Service to check")
        )
    for what, why in installation.unread.items():
        if what.startswith(("service ", "endpointslices ")):
            findings.append(
                Finding(
                    CHECK,
                    Status.WARN,
                    f"cannot read {what}: {why}",
                    "give the kubeconfig read access to Services and EndpointSlices",
                )
            )
    return findings


def judge(
    key: str,
    service: dict[str, Any] | None,
    slices: tuple[dict[str, Any], ...] | None,
    ports: set[int],
) -> Finding:
    """The finding for the Service ``key`` (``namespace/name``), given what was read."""
    ns, _, name = key.partition("/")
    if service is None:
        return Finding(
            CHECK,
            Status.FAIL,
            f"Service {key} does not exist",
            "install the chart's Service, or point the configurations at the right one",
        )
    spec = service.get("spec") or {}
    served = {int(p.get("port", 0)) for p in spec.get("ports") or []}
    missing = sorted(ports - served)
    if missing:
        return Finding(
            CHECK,
            Status.FAIL,
            f"Service {key} has no port {', '.join(map(str, missing))} (the webhooks call it; "
            f"it has {', '.join(map(str, sorted(served))) or 'none'})",
            "set the configurations' service port to one the Service serves",
        )
    if slices is None:
        return Finding(CHECK, Status.WARN, f"Service {key}: EndpointSlices not read")
    ready, other = _count(slices)
    if ready:
        return Finding(CHECK, Status.OK, f"Service {key} has {ready} ready endpoint(s)")
    selector = spec.get("selector")
    shown = ",".join(f"{k}={v}" for k, v in (selector or {}).items()) or "none"
    return Finding(
        CHECK,
        Status.FAIL,
        f"Service {key} has no ready endpoints ({other} not ready; selector {shown}): "
        "every call fails",
        FIX_NO_ENDPOINTS.format(ns=ns, name=name),
    )


def _count(slices: tuple[dict[str, Any], ...]) -> tuple[int, int]:
    """(ready, not ready) endpoints; ``ready`` unset counts as ready, as kube-proxy does."""
    ready = other = 0
    for piece in slices:
        for endpoint in piece.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready", True) is False:
                other += 1
            else:
                ready += 1
    return ready, other


def _called_ports(configurations: tuple[dict[str, Any], ...]) -> dict[str, set[int]]:
    ports: dict[str, set[int]] = {}
    for configuration in configurations:
        for hook in configuration.get("webhooks") or []:
            service = (hook.get("clientConfig") or {}).get("service")
            if service:
                key = f"{service.get('namespace')}/{service.get('name')}"
                ports.setdefault(key, set()).add(int(service.get("port") or 443))
    return ports
