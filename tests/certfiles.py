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
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.x509.oid import ExtensionOID, NameOID

from webhooks import certs

FILES = (certs.CA_FILE, certs.CERT_FILE, certs.KEY_FILE)


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


def write_expired_pair(directory: Path) -> None:
    """Write a self-signed ``tls.crt`` that expired an hour ago, and its ``tls.key``.

    Why self-signed and no ``ca.crt``: expiry is the only thing wrong with it, and
    :func:`webhooks.certs.generate` refuses to make a certificate that is already invalid.
    """
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "old")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(7)
        .not_valid_before(now - dt.timedelta(days=10))
        .not_valid_after(now - dt.timedelta(hours=1))
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True)
    (directory / certs.CERT_FILE).write_bytes(pem(cert))
    (directory / certs.KEY_FILE).write_bytes(pem_key(key))


def ca_with_a_broken_extension() -> bytes:
    """A CA certificate whose basic constraints are a NULL: it loads, and fails when read.

    Why: cryptography decodes a certificate's fields when first read, so code that only
    loads certificates misses this one; every reader must decode what it will use.
    """
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "broken CA")])
    broken = x509.UnrecognizedExtension(ExtensionOID.BASIC_CONSTRAINTS, b"\x05\x00")
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(13)
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(broken, critical=True)
        .sign(key, hashes.SHA256())
    )
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
        os.chmod(fresh / certs.KEY_FILE, 0o600)
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
