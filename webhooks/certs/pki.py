"""Development TLS material: a throwaway CA, a serving certificate signed by it, and inspection.

The API server only calls admission webhooks over TLS, and it verifies the serving certificate
against the ``caBundle`` of the webhook configuration. ``serve`` therefore needs *some* chain
even on a laptop: :func:`ensure_dev_certs` creates one under ``certs/`` when none exists, and
:func:`generate` is the same routine with every knob exposed (used by ``certs generate`` to
make a chain for a cluster Service). :func:`inspect` and :func:`load_pair` answer the usual
operational questions — which names does this certificate cover, when does it expire, and
does this key belong to it — without shelling out to ``openssl``.

Only ``ca.crt``, ``tls.crt`` and ``tls.key`` are ever written. The CA *private* key is used to
sign the serving certificate and then dropped: a development CA key lying on disk is a
liability (anyone who reads it can mint certificates the cluster trusts for as long as the
``caBundle`` is installed), and regenerating all three files is cheap, so there is nothing to
gain by keeping it.
"""

from __future__ import annotations

import datetime as dt
import errno
import ipaddress
import os
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificatePublicKeyTypes,
    PrivateKeyTypes,
    PublicKeyTypes,
)
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhooks.manifests.files import Unreadable, read_file

__all__ = [
    "CA_FILE",
    "CERT_FILE",
    "DEV_HOSTS",
    "KEY_FILE",
    "MAX_PEM_BYTES",
    "CertError",
    "CertInfo",
    "CertPaths",
    "Issued",
    "LoadedPair",
    "decoded",
    "ensure_dev_certs",
    "format_inspect",
    "generate",
    "inspect",
    "is_ca",
    "issue_leaf",
    "load_pair",
    "new_ca",
    "pair_from_pem",
    "pem_spans",
    "read_pem",
    "seconds_to_expiry",
    "service_hosts",
    "write_files",
]

CA_FILE: Final = "ca.crt"
CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"

#: Names the development certificate covers: what a local client dials.
DEV_HOSTS: Final[tuple[str, ...]] = ("localhost", "127.0.0.1")

#: The most bytes read from one PEM file. Why 1 MiB: Kubernetes refuses a Secret whose data
#: add up to more (``MaxSecretSize``, pkg/apis/core/types.go), so no ``ca.crt``, ``tls.crt``
#: or ``tls.key`` mounted from one can be larger; a larger file is not one we were given, and
#: reading it whole would cost memory and time in proportion to whatever it holds.
MAX_PEM_BYTES: Final = 1024 * 1024

#: How far back ``notBefore`` is set, so a peer whose clock runs slightly behind ours
#: does not reject a certificate generated a moment ago as "not yet valid".
CLOCK_SKEW: Final = dt.timedelta(minutes=5)

_CURVE_NAMES: Final[dict[str, str]] = {
    "secp256r1": "P-256",
    "secp384r1": "P-384",
    "secp521r1": "P-521",
}

_Key = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


class CertError(ValueError):
    """A certificate or key file is missing or cannot be parsed.

    It is a ``ValueError`` so callers that already treat bad configuration as a value
    error keep working, and its message is one line naming the file, so the CLI can print
    it as-is.
    """


@dataclass(frozen=True, slots=True)
class CertPaths:
    """Where :func:`generate` put the CA certificate, serving certificate and serving key.

    Returning paths rather than bytes lets callers hand them straight to gunicorn's
    ``certfile``/``keyfile`` options and to ``caBundle`` tooling.
    """

    ca: Path
    cert: Path
    key: Path


@dataclass(frozen=True, slots=True)
class CertInfo:
    """The operationally interesting facts about one certificate.

    Plain values (strings, datetimes) rather than ``x509`` objects, so the result can be
    printed, compared in tests and serialised without knowing ``cryptography``.
    """

    subject: str
    issuer: str
    sans: tuple[str, ...]
    not_before: dt.datetime
    not_after: dt.datetime
    is_ca: bool
    key_type: str
    serial: int
    fingerprint_sha256: str


