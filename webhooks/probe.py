"""A review round trip to the running webhooks, made the way the API server makes it.

Why: "the pods are ready" is not "admission works". The Service may route nowhere, the
serving certificate may not chain to the caBundle the configuration registers, or may not
name the Service. The probe reads the webhook configurations the API server reads, dials
each webhook where the API server would (``<service>.<namespace>.svc:<port><path>``, or the
configured URL), verifies TLS against that configuration's caBundle and that host name,
posts an AdmissionReview for a dry-run Pod CREATE and checks that the answer is one the API
server would accept. The install hook uses it before switching the configurations to their
fail-closed policy, and ``helm test`` runs it.

What it does not cover: the network path from the API server to the pods (a firewall
between the control plane and the nodes, a NetworkPolicy naming the wrong peers). That path
is only proven by a request through the API server (docs/operations.md says how).
"""

from __future__ import annotations

import base64
import binascii
import http.client
import ssl
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from webhooks.core.review import AdmissionRequest, ReviewError, read_response, request_dict

#: Who the probe's review says is asking; a name no exception or skip list would match.
PROBE_USER: Final = "system:serviceaccount:placement-webhooks:probe"


@dataclass(frozen=True, slots=True)
class Target:
    """One place a webhook is served: the URL, the CA to trust, which webhooks share it."""

    url: str
    ca_pem: bytes
    webhooks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of one round trip: ``problem`` is empty when the answer was acceptable."""

    target: Target
    problem: str
    seconds: float
    allowed: bool | None = None


def targets(configurations: Iterable[dict[str, Any]]) -> list[Target]:
    """Where the webhooks of ``configurations`` are served, one target per URL and CA.

    Why grouped: one webhook per plugin means many webhooks on one Service; a round trip to
    each distinct address proves them all, and the names say which webhooks it covered.
    """
    found: dict[tuple[str, bytes], list[str]] = {}
    for configuration in configurations:
        for hook in configuration.get("webhooks") or []:
            client = hook.get("clientConfig") or {}
            found.setdefault((_url(client), _ca(client)), []).append(str(hook.get("name")))
    return [Target(url, ca, tuple(names)) for (url, ca), names in found.items()]


def _url(client: dict[str, Any]) -> str:
    if client.get("url"):
        return str(client["url"])
    service = client.get("service") or {}
    host = f"{service.get('name')}.{service.get('namespace')}.svc"
    return f"https://{host}:{service.get('port', 443)}{service.get('path') or '/'}"


def _ca(client: dict[str, Any]) -> bytes:
    bundle = client.get("caBundle") or ""
    try:
        return base64.b64decode(bundle, validate=True)
    except (binascii.Error, ValueError):
        return b""


def probe_request(namespace: str) -> AdmissionRequest:
    """A dry-run CREATE of a minimal Pod in ``namespace``, with a fresh uid.

    Why a Pod: every plugin's rules include Pods, so the whole chain runs, and a dry run
    with no placement fields set is allowed by any configuration of the suite.
    """
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "placement-webhooks-probe", "namespace": namespace},
        "spec": {"containers": [{"name": "probe", "image": "probe"}]},
    }
    return AdmissionRequest(
        uid=str(uuid.uuid4()),
        operation="CREATE",
        group="",
        version="v1",
        kind="Pod",
        resource="pods",
        sub_resource="",
        namespace=namespace,
        name="placement-webhooks-probe",
        object=pod,
        dry_run=True,
        user={"username": PROBE_USER, "groups": ["system:authenticated"]},
    )


def round_trip(target: Target, namespace: str, timeout: float = 5.0) -> Outcome:
    """Post one review to ``target`` as the API server would, and judge the answer.

    Why TLS is checked exactly as the API server checks it: a certificate that is trusted
    by the wrong CA, or that does not name the host dialled, fails every real call too.
    """
    started = time.monotonic()

    def outcome(problem: str, allowed: bool | None = None) -> Outcome:
        return Outcome(target, problem, time.monotonic() - started, allowed)

    if not target.ca_pem:
        return outcome("no caBundle in the configuration yet")
    parts = urlsplit(target.url)
    if parts.scheme != "https" or not parts.hostname:
        return outcome(f"not an https URL: {target.url}")
    try:
        context = ssl.create_default_context(cadata=target.ca_pem.decode("ascii"))
    except (ssl.SSLError, ValueError) as exc:
        return outcome(f"the caBundle holds no usable certificate: {_line(exc)}")
    request = probe_request(namespace)
    body = orjson.dumps(request_dict(request))
    host = parts.hostname
    connection = http.client.HTTPSConnection(
        host, parts.port or 443, context=context, timeout=timeout
    )
    try:
        path = parts.path or "/"
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        answer = response.read()
    except ssl.SSLCertVerificationError as exc:
        reason = _line(exc.verify_message or exc)
        return outcome(f"TLS: the serving certificate is not trusted for {host}: {reason}")
    except (OSError, http.client.HTTPException) as exc:
        return outcome(f"no answer: {_line(exc)}")
    finally:
        connection.close()
    if response.status != 200:
        return outcome(f"HTTP {response.status}: {_line(answer[:200].decode(errors='replace'))}")
    try:
        decided = read_response(answer, request.uid)
    except ReviewError as exc:
        return outcome(str(exc))
    return outcome("", bool(decided["allowed"]))


def probe_all(found: Sequence[Target], namespace: str, timeout: float = 5.0) -> list[Outcome]:
    """One round trip per target, in order."""
    return [round_trip(target, namespace, timeout) for target in found]


def _line(value: object) -> str:
    return " ".join(str(value).split())
