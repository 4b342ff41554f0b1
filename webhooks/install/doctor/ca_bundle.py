"""``ca-bundle``: every webhook's caBundle verifies the certificate its server serves.

Why dial: a caBundle can parse and still be the wrong one (a CA rotated on one side only, a
Secret replaced by hand); only the served certificate says. The handshake is the probe's
(:func:`webhooks.install.probe.served_certificate`), verified as the API server verifies it:
against the caBundle, for the host it dials. Expiry is judged on the served leaf: expired
fails every call; within :data:`~webhooks.certs.rotation.LEAF_RENEW_DAYS` (when the chart's
managed rotation renews) it warns, since a certificate still that close was not renewed.
"""

from __future__ import annotations

import datetime as dt
import ssl
from typing import Final

from webhooks.certs.pki import CertError, CertInfo, describe_pem
from webhooks.certs.rotation import LEAF_RENEW_DAYS
from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import Installation
from webhooks.install.doctor.reach import FIX_UNREACHABLE
from webhooks.install.probe import Served, Target, served_certificate, targets

CHECK: Final = "ca-bundle"

FIX_INJECT: Final = (
    "put the CA that signed the serving certificate in caBundle: the chart's tls mode does it "
    "on upgrade, or `placement-webhooks webhook-config --inject --ca-file CA`"
)
FIX_RENEW: Final = (
    "renew the serving certificate: `helm upgrade` with tls.generate.regenerate=true, or "
    "restart the pods (tls.mode managed renews on start), or re-issue the Secret"
)
FIX_NAMES: Final = (
    "re-issue the serving certificate with the Service's names "
    "(`placement-webhooks certs generate --service NAME --namespace NS`)"
)


def check(installation: Installation) -> list[Finding]:
    """One finding per address the webhooks are served at (webhooks sharing it named)."""
    found = targets(installation.configurations)
    if not found:
        return []  # `configurations` says there are none
    now = dt.datetime.now(dt.UTC)
    return [
        judge(target, served_certificate(target.url, target.ca_pem, installation.timeout), now)
        for target in found
    ]


def judge(target: Target, served: Served, now: dt.datetime) -> Finding:
    """The finding for one address, given what it served (pure: no I/O)."""
    who = ", ".join(target.webhooks)
    host = target.url.split("/")[2] if target.url.count("/") >= 2 else target.url
    if not target.ca_pem:
        return Finding(CHECK, Status.FAIL, f"{who}: no caBundle", FIX_INJECT)
    try:
        describe_pem(target.ca_pem, "the caBundle")
    except CertError:
        return Finding(
            CHECK, Status.FAIL, f"{who}: the caBundle holds no valid PEM certificate", FIX_INJECT
        )
    if served.problem:
        return Finding(
            CHECK,
            Status.WARN,
            f"{who}: cannot see the certificate {host} serves from here ({served.problem})",
            FIX_UNREACHABLE,
        )
    leaf = _leaf(served.der)
    if leaf is None:
        return Finding(
            CHECK, Status.FAIL, f"{who}: {host} served no readable certificate", FIX_RENEW
        )
    left = leaf.not_after - now
    if served.untrusted:
        if leaf.not_after <= now:
            reason = f"{who}: the certificate {host} serves expired {leaf.not_after:%Y-%m-%d}"
            return Finding(CHECK, Status.FAIL, reason, FIX_RENEW)
        fix = FIX_NAMES if "hostname" in served.untrusted.lower() else FIX_INJECT
        return Finding(
            CHECK,
            Status.FAIL,
            f"{who}: the caBundle does not verify the certificate {host} serves "
            f"({served.untrusted}; served: issuer {leaf.issuer}, names {', '.join(leaf.sans)})",
            fix,
        )
    days = left.total_seconds() / 86400
    if days < LEAF_RENEW_DAYS:
        return Finding(
            CHECK,
            Status.WARN,
            f"{who}: the certificate {host} serves expires in {days:.1f} days "
            f"({leaf.not_after:%Y-%m-%d}), under the {LEAF_RENEW_DAYS} days it is renewed at",
            FIX_RENEW,
        )
    return Finding(
        CHECK,
        Status.OK,
        f"{who}: the caBundle verifies the certificate {host} serves (expires in {days:.0f} days)",
    )


def _leaf(der: bytes) -> CertInfo | None:
    if not der:
        return None
    try:
        return describe_pem(
            ssl.DER_cert_to_PEM_cert(der).encode("ascii"), "the served certificate"
        )[0]
    except CertError:
        return None
