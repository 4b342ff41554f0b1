"""The lifecycle of a CA and serving certificate the server manages itself, as pure decisions.

Why pure: every decision (create, renew the leaf, stage a new CA, promote it) is a function
of what the Secret holds and the time, so it is tested with a fixed clock, and the code that
talks to the API server (:mod:`webhooks.certs.managed`) only loads, saves and publishes.

The rules, in the order :func:`plan` applies them:

0. What cannot be used is dropped, each part named in the changes: certificates of the
   bundle that do not parse or are not CAs, those past :data:`MAX_BUNDLE_CERTS`, keys that
   do not parse or are not of a kind that may sign (:func:`usable_key`), a staged CA's
   start time without a zone or in the future. The rules below then make anew what is
   missing, so a corrupted Secret is repaired, never crashed on.
1. Certificates in the bundle that have expired are dropped. Without a usable signing CA
   (none, expired, or no key for it) a new one is created.
2. A staged CA is promoted to signing once it has been in the bundle for ``overlap`` and the
   webhook configurations are known to carry that bundle: every API server then trusts it
   before any pod serves a certificate it signed.
3. A signing CA that expires within ``ca_renew_days`` gets a successor, staged: added to the
   bundle beside it, not yet signing. Old and new CA are both trusted during the rollover.
4. A CA that no longer signs stays in the bundle until every leaf it signed has expired
   (``overlap`` plus ``leaf_days`` after its successor was made), so a pod still serving
   such a leaf keeps working; then it leaves, long before its own expiry could raise an
   expiry alert about a CA nothing uses.
5. The leaf is reissued when it is missing, does not match its key, was not signed by the
   signing CA, does not name exactly the Service's hosts, or expires within
   ``leaf_renew_days``.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes, PublicKeyTypes

from webhooks.certs.pki import CLOCK_SKEW, Issued, decoded, is_ca, issue_leaf, new_ca

#: The most certificates the trusted bundle keeps: the first ones, the signing CA first.
#: Why 16: rotation never holds more than three (the signing CA, a staged successor, and the
#: CA it replaced until the leaves it signed expire), which leaves room for CAs added by
#: hand; and the bundle is copied into every webhook of both configurations, objects the
#: API server refuses beyond 3 MiB, so the bundle must stay small whatever the Secret holds.
MAX_BUNDLE_CERTS: Final = 16
#: Days before its expiry a serving certificate is renewed (the chart's
#: ``tls.managed.renewDays``); ``doctor`` warns about one closer than that to expiry.
LEAF_RENEW_DAYS: Final = 30
#: The largest RSA key used. Why 4096 bits: loading a private key checks its consistency at
#: a cost that grows steeply with its size (0.7 s at 4096 bits, 9 s at 8192 on one core of
#: the machine measured); the serving key made here is ECDSA P-256 anyway.
MAX_RSA_BITS: Final = 4096
#: Curves a key may be on: those the API server's TLS client verifies (Go's crypto/tls).
CURVES: Final = frozenset({"secp256r1", "secp384r1", "secp521r1"})


@dataclass(frozen=True, slots=True)
class Material:
    """What the shared Secret holds: the trusted bundle, the signing CA, a staged CA, the leaf.

    ``bundle`` is PEM certificates, the signing CA first; the staged CA's certificate is in
    it too, its key in ``next_key`` and the time it was staged in ``next_since``.
    """

    bundle: tuple[bytes, ...] = ()
    signing_key: bytes | None = None
    next_key: bytes | None = None
    next_since: dt.datetime | None = None
    leaf: Issued | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    """Lifetimes and the names the leaf must carry; the defaults are the chart's."""

    hosts: tuple[str, ...]
    ca_days: int = 1825
    ca_renew_days: int = 365
    leaf_days: int = 90
    leaf_renew_days: int = LEAF_RENEW_DAYS
    overlap: dt.timedelta = field(default=dt.timedelta(hours=1))
    common_name: str = "placement-webhooks"

    def __post_init__(self) -> None:
        if not self.hosts:
            raise ValueError("the leaf needs at least one host name")
        if not 0 < self.leaf_renew_days < self.leaf_days:
            raise ValueError("leaf renewal must come after issue and before expiry")
        if not 0 < self.ca_renew_days < self.ca_days:
            raise ValueError("CA renewal must come after creation and before expiry")
        if self.leaf_days >= self.ca_renew_days:
            raise ValueError("a leaf must be shorter-lived than the CA's renewal window")