@dataclass(frozen=True, slots=True)
class LoadedPair:
    """A parsed serving certificate plus whether the key file belongs to it.

    A mismatch is reported as data rather than raised, so a health check can say exactly
    what is wrong instead of failing on the first TLS handshake.
    """

    certificate: x509.Certificate
    not_after: dt.datetime
    matches_key: bool


# --------------------------------------------------------------------------- generation


def service_hosts(service: str, namespace: str) -> list[str]:
    """Return every DNS name a client may use for a Service inside the cluster.

    The API server dials ``<service>.<namespace>.svc``, but other clients use the short or
    fully-qualified forms, and the certificate must cover whichever name was dialled.
    """
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


@dataclass(frozen=True, slots=True)
class Issued:
    """A certificate and its private key, both PEM (the key unencrypted PKCS#8)."""

    cert: bytes
    key: bytes


def new_ca(
    common_name: str,
    *,
    days: int,
    now: dt.datetime | None = None,
    key_type: Literal["ec", "rsa"] = "ec",
) -> Issued:
    """A self-signed CA certificate (path length 0: it signs serving certificates only).

    Why its own function: ``generate`` makes a throwaway CA and drops its key, while a
    server that manages its own certificates keeps the key (in a Secret) to renew leaves.
    """
    if days <= 0:
        raise ValueError(f"validity must be positive (days={days})")
    current = dt.datetime.now(dt.UTC) if now is None else now
    key = _new_key(key_type)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(current - CLOCK_SKEW)
        .not_valid_after(current + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(ski, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    return Issued(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue_leaf(
    ca: Issued,
    *,
    hosts: Sequence[str],
    days: int,
    now: dt.datetime | None = None,
    common_name: str = "placement-webhooks",
    key_type: Literal["ec", "rsa"] = "ec",
) -> Issued:
    """A serving certificate for ``hosts`` signed by ``ca``, never outliving it.

    ``hosts`` entries that parse as IP addresses become ``IPAddress`` SANs, the rest
    ``DNSName`` SANs; the certificate starts :data:`CLOCK_SKEW` in the past.
    """
    names = _clean_hosts(hosts)
    if days <= 0:
        raise ValueError(f"validity must be positive (days={days})")
    if not common_name:
        raise ValueError("common_name must not be empty")
    current = dt.datetime.now(dt.UTC) if now is None else now
    ca_cert = x509.load_pem_x509_certificate(ca.cert)
    ca_key = serialization.load_pem_private_key(ca.key, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError("the CA key must be an ECDSA or RSA key")
    key = _new_key(key_type)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(current - CLOCK_SKEW)
        .not_valid_after(min(current + dt.timedelta(days=days), ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            _key_usage(key_encipherment=isinstance(key, rsa.RSAPrivateKey)), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(_authority_key_id(ca_cert), critical=False)
        .add_extension(x509.SubjectAlternativeName(_san_entries(names)), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Issued(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _authority_key_id(ca: x509.Certificate) -> x509.AuthorityKeyIdentifier:
    """The leaf's pointer to ``ca``: its subject key identifier, else one made from its key.

    Why the fallback: a CA made elsewhere may lack the extension (RFC 5280 4.2.1.2 only
    asks conforming CAs to include it), and it must still be able to sign.
    """
    try:
        ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        return x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.public_key())  # type: ignore[arg-type]
    return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)


def _key_pem(key: _Key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def generate(
    out_dir: Path,
    *,
    hosts: Sequence[str],
    ca_days: int = 3650,
    days: int = 365,
    key_type: Literal["ec", "rsa"] = "ec",
    common_name: str = "placement-webhooks",
) -> CertPaths:
    """Create a self-signed CA and a serving certificate for ``hosts`` under ``out_dir``.

    One call yields everything a webhook needs (the ``caBundle`` and the server's key pair),
    and the CA key is deliberately not written: a dev CA key on disk is a liability, and
    regenerating all three files is cheap.

    ``hosts`` entries that parse as IP addresses become ``IPAddress`` SANs, the rest
    ``DNSName`` SANs. Both certificates start :data:`CLOCK_SKEW` in the past; the serving
    certificate never outlives its CA. ``ca.crt`` and ``tls.crt`` (the leaf only) are
    written mode 0644 and ``tls.key`` (unencrypted PKCS#8 PEM) mode 0600, each via a
    temporary file in ``out_dir`` and ``os.replace``, so a reader never sees a half-written
    file and the key is never readable by others, not even briefly.
    """
    _clean_hosts(hosts)
    if ca_days <= 0 or days <= 0:
        raise ValueError(f"validity must be positive (ca_days={ca_days}, days={days})")
    if not common_name:
        raise ValueError("common_name must not be empty")
    now = dt.datetime.now(dt.UTC)
    ca = new_ca(f"{common_name} CA", days=ca_days, now=now, key_type=key_type)
    leaf = issue_leaf(
        ca, hosts=hosts, days=days, now=now, common_name=common_name, key_type=key_type
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = CertPaths(ca=out_dir / CA_FILE, cert=out_dir / CERT_FILE, key=out_dir / KEY_FILE)
    write_files(
        [(paths.ca, ca.cert, False), (paths.key, leaf.key, True), (paths.cert, leaf.cert, False)]
    )
    return paths


def ensure_dev_certs(cert_dir: Path) -> CertPaths:
    """Return the development chain in ``cert_dir``, generating it only if a file is missing.

    ``serve`` calls this on every start, so it must be idempotent: an existing chain is
    reused (a client that trusted ``ca.crt`` keeps working), while a partial one is replaced
    as a whole because a lone certificate or key is useless without its partners.
    """
    paths = CertPaths(ca=cert_dir / CA_FILE, cert=cert_dir / CERT_FILE, key=cert_dir / KEY_FILE)
    if all(p.is_file() for p in (paths.ca, paths.cert, paths.key)):
        return paths
    return generate(cert_dir, hosts=DEV_HOSTS)


def _clean_hosts(hosts: Sequence[str]) -> list[str]:
    if isinstance(hosts, str):
        raise TypeError("hosts must be a sequence of names, not a single string")
    names: list[str] = []
    for host in hosts:
        name = host.strip()
        if not name:
            raise ValueError("hosts must not contain empty names")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("at least one host name or IP address is required")
    return names


def _new_key(key_type: str) -> _Key:
    if key_type == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    raise ValueError(f"key_type must be 'ec' or 'rsa', not {key_type!r}")


def _key_usage(*, cert_sign: bool = False, key_encipherment: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _san_entries(names: Iterable[str]) -> list[x509.GeneralName]:
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return entries


def write_files(files: Sequence[tuple[Path, bytes, bool]]) -> None:
    """Write (path, bytes, private) files: staged first, then renamed in quick succession.

    Staging first keeps the window in which the directory holds a mix of old and new files
    as short as possible; a crash before the renames leaves the old set untouched, and so
    does a directory in a file's place (a rename onto it would fail half-way through).
    """
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data, private in files:
            staged.append((_stage(path, data, private=private), path))
        for _, path in staged:
            if path.is_dir():
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)


def _stage(path: Path, data: bytes, *, private: bool) -> Path:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    mode = 0o600 if private else 0o644
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            if private:
                # The umask can only remove bits; this makes the mode exactly 0600.
                os.chmod(tmp, 0o600)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


# --------------------------------------------------------------------------- inspection


def inspect(path: Path) -> list[CertInfo]:
    """Describe every certificate in the PEM file at ``path``, in file order.

    Bundles (``ca.crt`` with several roots, a chain file) are common, and the question
    "what is in this file and when does it expire" should not need ``openssl x509`` per
    block.
    """
    return [_describe(cert) for cert in _read_certs(path)]


def load_pair(cert: Path, key: Path) -> LoadedPair:
    """Parse a serving certificate and key, and report whether the key belongs to it.

    A mismatched pair makes gunicorn fail at start-up with an opaque OpenSSL error, so
    checking it up front lets ``serve`` and ``certs check`` say which files disagree.

    The first certificate in ``cert`` is taken as the leaf. Raises :class:`CertError` when
    either file is missing, not a regular file, larger than :data:`MAX_PEM_BYTES` or
    unparsable (including an encrypted key).
    """
    return pair_from_pem(
        read_pem(cert, "certificate"), read_pem(key, "private key"), str(cert), str(key)
    )


def pair_from_pem(cert_pem: bytes, key_pem: bytes, cert_name: str, key_name: str) -> LoadedPair:
    """:func:`load_pair` on bytes already read; the names are what messages call the files.

    Why apart: a caller that keeps the bytes (to tell one bad content from another) parses
    what it read instead of reading the files a second time.
    """
    leaf = _parse_certs(cert_pem, cert_name)[0]
    private_key = _parse_key(key_pem, key_name)
    return LoadedPair(
        certificate=leaf,
        not_after=leaf.not_valid_after_utc,
        matches_key=_spki(leaf.public_key()) == _spki(private_key.public_key()),
    )


def seconds_to_expiry(not_after: dt.datetime, now: dt.datetime | None = None) -> float:
    """Return how many seconds remain until ``not_after`` (negative once expired).

    Rotation alerts and the ``certs`` CLI both need this number, and computing it in one
    place keeps them agreeing; naive datetimes are rejected because guessing their zone
    could be hours wrong.
    """
    current = dt.datetime.now(dt.UTC) if now is None else now
    for label, value in (("not_after", not_after), ("now", current)):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"{label} must be timezone-aware, got naive {value.isoformat()}")
    return (not_after - current).total_seconds()


def format_inspect(infos: Sequence[CertInfo], *, now: dt.datetime | None = None) -> str:
    """Render :func:`inspect` results as text, one block per certificate.

    Operators read this in a terminal or paste it into a ticket, so it is aligned, uses ISO
    timestamps and states the days left rather than leaving the arithmetic to the reader.
    """
    blocks: list[str] = []
    for index, info in enumerate(infos, start=1):
        rows = [
            ("Subject", info.subject or "(empty)"),
            ("Issuer", info.issuer or "(empty)"),
            ("SANs", ", ".join(info.sans) if info.sans else "(none)"),
            ("Not before", info.not_before.isoformat()),
            ("Not after", info.not_after.isoformat()),
            ("Days left", _days_left(seconds_to_expiry(info.not_after, now))),
            ("CA", "yes" if info.is_ca else "no"),
            ("Key type", info.key_type),
            ("SHA-256", info.fingerprint_sha256),
        ]
        lines = [f"Certificate {index} of {len(infos)}"]
        lines += [f"  {label + ':':<12}{value}" for label, value in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _days_left(seconds: float) -> str:
    if seconds < 0:
        ago = int(-seconds // 86400)
        return f"expired ({ago} days ago)" if ago else "expired (today)"
    return str(int(seconds // 86400))


def read_pem(path: Path, what: str) -> bytes:
    """The bytes of the PEM file at ``path`` (``what`` names it in messages), bounded.

    Why not ``Path.read_bytes``: a FIFO in the file's place blocks a reader forever and a
    symlink to ``/dev/zero`` reads until memory runs out. Only a regular file of at most
    :data:`MAX_PEM_BYTES` is read, by the same bounded reader as manifests and config files
    (:func:`~webhooks.manifests.files.read_file`); anything else raises :class:`CertError`
    naming the file and why.
    """
    try:
        return read_file(path, MAX_PEM_BYTES, f"a {what} file")
    except Unreadable as exc:
        raise CertError(f"{what} file {path}: {exc.reason}") from None


def pem_spans(data: bytes, label: bytes = b"CERTIFICATE") -> Iterator[tuple[int, int]]:
    """Where each ``-----BEGIN <label>-----`` ... ``-----END <label>-----`` block of ``data`` is.

    Why spans found in one forward pass: a caller can stop after as many blocks as it keeps
    and still see what lay between them, and the cost is linear in the bytes whatever they
    hold. (A regular expression with a lazy ``.+?`` between the markers rescans to the end
    from every opener that has no end marker: quadratic, 7 s for 112 KB of openers.) Of two
    openers before an end marker, the later one starts the block.
    """
    begin, end = b"-----BEGIN " + label + b"-----", b"-----END " + label + b"-----"
    position = 0
    while (start := data.find(begin, position)) >= 0:
        stop = data.find(end, start + len(begin))
        if stop < 0:
            return
        inner = data.rfind(begin, start + len(begin), stop)
        yield (start if inner < 0 else inner), stop + len(end)
        position = stop + len(end)


def _read_certs(path: Path) -> list[x509.Certificate]:
    return _parse_certs(read_pem(path, "certificate"), str(path))


def _parse_certs(data: bytes, name: str) -> list[x509.Certificate]:
    try:
        certs = [decoded(cert) for cert in x509.load_pem_x509_certificates(data)]
    except (ValueError, UnsupportedAlgorithm, x509.InvalidVersion):
        raise CertError(f"no valid PEM certificate in {name}") from None
    if not certs:  # pragma: no cover - cryptography raises instead, kept for safety
        raise CertError(f"no valid PEM certificate in {name}")
    return certs


def decoded(cert: x509.Certificate) -> x509.Certificate:
    """``cert``, once every field this project reads has been decoded.

    Why: cryptography decodes a certificate's fields when they are first read, so one that
    loaded may still raise on its extensions or its key (``ValueError``,
    ``UnsupportedAlgorithm``). Reading them here makes "does it parse" one question,
    asked once, instead of an exception wherever a field happens to be read first.
    """
    _ = (cert.subject, cert.issuer, cert.serial_number, cert.not_valid_before_utc)
    _ = (cert.not_valid_after_utc, cert.extensions, cert.public_key())
    _ = cert.signature_hash_algorithm
    return cert


def _parse_key(data: bytes, name: str) -> PrivateKeyTypes:
    try:
        # Only the public half is compared, so RSA's consistency checks (seconds for a
        # large key, growing with its size) would buy nothing here.
        return serialization.load_pem_private_key(
            data, password=None, unsafe_skip_rsa_key_validation=True
        )
    except TypeError:
        raise CertError(
            f"private key in {name} is encrypted; an unencrypted key is required"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise CertError(f"no valid PEM private key in {name}") from None


def _spki(public_key: PublicKeyTypes) -> bytes:
    return public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def describe_pem(data: bytes, name: str) -> list[CertInfo]:
    """What the PEM certificates in ``data`` say, in order; :class:`CertError` naming
    ``name`` when there is none or one does not parse.

    Why from bytes: a caBundle or a served certificate comes from the cluster, not a file.
    """
    return [_describe(cert) for cert in _parse_certs(data, name)]


def _describe(cert: x509.Certificate) -> CertInfo:
    return CertInfo(
        subject=cert.subject.rfc4514_string(),
        issuer=cert.issuer.rfc4514_string(),
        sans=_sans(cert),
        not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc,
        is_ca=is_ca(cert),
        key_type=_key_type(cert.public_key()),
        serial=cert.serial_number,
        fingerprint_sha256=cert.fingerprint(hashes.SHA256()).hex(),
    )


def _sans(cert: x509.Certificate) -> tuple[str, ...]:
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return ()
    out: list[str] = []
    for entry in ext.value:
        if isinstance(entry, x509.DNSName | x509.IPAddress):
            out.append(str(entry.value))
        elif isinstance(entry, x509.UniformResourceIdentifier):
            out.append(f"URI:{entry.value}")
        elif isinstance(entry, x509.RFC822Name):
            out.append(f"email:{entry.value}")
        else:
            out.append(f"{type(entry).__name__}:{entry.value}")
    return tuple(out)


def is_ca(cert: x509.Certificate) -> bool:
    """Whether ``cert`` says it is a CA (basic constraints ``cA``).

    Why it matters: a certificate that is not a CA may not sign others (RFC 5280 4.2.1.9),
    so a chain through it fails verification however its key matches.
    """
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


def _key_type(public_key: CertificatePublicKeyTypes) -> str:
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        curve = public_key.curve.name
        return f"ECDSA {_CURVE_NAMES.get(curve, curve)}"
    if isinstance(public_key, rsa.RSAPublicKey):
        return f"RSA {public_key.key_size}"
    if isinstance(public_key, dsa.DSAPublicKey):
        return f"DSA {public_key.key_size}"
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        return "Ed25519"
    if isinstance(public_key, ed448.Ed448PublicKey):
        return "Ed448"
    return type(public_key).__name__
