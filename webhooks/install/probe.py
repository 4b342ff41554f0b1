"""A review round trip to the running webhooks, made the way the API server makes it.

Why: "the pods are ready" is not "admission works". The Service may route nowhere, the
serving certificate may not chain to the caBundle the configuration registers, or may not
name the Service. The probe reads the webhook configurations the API server reads, dials
each webhook where the API server would (``<service>.<namespace>.svc:<port><path>``, or the
configured URL), verifies TLS against that configuration's caBundle and that host name,
posts an AdmissionReview for a dry-run Pod CREATE and checks that the answer is one the API
server would accept. The install hook uses it before switching the configurations to their
fail-closed policy, and ``helm test`` runs it.

The timeout is a deadline for the whole round trip, as the API server applies a webhook's
``timeoutSeconds`` (a context deadline over its request): resolving the name, connecting,
the TLS handshake, sending the review and reading the answer's head and body all share it,
however slowly a peer dribbles its bytes. The answer is read no further than
:data:`ANSWER_LIMIT`.

What it does not cover: the network path from the API server to the pods (a firewall
between the control plane and the nodes, a NetworkPolicy naming the wrong peers). That path
is only proven by a request through the API server (docs/operations.md says how).
"""

from __future__ import annotations

import base64
import binascii
import http.client
import io
import re
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import SplitResult, urlsplit

import orjson

from webhooks.core.review import AdmissionRequest, ReviewError, read_response, request_dict

#: Who the probe's review says is asking; a name no exception or skip list would match.
PROBE_USER: Final = "system:serviceaccount:placement-webhooks:probe"
#: The most bytes of an answer's body the probe reads. Why 3 MiB: the API server's webhook
#: client sets no size limit of its own (client-go's rest client reads the whole body, and
#: only ``timeoutSeconds`` bounds it), so the figure is the API server's limit on a request
#: body (``MaxRequestBodyBytes``, k8s.io/apiserver pkg/server/config.go): an answer whose
#: patch made a larger object could never be stored. The probe's Pod needs a few hundred.
#: The head is bounded by ``http.client`` (lines of 64 KiB, 100 header lines), below the
#: 10 MiB Go's HTTP client (the API server's) allows.
ANSWER_LIMIT: Final = 3 * 1024 * 1024

#: Bytes a request target may not hold (what ``http.client`` refuses as well).
_UNSAFE_PATH = re.compile("[\x00-\x20\x7f]")


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
    by the wrong CA, or that does not name the host dialled, fails every real call too. Why
    ``timeout`` bounds the whole round trip: so does the API server's, and an answer that
    takes longer fails every real call, however it arrives.
    """
    started = time.monotonic()

    def outcome(problem: str, allowed: bool | None = None) -> Outcome:
        return Outcome(target, problem, time.monotonic() - started, allowed)

    if not target.ca_pem:
        return outcome("no caBundle in the configuration yet")
    parts = urlsplit(target.url)
    if parts.scheme != "https" or not parts.hostname:
        return outcome(f"not an https URL: {target.url}")
    if _UNSAFE_PATH.search(parts.path):
        return outcome(f"not a usable path: {parts.path!r}")
    try:
        parts.port  # noqa: B018 - read for its check: a port that is no number, or too large
    except ValueError as exc:
        return outcome(f"not a usable URL: {target.url}: {_line(exc)}")
    try:
        context = ssl.create_default_context(cadata=target.ca_pem.decode("ascii"))
    except (ssl.SSLError, ValueError) as exc:
        return outcome(f"the caBundle holds no usable certificate: {_line(exc)}")
    request = probe_request(namespace)
    host = parts.hostname
    try:
        status, answer = _exchange(
            parts, context, orjson.dumps(request_dict(request)), Deadline(timeout)
        )
    except TimeoutError:
        return outcome(
            f"no complete answer within the {timeout:g} s timeout (one deadline for "
            "resolving, connecting, TLS, the request and the whole answer)"
        )
    except ssl.SSLCertVerificationError as exc:
        reason = _line(exc.verify_message or exc)
        return outcome(f"TLS: the serving certificate is not trusted for {host}: {reason}")
    except AnswerTooLarge as exc:
        return outcome(str(exc))
    except OSError as exc:
        return outcome(f"no answer: {_line(exc)}")
    except http.client.HTTPException as exc:
        return outcome(f"no usable answer: {_line(exc)}")
    if status != 200:
        return outcome(f"HTTP {status}: {_line(answer[:200].decode(errors='replace'))}")
    try:
        decided = read_response(answer, request.uid)
    except ReviewError as exc:
        return outcome(str(exc))
    return outcome("", bool(decided["allowed"]))


class AnswerTooLarge(Exception):
    """The answer's body is longer than :data:`ANSWER_LIMIT` (the message says so)."""


