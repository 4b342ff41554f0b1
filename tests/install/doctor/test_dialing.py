"""``ca-bundle`` and ``round-trip`` against the real server (gunicorn, TLS): the probe's
handshake sees what the API server would, and an address nobody answers is a warning."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.e2e.serving import Server, serving
from tests.fakeapi import refused_port
from tests.install.doctor.building import RELEASE
from webhooks.certs import pki
from webhooks.install.doctor import ca_bundle, round_trip
from webhooks.install.doctor.findings import Status
from webhooks.install.doctor.installation import Installation
from webhooks.install.probe import served_certificate
from webhooks.install.webhookconfig import WebhookSettings, configurations

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("doctor")
    chain = pki.generate(workdir / "tls", hosts=["localhost"])
    with serving(workdir, cert_dir=chain.ca.parent) as running_server:
        yield running_server


def _installation(url: str, ca_pem: bytes) -> Installation:
    settings = WebhookSettings(name="pw", url=url, ca_bundle=base64.b64encode(ca_pem).decode())
    table = [{"name": "a", "validate": {"pods": ["CREATE"]}}]
    found = tuple(configurations(settings, table, ["a"]))
    return Installation(None, "pw", "placement", RELEASE, configurations=found, timeout=5.0)


def test_a_healthy_server_is_ok_on_both_checks(server: Server) -> None:
    installation = _installation(f"https://localhost:{server.port}", server.ca.read_bytes())
    findings = ca_bundle.check(installation) + round_trip.check(installation)
    assert [f.status for f in findings] == [Status.OK, Status.OK], [f.line() for f in findings]
    assert "allowed" in findings[1].reason


def test_another_ca_fails_ca_bundle_and_round_trip(server: Server, tmp_path: Path) -> None:
    other = pki.new_ca("another CA", days=30)
    installation = _installation(f"https://localhost:{server.port}", other.cert)
    [trust] = ca_bundle.check(installation)
    [trip] = round_trip.check(installation)
    assert trust.status is Status.FAIL
    assert "does not verify the certificate localhost" in trust.reason
    assert "issuer CN=placement-webhooks CA" in trust.reason
    assert trip.status is Status.FAIL
    assert "TLS: the serving certificate is not trusted" in trip.reason


def test_a_host_the_certificate_does_not_name_fails(server: Server) -> None:
    served = served_certificate(
        f"https://127.0.0.1:{server.port}/validate", server.ca.read_bytes(), 5.0
    )
    assert served.der and not served.problem
    assert "127.0.0.1" in served.untrusted


def test_an_address_nobody_answers_warns(server: Server) -> None:
    with refused_port() as port:
        installation = _installation(f"https://localhost:{port}", server.ca.read_bytes())
        findings = ca_bundle.check(installation) + round_trip.check(installation)
    assert [f.status for f in findings] == [Status.WARN, Status.WARN]
    assert all("helm test" in f.fix for f in findings)


def test_a_name_that_does_not_resolve_warns(server: Server) -> None:
    installation = _installation("https://doctor.invalid:443", server.ca.read_bytes())
    installation = replace(installation, timeout=2.0)
    [finding] = round_trip.check(installation)
    assert finding.status is Status.WARN
    assert "not reachable from here" in finding.reason
