"""Certificate files the way tests need them: PEM bytes, an expired pair, a Secret volume.

Why here: the CLI, the certificate watch, the TLS end-to-end tests and the image test all
need the same few broken or rotating layouts, and :mod:`webhooks.certs` only makes good ones.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.x509.oid import ExtensionOID, NameOID

from webhooks.certs import pki

FILES = (pki.CA_FILE, pki.CERT_FILE, pki.KEY_FILE)


def pem(cert: x509.Certificate) -> bytes:
    """``cert`` as PEM."""
    return cert.public_bytes(serialization.Encoding.PEM)


def pem_key(key: PrivateKeyTypes) -> bytes:
    """``key`` as unencrypted PKCS#8 PEM, the form ``tls.key`` has."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def self_signed(
    common_name: str,
    serial: int,
    valid: tuple[dt.timedelta, dt.timedelta],
    extension: x509.ExtensionType | None = None,
    *,
    key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | None = None,
    now: dt.datetime | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey]:
    """A self-signed certificate valid from ``now + valid[0]`` to ``now + valid[1]``, with
    ``extension`` (critical) if given, and its key (``key``, else a new P-256 one).

    Why built here and not by :func:`webhooks.certs.pki.generate`: the odd and broken ones tests
    need are what ``generate`` refuses to make.
    """
    key = key if key is not None else ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = now if now is not None else dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(now + valid[0])
        .not_valid_after(now + valid[1])
    )
    if extension is not None:
        builder = builder.add_extension(extension, critical=True)
    # Ed25519 signs without a separate digest.
    digest = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return builder.sign(key, digest), key


def write_expired_pair(directory: Path) -> None:
    """Write a self-signed ``tls.crt`` that expired an hour ago, and its ``tls.key``.

    Why self-signed and no ``ca.crt``: expiry is the only thing wrong with it, and
    :func:`webhooks.certs.pki.generate` refuses to make a certificate that is already invalid.
    """
    cert, key = self_signed("old", 7, (-dt.timedelta(days=10), -dt.timedelta(hours=1)))
    directory.mkdir(parents=True)
    (directory / pki.CERT_FILE).write_bytes(pem(cert))
    (directory / pki.KEY_FILE).write_bytes(pem_key(key))


def ca_with_a_broken_extension() -> bytes:
    """A CA certificate whose basic constraints are a NULL: it loads, and fails when read.

    Why: cryptography decodes a certificate's fields when first read, so code that only
    loads certificates misses this one; every reader must decode what it will use.
    """
    broken = x509.UnrecognizedExtension(ExtensionOID.BASIC_CONSTRAINTS, b"\x05\x00")
    cert, _ = self_signed("broken CA", 13, (-dt.timedelta(days=1), dt.timedelta(days=3650)), broken)
    return pem(cert)


class SecretVolume:
    """A directory laid out like a Kubernetes Secret volume, updated atomically.

    The kubelet writes new files into a fresh ``..<timestamp>`` directory, points ``..data``
    at it with a rename of a symlink and removes the old directory; the file names are
    symlinks through ``..data``.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.generation = 0
        root.mkdir()

    def publish(self, source: Path) -> None:
        """Make the files in ``source`` the volume's content in one atomic step."""
        self.generation += 1
        stamp = f"..2026_01_01_00_00_{self.generation:02d}.{os.getpid()}"
        fresh = self.root / stamp
        fresh.mkdir()
        for name in FILES:
            shutil.copy(source / name, fresh / name)
        os.chmod(fresh / pki.KEY_FILE, 0o600)
        data = self.root / "..data"
        old = os.readlink(data) if data.is_symlink() else None
        tmp = self.root / "..data_tmp"
        os.symlink(stamp, tmp)
        os.rename(tmp, data)  # atomic: readers see the old or the new directory, never neither
        for name in FILES:
            link = self.root / name
            if not link.is_symlink():
                os.symlink(f"..data/{name}", link)
        if old is not None:
            shutil.rmtree(self.root / old)
