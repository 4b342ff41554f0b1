"""Development certificates: the chain verifies, files land safely, inspection tells the truth."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import shutil
import socket
import ssl
import stat
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests import specialfiles
from webhooks.certs import pki
from webhooks.certs.pki import CertError, CertPaths

TIMEOUT = 10.0
#: OpenSSL's verify result for a certificate that does not name the host (x509_vfy.h).
X509_V_ERR_HOSTNAME_MISMATCH = 62

E = TypeVar("E", bound=x509.ExtensionType)


def _load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _ext(cert: x509.Certificate, kind: type[E]) -> x509.Extension[E]:
    return cert.extensions.get_extension_for_class(kind)


@pytest.fixture
def chain(tmp_path: Path) -> CertPaths:
    return pki.generate(tmp_path / "out", hosts=["localhost", "127.0.0.1"])


# --------------------------------------------------------------------------- the chain


@pytest.mark.parametrize(
    "key_type",
    ["ec", "rsa"],
    ids=["an ECDSA chain verifies", "an RSA chain verifies"],
)
def test_leaf_is_directly_issued_by_the_ca(tmp_path: Path, key_type: Literal["ec", "rsa"]) -> None:
    paths = pki.generate(tmp_path, hosts=["localhost"], key_type=key_type)
    ca, leaf = _load(paths.ca), _load(paths.cert)

    leaf.verify_directly_issued_by(ca)
    ca.verify_directly_issued_by(ca)  # self-signed


@pytest.mark.parametrize(
    "extra_args",
    [[], ["-x509_strict"]],
    ids=["openssl verify accepts the chain", "openssl verify -x509_strict accepts the chain"],
)
def test_openssl_verifies_the_chain(chain: CertPaths, extra_args: list[str]) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    result = subprocess.run(
        [openssl, "verify", *extra_args, "-CAfile", str(chain.ca), str(chain.cert)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr + result.stdout


def test_ca_has_the_extensions_of_a_signing_only_ca(chain: CertPaths) -> None:
    ca = _load(chain.ca)

    constraints = _ext(ca, x509.BasicConstraints)
    assert constraints.critical
    assert constraints.value.ca
    usage = _ext(ca, x509.KeyUsage).value
    assert usage.key_cert_sign
    assert usage.crl_sign
    assert not usage.digital_signature
    ski = _ext(ca, x509.SubjectKeyIdentifier).value
    assert ski.digest == x509.SubjectKeyIdentifier.from_public_key(ca.public_key()).digest


@pytest.mark.parametrize(
    ("key_type", "key_encipherment"),
    [("ec", False), ("rsa", True)],
    ids=[
        "an ECDSA serving cert signs but does not encipher keys",
        "an RSA serving cert also allows key encipherment",
    ],
)
def test_leaf_has_the_extensions_of_a_server_certificate(
    tmp_path: Path, key_type: Literal["ec", "rsa"], key_encipherment: bool
) -> None:
    paths = pki.generate(tmp_path, hosts=["localhost"], key_type=key_type)
    ca, leaf = _load(paths.ca), _load(paths.cert)

    assert _ext(leaf, x509.BasicConstraints).value.ca is False
    usage = _ext(leaf, x509.KeyUsage).value
    assert usage.digital_signature
    assert usage.key_encipherment is key_encipherment
    assert not usage.key_cert_sign
    assert list(_ext(leaf, x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.SERVER_AUTH]
    aki = _ext(leaf, x509.AuthorityKeyIdentifier).value
    assert aki.key_identifier == _ext(ca, x509.SubjectKeyIdentifier).value.digest


@pytest.mark.parametrize(
    ("key_type", "expected"),
    [("ec", "ECDSA P-256"), ("rsa", "RSA 2048")],
    ids=["the default key type is ECDSA P-256", "key_type rsa gives RSA 2048"],
)
def test_key_types(tmp_path: Path, key_type: Literal["ec", "rsa"], expected: str) -> None:
    paths = pki.generate(tmp_path, hosts=["localhost"], key_type=key_type)

    assert [info.key_type for info in pki.inspect(paths.ca)] == [expected]
    assert [info.key_type for info in pki.inspect(paths.cert)] == [expected]


def test_default_key_type_is_ec(chain: CertPaths) -> None:
    assert pki.inspect(chain.cert)[0].key_type == "ECDSA P-256"


def test_validity_starts_in_the_past_and_leaf_never_outlives_ca(tmp_path: Path) -> None:
    before = dt.datetime.now(dt.UTC)
    paths = pki.generate(tmp_path, hosts=["localhost"], ca_days=10, days=365)
    ca, leaf = _load(paths.ca), _load(paths.cert)

    for cert in (ca, leaf):
        assert cert.not_valid_before_utc <= before - dt.timedelta(minutes=4)
    assert leaf.not_valid_after_utc <= ca.not_valid_after_utc
    assert ca.not_valid_after_utc - before < dt.timedelta(days=10, minutes=1)


# --------------------------------------------------------------------------- names


def test_service_hosts() -> None:
    assert pki.service_hosts("placement-webhooks", "kube-system") == [
        "placement-webhooks",
        "placement-webhooks.kube-system",
        "placement-webhooks.kube-system.svc",
        "placement-webhooks.kube-system.svc.cluster.local",
    ]


def test_service_hosts_become_dns_sans(tmp_path: Path) -> None:
    hosts = pki.service_hosts("hooks", "ns")
    paths = pki.generate(tmp_path, hosts=hosts)

    san = _ext(_load(paths.cert), x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == hosts
    assert san.get_values_for_type(x509.IPAddress) == []
    assert pki.inspect(paths.cert)[0].sans == tuple(hosts)


@pytest.mark.parametrize(
    ("hosts", "dns", "ips"),
    [
        (["localhost", "127.0.0.1"], ["localhost"], ["127.0.0.1"]),
        (["::1", "example.test", "10.0.0.7"], ["example.test"], ["::1", "10.0.0.7"]),
        (["*.svc.example", "a.b"], ["*.svc.example", "a.b"], []),
        (["localhost", "localhost", " 127.0.0.1 "], ["localhost"], ["127.0.0.1"]),
    ],
    ids=[
        "an IPv4 literal becomes an IPAddress SAN and a name a DNSName SAN",
        "IPv6 literals are IP SANs too",
        "wildcard names stay DNS names",
        "duplicates and surrounding spaces are dropped",
    ],
)
def test_hosts_split_into_dns_and_ip_sans(
    tmp_path: Path, hosts: list[str], dns: list[str], ips: list[str]
) -> None:
    paths = pki.generate(tmp_path, hosts=hosts)

    san = _ext(_load(paths.cert), x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == dns
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address(i) for i in ips]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"hosts": []}, ValueError),
        ({"hosts": ["ok", "  "]}, ValueError),
        ({"hosts": "localhost"}, TypeError),
        ({"hosts": ["localhost"], "days": 0}, ValueError),
        ({"hosts": ["localhost"], "key_type": "dsa"}, ValueError),
    ],
    ids=[
        "no hosts is refused",
        "a blank host is refused",
        "a bare string is refused rather than split into letters",
        "zero-day validity is refused",
        "an unknown key type is refused",
    ],
)
def test_generate_rejects_bad_arguments(
    tmp_path: Path, kwargs: dict[str, object], error: type[Exception]
) -> None:
    with pytest.raises(error):
        pki.generate(tmp_path, **kwargs)  # type: ignore[arg-type]
    assert not tmp_path.joinpath("tls.key").exists()


# --------------------------------------------------------------------------- files


def test_writes_exactly_three_files_and_no_ca_key(chain: CertPaths) -> None:
    assert sorted(p.name for p in chain.ca.parent.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    assert chain == CertPaths(
        ca=chain.ca.parent / "ca.crt",
        cert=chain.ca.parent / "tls.crt",
        key=chain.ca.parent / "tls.key",
    )
    assert len(pki.inspect(chain.cert)) == 1  # leaf only, no bundled CA
    assert b"BEGIN PRIVATE KEY" in chain.key.read_bytes()  # PKCS#8, unencrypted


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_key_file_is_private_even_with_a_permissive_umask(tmp_path: Path) -> None:
    stale = tmp_path / "tls.key"
    stale.write_bytes(b"old")
    stale.chmod(0o644)
    old_umask = os.umask(0)
    try:
        paths = pki.generate(tmp_path, hosts=["localhost"])
    finally:
        os.umask(old_umask)

    assert stat.S_IMODE(paths.key.stat().st_mode) == 0o600
    assert stat.S_IMODE(paths.cert.stat().st_mode) == 0o644


def test_creates_missing_parent_directories(tmp_path: Path) -> None:
    paths = pki.generate(tmp_path / "a" / "b", hosts=["localhost"])

    assert paths.key.is_file()


def test_ensure_dev_certs_reuses_an_existing_chain(tmp_path: Path) -> None:
    first = pki.ensure_dev_certs(tmp_path)
    before = {p: p.read_bytes() for p in (first.ca, first.cert, first.key)}

    second = pki.ensure_dev_certs(tmp_path)

    assert second == first
    assert {p: p.read_bytes() for p in (second.ca, second.cert, second.key)} == before


@pytest.mark.parametrize(
    "missing",
    ["ca.crt", "tls.crt", "tls.key"],
    ids=[
        "a missing ca.crt regenerates the whole chain",
        "a missing tls.crt regenerates the whole chain",
        "a missing tls.key regenerates the whole chain",
    ],
)
def test_ensure_dev_certs_regenerates_when_a_file_is_missing(tmp_path: Path, missing: str) -> None:
    first = pki.ensure_dev_certs(tmp_path)
    before = {p.name: p.read_bytes() for p in (first.ca, first.cert, first.key)}
    (tmp_path / missing).unlink()

    second = pki.ensure_dev_certs(tmp_path)

    after = {p.name: p.read_bytes() for p in (second.ca, second.cert, second.key)}
    assert all(after[name] != before[name] for name in before)
    assert pki.load_pair(second.cert, second.key).matches_key
    _load(second.cert).verify_directly_issued_by(_load(second.ca))
    assert pki.inspect(second.cert)[0].sans == ("localhost", "127.0.0.1")


# --------------------------------------------------------------------------- load_pair


def test_load_pair_matches_its_own_key(chain: CertPaths) -> None:
    pair = pki.load_pair(chain.cert, chain.key)

    assert pair.matches_key
    assert pair.certificate == _load(chain.cert)
    assert pair.not_after == pair.certificate.not_valid_after_utc
    assert pair.not_after.tzinfo is not None


@pytest.mark.parametrize(
    "key_type",
    ["ec", "rsa"],
    ids=["a foreign ECDSA key is detected", "a foreign RSA key is detected"],
)
def test_load_pair_detects_a_mismatched_key(tmp_path: Path, key_type: Literal["ec", "rsa"]) -> None:
    one = pki.generate(tmp_path / "one", hosts=["localhost"], key_type=key_type)
    two = pki.generate(tmp_path / "two", hosts=["localhost"], key_type=key_type)

    assert not pki.load_pair(one.cert, two.key).matches_key
    assert not pki.load_pair(two.cert, one.key).matches_key


def test_load_pair_detects_a_key_of_another_type(tmp_path: Path) -> None:
    ec_chain = pki.generate(tmp_path / "ec", hosts=["localhost"])
    rsa_chain = pki.generate(tmp_path / "rsa", hosts=["localhost"], key_type="rsa")

    assert not pki.load_pair(ec_chain.cert, rsa_chain.key).matches_key


def _garbage(path: Path) -> Path:
    path.write_bytes(b"-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    return path


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("missing cert", "No such file or directory"),
        ("garbage cert", "no valid PEM certificate"),
        ("missing key", "No such file or directory"),
        ("garbage key", "no valid PEM private key"),
        ("key given as cert", "no valid PEM certificate"),
        ("cert given as key", "no valid PEM private key"),
    ],
    ids=[
        "a missing certificate file is named",
        "an unparsable certificate file is named",
        "a missing key file is named",
        "an unparsable key file is named",
        "a key passed as the certificate is named",
        "a certificate passed as the key is named",
    ],
)
def test_load_pair_raises_cert_error_naming_the_file(
    chain: CertPaths, tmp_path: Path, case: str, match: str
) -> None:
    cert, key, bad = {
        "missing cert": (tmp_path / "nope.crt", chain.key, tmp_path / "nope.crt"),
        "garbage cert": (_garbage(tmp_path / "g.crt"), chain.key, tmp_path / "g.crt"),
        "missing key": (chain.cert, tmp_path / "nope.key", tmp_path / "nope.key"),
        "garbage key": (chain.cert, _garbage(tmp_path / "g.key"), tmp_path / "g.key"),
        "key given as cert": (chain.key, chain.key, chain.key),
        "cert given as key": (chain.cert, chain.cert, chain.cert),
    }[case]

    with pytest.raises(CertError, match=match) as caught:
        pki.load_pair(cert, key)

    message = str(caught.value)
    assert str(bad) in message
    assert "\n" not in message
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    "name",
    ["missing.pem", "garbage.pem", "empty.pem"],
    ids=[
        "inspect on a missing file names it",
        "inspect on garbage names it",
        "inspect on an empty file names it",
    ],
)
def test_inspect_raises_cert_error_naming_the_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    if name == "garbage.pem":
        _garbage(path)
    elif name == "empty.pem":
        path.write_bytes(b"")

    with pytest.raises(CertError) as caught:
        pki.inspect(path)

    assert str(path) in str(caught.value)


# --------------------------------------------------------------------------- inspect


def test_inspect_ca_and_leaf(chain: CertPaths) -> None:
    [ca] = pki.inspect(chain.ca)
    [leaf] = pki.inspect(chain.cert)

    assert ca.is_ca
    assert not leaf.is_ca
    assert ca.subject == ca.issuer == "CN=placement-webhooks CA"
    assert leaf.subject == "CN=placement-webhooks"
    assert leaf.issuer == ca.subject
    assert leaf.sans == ("localhost", "127.0.0.1")
    assert ca.sans == ()
    assert leaf.serial == _load(chain.cert).serial_number
    assert len(leaf.fingerprint_sha256) == 64
    int(leaf.fingerprint_sha256, 16)
    assert leaf.not_before < leaf.not_after


def test_inspect_reads_every_certificate_of_a_bundle(chain: CertPaths, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(chain.cert.read_bytes() + chain.ca.read_bytes())

    assert [info.is_ca for info in pki.inspect(bundle)] == [False, True]


def test_common_name_is_used(tmp_path: Path) -> None:
    paths = pki.generate(tmp_path, hosts=["localhost"], common_name="hooks")

    assert pki.inspect(paths.cert)[0].subject == "CN=hooks"
    assert pki.inspect(paths.ca)[0].subject == "CN=hooks CA"


# --------------------------------------------------------------------------- expiry


def test_seconds_to_expiry_is_positive_for_a_fresh_certificate(chain: CertPaths) -> None:
    pair = pki.load_pair(chain.cert, chain.key)

    remaining = pki.seconds_to_expiry(pair.not_after)

    assert 364 * 86400 < remaining <= 365 * 86400


NOW = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("not_after", "expected"),
    [
        (NOW + dt.timedelta(hours=1), 3600.0),
        (NOW - dt.timedelta(minutes=1), -60.0),
        (dt.datetime(2030, 1, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=2))), 0.0),
    ],
    ids=[
        "an hour ahead is 3600 seconds",
        "an expired certificate gives a negative number",
        "time zones are taken into account",
    ],
)
def test_seconds_to_expiry_with_explicit_now(not_after: dt.datetime, expected: float) -> None:
    assert pki.seconds_to_expiry(not_after, NOW) == expected


def test_seconds_to_expiry_rejects_naive_datetimes() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        pki.seconds_to_expiry(dt.datetime(2030, 1, 1), NOW)


# --------------------------------------------------------------------------- format


def test_format_inspect_has_one_block_per_certificate(chain: CertPaths, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(chain.cert.read_bytes() + chain.ca.read_bytes())
    infos = pki.inspect(bundle)
    now = infos[0].not_before + dt.timedelta(minutes=5, hours=1)

    text = pki.format_inspect(infos, now=now)

    leaf_block, ca_block = text.split("\n\n")
    assert leaf_block.splitlines() == [
        "Certificate 1 of 2",
        "  Subject:    CN=placement-webhooks",
        "  Issuer:     CN=placement-webhooks CA",
        "  SANs:       localhost, 127.0.0.1",
        f"  Not before: {infos[0].not_before.isoformat()}",
        f"  Not after:  {infos[0].not_after.isoformat()}",
        "  Days left:  364",
        "  CA:         no",
        "  Key type:   ECDSA P-256",
        f"  SHA-256:    {infos[0].fingerprint_sha256}",
    ]
    assert "  CA:         yes" in ca_block.splitlines()
    assert "  SANs:       (none)" in ca_block.splitlines()


def test_format_inspect_reports_expired_certificates(chain: CertPaths) -> None:
    infos = pki.inspect(chain.cert)
    later = infos[0].not_after + dt.timedelta(days=3, hours=1)

    assert "  Days left:  expired (3 days ago)" in pki.format_inspect(infos, now=later)


def test_format_inspect_of_nothing_is_empty() -> None:
    assert pki.format_inspect([]) == ""


# --------------------------------------------------------------------------- real TLS


def _serve_once(
    listener: socket.socket, context: ssl.SSLContext, errors: list[BaseException]
) -> None:
    try:
        conn, _ = listener.accept()
        conn.settimeout(TIMEOUT)
        with context.wrap_socket(conn, server_side=True) as tls:
            data = tls.recv(4)
            tls.sendall(data)
    except (OSError, ssl.SSLError) as exc:  # the client may abort a refused handshake
        errors.append(exc)


@pytest.mark.parametrize(
    ("server_hostname", "accepted"),
    [("localhost", True), ("127.0.0.1", True), ("elsewhere.example", False)],
    ids=[
        "a client trusting only ca.crt accepts the server as localhost",
        "the IP SAN lets a client dial 127.0.0.1",
        "a name outside the SANs is rejected",
    ],
)
def test_real_tls_handshake(chain: CertPaths, server_hostname: str, accepted: bool) -> None:
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(chain.cert, chain.key)
    client_ctx = ssl.create_default_context(cafile=str(chain.ca))
    client_ctx.verify_flags |= ssl.VERIFY_X509_STRICT  # Python 3.13's default
    assert client_ctx.check_hostname
    assert client_ctx.verify_mode == ssl.CERT_REQUIRED

    errors: list[BaseException] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(TIMEOUT)
        port = listener.getsockname()[1]
        thread = threading.Thread(target=_serve_once, args=(listener, server_ctx, errors))
        thread.start()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as raw:
                if accepted:
                    with client_ctx.wrap_socket(raw, server_hostname=server_hostname) as tls:
                        tls.sendall(b"ping")
                        assert tls.recv(4) == b"ping"
                        assert tls.version() in {"TLSv1.2", "TLSv1.3"}
                else:
                    with pytest.raises(ssl.SSLCertVerificationError) as refused:
                        client_ctx.wrap_socket(raw, server_hostname=server_hostname)
                    # OpenSSL's code for it, not its words: X509_V_ERR_HOSTNAME_MISMATCH.
                    assert refused.value.verify_code == X509_V_ERR_HOSTNAME_MISMATCH
        finally:
            thread.join(TIMEOUT)
    assert not thread.is_alive()
    if accepted:
        assert errors == []


# --------------------------------------------------------------------------- bounded reading


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(
            specialfiles.fifo,
            "a FIFO (named pipe), not a regular file",
            id="a FIFO named tls.crt is refused, not read",
        ),
        pytest.param(
            specialfiles.link_to("/dev/zero"),
            "a character device, not a regular file",
            id="a symlink to /dev/zero is refused, not read",
        ),
        pytest.param(
            specialfiles.directory, "a directory, not a regular file", id="a directory is refused"
        ),
        pytest.param(
            specialfiles.sparse(pki.MAX_PEM_BYTES + 1),
            f"over the limit of {pki.MAX_PEM_BYTES:,} bytes for a certificate file",
            id="a file over 1 MiB is refused, naming the limit",
        ),
    ],
)
def test_certificate_files_are_read_only_when_regular_and_bounded(
    tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    path = make(tmp_path / "tls.crt")
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            pki.inspect(path)
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(TIMEOUT)  # a guard against hanging, not a timing assertion
    if reader.is_alive() and make is specialfiles.fifo:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # release the blocked reader
    [error] = outcome
    assert isinstance(error, CertError) and message in str(error) and str(path) in str(error)


class _Counting(bytes):
    """Bytes that count how many bytes each search may look at."""

    scanned = 0

    def find(self, sub: object, start: object = None, end: object = None) -> int:  # type: ignore[override]
        first, last = start or 0, len(self) if end is None else end
        found = super().find(sub, first, last)  # type: ignore[arg-type]
        _Counting.scanned += (last if found < 0 else found + len(sub)) - first  # type: ignore[arg-type, operator]
        return found

    def rfind(self, sub: object, start: object = None, end: object = None) -> int:  # type: ignore[override]
        first, last = start or 0, len(self) if end is None else end
        _Counting.scanned += last - first  # type: ignore[operator]
        return super().rfind(sub, first, last)  # type: ignore[arg-type]


OPENER = b"-----BEGIN CERTIFICATE-----\n"
CLOSER = b"-----END CERTIFICATE-----\n"


@pytest.mark.parametrize(
    ("data", "blocks"),
    [
        pytest.param(OPENER * 5000, 0, id="openers without an end are scanned once"),
        pytest.param(OPENER * 5000 + CLOSER, 1, id="openers before one end make one block"),
        pytest.param((OPENER + b"AAAA\n" + CLOSER) * 5000, 5000, id="many blocks are one pass"),
        pytest.param((OPENER + CLOSER + b"x" * 50) * 2000, 2000, id="text between is one pass"),
    ],
)
def test_pem_blocks_are_found_in_one_linear_pass(data: bytes, blocks: int) -> None:
    _Counting.scanned = 0
    spans = list(pki.pem_spans(_Counting(data)))
    assert len(spans) == blocks
    assert _Counting.scanned <= 3 * len(data)  # quadratic would be thousands of times that


def test_a_certificate_that_loads_but_does_not_decode_is_a_cert_error(tmp_path: Path) -> None:
    """cryptography decodes fields when first read: the extensions must fail here, as data."""
    from tests.certfiles import ca_with_a_broken_extension

    path = tmp_path / "ca.crt"
    path.write_bytes(ca_with_a_broken_extension())
    with pytest.raises(CertError, match="no valid PEM certificate"):
        pki.inspect(path)
