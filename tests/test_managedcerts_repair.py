"""What ``certs manage`` does with every field it reads when that field is wrong: the
Secret's values, the webhook configurations' caBundle, the files in the cert directory.

Each row starts from a healthy pod (one step against the fake API server), breaks one thing
and steps again. A repaired row must log one line for the Secret naming what was wrong and
what was done, leave a Secret, files and caBundle that agree, and report nothing on the
step after; a kept row must report a :class:`ManageError` (a line, not a traceback) and
write nothing, so the pod keeps serving its last good material.
"""

from __future__ import annotations

import base64
import datetime as dt
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from tests.certfiles import ca_with_a_broken_extension, pem, pem_key, self_signed
from tests.fakeapi import FakeApiServer, running
from webhooks.certs import pki
from webhooks.certs.managed import (
    ManageError,
    Manager,
    SecretStore,
    describe,
    from_secret,
    split_bundle,
)
from webhooks.certs.rotation import Material, Policy, bundle_pem, plan
from webhooks.install.webhookconfig import WebhookSettings, api_client, configurations

T0 = dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
POLICY = Policy(hosts=tuple(pki.service_hosts("pw", "placement")))
Data = dict[str, Any]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _raw(data: Data, key: str) -> bytes:
    return base64.b64decode(data[key])


def _other_ca() -> pki.Issued:
    return pki.new_ca("other CA", days=3650, now=T0)


def _expired_ca() -> pki.Issued:
    return pki.new_ca("old CA", days=30, now=T0 - dt.timedelta(days=400))


#: A CA's validity around T0, and what makes it one.
_CA_VALID = (-dt.timedelta(days=1), dt.timedelta(days=3650))
_IS_CA = x509.BasicConstraints(ca=True, path_length=0)


def _ca_without_key_id() -> pki.Issued:
    """A CA made elsewhere: no subject key identifier (optional for a self-signed root)."""
    cert, key = self_signed("bare CA", 11, _CA_VALID, _IS_CA, now=T0)
    return pki.Issued(pem(cert), pem_key(key))


def _ed25519_ca() -> pki.Issued:
    key = ed25519.Ed25519PrivateKey.generate()
    cert, _ = self_signed("ed CA", 12, _CA_VALID, _IS_CA, key=key, now=T0)
    return pki.Issued(pem(cert), pem_key(key))


def _encrypted(key_pem: bytes) -> bytes:
    key = serialization.load_pem_private_key(key_pem, password=None)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )


def _key_labelled_certificate(key_pem: bytes) -> bytes:
    """A key's DER between certificate markers: valid PEM, base64 and all, not a certificate."""
    return key_pem.replace(b"PRIVATE KEY", b"CERTIFICATE")


def _truncated_key() -> bytes:
    """A key made now, cut to its markers and one base64 quantum: PEM, not a key."""
    lines = pem_key(rsa.generate_private_key(65537, 1024)).splitlines(keepends=True)
    return lines[0] + b"AAAA\n" + lines[-1]


UNDECODABLE = b"-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n"


def _with(key: str, value: bytes | str | None) -> Callable[[Data], Data]:
    """A corruption: ``key`` set to ``value`` (bytes are base64-encoded; None removes it)."""

    def corrupt(data: Data) -> Data:
        changed = dict(data)
        if value is None:
            changed.pop(key, None)
        else:
            changed[key] = _b64(value) if isinstance(value, bytes) else value
        return changed

    return corrupt


def _from(key: str, make: Callable[[Data], bytes | str]) -> Callable[[Data], Data]:
    """A corruption: ``key`` set to what ``make`` builds from the healthy data."""
    return lambda data: _with(key, make(data))(data)


def _ca_and(extra: Callable[[Data], bytes]) -> Callable[[Data], Data]:
    """ca.crt: the healthy CA first, then ``extra``."""
    return _from("ca.crt", lambda data: _raw(data, "ca.crt") + extra(data))


def _pair(ca: Callable[[], pki.Issued]) -> Callable[[Data], Data]:
    """ca.crt and ca.key replaced by a CA ``ca`` makes."""

    def corrupt(data: Data) -> Data:
        issued = ca()
        return {**data, "ca.crt": _b64(issued.cert), "ca.key": _b64(issued.key)}

    return corrupt


