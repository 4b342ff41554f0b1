"""Certificates the server manages itself: one Secret shared by every pod, files the server
serves, and the caBundle written into the webhook configurations.

Why: a chart that generates its CA at render time needs Helm's ``lookup`` to keep it, so
``helm template`` and GitOps tools make a new CA on every render. Here the chart renders an
empty Secret and nothing else certificate-related; each pod runs :class:`Manager` (the
``certs manage`` sidecar), which

1. reads the Secret, and after :func:`webhooks.certrotation.plan` writes it back with the
   ``resourceVersion`` it read (optimistic concurrency: of two replicas starting at once,
   one write wins, the other gets a 409 Conflict, reads again and adopts the winner's CA);
2. writes ``ca.crt`` (the bundle), ``tls.crt`` and ``tls.key`` into the cert directory the
   server watches (it reloads a changed pair within a second, without dropping requests);
   the CA key never leaves the Secret;
3. writes the bundle into every webhook of the two configurations with server-side apply
   (:func:`webhooks.webhookconfig.inject_ca_bundle`, the code ``webhook-config --inject``
   runs), only where it differs, which also repairs a caBundle someone reset.

The Secret's keys: ``ca.crt`` (the trusted bundle, signing CA first), ``ca.key``,
``next-ca.key`` and ``next-ca.since`` (a staged CA), ``tls.crt``, ``tls.key``.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from webhooks.certrotation import Material, Policy, bundle_pem, plan
from webhooks.certs import CA_FILE, CERT_FILE, KEY_FILE, Issued, write_files
from webhooks.webhookconfig import KINDS, InjectError, ca_bundle_of, inject_ca_bundle

CA_KEY: Final = "ca.key"
NEXT_KEY: Final = "next-ca.key"
NEXT_SINCE: Final = "next-ca.since"
#: How often a step retries after losing a write to another replica.
CONFLICT_RETRIES: Final = 5

_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----\r?\n.+?\r?\n-----END CERTIFICATE-----", re.S)


class ManageError(RuntimeError):
    """A step could not complete; the message is one line saying which call failed."""


def split_bundle(pem: bytes) -> tuple[bytes, ...]:
    """The certificates of a PEM bundle, one block each (anything between them dropped)."""
    return tuple(block + b"\n" for block in _PEM.findall(pem))


def from_secret(data: dict[str, str] | None) -> Material:
    """Read :class:`Material` from a Secret's ``data`` (base64 values); missing keys are empty.

    Why forgiving: a Secret an operator emptied, or one a newer version wrote with more
    keys, must lead to a repair (a new CA, or the keys known here), not to a crash loop.
    """
    raw = {key: _b64(value) for key, value in (data or {}).items()}
    leaf = None
    if raw.get(CERT_FILE) and raw.get(KEY_FILE):
        leaf = Issued(raw[CERT_FILE], raw[KEY_FILE])
    since = None
    if raw.get(NEXT_SINCE):
        try:
            since = dt.datetime.fromisoformat(raw[NEXT_SINCE].decode())
        except (ValueError, UnicodeDecodeError):
            since = None
    return Material(
        bundle=split_bundle(raw.get(CA_FILE, b"")),
        signing_key=raw.get(CA_KEY) or None,
        next_key=raw.get(NEXT_KEY) or None,
        next_since=since,
        leaf=leaf,
    )


def to_secret(material: Material) -> dict[str, str]:
    """The Secret ``data`` for ``material`` (base64 values)."""
    raw: dict[str, bytes] = {CA_FILE: bundle_pem(material)}
    if material.signing_key:
        raw[CA_KEY] = material.signing_key
    if material.next_key and material.next_since:
        raw[NEXT_KEY] = material.next_key
        raw[NEXT_SINCE] = material.next_since.isoformat().encode()
    if material.leaf:
        raw[CERT_FILE] = material.leaf.cert
        raw[KEY_FILE] = material.leaf.key
    return {key: base64.b64encode(value).decode("ascii") for key, value in raw.items()}


def _b64(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        return b""


@dataclass(frozen=True, slots=True)
class Loaded:
    """The Secret as read: its material, ``resourceVersion`` and whether it exists at all."""

    material: Material
    resource_version: str | None
    exists: bool
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


class SecretStore:
    """The shared Secret, read and written through the API with optimistic concurrency.

    Why ``replace`` with the ``resourceVersion`` read, not a patch: the write must fail if
    another replica wrote first, so that both end up with the same CA.
    """

    def __init__(self, api: Any, namespace: str, name: str, timeout: float = 10.0) -> None:
        from kubernetes.client import CoreV1Api

        self.core: Any = CoreV1Api(api)  # its generated types do not take plain dicts
        self.namespace = namespace
        self.name = name
        self.timeout = timeout

    def load(self) -> Loaded:
        """The Secret's material (empty when it does not exist)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            response = self.core.read_namespaced_secret(
                self.name, self.namespace, _preload_content=False, _request_timeout=self.timeout
            )
        except ApiException as exc:
            if exc.status == 404:
                return Loaded(Material(), None, exists=False)
            raise ManageError(f"read Secret {self.where}: {_api_message(exc)}") from None
        except (HTTPError, OSError) as exc:
            raise ManageError(f"read Secret {self.where}: {_unreachable(exc)}") from None
        secret = json.loads(response.data or b"{}")
        meta = secret.get("metadata") or {}
        return Loaded(
            from_secret(secret.get("data")),
            meta.get("resourceVersion"),
            exists=True,
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
        )

    def save(self, material: Material, loaded: Loaded) -> bool:
        """Write ``material``; False when another writer got there first (409 Conflict)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        # A replace sets the whole object: what others put on it is written back as read.
        # Helm's ownership annotations among them (meta.helm.sh/release-name, -namespace),
        # without which Helm refuses to adopt the Secret again.
        if loaded.labels:
            metadata["labels"] = loaded.labels
        if loaded.annotations:
            metadata["annotations"] = loaded.annotations
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": metadata,
            "data": to_secret(material),
        }
        try:
            if loaded.exists:
                metadata["resourceVersion"] = loaded.resource_version
                self.core.replace_namespaced_secret(
                    self.name, self.namespace, body, _request_timeout=self.timeout
                )
            else:
                self.core.create_namespaced_secret(
                    self.namespace, body, _request_timeout=self.timeout
                )
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise ManageError(f"write Secret {self.where}: {_api_message(exc)}") from None
        except (HTTPError, OSError) as exc:
            raise ManageError(f"write Secret {self.where}: {_unreachable(exc)}") from None
        return True

    @property
    def where(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class Step:
    """What one step did: the Secret's changes, the files written, the configurations."""

    changes: list[str] = field(default_factory=list)
    files_written: bool = False
    injected: list[str] = field(default_factory=list)
    material: Material = field(default_factory=Material)