class Deadline:
    """A point in time every step of a round trip must finish by.

    Why one object: each blocking call is given only the time left (:meth:`left`), so the
    steps together, however many reads a slow peer causes, take no longer than the total.
    """

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left; raises ``TimeoutError`` once none are."""
        remaining = self.at - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the deadline has passed")
        return remaining


def _exchange(
    parts: SplitResult, context: ssl.SSLContext, body: bytes, deadline: Deadline
) -> tuple[int, bytes]:
    """POST ``body`` to the URL ``parts`` over TLS; the answer's status and body.

    Raises ``TimeoutError`` past ``deadline``, :class:`AnswerTooLarge` past
    :data:`ANSWER_LIMIT`, ``OSError`` (TLS included) or ``http.client.HTTPException``.
    """
    with _handshaken(parts, context, deadline) as tls:
        stream = _Stream(tls, deadline)
        authority = parts.netloc.rpartition("@")[2]
        head = (
            f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {authority}\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        stream.send_all(head.encode("ascii") + body)
        response = http.client.HTTPResponse(stream)  # type: ignore[arg-type]
        response.begin()
        if response.length is not None and response.length > ANSWER_LIMIT:
            raise AnswerTooLarge(_too_large(f"says it is {response.length} bytes long"))
        answer = response.read(ANSWER_LIMIT + 1)
        if len(answer) > ANSWER_LIMIT:
            raise AnswerTooLarge(_too_large("goes on past it"))
        if response.length:  # read to the end of the connection before Content-Length
            raise http.client.IncompleteRead(answer, response.length)
        return response.status, answer


def _handshaken(parts: SplitResult, context: ssl.SSLContext, deadline: Deadline) -> ssl.SSLSocket:
    """A TLS connection to the URL ``parts``, its handshake done within ``deadline``."""
    host = parts.hostname or ""
    raw = _connect(host, parts.port or 443, deadline)
    try:
        tls = context.wrap_socket(raw, server_hostname=host, do_handshake_on_connect=False)
    except BaseException:
        raw.close()
        raise
    try:
        tls.settimeout(deadline.left())
        tls.do_handshake()  # one call: CPython bounds the whole handshake by the timeout
    except BaseException:
        tls.close()
        raise
    return tls


@dataclass(frozen=True, slots=True)
class Served:
    """The certificate a webhook serves, as the API server would meet it.

    ``der`` is the leaf (``b""`` when no handshake completed); ``untrusted`` says why the
    API server would refuse it against the caBundle (``""``: it verifies, host name
    included); ``problem`` says why nothing was reached (``""``: a handshake completed).
    """

    der: bytes
    untrusted: str = ""
    problem: str = ""


def served_certificate(url: str, ca_pem: bytes, timeout: float = 5.0) -> Served:
    """The leaf certificate served at ``url`` and whether ``ca_pem`` verifies it for the host.

    Why a second handshake without verification when the first is refused: "not trusted"
    alone does not say whether the caBundle or the certificate is the stale one; the leaf's
    issuer, names and expiry do. Each handshake gets ``timeout`` as its whole deadline.
    """
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        return Served(b"", problem=f"not an https URL: {url}")
    untrusted = ""
    try:
        trusted = ssl.create_default_context(cadata=ca_pem.decode("ascii")) if ca_pem else None
    except (ssl.SSLError, ValueError) as exc:
        trusted, untrusted = None, f"the caBundle holds no usable certificate: {_line(exc)}"
    if trusted is None and not untrusted:
        untrusted = "no caBundle in the configuration"
    try:
        if trusted is not None:
            try:
                with _handshaken(parts, trusted, Deadline(timeout)) as tls:
                    return Served(tls.getpeercert(binary_form=True) or b"")
            except ssl.SSLCertVerificationError as exc:
                untrusted = _line(exc.verify_message or exc)
        anything = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        anything.check_hostname = False
        anything.verify_mode = ssl.CERT_NONE
        with _handshaken(parts, anything, Deadline(timeout)) as tls:
            return Served(tls.getpeercert(binary_form=True) or b"", untrusted)
    except TimeoutError:
        return Served(b"", problem=f"no TLS handshake within the {timeout:g} s timeout")
    except OSError as exc:
        return Served(b"", problem=f"no TLS handshake: {_line(exc)}")


def _too_large(how: str) -> str:
    return f"the answer {how}: the probe reads at most ANSWER_LIMIT ({ANSWER_LIMIT} bytes)"


def _connect(host: str, port: int, deadline: Deadline) -> socket.socket:
    """A TCP connection to ``host``, trying its addresses in order within ``deadline``."""
    error: OSError = OSError(f"no address for {host}")
    for family, kind, proto, _, address in _resolve(host, port, deadline):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(deadline.left())
            sock.connect(address)
        except TimeoutError:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return sock
    raise error


def _resolve(host: str, port: int, deadline: Deadline) -> list[Any]:
    """``getaddrinfo`` for ``host``, given no longer than ``deadline`` allows.

    Why in a thread: the resolver call cannot be interrupted, and a name the resolver is
    slow to answer must not stretch the round trip. The thread is left to finish alone.
    """
    found: list[Any] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)

    resolver = threading.Thread(target=lookup, name="probe-resolve", daemon=True)
    resolver.start()
    resolver.join(deadline.left())
    if not found:
        raise TimeoutError(f"resolving {host}")
    if isinstance(found[0], OSError):
        raise found[0]
    return list(found[0])


class _Stream(io.RawIOBase):
    """A TLS connection whose every read and write may take only the time left.

    Why: a socket's timeout bounds one call, and a peer that sends a byte a second never
    lets a call run out, so each call here is first given what is left of the deadline.
    ``http.client`` reads the answer through it (:meth:`makefile`).
    """

    def __init__(self, sock: ssl.SSLSocket, deadline: Deadline) -> None:
        super().__init__()
        self.sock = sock
        self.deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.sock.settimeout(self.deadline.left())
        return self.sock.recv_into(buffer)

    def send_all(self, data: bytes) -> None:
        """Send ``data``, each piece within what is left (``SSLSocket.sendall`` would give
        every piece the whole timeout)."""
        view = memoryview(data)
        while view:
            self.sock.settimeout(self.deadline.left())
            view = view[self.sock.send(view) :]

    def makefile(self, mode: str = "rb") -> io.BufferedReader:
        """What ``http.client.HTTPResponse`` reads from."""
        return io.BufferedReader(self)


def probe_all(found: Sequence[Target], namespace: str, timeout: float = 5.0) -> list[Outcome]:
    """One round trip per target, in order."""
    return [round_trip(target, namespace, timeout) for target in found]


def _line(value: object) -> str:
    return " ".join(str(value).split())