@dataclass(frozen=True)
class Repair:
    """The Secret's line must hold ``wrong`` (what was wrong) and ``done`` (what was done);
    unless ``done`` says a CA was created, the CA first in the broken ``ca.crt`` still signs."""

    corrupt: Callable[[Data], Any]
    wrong: str
    done: str


REPAIRS = [
    pytest.param(
        Repair(_with("ca.crt", None), "", "created a CA"),
        id="ca.crt missing: a new CA",
    ),
    pytest.param(
        Repair(_with("ca.crt", ""), "", "created a CA"),
        id="ca.crt empty: a new CA",
    ),
    pytest.param(
        Repair(_with("ca.crt", "not base64 !"), "ca.crt is not base64", "created a CA"),
        id="ca.crt that is not base64: a new CA",
    ),
    pytest.param(
        Repair(
            _with("ca.crt", b"hello, world\n"), "ca.crt holds no certificate block", "created a CA"
        ),
        id="ca.crt that is not PEM: a new CA",
    ),
    pytest.param(
        Repair(
            _with("ca.crt", UNDECODABLE),
            "certificate 1 of the bundle: it does not parse",
            "created a CA",
        ),
        id="ca.crt whose PEM block does not decode: a new CA (the issue's crash loop)",
    ),
    pytest.param(
        Repair(
            _ca_and(lambda _: UNDECODABLE),
            "certificate 2 of the bundle: it does not parse",
            "dropped",
        ),
        id="an undecodable block after the CA: dropped, the CA kept",
    ),
    pytest.param(
        Repair(
            _from("ca.crt", lambda data: _raw(data, "ca.key")),
            "ca.crt holds no certificate block",
            "created a CA",
        ),
        id="a private key where ca.crt belongs: dropped (never published), a new CA",
    ),
    pytest.param(
        Repair(
            _from("ca.crt", lambda data: _key_labelled_certificate(_raw(data, "ca.key"))),
            "certificate 1 of the bundle: it does not parse",
            "created a CA",
        ),
        id="a key's DER between certificate markers: a new CA",
    ),
    pytest.param(
        Repair(
            _from("ca.crt", lambda _: ca_with_a_broken_extension()),
            "certificate 1 of the bundle: it does not parse",
            "created a CA",
        ),
        id="a certificate that loads but whose extensions do not decode: a new CA",
    ),
    pytest.param(
        Repair(
            _from("ca.crt", lambda _: _expired_ca().cert),
            "dropped expired or repeated certificates",
            "created a CA",
        ),
        id="an expired CA: a new CA",
    ),
    pytest.param(
        Repair(
            _from("ca.crt", lambda data: _raw(data, "tls.crt")),
            "certificate 1 of the bundle: it is not a CA",
            "created a CA",
        ),
        id="a CA that is not a CA (the leaf in its place): a new CA",
    ),
    pytest.param(
        Repair(
            _ca_and(lambda _: _other_ca().cert * 999),
            "more than MAX_BUNDLE_CERTS (16) certificates",
            "dropped expired or repeated certificates",
        ),
        id="a chain of 1,000 certificates: the first 16 parsed, the CA kept",
    ),
    pytest.param(
        Repair(
            _ca_and(lambda _: b"\n".ljust(1_100_000, b"#")),
            "ca.crt holds more than MAX_PEM_BYTES",
            "created a CA",
        ),
        id="a ca.crt over 1 MiB: ignored unread, a new CA",
    ),
    pytest.param(
        Repair(
            _ca_and(lambda _: b"# a comment an editor left\n"),
            "ca.crt holds text besides its certificate blocks",
            "",
        ),
        id="text beside the certificates: written back without it, the CA kept",
    ),
    pytest.param(
        Repair(_with("ca.key", None), "", "created a CA: there was no CA key"),
        id="ca.key missing: a new CA",
    ),
    pytest.param(
        Repair(_with("ca.key", "%%%"), "ca.key is not base64", "created a CA"),
        id="ca.key that is not base64: a new CA",
    ),
    pytest.param(
        Repair(
            _from("ca.key", lambda data: _raw(data, "ca.crt")),
            "dropped the CA key: it is not an unencrypted ECDSA",
            "created a CA",
        ),
        id="a certificate where ca.key belongs: a new CA",
    ),
    pytest.param(
        Repair(
            _from("ca.key", lambda _: _other_ca().key),
            "",
            "created a CA: the CA key belongs to no certificate of the bundle",
        ),
        id="a CA key of another CA (certificate and key do not match): a new CA",
    ),
    pytest.param(
        Repair(
            _from("ca.key", lambda data: _encrypted(_raw(data, "ca.key"))),
            "dropped the CA key",
            "created a CA",
        ),
        id="an encrypted ca.key: a new CA",
    ),
    pytest.param(
        Repair(_pair(_ed25519_ca), "dropped the CA key", "created a CA"),
        id="an Ed25519 CA, a kind of key that does not sign here: a new CA",
    ),
    pytest.param(
        Repair(
            _pair(_ca_without_key_id),
            "",
            "issued a serving certificate (the signing CA changed)",
        ),
        id="a CA made elsewhere without a key identifier: kept, and it signs",
    ),
    pytest.param(
        Repair(_with("tls.crt", None), "", "issued a serving certificate (there was none)"),
        id="tls.crt missing: a new leaf",
    ),
    pytest.param(
        Repair(
            _with("tls.crt", UNDECODABLE), "", "issued a serving certificate (the old one did not"
        ),
        id="tls.crt that does not decode: a new leaf",
    ),
    pytest.param(
        Repair(
            _with("tls.key", "@@"),
            "tls.key is not base64",
            "issued a serving certificate (there was none)",
        ),
        id="tls.key that is not base64: a new leaf",
    ),
    pytest.param(
        Repair(
            _from("tls.key", lambda _: _other_ca().key),
            "",
            "issued a serving certificate (the key did not match)",
        ),
        id="a leaf and key that do not match: a new leaf",
    ),
    pytest.param(
        Repair(
            _from("tls.key", lambda data: _encrypted(_raw(data, "tls.key"))),
            "",
            "issued a serving certificate (its key is not an unencrypted",
        ),
        id="an encrypted tls.key: a new leaf",
    ),
    pytest.param(
        Repair(
            _with("next-ca.since", b"next tuesday"),
            "next-ca.since is not a time",
            "",
        ),
        id="a staged CA's start time that is not a time: dropped",
    ),
    pytest.param(
        Repair(_with("ca.crt", 42), "ca.crt is not a string", "created a CA"),
        id="a value that is not a string: a new CA",
    ),
    pytest.param(
        Repair(lambda _: ["not", "a", "map"], "its data is not a map", "created a CA"),
        id="data that is not a map: a new CA",
    ),
]


