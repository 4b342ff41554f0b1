"""``ca-bundle``: the caBundle against the certificate the server serves, and its expiry."""

from __future__ import annotations

import base64
import datetime as dt
import ssl

import pytest

from webhooks.certs import pki
from webhooks.install.doctor import ca_bundle
from webhooks.install.doctor.findings import Status
from webhooks.install.doctor.reach import FIX_UNREACHABLE
from webhooks.install.probe import Served, Target

NOW = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)
HOST = "placement-webhooks.placement.svc"
CA = pki.new_ca("test CA", days=365, now=NOW - dt.timedelta(days=10))


def _der(days_left: float, *, hosts: tuple[str, ...] = (HOST,)) -> bytes:
    issued_days = 90
    leaf = pki.issue_leaf(
        CA,
        hosts=hosts,
        days=issued_days,
        now=NOW + dt.timedelta(days=days_left - issued_days),
    )
    return ssl.PEM_cert_to_DER_cert(leaf.cert.decode())


def _target(ca_pem: bytes = CA.cert) -> Target:
    return Target(f"https://{HOST}:443/validate", ca_pem, ("validate.placement-webhooks.svc",))


@pytest.mark.parametrize(
    ("target", "served", "status", "words", "fix"),
    [
        pytest.param(
            _target(), Served(_der(80)), Status.OK, "expires in 80 days", "",
            id="a trusted certificate far from expiry is ok",
        ),
        pytest.param(
            _target(), Served(_der(5.5)), Status.WARN, "expires in 5.5 days",
            ca_bundle.FIX_RENEW, id="one within the renewal window warns",
        ),
        pytest.param(
            _target(),
            Served(_der(-2), "certificate has expired"),
            Status.FAIL, "expired 2026-11-27", ca_bundle.FIX_RENEW,
            id="an expired one fails",
        ),
        pytest.param(
            _target(),
            Served(_der(60), "unable to get local issuer certificate"),
            Status.FAIL, "does not verify the certificate", ca_bundle.FIX_INJECT,
            id="a certificate from another CA fails with the injection fix",
        ),
        pytest.param(
            _target(),
            Served(
                _der(60, hosts=("other.svc",)),
                "Hostname mismatch, certificate is not valid for 'x'.",
            ),
            Status.FAIL, "names other.svc", ca_bundle.FIX_NAMES,
            id="a certificate that does not name the host fails with the re-issue fix",
        ),
        pytest.param(
            _target(b""), Served(b""), Status.FAIL, "no caBundle", ca_bundle.FIX_INJECT,
            id="no caBundle fails",
        ),
        pytest.param(
            _target(b"not PEM"), Served(b""), Status.FAIL, "no valid PEM certificate",
            ca_bundle.FIX_INJECT, id="a caBundle that does not parse fails",
        ),
        pytest.param(
            _target(),
            Served(b"", problem="no TLS handshake: [Errno -2] Name or service not known"),
            Status.WARN, "cannot see the certificate", FIX_UNREACHABLE,
            id="an address not reachable from here warns with where to run it",
        ),
    ],
)  # fmt: skip
def test_judging_what_was_served(
    target: Target, served: Served, status: Status, words: str, fix: str
) -> None:
    finding = ca_bundle.judge(target, served, NOW)
    assert finding.check == "ca-bundle"
    assert finding.status is status, finding.line()
    assert words in finding.reason
    assert finding.fix == fix
    assert "validate.placement-webhooks.svc" in finding.reason


def test_the_bundle_is_base64_of_pem_in_the_configuration() -> None:
    """What :func:`~webhooks.install.probe.targets` decodes is what the judge reads."""
    from webhooks.install.probe import targets

    hook = {
        "name": "v",
        "clientConfig": {
            "url": "https://h/validate",
            "caBundle": base64.b64encode(CA.cert).decode(),
        },
    }
    [target] = targets([{"webhooks": [hook]}])
    assert target.ca_pem == CA.cert
