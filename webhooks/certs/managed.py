"""Certificates the server manages itself: one Secret shared by every pod, files the server
serves, and the caBundle written into the webhook configurations.

Why: a chart that generates its CA at render time needs Helm's ``lookup`` to keep it, so
``helm template`` and GitOps tools make a new CA on every render. Here the chart renders an
empty Secret and nothing else certificate-related; each pod runs :class:`Manager` (the
``certs manage`` sidecar), which

1. reads the Secret, and after :func:`webhooks.certs.rotation.plan` writes it back with the
   ``resourceVersion`` it read (optimistic concurrency: of two replicas starting at once,
   one write wins, the other gets a 409 Conflict, reads again and adopts the winner's CA);
2. writes ``ca.crt`` (the bundle), ``tls.crt`` and ``tls.key`` into the cert directory the
   server watches (it reloads a changed pair within a second, without dropping requests);
   the CA key never leaves the Secret;
3. writes the bundle into every webhook of the two configurations with server-side apply
   (:func:`webhooks.install.webhookconfig.inject_ca_bundle`, the code ``webhook-config --inject``
   runs), only where it differs, which also repairs a caBundle someone reset.

The Secret's keys: ``ca.crt`` (the trusted bundle, signing CA first), ``ca.key``,
``next-ca.key`` and ``next-ca.since`` (a staged CA), ``tls.crt``, ``tls.key``.

What is read is bounded and checked, and what is wrong with it decides the outcome:

- a part of the Secret that cannot be used (a value that is not base64, larger than
  :data:`~webhooks.certs.pki.MAX_PEM_BYTES`, PEM that does not parse, a certificate that is not
  a CA, a key of the wrong kind or for another certificate, an expired CA, more than
  :data:`~webhooks.certs.rotation.MAX_BUNDLE_CERTS` certificates) is dropped and what it
  provided is made anew (:func:`read_secret`, then :func:`webhooks.certs.rotation.plan`): the
  Secret is repaired, and the step's one line for it says what was wrong and what was done;
- an answer that is not a Secret at all (not JSON, not an object, over
  :data:`MAX_SECRET_ANSWER`) and files that cannot be written are reported
  (:class:`ManageError`) and nothing is written: the files, the caBundle and the Secret
  keep the last good material until the next check;
- files in the cert directory and caBundles that differ from the Secret are rewritten.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import itertools
import json
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from webhooks.certs.pki import (
    CA_FILE,
    CERT_FILE,
    KEY_FILE,
    MAX_PEM_BYTES,
    Issued,
    pem_spans,
    write_files,
)
from webhooks.certs.rotation import MAX_BUNDLE_CERTS, Material, Policy, bundle_pem, plan
from webhooks.install.webhookconfig import KINDS, InjectError, ca_bundle_of, inject_ca_bundle

CA_KEY: Final = "ca.key"
NEXT_KEY: Final = "next-ca.key"
NEXT_SINCE: Final = "next-ca.since"
#: How often a step retries after losing a write to another replica.
CONFLICT_RETRIES: Final = 5
#: The most bytes of the API server's answer to reading the Secret. Why 3 MiB: it is the
#: API server's own limit on a request body (``MaxRequestBodyBytes``, k8s.io/apiserver
#: pkg/server/config.go), so no client wrote a larger object; a real Secret (at most 1 MiB
#: of data, 1.34 MiB as base64) fits with its metadata.
MAX_SECRET_ANSWER: Final = 3 * 1024 * 1024
#: The longest base64 value that can decode to at most ``MAX_PEM_BYTES``; longer ones are
#: refused before they are decoded.
_MAX_ENCODED = 4 * (MAX_PEM_BYTES // 3 + 1)


class ManageError(RuntimeError):
    """A step could not complete; the message is one line saying which call failed."""


@dataclass(frozen=True, slots=True)
class Bundle:
    """The certificate blocks of a PEM bundle, and what else it held."""

    blocks: tuple[bytes, ...]
    more: bool = False  #: it held more than the blocks kept
    other: bool = False  #: text that is no certificate block lay between them


def split_bundle(pem: bytes, keep: int = MAX_BUNDLE_CERTS) -> Bundle:
    """The first ``keep`` certificate blocks of a PEM bundle, one block each.

    Why bounded: the work (one forward pass, :func:`webhooks.certs.pki.pem_spans`) stops after
    the blocks kept plus one, however many the bundle holds.
    """
    blocks: list[bytes] = []
    other = False
    position = 0
    spans = itertools.islice(pem_spans(pem), keep + 1)
    for start, stop in spans:
        if len(blocks) == keep:
            return Bundle(tuple(blocks), more=True, other=other)
        other = other or bool(pem[position:start].strip())
        blocks.append(pem[start:stop] + b"\n")
        position = stop
    return Bundle(tuple(blocks), other=other or bool(pem[position:].strip()))


@dataclass(frozen=True, slots=True)
class SecretData:
    """A Secret's material, and what was wrong with its data (phrases naming each key)."""

    material: Material
    problems: tuple[str, ...] = ()