def _configurations() -> list[dict[str, Any]]:
    settings = WebhookSettings(name="pw", namespace="placement", service="pw")
    table = [
        {"name": "a", "mutate": {"pods": ["CREATE"]}},
        {"name": "b", "validate": {"pods": ["CREATE"]}},
    ]
    return configurations(settings, table, ["a", "b"])


def _secret(data: Any = None) -> dict[str, Any]:
    secret: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": "pw-certs", "namespace": "placement"},
    }
    if data is not None:
        secret["data"] = data
    return secret


def _manager(api: FakeApiServer, tmp_path: Path) -> Manager:
    client = api_client(str(api.kubeconfig(tmp_path / "kubeconfig")))
    return Manager(
        api=client,
        store=SecretStore(client, "placement", "pw-certs"),
        policy=POLICY,
        cert_dir=tmp_path / "tls",
        webhook_configuration="pw",
        clock=lambda: T0,
    )


def _stored(api: FakeApiServer) -> Data:
    [secret] = api.stored("secrets", "placement")
    return dict(secret.get("data") or {})


def _bundles(api: FakeApiServer) -> set[str]:
    return {
        hook["clientConfig"].get("caBundle")
        for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
        for config in api.stored(plural)
        for hook in config["webhooks"]
    }


def _healthy(api: FakeApiServer, tmp_path: Path) -> tuple[Manager, Data]:
    manager = _manager(api, tmp_path)
    manager.step()
    return manager, _stored(api)


def _files(directory: Path) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in ("ca.crt", "tls.crt", "tls.key")}