@dataclass
class Manager:
    """One pod's share of the work; every pod runs one, all converge on the Secret's CA."""

    api: Any
    store: SecretStore
    policy: Policy
    cert_dir: Path
    webhook_configuration: str
    clock: Callable[[], dt.datetime] = field(default=lambda: dt.datetime.now(dt.UTC))

    @property
    def targets(self) -> list[tuple[str, str]]:
        return [
            (KINDS["mutate"], self.webhook_configuration),
            (KINDS["validate"], self.webhook_configuration),
        ]

    def step(self) -> Step:
        """Load, plan, save (retrying lost races), write the files, publish the bundle.

        Raises :class:`ManageError` when the Secret cannot be read or written, or the bundle
        cannot be published; the files are written before publishing, so a pod can serve
        while the API server is briefly unavailable, and the next step publishes again.
        """
        for _ in range(CONFLICT_RETRIES):
            loaded = self.store.load()
            repaired: list[str] = []
            published = bool(loaded.material.bundle) and self._published(loaded.material, repaired)
            material, changes = plan(
                loaded.material, self.policy, self.clock(), published=published
            )
            if changes and not self.store.save(material, loaded):
                continue  # another replica wrote first: adopt what it wrote
            done = Step(changes=changes, material=material)
            done.files_written = self._write(material)
            done.injected = [*repaired, *self._publish(material)]
            return done
        raise ManageError(
            f"Secret {self.store.where}: lost {CONFLICT_RETRIES} writes in a row to other writers"
        )

    def _write(self, material: Material) -> bool:
        if material.leaf is None:
            return False
        wanted = [
            (self.cert_dir / CA_FILE, bundle_pem(material), False),
            (self.cert_dir / KEY_FILE, material.leaf.key, True),
            (self.cert_dir / CERT_FILE, material.leaf.cert, False),
        ]
        if all(_same(path, data) for path, data, _ in wanted):
            return False
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        write_files(wanted)
        return True

    def _published(self, material: Material, changed: list[str]) -> bool:
        """Whether every configuration carries ``material``'s bundle now (written if not;
        the configurations written are added to ``changed``).

        Why it gates promoting a staged CA: only a bundle the API servers have can make them
        trust a leaf the new CA signs. False on any failure, or with no configuration yet.
        """
        try:
            results = self._inject(material)
        except InjectError:
            return False
        changed += [f"{r.kind} {r.name}" for r in results if r.changed]
        return bool(results)

    def _publish(self, material: Material) -> list[str]:
        """Write the bundle where it differs; the configurations changed."""
        try:
            results = self._inject(material)
        except InjectError as exc:
            raise ManageError(f"publish the caBundle: {exc}") from None
        return [f"{r.kind} {r.name}" for r in results if r.changed]

    def _inject(self, material: Material) -> list[Any]:
        bundle = ca_bundle_of(bundle_pem(material))
        return inject_ca_bundle(
            self.api, bundle, self.targets, only_if_different=True, missing_ok=True
        )


def _same(path: Path, data: bytes) -> bool:
    try:
        return path.read_bytes() == data
    except OSError:
        return False


def _api_message(exc: Any) -> str:
    try:
        message = json.loads(exc.body).get("message") or exc.reason
    except (TypeError, ValueError, AttributeError):
        message = exc.reason
    return f"{' '.join(str(message).split())} (HTTP {exc.status})"


def _unreachable(exc: Exception) -> str:
    return "API server unreachable: " + " ".join(str(exc).split())


def describe(step: Step) -> list[str]:
    """One line per thing a step did, for the log."""
    lines = [f"Secret: {change}" for change in step.changes]
    if step.files_written:
        lines.append("files: wrote ca.crt, tls.crt and tls.key")
    lines += [f"{name}: caBundle updated" for name in step.injected]
    return lines