def plan(
    material: Material, policy: Policy, now: dt.datetime, *, published: bool
) -> tuple[Material, list[str]]:
    """The material after every rule that applies at ``now``, and what changed (in words).

    ``published``: the webhook configurations carry ``material.bundle`` right now (the
    caller has just written it). An empty list of changes means the Secret stays as it is.
    """
    changes: list[str] = []
    read, material = material, _usable(material, now, changes)
    bundle = [pem for pem in _unique(material.bundle) if _cert(pem).not_valid_after_utc > now]
    if len(bundle) < len(material.bundle):
        changes.append("dropped expired or repeated certificates from the bundle")
    signing = _owner(bundle, material.signing_key)
    next_ca = _owner(bundle, material.next_key)
    next_key, next_since = material.next_key, material.next_since
    if next_key is not None and next_ca is None:
        next_key, next_since = None, None
        changes.append("forgot a staged CA that is no longer in the bundle")
    elif next_ca is not None and next_since is None:
        next_since = now  # its overlap starts again: it is in the bundle, published or soon
        changes.append("restarted the staged CA's overlap: its start time was lost")
    signing_key = material.signing_key
    if signing is None and next_ca is not None:
        signing, signing_key = next_ca, next_key
        next_key, next_since = None, None
        changes.append("promoted the staged CA early: the signing CA was gone")
    elif signing is None:
        changes.append("created a CA" + _why_new(bundle, signing_key))
        created = new_ca(f"{policy.common_name} CA", days=policy.ca_days, now=now)
        bundle.insert(0, created.cert)
        signing, signing_key = created.cert, created.key
    elif next_key is not None and next_ca is not None and next_since is not None:
        if published and now - next_since >= policy.overlap:
            signing, signing_key = next_ca, next_key
            next_key, next_since = None, None
            changes.append("promoted the staged CA to signing; the old CA stays trusted")
    elif _expires_within(signing, now, policy.ca_renew_days):
        staged = new_ca(f"{policy.common_name} CA", days=policy.ca_days, now=now)
        bundle.append(staged.cert)
        next_key, next_since = staged.key, now
        changes.append("staged a new CA beside the signing one")
    bundle = _retired(bundle, signing, next_key, policy, now, changes)
    leaf = _serving(material.leaf, Issued(signing, signing_key or b""), policy, now, changes)
    updated = replace(
        material,
        bundle=tuple(bundle),
        signing_key=signing_key,
        next_key=next_key,
        next_since=next_since,
        leaf=leaf,
    )
    if updated != read and not changes:
        changes.append("reordered the bundle")
    return updated, changes


def _usable(material: Material, now: dt.datetime, changes: list[str]) -> Material:
    """``material`` without what cannot be used; each part dropped is named in ``changes``.

    Why before every other rule: they all read certificates and keys, and what this drops
    they make anew (a CA, a leaf), so a corrupted Secret is repaired and the repair says
    what was wrong. At most :data:`MAX_BUNDLE_CERTS` certificates are parsed.
    """
    bundle: list[bytes] = []
    for number, pem in enumerate(material.bundle[:MAX_BUNDLE_CERTS], start=1):
        cert = _parsed(pem)
        if cert is None:
            changes.append(f"dropped certificate {number} of the bundle: it does not parse")
        elif not is_ca(cert):
            changes.append(f"dropped certificate {number} of the bundle: it is not a CA")
        else:
            bundle.append(pem)
    if len(material.bundle) > MAX_BUNDLE_CERTS:
        changes.append(
            f"dropped the bundle's {len(material.bundle) - MAX_BUNDLE_CERTS} certificates "
            f"after the first {MAX_BUNDLE_CERTS} (MAX_BUNDLE_CERTS)"
        )
    signing_key = _kept_key(material.signing_key, "the CA key", changes)
    next_key = _kept_key(material.next_key, "the staged CA's key", changes)
    since = material.next_since
    if since is not None and since.utcoffset() is None:
        changes.append("dropped the staged CA's start time: it has no time zone")
        since = None
    elif since is not None and since > now + CLOCK_SKEW:
        changes.append("moved the staged CA's start time from the future to now")
        since = now
    return replace(
        material,
        bundle=tuple(bundle),
        signing_key=signing_key,
        next_key=next_key,
        next_since=since,
    )


def _kept_key(pem: bytes | None, what: str, changes: list[str]) -> bytes | None:
    if pem is None or usable_key(pem) is not None:
        return pem
    changes.append(f"dropped {what}: {_KEY_RULE}")
    return None


_KEY_RULE = (
    "it is not an unencrypted ECDSA (P-256, P-384, P-521) "
    f"or RSA (2048 to {MAX_RSA_BITS} bits) private key"
)


@functools.lru_cache(maxsize=8)
def usable_key(pem: bytes) -> PrivateKeyTypes | None:
    """The private key in ``pem`` when it may sign or serve here, else ``None``.

    Why these kinds: the API server's TLS client verifies ECDSA on the three NIST curves
    and RSA, and RSA is bounded by :data:`MAX_RSA_BITS` because checking a key costs more
    the larger it is. The size is read before the costly check (with it skipped), and
    keys are kept per PEM (a few), as every step of the sidecar asks about the same ones.
    """
    try:
        key = serialization.load_pem_private_key(
            pem, password=None, unsafe_skip_rsa_key_validation=True
        )
        if isinstance(key, ec.EllipticCurvePrivateKey):
            return key if key.curve.name in CURVES else None
        if not isinstance(key, rsa.RSAPrivateKey) or not 2048 <= key.key_size <= MAX_RSA_BITS:
            return None
        return serialization.load_pem_private_key(pem, password=None)  # now with its checks
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return None