@pytest.mark.parametrize("repair", REPAIRS)
def test_a_corrupted_secret_is_repaired_in_one_line(tmp_path: Path, repair: Repair) -> None:
    with running(_secret(), *_configurations()) as api:
        manager, healthy = _healthy(api, tmp_path)
        broken = repair.corrupt(healthy)
        api.put(_secret(broken))
        lines = describe(manager.step())
        again = describe(manager.step())
        stored = _stored(api)
        bundles = _bundles(api)
    [line] = [line for line in lines if line.startswith("Secret: ")]
    assert repair.wrong in line and repair.done in line, line
    assert "\n" not in line and len(line) < 1000
    assert again == []  # repaired once: the Secret holds nothing to report any more
    material = from_secret(stored)
    assert plan(material, POLICY, T0, published=True) == (material, [])
    assert bundles == {base64.b64encode(bundle_pem(material)).decode()}
    files = _files(tmp_path / "tls")
    assert files["ca.crt"] == bundle_pem(material) and b"PRIVATE KEY" not in files["ca.crt"]
    pair = pki.load_pair(tmp_path / "tls" / "tls.crt", tmp_path / "tls" / "tls.key")
    assert pair.matches_key
    signing = x509.load_pem_x509_certificate(material.bundle[0])
    pair.certificate.verify_directly_issued_by(signing)
    assert ("created a CA" in line) is ("created a CA" in repair.done), line
    if "created a CA" not in repair.done:
        assert material.bundle[0] == split_bundle(_raw(broken, "ca.crt")).blocks[0]


def test_a_staged_rotation_bundle_is_not_a_problem(tmp_path: Path) -> None:
    """Three certificates (signing, staged, retiring) are what rotation holds: no repair."""
    with running(_secret(), *_configurations()) as api:
        manager, _ = _healthy(api, tmp_path)
        manager.clock = lambda: T0 + dt.timedelta(days=1825 - 365)
        staged = describe(manager.step())
        manager.clock = lambda: T0 + dt.timedelta(days=1825 - 365, hours=2)
        promoted = describe(manager.step())
        manager.clock = lambda: T0 + dt.timedelta(days=1825 - 365, hours=3)
        quiet = describe(manager.step())
        material = from_secret(_stored(api))
    assert "staged a new CA" in staged[0] and "promoted the staged CA" in promoted[0]
    assert len(material.bundle) == 2 and quiet == []


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        pytest.param(
            _ca_and(lambda _: b"\n".ljust(10 * 1024 * 1024, b"#")),
            re.escape("holds more than MAX_SECRET_ANSWER (3145728 bytes); nothing written"),
            id="a 10 MB value: the answer is not read past 3 MiB, nothing is written",
        ),
    ],
)
def test_an_answer_that_is_no_secret_keeps_the_last_good_material(
    tmp_path: Path, corrupt: Callable[[Data], Data], message: str
) -> None:
    with running(_secret(), *_configurations()) as api:
        manager, healthy = _healthy(api, tmp_path)
        before = _files(tmp_path / "tls")
        bundles = _bundles(api)
        api.put(_secret(corrupt(healthy)))
        count = len(api.requests)
        with pytest.raises(ManageError, match=message) as caught:
            manager.step()
        writes = [r.method for r in api.requests[count:] if r.method != "GET"]
        assert _bundles(api) == bundles
    assert "\n" not in str(caught.value)
    assert writes == []
    assert _files(tmp_path / "tls") == before


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        pytest.param(
            b"<html>proxy error</html>",
            "not JSON: '<html>proxy error</html>'",
            id="an HTML page from a proxy is not JSON, and is quoted",
        ),
        pytest.param(b"[1, 2]", "not an object with metadata", id="a JSON list is not a Secret"),
        pytest.param(
            b'{"metadata": {}}',
            "no resourceVersion",
            id="an object without a resourceVersion is not a Secret",
        ),
        pytest.param(
            b"x" * 5_000_000,
            "more than MAX_SECRET_ANSWER",
            id="an answer over 3 MiB is refused, not parsed",
        ),
    ],
)
def test_an_answer_that_is_no_secret_is_named(answer: bytes, message: str) -> None:
    from webhooks.certs.managed import _secret_object

    problem = _secret_object(answer)
    assert isinstance(problem, str) and message in problem and len(problem) < 200