def read_secret(data: object) -> SecretData:
    """Read :class:`Material` from a Secret's ``data`` (base64 values); missing keys are empty.

    Why forgiving: a Secret an operator emptied or mangled, or one a newer version wrote
    with more keys, must lead to a repair (a new CA, or the keys known here), not to a
    crash loop. Each value that cannot be used is dropped and named in ``problems``; the
    content of what is kept (does it parse, is it a CA) is :func:`plan`'s to check.
    """
    problems: list[str] = []
    if data is not None and not isinstance(data, Mapping):
        problems.append("its data is not a map of keys to values (ignored)")
        data = None
    raw: dict[str, bytes] = {}
    for key in (CA_FILE, CA_KEY, NEXT_KEY, NEXT_SINCE, CERT_FILE, KEY_FILE):
        value = (data or {}).get(key)
        if value is None or value == "":
            continue
        decoded, problem = _decoded(value)
        if problem:
            problems.append(f"{key} {problem} (ignored)")
        else:
            raw[key] = decoded
    bundle = split_bundle(raw.get(CA_FILE, b""))
    if raw.get(CA_FILE) and not bundle.blocks:
        problems.append(f"{CA_FILE} holds no certificate block (ignored)")
    elif bundle.other:
        problems.append(f"{CA_FILE} holds text besides its certificate blocks (dropped)")
    if bundle.more:
        problems.append(
            f"{CA_FILE} holds more than MAX_BUNDLE_CERTS ({MAX_BUNDLE_CERTS}) certificates "
            f"(kept the first {MAX_BUNDLE_CERTS})"
        )
    leaf = None
    if raw.get(CERT_FILE) and raw.get(KEY_FILE):
        leaf = Issued(raw[CERT_FILE], raw[KEY_FILE])
    since = None
    if raw.get(NEXT_SINCE):
        try:
            since = dt.datetime.fromisoformat(raw[NEXT_SINCE].decode())
        except (ValueError, UnicodeDecodeError):
            problems.append(f"{NEXT_SINCE} is not a time (ignored)")
    return SecretData(
        Material(
            bundle=bundle.blocks,
            signing_key=raw.get(CA_KEY) or None,
            next_key=raw.get(NEXT_KEY) or None,
            next_since=since,
            leaf=leaf,
        ),
        tuple(problems),
    )


def from_secret(data: object) -> Material:
    """The material of a Secret's ``data``, whatever it holds (:func:`read_secret`)."""
    return read_secret(data).material


def _decoded(value: object) -> tuple[bytes, str]:
    """A Secret value's bytes, or what is wrong with it."""
    if not isinstance(value, str):
        return b"", "is not a string"
    if len(value) > _MAX_ENCODED:
        return b"", f"holds more than MAX_PEM_BYTES ({MAX_PEM_BYTES} bytes)"
    try:
        return base64.b64decode(value, validate=True), ""
    except (binascii.Error, ValueError):
        return b"", "is not base64"


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