def _why_new(bundle: list[bytes], signing_key: bytes | None) -> str:
    """Why a CA is made although the bundle still holds some (nothing when it holds none)."""
    if not bundle:
        return ""
    if signing_key is None:
        return ": there was no CA key"
    return ": the CA key belongs to no certificate of the bundle"


def _retired(
    bundle: list[bytes],
    signing: bytes,
    next_key: bytes | None,
    policy: Policy,
    now: dt.datetime,
    changes: list[str],
) -> list[bytes]:
    """``bundle`` without the CAs no leaf in use can be signed by, the signing CA first.

    Why only after the overlap and a leaf's lifetime: until then a serving certificate
    signed by an older CA may still be in use somewhere.
    """
    retire_at = (
        _cert(signing).not_valid_before_utc
        + CLOCK_SKEW
        + policy.overlap
        + dt.timedelta(days=policy.leaf_days)
    )
    keep = {signing, _owner(bundle, next_key)}
    if now >= retire_at and any(pem not in keep for pem in bundle):
        bundle = [pem for pem in bundle if pem in keep]
        changes.append("retired a CA no leaf in use was signed by")
    return [signing, *[pem for pem in bundle if pem != signing]]


def _serving(
    leaf: Issued | None, signing_ca: Issued, policy: Policy, now: dt.datetime, changes: list[str]
) -> Issued | None:
    """The serving certificate: ``leaf``, or a new one from ``signing_ca`` when it has a
    problem (which ``changes`` then names)."""
    reason = _leaf_problem(leaf, signing_ca.cert, policy, now)
    if not reason:
        return leaf
    changes.append(f"issued a serving certificate ({reason})")
    return issue_leaf(
        signing_ca,
        hosts=policy.hosts,
        days=policy.leaf_days,
        now=now,
        common_name=policy.common_name,
    )


def bundle_pem(material: Material) -> bytes:
    """The bundle as one PEM file: what ``ca.crt`` and the caBundle hold."""
    return b"".join(material.bundle)


def staged_ca(material: Material) -> bytes | None:
    """The staged CA's certificate, when one is staged."""
    return _owner(list(material.bundle), material.next_key)


def expiries(material: Material) -> dict[str, dt.datetime]:
    """When the signing CA and the leaf expire (for logs)."""
    found: dict[str, dt.datetime] = {}
    signing = _owner(list(material.bundle), material.signing_key)
    if signing is not None:
        found["CA"] = _cert(signing).not_valid_after_utc
    if material.leaf is not None:
        found["leaf"] = _cert(material.leaf.cert).not_valid_after_utc
    return found


def _leaf_problem(leaf: Issued | None, signing: bytes, policy: Policy, now: dt.datetime) -> str:
    if leaf is None:
        return "there was none"
    cert = _parsed(leaf.cert)
    if cert is None:
        return "the old one did not parse"
    key = usable_key(leaf.key)
    if key is None:
        return "its key " + _KEY_RULE.removeprefix("it ")
    if _spki(cert.public_key()) != _spki(key.public_key()):
        return "the key did not match"
    if not _signed_by(cert, _cert(signing)):
        return "the signing CA changed"
    if sorted(_names(cert)) != sorted(policy.hosts):
        return "the Service's names changed"
    if _expires_within(leaf.cert, now, policy.leaf_renew_days):
        return f"it expires within {policy.leaf_renew_days} days"
    return ""


def _names(cert: x509.Certificate) -> list[str]:
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [str(value) for value in sans.get_values_for_type(x509.DNSName)] + [
        str(value) for value in sans.get_values_for_type(x509.IPAddress)
    ]


def _expires_within(pem: bytes, now: dt.datetime, days: int) -> bool:
    return _cert(pem).not_valid_after_utc - now <= dt.timedelta(days=days)


def _owner(bundle: Sequence[bytes], key_pem: bytes | None) -> bytes | None:
    """The certificate in ``bundle`` whose public key is ``key_pem``'s."""
    key = None if key_pem is None else usable_key(key_pem)
    if key is None:
        return None
    wanted = _spki(key.public_key())
    return next((pem for pem in bundle if _spki(_cert(pem).public_key()) == wanted), None)


def _signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
        return False
    return True


def _unique(bundle: Sequence[bytes]) -> list[bytes]:
    seen: set[bytes] = set()
    out: list[bytes] = []
    for pem in bundle:
        fingerprint = _cert(pem).fingerprint(hashes.SHA256())
        if fingerprint not in seen:
            seen.add(fingerprint)
            out.append(pem)
    return out


def _cert(pem: bytes) -> x509.Certificate:
    """The certificate of a PEM block :func:`_usable` kept (or this module made)."""
    return x509.load_pem_x509_certificate(pem)


def _parsed(pem: bytes) -> x509.Certificate | None:
    try:
        return decoded(x509.load_pem_x509_certificate(pem))
    except (ValueError, UnsupportedAlgorithm, x509.InvalidVersion):
        return None


def _spki(key: PublicKeyTypes) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