def test_files_that_differ_from_the_secret_are_rewritten(tmp_path: Path) -> None:
    with running(_secret(), *_configurations()) as api:
        manager, _ = _healthy(api, tmp_path)
        good = _files(tmp_path / "tls")
        (tmp_path / "tls" / "tls.crt").write_bytes(b"garbage")
        (tmp_path / "tls" / "ca.crt").unlink()
        (tmp_path / "tls" / "tls.key").unlink()
        os.mkfifo(tmp_path / "tls" / "tls.key")  # a read of it would block forever
        lines = describe(manager.step())
    assert lines == ["files: wrote ca.crt, tls.crt and tls.key"]
    assert _files(tmp_path / "tls") == good


def test_a_directory_where_a_file_belongs_is_reported_and_nothing_is_replaced(
    tmp_path: Path,
) -> None:
    with running(_secret(), *_configurations()) as api:
        manager, healthy = _healthy(api, tmp_path)
        directory = tmp_path / "tls"
        (directory / "tls.crt").unlink()
        (directory / "tls.crt").mkdir()
        key = (directory / "tls.key").read_bytes()
        api.put(_secret(_with("tls.key", None)(healthy)))  # a new leaf is due
        with pytest.raises(
            ManageError, match=re.escape("tls.crt: Is a directory; the files as they were")
        ):
            manager.step()
    assert (directory / "tls.key").read_bytes() == key  # not half-replaced
    assert not [p for p in directory.iterdir() if p.name.startswith(".")]  # no staged leftovers


def test_a_reset_or_garbage_ca_bundle_is_written_again(tmp_path: Path) -> None:
    with running(_secret(), *_configurations()) as api:
        manager, _ = _healthy(api, tmp_path)
        good = _bundles(api)
        with api.lock:
            for (plural, _), obj in api.objects.items():
                if plural.endswith("webhookconfigurations"):
                    obj["webhooks"][0]["clientConfig"]["caBundle"] = "bm90IGEgY2VydA=="
        lines = describe(manager.step())
        assert _bundles(api) == good
    assert sorted(lines) == [
        "MutatingWebhookConfiguration pw: caBundle updated",
        "ValidatingWebhookConfiguration pw: caBundle updated",
    ]


# --------------------------------------------------------------------------- the pure plan


def _staged() -> Material:
    material, _ = plan(Material(), POLICY, T0, published=False)
    staged, _ = plan(material, POLICY, T0 + dt.timedelta(days=1825 - 365), published=True)
    assert staged.next_key is not None
    return staged


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            {"next_since": dt.datetime(2028, 6, 1)},
            "dropped the staged CA's start time: it has no time zone",
            id="a staged CA's start time without a zone is dropped, not compared",
        ),
        pytest.param(
            {"next_since": dt.datetime(9999, 1, 1, tzinfo=dt.UTC)},
            "moved the staged CA's start time from the future to now",
            id="a staged CA's start time in the future would never let it sign",
        ),
        pytest.param(
            {"next_key": _truncated_key()},
            "dropped the staged CA's key",
            id="a staged CA's key that does not parse is dropped",
        ),
        pytest.param(
            {"signing_key": pem_key(rsa.generate_private_key(65537, 1024))},
            "dropped the CA key: it is not an unencrypted ECDSA (P-256, P-384, P-521) or RSA "
            "(2048 to 4096 bits) private key",
            id="an RSA key outside 2048 to 4096 bits is dropped before it is checked",
        ),
        pytest.param(
            {"next_since": None},
            "restarted the staged CA's overlap: its start time was lost",
            id="a staged CA whose start time was lost waits the overlap again, not forever",
        ),
        pytest.param(
            {"next_key": None, "signing_key": None},
            "created a CA",
            id="a bundle without keys makes a new CA",
        ),
        pytest.param(
            {"bundle": ()},
            "created a CA",
            id="an empty bundle with keys makes a new CA",
        ),
    ],
)
def test_plan_takes_any_material_without_an_exception(
    change: dict[str, Any], expected: str
) -> None:
    from dataclasses import replace

    staged = _staged()
    assert staged.next_since is not None
    now = staged.next_since + dt.timedelta(minutes=1)
    result, changes = plan(replace(staged, **change), POLICY, now, published=True)
    assert any(expected in c for c in changes), changes
    assert plan(result, POLICY, now, published=True)[1] == []