@dataclass(frozen=True, slots=True)
class Loaded:
    """The Secret as read: its material, ``resourceVersion``, whether it exists at all, and
    what was wrong with its data."""

    material: Material
    resource_version: str | None
    exists: bool
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


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
        """The Secret's material (empty when it does not exist).

        Raises :class:`ManageError`, so that nothing is written, when the answer is not a
        Secret: over :data:`MAX_SECRET_ANSWER`, not JSON, or not an object with a string
        ``resourceVersion``.
        """
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            response = self.core.read_namespaced_secret(
                self.name, self.namespace, _preload_content=False, _request_timeout=self.timeout
            )
            answer = response.read(MAX_SECRET_ANSWER + 1)
            if len(answer) > MAX_SECRET_ANSWER:
                response.close()  # the rest stays unread: the connection cannot be reused
            else:
                response.release_conn()
        except ApiException as exc:
            if exc.status == 404:
                return Loaded(Material(), None, exists=False)
            raise ManageError(f"read Secret {self.where}: {_api_message(exc)}") from None
        except (HTTPError, OSError) as exc:
            raise ManageError(f"read Secret {self.where}: {_unreachable(exc)}") from None
        secret = _secret_object(answer)
        if isinstance(secret, str):
            raise ManageError(f"read Secret {self.where}: {secret}; nothing written")
        meta = secret["metadata"]
        read = read_secret(secret.get("data"))
        return Loaded(
            read.material,
            meta["resourceVersion"],
            exists=True,
            labels=_strings(meta.get("labels")),
            annotations=_strings(meta.get("annotations")),
            problems=read.problems,
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


def _secret_object(answer: bytes) -> dict[str, Any] | str:
    """The Secret in the API server's answer, or what is wrong with the answer."""
    if len(answer) > MAX_SECRET_ANSWER:
        return f"the answer holds more than MAX_SECRET_ANSWER ({MAX_SECRET_ANSWER} bytes)"
    try:
        secret = json.loads(answer)
    except ValueError:
        return f"the answer is not JSON: {_excerpt(answer)}"
    if not isinstance(secret, dict) or not isinstance(secret.get("metadata"), dict):
        return f"the answer is not an object with metadata: {_excerpt(answer)}"
    if not isinstance(secret["metadata"].get("resourceVersion"), str):
        return "the answer has no resourceVersion"
    return secret


def _strings(value: object) -> dict[str, str]:
    """Labels or annotations as read, keeping only string pairs (all a real Secret has)."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _excerpt(data: bytes, limit: int = 80) -> str:
    text = " ".join(data[:limit].decode("utf-8", "replace").split())
    return f"{text!r}" + (f" (first {limit} of {len(data)} bytes)" if len(data) > limit else "")


@dataclass
class Step:
    """What one step did: the Secret's changes, the files written, the configurations."""

    changes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
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
            # A problem in the data is saved even when the plan changes nothing: the Secret
            # is then written without it, and the next step finds nothing to report.
            if (changes or loaded.problems) and not self.store.save(material, loaded):
                continue  # another replica wrote first: adopt what it wrote
            done = Step(changes=changes, problems=list(loaded.problems), material=material)
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
        try:
            self.cert_dir.mkdir(parents=True, exist_ok=True)
            write_files(wanted)
        except OSError as exc:
            where = exc.filename2 or exc.filename or self.cert_dir
            raise ManageError(
                f"write the files in {self.cert_dir}: {where}: {exc.strerror or exc}; "
                "the files as they were are kept"
            ) from None
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
    """Whether ``path`` is a regular file holding exactly ``data``.

    Why the size is compared first: what is in the directory is read no further than the
    bytes wanted, whatever lies there (a huge file, a FIFO that would block a read).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
            return False
        return os.pread(fd, len(data) + 1, 0) == data
    except OSError:
        return False
    finally:
        os.close(fd)


def _api_message(exc: Any) -> str:
    try:
        message = json.loads(exc.body).get("message") or exc.reason
    except (TypeError, ValueError, AttributeError):
        message = exc.reason
    return f"{' '.join(str(message).split())} (HTTP {exc.status})"


def _unreachable(exc: Exception) -> str:
    return "API server unreachable: " + " ".join(str(exc).split())


def describe(step: Step) -> list[str]:
    """One line per thing a step did, for the log; the Secret's says what was wrong with its
    data (if anything) and then what was done, in that order.

    Why one line for the Secret: a repair is one event; its cause and its effects belong
    together where an operator reads them.
    """
    done = [*step.problems, *step.changes]
    lines = [f"Secret: {'; '.join(done)}"] if done else []
    if step.files_written:
        lines.append("files: wrote ca.crt, tls.crt and tls.key")
    lines += [f"{name}: caBundle updated" for name in step.injected]
    return lines
